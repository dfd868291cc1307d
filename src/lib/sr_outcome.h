/* sr_outcome.h - the API of sr_outcome.c: a finished call's outcome. */
#ifndef SR_OUTCOME_H
#define SR_OUTCOME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include <curl/curl.h>

/* Outcome classes of one gateway call: the "outcome" of a result record. */
enum sr_outcome {
	SR_OUT_OK, SR_OUT_ALREADY, SR_OUT_RETRY, SR_OUT_FAIL, SR_OUT_UNKNOWN,
	SR_OUT_SUPERSEDED, SR_OUT_BLOCKED,
};
const char *sr_outcome_name(enum sr_outcome o);

struct sr_call;
/* The outcome of a call the carrier answered (call->http, its body), by
 * the profile's rules; every field the carrier wrote redacted of the
 * secrets the request carried. */
void sr_outcome_answer(struct sr_call *call);
/* The outcome of a call libcurl failed with rc (e: its transfer), and its
 * error in words that say what happened. */
void sr_outcome_transport(struct sr_call *call, CURLcode rc, CURL *e);
void sr_outcome_transport_error(struct sr_call *call, CURLcode rc);

#endif
