/* sr-admin - operator commands: what the on-call engineer lives in.
 *
 *   show CARD, why CARD          read a card's state, and why it is (not) moving
 *   retry|freeze|drop CARD...    mutations ('-' reads card ids from stdin)
 *   limits ACCOUNT [qps=N] [running=N]
 *   switch on|off|show
 *   alerts [--all] [--type T] [--since TIME], alerts --ack ID|- | --carrier A
 *   audit CARD [--account A] | --account A [--since TIME]
 *   migrate                      an older release's layout into this one's
 *
 * Every mutation is one script per card (admin_card.lua; the card's account
 * keys share one hash tag) with its entry in the account's audit stream:
 * who (SUDO_USER, or the effective user) and why (--reason). Output is JSONL.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"

static const char usage[] =
"usage: sr-admin COMMAND [ARGS] [--reason TEXT] [--carrier ID] [--since TIME]\n"
"\n"
"Cards (output JSONL):\n"
"  show CARD            the command, version, claim and lease, last call, interval\n"
"                       left, failures, last error, confirming, frozen, facts, and the\n"
"                       last audit entries\n"
"  why CARD             one sentence (and fields) on why the card is or is not about to\n"
"                       be changed: interval, rate, backoff, confirming, frozen, claimed,\n"
"                       paused, breaker, superseded, or what the judgment says (and who\n"
"                       dropped its command); one that asks for a hand ends with the\n"
"                       command to run, whole (also in \"run\")\n"
"  retry CARD...        unfreeze, reset the failure counters, make due now\n"
"  retry --account A [--state S] [--error-class C] [--dry-run]\n"
"                       every command of A in state S (frozen) whose last error is of\n"
"                       class C (5xx, 4xx, none: no answer, or a status like 503); a\n"
"                       count first, then one atomic retry each (--dry-run: list only)\n"
"  freeze CARD...       take the command out of the queues until retried\n"
"  drop CARD...         cancel the command (its version is bumped)\n"
"                       (CARD '-' reads card ids, or JSON lines with \"card\", from stdin;\n"
"                       a line whose \"carrier\" is not the card's account is refused:\n"
"                       a \"rejected\" record, the card left alone, exit 1)\n"
"  list ACCOUNT [--state S] [--reason R] [--error-class C] [--limit N]\n"
"                       the account's commands and where each stands (frozen, claimed,\n"
"                       paused: waiting for their account's pause to end, confirming,\n"
"                       due, backoff, scheduled), read only: no lease taken\n"
"Accounts:\n"
"  limits ACCOUNT [qps=N] [running=N] [burst=N]\n"
"                       show or set an account's limits (each at least 1), with its\n"
"                       effective rate (lowered while the carrier refuses calls for\n"
"                       rate), pause and breaker\n"
"  pause ACCOUNT [--until TIME]   no call to the account (queued commands stay, untouched,\n"
"                       nothing is called, not even by the direct path) until resumed, or\n"
"                       until TIME (30m, 2h, 2026-12-01T10:00Z, 2026-12-01 18:00, epoch ms)\n"
"  resume ACCOUNT       end a pause\n"
"  breaker ACCOUNT [open|close]   show, open by hand (no call, no probe) or close\n"
"  profile ACCOUNT      the account's carrier profile, resolved, secrets redacted, and\n"
"                       checked (secrets readable, every request builds); exit 1 if not,\n"
"                       2 if SRQ_LEASE_MS is not 1000 more than its calls' timeout\n"
"  profile ACCOUNT --test FILE\n"
"                       replay recorded answers (JSONL: kind change|query|token, http,\n"
"                       body, card, the expected outcome, a query's observed) through\n"
"                       the account's profile: one line per case (expected, read,\n"
"                       pass), then a summary; exit 1 if one does not pass, 2 if a\n"
"                       line is bad (named by its number)\n"
"  profile ACCOUNT --probe CARD\n"
"                       one live status query (never a change) for CARD, built, with\n"
"                       its token and signature, as any call: how srq read it (http,\n"
"                       verdict, observed, the carrier's state, the card it named),\n"
"                       secrets redacted; exit 1 if not read as a state\n"
"Everything else:\n"
"  config               every setting, its value (secrets redacted) and where it came\n"
"                       from: a flag, the environment, the config file (SRQ_CONFIG, or\n"
"                       /etc/srq/srq.conf; NAME = value lines), or the default; a\n"
"                       secret's state (\"secret\": set, not set, readable, missing:,\n"
"                       unreadable:), never its value, the file not read; exit 2\n"
"                       if sr-claim and sr-exec would refuse them (SRQ_LEASE_MS not\n"
"                       1000 more than a call's timeout)\n"
"  switch on|off|show   the global switch stop_resume_queue_enabled\n"
"  alerts [--all] [--type T] [--since TIME] [--carrier A]\n"
"                       the open alerts (with \"open\"; --all: the closed ones too;\n"
"                       --type: one kind: failures, frozen, permanent, state,\n"
"                       flapping, amplification, conflicts, breaker, carrier_mismatch,\n"
"                       clock_step)\n"
"  alerts --ack ID      acknowledge one (an ID is its account's: one open in several\n"
"                       accounts, raised in the same millisecond, needs --carrier;\n"
"                       without it, exit 2); --ack - reads the IDs from stdin, one a\n"
"                       line (or alerts' lines: \"id\", \"carrier\"), exit 1 if one\n"
"                       is not open\n"
"  alerts --ack --carrier A [--type T]\n"
"                       acknowledge every open alert of A (of kind T); a bulk ack\n"
"                       says on stderr how many it acknowledged\n"
"  audit CARD | --account A [--since TIME]  audit entries, oldest first: the card's\n"
"                       (in its account, or A's with --account), or the account's\n"
"  migrate              after an upgrade from 0.1 (every 0.1 tool stopped): renames\n"
"                       the long fields of every facts hash to the short ones (\"status\"\n"
"                       to \"st\"), and puts the hashes of cards with no command to sleep\n"
"                       in their idle buckets; safe beside this release's pipeline and\n"
"                       to run again; a record of counts for each\n"
"  (the inspection sweep is its own tool: sr-sweep)\n"
"\n"
"Options:\n"
"  --reason TEXT   why (recorded with every change, with who: SUDO_USER, or the user\n"
"                  running it)\n"
"  --carrier ID    the card's account, when the asset mirror does not know it\n"
"  --since TIME    only entries from then on: 10m, 2h, 1d (ago), yesterday,\n"
"                  2026-12-01T10:00Z, 2026-12-01T18:00+08:00, or epoch ms; a time\n"
"                  without a zone (2026-12-01 18:00, today) is the local zone's (TZ),\n"
"                  said on stderr; one the zone skips or has twice (daylight saving)\n"
"                  is refused (exit 2)\n"
"  --until TIME    (pause) when the pause ends by itself (the same forms; 30m: ahead)\n"
"  --test FILE, --probe CARD  (profile, one of them; Redis is not needed)\n"
"  --ack ID|-      (alerts) acknowledge alert ID, or those whose IDs come on stdin;\n"
"                  with no ID, every open alert of --carrier A (of --type T)\n"
"  --all, --type T (alerts) the closed alerts too; alerts of one kind only\n"
"  --force         (limits, pause, breaker open) change an account no request ever\n"
"                  named (refused otherwise: most likely a typo); it is known from\n"
"                  then on (sr-stat, limits, alerts)\n"
"  --table         aligned columns for people instead of JSONL\n"
"  --utc, --local  (--table) its times in UTC (the default) or in the local zone\n"
"                  (TZ), with its offset; JSONL always gives UTC\n"
"  --dry-run, --state, --error-class, --account, --limit: only for the commands whose\n"
"                  line above shows them (retry CARD, freeze, drop take none of them);\n"
"                  elsewhere refused (exit 2, nothing done), never ignored\n"
"  --redis URL, --prefix P, -h/--help, --version\n"
"Environment: SRQ_PROFILES (carrier profiles), SRQ_MIN_INTERVAL_MS, SRQ_QPS..., TZ (the\n"
"  zone of a time given without one)\n"
"Exit: 0 done (a change says \"changed\":true; one to what already is changes nothing,\n"
"  is not audited and says \"changed\":false), 1 some cards not found (no command,\n"
"  state or facts in the account), a card line naming another account, an account no\n"
"  request ever named (a typo?), a change refused, or a profile that does not check\n"
"  out, 2 usage, 3 Redis unavailable. A reader that stops reading (| head) is no\n"
"  failure.\n"
"Examples:\n"
"  sr-admin why 89860012345678901234\n"
"  sr-admin pause c17 --until 2h --reason 'carrier maintenance'\n"
"  sr-admin limits c17 qps=5 --reason 'carrier asked'\n"
"  # retry every frozen card of account c17\n"
"  redis-cli ZRANGE 'polling:carrier:{c17}:frozen' 0 -1 | sr-admin retry - --reason 'gateway fixed'\n"
"  sr-admin alerts --type failures --carrier c17\n"
"  sr-admin alerts --ack --carrier c17 --type failures --reason 'gateway fixed'\n";

struct sr_config cfg;
struct sr_redis rds;
const char *reason = "", *who;
const char *until_opt;
int force_opt;
const char *carrier_opt;
long long since;
const char *account_opt;
static const char *since_opt;

/* The command table: each command's name, what runs it (with its own
 * arguments), how many arguments it takes, and its usage line, which its
 * usage errors print. A new command is one row here and one handler. */
static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	int min_args, max_args; /* checked before Redis is asked anything (-1: any) */
	const char *usage;
} commands[] = {
	{ "show", admin_show, 1, -1, "show CARD... | -" },
	{ "why", admin_why, 1, -1, "why CARD... | -" },
	{ "list", admin_list, 1, 1, "list ACCOUNT [--state frozen|claimed|paused|confirming|due|backoff|scheduled] "
	  "[--reason R] [--error-class 5xx|4xx|none|CODE] [--limit N] [--table]" },
	{ "retry", admin_retry, 0, -1, "retry CARD... | - --reason TEXT, or retry --account A [--state S] "
	  "[--error-class C] [--dry-run] --reason TEXT" },
	{ "freeze", admin_freeze, 1, -1, "freeze CARD... | - --reason TEXT" },
	{ "drop", admin_drop, 1, -1, "drop CARD... | - --reason TEXT" },
	{ "limits", admin_limits, 1, 4, "limits ACCOUNT [qps=N] [running=N] [burst=N] [--reason TEXT]" },
	{ "pause", admin_pause, 1, 1, "pause ACCOUNT [--until TIME] --reason TEXT" },
	{ "resume", admin_resume, 1, 1, "resume ACCOUNT --reason TEXT" },
	{ "breaker", admin_breaker, 1, 2, "breaker ACCOUNT [open|close] [--reason TEXT]" },
	{ "profile", admin_profile, 1, 1, "profile ACCOUNT [--test FILE | --probe CARD]" },
	{ "config", admin_config, 0, 0, "config" },
	{ "switch", admin_switch, 1, 1, "switch on|off|show [--reason TEXT]" },
	{ "alerts", admin_alerts, 0, 0, "alerts [--all] [--type T] [--since TIME] [--carrier A], or alerts "
	  "--ack ID|- [--carrier A] --reason TEXT, or alerts --ack --carrier A [--type T] --reason TEXT" },
	{ "audit", admin_audit, 0, 1, "audit CARD [--account A] | --account A [--since TIME]" },
	{ "migrate", admin_migrate, 0, 0, "migrate" },
};
static const struct command *running;

void
command_usage(void)
{
	sr_die(SR_EX_USAGE, "usage: sr-admin %s", running->usage);
}

static void
refuse_option(const char *option, int given, int taken, const char *takers)
{
	if (given && !taken)
		sr_die(SR_EX_USAGE, "%s: not an option of '%s' (only of %s): nothing done; usage: "
		    "sr-admin %s", option, running->name, takers, running->usage);
}

int
main(int argc, char *argv[])
{
	enum { O_REASON = 1, O_CARRIER, O_SINCE, O_ACK, O_ACCOUNT, O_TABLE,
		O_UNTIL, O_FORCE, O_STATE, O_ERROR_CLASS, O_LIMIT, O_DRY_RUN, O_TEST, O_PROBE, O_UTC, O_LOCAL,
		O_ALL, O_TYPE };
	static const struct option longopts[] = {
		SR_COMMON_LONGOPTS,
		{ "reason", required_argument, NULL, O_REASON },
		{ "carrier", required_argument, NULL, O_CARRIER },
		{ "since", required_argument, NULL, O_SINCE },
		{ "ack", required_argument, NULL, O_ACK }, /* its value may be left out */
		{ "account", required_argument, NULL, O_ACCOUNT },
		{ "table", no_argument, NULL, O_TABLE },
		{ "until", required_argument, NULL, O_UNTIL },
		{ "force", no_argument, NULL, O_FORCE },
		{ "state", required_argument, NULL, O_STATE },
		{ "error-class", required_argument, NULL, O_ERROR_CLASS },
		{ "limit", required_argument, NULL, O_LIMIT },
		{ "dry-run", no_argument, NULL, O_DRY_RUN },
		{ "test", required_argument, NULL, O_TEST },
		{ "probe", required_argument, NULL, O_PROBE },
		{ "utc", no_argument, NULL, O_UTC },
		{ "local", no_argument, NULL, O_LOCAL },
		{ "all", no_argument, NULL, O_ALL },
		{ "type", required_argument, NULL, O_TYPE },
		{ NULL, 0, NULL, 0 },
	};
	const char *sub;
	int c, status = SR_EX_OK, limit_opt = 0, table = 0, utc = 0, local = 0;

	sr_prog = "sr-admin";
	sr_config_init(&cfg);
	sr_reader_may_leave(); /* "sr-admin audit ... | head -1" */
	sr_optional_value(argc, argv, "--ack"); /* --ack --carrier A: every open one */
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_REASON:
			if (!sr_utf8_valid(optarg))
				sr_die(SR_EX_USAGE, "--reason: not UTF-8 text");
			reason = optarg;
			break;
		case O_CARRIER:
			if (!sr_valid_id(optarg))
				sr_die(SR_EX_USAGE, "--carrier: '%s' must match [A-Za-z0-9_.-]{1,64}", optarg);
			carrier_opt = optarg;
			break;
		case O_SINCE:
			since_opt = optarg; /* read on the Redis clock, once connected */
			break;
		case O_ACK: ack_opt = optarg; break;
		case O_ALL: all_opt = 1; break;
		case O_TYPE: type_opt = optarg; break;
		case O_TABLE: table = 1; break;
		case O_UTC: utc = 1; break;
		case O_LOCAL: local = 1; break;
		case O_ACCOUNT:
			if (!sr_valid_id(optarg))
				sr_die(SR_EX_USAGE, "--account: '%s' must match [A-Za-z0-9_.-]{1,64}", optarg);
			account_opt = optarg;
			break;
		case O_UNTIL: until_opt = optarg; break;
		case O_FORCE: force_opt = 1; break;
		case O_STATE: state_opt = optarg; break;
		case O_ERROR_CLASS: error_class_opt = optarg; break;
		case O_LIMIT:
			list_limit = sr_num("--limit", optarg, 1, 10000000);
			limit_opt = 1;
			break;
		case O_DRY_RUN: dry_run = 1; break;
		case O_TEST: test_opt = optarg; break;
		case O_PROBE:
			if (!sr_valid_id(optarg))
				sr_die(SR_EX_USAGE, "--probe: '%s' must match [A-Za-z0-9_.-]{1,64}", optarg);
			probe_opt = optarg;
			break;
		default:
			if (!sr_config_option(&cfg, c, optarg, usage))
				sr_usage(SR_EX_USAGE, usage);
		}
	}
	if (table)
		sr_table_mode();
	sr_people_zone(table, utc, local);
	/* GNU getopt permutes: options may also follow the command
	 * ("sr-admin retry X --reason Y"); what is left is the command and its
	 * arguments. */
	if (optind >= argc) {
		fprintf(stderr, "%s: no command given (show, why, retry, limits, pause, ...)\n", sr_prog);
		sr_usage(SR_EX_USAGE, usage);
	}
	sub = argv[optind++];
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(sub, commands[i].name))
			running = &commands[i];
	if (!running && !strcmp(sub, "sweep")) {
		fprintf(stderr, "%s: the sweep is its own tool now: sr-sweep (same options)\n", sr_prog);
		return SR_EX_USAGE;
	}
	if (!running) {
		fprintf(stderr, "%s: unknown command '%s'; the commands are:", sr_prog, sub);
		for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
			fprintf(stderr, " %s", commands[i].name);
		fputc('\n', stderr);
		return SR_EX_USAGE;
	}
	if (argc - optind < running->min_args ||
	    (running->max_args >= 0 && argc - optind > running->max_args))
		command_usage(); /* a usage error, before any Redis error */
	{
		/* An option is refused by a command that does not take it, never
		 * ignored: 'freeze CARD --dry-run' must not freeze the card, and
		 * 'retry CARD --account A' must not retry a card of another. */
		int bulk = running->run == admin_retry && optind == argc; /* retry --account A */

		refuse_option("--dry-run", dry_run, bulk && account_opt, "retry --account A");
		refuse_option("--state", state_opt != NULL, bulk || running->run == admin_list,
		    "retry --account A and list");
		refuse_option("--error-class", error_class_opt != NULL, bulk || running->run == admin_list,
		    "retry --account A and list");
		refuse_option("--account", account_opt != NULL, bulk || running->run == admin_audit,
		    "retry --account A (no cards) and audit");
		/* A bulk retry retries every one: a cap would leave the rest
		 * frozen without a word. */
		refuse_option("--limit", limit_opt, running->run == admin_list, "list");
		refuse_option("--all", all_opt, running->run == admin_alerts, "alerts");
		refuse_option("--type", type_opt != NULL, running->run == admin_alerts, "alerts");
		refuse_option("--ack", ack_opt != NULL, running->run == admin_alerts, "alerts");
		refuse_option("--test", test_opt != NULL, running->run == admin_profile, "profile");
		refuse_option("--probe", probe_opt != NULL, running->run == admin_profile, "profile");
		if (test_opt && probe_opt)
			sr_die(SR_EX_USAGE, "--test and --probe: one at a time; usage: sr-admin %s",
			    running->usage);
	}
	who = sr_who();
	/* config needs no Redis: it says where Redis is; a profile is checked,
	 * tested and probed before the account is live, on a host that may
	 * reach no Redis. Their output is a table too with --table. */
	if (running->run == admin_config || running->run == admin_profile) {
		status = running->run(argc - optind, argv + optind);
		sr_table_flush();
		return sr_finish(status);
	}
	sr_redis_open(&rds, &cfg);
	if (since_opt) {
		int64_t now = sr_redis_time_ms(&rds);

		if (now < 0)
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		since = sr_time_option("--since", since_opt, now, -1, "(yesterday, 2026-12-01T10:00Z, "
		    "2026-12-01 18:00 in TZ, epoch ms) nor a duration ago (10m, 2h, 1d)");
	}

	status = running->run(argc - optind, argv + optind);
	sr_table_flush();
	sr_redis_close(&rds);
	return sr_finish(status);
}
