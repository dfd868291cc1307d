/* sr-exec - the executor: the only tool that calls stop/resume at the gateway.
 *
 * For each task line:
 *   1. re-judge with fresh facts (sr_judge), read a scheduling step before
 *      the task's gate, in the round trip of the gate of the tasks before it,
 *      and read again if the task then waited more than JUDGED_MAX_MS; a call
 *      no longer wanted ends as "superseded" without touching the gateway;
 *   2. pass the atomic gate (gate.lua): the account not paused nor behind its
 *      breaker, claim and version current, the card's interval respected, and
 *      a slot from the account's pace, up to one of its slots ahead
 *      (slot_ahead). The gate records the call before it is made, so a
 *      crash from here on is an unknown result that the next claim turns
 *      into a status query, never a blind re-call; an account whose pace
 *      has no slot yet makes the task wait here, in memory (that is how the
 *      rate is used fully under a backlog);
 *   3. hold the call until its slot, then call the gateway once (or query the
 *      status) as the account's profile says, and classify the answer; a
 *      refusal for authentication re-authenticates once and goes again;
 *   4. print one result line: the task plus outcome, http, error, ms.
 * Results are printed as calls finish, not in input order; each carries the
 * task's card, carrier, version and token, which is what sr-confirm matches.
 *
 * Redis unavailable: tasks not yet gated are answered with "status":"error"
 * (their leases expire and they are claimed again) and the exit status is 3.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sr.h"

/* How far ahead the gate may grant a slot: the call is held until then.
 * A slot granted ahead hides the gate's round trip; but a task of a higher
 * lane arriving meanwhile waits behind the call that holds it. So a status
 * query, a retry and a paying user's call take theirs up to one of the
 * account's slots ahead (1000 / qps ms, within these bounds), and normal
 * and bulk work only SLOT_AHEAD_MIN_MS ahead: under a stream of due queries
 * a bulk call slipping into a gap would put every later query a slot late. */
#define SLOT_AHEAD_MS 200
#define SLOT_AHEAD_MIN_MS 20
/* How old a judgment may be when its item is gated: one older is made again
 * first (the facts may have changed while the item waited for a slot). */
#define JUDGED_MAX_MS 100

static const char usage[] =
"usage: sr-exec [--gateway URL] [--concurrency N] < tasks.jsonl > results.jsonl\n"
"\n"
"Execute claimed tasks at the carrier gateway: re-judge, pass the atomic gate\n"
"(pause and breaker, lease, version, per-card interval, the account's pace),\n"
"call once at the call's slot, classify the answer by the account's profile.\n"
"\n"
"Options:\n"
"  --gateway URL      gateway base URL, {gateway} in profiles (env SRQ_GATEWAY,\n"
"                     default http://127.0.0.1:8080)\n"
"  --concurrency N    calls in flight at once, all accounts (env SRQ_CONCURRENCY, 64)\n"
"  --redis URL, --prefix P, -h/--help, --version\n"
"\n"
"Result: the task plus \"outcome\" (ok already retry fail unknown superseded blocked),\n"
"\"http\", \"error\", \"ms\", \"at\" (when the call left, Redis clock), for queries\n"
"\"observed\" (active|stopped|pending|other: pending, the carrier says the card's\n"
"change is under way; other and pending with \"carrier_state\", the carrier's code);\n"
"a retry has \"class\" (throttled too_frequent refused not_sent auth unreplicated\n"
"clock_step), a blocked one \"gate\" (interval lost paused breaker replayed), an ok\n"
"the carrier only accepted \"in_progress\":true and \"txn\"; an unknown whose answer\n"
"was about another card (or none, where the profile's card key says it must name\n"
"it) has \"class\":\"mismatch\" and \"answer_card\" (what it named).\n"
"A forward step of Redis's clock (NTP) over SRQ_RATE_WINDOW_MS - 1000 ms is detected\n"
"against our monotonic clock and recorded for its accounts (alert clock_step): the\n"
"calls gated on it before that are not sent (class clock_step) and go again.\n"
"Environment: SRQ_PROFILES (carrier profiles: how each account's carrier is\n"
"  called; none: srq's own contract), SRQ_GATEWAY_TOKEN(_FILE) (the default\n"
"  profile's bearer token, never logged), SRQ_MIN_INTERVAL_MS, SRQ_QPS,\n"
"  SRQ_RATE_BURST, SRQ_RATE_WINDOW_MS (1020: 1 s plus headroom for the jitter of\n"
"  arrivals), SRQ_GATEWAY_TIMEOUT_MS, SRQ_GATEWAY_CONNECT_TIMEOUT_MS, SRQ_LEASE_MS\n"
"  (the gate extends a claim's lease by it: at least 1000 more than every call's\n"
"  timeout, SRQ_GATEWAY_TIMEOUT_MS or a profile's timeout_ms).\n"
"Exit: 0 done, 1 bad task lines, 2 usage, a bad profile, a lease a call may outlive,\n"
"  or calls whose request could not be built (a profile's secret not set: said per\n"
"  account), 3 Redis unavailable\n"
"  (its tasks say \"status\":\"error\") or an account's gateway unreachable when\n"
"  the run ended (its last call could not connect; such tasks are answered\n"
"  retry, class not_sent, and go again).\n"
"Example:\n"
"  sr-claim --until-empty --for 60 | sr-exec | sr-confirm\n";

enum { IT_NEW, IT_READY, IT_WAIT, IT_HOLD, IT_CALL, IT_DONE };

struct item {
	int state;
	json_t *obj;  /* the task line, echoed in the result */
	struct sr_task t;
	struct sr_call call;
	struct sr_edge *edge;
	int64_t wake;     /* IT_WAIT: when to try the gate again; IT_HOLD: when to send (mono ms) */
	long long at;     /* the slot the gate granted (Redis ms) */
	int resend;       /* sent again after a re-authentication */
	int judged;       /* re-judged: no longer wanted, finished by the gate without a call */
	long long gated;  /* when the gate granted the slot (Redis ms) */
	int64_t judged_at; /* when its facts were read (mono ms) */
	struct item *next;
};

static struct sr_config cfg;
static struct sr_redis rds;
static struct sr_gateway *gw;
static struct sr_clocks clocks; /* Redis's clock against ours: its steps */
static struct item *items; /* lane order, then claim order (queue_item) */
static int nitems, nheld, redis_up = 1, status = SR_EX_OK;
static int freed; /* calls finished since the last scheduling step */

/* Per account, the calls of this run that never reached its gateway (no
 * connection, no name, a token fetch that failed so), and whether the last
 * call to finish was one of them; and those whose request could not even be
 * built (the configuration's fault: a profile's secret not set). */
struct reach {
	char carrier[65];
	long unsent, unbuilt;
	int last_unsent;
	char error[160], unbuilt_error[160];
	struct reach *next;
};
static struct reach *reaches;
/* SRQ_TEST_SEND_DELAY_MS: tests only, see where a held call is sent. */
static long send_delay_ms;

static void
count_reach(const struct item *it)
{
	const struct sr_call *c = &it->call;
	struct reach *r;

	/* No call was made: the gate held it. Unless it waited on its
	 * account's token, whose fetch could not reach the gateway: that is
	 * the gateway unavailable, as for a call. */
	if (!it->at && !(c->class && !strcmp(c->class, "not_sent")))
		return;
	for (r = reaches; r && strcmp(r->carrier, it->t.carrier); r = r->next)
		;
	if (!r) {
		r = sr_malloc(sizeof *r);
		memset(r, 0, sizeof *r);
		snprintf(r->carrier, sizeof r->carrier, "%s", it->t.carrier);
		r->next = reaches;
		reaches = r;
	}
	if (c->local_fail) {
		r->unbuilt++;
		snprintf(r->unbuilt_error, sizeof r->unbuilt_error, "%s", c->error);
		return;
	}
	r->last_unsent = c->class && !strcmp(c->class, "not_sent");
	if (r->last_unsent) {
		r->unsent++;
		snprintf(r->error, sizeof r->error, "%s", c->error[0] ? c->error : "no connection");
	}
}

/* An account whose gateway the run ended without reaching (its last call
 * not sent: down all along, or gone during the run) is a backend down:
 * exit 3, as for Redis, so cron pages. A connection that failed between
 * calls that went is the carrier's weather, left to the retry and the
 * breaker. Either way the lines are retries (class not_sent): nothing is
 * lost. */
static int
gateway_verdict(void)
{
	int st = SR_EX_OK;

	while (reaches) {
		struct reach *r = reaches;

		if (r->last_unsent) {
			sr_warn("account %s: its gateway is unavailable (%s); %ld calls not sent, "
			    "they go again", r->carrier, r->error, r->unsent);
			st = SR_EX_BACKEND;
		}
		/* Not the gateway: nothing was tried. Exit 2, a configuration
		 * error, so that what pages says where to look. */
		if (r->unbuilt) {
			sr_warn("account %s: a configuration error: %ld calls could not be made (%s); "
			    "they go again (see sr-admin profile %s)", r->carrier, r->unbuilt,
			    r->unbuilt_error, r->carrier);
			st = sr_worst(st, SR_EX_USAGE);
		}
		reaches = r->next;
		free(r);
	}
	return st;
}

static void
emit_result(struct item *it, const char *outcome, const char *error)
{
	json_t *o = it->obj;
	struct sr_call *c = &it->call;

	count_reach(it);

	json_object_set_new(o, "outcome", json_string(outcome));
	json_object_set_new(o, "http", json_integer(c->http));
	json_object_set_new(o, "error", json_string(error ? error : ""));
	json_object_set_new(o, "ms", json_integer(c->ms));
	if (c->class)
		json_object_set_new(o, "class", json_string(c->class));
	if (c->observed[0])
		json_object_set_new(o, "observed", json_string(c->observed));
	/* A poll's word on the order ("": not read); with it, sr-confirm
	 * settles the change by its order. */
	if (!strcmp(c->action, "poll"))
		json_object_set_new(o, "order", json_string(c->order));
	/* What the carrier said, where srq's name for it does not say it all. */
	if (!strcmp(c->observed, "other") || (!strcmp(c->observed, "pending") && c->raw_state[0]) ||
	    (!strcmp(c->action, "poll") && c->raw_state[0]))
		json_object_set_new(o, "carrier_state", json_string(c->raw_state));
	if (c->in_progress)
		json_object_set_new(o, "in_progress", json_true());
	if (c->txn[0])
		json_object_set_new(o, "txn", json_string(c->txn));
	if (c->class && !strcmp(c->class, "mismatch"))
		json_object_set_new(o, "answer_card", json_string(c->answer_card));
	if (c->retry_after_ms)
		json_object_set_new(o, "retry_after_ms", json_integer(c->retry_after_ms));
	if (it->at) {
		json_object_set_new(o, "at", json_integer(it->at));
		json_object_set_new(o, "gated", json_integer(it->gated));
	}
	sr_emit(o);
	it->obj = NULL;
	it->state = IT_DONE;
}

static void
result_error(struct item *it, const char *error)
{
	json_object_set_new(it->obj, "status", json_string("error"));
	json_object_set_new(it->obj, "error", json_string(error));
	sr_emit(it->obj);
	it->obj = NULL;
	it->state = IT_DONE;
	status = sr_worst(status, SR_EX_BACKEND);
}

static void
blocked(struct item *it, const char *why, const char *error)
{
	json_object_set_new(it->obj, "gate", json_string(why));
	emit_result(it, "blocked", error);
}

/* Re-judging the new items with fresh facts: their reads are appended
 * (rejudge_append), to go out with the gate's scripts of the items judged
 * before, then read (rejudge_read): one round trip a scheduling step. */
static void
rejudge_append(struct item **batch, int n)
{
	const char *time_argv[] = { "TIME" };
	char key[SR_KEY_MAX];

	sr_redis_append(&rds, 1, time_argv, NULL);
	for (int i = 0; i < n; i++) {
		const char *argv[] = { "HGETALL", sr_key_card_facts(key, cfg.prefix, batch[i]->t.card) };

		sr_redis_append(&rds, 2, argv, NULL);
	}
}

/* The replies to rejudge_append (sent at mono ms sent), and the devices'
 * facts (one more round trip, for cards that have a device). -1 if Redis
 * failed. */
static int
rejudge_read(struct item **batch, int n, int64_t sent)
{
	struct sr_card_facts *cf = sr_malloc((size_t)n * sizeof *cf);
	char (*unread)[200] = sr_malloc((size_t)n * sizeof *unread);
	struct sr_device_facts df;
	char key[SR_KEY_MAX];
	redisReply *rep;
	long long now;
	int rc = -1;

	if (!(rep = sr_redis_reply(&rds)))
		goto out;
	now = rep->type == REDIS_REPLY_ARRAY ? atoll(rep->element[0]->str) : 0;
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2) {
		int node;
		unsigned gen;

		/* A reading of Redis's clock: its steps (sr_clock.c). */
		sr_redis_reply_from(&rds, &node, &gen);
		sr_clocks_read(&clocks, node, now * 1000 + atoll(rep->element[1]->str) / 1000, sent,
		    sr_mono_ms());
	}
	freeReplyObject(rep);
	for (int i = 0; i < n; i++) {
		if (!(rep = sr_redis_reply(&rds)))
			goto out;
		/* A facts key damaged by hand (a string where the hash is) is
		 * not a card with no facts: judged on nothing, the call could go
		 * the wrong way. The task is an error, and no call is made. */
		unread[i][0] = '\0';
		if (sr_card_facts_load(&cf[i], rep) < 0)
			snprintf(unread[i], sizeof unread[i], "facts not read: %s", rep->str);
		freeReplyObject(rep);
	}
	for (int i = 0; i < n; i++)
		if (cf[i].device[0]) {
			const char *argv[] = { "HGETALL", sr_key_device_facts(key, cfg.prefix, cf[i].device) };

			sr_redis_append(&rds, 2, argv, NULL);
		}
	for (int i = 0; i < n; i++) {
		struct sr_judgment j;
		int has_dev = cf[i].device[0] != '\0';

		memset(&df, 0, sizeof df);
		if (has_dev) {
			if (!(rep = sr_redis_reply(&rds)))
				goto out;
			if (sr_device_facts_load(&df, rep) < 0 && !unread[i][0])
				snprintf(unread[i], sizeof unread[i], "device facts not read: %s", rep->str);
			freeReplyObject(rep);
		}
		if (unread[i][0]) {
			/* Its claim stays until its lease runs out: claimed again
			 * then, it is judged again, once the key is repaired. */
			result_error(batch[i], unread[i]);
			continue;
		}
		batch[i]->state = IT_READY;
		batch[i]->judged_at = sr_mono_ms();
		batch[i]->judged = 0;
		json_object_del(batch[i]->obj, "judged");
		j = sr_judge(&cf[i], has_dev ? &df : NULL, now);
		if (cf[i].carrier[0] && strcmp(cf[i].carrier, batch[i]->t.carrier) != 0) {
			/* The mirror says the card is another account's. The
			 * ownership checks (sr-asset's, sr-enqueue's) read before
			 * they write, so two loads of a new card naming two
			 * accounts can each pass, and the card is queued in both:
			 * only the account the mirror names calls it (twice, the
			 * card would change twice within its interval, each gate
			 * counting its own account's last call). */
			json_object_set_new(batch[i]->obj, "judged", json_string("account_moved"));
			batch[i]->judged = 1;
		} else if (!sr_action_still_wanted(batch[i]->t.action, &cf[i], &j)) {
			/* No call: the gate finishes the command (kind "judged"). */
			json_object_set_new(batch[i]->obj, "judged", json_string(j.reason));
			batch[i]->judged = 1;
		}
	}
	rc = 0;
out:
	free(cf);
	free(unread);
	return rc;
}

/* What the gate said of one item. */
static void
gated(struct item *it, redisReply *rep)
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

/* Asking the gate for a slot for each item, one script call per account's
 * items (up to GATE_BATCH): its state is read and written once for them
 * all. Items that pass are held until their slot. The calls are appended
 * (gate_append), to go out with the re-judgment's reads of the new items,
 * then their replies read (gate_read), then with SRQ_WAIT_REPLICAS the
 * passes confirmed (gate_end), once every reply of the round is in. */
#define GATE_BATCH 256
struct gating {
	struct item **order; /* the items, grouped by script call */
	int *group, *node, ngroups, read;
	unsigned *gen;
	int *asked;          /* an HGET of the account's saved clock before its call */
	int64_t sent;        /* mono ms before the round was sent */
};

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

static void
gate_append(struct gating *g, struct item **batch, int n)
{
	/* gate.lua's KEYS[1..9]. */
	static const char *const account_keys[] = { "edge", "limits", "stop_resume:high",
		"stop_resume", "stop_resume:bulk", "sr_running", "audit", "confirming", "alerts_open",
		NULL };
	/* The keys and arguments of one script call; each call is formatted
	 * when appended, so the next reuses them. */
	static char keys[10 + 2 * GATE_BATCH][SR_KEY_MAX], vers[GATE_BATCH][24];
	static const char *argv[12 + 8 * GATE_BATCH];
	char *taken = sr_malloc((size_t)n + 1), ahead[24];
	int norder = 0;

	g->order = sr_malloc((size_t)(n + 1) * sizeof *g->order);
	g->group = sr_malloc((size_t)(n + 1) * sizeof *g->group);
	g->node = sr_malloc((size_t)(n + 1) * sizeof *g->node);
	g->gen = sr_malloc((size_t)(n + 1) * sizeof *g->gen);
	g->asked = sr_malloc((size_t)(n + 1) * sizeof *g->asked);
	g->ngroups = g->read = 0;
	memset(taken, 0, (size_t)n);
	for (int i = 0; i < n; i++) {
		struct sr_task *t = &batch[i]->t;
		int nk, na = 3, m = 0;

		if (taken[i])
			continue;
		nk = sr_keys_account(keys, argv, cfg.prefix, t->carrier, account_keys);
		/* The card keys follow the account's; the arguments after them. */
		for (int k = i; k < n && m < GATE_BATCH; k++) {
			struct sr_task *tk = &batch[k]->t;

			if (taken[k] || batch[k]->edge != batch[i]->edge)
				continue;
			taken[k] = 1;
			g->order[norder++] = batch[k];
			/* its card's command hash and idle bucket */
			argv[nk++] = sr_key_card(keys[9 + 2 * m], cfg.prefix, tk->carrier, tk->card);
			sr_key_idle(keys[10 + 2 * m], cfg.prefix, tk->carrier, tk->card);
			argv[nk++] = keys[10 + 2 * m];
			m++;
		}
		argv[nk + 0] = batch[i]->edge->acct->settings;
		argv[nk + 1] = sr_key_account(keys[9 + 2 * m], cfg.prefix, t->carrier, "stats:");
		/* (the account's first item is its highest lane's) */
		argv[nk + 2] = slot_ahead(batch[i]->edge->acct, t->lane, ahead, sizeof ahead);
		for (int k = norder - m; k < norder; k++) {
			struct item *it = g->order[k];
			const char **a = argv + nk + na;

			snprintf(vers[k - (norder - m)], sizeof vers[0], "%lld", it->t.ver);
			a[0] = it->t.token;
			a[1] = vers[k - (norder - m)];
			a[2] = it->judged ? "judged" : it->t.kind;
			a[3] = it->t.card;
			a[4] = it->resend ? "1" : "0";
			a[5] = it->t.action;
			na += 6;
		}
		/* Its first gate here: what an earlier run knew of its clock. */
		g->asked[g->ngroups] = sr_clocks_ask(&clocks, &rds, &cfg, batch[i]->edge);
		sr_redis_append_script(&rds, SR_LUA_GATE, nk, nk + na, argv, NULL);
		g->group[g->ngroups++] = m;
	}
	free(taken);
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
static int
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
			gated(g->order[k], rep->type == REDIS_REPLY_ARRAY && (size_t)j < rep->elements ?
			    rep->element[j] : rep);
		if (stepped)
			not_sent_stepped(g->order + k - g->group[g->read], g->group[g->read]);
		freeReplyObject(rep);
	}
	return 0;
}

/* The round is over: passes not on the replicas are not sent (lost: Redis
 * failed during the round). */
static void
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

/* it joins the items in lane order (a task claimed later in a higher lane
 * goes ahead of the lower ones not yet sent), claim order within a lane. */
static void
queue_item(struct item *it)
{
	struct item **pp = &items;

	/* (at most 4 x concurrency items: a walk costs nothing next to a call) */
	while (*pp && (*pp)->t.lane <= it->t.lane)
		pp = &(*pp)->next;
	it->next = *pp;
	*pp = it;
	nitems++;
}

static void
read_tasks(struct sr_reader *rd, int block)
{
	char *line, err[160];
	int rc;

	/* Hold a bounded number of tasks: back-pressure on sr-claim. */
	while (nitems < cfg.concurrency * 4) {
		struct item *it;
		json_t *obj;

		rc = sr_reader_next(rd, &line, block);
		block = 0;
		if (rc == SR_READ_AGAIN || rc == SR_READ_EOF)
			return;
		/* Every line is answered: one that is not a task gets a rejected
		 * record with its number, so in == out can be reconciled. */
		if (rc == SR_READ_BAD)
			snprintf(err, sizeof err, "%s", rd->why);
		obj = rc == SR_READ_BAD ? NULL : sr_json_line(line, err, sizeof err);
		it = sr_malloc(sizeof *it);
		memset(it, 0, sizeof *it);
		if (!obj || sr_task_parse(obj, &it->t, err, sizeof err) < 0) {
			json_t *o = json_object();

			json_object_set_new(o, "line", json_integer(rd->lineno));
			status = sr_worst(status, sr_rejected(o, rd->lineno, err));
			sr_emit(o);
			json_decref(obj);
			free(it);
			continue;
		}
		it->obj = obj;
		strcpy(it->call.card, it->t.card);
		strcpy(it->call.carrier, it->t.carrier);
		strcpy(it->call.action, strcmp(it->t.kind, "query") == 0 ? "status" : it->t.action);
		it->call.ver = it->t.ver;
		it->edge = sr_gateway_edge(gw, it->t.carrier);
		/* A query of a change the carrier gave an order id for asks
		 * about the order, where the profile says how (poll.*). */
		if (!strcmp(it->t.kind, "query") && it->t.txn[0] &&
		    sr_account(&cfg, it->t.carrier)->p->req[SR_REQ_POLL].url) {
			strcpy(it->call.action, "poll");
			snprintf(it->call.txn, sizeof it->call.txn, "%s", it->t.txn);
		}
		it->state = IT_NEW;
		queue_item(it);
	}
}

/* The items to ask the gate for, in claim order, up to cap: the judged ones,
 * and the waiting ones now due, within each account's in-flight limit, once
 * its authentication is ready. */
static int
gate_candidates(struct item **batch, int64_t now, int cap)
{
	/* Accounts with an item waiting for the pace's next slot: the items
	 * behind it in lane order do not ask for that slot meanwhile. Asking
	 * the moment they are judged, they would win it from the item that
	 * waits on a timer (a bulk call from a due status query). */
	struct sr_edge **waiting = sr_malloc((size_t)(nitems + 1) * sizeof *waiting);
	int n = 0, nwaiting = 0;

	for (struct item *it = items; it && n < cap; it = it->next) {
		struct sr_edge *e = it->edge;
		int ready, behind = 0;

		if (it->state != IT_READY && it->state != IT_WAIT)
			continue;
		if (it->judged) { /* no call: nothing of the account's to wait for */
			batch[n++] = it;
			continue;
		}
		for (int i = 0; i < nwaiting && !behind; i++)
			behind = waiting[i] == e;
		if (behind)
			continue;
		if (it->state == IT_WAIT && it->wake > now) {
			waiting[nwaiting++] = e;
			continue;
		}
		if (e->acct->running > 0 && e->held + e->running >= e->acct->running)
			continue; /* the account's calls in flight are at its limit */
		if ((ready = sr_edge_ready(gw, e)) == 0)
			continue; /* its token is being fetched */
		if (ready < 0) {
			it->call.class = e->auth_class ? e->auth_class : "auth";
			emit_result(it, "retry", e->auth_error);
			continue;
		}
		batch[n++] = it;
	}
	free(waiting);
	return n;
}

/* The judged candidates batch[0..m-1] less those a new task of the same
 * account in a higher lane is to go before: gated now, they would take the
 * account's next slot while it is judged; gated in the next round, after
 * it. Returns how many are left, in order. */
static int
behind_fresh(struct item **batch, int m, struct item **fresh, int nfresh)
{
	int k = 0;

	for (int i = 0; i < m; i++) {
		int behind = 0;

		for (int j = 0; j < nfresh && !behind; j++)
			behind = fresh[j]->edge == batch[i]->edge && fresh[j]->t.lane < batch[i]->t.lane;
		if (!behind)
			batch[k++] = batch[i];
	}
	return k;
}

/* One scheduling step: ask the gate for tasks judged before, and judge the
 * tasks the next step will want, in one round trip; then, if slots are
 * still free, ask the gate for the newly judged at once (a second round
 * trip, as when the pipeline starts). The next step is expected to free
 * about as many slots as calls finished since the last (twice that, for
 * the jitter), so that many tasks are judged ahead: a freed slot costs one
 * round trip, and a task is judged a step or two before its gate, not long
 * before. A judgment older than
 * JUDGED_MAX_MS (a task that waited on its account's rate or limit) is
 * made again. Then send what is held and due. Returns ms until the next
 * held or waiting item is due. */
static int64_t
schedule(void)
{
	struct item **batch = sr_malloc((size_t)(nitems + 1) * sizeof *batch);
	struct item **fresh = sr_malloc((size_t)(nitems + 1) * sizeof *fresh);
	struct item **stale = sr_malloc((size_t)(nitems + 1) * sizeof *stale);
	int64_t now = sr_mono_ms(), next = 50;
	int slots = (int)cfg.concurrency - sr_gateway_running(gw) - nheld;
	int ahead = 2 * freed < (int)cfg.concurrency ? 2 * freed : (int)cfg.concurrency;

	/* A status query decides an earlier call and is never skipped: it has
	 * nothing to judge, and no facts to read. */
	for (struct item *it = items; it; it = it->next)
		if (it->state == IT_NEW && strcmp(it->t.kind, "call") != 0)
			it->state = IT_READY;
	for (int round = 0; round < 2 && redis_up && slots > 0; round++) {
		struct gating g = { 0 };
		int n = gate_candidates(batch, now, round == 0 ? slots + ahead : slots), rc = 0;
		int nfresh = 0, nstale = 0, m = 0;
		int64_t sent;

		if (round == 0) {
			/* Judged long ago: judged again (gated in the next round). */
			for (int i = 0; i < n; i++)
				if (!batch[i]->resend && !strcmp(batch[i]->t.kind, "call") &&
				    now - batch[i]->judged_at > JUDGED_MAX_MS)
					stale[nstale++] = batch[i];
				else
					batch[m++] = batch[i];
			/* The new tasks the judged ones fall short of, in claim order. */
			for (struct item *it = items; it && m + nstale + nfresh < slots + ahead; it = it->next)
				if (it->state == IT_NEW)
					fresh[nfresh++] = it;
			for (int i = 0; i < nstale; i++) {
				stale[i]->state = IT_NEW;
				fresh[nfresh++] = stale[i];
			}
			m = behind_fresh(batch, m, fresh, nfresh);
			n = m < slots ? m : slots; /* the rest: the next step's */
		}
		if (n == 0 && nfresh == 0)
			break;
		sent = sr_mono_ms();
		if (n > 0)
			gate_append(&g, batch, n);
		g.sent = sent;
		if (nfresh > 0)
			rejudge_append(fresh, nfresh);
		if (n > 0)
			rc = gate_read(&g);
		if (rc == 0 && nfresh > 0)
			rc = rejudge_read(fresh, nfresh, sent);
		if (n > 0)
			gate_end(&g, rc < 0);
		/* A step of Redis's clock seen this round: recorded before the
		 * next gate runs on it. */
		if (rc == 0 && sr_clocks_record(&clocks, &rds, &cfg, gw, sr_prog) < 0)
			rc = -1;
		if (rc < 0)
			sr_redis_lost(&rds, &redis_up, "task");
		if (nfresh == 0)
			break;
		slots = (int)cfg.concurrency - sr_gateway_running(gw) - nheld;
	}
	if (!redis_up) {
		for (struct item *it = items; it; it = it->next)
			if (it->state == IT_NEW || it->state == IT_READY || it->state == IT_WAIT)
				result_error(it, rds.errstr);
		sr_redis_discard(&rds);
	}
	/* Send what is due; the rest says when it will be. */
	now = sr_mono_ms();
	for (struct item *it = items; it; it = it->next)
		if (it->state == IT_WAIT && it->wake > now && it->wake - now < next)
			next = it->wake - now; /* (a due one waits for a freed slot) */
		else if (it->state == IT_HOLD) {
			if (it->wake <= now) {
				it->state = IT_CALL;
				it->edge->held--;
				nheld--;
				/* Tests only: a machine too loaded to send on time, made
				 * deterministic (every call leaves this late). */
				if (send_delay_ms > 0)
					sr_sleep_ms(send_delay_ms);
				if (redis_up && sr_edge_late(&rds, &cfg, it->edge, it->wake) < 0) /* sent all the same: its slot was granted */
					sr_redis_lost(&rds, &redis_up, "task");
				sr_gateway_start(gw, &it->call);
			} else if (it->wake - now < next)
				next = it->wake - now;
		}
	freed = 0;
	free(batch);
	free(fresh);
	free(stale);
	sr_flush();
	return next < 1 ? 1 : next;
}

static void
reap(void)
{
	struct sr_call *call;
	struct item **pp;

	while ((call = sr_gateway_done(gw))) {
		struct item *it = (struct item *)((char *)call - offsetof(struct item, call));

		freed++;
		if (call->class && !strcmp(call->class, "auth") && call->verdict == SR_V_REAUTH &&
		    !it->resend) {
			/* Refused for authentication: re-authenticate (once for every
			 * call in flight) and send it again, through the gate. */
			sr_edge_reauth(call->edge, call->auth_gen);
			it->resend = 1;
			it->state = IT_READY;
			continue;
		}
		emit_result(it, sr_outcome_name(call->outcome), call->error);
	}
	for (pp = &items; *pp;) {
		if ((*pp)->state == IT_DONE) {
			struct item *dead = *pp;

			*pp = dead->next;
			free(dead);
			nitems--;
		} else
			pp = &(*pp)->next;
	}
	sr_flush();
}

int
main(int argc, char *argv[])
{
	enum { O_CONCURRENCY = 1 };
	static const struct option longopts[] = {
		SR_COMMON_LONGOPTS,
		{ "gateway", required_argument, NULL, SR_OPT_GATEWAY },
		{ "concurrency", required_argument, NULL, O_CONCURRENCY },
		{ NULL, 0, NULL, 0 },
	};
	struct sr_reader rd;
	int c;

	sr_prog = "sr-exec";
	sr_log_stamp = 1; /* it runs unattended: its stderr is a log */
	sr_config_init(&cfg);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == O_CONCURRENCY)
			cfg.concurrency = sr_num("--concurrency", optarg, 1, 100000);
		else if (!sr_config_option(&cfg, c, optarg, usage))
			sr_usage(SR_EX_USAGE, usage);
	}
	sr_no_operands(argc, argv, usage);
	sr_gateway_url_check(&cfg);
	sr_lease_require(&cfg);
	{
		const char *d = getenv("SRQ_TEST_SEND_DELAY_MS");

		if (d && *d)
			send_delay_ms = sr_num("SRQ_TEST_SEND_DELAY_MS", d, 0, 1000);
	}
	redis_up = sr_redis_open_filter(&rds, &cfg, "task is answered with status \"error\"");
	gw = sr_gateway_new(&cfg);
	sr_clocks_init(&clocks, &cfg, SLOT_AHEAD_MS);
	sr_reader_init(&rd, STDIN_FILENO);
	for (;;) {
		int64_t wait;

		read_tasks(&rd, nitems == 0);
		if (rd.eof && nitems == 0)
			break;
		wait = schedule();
		reap();
		if (rd.eof && nitems == 0)
			break;
		/* Wait for a call to finish, input, or the next rate token. */
		sr_gateway_poll(gw, (int)wait, rd.eof || nitems >= cfg.concurrency * 4 ? -1 : rd.fd);
		reap();
	}
	status = sr_worst(status, sr_reader_failed(&rd));
	status = sr_worst(status, gateway_verdict());
	if (redis_up)
		sr_clocks_save(&clocks, &rds, &cfg, gw);
	sr_reader_free(&rd);
	sr_gateway_free(gw);
	sr_clocks_free(&clocks);
	sr_redis_close(&rds);
	return sr_finish(status);
}
