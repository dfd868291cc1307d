/* sr_dispatch.h - the API of sr_dispatch.c. */
#ifndef SR_DISPATCH_H
#define SR_DISPATCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

/* The dispatchers' options and pacing (sr-claim, dev-eval). */
struct sr_dispatch {
	int follow, until_empty, said_off;
	long for_s, max, batch; /* -1: no limit */
	long total;             /* claimed so far */
	int64_t t0;
};
enum { SR_OPT_FOLLOW = 1100, SR_OPT_UNTIL_EMPTY, SR_OPT_FOR, SR_OPT_MAX, SR_OPT_BATCH };
#define SR_DISPATCH_LONGOPTS \
	{ "follow", no_argument, NULL, SR_OPT_FOLLOW }, \
	{ "until-empty", no_argument, NULL, SR_OPT_UNTIL_EMPTY }, \
	{ "for", required_argument, NULL, SR_OPT_FOR }, \
	{ "max", required_argument, NULL, SR_OPT_MAX }, \
	{ "batch", required_argument, NULL, SR_OPT_BATCH }
void sr_dispatch_init(struct sr_dispatch *d);
/* Handle a dispatcher option; 1 if handled (dies on a bad value). */
int sr_dispatch_option(struct sr_dispatch *d, int opt, const char *arg);
/* --for elapsed, --max reached, or a stop asked (SIGTERM, SIGINT, caught
 * from sr_dispatch_init on): stop claiming. */
int sr_dispatch_done(const struct sr_dispatch *d);
/* What is left of --for, in ms (0 at the end); -1 without --for. */
long long sr_dispatch_left_ms(const struct sr_dispatch *d);
/* How many to claim this round: what --max leaves, else per_round. */
long sr_dispatch_budget(const struct sr_dispatch *d, long per_round);
/* Nothing claimed this round: 0 to stop (one pass done, or --until-empty
 * and nothing queued), else sleep toward the next due time and return 1. */
int sr_dispatch_idle(struct sr_dispatch *d, long long queued, long long wait_ms);
/* The switch is off: say so once (what is kept), 0 to stop, 1 after a nap. */
int sr_dispatch_switch_off(struct sr_dispatch *d, const char *kept);

#endif
