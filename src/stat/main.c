/* sr-stat - queue and health snapshot: JSONL, Prometheus text, or a table.
 *
 * One record per account and a total ("carrier":"*"; JSON and table only). Every figure comes
 * from counters the Lua scripts keep atomically with the transitions (a hash
 * per account per minute, kept 2 hours) and from the queues' own sizes:
 * nothing scans the keyspace, and the cost does not grow with the number of
 * commands ever processed.
 *
 * Thresholds worth paging on (docs/operations.md, Metrics and thresholds): retry_amplification > 1.5,
 * version_conflict_rate > 0.10, frozen > 0, oldest_due_s growing, flapping > 0.
 *
 * This file reads the options and writes the snapshot; the figures are
 * read in snapshot.c, written by prom.c (--prom) or table.c (--table), and
 * watch.c redraws the table (--watch).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stat.h"

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

struct sr_config cfg;
struct sr_redis rds;
int status = SR_EX_OK; /* SR_EX_BACKEND once an alert could not be written */
int unread; /* figures Redis refused to give: srq_up 0, exit 3 */

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
