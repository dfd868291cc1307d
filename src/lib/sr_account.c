/* sr_account.c - an account's resolved settings: its profile's, then the
 * environment's defaults (cached per process); and whether a claim's lease
 * outlives a call under them. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "sr.h"

#define ACCT_BUCKETS 256
static struct sr_account *accounts[ACCT_BUCKETS];

/* ------------------------------------------------------------ accounts */

static long
pick(long v, long dflt)
{
	return v >= 0 ? v : dflt;
}

static double
pickd(double v, double dflt)
{
	return v >= 0 ? v : dflt;
}

const struct sr_account *
sr_account(const struct sr_config *cfg, const char *carrier)
{
	uint32_t h = 2166136261u;
	struct sr_account *a;
	const struct sr_profile *p;
	json_t *s;

	for (const unsigned char *c = (const unsigned char *)carrier; *c; c++)
		h = (h ^ *c) * 16777619u;
	for (a = accounts[h % ACCT_BUCKETS]; a; a = a->next)
		if (!strcmp(a->id, carrier))
			return a;
	p = sr_profile_for(cfg, carrier);
	a = sr_malloc(sizeof *a);
	memset(a, 0, sizeof *a);
	snprintf(a->id, sizeof a->id, "%s", carrier);
	a->p = p;
	a->qps = pick(p->qps, cfg->qps);
	a->running = pick(p->running, cfg->max_running);
	a->burst = pick(p->burst, cfg->burst);
	a->interval_ms = pick(p->interval_ms, cfg->min_interval_ms);
	a->window_ms = cfg->rate_window_ms;
	a->lease_ms = cfg->lease_ms;
	a->timeout_ms = pick(p->timeout_ms, cfg->gw_timeout_ms);
	a->connect_timeout_ms = pick(p->connect_timeout_ms, cfg->gw_connect_timeout_ms);
	a->connect_budget_ms = pick(p->connect_budget_ms, 100);
	a->keepalive_ms = pick(p->keepalive_ms, 4000);
	a->poll_ms = pick(p->poll_ms, 2000);
	a->settle_ms = pick(p->settle_ms, 600000);
	a->confirm_delay_ms = cfg->confirm_delay_ms;
	a->alert_after = cfg->alert_after;
	a->freeze_after = cfg->freeze_after;
	a->audit_max = cfg->audit_maxlen;
	a->aimd_inc = pickd(p->aimd_inc, a->qps > 0 ? (a->qps / 20.0 > 0.1 ? a->qps / 20.0 : 0.1) : 1);
	a->aimd_beta = pickd(p->aimd_beta, 0.7);
	/* The share of calls a carrier refuses for rate at random, noise not
	 * its limit (includes/edge.lua, edgeLower). */
	a->aimd_noise = pickd(p->aimd_noise, 0.1);
	a->aimd_memory_ms = pick(p->aimd_memory_ms, 20000);
	a->reserve_qps = pick(p->reserve_qps, 0);
	a->brk_failures = pick(p->brk_failures, 5);
	a->brk_ratio = pickd(p->brk_ratio, 0.5);
	a->brk_window_ms = pick(p->brk_window_ms, 10000);
	a->brk_cool_ms = pick(p->brk_cool_ms, 10000);
	a->brk_cool_max_ms = pick(p->brk_cool_max_ms, 300000);
	if (a->brk_cool_max_ms < a->brk_cool_ms)
		a->brk_cool_max_ms = a->brk_cool_ms;
	s = json_pack("{sI sI sI sI sI sI sI sI sI sI sI sI sI sf sf sf sI sI sf sI sI sI sI sb}",
	    "interval", (json_int_t)a->interval_ms, "window", (json_int_t)a->window_ms,
	    "lease", (json_int_t)a->lease_ms, "qps", (json_int_t)a->qps,
	    "running", (json_int_t)a->running, "burst", (json_int_t)a->burst,
	    "alert_after", (json_int_t)a->alert_after, "freeze_after", (json_int_t)a->freeze_after,
	    "audit_max", (json_int_t)a->audit_max, "confirm_delay", (json_int_t)a->confirm_delay_ms,
	    "poll", (json_int_t)a->poll_ms, "settle", (json_int_t)a->settle_ms,
	    "aimd_memory", (json_int_t)a->aimd_memory_ms, "aimd_inc", a->aimd_inc,
	    "aimd_beta", a->aimd_beta, "aimd_noise", a->aimd_noise, "brk_failures", (json_int_t)a->brk_failures,
	    "brk_window", (json_int_t)a->brk_window_ms, "brk_ratio", a->brk_ratio,
	    "brk_cool", (json_int_t)a->brk_cool_ms, "brk_cool_max", (json_int_t)a->brk_cool_max_ms,
	    "connect_budget", (json_int_t)a->connect_budget_ms, "call", (json_int_t)a->timeout_ms,
	    "async", p->async);
	if (!s || !(a->settings = json_dumps(s, JSON_COMPACT)))
		sr_die(SR_EX_USAGE, "out of memory");
	json_decref(s);
	a->next = accounts[h % ACCT_BUCKETS];
	accounts[h % ACCT_BUCKETS] = a;
	return a;
}

/* Whether a claim's lease outlives a call that runs its whole timeout
 * (CURLOPT_TIMEOUT_MS: its connection included) under profile p by
 * SR_LEASE_MARGIN_MS. The gate extends a lease to the call's slot plus the
 * lease whenever less than the call's timeout plus half a lease is left, so
 * its result has min(lease - timeout, lease / 2) to reach sr-confirm; a
 * call that outlives its lease lets another pipeline claim the card and
 * ask the carrier again (a status query per lease). -1 with err if not. */
int
sr_lease_check(const struct sr_config *cfg, const struct sr_profile *p, char *err, size_t errlen)
{
	long timeout = pick(p->timeout_ms, cfg->gw_timeout_ms);
	char what[600];

	if (cfg->lease_ms >= timeout + SR_LEASE_MARGIN_MS)
		return 0;
	if (p->timeout_ms >= 0)
		snprintf(what, sizeof what, "timeout_ms '%ld' of profile '%s' (%s)", timeout, p->name, p->path);
	else
		snprintf(what, sizeof what, "SRQ_GATEWAY_TIMEOUT_MS '%ld'", timeout);
	snprintf(err, errlen, "SRQ_LEASE_MS '%ld' must exceed %s by at least %d ms: a call that "
	    "outlives its claim's lease lets another pipeline claim the card and ask the carrier "
	    "again", cfg->lease_ms, what, SR_LEASE_MARGIN_MS);
	return -1;
}

int
sr_lease_check_all(const struct sr_config *cfg, char *err, size_t errlen)
{
	for (const struct sr_profile *p = sr_profile_next(cfg, NULL); p; p = sr_profile_next(cfg, p))
		if (sr_lease_check(cfg, p, err, errlen) < 0)
			return -1;
	return 0;
}

void
sr_lease_require(const struct sr_config *cfg)
{
	char err[1024];

	if (sr_lease_check_all(cfg, err, sizeof err) < 0)
		sr_die(SR_EX_USAGE, "%s", err);
}

void
sr_accounts_free(void)
{
	for (int b = 0; b < ACCT_BUCKETS; b++)
		while (accounts[b]) {
			struct sr_account *a = accounts[b];

			accounts[b] = a->next;
			free(a->settings);
			free(a);
		}
	sr_profiles_free();
}
