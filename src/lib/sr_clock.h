/* sr_clock.h - the API of sr_clock.c. */
#ifndef SR_CLOCK_H
#define SR_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_config.h"
#include "sr_gateway.h"
#include "sr_redis.h"

/* One reading of the clock: now (Redis ms), asked at mono ms sent and
 * answered at mono ms replied. 1 when it is a forward step of more than
 * thr ms, certainly: *lo and *hi its size at least and at most (and the
 * bounds start again from the reading); else 0. */
int sr_clock_sample(struct sr_clock *c, long long now, int64_t sent, int64_t replied, long thr,
    long *lo, long *hi);
/* The smallest step acted on: the rate's headroom (SRQ_RATE_WINDOW_MS -
 * 1000, which absorbs a smaller one), at least SR_CLOCK_MIN_STEP_MS. */
#define SR_CLOCK_MIN_STEP_MS 10
long sr_clock_threshold(const struct sr_config *cfg);
/* A process's readings of every Redis node it gates on (indexes of
 * sr_redis_reply_from), and the steps seen not yet recorded. */
struct sr_clocks {
	struct sr_clock *node;
	int nnode;
	long thr;
	int ahead;            /* how far ahead a gate grants slots, ms */
	int pending;
	/* This host and its boot: a clock saved in Redis by an earlier process
	 * of the same boot is on the same monotonic clock. */
	char host[80], boot[40];
};
void sr_clocks_init(struct sr_clocks *cs, const struct sr_config *cfg, int ahead_ms);
void sr_clocks_free(struct sr_clocks *cs);
/* A reading of node's clock for no account in particular (a TIME). */
void sr_clocks_read(struct sr_clocks *cs, int node, long long now, int64_t sent, int64_t replied);
/* A gate reply for account e read node's clock: 1 when a step of the clock
 * its cards' times are on was seen and is not yet recorded. The reply's
 * passes were made on the stepped clock against the old times: not to be
 * sent. */
int sr_clocks_gated(struct sr_clocks *cs, struct sr_edge *e, int node, long long now, int64_t sent,
    int64_t replied);
/* Before e's first gate in this process: ask for the clock an earlier
 * process of this host's boot saved in its edge (sr_clocks_save), an HGET
 * appended to r before the gate, whose reply goes to sr_clocks_asked. 1 if
 * it was appended. */
int sr_clocks_ask(struct sr_clocks *cs, struct sr_redis *r, const struct sr_config *cfg,
    struct sr_edge *e);
void sr_clocks_asked(struct sr_clocks *cs, struct sr_edge *e, const redisReply *rep);
/* At the end: save for every account gated what is known of its node's
 * clock (its edge's clk:HOST), for the next process of this host's boot to
 * compare its first reading with: a step between two runs is found. */
void sr_clocks_save(struct sr_clocks *cs, struct sr_redis *r, const struct sr_config *cfg,
    struct sr_gateway *gw);
/* Record the steps seen (clock_step.lua) for every account whose last gate
 * ran on a node that stepped, or that moved to a node ahead of its old one;
 * one warning on stderr. who: the tool, for the audit. -1 if Redis failed. */
int sr_clocks_record(struct sr_clocks *cs, struct sr_redis *r, const struct sr_config *cfg,
    struct sr_gateway *gw, const char *who);

#endif
