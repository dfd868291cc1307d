/* sr_dispatch.c - what the two dispatchers (sr-claim, dev-eval) share:
 * their options (--follow, --until-empty, --for, --max, --batch) and their
 * pacing: one pass by default, or keep going, sleeping until the next due
 * time (bounded, so new work and freed slots are noticed quickly); and
 * how they stop when told to (SIGTERM, SIGINT): as when --for runs out,
 * after the round under way, so that what they claimed is handed on. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "sr.h"

#define IDLE_MAX_MS 250
#define IDLE_MIN_MS 5

static volatile sig_atomic_t stop_asked;

static void
on_stop(int sig)
{
	(void)sig;
	stop_asked = 1;
}

/* The first SIGTERM or SIGINT asks for a stop; a second one (the handler
 * is reset) kills, for a dispatcher stuck where it cannot see the first.
 * With SA_RESTART a Redis read under way is not cut short (and failed):
 * the flag is seen at the round's end, or wakes the nap (nanosleep is
 * never restarted). */
static void
catch_stop(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sa.sa_flags = SA_RESTART | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

void
sr_dispatch_init(struct sr_dispatch *d)
{
	memset(d, 0, sizeof *d);
	d->for_s = -1;
	d->max = -1;
	d->batch = 64;
	d->t0 = sr_mono_ms();
	catch_stop();
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
	return stop_asked || (d->for_s >= 0 && sr_mono_ms() - d->t0 >= d->for_s * 1000) ||
	    (d->max >= 0 && d->total >= d->max);
}

long long
sr_dispatch_left_ms(const struct sr_dispatch *d)
{
	long long left;

	if (d->for_s < 0)
		return -1;
	left = d->t0 + d->for_s * 1000 - sr_mono_ms();
	return left > 0 ? left : 0;
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
	if (ms > 0 && !stop_asked) {
		struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

		/* A stop asked wakes it (EINTR), and ends the wait. */
		while (nanosleep(&ts, &ts) == -1 && errno == EINTR && !stop_asked)
			;
	}
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
