/* sr_why.h - the API of sr_why.c. */
#ifndef SR_WHY_H
#define SR_WHY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_judge.h"

/* A pause that ends this far out (9999-12-31, admin_account.lua's
 * "forever") lasts until resumed. */
#define SR_FOREVER_MS 253402300799000LL
/* What sr-admin why looks at, read from Redis beforehand (times in Redis ms). */
struct sr_why_card {
	const char *card;
	const char *action;              /* NULL: no command */
	const struct sr_judgment *judged; /* with no command: the judgment now */
	const char *status;              /* with no command: the facts' status */
	long long superseded;            /* the version re-judged away before its call, or 0 */
	const char *dropped_who, *dropped_why; /* with no command: its last one dropped by hand */
	long long dropped_at;
	int frozen;
	const char *frozen_who, *frozen_why; /* frozen by hand */
	long long frozen_at, fails, first_fail;
	const char *last_error;
	const char *claim;
	long long lease_until;
	int called, confirming;
	long long due, last_call, interval_ms;
};
struct sr_why_account {
	const char *name;
	const char *limit_below_1;       /* "qps" or "running" when set below 1, else NULL */
	long limit_configured;           /* that limit's configured value (the profile's, SRQ_QPS) */
	long long pause_until;           /* 0: not paused */
	const char *pause_who, *pause_why;
	long long brk_until, brk_since;  /* brk_until 0: breaker closed */
	int brk_manual;
	const char *brk_why;
	long long next_slot;             /* the pace: when its next call may leave */
	double qps_effective;
	long qps;
};
/* Why the card is, or is not, about to be changed: its state (interval,
 * frozen, due, ...; docs/operations.md) and a sentence in buf, which ends
 * with the command that moves it, if an operator's (sr_why_run). Pure. */
const char *sr_why(const struct sr_why_card *c, const struct sr_why_account *a, long long now,
    char *buf, size_t n);
/* That command, for a card in state, in buf ("" if none): whole, as it
 * runs when pasted into a shell (its --reason a placeholder to edit). */
const char *sr_why_run(const struct sr_why_card *c, const struct sr_why_account *a, const char *state,
    char *buf, size_t n);

#endif
