/* sr-confirm - the finisher: apply each sr-exec result atomically (confirm.lua).
 *
 * Version compare, then remove or keep the command; count failures, back off,
 * turn unknown results into status queries, alert and freeze; append the
 * audit entry in the same script. The card's last known status in the asset
 * mirror is updated from what the gateway said (ok/already, or a query's
 * observation), which is what the next judgment reads.
 *
 * One final line per input line, in input order. Results are batched: a
 * batch is whatever input is ready, sent as one pipeline.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sr.h"

#define BATCH 256

static const char usage[] =
"usage: sr-confirm [--redis URL] [--prefix P] < results.jsonl > finals.jsonl\n"
"\n"
"Apply sr-exec results to the queue: finish, requeue with backoff, confirm an\n"
"unknown result by a status query, alert, freeze. One final line per result.\n"
"\n"
"Final: {\"card\":\"...\",\"carrier\":\"c17\",\"ver\":7,\"outcome\":\"ok\",\"state\":\"done\"}\n"
"state: done requeued confirming alerted frozen stale (a newer version exists)\n"
"\n"
"Environment: SRQ_ALERT_AFTER (3), SRQ_FREEZE_AFTER (10) consecutive failures,\n"
"  SRQ_MIN_INTERVAL_MS, SRQ_CONFIRM_DELAY_MS (2000: wait before querying an\n"
"  unknown result), SRQ_AUDIT_MAXLEN.\n"
"Exit: 0 done, 1 bad lines, 2 usage, 3 Redis unavailable (unapplied lines are\n"
"  answered with \"state\":\"error\"; their leases expire and they are redone).\n"
"Example:\n"
"  sr-claim --until-empty --for 60 | sr-exec | sr-confirm | jq -r .state | sort | uniq -c\n";

static const char *const outcomes[] = { "ok", "already", "retry", "fail", "unknown", "superseded",
	"blocked", NULL };

struct res {
	long line;
	json_t *obj;
	struct sr_task t;
	const char *outcome, *class;
	char error[200];
	int bad;     /* rejected line */
	int upstream_error; /* sr-exec could not process it */
	int genuine;  /* the script applied it: its facts may be learned */
	char state[16];
	long long ver_now;
};

static const char *const classes[] = { "throttled", "too_frequent", "refused", "not_sent", "auth",
	NULL };

static struct sr_config cfg;
static struct sr_redis rds;
static int redis_up = 1;

static void
parse(struct res *r, const char *line)
{
	char err[160];
	const char *o;

	if (!(r->obj = sr_json_line(line, err, sizeof err)) || sr_task_parse(r->obj, &r->t, err, sizeof err) < 0 ||
	    sr_result_check(r->obj, err, sizeof err) < 0) {
		r->bad = 1;
		snprintf(r->error, sizeof r->error, "%s", err);
		return;
	}
	if ((o = sr_jstr(r->obj, "status")) && !strcmp(o, "error")) {
		r->upstream_error = 1;
		snprintf(r->error, sizeof r->error, "%s", sr_jstr(r->obj, "error") ? sr_jstr(r->obj, "error") : "");
		return;
	}
	o = sr_jstr(r->obj, "outcome");
	for (int i = 0; o && outcomes[i]; i++)
		if (!strcmp(o, outcomes[i]))
			r->outcome = outcomes[i];
	if (!r->outcome) {
		r->bad = 1;
		snprintf(r->error, sizeof r->error, "missing or unknown \"outcome\"");
		return;
	}
	if ((o = sr_jstr(r->obj, "class"))) {
		for (int i = 0; classes[i]; i++)
			if (!strcmp(o, classes[i]))
				r->class = classes[i];
		if (!r->class) {
			r->bad = 1;
			snprintf(r->error, sizeof r->error, "unknown \"class\"");
		}
	}
}

/* Facts the result proves: the card's state at the carrier right now. */
static int
append_status_update(struct res *r)
{
	const char *state = NULL, *by = NULL;
	char key[SR_KEY_MAX];
	int is_query = !strcmp(r->t.kind, "query");

	if (is_query && !strcmp(r->outcome, "ok"))
		state = sr_jstr(r->obj, "observed");
	else if (json_is_true(json_object_get(r->obj, "in_progress")))
		return 0; /* accepted: it has not landed yet */
	else if (!is_query && (!strcmp(r->outcome, "ok") || !strcmp(r->outcome, "already"))) {
		state = !strcmp(r->t.action, "stop") ? "stopped" : "active";
		/* Only a stop that srq made is srq's: "already" stopped may be a
		 * stop by hand, whose stopped_by must survive. */
		by = !strcmp(r->t.action, "stop") && !strcmp(r->outcome, "ok") ? "auto" : NULL;
	}
	if (!state || (strcmp(state, "active") && strcmp(state, "stopped")))
		return 0;
	sr_key_card_facts(key, cfg.prefix, r->t.card);
	if (by) {
		const char *argv[] = { "HSET", key, "status", state, "stopped_by", by };

		sr_redis_append(&rds, 6, argv, NULL);
		return 1;
	} else if (!strcmp(state, "active")) {
		const char *argv[] = { "HSET", key, "status", state };
		const char *del[] = { "HDEL", key, "stopped_by" };

		sr_redis_append(&rds, 4, argv, NULL);
		sr_redis_append(&rds, 3, del, NULL);
		return 2;
	} else {
		const char *argv[] = { "HSET", key, "status", state };

		sr_redis_append(&rds, 4, argv, NULL);
		return 1;
	}
}

static void
append_confirm(struct res *r)
{
	static const char *qs[] = { "stop_resume:high", "stop_resume", "stop_resume:bulk" };
	char keys[14][SR_KEY_MAX], ver[24], http[24], ra[24], jitter[24], at[24];
	const char *argv[30];
	const char *observed = sr_jstr(r->obj, "observed"), *gate = sr_jstr(r->obj, "gate");
	const char *error = sr_jstr(r->obj, "error");
	long long sent = sr_jint(r->obj, "gated", 0);

	snprintf(ver, sizeof ver, "%lld", r->t.ver);
	snprintf(http, sizeof http, "%lld", sr_jint(r->obj, "http", 0));
	snprintf(ra, sizeof ra, "%lld", sr_jint(r->obj, "retry_after_ms", 0));
	snprintf(jitter, sizeof jitter, "%d", rand() % 1000);
	snprintf(at, sizeof at, "%lld", sent > 0 ? sent : 0);
	argv[0] = sr_key_card(keys[0], cfg.prefix, r->t.carrier, r->t.card);
	for (int q = 0; q < 3; q++)
		argv[1 + q] = sr_key_account(keys[1 + q], cfg.prefix, r->t.carrier, qs[q]);
	argv[4] = sr_key_account(keys[4], cfg.prefix, r->t.carrier, "frozen");
	argv[5] = sr_key_account(keys[5], cfg.prefix, r->t.carrier, "sr_running");
	argv[6] = sr_key_account(keys[6], cfg.prefix, r->t.carrier, "audit");
	argv[7] = sr_key_account(keys[7], cfg.prefix, r->t.carrier, "alerts");
	argv[8] = sr_key_account(keys[8], cfg.prefix, r->t.carrier, "confirming");
	argv[9] = sr_key_account(keys[9], cfg.prefix, r->t.carrier, "flapping");
	argv[10] = sr_key_account(keys[10], cfg.prefix, r->t.carrier, "alerts_open");
	argv[11] = sr_key_account(keys[11], cfg.prefix, r->t.carrier, "edge");
	argv[12] = sr_key_account(keys[12], cfg.prefix, r->t.carrier, "limits");
	argv[13] = sr_account(&cfg, r->t.carrier)->settings;
	argv[14] = r->t.card;
	argv[15] = r->t.token;
	argv[16] = ver;
	argv[17] = r->t.kind;
	argv[18] = r->outcome;
	argv[19] = http;
	argv[20] = error ? error : "";
	argv[21] = observed ? observed : "";
	argv[22] = ra;
	argv[23] = jitter;
	argv[24] = gate ? gate : "";
	argv[25] = sr_key_account(keys[13], cfg.prefix, r->t.carrier, "stats:");
	argv[26] = r->class ? r->class : "";
	argv[27] = sent > 0 ? at : "";
	argv[28] = json_is_true(json_object_get(r->obj, "in_progress")) ? "1" : "";
	argv[29] = r->t.carrier;
	sr_redis_append_script(&rds, SR_LUA_CONFIRM, 13, 30, argv, NULL);
}

static void
process(struct res *rs, int n)
{
	int nupdates = 0;

	if (!redis_up)
		return;
	for (int i = 0; i < n; i++)
		if (!rs[i].bad && !rs[i].upstream_error)
			append_confirm(&rs[i]);
	for (int i = 0; i < n; i++) {
		struct res *r = &rs[i];
		redisReply *rep;

		if (r->bad || r->upstream_error)
			continue;
		if (!(rep = sr_redis_reply(&rds))) {
			sr_redis_lost(&rds, &redis_up, "result");
			sr_redis_discard(&rds);
			return;
		}
		if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 3) {
			snprintf(r->state, sizeof r->state, "%s", rep->element[0]->str);
			r->ver_now = rep->element[1]->integer;
			r->genuine = rep->element[2]->integer == 1;
		} else {
			snprintf(r->error, sizeof r->error, "confirm script failed: %s",
			    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
			sr_warn("card '%s': %s", r->t.card, r->error);
		}
		freeReplyObject(rep);
	}
	/* What an applied result proves about the card, for the next judgment:
	 * learned only from a result the script accepted as this claim's own,
	 * never from a forged, replayed or stale line. */
	for (int i = 0; i < n; i++)
		if (rs[i].genuine)
			nupdates += append_status_update(&rs[i]);
	while (nupdates-- > 0) {
		redisReply *rep = sr_redis_reply(&rds);

		if (!rep) {
			sr_redis_lost(&rds, &redis_up, "result");
			sr_redis_discard(&rds);
			return;
		}
		if (rep->type == REDIS_REPLY_ERROR)
			sr_warn("the card's status was not learned: %s", rep->str);
		freeReplyObject(rep);
	}
}

static int
emit(struct res *rs, int n)
{
	int status = SR_EX_OK;

	for (int i = 0; i < n; i++) {
		struct res *r = &rs[i];
		json_t *o = json_object();

		if (r->bad) {
			json_object_set_new(o, "line", json_integer(r->line));
			status = sr_worst(status, sr_rejected(o, r->line, r->error));
		} else {
			json_object_set_new(o, "card", json_string(r->t.card));
			json_object_set_new(o, "carrier", json_string(r->t.carrier));
			json_object_set_new(o, "ver", json_integer(r->t.ver));
			json_object_set_new(o, "task", json_string(r->t.kind));
			if (r->outcome)
				json_object_set_new(o, "outcome", json_string(r->outcome));
			if (r->state[0]) {
				json_object_set_new(o, "state", json_string(r->state));
				if (r->ver_now != r->t.ver)
					json_object_set_new(o, "ver_now", json_integer(r->ver_now));
			} else {
				json_object_set_new(o, "state", json_string("error"));
				json_object_set_new(o, "error", json_string(
				    r->error[0] ? r->error : rds.errstr[0] ? rds.errstr : "not applied"));
				status = sr_worst(status, SR_EX_BACKEND);
			}
		}
		sr_emit(o);
		json_decref(r->obj);
		r->obj = NULL;
	}
	sr_flush();
	return status;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = { SR_COMMON_LONGOPTS, { NULL, 0, NULL, 0 } };
	static struct res rs[BATCH];
	struct sr_reader rd;
	int c, rc, n = 0, status = SR_EX_OK;
	char *line;

	sr_prog = "sr-confirm";
	sr_config_init(&cfg);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
		if (!sr_config_option(&cfg, c, optarg, usage))
			sr_usage(SR_EX_USAGE, usage);
	sr_no_operands(argc, argv, usage);
	srand((unsigned)(sr_mono_ms() ^ getpid()));
	redis_up = sr_redis_open_filter(&rds, &cfg, "result is answered with state \"error\"");
	sr_reader_init(&rd, STDIN_FILENO);
	for (;;) {
		rc = sr_reader_next(&rd, &line, n == 0);
		if (rc == SR_READ_LINE || rc == SR_READ_BAD) {
			struct res *r = &rs[n++];

			memset(r, 0, sizeof *r);
			r->line = rd.lineno;
			if (rc == SR_READ_BAD) {
				r->bad = 1;
				snprintf(r->error, sizeof r->error, "%s", rd.why);
			} else
				parse(r, line);
		}
		if (n > 0 && (n == BATCH || rc == SR_READ_AGAIN || rc == SR_READ_EOF)) {
			process(rs, n);
			status = sr_worst(status, emit(rs, n));
			n = 0;
		}
		if (rc == SR_READ_EOF)
			break;
	}
	status = sr_worst(status, sr_reader_failed(&rd));
	sr_reader_free(&rd);
	sr_redis_close(&rds);
	sr_accounts_free();
	return sr_finish(status);
}
