/* sr_facts.h - the API of sr_facts.c. */
#ifndef SR_FACTS_H
#define SR_FACTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

/* Rows of the facts table (sr_facts.c) at most. */
#define SR_FACTS_MAX 16
/* The facts the judgment reads. Absent numbers are 0, absent strings "". */
struct sr_card_facts {
	char carrier[65];
	char device[65];
	char status[16];     /* "active", "stopped" or "" (unknown) */
	char stopped_by[16]; /* "auto", "manual" or "" */
	long long pkg_expires_at;
	long long data_used_kb, data_quota_kb;
	int refunded;
	int known; /* any fact stored for this card */
	/* As of when each stored fact was true (ms; 0: stored without a time,
	 * older than any), by row of the facts table: what a write must not
	 * be older than (sr_card_facts_merge). */
	long long as_of[SR_FACTS_MAX];
};
struct sr_device_facts {
	int has_pkg; /* a device-level package exists (pkg_expires_at present) */
	long long pkg_expires_at;
	int disabled;
};
enum sr_fact_kind { SR_FACTS_CARD, SR_FACTS_DEVICE };
/* Load facts from an HGETALL reply (array of field/value). */
/* -1 when Redis answered an error (a key damaged by hand: a string where
 * the hash is), f left empty: never to be taken for "no facts". */
int sr_card_facts_load(struct sr_card_facts *f, const redisReply *hgetall);
int sr_device_facts_load(struct sr_device_facts *f, const redisReply *hgetall);
/* A fact's field in the facts hash ("st" for "status"); NULL for a name
 * that is not a fact. */
const char *sr_fact_field(const char *name);
/* A fact's name from its field ("pe" -> "pkg_expires_at"); field itself
 * when it is no fact's. */
const char *sr_fact_name(const char *field, enum sr_fact_kind kind);
/* The facts of a list of their fields ("pe,du"), by name, as a JSON array;
 * NULL when it names none. */
json_t *sr_facts_named(const char *list, enum sr_fact_kind kind);
/* Every fact's old name and field, in pairs, into argv (at most max
 * entries, for migrate_facts.lua). Returns how many. */
int sr_facts_renames(const char **argv, int max);
/* A facts hash (HGETALL's reply) as a JSON object under the facts' names,
 * numbers as numbers: what an operator reads. */
json_t *sr_facts_json(const redisReply *hgetall, enum sr_fact_kind kind);
/* Each fact's time and writer ('@' and '^' fields of a facts hash, kept by
 * facts_write.lua), as a JSON object under the facts' names:
 * {"pkg_expires_at":{"as_of_ms":1764756000000,"source":"sr-asset"}}; as_of_ms
 * is null for a fact stored without a time (and source, without a writer). */
json_t *sr_facts_times_json(const redisReply *hgetall, enum sr_fact_kind kind);
/* Lay a request's (checked) facts over the stored ones, as facts_write.lua
 * will write them: a fact older (as_of, ms; 0: now) than the stored one's
 * is left out. Its carrier is not a fact's. */
void sr_card_facts_merge(struct sr_card_facts *f, json_t *facts, long long as_of);
/* Whether a write of the card fact name as of as_of (ms; 0: now) is older
 * than the stored one, and facts_write.lua will leave it out. */
int sr_fact_older(const struct sr_card_facts *f, const char *name, long long as_of);
/* As of when the stored card fact name was true (ms; 0: no time). */
long long sr_fact_as_of(const struct sr_card_facts *f, const char *name);
/* Check that every member of obj, but those named in skip, is a fact a card
 * (or a device) may carry, with a valid value. -1 with err set. */
int sr_check_facts(json_t *obj, enum sr_fact_kind kind, const char *const *skip, char *err,
    size_t errlen);
/* The facts whose values are integers (for CSV cells, which are strings),
 * NULL-terminated. */
const char *const *sr_numeric_facts(void);
/* The facts that are flags (0 or 1), NULL-terminated. */
const char *const *sr_flag_facts(void);
/* A fact's value as Redis stores it (booleans as 0/1). */
void sr_fact_value(json_t *v, char *buf, size_t n);
/* The names of a card's (or a device's) facts, but skip, for a usage text:
 * wrapped before column 80 from column col, each new line starting with
 * indent. Static storage (the last two calls' results stay valid). */
const char *sr_facts_list(enum sr_fact_kind kind, const char *skip, int col, const char *indent);

#endif
