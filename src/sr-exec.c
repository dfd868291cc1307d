/* sr-exec - the executor: the only tool that calls stop/resume at the gateway.
 *
 * For each task line:
 *   1. re-judge with fresh facts (sr_judge); a call no longer wanted ends as
 *      "superseded" without touching the gateway;
 *   2. pass the atomic gate (gate.lua): claim and version current, the card's
 *      interval respected, the account's rate available. The gate records the
 *      call before it is made, so a crash from here on is an unknown result
 *      that the next claim turns into a status query, never a blind re-call;
 *      an account out of rate makes the task wait here, in memory, for its
 *      next token (that is how the rate is used fully under a backlog);
 *   3. call the gateway once (or query the status) and classify the answer;
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

static const char usage[] =
"usage: sr-exec [--gateway URL] [--concurrency N] < tasks.jsonl > results.jsonl\n"
"\n"
"Execute claimed tasks at the carrier gateway: re-judge, pass the atomic gate\n"
"(lease, version, per-card interval, account rate), call once, classify.\n"
"\n"
"Options:\n"
"  --gateway URL      gateway base URL (env SRQ_GATEWAY, default http://127.0.0.1:8080)\n"
"  --concurrency N    calls in flight at once, all accounts (env SRQ_CONCURRENCY, 64)\n"
"  --redis URL, --prefix P, -h/--help, --version\n"
"\n"
"Result: the task plus \"outcome\" (ok already retry fail unknown superseded blocked),\n"
"\"http\", \"error\", \"ms\", and for queries \"observed\" (active|stopped).\n"
"Environment: SRQ_GATEWAY_TOKEN(_FILE) (bearer token, never logged),\n"
"  SRQ_MIN_INTERVAL_MS, SRQ_QPS, SRQ_RATE_WINDOW_MS (1020: 1 s plus headroom for\n"
"  gate-to-wire jitter), SRQ_GATEWAY_TIMEOUT_MS, SRQ_GATEWAY_CONNECT_TIMEOUT_MS.\n"
"Exit: 0 done, 1 bad task lines, 2 usage, 3 Redis unavailable.\n"
"Example:\n"
"  sr-claim --until-empty --for 60 | sr-exec | sr-confirm\n";

enum { IT_NEW, IT_WAIT, IT_CALL, IT_DONE };

struct item {
	int state;
	json_t *obj;  /* the task line, echoed in the result */
	struct sr_task t;
	struct sr_call call;
	int64_t wake; /* IT_WAIT: monotonic ms when the gate may be tried again */
	struct item *next;
};

static struct sr_config cfg;
static struct sr_redis rds;
static struct sr_gateway *gw;
static struct item *items, **items_tail = &items; /* FIFO: claim order is priority order */
static int nitems, redis_up = 1, status = SR_EX_OK;

static void
result(struct item *it, const char *outcome, const char *error)
{
	json_t *o = it->obj;

	json_object_set_new(o, "outcome", json_string(outcome));
	json_object_set_new(o, "http", json_integer(it->call.http));
	json_object_set_new(o, "error", json_string(error ? error : ""));
	json_object_set_new(o, "ms", json_integer(it->call.ms));
	if (it->call.observed[0])
		json_object_set_new(o, "observed", json_string(it->call.observed));
	if (it->call.retry_after_ms)
		json_object_set_new(o, "retry_after_ms", json_integer(it->call.retry_after_ms));
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
	result(it, "blocked", error);
}

/* Re-judge the new items with fresh facts: returns -1 if Redis failed. */
static int
rejudge(struct item **batch, int n)
{
	const char *time_argv[] = { "TIME" };
	struct sr_card_facts *cf = sr_malloc((size_t)n * sizeof *cf);
	struct sr_device_facts df;
	char key[SR_KEY_MAX];
	redisReply *rep;
	long long now;
	int rc = -1;

	sr_redis_append(&rds, 1, time_argv, NULL);
	for (int i = 0; i < n; i++) {
		const char *argv[] = { "HGETALL", sr_key_card_facts(key, cfg.prefix, batch[i]->t.card) };

		sr_redis_append(&rds, 2, argv, NULL);
	}
	if (!(rep = sr_redis_reply(&rds)))
		goto out;
	now = rep->type == REDIS_REPLY_ARRAY ? atoll(rep->element[0]->str) : 0;
	freeReplyObject(rep);
	for (int i = 0; i < n; i++) {
		if (!(rep = sr_redis_reply(&rds)))
			goto out;
		sr_card_facts_load(&cf[i], rep);
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
			sr_device_facts_load(&df, rep);
			freeReplyObject(rep);
		}
		/* Queries are read-only and decide an earlier call: never skipped. */
		if (strcmp(batch[i]->t.kind, "call") != 0)
			continue;
		j = sr_judge(&cf[i], has_dev ? &df : NULL, now);
		if (!sr_action_still_wanted(batch[i]->t.action, &cf[i], &j)) {
			char why[96];

			snprintf(why, sizeof why, "re-judged: %s", j.reason);
			json_object_set_new(batch[i]->obj, "judged", json_string(j.reason));
			result(batch[i], "superseded", why);
		}
	}
	rc = 0;
out:
	free(cf);
	return rc;
}

/* Try the gate for items, start calls for those that pass. -1: Redis failed. */
static int
gate(struct item **batch, int n)
{
	static const char *qs[] = { "stop_resume:high", "stop_resume", "stop_resume:bulk" };
	char keys[8][SR_KEY_MAX], ver[24], interval[24], qps[24], window[24], lease[24];

	snprintf(interval, sizeof interval, "%ld", cfg.min_interval_ms);
	snprintf(qps, sizeof qps, "%ld", cfg.qps);
	snprintf(window, sizeof window, "%ld", cfg.rate_window_ms);
	snprintf(lease, sizeof lease, "%ld", cfg.lease_ms);
	for (int i = 0; i < n; i++) {
		struct sr_task *t = &batch[i]->t;
		const char *argv[16];

		snprintf(ver, sizeof ver, "%lld", t->ver);
		argv[0] = sr_key_card(keys[0], cfg.prefix, t->carrier, t->card);
		argv[1] = sr_key_account(keys[1], cfg.prefix, t->carrier, "sr_rate");
		argv[2] = sr_key_account(keys[2], cfg.prefix, t->carrier, "limits");
		for (int q = 0; q < 3; q++)
			argv[3 + q] = sr_key_account(keys[3 + q], cfg.prefix, t->carrier, qs[q]);
		argv[6] = sr_key_account(keys[6], cfg.prefix, t->carrier, "sr_running");
		argv[7] = t->token;
		argv[8] = ver;
		argv[9] = t->kind;
		argv[10] = interval;
		argv[11] = qps;
		argv[12] = window;
		argv[13] = lease;
		argv[14] = t->card;
		argv[15] = sr_key_account(keys[7], cfg.prefix, t->carrier, "stats:");
		sr_redis_append_script(&rds, SR_LUA_GATE, 7, 16, argv, NULL);
	}
	for (int i = 0; i < n; i++) {
		struct item *it = batch[i];
		redisReply *rep = sr_redis_reply(&rds);
		const char *verdict;
		char msg[96];

		if (!rep)
			return -1;
		if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1) {
			snprintf(msg, sizeof msg, "gate script failed: %s",
			    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
			sr_warn("card '%s': %s", it->t.card, msg);
			blocked(it, "error", msg);
			freeReplyObject(rep);
			continue;
		}
		verdict = rep->element[0]->str;
		if (!strcmp(verdict, "pass")) {
			it->state = IT_CALL;
			sr_gateway_start(gw, &it->call);
		} else if (!strcmp(verdict, "rate")) {
			it->state = IT_WAIT;
			it->wake = sr_mono_ms() + rep->element[1]->integer;
		} else if (!strcmp(verdict, "stale")) {
			snprintf(msg, sizeof msg, "version %lld replaced by %lld", it->t.ver,
			    rep->element[1]->integer);
			result(it, "superseded", msg);
		} else if (!strcmp(verdict, "interval")) {
			snprintf(msg, sizeof msg, "card called too recently; next call at %lld ms",
			    rep->element[1]->integer);
			blocked(it, "interval", msg);
		} else {
			blocked(it, "lost", "lease lost: the claim is no longer ours");
		}
		freeReplyObject(rep);
	}
	return 0;
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
		if (rc == SR_READ_TOOLONG) {
			fprintf(stderr, "%s: line %ld: line too long, skipped\n", sr_prog, rd->lineno);
			status = sr_worst(status, SR_EX_REJECTED);
			continue;
		}
		obj = json_loads(line, 0, NULL);
		it = sr_malloc(sizeof *it);
		memset(it, 0, sizeof *it);
		if (sr_task_parse(obj, &it->t, err, sizeof err) < 0) {
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
		it->state = IT_NEW;
		it->next = NULL;
		*items_tail = it;
		items_tail = &it->next;
		nitems++;
	}
}

/* One scheduling step: re-judge and gate what is ready, within the free
 * concurrency. Returns ms until the next waiting item may be retried. */
static int64_t
schedule(void)
{
	struct item **batch = sr_malloc((size_t)(nitems + 1) * sizeof *batch);
	int64_t now = sr_mono_ms(), next = 50;
	int n = 0, free_slots = (int)cfg.concurrency - sr_gateway_running(gw);

	for (struct item *it = items; it && n < free_slots; it = it->next)
		if (it->state == IT_NEW)
			batch[n++] = it;
	if (n > 0 && redis_up && rejudge(batch, n) < 0)
		redis_up = 0;
	/* The items still NEW after re-judgment, and the waiting ones now due. */
	n = 0;
	for (struct item *it = items; it && n < free_slots; it = it->next) {
		if (it->state == IT_NEW || (it->state == IT_WAIT && it->wake <= now))
			batch[n++] = it;
		else if (it->state == IT_WAIT && it->wake - now < next)
			next = it->wake - now;
	}
	if (n > 0 && redis_up && gate(batch, n) < 0)
		redis_up = 0;
	if (!redis_up) {
		for (struct item *it = items; it; it = it->next)
			if (it->state == IT_NEW || it->state == IT_WAIT)
				result_error(it, rds.errstr);
		sr_redis_discard(&rds);
	}
	free(batch);
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

		result(it, sr_outcome_name(call->outcome), call->error);
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
	items_tail = pp;
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
	sr_config_init(&cfg);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == O_CONCURRENCY) {
			if ((cfg.concurrency = sr_parse_long(optarg)) < 1)
				sr_die(SR_EX_USAGE, "--concurrency: '%s' is not a positive count", optarg);
		} else if (!sr_config_option(&cfg, c, optarg, usage))
			sr_usage(SR_EX_USAGE, usage);
	}
	sr_no_operands(argc, argv, usage);
	if (strncmp(cfg.gateway, "http://", 7) != 0 && strncmp(cfg.gateway, "https://", 8) != 0)
		sr_die(SR_EX_USAGE, "--gateway: '%s' is not an http(s) URL", cfg.gateway);
	redis_up = sr_redis_open_filter(&rds, &cfg, "task is answered with status \"error\"");
	gw = sr_gateway_new(&cfg);
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
	sr_reader_free(&rd);
	sr_gateway_free(gw);
	sr_redis_close(&rds);
	return sr_finish(status);
}
