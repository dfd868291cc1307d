/* stat/prom.c - sr-stat --prom: the records as Prometheus text (metrics
 * srq_*, label account), for node_exporter's textfile collector. */
#include <string.h>

#include "stat.h"

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
void
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
