/* sr_dispatch.c - what the two dispatchers (sr-claim, dev-eval) share:
 * their options (--follow, --until-empty, --for, --max, --batch) and their
 * pacing: one pass by default, or keep going, sleeping until the next due
 * time (bounded, so new work and freed slots are noticed quickly). */
#include <string.h>

#include "sr.h"

#define IDLE_MAX_MS 250
#define IDLE_MIN_MS 5

void
sr_dispatch_init(struct sr_dispatch *d)
{
	memset(d, 0, sizeof *d);
	d->for_s = -1;
	d->max = -1;
	d->batch = 64;
	d->t0 = sr_mono_ms();
}

int
sr_dispatch_option(struct sr_dispatch *d, int opt, const char *arg)
{
	switch (opt) {
	case SR_OPT_FOLLOW: d->follow = 1; return 1;
	case SR_OPT_UNTIL_EMPTY: d->until_empty = d->follow = 1; return 1;
	case SR_OPT_FOR: d->for_s = sr_num("--for", arg, 0, 366L * 86400); return 1;
	case SR_OPT_MAX: d->max = sr_num("--max", arg, 0, 1000000000L); return 1;
	case SR_OPT_BATCH: d->batch = sr_num("--batch", arg, 1, 10000); return 1;
	}
	return 0;
}

int
sr_dispatch_done(const struct sr_dispatch *d)
{
	return (d->for_s >= 0 && sr_mono_ms() - d->t0 >= d->for_s * 1000) ||
	    (d->max >= 0 && d->total >= d->max);
}

long
sr_dispatch_budget(const struct sr_dispatch *d, long per_round)
{
	return d->max >= 0 ? d->max - d->total : per_round;
}

static void
nap(const struct sr_dispatch *d, long long ms)
{
	if (ms > IDLE_MAX_MS)
		ms = IDLE_MAX_MS;
	if (ms < IDLE_MIN_MS)
		ms = IDLE_MIN_MS;
	if (d->for_s >= 0 && sr_mono_ms() + ms > d->t0 + d->for_s * 1000)
		ms = d->t0 + d->for_s * 1000 - sr_mono_ms();
	sr_sleep_ms(ms);
}

int
sr_dispatch_idle(struct sr_dispatch *d, long long queued, long long wait_ms)
{
	if (d->until_empty && queued == 0)
		return 0;
	if (!d->follow)
		return 0;
	nap(d, wait_ms);
	return 1;
}

int
sr_dispatch_switch_off(struct sr_dispatch *d, const char *kept)
{
	if (!d->said_off++)
		sr_note("the global switch is off: claiming nothing (%s are kept)", kept);
	if (!d->follow || d->until_empty)
		return 0;
	nap(d, IDLE_MAX_MS);
	return 1;
}
