/* stat/snapshot.c - sr-stat's figures: one record per account (stat.lua's
 * counters and queue sizes, with the rates derived from them), the
 * devices' queue, and the total; and, with --raise-alerts, the account
 * alerts raised or resolved from them. */
#include <stdlib.h>
#include <string.h>

#include "stat.h"

/* Raise (once per cause, until resolved) or resolve an account-level alert:
 * one script (share/lua/alert_account.lua), so a crash never leaves a cause
 * marked open without its alert. */
static void
account_alert(const char *carrier, const char *kind, int over, double value, double threshold)
{
	char keys[SR_ALERT_ACCOUNT_KEYS][SR_KEY_MAX], cause[96], v[32], th[32];
	const char *argv[SR_ALERT_ACCOUNT_KEYS + SR_ALERT_ACCOUNT_ARGC + 4];
	const char **a = argv + SR_ALERT_ACCOUNT_KEYS, **args = a + SR_ALERT_ACCOUNT_ARGV_ARGS;
	redisReply *rep;
	int n;

	snprintf(cause, sizeof cause, "%s:%s", kind, carrier);
	snprintf(v, sizeof v, "%.3f", value);
	snprintf(th, sizeof th, "%.2f", threshold);
	n = sr_keys_account(keys, argv, cfg.prefix, carrier, sr_lua_alert_account_keys);
	a[SR_ALERT_ACCOUNT_ARGV_OPERATION] = over ? "raise" : "resolve";
	a[SR_ALERT_ACCOUNT_ARGV_ACCOUNT] = carrier;
	/* raise's own: the cause, its kind, the value and the threshold;
	 * resolve's: the cause */
	args[0] = cause;
	args[1] = kind;
	args[2] = v;
	args[3] = th;
	n += SR_ALERT_ACCOUNT_ARGC + (over ? 4 : 1);
	if (!over) {
		/* Nothing to resolve is no write: sr-stat also runs on a replica. */
		const char *h[] = { "HEXISTS", argv[0], cause };

		if (!(rep = sr_redis_cmd(&rds, 3, h)))
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		over = rep->type != REDIS_REPLY_INTEGER || rep->integer != 0 ? 0 : -1;
		freeReplyObject(rep);
		if (over < 0)
			return;
	}
	sr_redis_append_script(&rds, SR_LUA_ALERT_ACCOUNT, SR_ALERT_ACCOUNT_KEYS, n, argv, NULL);
	if (!(rep = sr_redis_reply(&rds)))
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	if (rep->type == REDIS_REPLY_ERROR) {
		/* The metrics are still printed; the exit says the alert is not. */
		sr_warn("account '%s': %s the %s alert: %s", carrier, over ? "raising" : "resolving", kind,
		    rep->str);
		status = SR_EX_BACKEND;
	}
	freeReplyObject(rep);
}

/* The account-level alerts: retry amplification over 1.5 and version
 * conflict rate over 10%, judged on enough traffic to mean something. */
static void
account_alerts(json_t *o)
{
	const char *c = sr_jstr(o, "carrier");
	json_t *a = json_object_get(o, "retry_amplification"), *k = json_object_get(o, "version_conflict_rate");

	if (json_is_real(a))
		account_alert(c, "amplification", sr_jint(o, "commands", 0) >= 10 && json_real_value(a) > 1.5,
		    json_real_value(a), 1.5);
	if (json_is_real(k))
		account_alert(c, "conflicts", sr_jint(o, "finishes", 0) >= 10 && json_real_value(k) > 0.10,
		    json_real_value(k), 0.10);
}

static long long
num(json_t *o, const char *k)
{
	return sr_jint(o, k, 0);
}

/* Rates from the raw counters (also for the total). */
static void
derive(json_t *o)
{
	long long calls = num(o, "calls"), cmds = num(o, "commands"), fin = num(o, "finishes");
	json_t *out = json_object_get(o, "outcomes");
	long long good = sr_jint(out, "ok", 0) + sr_jint(out, "already", 0), done = 0;
	const char *k;
	json_t *v;

	json_object_foreach(out, k, v)
		if (strcmp(k, "superseded") && strcmp(k, "blocked"))
			done += json_integer_value(v);
	json_object_set_new(o, "success_rate", done ? json_real((double)good / done) : json_null());
	json_object_set_new(o, "retry_amplification", cmds ? json_real((double)calls / cmds) : json_null());
	json_object_set_new(o, "version_conflict_rate",
	    fin ? json_real((double)num(o, "conflicts") / fin) : json_null());
}

static json_t *
account_stat(const char *carrier, long window_s, redisReply *rep)
{
	json_t *o = json_object(), *outcomes = json_object(), *queries = json_object();
	json_t *totals = json_object(), *t_outcomes = json_object(), *t_queries = json_object();

	json_object_set_new(o, "carrier", json_string(carrier));
	json_object_set_new(o, "window_s", json_integer(window_s));
	for (size_t i = 0; i + 1 < rep->elements; i += 2) {
		const char *k = rep->element[i]->str;
		long long v = rep->element[i + 1]->integer;

		if (!strncmp(k, "total_", 6)) { /* since the start: the counters */
			k += 6;
			if (!strncmp(k, "out_", 4))
				json_object_set_new(t_outcomes, k + 4, json_integer(v));
			else if (!strncmp(k, "query_", 6))
				json_object_set_new(t_queries, k + 6, json_integer(v));
			else
				json_object_set_new(totals, !strcmp(k, "cmds") ? "commands" : k, json_integer(v));
		} else if (!strncmp(k, "out_", 4))
			json_object_set_new(outcomes, k + 4, json_integer(v));
		else if (!strncmp(k, "query_", 6))
			json_object_set_new(queries, k + 6, json_integer(v));
		else if (!strcmp(k, "oldest_due_ms"))
			json_object_set_new(o, "oldest_due_s", json_integer(v / 1000));
		else if (!strcmp(k, "cmds"))
			json_object_set_new(o, "commands", json_integer(v));
		else if (!strcmp(k, "qps_effective_milli"))
			json_object_set_new(o, "qps_effective", json_real(v / 1000.0));
		else if (!strcmp(k, "breaker"))
			json_object_set_new(o, "breaker", json_string(v == 1 ? "open" : v == 2 ? "half_open" :
			    "closed"));
		else if (!strcmp(k, "paused_until_ms"))
			json_object_set_new(o, "paused", json_boolean(v > 0)), json_object_set_new(o, k,
			    v > 0 ? json_integer(v) : json_null());
		else if (!strcmp(k, "breaker_since_ms") || !strcmp(k, "breaker_until_ms"))
			json_object_set_new(o, k, v > 0 ? json_integer(v) : json_null());
		else
			json_object_set_new(o, k, json_integer(v));
	}
	for (const char **k = (const char *[]){ "calls", "queries", "commands", "finishes", "conflicts", NULL }; *k; k++)
		if (!json_object_get(o, *k))
			json_object_set_new(o, *k, json_integer(0));
	json_object_set_new(o, "outcomes", outcomes);
	json_object_set_new(o, "query_outcomes", queries);
	derive(o);
	for (const char **k = (const char *[]){ "calls", "queries", "commands", "finishes", "conflicts", NULL }; *k; k++)
		if (!json_object_get(totals, *k))
			json_object_set_new(totals, *k, json_integer(0));
	json_object_set_new(totals, "outcomes", t_outcomes);
	json_object_set_new(totals, "query_outcomes", t_queries);
	json_object_set_new(o, "totals", totals);
	return o;
}

/* Add every integer member of a into t (recursively for objects). */
static void
add_into(json_t *t, json_t *a)
{
	const char *k;
	json_t *v;

	json_object_foreach(a, k, v) {
		json_t *cur = json_object_get(t, k);

		if (json_is_integer(v) && (strstr(k, "until_ms") || strstr(k, "since_ms")))
			continue; /* times, not amounts */
		if (json_is_integer(v) && strcmp(k, "window_s") && strcmp(k, "oldest_due_s"))
			json_object_set_new(t, k, json_integer(sr_jint(t, k, 0) + json_integer_value(v)));
		else if (!strcmp(k, "oldest_due_s"))
			json_object_set_new(t, k, json_integer(json_integer_value(v) > sr_jint(t, k, 0) ?
			    json_integer_value(v) : sr_jint(t, k, 0)));
		else if (json_is_object(v)) {
			if (!cur) {
				cur = json_object();
				json_object_set_new(t, k, cur);
			}
			add_into(cur, v);
		}
	}
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every account's figures (or those named), the devices' queue, and the
 * total, as records; now_ms: the Redis clock when it was read. */
json_t *
snapshot(const char **named, int nnamed, long window_s, int alerts, long long *now_ms)
{
	const char **carriers = named;
	int ncarriers = nnamed;
	json_t *records = json_array(), *total = json_object();
	char key[SR_KEY_MAX], minutes[24];
	redisReply *rep;
	long long dq = 0, doldest = 0;
	int dunread = 0;

	unread = 0;
	if (!nnamed) {
		const char *argv2[] = { "SMEMBERS", sr_key_accounts(key, cfg.prefix) };

		if (!(rep = sr_redis_cmd(&rds, 2, argv2)))
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		carriers = NULL;
		for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
			carriers = sr_realloc(carriers, (size_t)(ncarriers + 1) * sizeof *carriers);
			carriers[ncarriers++] = sr_strdup(rep->element[i]->str);
		}
		freeReplyObject(rep);
		/* In a stable order: a live view's rows stay where they are. */
		if (ncarriers > 1)
			qsort(carriers, (size_t)ncarriers, sizeof *carriers, by_name);
	}
	snprintf(minutes, sizeof minutes, "%ld", (window_s + 59) / 60);
	for (int k = 0; k < ncarriers; k++) {
		char keys[SR_STAT_KEYS][SR_KEY_MAX], stats[SR_KEY_MAX];
		const char *argv[SR_STAT_KEYS + SR_STAT_ARGC], **a = argv + SR_STAT_KEYS;

		sr_keys_account(keys, argv, cfg.prefix, carriers[k], sr_lua_stat_keys);
		a[SR_STAT_ARGV_STATS] = sr_key_account(stats, cfg.prefix, carriers[k], "stats:");
		a[SR_STAT_ARGV_WINDOW] = minutes;
		a[SR_STAT_ARGV_SETTINGS] = sr_account(&cfg, carriers[k])->settings;
		sr_redis_append_script(&rds, SR_LUA_STAT, SR_STAT_KEYS, SR_STAT_KEYS + SR_STAT_ARGC, argv, NULL);
	}
	for (int k = 0; k < ncarriers; k++) {
		if (!(rep = sr_redis_reply(&rds)))
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		if (rep->type != REDIS_REPLY_ARRAY) {
			/* One account's damaged key (a string where a set is) must
			 * not take every other account's metrics with it: this one
			 * is said and left out (no row of zeros), and the exit says
			 * the snapshot is not whole. */
			sr_warn("account '%s': not read: %s", carriers[k],
			    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
			unread = 1;
			status = SR_EX_BACKEND;
		} else
			json_array_append_new(records, account_stat(carriers[k], window_s, rep));
		freeReplyObject(rep);
	}
	if (!nnamed) {
		for (int k = 0; k < ncarriers; k++)
			free((char *)carriers[k]);
		free(carriers);
	}
	if (alerts) {
		size_t i;
		json_t *r;

		json_array_foreach(records, i, r)
			account_alerts(r);
	}
	/* The device queue, all shards. */
	if ((*now_ms = sr_redis_time_ms(&rds)) < 0)
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	for (int s = 0; s < SR_DEVICE_SHARDS; s++) {
		const char *z[] = { "ZCARD", sr_key_shard(key, cfg.prefix, s, "queue") };
		const char *first[] = { "ZRANGE", key, "0", "0", "WITHSCORES" };

		sr_redis_append(&rds, 2, z, NULL);
		sr_redis_append(&rds, 5, first, NULL);
	}
	for (int s = 0; s < SR_DEVICE_SHARDS; s++) {
		redisReply *first;

		if (!(rep = sr_redis_reply(&rds)) || !(first = sr_redis_reply(&rds)))
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		/* A shard's queue that cannot be read (a string where the sorted
		 * set is) is no empty queue: read as 0, the "dev-eval is not
		 * running" alert could never fire. The devices' figures are then
		 * unknown (null, left out of --prom), and it is said. */
		if (rep->type != REDIS_REPLY_INTEGER || first->type == REDIS_REPLY_ERROR) {
			sr_warn("devices' queue '%s': not read: %s", sr_key_shard(key, cfg.prefix, s, "queue"),
			    rep->type == REDIS_REPLY_ERROR ? rep->str :
			    first->type == REDIS_REPLY_ERROR ? first->str : "unexpected reply");
			dunread = 1;
		} else
			dq += rep->integer;
		if (first->type == REDIS_REPLY_ARRAY && first->elements == 2) {
			long long age = *now_ms - atoll(first->element[1]->str);

			if (age / 1000 > doldest)
				doldest = age / 1000;
		}
		freeReplyObject(first);
		freeReplyObject(rep);
	}
	{
		size_t i;
		json_t *r;

		json_object_set_new(total, "carrier", json_string("*"));
		json_object_set_new(total, "window_s", json_integer(window_s));
		json_array_foreach(records, i, r)
			add_into(total, r);
		if (!json_object_get(total, "outcomes"))
			json_object_set_new(total, "outcomes", json_object());
		derive(total);
		if (dunread) {
			unread = 1;
			status = SR_EX_BACKEND;
		}
		json_object_set_new(total, "device_queue", dunread ? json_null() : json_integer(dq));
		json_object_set_new(total, "device_oldest_s", dunread ? json_null() : json_integer(doldest));
		json_array_append_new(records, total);
	}
	return records;
}
