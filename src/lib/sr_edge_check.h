/* sr_edge_check.h - the API of sr_edge_check.c: an account's profile checked as it would be used. */
#ifndef SR_EDGE_CHECK_H
#define SR_EDGE_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_gateway.h"

/* Check an account's profile as it would be used: every secret resolved
 * (reported as set, not set, or why it cannot be read; never its value),
 * every request built and sent nowhere. Fills report; -1 if any failed. */
int sr_edge_check(struct sr_gateway *gw, struct sr_edge *e, json_t *report);

#endif
