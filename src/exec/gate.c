/* gate.c - sr-exec asks the gate (gate.lua) for each judged task's slot, one
 * script call per account, and reads what it said: pass (held until its
 * slot), wait for the pace, or blocked; with SRQ_WAIT_REPLICAS, passes are
 * on the replicas before their calls go. */
#include <stdlib.h>
#include <string.h>

#include "exec.h"

/* What the gate said of one item. */
static void
gated(struct item *it, const redisReply *rep)
{
	const char *verdict;
	char msg[128];

	if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
	    rep->element[0]->type != REDIS_REPLY_STRING) {
		snprintf(msg, sizeof msg, "gate script failed: %s",
		    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
		/* Not gated, not called: answered like a task Redis was down
		 * for (its lease expires and it is claimed again). */
		sr_warn_each(sr_card_subject(it->t.card), msg);
		result_error(it, msg);
		return;
	}
	verdict = rep->element[0]->str;
	if (!strcmp(verdict, "done")) {
		snprintf(msg, sizeof msg, "re-judged: %s", sr_jstr(it->obj, "judged"));
		emit_result(it, "superseded", msg);
	} else if (!strcmp(verdict, "pass")) {
		/* Held until its slot: the rate counts it from then. */
		it->at = rep->element[1]->integer;
		it->gated = rep->element[2]->integer;
		it->call.seq = rep->element[3]->integer;
		it->wake = sr_mono_ms() + (rep->element[1]->integer - rep->element[2]->integer);
		it->state = IT_HOLD;
		it->edge->held++;
		nheld++;
	} else if (!strcmp(verdict, "rate")) {
		it->state = IT_WAIT;
		it->wake = sr_mono_ms() + rep->element[1]->integer;
	} else if (!strcmp(verdict, "stale")) {
		snprintf(msg, sizeof msg, "version %lld replaced by %lld", it->t.ver,
		    rep->element[1]->integer);
		emit_result(it, "superseded", msg);
	} else if (!strcmp(verdict, "interval")) {
		snprintf(msg, sizeof msg, "card called too recently; next call at %lld ms",
		    rep->element[1]->integer);
		blocked(it, "interval", msg);
	} else if (!strcmp(verdict, "paused") || !strcmp(verdict, "breaker")) {
		snprintf(msg, sizeof msg, "%s until %lld ms", !strcmp(verdict, "paused") ?
		    "the account is paused" : "the account's breaker is open",
		    rep->element[1]->integer);
		blocked(it, verdict, msg);
	} else if (!strcmp(verdict, "frozen")) {
		blocked(it, "frozen", "frozen by an operator since its claim: not sent");
	} else if (!strcmp(verdict, "replayed")) {
		blocked(it, "replayed", "this claim has called already: a replayed task is not sent");
	} else {
		blocked(it, "lost", "lease lost: the claim is no longer ours");
	}
}

/* With SRQ_WAIT_REPLICAS, a gate pass is on the replicas before its call
 * goes out: a master that fails over cannot forget a call that was made, and
 * let the card be called again inside its interval. The WAIT runs where the
 * pass was written (the node, and the connection, that answered the gate
 * call). Passes the replicas did not confirm (or whose master was lost
 * meanwhile) are not sent: answered "retry", class unreplicated, which gives
 * the card its interval back. Group g is items order[k..k+group[g]). */
static void
replicated(struct item **order, const int *group, const int *node, const unsigned *gen,
    int ngroups, int lost)
{
	for (int g = 0, k = 0; g < ngroups; k += group[g++]) {
		int held = 0, w;

		for (int j = k; j < k + group[g]; j++)
			held += order[j]->state == IT_HOLD;
		if (!held || (!lost && (w = sr_redis_wait_on(&rds, &cfg, node[g], gen[g])) == 0))
			continue;
		if (lost || w < 0)
			lost = 1; /* no more WAITs: what is left is not confirmed either */
		for (int j = k; j < k + group[g]; j++) {
			if (order[j]->state != IT_HOLD)
				continue;
			order[j]->edge->held--;
			nheld--;
			order[j]->call.class = "unreplicated";
			emit_result(order[j], "retry", rds.errstr);
		}
	}
}

/* How far ahead acct's gate may grant a slot to a task of lane (ms, as
 * text in buf). */
static const char *
slot_ahead(const struct sr_account *acct, enum sr_lane lane, char *buf, size_t len)
{
	long ms = acct->qps > 0 ? 1000 / acct->qps : SLOT_AHEAD_MS;

	if (lane > SR_LANE_HIGH)
		ms = SLOT_AHEAD_MIN_MS;
	snprintf(buf, len, "%ld", ms < SLOT_AHEAD_MIN_MS ? SLOT_AHEAD_MIN_MS :
	    ms > SLOT_AHEAD_MS ? SLOT_AHEAD_MS : ms);
	return buf;
}

static const char *
item_account(const void *items, int i)
{
	return ((struct item *const *)items)[i]->t.carrier;
}

void
gate_append(struct gating *g, struct item **batch, int n)
{
	/* The keys and arguments of one script call, as gate.lua's header
	 * declares them: the account's keys, then each item's; the account's
	 * arguments, then each item's. Each call is formatted when appended,
	 * so the next reuses them. */
	static char keys[SR_GATE_KEYS + SR_GATE_ITEM_KEYS * GATE_BATCH][SR_KEY_MAX];
	static char vers[GATE_BATCH][24], stats[SR_KEY_MAX];
	static const char *argv[SR_GATE_KEYS + SR_GATE_ARGC +
	    (SR_GATE_ITEM_KEYS + SR_GATE_ITEM_ARGC) * GATE_BATCH];
	struct sr_batch b;
	char ahead[24];

	sr_batch_by_account(&b, n, batch, item_account, GATE_BATCH);
	g->order = sr_malloc((size_t)(n + 1) * sizeof *g->order);
	g->group = b.size;
	g->ngroups = b.ngroups;
	g->node = sr_malloc((size_t)(n + 1) * sizeof *g->node);
	g->gen = sr_malloc((size_t)(n + 1) * sizeof *g->gen);
	g->asked = sr_malloc((size_t)(n + 1) * sizeof *g->asked);
	g->read = 0;
	for (int i = 0; i < b.nitems; i++)
		g->order[i] = batch[b.order[i]];
	for (int grp = 0, at = 0; grp < b.ngroups; at += b.size[grp++]) {
		struct item *first = g->order[at];
		const char *carrier = first->t.carrier, **a;
		int nk, m = b.size[grp];

		nk = sr_keys_account(keys, argv, cfg.prefix, carrier, sr_lua_gate_keys);
		for (int k = 0; k < m; k++)
			nk += sr_keys_script(keys + nk, argv + nk, cfg.prefix, carrier,
			    g->order[at + k]->t.card, sr_lua_gate_item_keys);
		a = argv + nk;
		a[SR_GATE_ARGV_SETTINGS] = first->edge->acct->settings;
		a[SR_GATE_ARGV_STATS] = sr_key_account(stats, cfg.prefix, carrier, "stats:");
		/* (the account's first item is its highest lane's) */
		a[SR_GATE_ARGV_AHEAD] = slot_ahead(first->edge->acct, first->t.lane, ahead, sizeof ahead);
		for (int k = 0; k < m; k++) {
			struct item *it = g->order[at + k];
			const char **ia = a + SR_GATE_ARGC + k * SR_GATE_ITEM_ARGC;

			snprintf(vers[k], sizeof vers[0], "%lld", it->t.ver);
			ia[SR_GATE_ITEM_ARGV_TOKEN] = it->t.token;
			ia[SR_GATE_ITEM_ARGV_VERSION] = vers[k];
			ia[SR_GATE_ITEM_ARGV_KIND] = it->judged ? "judged" : it->t.kind;
			ia[SR_GATE_ITEM_ARGV_CARD] = it->t.card;
			ia[SR_GATE_ITEM_ARGV_RESEND] = it->resend ? "1" : "0";
			ia[SR_GATE_ITEM_ARGV_ACTION] = it->t.action;
		}
		/* Its first gate here: what an earlier run knew of its clock. */
		g->asked[grp] = sr_clocks_ask(&clocks, &rds, &cfg, first->edge);
		sr_redis_append_script(&rds, SR_LUA_GATE, nk, nk + SR_GATE_ARGC + m * SR_GATE_ITEM_ARGC,
		    argv, NULL);
	}
	free(b.order);
}

/* The Redis time a gate reply read (a pass's, a pause's or an open
 * breaker's now), or 0. */
static long long
reply_now(const redisReply *rep)
{
	for (size_t j = 0; rep->type == REDIS_REPLY_ARRAY && j < rep->elements; j++) {
		const redisReply *r = rep->element[j];

		if (r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
		    r->element[0]->type == REDIS_REPLY_STRING &&
		    r->element[2]->type == REDIS_REPLY_INTEGER &&
		    (!strcmp(r->element[0]->str, "pass") || !strcmp(r->element[0]->str, "paused") ||
		    !strcmp(r->element[0]->str, "breaker")))
			return r->element[2]->integer;
	}
	return 0;
}

/* Passes made on a clock that stepped forward since the account's cards
 * were last gated, before the step was recorded: each card's interval was
 * counted from a last call that is behind, and the pace's slots from a tat
 * that is. They are not sent: answered retry, class clock_step, which gives
 * the card its interval back (sr-confirm), and gated again once the step is
 * recorded (sr_clocks_record). */
static void
not_sent_stepped(struct item **order, int n)
{
	char msg[160];

	for (int j = 0; j < n; j++) {
		struct item *it = order[j];

		if (it->state != IT_HOLD)
			continue;
		it->edge->held--;
		nheld--;
		snprintf(msg, sizeof msg, "the Redis server's clock stepped forward by %ld ms or more: "
		    "gated on it, not sent", it->edge->step_lo);
		it->call.class = "clock_step";
		emit_result(it, "retry", msg);
	}
}

/* The gate's replies. -1: Redis failed, and the rest of the round's
 * replies are dropped (a WAIT must not read them as its own). */
int
gate_read(struct gating *g)
{
	for (int k = 0; g->read < g->ngroups; g->read++) {
		redisReply *rep = g->asked[g->read] ? sr_redis_reply(&rds) : NULL;
		int64_t replied;
		long long now;
		int stepped = 0;

		if (g->asked[g->read]) {
			if (!rep) {
				sr_redis_discard(&rds);
				return -1;
			}
			sr_clocks_asked(&clocks, g->order[k]->edge, rep);
			freeReplyObject(rep);
		}
		rep = sr_redis_reply(&rds);
		replied = sr_mono_ms();
		if (!rep) {
			sr_redis_discard(&rds);
			return -1;
		}
		sr_redis_reply_from(&rds, &g->node[g->read], &g->gen[g->read]);
		if ((now = reply_now(rep)) > 0)
			stepped = sr_clocks_gated(&clocks, g->order[k]->edge, g->node[g->read], now,
			    g->sent, replied);
		for (int j = 0; j < g->group[g->read]; j++, k++)
			gated(g->order[k], sr_batch_reply(rep, j, 1));
		if (stepped)
			not_sent_stepped(g->order + k - g->group[g->read], g->group[g->read]);
		freeReplyObject(rep);
	}
	return 0;
}

/* The round is over: passes not on the replicas are not sent (lost: Redis
 * failed during the round). */
void
gate_end(struct gating *g, int lost)
{
	if (cfg.wait_replicas > 0)
		replicated(g->order, g->group, g->node, g->gen, g->read, lost);
	free(g->order);
	free(g->group);
	free(g->node);
	free(g->gen);
	free(g->asked);
	memset(g, 0, sizeof *g);
}
