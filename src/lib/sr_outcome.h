/* sr_outcome.h - the API of sr_outcome.c: a finished call's outcome. */
#ifndef SR_OUTCOME_H
#define SR_OUTCOME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include <curl/curl.h>

/* Outcome classes of one gateway call: the "outcome" of a result record,
 * the one list of them (X(ENUM, name)): sr-exec writes them, sr-confirm
 * reads them. */
#define SR_OUTCOMES(X) \
	X(SR_OUT_OK, "ok") X(SR_OUT_ALREADY, "already") X(SR_OUT_RETRY, "retry") \
	X(SR_OUT_FAIL, "fail") X(SR_OUT_UNKNOWN, "unknown") X(SR_OUT_SUPERSEDED, "superseded") \
	X(SR_OUT_BLOCKED, "blocked")
#define SR_OUT_ENUM(e, name) e,
enum sr_outcome { SR_OUTCOMES(SR_OUT_ENUM) };
#undef SR_OUT_ENUM
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
