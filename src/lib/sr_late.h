/* sr_late.h - the API of sr_late.c: the late-send pace step. */
#ifndef SR_LATE_H
#define SR_LATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_config.h"
#include "sr_gateway.h"
#include "sr_redis.h"

/* Right before a call leaves: if it leaves SR_LATE_MS or more after its
 * slot (mono ms) - a new connection to set up, or a late send - move the
 * account's pace by that much (late.lua), so the rate accounts for when it
 * really leaves. The send's lateness is counted too, and its p99 over the
 * last minute (SR_HR_MIN_MS..SR_HR_MAX_MS) is reported as the account's
 * headroom when it changes (at most once a second) and every 20 s while it
 * is above the floor, in the same round trip. -1 if Redis failed. */
#define SR_LATE_MS 3
#define SR_LATE_SLICES 6
#define SR_LATE_SLICE_MS 10000
#define SR_LATE_BIN_MS 5
#define SR_HR_MAX_MS 200
#define SR_LATE_BINS (SR_HR_MAX_MS / SR_LATE_BIN_MS + 1)
struct sr_late_slice {
	int64_t start; /* mono ms / SR_LATE_SLICE_MS */
	unsigned n[SR_LATE_BINS];
};
int sr_edge_late(struct sr_redis *r, const struct sr_config *cfg, struct sr_edge *e, int64_t slot);

#endif
