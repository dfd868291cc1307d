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
 *
 * This file reads the tasks and runs the loop; the steps are judge.c (1),
 * gate.c (2), schedule.c (3: sending, reaping) and result.c (4).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"

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

struct sr_config cfg;
struct sr_redis rds;
struct sr_gateway *gw;
struct sr_clocks clocks;
struct item *items;
int nitems, nheld, redis_up = 1, status = SR_EX_OK;
int freed;
long send_delay_ms;

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
