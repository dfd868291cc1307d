/* keys.c - sr-sweep's key checks: the type of every key an account or the
 * deployment shares, and accounts with commands that the list lost. */
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

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
void
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
int
move_aside(const char *key, const char *want, json_t *o, int64_t *now)
{
	char aside[SR_KEY_MAX + 40];
	/* (the key and where it goes: found by a scan, not made from a name) */
	const char *a[SR_SWEEP_KEY_KEYS + SR_SWEEP_KEY_ARGC] = { key, aside };
	redisReply *mv;

	if (*now < 0 && (*now = sr_redis_time_ms(&rds)) < 0)
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	snprintf(aside, sizeof aside, "%s:damaged:%lld", key, (long long)*now);
	a[SR_SWEEP_KEY_KEYS + SR_SWEEP_KEY_ARGV_TYPE] = want;
	sr_redis_append_script(&rds, SR_LUA_SWEEP_KEY, SR_SWEEP_KEY_KEYS, SR_SWEEP_KEY_KEYS + SR_SWEEP_KEY_ARGC,
	    a, NULL);
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
long
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

/* The keys every account shares, and the device shards' queues: of the
 * wrong type, each stops a tool for every account (the switch: every
 * claim; the account list: the sweep itself; a shard queue: dev-eval).
 * Reported, never moved: the switch is an operator's, and the others
 * list what nothing else does. */
void
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
long
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
