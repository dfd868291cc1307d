/* sr_direct.c - the direct path: execute requests on the spot (switch off).
 *
 * The legacy behaviour, kept safe: each card gets up to 3 state-change tries
 * 2 s apart (or after the carrier's Retry-After, within the run's bound),
 * every try through the same per-card interval and account rate
 * (direct_gate.lua) as the queue, so the direct path never calls a card
 * inside its interval nor an account over its rate. An unknown result is
 * settled by a status query before any further try. A device-level reason
 * takes the device lock first, the one dev-eval takes: once per device for
 * the run's cards of that device, kept until the last of them is done and
 * what its call did is written as the card's status (dev-eval, which may
 * take the device next, judges the card on it). A change the carrier
 * accepted but has not applied (asynchronous) is on its way: not written.
 * Tries, gaps and queries together can take longer than any fixed hold (3
 * calls and 3 queries at a 10 s gateway timeout, with the gaps, are over a
 * minute), so the hold is extended every LOCK_RENEW_MS while it works. Should
 * the lock be lost all the same (Redis lost the key, someone deleted it), its
 * cards make no further call. All requests of a batch run concurrently on
 * the gateway client.
 */
#include <stdlib.h>
#include <string.h>

#include "sr.h"

#define TRIES 3
#define TRY_GAP_MS 2000
/* A run's bound: a Retry-After is waited for only while the next try is due
 * within this of the request's start. The caller waits on the run; a
 * longer wait is the queue's (the request fails and is queued). */
#define RUN_BOUND_MS 15000
#define LOCK_WAIT_MS 5000
/* The hold only has to outlast the time between two extensions: a pass of
 * the loop, which waits on Redis at most (calls run in the background). A
 * holder that died keeps dev-eval out of the device this long at most. */
#define LOCK_HOLD_MS 30000
#define LOCK_RENEW_MS 1000

enum { D_LOCK, D_GATE, D_HOLD, D_CALL, D_DONE };

static int
target_reached(const struct sr_direct *d, const char *observed)
{
	return !strcmp(observed, !strcmp(d->action, "stop") ? "stopped" : "active");
}

/* The device lock of a run: one per device, shared by the run's requests
 * for it (several cards of one device in one input must not wait for each
 * other on their own process's lock). Taken once, held until the last of
 * them is done. */
struct sr_dlock {
	const char *device;
	char token[SR_TOKEN_MAX];
	int held, lost;
	int users;          /* its requests not done */
	int64_t wake;       /* the next try to take it */
	int64_t busy_since; /* since when another holder keeps it from us (0: not) */
	int64_t renewed;    /* when its hold was last extended */
};

/* d is over: ok, the card is in its target state (to_record: the answer
 * says it is there, not only on its way). Its device lock is let go with
 * the run's pass (release_idle), once what the call did is recorded
 * (record_status): never before. */
static void
finish(struct sr_direct *d, int ok, const char *error)
{
	d->state = D_DONE;
	d->ok = ok;
	if (error)
		snprintf(d->error, sizeof d->error, "%s", error);
	if (d->lk)
		d->lk->users--;
	d->lk = NULL;
}

/* What the calls finished in this pass did is each card's status, as of
 * now; written while the device lock is still held, so that dev-eval, which
 * takes the device next, judges the card on it. A write Redis refused is
 * said on the request's line (d->unrecorded). -1 if Redis failed. */
static int
record_status(struct sr_redis *r, const struct sr_config *cfg, struct sr_direct **v, int n)
{
	struct sr_facts_batch fb = { 0 };
	char key[SR_KEY_MAX], source[64];
	int k = 0, rc = 0;

	snprintf(source, sizeof source, "%s:direct", sr_prog);
	for (int i = 0; i < n; i++) {
		int stop = !strcmp(v[i]->action, "stop");

		if (!v[i]->to_record)
			continue;
		sr_facts_status_add(&fb, sr_key_card_facts(key, cfg->prefix, v[i]->card), v[i]->carrier,
		    stop ? "stopped" : "active", stop ? "auto" : "", 0, source);
	}
	if (fb.n == 0)
		return 0;
	sr_facts_batch_append(r, &fb);
	if (sr_facts_batch_read(r, &fb) < 0) {
		rc = -1;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		json_t *stale = NULL;

		if (!v[i]->to_record)
			continue;
		v[i]->to_record = 0;
		if (sr_facts_written(sr_facts_batch_reply(&fb, k++), SR_FACTS_CARD, &stale,
		    v[i]->unrecorded, sizeof v[i]->unrecorded) >= 0)
			v[i]->unrecorded[0] = '\0';
		json_decref(stale);
	}
out:
	sr_facts_batch_free(&fb);
	return rc;
}

/* Locks whose requests are all done (and recorded) are let go. */
static void
release_idle(struct sr_redis *r, const struct sr_config *cfg, struct sr_dlock *locks, int nlocks)
{
	for (int k = 0; k < nlocks; k++) {
		struct sr_dlock *lk = &locks[k];
		int u;

		if (lk->users > 0 || !lk->held)
			continue;
		lk->held = 0;
		if ((u = sr_device_unlock(r, cfg, lk->device, lk->token)) == -1)
			sr_warn("device '%s': device lock not released: %s", lk->device, r->errstr);
		else if (u < -1) /* refused, or no longer ours: the message says what */
			sr_warn("device '%s': %s", lk->device, r->errstr);
	}
}

/* Take lk for its requests waiting in D_LOCK, or extend its hold while they
 * work. Busy for more than LOCK_WAIT_MS (another holder: dev-eval, another
 * process's direct run) fails them; a lock no longer ours is said, and they
 * make no further call (a call in flight ends first). -1 if Redis failed. */
static int
lock_step(struct sr_redis *r, const struct sr_config *cfg, struct sr_dlock *lk,
    struct sr_direct **v, int n, int64_t now)
{
	int got;

	if (lk->users == 0 || lk->lost)
		return 0;
	if (lk->held) {
		if (now - lk->renewed < LOCK_RENEW_MS)
			return 0;
		if ((got = sr_device_lock_extend(r, cfg, lk->device, lk->token, LOCK_HOLD_MS)) == -1)
			return -1;
		if (got == -2) /* refused: the hold left may still do; tried again soon */
			sr_warn("device '%s': %s", lk->device, r->errstr);
		if (got != 0) {
			lk->renewed = now;
			return 0;
		}
		sr_warn("device lock '%s' lost while its cards were not done (its hold ran out, or "
		    "another took it): no further call", lk->device);
		lk->held = 0;
		lk->lost = 1;
		return 0;
	}
	if (lk->wake > now)
		return 0;
	if ((got = sr_device_lock(r, cfg, lk->device, lk->token, LOCK_HOLD_MS, 0)) == -1)
		return -1;
	if (got == 1) {
		lk->held = 1;
		lk->renewed = now;
	} else if (got == 0 && !lk->busy_since) {
		lk->busy_since = now;
	}
	for (int i = 0; i < n; i++) {
		struct sr_direct *d = v[i];

		if (d->lk != lk || d->state != D_LOCK)
			continue;
		if (got == 1) {
			d->state = D_GATE;
			d->wake = 0;
		} else if (got == -2)
			finish(d, 0, r->errstr);
		else if (now - lk->busy_since > LOCK_WAIT_MS)
			finish(d, 0, "device lock busy");
	}
	lk->wake = now + 20;
	return 0;
}

/* d's id at the account's breaker: a half-open breaker's probe is known by
 * it from direct_gate.lua to direct_done.lua. */
static const char *
probe_id(const struct sr_direct *d, char *buf, size_t len)
{
	snprintf(buf, len, "direct:%s:%lld:%s", d->card, d->ver, d->action);
	return buf;
}

/* One gate pass for d: a slot held until it is due, or why not. -1 if
 * Redis failed. */
static int
gate(struct sr_redis *r, struct sr_gateway *gw, const struct sr_config *cfg, struct sr_direct *d)
{
	struct sr_edge *e = sr_gateway_edge(gw, d->carrier);
	char keys[SR_DIRECT_GATE_KEYS][SR_KEY_MAX], id[160], lease[24];
	/* direct_gate.lua's keys and arguments, as its header declares them */
	const char *argv[SR_DIRECT_GATE_KEYS + SR_DIRECT_GATE_ARGC], **a = argv + SR_DIRECT_GATE_KEYS;
	redisReply *rep;
	int query = d->query_next, ready;

	if ((ready = sr_edge_ready(gw, e)) == 0) {
		d->wake = sr_mono_ms() + 20; /* its token is being fetched */
		return 0;
	}
	if (ready < 0) {
		finish(d, 0, e->auth_error);
		return 0;
	}
	sr_keys_script(keys, argv, cfg->prefix, d->carrier, d->card, sr_lua_direct_gate_keys);
	a[SR_DIRECT_GATE_ARGV_SETTINGS] = e->acct->settings;
	a[SR_DIRECT_GATE_ARGV_KIND] = query ? "query" : d->resend ? "resend" : "call";
	a[SR_DIRECT_GATE_ARGV_AHEAD] = "200";
	a[SR_DIRECT_GATE_ARGV_REQUEST] = probe_id(d, id, sizeof id);
	/* A probe's call may take its slot's wait, its connection and the
	 * gateway timeout; past that (sr-enqueue died) another may probe. */
	snprintf(lease, sizeof lease, "%ld",
	    200 + e->acct->connect_timeout_ms + e->acct->timeout_ms + 1000);
	a[SR_DIRECT_GATE_ARGV_PROBE_LEASE] = lease;
	sr_redis_append_script(r, SR_LUA_DIRECT_GATE, SR_DIRECT_GATE_KEYS,
	    SR_DIRECT_GATE_KEYS + SR_DIRECT_GATE_ARGC, argv, NULL);
	if (!(rep = sr_redis_reply(r)))
		return -1;
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1) {
		finish(d, 0, rep->type == REDIS_REPLY_ERROR ? rep->str : "gate failed");
	} else if (!strcmp(rep->element[0]->str, "pass")) {
		memset(&d->call, 0, sizeof d->call);
		snprintf(d->call.card, sizeof d->call.card, "%s", d->card);
		snprintf(d->call.carrier, sizeof d->call.carrier, "%s", d->carrier);
		snprintf(d->call.action, sizeof d->call.action, "%s", query ? "status" : d->action);
		d->call.ver = d->ver;
		d->call.user = d;
		if (!query && !d->resend)
			d->tries++;
		d->kind = query ? "query" : d->resend ? "resend" : "call";
		d->resend = 0;
		/* Held until its slot: the account's rate counts it from then. */
		d->state = D_HOLD;
		d->wake = sr_mono_ms() + (rep->element[1]->integer - rep->element[2]->integer);
		d->gated = rep->element[2]->integer;
		/* What direct_done.lua gives back if the carrier refuses the call
		 * without applying it. */
		d->slot = rep->element[1]->integer;
		snprintf(d->prev_call, sizeof d->prev_call, "%s",
		    rep->elements > 3 && rep->element[3]->type == REDIS_REPLY_STRING ? rep->element[3]->str : "");
		e->held++;
	} else if (!strcmp(rep->element[0]->str, "rate")) {
		d->wake = sr_mono_ms() + rep->element[1]->integer;
	} else if (!strcmp(rep->element[0]->str, "interval")) {
		char msg[96];

		snprintf(msg, sizeof msg, "card called too recently; next call allowed at %lld ms",
		    rep->element[1]->integer);
		finish(d, 0, msg);
	} else {
		char msg[96];

		snprintf(msg, sizeof msg, "the account %s until %lld ms", !strcmp(rep->element[0]->str,
		    "paused") ? "is paused" : "breaker is open", rep->element[1]->integer);
		finish(d, 0, msg);
	}
	freeReplyObject(rep);
	return 0;
}

/* The account's side of a call's answer, and the card's interval given back
 * when the carrier did not apply it (direct_done.lua). -1: Redis failed. */
static int
done(struct sr_redis *r, const struct sr_config *cfg, struct sr_direct *d)
{
	struct sr_call *c = &d->call;
	char keys[SR_DIRECT_DONE_KEYS][SR_KEY_MAX], gated[24], http[24], slot[24], id[160];
	/* direct_done.lua's keys and arguments, as its header declares them */
	const char *argv[SR_DIRECT_DONE_KEYS + SR_DIRECT_DONE_ARGC], **a = argv + SR_DIRECT_DONE_KEYS;
	const char *seen = "";
	redisReply *rep;

	snprintf(gated, sizeof gated, "%lld", d->gated);
	snprintf(http, sizeof http, "%ld", c->http);
	sr_keys_script(keys, argv, cfg->prefix, d->carrier, d->card, sr_lua_direct_done_keys);
	a[SR_DIRECT_DONE_ARGV_SETTINGS] = c->edge->acct->settings;
	a[SR_DIRECT_DONE_ARGV_OUTCOME] = sr_outcome_name(c->outcome);
	a[SR_DIRECT_DONE_ARGV_CLASS] = c->class ? c->class : "";
	a[SR_DIRECT_DONE_ARGV_GRANTED] = gated;
	a[SR_DIRECT_DONE_ARGV_ERROR] = c->error;
	a[SR_DIRECT_DONE_ARGV_HTTP] = http;
	a[SR_DIRECT_DONE_ARGV_ACCOUNT] = d->carrier;
	a[SR_DIRECT_DONE_ARGV_KIND] = d->kind;
	/* What the answer says the card now is at the carrier. */
	if (!strcmp(c->action, "status")) {
		if (c->outcome == SR_OUT_OK &&
		    (!strcmp(c->observed, "stopped") || !strcmp(c->observed, "active")))
			seen = c->observed;
	} else if ((c->outcome == SR_OUT_OK && !c->in_progress) || c->outcome == SR_OUT_ALREADY)
		seen = !strcmp(d->action, "stop") ? "stopped" : "active"; /* accepted is not landed */
	a[SR_DIRECT_DONE_ARGV_SEEN] = seen;
	snprintf(slot, sizeof slot, "%lld", d->slot);
	a[SR_DIRECT_DONE_ARGV_PREV_CALL] = d->prev_call;
	a[SR_DIRECT_DONE_ARGV_SLOT] = slot;
	a[SR_DIRECT_DONE_ARGV_REQUEST] = probe_id(d, id, sizeof id);
	sr_redis_append_script(r, SR_LUA_DIRECT_DONE, SR_DIRECT_DONE_KEYS,
	    SR_DIRECT_DONE_KEYS + SR_DIRECT_DONE_ARGC, argv, NULL);
	if (!(rep = sr_redis_reply(r)))
		return -1;
	if (rep->type == REDIS_REPLY_ERROR)
		sr_warn("card '%s': %s", d->card, rep->str);
	freeReplyObject(rep);
	return 0;
}

/* Another try (or a query) follows d's call: not before the carrier's
 * Retry-After. One due past the run's bound fails d now instead. */
static void
again(struct sr_direct *d)
{
	long long ra = d->call.retry_after_ms;
	char msg[160];

	if (ra <= TRY_GAP_MS)
		return;
	if (sr_mono_ms() + ra > d->started + RUN_BOUND_MS) {
		snprintf(msg, sizeof msg, "the carrier asked to retry after %lld s, later than the direct "
		    "path waits", ra / 1000);
		finish(d, 0, msg);
		return;
	}
	d->wake = sr_mono_ms() + ra;
}

/* A finished call: decide done, another try, or a query first. */
static void
settle(struct sr_direct *d)
{
	struct sr_call *c = &d->call;

	d->state = D_GATE;
	d->wake = sr_mono_ms() + TRY_GAP_MS;
	snprintf(d->outcome, sizeof d->outcome, "%s", sr_outcome_name(c->outcome));
	if (c->error[0])
		snprintf(d->error, sizeof d->error, "%s", c->error);
	if (c->verdict == SR_V_REAUTH && !d->reauthed) {
		/* Refused for authentication: re-authenticate once and go again. */
		d->reauthed = 1;
		sr_edge_reauth(c->edge, c->auth_gen);
		d->resend = strcmp(c->action, "status") != 0;
		d->wake = sr_mono_ms();
		return;
	}
	if (!strcmp(c->action, "status")) {
		d->queries++;
		if (c->outcome == SR_OUT_OK && target_reached(d, c->observed)) {
			d->to_record = 1;
			finish(d, 1, NULL);
			return;
		}
		if (c->outcome == SR_OUT_OK)
			d->query_next = 0; /* the unknown call did not apply */
		else if (d->queries >= TRIES) {
			finish(d, 0, "unknown result, not settled by a status query");
			return;
		}
	} else if (c->outcome == SR_OUT_OK || c->outcome == SR_OUT_ALREADY) {
		/* Accepted, in progress: on its way, not the card's status yet. */
		d->to_record = c->outcome == SR_OUT_ALREADY || !c->in_progress;
		finish(d, 1, NULL);
		return;
	} else if (c->outcome == SR_OUT_FAIL) {
		finish(d, 0, NULL);
		return;
	} else if (c->outcome == SR_OUT_UNKNOWN) {
		d->query_next = 1; /* it may have applied: never re-call before knowing */
		again(d);
		return;
	}
	if (d->tries >= TRIES)
		finish(d, 0, NULL);
	else
		again(d);
}

int
sr_direct_run(struct sr_redis *r, struct sr_gateway *gw, const struct sr_config *cfg,
    struct sr_direct **v, int n)
{
	struct sr_dlock *locks = sr_malloc((n ? n : 1) * sizeof *locks);
	int left = n, nlocks = 0, rc = -1;

	memset(locks, 0, (n ? n : 1) * sizeof *locks);
	for (int i = 0; i < n; i++) {
		struct sr_direct *d = v[i];

		d->state = d->device ? D_LOCK : D_GATE;
		d->wake = 0;
		d->started = sr_mono_ms();
		d->lk = NULL;
		d->to_record = 0;
		d->unrecorded[0] = '\0';
		if (!d->device)
			continue;
		for (int k = 0; k < nlocks && !d->lk; k++)
			if (!strcmp(locks[k].device, d->device))
				d->lk = &locks[k];
		if (!d->lk) {
			d->lk = &locks[nlocks++];
			d->lk->device = d->device;
		}
		d->lk->users++;
	}
	while (left > 0) {
		int64_t now = sr_mono_ms(), next = now + 100;
		struct sr_call *c;

		for (int k = 0; k < nlocks; k++) {
			if (lock_step(r, cfg, &locks[k], v, n, now) < 0)
				goto out;
			if (locks[k].users && !locks[k].held && !locks[k].lost && locks[k].wake < next)
				next = locks[k].wake;
		}
		for (int i = 0; i < n; i++) {
			struct sr_direct *d = v[i];

			if (d->lk && d->lk->lost && (d->state == D_GATE || d->state == D_HOLD)) {
				if (d->state == D_HOLD)
					sr_gateway_edge(gw, d->carrier)->held--;
				finish(d, 0, "device lock lost");
			}
			if (d->state == D_GATE && d->wake <= now && gate(r, gw, cfg, d) < 0)
				goto out;
			if (d->state == D_HOLD && d->wake <= now) {
				struct sr_edge *e = sr_gateway_edge(gw, d->carrier);

				d->state = D_CALL;
				e->held--;
				if (sr_edge_late(r, cfg, e, d->wake) < 0)
					goto out;
				sr_gateway_start(gw, &d->call);
			}
			if ((d->state == D_GATE || d->state == D_HOLD) && d->wake < next)
				next = d->wake;
		}
		if (sr_gateway_running(gw))
			sr_gateway_poll(gw, (int)(next > now ? next - now : 0), -1);
		else if (next > now)
			sr_sleep_ms(next - now);
		while ((c = sr_gateway_done(gw))) {
			struct sr_direct *d = c->user;

			/* (a refusal for authentication goes again first, unreported) */
			if ((c->verdict != SR_V_REAUTH || d->reauthed) && done(r, cfg, d) < 0)
				goto out;
			settle(d);
		}
		if (record_status(r, cfg, v, n) < 0)
			goto out;
		release_idle(r, cfg, locks, nlocks);
		left = 0;
		for (int i = 0; i < n; i++)
			left += v[i]->state != D_DONE;
	}
	rc = 0;
out:
	/* (Redis failed: a lock still held runs out by itself) */
	for (int i = 0; i < n; i++)
		v[i]->lk = NULL;
	free(locks);
	return rc;
}

int
sr_direct_in_flight(const struct sr_direct *d)
{
	return d->state == D_CALL;
}
