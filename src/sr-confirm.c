/* sr-confirm - the finisher: apply each sr-exec result atomically (confirm.lua).
 *
 * Version compare, then remove or keep the command; count failures, back off,
 * turn unknown results into status queries, alert and freeze; append the
 * audit entry in the same script. The card's last known status in the asset
 * mirror is updated from what the gateway said (ok/already, or a query's
 * observation), which is what the next judgment reads.
 *
 * One final line per input line, in input order. Results are batched: a
 * batch is whatever input is ready, sent as one pipeline together with the
 * previous batch's writes of what it learned (see process).
 */
#include <getopt.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sr.h"

#define BATCH 256
/* How long a batch's fact writes wait for the next batch to go with. */
#define HOLD_MS 5

static const char usage[] =
"usage: sr-confirm [--redis URL] [--prefix P] < results.jsonl > finals.jsonl\n"
"\n"
"Apply sr-exec results to the queue: finish, requeue with backoff, confirm an\n"
"unknown result by a status query, alert, freeze. One final line per result.\n"
"\n"
"Final: {\"card\":\"...\",\"carrier\":\"c17\",\"ver\":7,\"outcome\":\"ok\",\"state\":\"done\"}\n"
"state: done requeued confirming alerted frozen stale (a newer version exists, or\n"
"  the result is not its claim's own: replayed, lost or forged; nothing changed)\n"
"\n"
"Environment: SRQ_ALERT_AFTER (3), SRQ_FREEZE_AFTER (10) consecutive failures,\n"
"  SRQ_MIN_INTERVAL_MS, SRQ_CONFIRM_DELAY_MS (2000: wait before querying an\n"
"  unknown result), SRQ_AUDIT_MAXLEN.\n"
"Exit: 0 done, 1 bad lines, 2 usage, 3 Redis unavailable (unapplied lines are\n"
"  answered with \"status\":\"error\" and \"state\":\"error\"; their leases\n"
"  expire and they are redone)\n"
"  or it refused to record a card's status: that line keeps its state and has\n"
"  \"error\" (the next judgment reads the old status; the carrier answers\n"
"  \"already\" if it is called again).\n"
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
	int own_stop; /* a query that found srq's own stop landed */
	int learn;    /* its status write in learned (append_status_update), + 1; 0: none */
	const char *unlearned; /* why what it proves is not known written */
	char state[16];
	long long ver_now;
};

static const char *const classes[] = { "throttled", "too_frequent", "refused", "not_sent", "auth",
	"unreplicated", "clock_step", "mismatch", NULL };

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
		} else if (!strcmp(r->class, "mismatch") && strcmp(r->outcome, "unknown")) {
			/* (an answer about another card is no answer about this one) */
			r->bad = 1;
			snprintf(r->error, sizeof r->error, "\"class\":\"mismatch\" is only for an unknown outcome");
		}
	}
}

/* The card's state at the carrier right now, as the result proves it (and
 * who stopped it), or NULL when it proves none. */
static const char *
status_proved(const struct res *r, const char **by_out)
{
	const char *state = NULL, *by = NULL, *order = sr_jstr(r->obj, "order");
	int is_query = !strcmp(r->t.kind, "query");

	*by_out = NULL;
	if (order && is_query && !strcmp(r->outcome, "ok")) {
		/* A poll that found the change done and finished the command
		 * proves the card at the command's target: the script finishes
		 * one only when the order done was its own direction. */
		if (!strcmp(order, "done") && !strcmp(r->state, "done")) {
			state = !strcmp(r->t.action, "stop") ? "stopped" : "active";
			by = r->own_stop && !strcmp(state, "stopped") ? "auto" : NULL;
		}
	} else if (is_query && !strcmp(r->outcome, "ok")) {
		state = sr_jstr(r->obj, "observed");
		/* The stop srq sent, found landed: srq's, as an ok would say. */
		by = r->own_stop && state && !strcmp(state, "stopped") ? "auto" : NULL;
	}
	else if (json_is_true(json_object_get(r->obj, "in_progress")))
		return NULL; /* accepted: it has not landed yet */
	else if (!is_query && (!strcmp(r->outcome, "ok") || !strcmp(r->outcome, "already"))) {
		state = !strcmp(r->t.action, "stop") ? "stopped" : "active";
		/* Only a stop that srq made is srq's: "already" stopped may be a
		 * stop by hand, whose stopped_by must survive. */
		by = !strcmp(r->t.action, "stop") && !strcmp(r->outcome, "ok") ? "auto" : NULL;
	}
	*by_out = by;
	if (!state || (strcmp(state, "active") && strcmp(state, "stopped")))
		return NULL;
	return state;
}

/* The facts the held batch's results prove, written (facts_write.lua). */
static struct sr_facts_batch learned;

/* Facts the result proves, written as of when its answer came (the call
 * left at "at" and took "ms": what an export taken before that says is
 * older, and does not undo it), with the held batch's others. */
static void
append_status_update(struct res *r)
{
	const char *by, *state = status_proved(r, &by);
	long long at = sr_jint(r->obj, "at", 0), ms = sr_jint(r->obj, "ms", 0);
	char key[SR_KEY_MAX];

	if (!state)
		return;
	/* A stop that srq made is srq's (auto); "active" ends any stop. */
	sr_facts_status_add(&learned, sr_key_card_facts(key, cfg.prefix, r->t.card), r->t.carrier, state,
	    by ? by : !strcmp(state, "active") ? "" : NULL, at > 0 && ms >= 0 ? at + ms : 0, sr_prog);
	r->learn = learned.n;
}

/* The numbers of one result, as the script's arguments. */
struct res_args {
	char ver[24], http[24], ra[24], jitter[24], at[24], went[24];
};

/* One script call for the results rs[idx[0..m-1]], all of one account. */
static void
append_confirm(struct res *rs, const int *idx, int m, struct res_args *ra,
    char (*keys)[SR_KEY_MAX], const char **argv)
{
	/* confirm.lua's keys and arguments, as its header declares them */
	const char *carrier = rs[idx[0]].t.carrier, **args;
	int nk = sr_keys_account(keys, argv, cfg.prefix, carrier, sr_lua_confirm_keys), na = SR_CONFIRM_ARGC;

	/* each result's card's keys: its command hash and idle bucket */
	for (int k = 0; k < m; k++)
		nk += sr_keys_script(keys + nk, argv + nk, cfg.prefix, carrier, rs[idx[k]].t.card,
		    sr_lua_confirm_item_keys);
	args = argv + nk;
	args[SR_CONFIRM_ARGV_SETTINGS] = sr_account(&cfg, carrier)->settings;
	args[SR_CONFIRM_ARGV_STATS] = sr_key_account(keys[nk], cfg.prefix, carrier, "stats:");
	args[SR_CONFIRM_ARGV_ACCOUNT] = carrier;
	for (int k = 0; k < m; k++) {
		struct res *r = &rs[idx[k]];
		struct res_args *a = &ra[idx[k]];
		const char **v = args + na;
		const char *observed = sr_jstr(r->obj, "observed"), *gate = sr_jstr(r->obj, "gate");
		/* A poll (sr-exec asked the carrier about the change's order):
		 * its word on the order goes where a query's state does, and
		 * its txn says which order it was. */
		const char *order = sr_jstr(r->obj, "order");
		const char *error = sr_jstr(r->obj, "error");
		long long sent = sr_jint(r->obj, "gated", 0), went = sr_jint(r->obj, "at", 0);

		snprintf(a->ver, sizeof a->ver, "%lld", r->t.ver);
		snprintf(a->http, sizeof a->http, "%lld", sr_jint(r->obj, "http", 0));
		snprintf(a->ra, sizeof a->ra, "%lld", sr_jint(r->obj, "retry_after_ms", 0));
		snprintf(a->jitter, sizeof a->jitter, "%d", rand() % 1000);
		snprintf(a->at, sizeof a->at, "%lld", sent > 0 ? sent : 0);
		snprintf(a->went, sizeof a->went, "%lld", went > 0 ? went : 0);
		v[SR_CONFIRM_ITEM_ARGV_CARD] = r->t.card;
		v[SR_CONFIRM_ITEM_ARGV_TOKEN] = r->t.token;
		v[SR_CONFIRM_ITEM_ARGV_VERSION] = a->ver;
		v[SR_CONFIRM_ITEM_ARGV_KIND] = order && !strcmp(r->t.kind, "query") ? "poll" : r->t.kind;
		v[SR_CONFIRM_ITEM_ARGV_OUTCOME] = r->outcome;
		v[SR_CONFIRM_ITEM_ARGV_HTTP] = a->http;
		v[SR_CONFIRM_ITEM_ARGV_ERROR] = error ? error : "";
		v[SR_CONFIRM_ITEM_ARGV_OBSERVED] = order && !strcmp(r->t.kind, "query") ? order : observed ? observed : "";
		v[SR_CONFIRM_ITEM_ARGV_RETRY_AFTER] = a->ra;
		v[SR_CONFIRM_ITEM_ARGV_JITTER] = a->jitter;
		v[SR_CONFIRM_ITEM_ARGV_BLOCKED] = gate ? gate : "";
		v[SR_CONFIRM_ITEM_ARGV_CLASS] = r->class ? r->class : "";
		v[SR_CONFIRM_ITEM_ARGV_GRANTED] = sent > 0 ? a->at : "";
		v[SR_CONFIRM_ITEM_ARGV_IN_PROGRESS] = json_is_true(json_object_get(r->obj, "in_progress")) ? "1" : "";
		v[SR_CONFIRM_ITEM_ARGV_TXN] = sr_jstr(r->obj, "txn") ? sr_jstr(r->obj, "txn") : "";
		v[SR_CONFIRM_ITEM_ARGV_AT] = went > 0 ? a->went : "";
		na += SR_CONFIRM_ITEM_ARGC;
	}
	sr_redis_append_script(&rds, SR_LUA_CONFIRM, nk, nk + na, argv, NULL);
}

/* What the script said of one result. */
static void
confirmed(struct res *r, const redisReply *rep)
{
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 &&
	    rep->element[0]->type == REDIS_REPLY_STRING) {
		snprintf(r->state, sizeof r->state, "%s", rep->element[0]->str);
		r->ver_now = rep->element[1]->integer;
		r->genuine = rep->element[2]->integer >= 1;
		r->own_stop = rep->element[2]->integer == 2;
	} else {
		snprintf(r->error, sizeof r->error, "confirm script failed: %s",
		    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
		sr_warn_each(sr_card_subject(r->t.card), r->error);
	}
}

/* A batch whose scripts were applied is held until the facts it proves
 * are written: those writes go out in the same flush as the next batch's
 * scripts, or alone when no batch follows within HOLD_MS. So a batch costs
 * Redis one round trip, not two (on a cluster, one read on each master it
 * reaches, not two). Its final lines are printed once its writes are
 * answered: a "done" line means the facts say so too. */
static struct res batches[2][BATCH];
static struct res *held;
static int nheld;
static int64_t held_at; /* when it was held (mono ms) */

static int emit(struct res *rs, int n);

/* The held batch's fact writes answered, then its final lines. A card
 * whose write Redis refused (a damaged facts key) or did not answer keeps
 * its state (the carrier's change is applied and recorded), says why its
 * facts are not learned, and the exit is 3: the next judgment would read
 * stale facts. */
static int
settle(void)
{
	int status;

	if (learned.calls && redis_up && sr_facts_batch_read(&rds, &learned) < 0) {
		sr_redis_lost(&rds, &redis_up, "result");
		sr_redis_discard(&rds);
	}
	for (int i = 0; i < nheld; i++) {
		struct res *r = &held[i];
		const redisReply *rep;
		json_t *stale = NULL;
		char why[sizeof r->error - 40];

		if (!r->learn)
			continue;
		rep = learned.got ? sr_facts_batch_reply(&learned, r->learn - 1) : NULL;
		r->learn = 0;
		if (!rep || !redis_up) {
			r->unlearned = "Redis lost before the card's status was written";
			continue;
		}
		if (sr_facts_written(rep, SR_FACTS_CARD, &stale, why, sizeof why) < 0) {
			/* (its error is free: the line has a state) */
			snprintf(r->error, sizeof r->error, "the card's status was not learned: %s",
			    rep->type == REDIS_REPLY_ERROR ? rep->str : why);
			sr_warn_each(sr_card_subject(r->t.card), r->error);
			r->unlearned = r->error;
		}
		json_decref(stale); /* (a newer status stands: nothing to say) */
	}
	sr_facts_batch_reset(&learned);
	status = held ? emit(held, nheld) : SR_EX_OK;
	held = NULL;
	nheld = 0;
	return status;
}

/* A result's account, for its script call; none for a line that is not a
 * result (bad) or that answers an upstream error: nothing to apply. */
static const char *
res_account(const void *items, int i)
{
	const struct res *r = (const struct res *)items + i;

	return r->bad || r->upstream_error ? NULL : r->t.carrier;
}

/* Apply the results: one script call per account's results of the batch
 * (in their order), sent with the held batch's fact writes, which settle
 * first; then this batch is held with what its applied results prove about
 * the cards. Returns the exit status of the batch that settled. */
static int
process(struct res *rs, int n)
{
	static struct res_args ra[BATCH];
	/* confirm.lua's keys for BATCH results and its stats prefix; its arguments */
	static char keys[SR_CONFIRM_KEYS + SR_CONFIRM_ITEM_KEYS * BATCH + 1][SR_KEY_MAX];
	static const char *argv[SR_CONFIRM_KEYS + SR_CONFIRM_ARGC +
	    (SR_CONFIRM_ITEM_KEYS + SR_CONFIRM_ITEM_ARGC) * BATCH];
	struct sr_batch b = { 0 };
	int status;
	const char *by;

	if (redis_up) {
		sr_batch_by_account(&b, n, rs, res_account, 0);
		for (int g = 0, at = 0; g < b.ngroups; at += b.size[g++])
			append_confirm(rs, b.order + at, b.size[g], ra, keys, argv);
	}
	status = settle();
	for (int g = 0, k = 0; g < b.ngroups && redis_up; g++) {
		redisReply *rep;

		if (!(rep = sr_redis_reply(&rds))) {
			sr_redis_lost(&rds, &redis_up, "result");
			sr_redis_discard(&rds);
			break;
		}
		for (int j = 0; j < b.size[g]; j++, k++)
			confirmed(&rs[b.order[k]], sr_batch_reply(rep, j, 1));
		freeReplyObject(rep);
	}
	sr_batch_free(&b);
	/* What an applied result proves about the card, for the next judgment:
	 * learned only from a result the script accepted as this claim's own,
	 * never from a forged, replayed or stale line. */
	for (int i = 0; i < n; i++)
		if (rs[i].genuine && redis_up)
			append_status_update(&rs[i]);
		else if (rs[i].genuine && status_proved(&rs[i], &by)) /* applied, then Redis was lost */
			rs[i].unlearned = "Redis lost before the card's status was written";
	if (redis_up)
		sr_facts_batch_append(&rds, &learned);
	held = rs;
	nheld = n;
	held_at = sr_mono_ms();
	return status;
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
				if (r->unlearned) {
					json_object_set_new(o, "error", json_string(r->unlearned));
					status = sr_worst(status, SR_EX_BACKEND);
				}
			} else {
				/* "status":"error" is what every tool's unprocessed
				 * line carries (users select on it across the
				 * pipeline); "state" keeps the final's own field. */
				json_object_set_new(o, "status", json_string("error"));
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
	struct sr_reader rd;
	int c, rc, n = 0, cur = 0, status = SR_EX_OK;
	char *line;

	sr_prog = "sr-confirm";
	sr_log_stamp = 1; /* it runs unattended: its stderr is a log */
	sr_config_init(&cfg);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
		if (!sr_config_option(&cfg, c, optarg, usage))
			sr_usage(SR_EX_USAGE, usage);
	sr_no_operands(argc, argv, usage);
	srand((unsigned)(sr_mono_ms() ^ getpid()));
	redis_up = sr_redis_open_filter(&rds, &cfg, "result is answered with state \"error\"");
	sr_reader_init(&rd, STDIN_FILENO);
	for (;;) {
		struct res *rs = batches[cur];

		rc = sr_reader_next(&rd, &line, n == 0 && !held);
		/* Nothing to read now: a held batch waits a little for the next
		 * one to share its round trip, then settles before the wait. */
		if (rc == SR_READ_AGAIN && n == 0) {
			/* HOLD_MS from when it was held, however input trickles in. */
			struct pollfd p = { rd.fd, POLLIN, 0 };
			int64_t left = held_at + HOLD_MS - sr_mono_ms();

			if (left <= 0 || poll(&p, 1, (int)left) <= 0)
				status = sr_worst(status, settle());
			continue;
		}
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
			status = sr_worst(status, process(rs, n));
			cur = !cur;
			n = 0;
		}
		if (rc == SR_READ_EOF)
			break;
	}
	status = sr_worst(status, settle());
	status = sr_worst(status, sr_reader_failed(&rd));
	sr_reader_free(&rd);
	sr_redis_close(&rds);
	sr_accounts_free();
	sr_facts_batch_free(&learned);
	return sr_finish(status);
}
