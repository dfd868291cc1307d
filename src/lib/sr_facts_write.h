/* sr_facts_write.h - the API of sr_facts_write.c. */
#ifndef SR_FACTS_WRITE_H
#define SR_FACTS_WRITE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_facts.h"
#include "sr_keys.h"
#include "sr_redis.h"

/* One write of facts (facts_write.lua): each fact as of its time, a fact
 * older than the stored one's not written. Filled by sr_facts_write_init
 * and _add (or _json), sent by _append, answered by sr_facts_written. */
struct sr_facts_write {
	char key[SR_KEY_MAX];
	long long as_of;     /* ms on the Redis clock; 0: now, when Redis takes it */
	const char *source;  /* who says so (a request's source, "sr-asset") */
	const char *carrier; /* a card's account (a card of another is refused); NULL: a device */
	int n;
	const char *field[SR_FACTS_MAX];
	char value[SR_FACTS_MAX][80]; /* "" deletes the fact (its time stays) */
};
void sr_facts_write_init(struct sr_facts_write *w, const char *key, long long as_of, const char *source,
    const char *carrier);
/* Add a fact by name, its value as Redis stores it. -1: not a fact, or full. */
int sr_facts_write_add(struct sr_facts_write *w, const char *name, const char *value);
/* Add every fact of a (checked) facts object but "carrier" and those in skip. */
void sr_facts_write_json(struct sr_facts_write *w, json_t *facts, const char *const *skip);
/* Writes gathered and sent in as few script calls as the layout allows
 * (sr_facts_batch_append): one on one server (up to 256 writes a call), one
 * per write on a cluster, where each card's facts are their own slot. Read
 * (sr_facts_batch_read: -1 Redis lost), each write's reply is
 * sr_facts_batch_reply's, valid until _reset. A zeroed struct is empty. */
struct sr_facts_batch {
	struct sr_facts_write *w;
	int n, cap;
	int calls;            /* script calls appended */
	redisReply **got;     /* their replies, once read */
	int ngot;
	const redisReply **rep; /* each write's reply, within got */
};
void sr_facts_batch_add(struct sr_facts_batch *b, const struct sr_facts_write *w);
void sr_facts_batch_append(struct sr_redis *rds, struct sr_facts_batch *b);
int sr_facts_batch_read(struct sr_redis *rds, struct sr_facts_batch *b);
#define sr_facts_batch_reply(b, i) ((b)->rep[i])
void sr_facts_batch_reset(struct sr_facts_batch *b);
void sr_facts_batch_free(struct sr_facts_batch *b);
/* Its reply: 0 written, *stale the names of the facts not written because
 * the stored ones are newer (a JSON array, NULL when none; the caller's to
 * decref); -2 the card is another account's (nothing written), -1 refused;
 * err says why. */
int sr_facts_written(const redisReply *rep, enum sr_fact_kind kind, json_t **stale, char *err,
    size_t errlen);

/* What srq learned at the carrier about a card (a call that applied, a
 * status query): its status, and stopped_by ("" deletes it; NULL leaves
 * it), as of as_of (0: now), added to a batch like any fact. */
void sr_facts_status_add(struct sr_facts_batch *b, const char *key, const char *carrier, const char *status,
    const char *stopped_by, long long as_of, const char *source);
/* A card whose write moved its device membership to device while its
 * device fact proved older than the stored one (a newer write named another
 * device meanwhile): its membership follows the stored fact again, so that
 * the stored device's evaluations find it. Synchronous (it is rare): 0, or
 * -1 Redis lost. */
int sr_device_membership_restore(struct sr_redis *rds, const char *prefix, const char *card,
    const char *device);
/* A record's "as_of" (a JSON number, epoch ms, or a string, sr_parse_as_of
 * without flag's words): ms, or -1 with err set. How far ahead of Redis's
 * clock it is is checked where that clock is read. */
long long sr_json_as_of(json_t *v, char *err, size_t errlen);
/* A tool's --as-of (sr_parse_as_of with the flag's words, on the Redis
 * clock): ms; a bad one ends the tool, exit 2. */
long long sr_as_of_option(struct sr_redis *rds, int redis_up, const char *opt);

#endif
