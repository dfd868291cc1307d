/* sr_answer.h - the API of sr_answer.c: a carrier's answer, read by a profile. */
#ifndef SR_ANSWER_H
#define SR_ANSWER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_profile.h"

/* A carrier's answer, read by a profile's rules. */
struct sr_answer {
	int verdict;        /* enum sr_verdict */
	int rule;           /* the line of the matching rule (0: none matched) */
	char code[64], msg[160], txn[64];
	char raw_state[32]; /* queries: the carrier's state code */
	char observed[16];  /* queries: active, stopped or other */
	char order[12];     /* polls: done, failed, pending or other ("": not read) */
	char card[65];      /* the card the answer names (card, query.card), if any */
	int mismatch;       /* it names another card (1) or order (2, its txn in txn), or
	                     * none where it must: not believed */
	char unread[120];   /* why the answer was not read at all (unknown, no rule asked) */
};
/* What a request asked: how its answer is read. */
enum sr_ask { SR_ASK_CHANGE, SR_ASK_QUERY, SR_ASK_POLL };
/* Classify the answer to a request about card (a change, a status query,
 * or a poll of the order txn); body holds body_len bytes (and a NUL after
 * them). A poll is read with the query's rules, its order's state by
 * poll.state; it must name this card and order where the profile says
 * (poll.card, poll.txn). A status that is
 * not final (not 200..599) or a body holding a NUL byte is not read:
 * unknown, with unread saying why. An answer that would say how the card
 * stands (ok, already, accepted, a state) but names another card, or none
 * where the profile says it must, is unknown, its mismatch set: never
 * believed of this card. */
void sr_classify(const struct sr_profile *p, long http, const char *body, size_t body_len,
    enum sr_ask ask, const char *card, const char *txn, struct sr_answer *a);
/* A carrier's body as JSON (a byte order mark and white space before it
 * skipped, duplicate keys refused), or NULL when it holds none. */
json_t *sr_answer_json(const char *body);
/* The text at a small path of a JSON answer ("a.b", "a[0].b") or of an XML
 * one ("xml:Tag"). 1 when found. */
int sr_answer_field(json_t *j, const char *body, const char *path, char *out, size_t outlen);
/* Whether code is one of a comma-separated list's. */
int sr_code_in_list(const char *list, const char *code);

#endif
