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
 *
 * This file reads the options and runs the command through the command
 * table (commands.c: how to add a command); the commands are in the files
 * admin.h lists.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"

struct sr_config cfg;
struct sr_redis rds;
const char *reason = "", *who;
const char *until_opt;
int force_opt;
const char *carrier_opt;
long long since;
const char *account_opt;
static const char *since_opt;
const struct admin_command *running;

void
command_usage(void)
{
	sr_die(SR_EX_USAGE, "usage: sr-admin %s", running->usage);
}

/* The commands that take option i (bit 1 << i), as a refusal names them: the
 * bare forms first ("retry --account A", said to take no cards where the
 * option is the one that makes the form), then the commands, in the
 * table's order; joined by ", " and " and ". */
static void
takers(int i, char *buf, size_t size)
{
	unsigned bit = 1u << i;
	const char *name[64], *note[64];
	size_t n = 0, len = 0;

	for (int bare = 1; bare >= 0; bare--)
		for (const struct admin_command *c = admin_commands; c->name && n < 64; c++) {
			/* (a bare form's only where the command's other form
			 * does not take it: audit takes --account with a card) */
			if (bare && ((c->bare_opt | c->bare_opts) & bit) && !(c->opts & bit)) {
				name[n] = c->bare;
				note[n++] = c->bare_opt & bit ? " (no cards)" : "";
			} else if (!bare && (c->opts & bit)) {
				name[n] = c->name;
				note[n++] = "";
			}
		}
	buf[0] = '\0';
	for (size_t k = 0; k < n && len < size; k++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s%s", k == 0 ? "" : k + 1 == n ? " and " : ", ",
		    name[k], note[k]);
}

/* An option is refused by a command that does not take it, never ignored:
 * 'freeze CARD --dry-run' must not freeze the card, and 'retry CARD
 * --account A' must not retry a card of another. given: the OPT_* bits of
 * the options given; nargs: the command's arguments. */
static void
refuse_options(unsigned given, int nargs)
{
	int bare = nargs == 0 && (given & running->bare_opt);
	unsigned taken = running->opts | (bare ? running->bare_opt | running->bare_opts : 0);
	char who_takes[512];

	for (int i = 0; admin_option_names[i]; i++)
		if (given & ~taken & (1u << i)) {
			takers(i, who_takes, sizeof who_takes);
			sr_die(SR_EX_USAGE, "%s: not an option of '%s' (only of %s): nothing done; usage: "
			    "sr-admin %s", admin_option_names[i], running->name, who_takes, running->usage);
		}
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
	const char *sub, *usage = admin_help();
	unsigned given = 0; /* OPT_*: the options given that only some commands take */
	int c, status = SR_EX_OK, table = 0, utc = 0, local = 0;

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
		case O_ACK: ack_opt = optarg; given |= OPT_ACK; break;
		case O_ALL: all_opt = 1; given |= OPT_ALL; break;
		case O_TYPE: type_opt = optarg; given |= OPT_TYPE; break;
		case O_TABLE: table = 1; break;
		case O_UTC: utc = 1; break;
		case O_LOCAL: local = 1; break;
		case O_ACCOUNT:
			if (!sr_valid_id(optarg))
				sr_die(SR_EX_USAGE, "--account: '%s' must match [A-Za-z0-9_.-]{1,64}", optarg);
			account_opt = optarg;
			given |= OPT_ACCOUNT;
			break;
		case O_UNTIL: until_opt = optarg; break;
		case O_FORCE: force_opt = 1; break;
		case O_STATE: state_opt = optarg; given |= OPT_STATE; break;
		case O_ERROR_CLASS: error_class_opt = optarg; given |= OPT_ERROR_CLASS; break;
		case O_LIMIT:
			list_limit = sr_num("--limit", optarg, 1, 10000000);
			given |= OPT_LIMIT;
			break;
		case O_DRY_RUN: dry_run = 1; given |= OPT_DRY_RUN; break;
		case O_TEST: test_opt = optarg; given |= OPT_TEST; break;
		case O_PROBE:
			if (!sr_valid_id(optarg))
				sr_die(SR_EX_USAGE, "--probe: '%s' must match [A-Za-z0-9_.-]{1,64}", optarg);
			probe_opt = optarg;
			given |= OPT_PROBE;
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
	for (const struct admin_command *k = admin_commands; k->name && !running; k++)
		if (!strcmp(sub, k->name))
			running = k;
	if (!running && !strcmp(sub, "sweep")) {
		fprintf(stderr, "%s: the sweep is its own tool now: sr-sweep (same options)\n", sr_prog);
		return SR_EX_USAGE;
	}
	if (!running) {
		fprintf(stderr, "%s: unknown command '%s'; the commands are:", sr_prog, sub);
		for (const struct admin_command *k = admin_commands; k->name; k++)
			fprintf(stderr, " %s", k->name);
		fputc('\n', stderr);
		return SR_EX_USAGE;
	}
	if ((argc - optind < running->min_args && !(argc == optind && (given & running->bare_opt))) ||
	    (running->max_args >= 0 && argc - optind > running->max_args))
		command_usage(); /* a usage error, before any Redis error */
	refuse_options(given, argc - optind);
	who = sr_who();
	/* A command that needs no Redis (config, profile) runs without it; its
	 * output is a table too with --table. */
	if (!running->redis) {
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
