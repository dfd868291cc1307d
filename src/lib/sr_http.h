/* sr_http.h - the API of sr_http.c: the HTTP client. */
#ifndef SR_HTTP_H
#define SR_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_gateway.h"

/* The most of an answer's body that is kept (more: not read). */
#define SR_BODY_MAX (64 * 1024)
/* Start a call (non-blocking). A request that cannot be built (a secret
 * file missing, a template error) finishes at once as retry/not_sent. */
void sr_gateway_start(struct sr_gateway *gw, struct sr_call *call);
/* Run transfers for up to timeout_ms (returns early when one finishes);
 * extra_fd >= 0 is also waited on. Returns finished calls one by one through
 * sr_gateway_done. */
void sr_gateway_poll(struct sr_gateway *gw, int timeout_ms, int extra_fd);
struct sr_call *sr_gateway_done(struct sr_gateway *gw);
int sr_gateway_running(struct sr_gateway *gw);
/* Build and start one transfer: a call (call->action stop, resume, status
 * or poll) or the account's token fetch (call->is_fetch). -1 with
 * call->error when it could not be. */
int sr_http_start(struct sr_gateway *gw, struct sr_edge *ed, struct sr_call *call);
/* Free what a transfer held (the request's copies wiped). */
void sr_call_cleanup(struct sr_call *call);
/* A stop or resume: what a second send could apply twice. */
int sr_call_is_change(const struct sr_call *call);

#endif
