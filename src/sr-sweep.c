/* sr-sweep - the inspection sweep (a cron job): finds and repairs what a
 * crash or a bug could leave behind, and trims the audit by age.
 *
 * For every card id of every account (its command hash or a queue entry) it
 * runs sweep_card.lua, and sweep_device.lua for every device evaluation;
 * the account's keys and its idle buckets are checked for their type first;
 * each script says what it repaired (one JSON line per finding) or nothing.
 * The sweep is the one low-frequency job allowed to walk the keyspace (SCAN).
 * Then the audit stream of every account loses the entries older than
 * SRQ_AUDIT_DAYS (its length is capped by SRQ_AUDIT_MAXLEN as it is written).
 * The alert stream is not trimmed by age: an alert still open (a card frozen
 * for weeks) must stay listed; it is capped at 10,000 entries.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "sr.h"

static const char usage[] =
"usage: sr-sweep [--grace-high MS] [--grace-normal MS] [--grace-bulk MS] [--grace-device MS]\n"
"\n"
"The inspection sweep: finds and repairs queue entries without a command,\n"
"commands without a queue entry, claims whose lease expired long ago,\n"
"confirming commands overdue for their query, frozen commands out of place,\n"
"frozen- and confirming-set entries with no such command behind them,\n"
"commands that lost their version (given one above any claim in flight),\n"
"devices stuck claimed, accounts with commands the account list lost (listed\n"
"again: no claim finds them otherwise), and account keys of the wrong type (moved aside: the\n"
"queues and the frozen and confirming sets are rebuilt, the running claims,\n"
"flapping window and open alerts start again, the cards of an idle bucket\n"
"start as new; a key only it holds, such as the limits, or a card's key\n"
"that is not a hash, is reported with \"repaired\":false). One JSON line per\n"
"finding; none in normal operation.\n"
"Then every account's audit entries older than SRQ_AUDIT_DAYS are trimmed.\n"
"\n"
"Options (\"long ago\" per priority class, in ms; at most 7 days):\n"
"  --grace-high MS     default 120000\n"
"  --grace-normal MS   default 600000\n"
"  --grace-bulk MS     default 3600000\n"
"  --grace-device MS   default 600000\n"
"  --redis URL, --prefix P, -h/--help, --version\n"
"\n"
"Finding: {\"finding\":\"orphan_entry\",\"card\":\"...\",\"carrier\":\"c17\"}\n"
"Environment: SRQ_MIN_INTERVAL_MS, SRQ_AUDIT_DAYS (default 30), SRQ_CONFIG.\n"
"Exit: 0 nothing found, 1 something found (damage is news: look at the\n"
"  findings), 2 usage, 3 Redis unavailable or refused a repair.\n"
"Example (cron, every 30 minutes: findings to the log, a page when it is news):\n"
"  */30 * * * * srq-page --records /var/log/srq/sweep.log sweep sr-sweep 2>>/var/log/srq/sweep.log\n";

static struct sr_config cfg;
static struct sr_redis rds;

/* Every account's name, from P:accounts; an error reply when that key is
 * damaged (check_global_keys reports it, and the sweep goes on: the audit
 * trim, the devices). Redis lost: fatal. */
static redisReply *
accounts(void)
{
	char key[SR_KEY_MAX];
	const char *a[] = { "SMEMBERS", sr_key_accounts(key, cfg.prefix) };
	redisReply *rep = sr_redis_cmd(&rds, 2, a);

	if (!rep)
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	return rep;
}

struct sweep {
	const char *carrier;
	char **ids;
	size_t n, cap;
	long findings;
	struct buckets {
		char **heads; /* the account's idle or wait buckets, by HEAD */
		size_t n, cap;
	} idle, wait;
};

static void
push_str(char ***list, size_t *n, size_t *cap, const char *s)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 256;
		*list = sr_realloc(*list, *cap * sizeof **list);
	}
	(*list)[(*n)++] = sr_strdup(s);
}

static void
free_strs(char ***list, size_t *n, size_t *cap)
{
	for (size_t i = 0; i < *n; i++)
		free((*list)[i]);
	free(*list);
	*list = NULL;
	*n = *cap = 0;
}

static void
collect_id(const char *id, void *arg)
{
	struct sweep *w = arg;

	if (!sr_valid_id(id))
		return; /* e.g. a device's ":scenes" set */
	push_str(&w->ids, &w->n, &w->cap, id);
}

/* One of the account's keys, named past "P:carrier:{c}:": a card's command
 * hash, or an idle or wait bucket ("idle:HEAD", "wait:HEAD"; a name with
 * one more ':' is a key moved aside, no bucket). */
static void
collect_key(const char *rest, void *arg)
{
	struct sweep *w = arg;
	struct buckets *b = !strncmp(rest, "idle:", 5) ? &w->idle : !strncmp(rest, "wait:", 5) ? &w->wait :
	    NULL;

	if (!strncmp(rest, "card:", 5))
		collect_id(rest + 5, w);
	else if (b && !strchr(rest + 5, ':'))
		push_str(&b->heads, &b->n, &b->cap, rest + 5);
}

static long grace_high = 120000, grace_normal = 600000, grace_bulk = 3600000, grace_device = 600000;

static void
report(const char *finding, const char *kind, const char *id, const char *carrier)
{
	json_t *o = json_pack("{ss ss}", "finding", finding, kind, id);

	if (carrier)
		json_object_set_new(o, "carrier", json_string(carrier));
	sr_emit(o);
	fflush(stdout);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run the sweep script over w->ids (each once), pipelined in chunks. */
static long sweep_failed; /* ids whose sweep script Redis refused */
static long keys_left;    /* damaged keys reported, not repaired */

static void
sweep_ids(struct sweep *w, int device, int shard)
{
	static const char *qs[] = { "stop_resume:high", "stop_resume", "stop_resume:bulk" };
	char k[8][SR_KEY_MAX], interval[24], gh[24], gn[24], gb[24], gd[24];

	snprintf(interval, sizeof interval, "%ld", w->carrier ? sr_account(&cfg, w->carrier)->interval_ms :
	    cfg.min_interval_ms);
	snprintf(gh, sizeof gh, "%ld", grace_high);
	snprintf(gn, sizeof gn, "%ld", grace_normal);
	snprintf(gb, sizeof gb, "%ld", grace_bulk);
	snprintf(gd, sizeof gd, "%ld", grace_device);
	if (w->n == 0)
		return;
	/* A card is found both by its hash and by its queue entry: once is enough. */
	qsort(w->ids, w->n, sizeof *w->ids, cmp_str);
	{
		size_t u = 0;

		for (size_t i = 0; i < w->n; i++) {
			if (u > 0 && !strcmp(w->ids[u - 1], w->ids[i])) {
				free(w->ids[i]);
				continue;
			}
			w->ids[u++] = w->ids[i];
		}
		w->n = u;
	}
	for (size_t s = 0; s < w->n; s += 512) {
		size_t e = s + 512 < w->n ? s + 512 : w->n;

		for (size_t i = s; i < e; i++) {
			if (device) {
				const char *a[] = { sr_key_shard(k[0], cfg.prefix, shard, "queue"),
					sr_key_device_eval(k[1], cfg.prefix, w->ids[i], ""),
					sr_key_device_eval(k[2], cfg.prefix, w->ids[i], ":scenes"), w->ids[i], gd };

				sr_redis_append_script(&rds, SR_LUA_SWEEP_DEVICE, 3, 5, a, NULL);
			} else {
				const char *a[] = { sr_key_card(k[0], cfg.prefix, w->carrier, w->ids[i]),
					sr_key_account(k[1], cfg.prefix, w->carrier, qs[0]),
					sr_key_account(k[2], cfg.prefix, w->carrier, qs[1]),
					sr_key_account(k[3], cfg.prefix, w->carrier, qs[2]),
					sr_key_account(k[4], cfg.prefix, w->carrier, "frozen"),
					sr_key_account(k[5], cfg.prefix, w->carrier, "confirming"), k[6], k[7],
					w->ids[i], interval, gh, gn, gb };

				sr_key_idle(k[6], cfg.prefix, w->carrier, w->ids[i]);
				sr_key_wait(k[7], cfg.prefix, w->carrier, w->ids[i]);
				sr_redis_append_script(&rds, SR_LUA_SWEEP_CARD, 8, 13, a, NULL);
			}
		}
		for (size_t i = s; i < e; i++) {
			redisReply *rep = sr_redis_reply(&rds);

			if (!rep)
				sr_die(SR_EX_BACKEND, "%s", rds.errstr);
			if (!device && rep->type == REDIS_REPLY_STRING && !strncmp(rep->str, "wrong_type:", 11)) {
				/* Its command cannot be read: left for a look. */
				char key[SR_KEY_MAX];

				sr_emit(json_pack("{ss ss ss ss ss ss sb}", "finding", "wrong_type", "card", w->ids[i],
				    "carrier", w->carrier, "key", sr_key_card(key, cfg.prefix, w->carrier, w->ids[i]),
				    "type", rep->str + 11, "want", "hash", "repaired", 0));
				fflush(stdout);
				keys_left++;
			} else if (rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_STATUS) {
				report(rep->str, device ? "device" : "card", w->ids[i], device ? NULL : w->carrier);
				w->findings++;
			} else if (rep->type == REDIS_REPLY_ERROR) {
				sr_warn("sweep of '%s' failed: %s", w->ids[i], rep->str);
				sweep_failed++;
			}
			freeReplyObject(rep);
		}
	}
	for (size_t i = 0; i < w->n; i++)
		free(w->ids[i]);
	free(w->ids);
	w->ids = NULL;
	w->n = w->cap = 0;
}

/* An account's keys and the type each must have. A key of another type
 * (a hand edit) fails every script of the account that writes it. The ones
 * marked aside are indexes the card pass below rebuilds (the queues, the
 * frozen and confirming sets) or bookkeeping whose loss costs little (the
 * claims in flight: max-running is not held for one lease; the last hour's
 * directions; the open alerts: one may be raised again): such a key is
 * renamed aside (KEY:damaged:MS, for a look) and the account works again.
 * The others hold what nothing else knows (the pace, a pause, the breaker,
 * the limits, the token sequence, the history): reported, left as they are. */
static const struct {
	const char *name, *type;
	int aside;
} account_keys[] = {
	{ "stop_resume:high", "zset", 1 }, { "stop_resume", "zset", 1 },
	{ "stop_resume:bulk", "zset", 1 }, { "frozen", "zset", 1 }, { "confirming", "set", 1 },
	{ "sr_running", "zset", 1 }, { "flapping", "zset", 1 }, { "alerts_open", "hash", 1 },
	{ "edge", "hash", 0 }, { "limits", "hash", 0 }, { "seq", "string", 0 },
	{ "audit", "stream", 0 }, { "alerts", "stream", 0 }, { "stats:total", "hash", 0 },
};
#define NACCOUNT_KEYS (sizeof account_keys / sizeof account_keys[0])

/* The types of keys[0..n-1] (as TYPE names them), read in one round trip
 * into types. */
static void
key_types(char (*keys)[SR_KEY_MAX], size_t n, char (*types)[16])
{
	for (size_t i = 0; i < n; i++) {
		const char *a[] = { "TYPE", keys[i] };

		sr_redis_append(&rds, 2, a, NULL);
	}
	for (size_t i = 0; i < n; i++) {
		redisReply *rep = sr_redis_reply(&rds);

		if (!rep)
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		snprintf(types[i], sizeof types[i], "%s", rep->type == REDIS_REPLY_STATUS ? rep->str : "none");
		freeReplyObject(rep);
	}
}

/* Rename key, of a type other than want, to KEY:damaged:MS (for a look).
 * The type is checked again where the key is moved (sweep_key.lua): one
 * repaired since, by hand or by another sweep, is left alone, and 0 is
 * returned. Else the finding o gets "moved_to", or "repaired":false when
 * Redis refused the move; 1 is returned. *now caches Redis's clock. */
static int
move_aside(const char *key, const char *want, json_t *o, int64_t *now)
{
	char aside[SR_KEY_MAX + 40];
	const char *a[] = { key, aside, want };
	redisReply *mv;

	if (*now < 0 && (*now = sr_redis_time_ms(&rds)) < 0)
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	snprintf(aside, sizeof aside, "%s:damaged:%lld", key, (long long)*now);
	sr_redis_append_script(&rds, SR_LUA_SWEEP_KEY, 2, 3, a, NULL);
	if (!(mv = sr_redis_reply(&rds)))
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	if (mv->type == REDIS_REPLY_NIL) {
		freeReplyObject(mv); /* (false) */
		return 0;
	}
	if (mv->type == REDIS_REPLY_ERROR) {
		sr_warn("moving %s aside failed: %s", key, mv->str);
		sweep_failed++;
		json_object_set_new(o, "repaired", json_false());
	} else
		json_object_set_new(o, "moved_to", json_string(aside));
	freeReplyObject(mv);
	return 1;
}

/* Check the types of one account's keys; returns the findings repaired. */
static long
check_account_keys(const char *carrier)
{
	char keys[NACCOUNT_KEYS][SR_KEY_MAX], types[NACCOUNT_KEYS][16];
	long repaired = 0;
	int64_t now = -1;

	for (size_t i = 0; i < NACCOUNT_KEYS; i++)
		sr_key_account(keys[i], cfg.prefix, carrier, account_keys[i].name);
	key_types(keys, NACCOUNT_KEYS, types);
	for (size_t i = 0; i < NACCOUNT_KEYS; i++) {
		json_t *o;

		if (!strcmp(types[i], "none") || !strcmp(types[i], account_keys[i].type))
			continue;
		o = json_pack("{ss ss ss ss ss}", "finding", "wrong_type", "key", keys[i], "type", types[i],
		    "want", account_keys[i].type, "carrier", carrier);
		if (!account_keys[i].aside) {
			json_object_set_new(o, "repaired", json_false());
			keys_left++;
		} else if (!move_aside(keys[i], account_keys[i].type, o, &now)) {
			json_decref(o); /* repaired meanwhile: nothing to report */
			continue;
		} else if (json_object_get(o, "moved_to"))
			repaired++;
		sr_emit(o);
		fflush(stdout);
	}
	return repaired;
}

/* The cards whose commands wait in the wait bucket key (of HEAD). */
static void
collect_waiting(struct sweep *w, const char *key, const char *head)
{
	const char *a[] = { "HKEYS", key };
	redisReply *rep = sr_redis_must(&rds, 2, a);

	for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
		char id[SR_KEY_MAX];

		snprintf(id, sizeof id, "%s%s", head, rep->element[i]->str);
		collect_id(id, w);
	}
	freeReplyObject(rep);
}

/* The account's idle or wait buckets (where cards with no command sleep,
 * and where a command waits packed for its claim: README "Redis layout")
 * of the wrong type: each fails every request and finish of its up to 100
 * cards. Moved aside: what it held is gone already; with no idle bucket its
 * cards start again as new ones (the next command of each is not held to
 * an interval counted from a call made before the damage), and with no wait
 * bucket the card pass removes the queue entries left without a command.
 * The cards waiting in the sound wait buckets are swept too (collected into
 * w): one whose queue entry was lost is found only there. Returns the
 * findings repaired. */
static long
check_buckets(struct sweep *w, struct buckets *b, const char *kind)
{
	static char keys[256][SR_KEY_MAX], types[256][16];
	long repaired = 0;
	int64_t now = -1;

	for (size_t s = 0; s < b->n; s += 256) {
		size_t n = b->n - s < 256 ? b->n - s : 256;

		for (size_t i = 0; i < n; i++) {
			char name[SR_KEY_MAX];

			snprintf(name, sizeof name, "%s:%s", kind, b->heads[s + i]);
			sr_key_account(keys[i], cfg.prefix, w->carrier, name);
		}
		key_types(keys, n, types);
		for (size_t i = 0; i < n; i++) {
			json_t *o;

			if (!strcmp(types[i], "none"))
				continue;
			if (!strcmp(types[i], "hash")) {
				if (b == &w->wait)
					collect_waiting(w, keys[i], b->heads[s + i]);
				continue;
			}
			o = json_pack("{ss ss ss ss ss}", "finding", "wrong_type", "key", keys[i], "type", types[i],
			    "want", "hash", "carrier", w->carrier);
			if (!move_aside(keys[i], "hash", o, &now)) {
				json_decref(o);
				continue;
			}
			if (json_object_get(o, "moved_to"))
				repaired++;
			sr_emit(o);
			fflush(stdout);
		}
	}
	free_strs(&b->heads, &b->n, &b->cap);
	return repaired;
}

/* The keys every account shares, and the device shards' queues: of the
 * wrong type, each stops a tool for every account (the switch: every
 * claim; the account list: the sweep itself; a shard queue: dev-eval).
 * Reported, never moved: the switch is an operator's, and the others
 * list what nothing else does. */
static void
check_global_keys(void)
{
	char keys[3 + SR_DEVICE_SHARDS][SR_KEY_MAX], types[3 + SR_DEVICE_SHARDS][16];
	const char *want[3 + SR_DEVICE_SHARDS];
	size_t n = 0;

	sr_key_switch(keys[n], cfg.prefix);
	want[n++] = "string";
	snprintf(keys[n], SR_KEY_MAX, "%s:config:stop_resume_queue_enabled", cfg.prefix);
	want[n++] = "string";
	sr_key_accounts(keys[n], cfg.prefix);
	want[n++] = "set";
	for (int d = 0; d < SR_DEVICE_SHARDS; d++) {
		sr_key_shard(keys[n], cfg.prefix, d, "queue");
		want[n++] = "zset";
	}
	key_types(keys, n, types);
	for (size_t i = 0; i < n; i++)
		if (strcmp(types[i], "none") && strcmp(types[i], want[i])) {
			sr_emit(json_pack("{ss ss ss ss sb}", "finding", "wrong_type", "key", keys[i], "type",
			    types[i], "want", want[i], "repaired", 0));
			fflush(stdout);
			keys_left++;
		}
}

/* Accounts named by the keys a scan finds, past "P:carrier:{": each once. */
struct names {
	char **v;
	size_t n, cap;
};

static void
collect_account(const char *rest, void *arg)
{
	struct names *a = arg;
	const char *end = strchr(rest, '}');
	char name[SR_KEY_MAX];

	if (!end || end == rest || (size_t)(end - rest) >= sizeof name)
		return;
	snprintf(name, sizeof name, "%.*s", (int)(end - rest), rest);
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->v[i], name))
			return;
	push_str(&a->v, &a->n, &a->cap, name);
}

/* An account with commands (in a queue or frozen) that P:accounts does not
 * list: no claim, stat or sweep finds them (its registration was refused,
 * or the list was lost). Listed again; returns the findings repaired. */
static long
list_lost_accounts(void)
{
	static const char *kinds[] = { "stop_resume*", "frozen" };
	struct names found = { 0 };
	char head[SR_KEY_MAX], pattern[SR_KEY_MAX], key[SR_KEY_MAX];
	redisReply *listed = accounts();
	long repaired = 0;

	if (listed->type != REDIS_REPLY_ARRAY) { /* the list damaged: check_global_keys said so */
		freeReplyObject(listed);
		return 0;
	}
	snprintf(head, sizeof head, "%s:carrier:{", cfg.prefix);
	for (size_t k = 0; k < 2; k++) {
		snprintf(pattern, sizeof pattern, "%s*}:%s", head, kinds[k]);
		sr_redis_scan_must(&rds, pattern, strlen(head), collect_account, &found);
	}
	for (size_t i = 0; i < found.n; i++) {
		const char *argv[] = { "SADD", sr_key_accounts(key, cfg.prefix), found.v[i] };
		size_t j = 0;
		redisReply *rep;

		while (j < listed->elements && strcmp(listed->element[j]->str, found.v[i]))
			j++;
		if (j < listed->elements)
			continue;
		if (!(rep = sr_redis_cmd(&rds, 3, argv)))
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		if (rep->type == REDIS_REPLY_ERROR) {
			sr_warn("account '%s' not listed: %s", found.v[i], rep->str);
			sweep_failed++;
		} else {
			sr_emit(json_pack("{ss ss sb}", "finding", "unlisted_account", "carrier", found.v[i],
			    "repaired", 1));
			fflush(stdout);
			repaired++;
		}
		freeReplyObject(rep);
	}
	free_strs(&found.v, &found.n, &found.cap);
	freeReplyObject(listed);
	return repaired;
}

static int
do_sweep(void)
{
	static const char *qs[] = { "stop_resume:high", "stop_resume", "stop_resume:bulk", "frozen",
		"confirming" };
	redisReply *acc;
	long total = 0;

	check_global_keys();
	total += list_lost_accounts();
	acc = accounts();

	for (size_t a = 0; acc->type == REDIS_REPLY_ARRAY && a < acc->elements; a++) {
		struct sweep w = { .carrier = acc->element[a]->str };
		char pattern[SR_KEY_MAX], prefix[SR_KEY_MAX];

		/* Its keys first: the card pass rebuilds what is moved aside. */
		total += check_account_keys(w.carrier);
		/* Every command hash and idle bucket of the account (one walk of
		 * the keyspace), and every queue member. */
		sr_key_account(prefix, cfg.prefix, w.carrier, "");
		snprintf(pattern, sizeof pattern, "%s*", prefix);
		sr_redis_scan_must(&rds, pattern, strlen(prefix), collect_key, &w);
		total += check_buckets(&w, &w.idle, "idle");
		total += check_buckets(&w, &w.wait, "wait");
		for (int q = 0; q < 5; q++) {
			char qkey[SR_KEY_MAX];
			const char *z[] = { q < 4 ? "ZRANGE" : "SMEMBERS",
				sr_key_account(qkey, cfg.prefix, w.carrier, qs[q]), "0", "-1" };
			redisReply *rep = sr_redis_must(&rds, q < 4 ? 4 : 2, z);

			for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++)
				collect_id(rep->element[i]->str, &w);
			freeReplyObject(rep);
		}
		sweep_ids(&w, 0, 0);
		total += w.findings;
	}
	freeReplyObject(acc);
	for (int s = 0; s < SR_DEVICE_SHARDS; s++) {
		struct sweep w = { .carrier = NULL };
		char pattern[SR_KEY_MAX], prefix[SR_KEY_MAX];

		snprintf(prefix, sizeof prefix, "%s:device_eval:{d%d}:dev:", cfg.prefix, s);
		snprintf(pattern, sizeof pattern, "%s*", prefix);
		sr_redis_scan_must(&rds, pattern, strlen(prefix), collect_id, &w);
		sweep_ids(&w, 1, s);
		total += w.findings;
	}
	/* The run's line in the log: warning when it found something. */
	sr_log_head(total || keys_left || sweep_failed ? SR_LOG_WARNING : SR_LOG_NOTICE);
	fprintf(stderr, "%s: sweep: %ld finding%s repaired", sr_prog, total, total == 1 ? "" : "s");
	if (keys_left)
		fprintf(stderr, ", %ld damaged key%s left for you (wrong_type, \"repaired\":false)", keys_left,
		    keys_left == 1 ? "" : "s");
	if (sweep_failed)
		fprintf(stderr, ", %ld not swept (Redis refused: see above)", sweep_failed);
	fputc('\n', stderr);
	/* Damage, repaired or not, is news: exit 1 makes cron mail it. */
	return sweep_failed ? SR_EX_BACKEND : total || keys_left ? SR_EX_REJECTED : SR_EX_OK;
}


/* Retention by time: entries older than SRQ_AUDIT_DAYS leave every
 * account's audit stream (a stream id is its time). Returns
 * SR_EX_BACKEND when Redis refused a trim (said on stderr), else 0. */
static int
trim_by_age(void)
{
	redisReply *acc = accounts();
	int64_t now = sr_redis_time_ms(&rds);
	char minid[32];
	int status = SR_EX_OK;

	if (now < 0)
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	snprintf(minid, sizeof minid, "%lld", (long long)(now - cfg.audit_days * 86400000LL));
	for (size_t a = 0; acc->type == REDIS_REPLY_ARRAY && a < acc->elements; a++) {
		char key[SR_KEY_MAX];
		const char *argv[] = { "XTRIM", sr_key_account(key, cfg.prefix, acc->element[a]->str, "audit"),
			"MINID", minid };
		redisReply *rep = sr_redis_cmd(&rds, 4, argv);

		if (!rep)
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		if (rep->type == REDIS_REPLY_ERROR) {
			sr_warn("trimming %s failed: %s", key, rep->str);
			status = SR_EX_BACKEND;
		}
		freeReplyObject(rep);
	}
	freeReplyObject(acc);
	return status;
}

int
main(int argc, char *argv[])
{
	enum { O_GH = 1, O_GN, O_GB, O_GD };
	static const struct option longopts[] = {
		SR_COMMON_LONGOPTS,
		{ "grace-high", required_argument, NULL, O_GH },
		{ "grace-normal", required_argument, NULL, O_GN },
		{ "grace-bulk", required_argument, NULL, O_GB },
		{ "grace-device", required_argument, NULL, O_GD },
		{ NULL, 0, NULL, 0 },
	};
	int c, status;

	sr_prog = "sr-sweep";
	sr_log_stamp = 1; /* it runs unattended: its stderr is a log */
	sr_config_init(&cfg);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_GH: case O_GN: case O_GB: case O_GD: {
			long v = sr_num(c == O_GH ? "--grace-high" : c == O_GN ? "--grace-normal" :
			    c == O_GB ? "--grace-bulk" : "--grace-device", optarg, 0, 7L * 86400000);
			*(c == O_GH ? &grace_high : c == O_GN ? &grace_normal : c == O_GB ? &grace_bulk :
			    &grace_device) = v;
			break;
		}
		default:
			if (!sr_config_option(&cfg, c, optarg, usage))
				sr_usage(SR_EX_USAGE, usage);
		}
	}
	sr_no_operands(argc, argv, usage);
	sr_redis_open(&rds, &cfg);
	status = sr_worst(do_sweep(), trim_by_age());
	sr_redis_close(&rds);
	return sr_finish(status);
}
