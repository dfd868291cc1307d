/* sr-enqueue - the request-evaluation facade: every stop/resume request enters here.
 *
 * Reads request lines, validates them, upserts the facts they carry, judges
 * each card (sr_judge) and writes the result to the card's account queue with
 * enqueue.lua: a versioned command, a cancellation, or nothing. Prints exactly
 * one ack per input line, in input order, and only after Redis confirmed the
 * write: an ack of "queued" means the command is durable in Redis.
 *
 * Work is batched: a batch is whatever input is available (up to BATCH
 * lines), handled in three pipelined round trips (read facts; write facts and
 * read device facts; one enqueue script call per account), so throughput does
 * not depend on the round-trip time.
 *
 * If Redis becomes unavailable, every line not yet acknowledged gets a
 * status "error" record and the tool exits 3: nothing is silently dropped.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sr.h"

#define BATCH 2048

static const char usage[] =
"usage: sr-enqueue [--redis URL] [--prefix P] < requests.jsonl > acks.jsonl\n"
"\n"
"Judge stop/resume requests and queue the resulting commands. One request per\n"
"input line, one ack per output line, in the same order.\n"
"\n"
"Request:\n"
"  {\"card\":\"8986...\",\"carrier\":\"c17\",\"scene\":\"package_expired\",\"source\":\"cron:expiry\",\n"
"   \"facts\":{\"pkg_expires_at\":1798675200}}\n"
"  scene: package_expired data_exhausted refund activation order reset polling\n"
"         device device_package_expired manual_recheck\n"
"  facts (optional, upserted before judging): device status stopped_by pkg_expires_at\n"
"         data_used_kb data_quota_kb refunded polling_paused\n"
"Ack status: queued unchanged cancelled noop rejected error\n"
"\n"
"Options:\n"
"  --redis URL    redis://host:port[/db] or unix:///path (env SRQ_REDIS)\n"
"  --prefix P     key prefix (env SRQ_PREFIX, default polling)\n"
"  -h, --help     this help        --version   print the version\n"
"\n"
"Environment: SRQ_REDIS_PASSWORD(_FILE), SRQ_MIN_INTERVAL_MS, SRQ_AUDIT_MAXLEN.\n"
"Exit: 0 all queued, 1 some lines rejected, 2 usage, 3 Redis unavailable.\n"
"Example:\n"
"  jq -c '{card, carrier, scene:\"package_expired\"}' expired.json | sr-enqueue | jq -r .status | sort | uniq -c\n";

enum { ST_PENDING, ST_REJECTED, ST_ERROR, ST_DONE };

struct req {
	long line;
	int st;
	char error[200];
	char card[65], carrier[65], scene[32], source[129];
	int prio;
	json_t *facts; /* borrowed from obj */
	json_t *obj;
	struct sr_card_facts cf;
	struct sr_device_facts df;
	struct sr_cmd cmd; /* the judged intent, written by sr_command.c */
	int dev_fetched; /* device facts were read with the card's */
};

/* A batch in flight. Its enqueue scripts are sent without waiting, so Redis
 * runs them while the next batch is read and parsed (the two cores overlap);
 * their replies are collected just before the next batch's own. */
struct batch {
	struct req reqs[BATCH];
	int n;
	struct sr_cmd_calls *calls; /* the enqueue scripts in flight */
	int nsadd; /* account registrations sent before the scripts */
};

static struct sr_config cfg;
static struct sr_redis rds;
static int redis_up;

static const char *const req_keys[] = { "card", "carrier", "device", "scene", "source", "facts", NULL };
static const char *const fact_keys[] = { "carrier", "device", "status", "stopped_by",
	"pkg_expires_at", "data_used_kb", "data_quota_kb", "refunded", "polling_paused", NULL };

static int
reject(struct req *r, const char *msg, const char *arg)
{
	r->st = ST_REJECTED;
	snprintf(r->error, sizeof r->error, msg, arg);
	return -1;
}

static int
check_facts(struct req *r, json_t *facts)
{
	const char *key, *bad;
	json_t *v;

	if (!json_is_object(facts))
		return reject(r, "\"facts\" must be an object%s", "");
	if ((bad = sr_unknown_key(facts, fact_keys)))
		return reject(r, "unknown fact \"%s\"", bad);
	json_object_foreach(facts, key, v) {
		if (!strcmp(key, "carrier") || !strcmp(key, "device")) {
			if (!json_is_string(v) || !sr_valid_id(json_string_value(v)))
				return reject(r, "fact \"%s\" must be an id [A-Za-z0-9_.-]{1,64}", key);
		} else if (!strcmp(key, "status")) {
			const char *s = json_string_value(v);

			if (!s || (strcmp(s, "active") && strcmp(s, "stopped")))
				return reject(r, "fact \"status\" must be \"active\" or \"stopped\"%s", "");
		} else if (!strcmp(key, "stopped_by")) {
			const char *s = json_string_value(v);

			if (!s || (strcmp(s, "auto") && strcmp(s, "manual")))
				return reject(r, "fact \"stopped_by\" must be \"auto\" or \"manual\"%s", "");
		} else if (json_is_boolean(v) && (!strcmp(key, "refunded") || !strcmp(key, "polling_paused"))) {
			continue;
		} else if (!json_is_integer(v) || json_integer_value(v) < 0) {
			return reject(r, "fact \"%s\" must be a non-negative integer", key);
		}
	}
	if ((v = json_object_get(facts, "carrier")) && strcmp(json_string_value(v), r->carrier))
		return reject(r, "facts name carrier '%s', the request another", json_string_value(v));
	return 0;
}

/* Validate one line; fills r or marks it rejected. */
static void
parse_line(struct req *r, const char *line)
{
	json_error_t jerr;
	const char *s, *bad;

	r->obj = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
	if (!r->obj) {
		reject(r, "malformed JSON: %s", jerr.text);
		return;
	}
	if (!json_is_object(r->obj)) {
		reject(r, "a request must be a JSON object%s", "");
		return;
	}
	if ((s = sr_jstr(r->obj, "card")) && strlen(s) < sizeof r->card)
		strcpy(r->card, s);
	if ((s = sr_jstr(r->obj, "carrier")) && strlen(s) < sizeof r->carrier)
		strcpy(r->carrier, s);
	if ((bad = sr_unknown_key(r->obj, req_keys))) {
		reject(r, "unknown field \"%s\"", bad);
		return;
	}
	if (json_object_get(r->obj, "device") && !json_object_get(r->obj, "card")) {
		reject(r, "device requests are not supported by this version%s", "");
		return;
	}
	s = sr_jstr(r->obj, "card");
	if (!sr_valid_id(s)) {
		reject(r, "\"card\" must be an id [A-Za-z0-9_.-]{1,64}%s", "");
		return;
	}
	s = sr_jstr(r->obj, "carrier");
	if (!sr_valid_id(s)) {
		reject(r, "\"carrier\" must be an id [A-Za-z0-9_.-]{1,64}%s", "");
		return;
	}
	s = sr_jstr(r->obj, "scene");
	if ((r->prio = sr_scene_prio(s)) < 0) {
		reject(r, s ? "unknown scene \"%s\"" : "missing \"scene\"%s", s ? s : "");
		return;
	}
	strcpy(r->scene, s);
	if (json_object_get(r->obj, "source")) {
		s = sr_jstr(r->obj, "source");
		if (!s || strlen(s) >= sizeof r->source) {
			reject(r, "\"source\" must be a string of at most 128 bytes%s", "");
			return;
		}
		strcpy(r->source, s);
	}
	if ((r->facts = json_object_get(r->obj, "facts")) && check_facts(r, r->facts) < 0)
		return;
	r->st = ST_PENDING;
}

/* Overlay the request's facts on the stored ones. */
static void
merge_facts(struct req *r)
{
	const char *key;
	json_t *v;

	if (!r->cf.carrier[0])
		strcpy(r->cf.carrier, r->carrier);
	if (!r->facts)
		return;
	r->cf.known = 1;
	json_object_foreach(r->facts, key, v) {
		long long n = json_is_boolean(v) ? json_is_true(v) : json_integer_value(v);

		if (!strcmp(key, "device"))
			snprintf(r->cf.device, sizeof r->cf.device, "%s", json_string_value(v));
		else if (!strcmp(key, "status"))
			snprintf(r->cf.status, sizeof r->cf.status, "%s", json_string_value(v));
		else if (!strcmp(key, "stopped_by"))
			snprintf(r->cf.stopped_by, sizeof r->cf.stopped_by, "%s", json_string_value(v));
		else if (!strcmp(key, "pkg_expires_at"))
			r->cf.pkg_expires_at = n;
		else if (!strcmp(key, "data_used_kb"))
			r->cf.data_used_kb = n;
		else if (!strcmp(key, "data_quota_kb"))
			r->cf.data_quota_kb = n;
		else if (!strcmp(key, "refunded"))
			r->cf.refunded = n != 0;
	}
}

/* HSET the request's facts (numbers and booleans as decimal strings). */
static void
append_facts_write(struct req *r)
{
	const char *argv[2 + 2 * 10];
	char nums[10][24], key[SR_KEY_MAX];
	int argc = 0, k = 0;
	const char *name;
	json_t *v;

	argv[argc++] = "HSET";
	argv[argc++] = sr_key_card_facts(key, cfg.prefix, r->card);
	argv[argc++] = "carrier";
	argv[argc++] = r->carrier;
	json_object_foreach(r->facts, name, v) {
		if (!strcmp(name, "carrier"))
			continue;
		argv[argc++] = name;
		if (json_is_string(v))
			argv[argc++] = json_string_value(v);
		else {
			snprintf(nums[k], sizeof nums[k], "%lld",
			    json_is_boolean(v) ? (long long)json_is_true(v) : (long long)json_integer_value(v));
			argv[argc++] = nums[k++];
		}
	}
	sr_redis_append(&rds, argc, argv, NULL);
}

/* Mark every pending line of the batch as a backend error. */
static void
fail_batch(struct req *reqs, int n)
{
	for (int i = 0; i < n; i++)
		if (reqs[i].st == ST_PENDING) {
			reqs[i].st = ST_ERROR;
			snprintf(reqs[i].error, sizeof reqs[i].error, "%s", rds.errstr);
		}
	redis_up = 0;
}

/* Round 1: the clock and the stored card facts. Returns now (s) or -1. */
/* Round 1: the clock, each card's stored facts, and the facts of a device
 * named in the request. Sent without waiting (see process). */
static void
append_read_facts(struct req *reqs, int n)
{
	const char *time_argv[] = { "TIME" };
	char key[SR_KEY_MAX];

	sr_redis_append(&rds, 1, time_argv, NULL);
	for (int i = 0; i < n; i++) {
		struct req *r = &reqs[i];
		const char *dev = r->facts ? sr_jstr(r->facts, "device") : NULL;

		if (r->st != ST_PENDING)
			continue;
		{
			const char *argv[] = { "HGETALL", sr_key_card_facts(key, cfg.prefix, r->card) };

			sr_redis_append(&rds, 2, argv, NULL);
		}
		if (dev) {
			const char *argv[] = { "HGETALL", sr_key_device_facts(key, cfg.prefix, dev) };

			sr_redis_append(&rds, 2, argv, NULL);
			r->dev_fetched = 1;
		}
	}
	sr_redis_flush(&rds);
}

/* Read round 1; check ownership; overlay the request's facts. Returns the
 * Redis clock in seconds, or -1 if Redis failed. */
static long long
read_facts(struct req *reqs, int n)
{
	long long now = -1;
	redisReply *rep;

	if (!(rep = sr_redis_reply(&rds)))
		return -1;
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
		now = atoll(rep->element[0]->str);
	freeReplyObject(rep);
	for (int i = 0; i < n; i++) {
		struct req *r = &reqs[i];

		if (r->st != ST_PENDING)
			continue;
		if (!(rep = sr_redis_reply(&rds)))
			return -1;
		sr_card_facts_load(&r->cf, rep);
		freeReplyObject(rep);
		if (r->dev_fetched) {
			if (!(rep = sr_redis_reply(&rds)))
				return -1;
			sr_device_facts_load(&r->df, rep);
			freeReplyObject(rep);
		}
		if (r->cf.carrier[0] && strcmp(r->cf.carrier, r->carrier) != 0)
			reject(r, "card belongs to carrier '%s' in the asset mirror", r->cf.carrier);
		else if (!r->cf.known && !r->facts)
			reject(r, "no facts known for this card: load them with sr-asset or send \"facts\"%s", "");
		else
			merge_facts(r);
	}
	return now;
}

/* Round 2, only when needed: facts of devices known from the stored card
 * facts alone. Returns -1 if Redis failed. */
static int
read_devices(struct req *reqs, int n)
{
	char key[SR_KEY_MAX];
	redisReply *rep;
	int k = 0;

	for (int i = 0; i < n; i++)
		if (reqs[i].st == ST_PENDING && reqs[i].cf.device[0] && !reqs[i].dev_fetched) {
			const char *argv[] = { "HGETALL", sr_key_device_facts(key, cfg.prefix, reqs[i].cf.device) };

			sr_redis_append(&rds, 2, argv, NULL);
			k++;
		}
	for (int i = 0; k > 0 && i < n; i++)
		if (reqs[i].st == ST_PENDING && reqs[i].cf.device[0] && !reqs[i].dev_fetched) {
			if (!(rep = sr_redis_reply(&rds)))
				return -1;
			sr_device_facts_load(&reqs[i].df, rep);
			freeReplyObject(rep);
		}
	return 0;
}

/* Before the scripts, in the same flush: the request facts, and the
 * registration of accounts this process has not seen yet. */
static void
append_facts_writes(struct batch *b)
{
	static char **known;
	static size_t nknown;
	char key[SR_KEY_MAX];

	b->nsadd = 0;
	for (int i = 0; i < b->n; i++)
		if (b->reqs[i].st == ST_PENDING && b->reqs[i].facts)
			append_facts_write(&b->reqs[i]);
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];
		size_t k;

		if (r->st != ST_PENDING)
			continue;
		for (k = 0; k < nknown && strcmp(known[k], r->carrier); k++)
			;
		if (k == nknown) {
			const char *argv[] = { "SADD", sr_key_accounts(key, cfg.prefix), r->carrier };

			known = sr_realloc(known, (nknown + 1) * sizeof *known);
			known[nknown++] = sr_strdup(r->carrier);
			sr_redis_append(&rds, 3, argv, NULL);
			b->nsadd++;
		}
	}
}

/* Round 3: judge, then the facts writes and the enqueue scripts in one flush. */
static void
append_commands(struct batch *b, long long now)
{
	struct sr_cmd *cmds[BATCH];
	int n = 0;

	append_facts_writes(b);
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];

		if (r->st != ST_PENDING)
			continue;
		r->cmd.card = r->card;
		r->cmd.carrier = r->carrier;
		r->cmd.scene = r->scene;
		r->cmd.source = r->source;
		r->cmd.prio = r->prio;
		r->cmd.j = sr_judge(&r->cf, r->cf.device[0] ? &r->df : NULL, now);
		cmds[n++] = &r->cmd;
	}
	b->calls = sr_cmds_append(&rds, &cfg, cmds, n);
	sr_redis_flush(&rds);
}

/* Collect the replies of a batch's round 3. Returns -1 if Redis failed. */
static int
collect_commands(struct batch *b)
{
	struct req *reqs = b->reqs;
	redisReply *rep;
	int rc = 0;

	if (!b->calls)
		return 0;
	for (int i = 0; rc == 0 && i < b->n; i++)
		if (reqs[i].st == ST_PENDING && reqs[i].facts) {
			if (!(rep = sr_redis_reply(&rds))) {
				rc = -1;
				break;
			}
			if (rep->type == REDIS_REPLY_ERROR) {
				reqs[i].st = ST_ERROR;
				snprintf(reqs[i].error, sizeof reqs[i].error, "facts not written: %s", rep->str);
			}
			freeReplyObject(rep);
		}
	for (int i = 0; rc == 0 && i < b->nsadd; i++) {
		if (!(rep = sr_redis_reply(&rds)))
			rc = -1;
		else
			freeReplyObject(rep);
	}
	/* Always consumes (and frees) the handle; after a failure it only
	 * finds the connection dead. */
	if (sr_cmds_collect(&rds, b->calls) < 0)
		rc = -1;
	b->calls = NULL;
	for (int i = 0; i < b->n; i++) {
		struct req *r = &reqs[i];

		if (r->st != ST_PENDING)
			continue;
		if (r->cmd.status)
			r->st = ST_DONE;
		else if (r->cmd.error[0]) {
			r->st = ST_ERROR;
			snprintf(r->error, sizeof r->error, "%s", r->cmd.error);
		}
	}
	return rc;
}

static int
emit_batch(struct req *reqs, int n)
{
	int status = SR_EX_OK;

	for (int i = 0; i < n; i++) {
		struct req *r = &reqs[i];
		json_t *o = json_object();

		json_object_set_new(o, "line", json_integer(r->line));
		if (r->card[0])
			json_object_set_new(o, "card", json_string(r->card));
		if (r->carrier[0])
			json_object_set_new(o, "carrier", json_string(r->carrier));
		switch (r->st) {
		case ST_DONE:
			sr_cmd_ack(o, &r->cmd);
			break;
		case ST_REJECTED:
			json_object_set_new(o, "status", json_string("rejected"));
			json_object_set_new(o, "error", json_string(r->error));
			fprintf(stderr, "%s: line %ld: %s\n", sr_prog, r->line, r->error);
			status = sr_worst(status, SR_EX_REJECTED);
			break;
		default:
			json_object_set_new(o, "status", json_string("error"));
			json_object_set_new(o, "error", json_string(r->error[0] ? r->error : "not processed"));
			status = sr_worst(status, SR_EX_BACKEND);
			break;
		}
		sr_emit(o);
		json_decref(r->obj);
		r->obj = NULL;
	}
	sr_flush();
	return status;
}

/* Rounds 1 and 2 of batch b, then its enqueue scripts are sent; the replies
 * of the previous batch's scripts (prev, may be NULL) are collected on the
 * way, in pipeline order, and prev is answered. */
static int
process(struct batch *b, struct batch *prev)
{
	long long now;
	int status = SR_EX_OK;

	b->calls = NULL;
	if (redis_up)
		append_read_facts(b->reqs, b->n);
	if (prev) {
		if (redis_up && collect_commands(prev) < 0)
			redis_up = 0;
		if (!redis_up)
			fail_batch(prev->reqs, prev->n);
		status = emit_batch(prev->reqs, prev->n);
	}
	if (!redis_up) {
		sr_redis_discard(&rds);
		fail_batch(b->reqs, b->n);
		return status;
	}
	if ((now = read_facts(b->reqs, b->n)) < 0 || read_devices(b->reqs, b->n) < 0) {
		sr_redis_discard(&rds);
		fail_batch(b->reqs, b->n);
		return status;
	}
	append_commands(b, now);
	return status;
}

/* Answer the last batch: collect its scripts' replies and print its acks. */
static int
finish(struct batch *b)
{
	if (redis_up && collect_commands(b) < 0) {
		sr_redis_discard(&rds);
		redis_up = 0;
	}
	if (!redis_up)
		fail_batch(b->reqs, b->n);
	return emit_batch(b->reqs, b->n);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = { SR_COMMON_LONGOPTS, { NULL, 0, NULL, 0 } };
	static struct batch bufs[2];
	struct batch *cur = &bufs[0], *prev = NULL;
	struct sr_reader rd;
	int c, status = SR_EX_OK, rc;
	char *line;

	sr_prog = "sr-enqueue";
	sr_config_init(&cfg);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
		if (!sr_config_option(&cfg, c, optarg, usage))
			sr_usage(SR_EX_USAGE, usage);
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", sr_prog, argv[optind]);
		sr_usage(SR_EX_USAGE, usage);
	}
	if ((rc = sr_redis_connect(&rds, &cfg)) == -2)
		sr_die(SR_EX_USAGE, "%s", rds.errstr);
	redis_up = rc == 0;
	if (!redis_up)
		fprintf(stderr, "%s: error: %s; every line is answered with status \"error\"\n",
		    sr_prog, rds.errstr);

	sr_reader_init(&rd, STDIN_FILENO);
	for (;;) {
		/* Block for the first line of a batch, then take what is ready;
		 * with a batch in flight, never block: answer it first. */
		rc = sr_reader_next(&rd, &line, cur->n == 0 && !prev);
		if (rc == SR_READ_LINE || rc == SR_READ_TOOLONG) {
			struct req *r = &cur->reqs[cur->n++];

			memset(r, 0, sizeof *r);
			r->line = rd.lineno;
			if (rc == SR_READ_TOOLONG)
				reject(r, "line longer than %s bytes", "65536");
			else
				parse_line(r, line);
		}
		if (cur->n > 0 && (cur->n == BATCH || rc == SR_READ_AGAIN || rc == SR_READ_EOF)) {
			status = sr_worst(status, process(cur, prev));
			prev = cur;
			cur = cur == &bufs[0] ? &bufs[1] : &bufs[0];
			cur->n = 0;
		} else if (prev && (rc == SR_READ_AGAIN || rc == SR_READ_EOF)) {
			/* Input is idle: answer the batch in flight now. */
			status = sr_worst(status, finish(prev));
			prev = NULL;
		}
		if (rc == SR_READ_EOF && !prev)
			break;
	}
	sr_reader_free(&rd);
	if (!redis_up && rds.errstr[0])
		fprintf(stderr, "%s: error: %s\n", sr_prog, rds.errstr);
	sr_redis_close(&rds);
	return sr_finish(status);
}
