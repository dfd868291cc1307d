/* sr-stat - queue and health snapshot: JSONL, Prometheus text, or a table.
 *
 * One record per account and a total ("carrier":"*"; JSON and table only). Every figure comes
 * from counters the Lua scripts keep atomically with the transitions (a hash
 * per account per minute, kept 2 hours) and from the queues' own sizes:
 * nothing scans the keyspace, and the cost does not grow with the number of
 * commands ever processed.
 *
 * Thresholds worth paging on (see README): retry_amplification > 1.5,
 * version_conflict_rate > 0.10, frozen > 0, oldest_due_s growing, flapping > 0.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sr.h"

static const char usage[] =
"usage: sr-stat [--window DURATION] [--prom [--output FILE] | --table | --watch [S]]\n"
"               [--utc | --local] [--carrier ID]...\n"
"\n"
"A snapshot of every account (or --carrier) and a total (\"carrier\":\"*\"; not in --prom,\n"
"where sum() over the account label is the total):\n"
"queued, due, claimed, confirming, frozen, oldest_due_s, running, max_running,\n"
"qps, burst, qps_effective (lowered while the carrier refuses for rate), paused,\n"
"breaker (closed, open, half_open); over the window: calls, queries, commands (distinct commands called),\n"
"outcomes, success_rate, retry_amplification (calls / commands; page over 1.5),\n"
"version_conflict_rate (finishes that found a newer version; page over 0.10),\n"
"flapping (cards whose direction changed 3+ times in an hour), alerts_open;\n"
"totals: the same counters since the start (in --prom: srq_*_total counters);\n"
"and, in the total, device_queue and device_oldest_s.\n"
"It only reads, unless --raise-alerts.\n"
"\n"
"Options:\n"
"  --window D    10m (default), 90s, 2h: counters are per minute, kept 2 hours\n"
"  --prom        Prometheus text format (metrics srq_*, label account)\n"
"  --output F    write to F atomically (temp file + rename), for node_exporter's\n"
"                textfile collector\n"
"  --table       a table for people: each account's queue, rates (qps_eff: what srq\n"
"                calls at now, lowered while the carrier refuses for rate; qps: the\n"
"                limit), breaker (closed, open, half_open) and pause (until when)\n"
"  --watch [S]   the table again every S seconds (2), until interrupted (SIGINT or\n"
"                SIGTERM: exit 0); on a terminal each frame replaces the last, elsewhere\n"
"                the frames follow each other, with no escape codes\n"
"  --utc, --local  the table's times in UTC (the default) or in the local zone (TZ),\n"
"                with its offset; JSON keeps UTC\n"
"  --carrier ID  only this account (repeatable)\n"
"  --raise-alerts  also raise and resolve the account alerts (amplification over\n"
"                1.5, conflicts over 0.10, on 10+ commands in the window; raised once\n"
"                per cause into the alert stream, resolved when back under): the\n"
"                cron job's run does it, once a minute\n"
"  --redis URL, --prefix P, -h/--help, --version\n"
"Exit: 0 done, 1 a --carrier that never had a request, 2 usage, 3 Redis unavailable\n"
"  (or an alert could not be written, or an account's figures or the devices' queue\n"
"  could not be read: said on stderr and left out, null in JSON, the others are\n"
"  written, --prom's srq_up is 0). A reader that stops reading (| head) is no failure.\n"
"Examples (cron, every minute; the live view):\n"
"  sr-stat --raise-alerts --prom --output /var/lib/node_exporter/textfile/srq.prom\n"
"  sr-stat --watch 5 --local\n";

static struct sr_config cfg;
static struct sr_redis rds;
static int status = SR_EX_OK; /* SR_EX_BACKEND once an alert could not be written */
static int unread; /* figures Redis refused to give: srq_up 0, exit 3 */

/* A window of 60s to 2h: "90s", "10m" (or "10"), "2h"; -1 otherwise. */
static long
parse_window(const char *s)
{
	char num[16];
	size_t n = strspn(s, "0123456789");
	long v, unit = 60;

	if (n == 0 || n >= sizeof num || (s[n] && s[n + 1]))
		return -1;
	if (s[n] == 's')
		unit = 1;
	else if (s[n] == 'h')
		unit = 3600;
	else if (s[n] && s[n] != 'm')
		return -1;
	memcpy(num, s, n);
	num[n] = '\0';
	if ((v = sr_parse_long(num)) < 1 || v > 7200 / unit)
		return -1;
	return v * unit;
}

/* Raise (once per cause, until resolved) or resolve an account-level alert:
 * one script (share/lua/alert_account.lua), so a crash never leaves a cause
 * marked open without its alert. */
static void
account_alert(const char *carrier, const char *kind, int over, double value, double threshold)
{
	char open[SR_KEY_MAX], stream[SR_KEY_MAX], cause[96], v[32], th[32];
	char audit[SR_KEY_MAX];
	redisReply *rep;
	const char *argv[9];
	int n = 0;

	snprintf(cause, sizeof cause, "%s:%s", kind, carrier);
	snprintf(v, sizeof v, "%.3f", value);
	snprintf(th, sizeof th, "%.2f", threshold);
	argv[n++] = sr_key_account(open, cfg.prefix, carrier, "alerts_open");
	argv[n++] = sr_key_account(stream, cfg.prefix, carrier, "alerts");
	argv[n++] = sr_key_account(audit, cfg.prefix, carrier, "audit");
	argv[n++] = over ? "raise" : "resolve";
	argv[n++] = carrier;
	argv[n++] = cause;
	argv[n++] = kind;
	argv[n++] = v;
	argv[n++] = th;
	if (!over) {
		/* Nothing to resolve is no write: sr-stat also runs on a replica. */
		const char *h[] = { "HEXISTS", open, cause };

		if (!(rep = sr_redis_cmd(&rds, 3, h)))
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		over = rep->type != REDIS_REPLY_INTEGER || rep->integer != 0 ? 0 : -1;
		freeReplyObject(rep);
		if (over < 0)
			return;
	}
	sr_redis_append_script(&rds, SR_LUA_ALERT_ACCOUNT, 3, over ? n : 6, argv, NULL);
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

struct metric {
	const char *field, *name, *help;
};
static const struct metric metrics[] = {
	{ "queued", "srq_queued", "Commands in the account's queues (claimed included, frozen excluded)." },
	{ "due", "srq_due", "Commands due now." },
	{ "claimed", "srq_claimed", "Commands claimed by a live lease." },
	{ "confirming", "srq_confirming", "Commands whose last call had an unknown result, being confirmed (frozen excluded)." },
	{ "frozen", "srq_frozen", "Commands frozen after failures; they need an operator (sr-admin retry)." },
	{ "oldest_due_s", "srq_oldest_due_seconds", "Age of the oldest due command." },
	{ "running", "srq_running", "Claims in flight." },
	{ "max_running", "srq_max_running", "The account's max-running limit." },
	{ "qps", "srq_qps_limit", "The account's calls per second limit." },
	{ "qps_effective", "srq_qps_effective", "The rate srq calls the account at now: below the limit while the carrier refuses calls for rate (AIMD)." },
	{ "breaker", "srq_breaker_open", "1 while the account's breaker is open or half-open: its calls are held." },
	{ "paused", "srq_paused", "1 while the account is paused (sr-admin pause)." },
	{ "success_rate", "srq_success_ratio", "Calls that ended ok or already, of the calls with an outcome." },
	{ "retry_amplification", "srq_retry_amplification", "Calls per distinct command in the window (page over 1.5)." },
	{ "version_conflict_rate", "srq_version_conflict_ratio", "Version conflicts per finish in the window (page over 0.10)." },
	{ "flapping", "srq_flapping_cards", "Cards whose executed direction changed 3 or more times in an hour." },
	{ "alerts_open", "srq_alerts_open", "Alerts open (not acknowledged, not resolved)." },
};

/* The devices' queue is not an account's: from the total record, no label. */
static const struct metric device_metrics[] = {
	{ "device_queue", "srq_device_queue", "Devices waiting for evaluation." },
	{ "device_oldest_s", "srq_device_oldest_seconds", "Age of the oldest due device." },
};

/* Counters since the start (the record's "totals"): rate() them. */
static const struct metric counters[] = {
	{ "calls", "srq_calls_total", "State-change calls made." },
	{ "queries", "srq_queries_total", "Status queries made." },
	{ "commands", "srq_commands_total", "Distinct commands called (calls / commands is the retry amplification)." },
	{ "finishes", "srq_finishes_total", "Results applied." },
	{ "conflicts", "srq_version_conflicts_total", "Results that found a newer version." },
};

static void
prom_value(FILE *f, const char *name, const char *labels, json_t *v)
{
	char series[256];

	/* labels NULL: a series of no label (the devices' queue) */
	snprintf(series, sizeof series, labels ? "%s{%s}" : "%s", name, labels);
	if (json_is_boolean(v))
		fprintf(f, "%s %d\n", series, json_is_true(v));
	else if (json_is_string(v)) /* the breaker: closed, open, half_open */
		fprintf(f, "%s %d\n", series, strcmp(json_string_value(v), "closed") != 0);
	else if (json_is_integer(v))
		fprintf(f, "%s %lld\n", series, (long long)json_integer_value(v));
	else if (json_is_real(v))
		fprintf(f, "%s %.6g\n", series, json_real_value(v));
}

/* Per account only: the total record ("carrier":"*") is left out, so that
 * sum() over the account label is the total and nothing counts twice; but
 * the devices' queue, which is no account's, comes from it. The
 * srq_up / srq_last_success_timestamp_seconds pair lets an alert fire when
 * this file stops being refreshed (a dead cron job or exporter). */
static void
write_prom(FILE *f, json_t *records, long long now_ms)
{
	size_t i;
	json_t *r;

	fprintf(f, "# HELP srq_up 1: sr-stat read every account from Redis for this file; 0: some "
		   "figures could not be read (left out; sr-stat's stderr names them).\n"
		   "# TYPE srq_up gauge\nsrq_up %d\n"
		   "# HELP srq_last_success_timestamp_seconds When this file was written (Redis clock).\n"
		   "# TYPE srq_last_success_timestamp_seconds gauge\n"
		   "srq_last_success_timestamp_seconds %lld\n", !unread, now_ms / 1000);

	for (size_t m = 0; m < sizeof metrics / sizeof metrics[0]; m++) {
		int any = 0;

		json_array_foreach(records, i, r)
			any |= json_object_get(r, metrics[m].field) != NULL && strcmp(sr_jstr(r, "carrier"), "*");
		if (!any)
			continue;
		fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", metrics[m].name, metrics[m].help, metrics[m].name);
		json_array_foreach(records, i, r) {
			char labels[128];

			if (!strcmp(sr_jstr(r, "carrier"), "*"))
				continue;
			snprintf(labels, sizeof labels, "account=\"%s\"", sr_jstr(r, "carrier"));
			prom_value(f, metrics[m].name, labels, json_object_get(r, metrics[m].field));
		}
	}
	json_array_foreach(records, i, r) {
		if (strcmp(sr_jstr(r, "carrier"), "*"))
			continue;
		for (size_t m = 0; m < sizeof device_metrics / sizeof device_metrics[0]; m++)
			if (json_is_integer(json_object_get(r, device_metrics[m].field))) { /* null: not read */
				fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", device_metrics[m].name,
				    device_metrics[m].help, device_metrics[m].name);
				prom_value(f, device_metrics[m].name, NULL, json_object_get(r, device_metrics[m].field));
			}
	}
	for (size_t m = 0; m < sizeof counters / sizeof counters[0]; m++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", counters[m].name, counters[m].help,
		    counters[m].name);
		json_array_foreach(records, i, r) {
			char labels[128];

			if (!strcmp(sr_jstr(r, "carrier"), "*"))
				continue;
			snprintf(labels, sizeof labels, "account=\"%s\"", sr_jstr(r, "carrier"));
			prom_value(f, counters[m].name, labels,
			    json_object_get(json_object_get(r, "totals"), counters[m].field));
		}
	}
	for (int q = 0; q < 2; q++) {
		const char *name = q ? "srq_query_outcomes_total" : "srq_outcomes_total";

		fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", name, q ? "Status query outcomes." :
		    "Call outcomes (ok, already, retry, fail, unknown; superseded and blocked: no call).", name);
		json_array_foreach(records, i, r) {
			const char *k;
			json_t *v;

			if (!strcmp(sr_jstr(r, "carrier"), "*"))
				continue;
			json_object_foreach(json_object_get(json_object_get(r, "totals"),
			    q ? "query_outcomes" : "outcomes"), k, v) {
				char labels[160];

				snprintf(labels, sizeof labels, "account=\"%s\",outcome=\"%s\"", sr_jstr(r, "carrier"), k);
				prom_value(f, name, labels, v);
			}
		}
	}
}

/* A table cell of r's field k: an integer, a ratio, or text. */
static void
cell(char *buf, size_t n, json_t *r, const char *k, int ratio)
{
	json_t *v = json_object_get(r, k);

	if (json_is_real(v))
		snprintf(buf, n, ratio ? "%.2f" : "%.1f", json_real_value(v));
	else if (json_is_integer(v))
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v))
		snprintf(buf, n, "%s", json_string_value(v));
	else
		snprintf(buf, n, ratio ? "0.00" : "");
}

/* The table for people: an account that is paused or behind its breaker,
 * or called below its rate, says so beside its queue (it is held, not
 * stuck). Times in UTC, or with --local in the local zone. */
static void
write_table(FILE *f, json_t *records, long long now_ms)
{
	static const struct {
		const char *head, *field;
		int ratio, text; /* a ratio: two decimals; text: left-aligned */
	} cols[] = {
		{ "account", "carrier", 0, 1 }, { "queued", "queued", 0, 0 }, { "due", "due", 0, 0 },
		{ "claimed", "claimed", 0, 0 }, { "confirm", "confirming", 0, 0 }, { "frozen", "frozen", 0, 0 },
		{ "oldest_s", "oldest_due_s", 0, 0 }, { "calls", "calls", 0, 0 },
		{ "success", "success_rate", 1, 0 }, { "amplif", "retry_amplification", 1, 0 },
		{ "confl", "version_conflict_rate", 1, 0 }, { "alerts", "alerts_open", 0, 0 },
		{ "qps_eff", "qps_effective", 0, 0 }, { "qps", "qps", 0, 0 }, { "breaker", "breaker", 0, 1 },
		{ "paused", NULL, 0, 1 },
	};
	enum { NCOLS = sizeof cols / sizeof cols[0], W = 80 };
	size_t nrows = json_array_size(records), i;
	char (*cells)[NCOLS][W] = sr_malloc((nrows + 1) * sizeof *cells); /* the header, then each row */
	int width[NCOLS];
	json_t *r;

	for (int c = 0; c < NCOLS; c++) {
		snprintf(cells[0][c], W, "%s", cols[c].head);
		width[c] = (int)strlen(cols[c].head);
	}
	json_array_foreach(records, i, r) {
		long long until = sr_jint(r, "paused_until_ms", 0);

		for (int c = 0; c < NCOLS; c++) {
			char *b = cells[i + 1][c];

			if (cols[c].field)
				cell(b, W, r, cols[c].field, cols[c].ratio);
			else if (!strcmp(sr_jstr(r, "carrier"), "*")) /* the total: no account's state */
				b[0] = '\0';
			else if (!json_is_true(json_object_get(r, "paused")))
				snprintf(b, W, "no");
			else if (until >= SR_FOREVER_MS)
				snprintf(b, W, "until resumed");
			else
				snprintf(b, W, "until %s", sr_when(until, now_ms));
			if ((int)strlen(b) > width[c])
				width[c] = (int)strlen(b);
		}
	}
	for (size_t row = 0; row <= nrows; row++) {
		char line[NCOLS * (W + 1) + 1];
		size_t len = 0;

		for (int c = 0; c < NCOLS; c++)
			len += (size_t)snprintf(line + len, sizeof line - len, cols[c].text ? "%-*s " : "%*s ",
			    width[c], cells[row][c]);
		while (len > 0 && line[len - 1] == ' ') /* no trailing blanks */
			len--;
		fprintf(f, "%.*s\n", (int)len, line);
	}
	free(cells);
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every account's figures (or those named), the devices' queue, and the
 * total, as records; now_ms: the Redis clock when it was read. */
static json_t *
snapshot(const char **named, int nnamed, long window_s, int alerts, long long *now_ms)
{
	static const char *qs[] = { "stop_resume:high", "stop_resume", "stop_resume:bulk" };
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
		char keys[11][SR_KEY_MAX];
		const char *a[13];
		const char *names[] = { qs[0], qs[1], qs[2], "sr_running", "frozen", "confirming", "flapping",
			"alerts_open", "limits", "edge" };

		for (int i = 0; i < 10; i++)
			a[i] = sr_key_account(keys[i], cfg.prefix, carriers[k], names[i]);
		a[10] = sr_key_account(keys[10], cfg.prefix, carriers[k], "stats:");
		a[11] = minutes;
		a[12] = sr_account(&cfg, carriers[k])->settings;
		sr_redis_append_script(&rds, SR_LUA_STAT, 10, 13, a, NULL);
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

static volatile sig_atomic_t stopped; /* --watch: SIGINT or SIGTERM came */

static void
on_stop(int sig)
{
	(void)sig;
	stopped = 1;
}

/* --watch: the table again every interval_s, until SIGINT or SIGTERM (exit
 * 0), or until its reader goes away. On a terminal each frame replaces the
 * last (the screen cleared and the cursor homed, as watch(1) does); to a
 * pipe or a file the frames follow each other, a blank line apart, with no
 * escape code in them. */
static void
watch(const char **carriers, int ncarriers, long window_s, long interval_s)
{
	struct sigaction sa;
	int tty = isatty(STDOUT_FILENO);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop; /* no SA_RESTART: the wait between frames ends at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (long frame = 0; !stopped; frame++) {
		long long now_ms;
		json_t *records = snapshot(carriers, ncarriers, window_s, 0, &now_ms);
		char t[48];
		struct timespec wait = { interval_s, 0 };

		if (tty)
			fputs("\033[H\033[2J", stdout);
		else if (frame)
			putchar('\n');
		printf("sr-stat --watch %ld   %s (Redis clock)\n\n", interval_s, sr_iso_people(t, sizeof t, now_ms));
		write_table(stdout, records, now_ms);
		json_decref(records);
		if (sr_flush_view() < 0)
			return; /* sr_finish says why, unless the reader just left */
		while (!stopped && nanosleep(&wait, &wait) == -1 && errno == EINTR)
			;
	}
}

int
main(int argc, char *argv[])
{
	enum { O_WINDOW = 1, O_PROM, O_OUTPUT, O_TABLE, O_CARRIER, O_RAISE_ALERTS, O_NO_ALERTS, O_WATCH,
		O_UTC, O_LOCAL };
	static const struct option longopts[] = {
		SR_COMMON_LONGOPTS,
		{ "window", required_argument, NULL, O_WINDOW },
		{ "prom", no_argument, NULL, O_PROM },
		{ "output", required_argument, NULL, O_OUTPUT },
		{ "table", no_argument, NULL, O_TABLE },
		{ "carrier", required_argument, NULL, O_CARRIER },
		{ "raise-alerts", no_argument, NULL, O_RAISE_ALERTS },
		{ "no-alerts", no_argument, NULL, O_NO_ALERTS }, /* before 0.2: now the default */
		{ "watch", required_argument, NULL, O_WATCH }, /* its value may be left out */
		{ "utc", no_argument, NULL, O_UTC },
		{ "local", no_argument, NULL, O_LOCAL },
		{ NULL, 0, NULL, 0 },
	};
	const char **carriers = NULL, *output = NULL;
	int c, ncarriers = 0, prom = 0, table = 0, alerts = 0, utc = 0, local = 0;
	long window_s = 600, watch_s = 0;
	json_t *records;
	char key[SR_KEY_MAX];
	redisReply *rep;
	long long now_ms;
	FILE *f = stdout;
	char tmp[4096];

	sr_prog = "sr-stat";
	sr_log_stamp = 1; /* it runs unattended: its stderr is a log */
	sr_config_init(&cfg);
	sr_reader_may_leave(); /* "sr-stat | head -1" */
	sr_optional_value(argc, argv, "--watch");
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_WINDOW:
			if ((window_s = parse_window(optarg)) < 60)
				sr_die(SR_EX_USAGE, "--window: '%s' is not a duration up to 2h (90s, 10m, 2h)", optarg);
			break;
		case O_PROM: prom = 1; break;
		case O_OUTPUT: output = optarg; break;
		case O_TABLE: table = 1; break;
		case O_RAISE_ALERTS: alerts = 1; break;
		case O_NO_ALERTS: /* a crontab of an older release: still works */
			sr_warn("--no-alerts is the default now (sr-stat only reads); --raise-alerts raises them");
			break;
		case O_CARRIER:
			if (!sr_valid_id(optarg))
				sr_die(SR_EX_USAGE, "--carrier: '%s' must match [A-Za-z0-9_.-]{1,64}", optarg);
			carriers = sr_realloc(carriers, (size_t)(ncarriers + 1) * sizeof *carriers);
			carriers[ncarriers++] = sr_strdup(optarg);
			break;
		case O_WATCH:
			watch_s = *optarg ? sr_num("--watch", optarg, 1, 3600) : 2;
			break;
		case O_UTC: utc = 1; break;
		case O_LOCAL: local = 1; break;
		default:
			if (!sr_config_option(&cfg, c, optarg, usage))
				sr_usage(SR_EX_USAGE, usage);
		}
	}
	if (optind < argc || (prom && table)) {
		fprintf(stderr, "%s: %s\n", sr_prog, prom && table ? "--prom and --table exclude each other" :
		    "unexpected argument");
		sr_usage(SR_EX_USAGE, usage);
	}
	/* The live view is the table, for people: what writes metrics or
	 * alerts runs once, from cron. */
	if (watch_s && (prom || output || alerts))
		sr_die(SR_EX_USAGE, "--watch redraws the table for people: not with --prom, --output or "
		    "--raise-alerts");
	table |= watch_s > 0;
	sr_people_zone(table, utc, local);
	sr_redis_open(&rds, &cfg);
	if (!ncarriers) {
		const char *argv2[] = { "SCARD", sr_key_accounts(key, cfg.prefix) };

		if (!(rep = sr_redis_cmd(&rds, 2, argv2)))
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 0)
			sr_warn("no account has ever had a request under the prefix '%s' (is SRQ_PREFIX, or "
			    "the Redis database, the right one?)", cfg.prefix);
		freeReplyObject(rep);
	} else {
		/* A mistyped account would print a row of zeros: say so. */
		for (int k = 0; k < ncarriers; k++) {
			const char *m[] = { "SISMEMBER", sr_key_accounts(key, cfg.prefix), carriers[k] };

			if (!(rep = sr_redis_cmd(&rds, 3, m)))
				sr_die(SR_EX_BACKEND, "%s", rds.errstr);
			if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 0) {
				sr_warn("account '%s' has never had a request (is it spelt right?)", carriers[k]);
				status = sr_worst(status, SR_EX_REJECTED);
			}
			freeReplyObject(rep);
		}
	}
	if (watch_s) {
		watch(carriers, ncarriers, window_s, watch_s);
		goto done;
	}
	records = snapshot(carriers, ncarriers, window_s, alerts, &now_ms);
	if (output) {
		snprintf(tmp, sizeof tmp, "%s.tmp.%ld", output, (long)getpid());
		if (!(f = fopen(tmp, "w")))
			sr_die(SR_EX_USAGE, "--output: cannot write '%s':", tmp);
	}
	if (!prom && !table) /* (the table says its times itself) */
		sr_add_times(records, 0);
	if (prom)
		write_prom(f, records, now_ms);
	else if (table)
		write_table(f, records, now_ms);
	else {
		size_t i;
		json_t *r;

		json_array_foreach(records, i, r) {
			char *s = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));

			if (!s)
				sr_die(SR_EX_BACKEND, "out of memory writing a record");
			fprintf(f, "%s\n", s);
			free(s);
		}
	}
	if (output) {
		/* Readers (node_exporter) never see a half-written file. */
		if (fclose(f) != 0 || rename(tmp, output) != 0) {
			unlink(tmp);
			sr_die(SR_EX_BACKEND, "--output: cannot write '%s':", output);
		}
	}
	json_decref(records);
done:
	for (int k = 0; k < ncarriers; k++)
		free((char *)carriers[k]);
	free(carriers);
	sr_redis_close(&rds);
	return sr_finish(status);
}
