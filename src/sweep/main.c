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
 *
 * This file runs the sweep and the trim: cards.c sweeps the cards and
 * devices, keys.c checks the keys' types. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

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

struct sr_config cfg;
struct sr_redis rds;
long sweep_failed;
long keys_left;

/* Every account's name, from P:accounts; an error reply when that key is
 * damaged (check_global_keys reports it, and the sweep goes on: the audit
 * trim, the devices). Redis lost: fatal. */
redisReply *
accounts(void)
{
	char key[SR_KEY_MAX];
	const char *a[] = { "SMEMBERS", sr_key_accounts(key, cfg.prefix) };
	redisReply *rep = sr_redis_cmd(&rds, 2, a);

	if (!rep)
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	return rep;
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
