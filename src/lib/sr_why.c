/* sr_why.c - why a card is, or is not, about to be changed: one state and one
 * sentence an on-call engineer can act on (sr-admin why).
 *
 * Pure: everything it looks at is read beforehand (struct sr_why_card and
 * struct sr_why_account, filled by sr-admin from Redis); no I/O, and the
 * clock is the caller's `now` (Redis's). So every state is unit-tested as a
 * table (tests/unit/test_why.c). The order of the checks is the order in
 * which they hold a card back: a frozen command waits for an operator
 * whatever else is true; a live claim is in someone's hands; an account that
 * holds every call (paused, a limit of 0, its breaker) holds this one; then
 * the card's own reasons (confirming, its interval, a backoff, a refusal);
 * then the account's pace. A sentence that asks an operator to act ends
 * with the command to run, whole (sr_why_run): pasted into a shell, it
 * runs as printed. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sr.h"

static const char *say(char *buf, size_t n, const char *state, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The sentence in buf, cut to fit: on a character's boundary, since it
 * quotes operators' text (a reason in Chinese) and a cut UTF-8 character
 * would make it no JSON string at all. */
static const char *
say(char *buf, size_t n, const char *state, const char *fmt, ...)
{
	va_list ap;
	int full;

	va_start(ap, fmt);
	full = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	if (n > 0 && full >= 0 && (size_t)full >= n) {
		size_t len = strlen(buf), lead = len;

		/* Back over continuation bytes (10xxxxxx) to the last lead byte;
		 * if its sequence is not whole, it goes. */
		while (lead > 0 && len - lead < 4 && ((unsigned char)buf[lead - 1] & 0xc0) == 0x80)
			lead--;
		if (lead > 0) {
			unsigned char c = (unsigned char)buf[lead - 1];
			size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;

			if (len - (lead - 1) < need)
				buf[lead - 1] = '\0';
		}
	}
	return state;
}

#define S(s) ((s) ? (s) : "")

const char *
sr_why_run(const struct sr_why_card *c, const struct sr_why_account *a, const char *state, char *buf,
    size_t n)
{
	buf[0] = '\0';
	/* Ids are [A-Za-z0-9_.-]: nothing in them a shell reads. */
	if (!strcmp(state, "frozen"))
		snprintf(buf, n, "sr-admin retry %s --carrier %s --reason 'cause fixed'", c->card, a->name);
	else if (!strcmp(state, "not_queued"))
		snprintf(buf, n, "echo '{\"card\":\"%s\",\"carrier\":\"%s\",\"scene\":\"manual_recheck\"}' | "
		    "sr-enqueue", c->card, a->name);
	else if (!strcmp(state, "paused") && a->limit_below_1)
		snprintf(buf, n, "sr-admin limits %s %s=%ld --reason 'limit restored'", a->name, a->limit_below_1,
		    a->limit_configured > 0 ? a->limit_configured : 1);
	else if (!strcmp(state, "breaker") && a->brk_manual)
		snprintf(buf, n, "sr-admin breaker %s close --reason 'carrier back'", a->name);
	else if (!strcmp(state, "due"))
		snprintf(buf, n, "sr-claim --carrier %s | sr-exec | sr-confirm", a->name);
	return buf;
}

/* The account holds every call (a limit below 1, a pause, the breaker), or,
 * for a due command, paces it: its state, or NULL. */
static const char *
account_holds(const struct sr_why_account *a, long long now, int due, char *buf, size_t n)
{
	char run[200];

	if (a->limit_below_1)
		return say(buf, n, "paused", "a per-account limit below 1 (%s) stops every call to the "
		    "account %s (to pause it, use sr-admin pause); to lift it: %s", a->limit_below_1, a->name,
		    sr_why_run(NULL, a, "paused", run, sizeof run));
	if (a->pause_until > now)
		return say(buf, n, "paused", "the account %s is paused%s%s by %s: %s", a->name,
		    a->pause_until >= SR_FOREVER_MS ? " until resumed" : " until ",
		    a->pause_until >= SR_FOREVER_MS ? "" : sr_when(a->pause_until, now),
		    a->pause_who ? a->pause_who : "?", S(a->pause_why));
	if (a->brk_until && a->brk_manual)
		return say(buf, n, "breaker", "account breaker open since %s (%s): no call until it is "
		    "closed: %s", sr_when(a->brk_since, now), S(a->brk_why),
		    sr_why_run(NULL, a, "breaker", run, sizeof run));
	if (a->brk_until && a->brk_until > now)
		return say(buf, n, "breaker", "account breaker open since %s: %s; a probe call goes at %s",
		    sr_when(a->brk_since, now), S(a->brk_why), sr_when(a->brk_until, now));
	if (a->brk_until)
		return say(buf, n, "breaker", "account breaker half-open since %s: one probe call decides "
		    "(opened at %s: %s)", sr_when(a->brk_until, now), sr_when(a->brk_since, now),
		    S(a->brk_why));
	if (due && a->next_slot > now + 1)
		return say(buf, n, "rate", "due, waiting for the account's pace: its next call may leave "
		    "at %s (%.2f calls/s now, limit %ld)", sr_when(a->next_slot, now), a->qps_effective,
		    a->qps);
	return NULL;
}

const char *
sr_why(const struct sr_why_card *c, const struct sr_why_account *a, long long now, char *buf,
    size_t n)
{
	const char *held;
	char run[200];

	if (!c->action) {
		const struct sr_judgment *j = c->judged;
		char dropped[300] = "";

		/* Who dropped its last command, when and why (the audit's). */
		if (c->dropped_who)
			snprintf(dropped, sizeof dropped, " (dropped by %s at %s: %s)", c->dropped_who,
			    sr_when(c->dropped_at, now), S(c->dropped_why));
		if (c->superseded && !c->dropped_who)
			return say(buf, n, "superseded", "no command: version %lld was superseded before its "
			    "call (the judgment now says %s)", c->superseded, j->reason);
		if (j->want == SR_WANT_NONE)
			return say(buf, n, "no_command", "no command%s: the judgment says %s (target %s, last "
			    "known status %s%s)", dropped, j->reason, j->target_stopped ? "stopped" : "active",
			    c->status && *c->status ? c->status : "unknown",
			    j->manual ? ", stopped by hand: never auto-resumed" : "");
		return say(buf, n, "not_queued", "no command queued%s, but the judgment wants %s (%s); to "
		    "queue it: %s", dropped, sr_want_name(j->want), j->reason,
		    sr_why_run(c, a, "not_queued", run, sizeof run));
	}
	if (c->frozen && c->frozen_who)
		return say(buf, n, "frozen", "frozen by %s at %s: %s; to unfreeze it: %s", c->frozen_who,
		    sr_when(c->frozen_at, now), S(c->frozen_why), sr_why_run(c, a, "frozen", run, sizeof run));
	if (c->frozen && !c->fails)
		return say(buf, n, "frozen", "frozen by hand (sr-admin audit %s --carrier %s says who and "
		    "why); to unfreeze it: %s", c->card, a->name, sr_why_run(c, a, "frozen", run, sizeof run));
	if (c->frozen)
		return say(buf, n, "frozen", "frozen after %lld failures (the first at %s); last error: "
		    "%s; to unfreeze it: %s", c->fails, sr_when(c->first_fail, now),
		    c->last_error ? c->last_error : "none", sr_why_run(c, a, "frozen", run, sizeof run));
	if (c->claim && c->lease_until > now)
		return say(buf, n, "claimed", "claimed by a live lease until %s (token %s)%s",
		    sr_when(c->lease_until, now), c->claim, c->called ? ": its call is in flight" : "");
	if ((held = account_holds(a, now, 0, buf, n)))
		return held;
	if (c->confirming)
		return say(buf, n, "confirming", "confirming an unknown result: a status query is due %s %s",
		    c->due > now ? "at" : "since", sr_when(c->due, now));
	if (c->due > now && c->last_call && c->due <= c->last_call + c->interval_ms && !c->fails)
		return say(buf, n, "interval", "waiting for the card's interval: last call at %s, next "
		    "allowed at %s", sr_when(c->last_call, now), sr_when(c->last_call + c->interval_ms, now));
	if (c->due > now && c->fails)
		return say(buf, n, "backoff", "backing off after %lld consecutive failures until %s; last "
		    "error: %s", c->fails, sr_when(c->due, now), c->last_error ? c->last_error : "none");
	if (c->due > now && c->last_error)
		return say(buf, n, "refused", "the carrier refused its last call without applying it "
		    "(%s): not a failure of the card; it goes again at %s", c->last_error,
		    sr_when(c->due, now));
	if (c->due > now)
		return say(buf, n, "scheduled", "due at %s", sr_when(c->due, now));
	if ((held = account_holds(a, now, 1, buf, n)))
		return held;
	return say(buf, n, "due", "due now (since %s): waiting for a dispatcher (srq-drain, from cron; "
	    "by hand: %s)", sr_when(c->due, now), sr_why_run(c, a, "due", run, sizeof run));
}
