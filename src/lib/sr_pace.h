/* sr_pace.h - the API of sr_pace.c: how much later than its slot a call leaves. */
#ifndef SR_PACE_H
#define SR_PACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include <curl/curl.h>

#include "sr_gateway.h"

/* How much later than its slot the account's next call may leave: 0 when a
 * warm connection is idle for it, else the setup time of a new one. */
long sr_edge_spread(struct sr_edge *e);
/* The origin of a URL, "scheme://authority" (made on first use). */
struct sr_origin *sr_origin_of(struct sr_gateway *gw, const char *url);
/* What a finished call's timings (its transfer e) teach about the
 * account's connections: which are alive, what a new one costs. */
void sr_pace_learn(struct sr_edge *ed, struct sr_call *call, CURL *e);

#endif
