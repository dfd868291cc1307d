/* admin/commands.c - sr-admin's command table: every command, what runs
 * it, the arguments and options it takes, whether it needs Redis, its
 * usage line and its lines in --help. main.c dispatches through it: the
 * usage errors, the argument counts, --help and the refusal of an option
 * a command does not take all come from here.
 *
 * To add a command:
 *   1. write its handler, int admin_NAME(int argc, char **argv), in a file
 *      of its own (src/admin/NAME.c: the Makefile builds every file of
 *      src/admin/ into sr-admin), declared in admin.h; it gets only its
 *      own arguments, already counted, and calls command_usage() for an
 *      argument it cannot use;
 *   2. add its row below: "unknown command" lists the commands in the
 *      table's order, --help section by section, in that order.
 * That is all: --help (and so bash completion and tests/tools/man.bats, which
 * read it), the usage errors and the refusals follow. A new option is
 * parsed in main.c; if only some commands take it, give it an OPT_ bit
 * (admin.h, with its name in admin_option_names) and list it in their
 * rows' .opts: every other command refuses it. */
#include <stdlib.h>
#include <string.h>

#include "admin.h"

/* The options of OPT_*, bit i named admin_option_names[i]; refused in this
 * order. */
const char *const admin_option_names[] = { "--dry-run", "--state", "--error-class", "--account", "--limit",
	"--all", "--type", "--ack", "--test", "--probe", NULL };

/* --help's headings, by section. */
static const char *const headings[SEC_COUNT] = {
	[SEC_CARDS] = "Cards (output JSONL):\n",
	[SEC_CARDS_OF_ACCOUNT] = "", /* still Cards */
	[SEC_ACCOUNTS] = "Accounts:\n",
	[SEC_OTHER] = "Everything else:\n",
};

const struct admin_command admin_commands[] = {
	{ .name = "show", .run = admin_show, .min_args = 1, .max_args = -1,
	  .redis = 1, .section = SEC_CARDS,
	  .usage = "show CARD... | -",
	  .help =
"  show CARD            the command, version, claim and lease, last call, interval\n"
"                       left, failures, last error, confirming, frozen, facts, and the\n"
"                       last audit entries\n" },
	{ .name = "why", .run = admin_why, .min_args = 1, .max_args = -1,
	  .redis = 1, .section = SEC_CARDS,
	  .usage = "why CARD... | -",
	  .help =
"  why CARD             one sentence (and fields) on why the card is or is not about to\n"
"                       be changed: interval, rate, backoff, confirming, frozen, claimed,\n"
"                       paused, breaker, superseded, or what the judgment says (and who\n"
"                       dropped its command); one that asks for a hand ends with the\n"
"                       command to run, whole (also in \"run\")\n" },
	{ .name = "list", .run = admin_list, .min_args = 1, .max_args = 1,
	  .redis = 1, .section = SEC_CARDS_OF_ACCOUNT,
	  .opts = OPT_STATE | OPT_ERROR_CLASS | OPT_LIMIT,
	  .usage = "list ACCOUNT [--state frozen|claimed|paused|confirming|due|backoff|scheduled] "
	    "[--reason R] [--error-class 5xx|4xx|none|CODE] [--limit N] [--table]",
	  .help =
"  list ACCOUNT [--state S] [--reason R] [--error-class C] [--limit N]\n"
"                       the account's commands and where each stands (frozen, claimed,\n"
"                       paused: waiting for their account's pause to end, confirming,\n"
"                       due, backoff, scheduled), read only: no lease taken\n" },
	{ .name = "retry", .run = admin_retry, .min_args = 1, .max_args = -1,
	  .redis = 1, .section = SEC_CARDS,
	  .bare = "retry --account A", .bare_opt = OPT_ACCOUNT,
	  /* (no --limit: a bulk retry retries every one, a cap would leave the
	   * rest frozen without a word) */
	  .bare_opts = OPT_STATE | OPT_ERROR_CLASS | OPT_DRY_RUN,
	  .usage = "retry CARD... | - --reason TEXT, or retry --account A [--state S] "
	    "[--error-class C] [--dry-run] --reason TEXT",
	  .help =
"  retry CARD...        unfreeze, reset the failure counters, make due now\n"
"  retry --account A [--state S] [--error-class C] [--dry-run]\n"
"                       every command of A in state S (frozen) whose last error is of\n"
"                       class C (5xx, 4xx, none: no answer, or a status like 503); a\n"
"                       count first, then one atomic retry each (--dry-run: list only)\n" },
	{ .name = "freeze", .run = admin_freeze, .min_args = 1, .max_args = -1,
	  .redis = 1, .section = SEC_CARDS,
	  .usage = "freeze CARD... | - --reason TEXT",
	  .help =
"  freeze CARD...       take the command out of the queues until retried\n" },
	{ .name = "drop", .run = admin_drop, .min_args = 1, .max_args = -1,
	  .redis = 1, .section = SEC_CARDS,
	  .usage = "drop CARD... | - --reason TEXT",
	  .help =
"  drop CARD...         cancel the command (its version is bumped)\n"
"                       (CARD '-' reads card ids, or JSON lines with \"card\", from stdin;\n"
"                       a line whose \"carrier\" is not the card's account is refused:\n"
"                       a \"rejected\" record, the card left alone, exit 1)\n" },
	{ .name = "limits", .run = admin_limits, .min_args = 1, .max_args = 4,
	  .redis = 1, .section = SEC_ACCOUNTS,
	  .usage = "limits ACCOUNT [qps=N] [running=N] [burst=N] [--reason TEXT]",
	  .help =
"  limits ACCOUNT [qps=N] [running=N] [burst=N]\n"
"                       show or set an account's limits (each at least 1), with its\n"
"                       effective rate (lowered while the carrier refuses calls for\n"
"                       rate), pause and breaker\n" },
	{ .name = "pause", .run = admin_pause, .min_args = 1, .max_args = 1,
	  .redis = 1, .section = SEC_ACCOUNTS,
	  .usage = "pause ACCOUNT [--until TIME] --reason TEXT",
	  .help =
"  pause ACCOUNT [--until TIME]   no call to the account (queued commands stay, untouched,\n"
"                       nothing is called, not even by the direct path) until resumed, or\n"
"                       until TIME (30m, 2h, 2026-12-01T10:00Z, 2026-12-01 18:00, epoch ms)\n" },
	{ .name = "resume", .run = admin_resume, .min_args = 1, .max_args = 1,
	  .redis = 1, .section = SEC_ACCOUNTS,
	  .usage = "resume ACCOUNT --reason TEXT",
	  .help =
"  resume ACCOUNT       end a pause\n" },
	{ .name = "breaker", .run = admin_breaker, .min_args = 1, .max_args = 2,
	  .redis = 1, .section = SEC_ACCOUNTS,
	  .usage = "breaker ACCOUNT [open|close] [--reason TEXT]",
	  .help =
"  breaker ACCOUNT [open|close]   show, open by hand (no call, no probe) or close\n" },
	/* A profile is checked, tested and probed before the account is live,
	 * on a host that may reach no Redis: it needs none. */
	{ .name = "profile", .run = admin_profile, .min_args = 1, .max_args = 1,
	  .redis = 0, .section = SEC_ACCOUNTS,
	  .opts = OPT_TEST | OPT_PROBE,
	  .usage = "profile ACCOUNT [--test FILE | --probe CARD]",
	  .help =
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
"                       secrets redacted; exit 1 if not read as a state\n" },
	/* config needs no Redis: it says where Redis is. */
	{ .name = "config", .run = admin_config, .min_args = 0, .max_args = 0,
	  .redis = 0, .section = SEC_OTHER,
	  .usage = "config",
	  .help =
"  config               every setting, its value (secrets redacted) and where it came\n"
"                       from: a flag, the environment, the config file (SRQ_CONFIG, or\n"
"                       /etc/srq/srq.conf; NAME = value lines), or the default; a\n"
"                       secret's state (\"secret\": set, not set, readable, missing:,\n"
"                       unreadable:), never its value, the file not read; exit 2\n"
"                       if sr-claim and sr-exec would refuse them (SRQ_LEASE_MS not\n"
"                       1000 more than a call's timeout)\n" },
	{ .name = "switch", .run = admin_switch, .min_args = 1, .max_args = 1,
	  .redis = 1, .section = SEC_OTHER,
	  .usage = "switch on|off|show [--reason TEXT]",
	  .help =
"  switch on|off|show   the global switch stop_resume_queue_enabled\n" },
	{ .name = "alerts", .run = admin_alerts, .min_args = 0, .max_args = 0,
	  .redis = 1, .section = SEC_OTHER,
	  .opts = OPT_ALL | OPT_TYPE | OPT_ACK,
	  .usage = "alerts [--all] [--type T] [--since TIME] [--carrier A], or alerts "
	    "--ack ID|- [--carrier A] --reason TEXT, or alerts --ack --carrier A [--type T] --reason TEXT",
	  .help =
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
"                       says on stderr how many it acknowledged\n" },
	{ .name = "audit", .run = admin_audit, .min_args = 1, .max_args = 1,
	  .redis = 1, .section = SEC_OTHER,
	  .opts = OPT_ACCOUNT,
	  .bare = "audit --account A", .bare_opt = OPT_ACCOUNT,
	  .usage = "audit CARD [--account A] | --account A [--since TIME]",
	  .help =
"  audit CARD | --account A [--since TIME]  audit entries, oldest first: the card's\n"
"                       (in its account, or A's with --account), or the account's\n" },
	{ .name = "migrate", .run = admin_migrate, .min_args = 0, .max_args = 0,
	  .redis = 1, .section = SEC_OTHER,
	  .usage = "migrate",
	  .help =
"  migrate              after an upgrade from 0.1 (every 0.1 tool stopped): renames\n"
"                       the long fields of every facts hash to the short ones (\"status\"\n"
"                       to \"st\"), and puts the hashes of cards with no command to sleep\n"
"                       in their idle buckets; safe beside this release's pipeline and\n"
"                       to run again; a record of counts for each\n" },
	{ .name = NULL },
};

/* --help: the synopsis, the commands' lines section by section (under its
 * heading, in the table's order), then the options. */
static const char help_head[] =
"usage: sr-admin COMMAND [ARGS] [--reason TEXT] [--carrier ID] [--since TIME]\n"
"\n";
static const char help_tail[] =
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

const char *
admin_help(void)
{
	static char *text;
	size_t n = sizeof help_head + sizeof help_tail;

	if (text)
		return text;
	for (const struct admin_command *c = admin_commands; c->name; c++)
		n += strlen(headings[c->section]) + strlen(c->help);
	text = sr_malloc(n);
	strcpy(text, help_head);
	for (int s = 0; s < SEC_COUNT; s++) {
		const char *heading = headings[s];

		for (const struct admin_command *c = admin_commands; c->name; c++)
			if (c->section == (enum admin_section)s) {
				strcat(text, heading);
				heading = ""; /* once */
				strcat(text, c->help);
			}
	}
	strcat(text, help_tail);
	return text;
}
