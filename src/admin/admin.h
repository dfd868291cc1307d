/* admin.h - what the files of sr-admin share: main.c (options, start-up,
 * dispatch), commands.c (the command table), record.c (Redis replies as
 * records), show.c (show, why), card.c (retry, freeze, drop), audit.c,
 * config.c (config, switch), account.c (the accounts), list.c (list and
 * bulk retry), alerts.c, migrate.c (the layout of older releases). */
#ifndef ADMIN_H
#define ADMIN_H
#include "sr.h"

/* main.c: the options and the connection every command shares */
extern struct sr_config cfg;
extern struct sr_redis rds;
extern const char *reason, *who, *until_opt;
extern const char *carrier_opt; /* --carrier */
extern const char *account_opt; /* --account (audit, retry --account A) */
extern long long since;         /* --since, ms (0: from the start) */
extern int force_opt; /* --force: change an account no request ever named */
/* The running command's usage line (from the command table), exit 2. */
void command_usage(void) __attribute__((noreturn));

/* commands.c: the command table (how to add a command: see there) */
/* The options only some commands take, each a bit: a command's row names
 * those it takes, every other command refuses them (exit 2, nothing
 * done), never ignores them: 'freeze CARD --dry-run' must not freeze the
 * card. The other options are every command's. */
enum {
	OPT_DRY_RUN = 1 << 0, OPT_STATE = 1 << 1, OPT_ERROR_CLASS = 1 << 2, OPT_ACCOUNT = 1 << 3,
	OPT_LIMIT = 1 << 4, OPT_ALL = 1 << 5, OPT_TYPE = 1 << 6, OPT_ACK = 1 << 7, OPT_TEST = 1 << 8,
	OPT_PROBE = 1 << 9,
};
/* Their names: bit i is admin_option_names[i] (NULL-terminated). */
extern const char *const admin_option_names[];
/* --help's sections, in this order, each under its heading: the commands
 * on the cards named (show, retry...), then on an account's cards (list,
 * under the same heading), the accounts', and the others. */
enum admin_section { SEC_CARDS, SEC_CARDS_OF_ACCOUNT, SEC_ACCOUNTS, SEC_OTHER, SEC_COUNT };
struct admin_command {
	const char *name;
	/* Runs it with its own arguments (after the name), counted; its exit. */
	int (*run)(int argc, char **argv);
	int min_args, max_args; /* checked before Redis is asked anything (-1: any) */
	unsigned opts;          /* OPT_*: the options it takes */
	/* Its bare form, with no argument at all but the option bare_opt
	 * ("retry --account A": bare is its name in refusals), which also
	 * takes the options bare_opts (OPT_*). min_args is the other form's:
	 * with neither its arguments nor bare_opt, a usage error. */
	unsigned bare_opt, bare_opts;
	const char *bare;
	int redis; /* connected before it runs, --since read on its clock; 0: no Redis */
	enum admin_section section;
	const char *usage; /* one line, after "usage: sr-admin ": its usage errors */
	const char *help;  /* its lines in --help, each ending in a newline */
};
/* In the order "unknown command" lists them, and --help in each section;
 * the last has no name. */
extern const struct admin_command admin_commands[];
/* The command running (main.c). */
extern const struct admin_command *running;
/* --help, made from the table. */
const char *admin_help(void);

/* record.c */
/* Every change is audited with why: without --reason it is refused (exit 2). */
void need_reason(const char *what);
/* One command; a Redis failure ends sr-admin (exit 3). */
redisReply *cmd(int argc, const char **argv);
/* Its reply, an error reply included (Redis lost: exit 3). */
redisReply *cmd_or_error(int argc, const char **argv);
/* An HGETALL-style reply (or a stream entry) as a record: numeric fields
 * as JSON numbers, "account" named "carrier". */
json_t *hash_obj(redisReply *rep);
/* A field's value as JSON: a number for the numeric fields, null for one
 * written empty. */
json_t *field_value(const char *name, const char *v);
/* A field as a number, whether a number or a numeric string (0: absent). */
double jnum(json_t *o, const char *k);

/* audit.c */
/* An audit (or alert) stream's entries as objects (with "id"), oldest
 * first, from --since: the newest `limit` of the stream, or with card, the
 * newest `limit` of that card's. NULL when Redis refused the stream (a key
 * damaged by hand), entries_error saying why. */
json_t *audit_entries(const char *stream, const char *card, long limit);
extern char entries_error[256];
/* An account's alerts or audit entries are printed at most LIST_MAX, the
 * newest: a list cut there says so (said_cut), or it would pass for the
 * whole. */
#define LIST_MAX 10000
void said_cut(json_t *list, const char *what, const char *account);
int admin_audit(int argc, char **argv);

/* account.c */
/* An account no request ever named is most likely a typo: a change would
 * create a new account instead of changing the intended one (unless
 * --force), and a read would answer nothing as if all were well. Says so
 * and exits 1. */
void known_account(const char *account, int change);
/* The account's state (stat.lua: limits, effective rate, pause, breaker,
 * queue sizes) as a record, with its profile's name. */
json_t *account_state(const char *carrier);
/* What sr_why needs to know of an account (its pause, breaker, limits and
 * pace), read once per account. */
const struct sr_why_account *account_why_load(const char *carrier);
int admin_limits(int argc, char **argv);
int admin_pause(int argc, char **argv);
int admin_resume(int argc, char **argv);
int admin_breaker(int argc, char **argv);
/* profile ACCOUNT: printed and checked; with --test FILE, recorded answers
 * replayed through it; with --probe CARD, one live status query. */
extern const char *test_opt, *probe_opt;
int admin_profile(int argc, char **argv);

/* card.c */
/* The card's account: --carrier, or the asset mirror's (NULL if unknown);
 * the caller frees it. */
char *card_carrier(const char *card);
/* retry / freeze / drop one card, atomically, audited; carrier NULL: the
 * card's account from --carrier or the asset mirror. */
int card_mutate(const char *what, const char *card, const char *carrier);
/* fn(what, card, account) on each card: the arguments, and for '-' the
 * lines of stdin (an id, or a JSON object with "card" and, if it says,
 * its account "carrier", checked); the worst exit of them. */
int for_cards(int argc, char **argv, int (*fn)(const char *, const char *, const char *), const char *what);
int admin_retry(int argc, char **argv);
int admin_freeze(int argc, char **argv);
int admin_drop(int argc, char **argv);

/* show.c */
int admin_show(int argc, char **argv);
int admin_why(int argc, char **argv);

/* config.c */
int admin_config(int argc, char **argv);
int admin_switch(int argc, char **argv);

/* list.c */
extern long list_limit;
extern int dry_run;
extern const char *state_opt, *error_class_opt;
int admin_list(int argc, char **argv);
/* retry --account A: every command of A in --state (frozen) matching
 * --error-class, one atomic retry each; --dry-run only lists them. */
int admin_retry_account(const char *account);

/* alerts.c */
extern const char *ack_opt;  /* --ack ID, "-" (stdin), or "" (every open one of --carrier) */
extern const char *type_opt; /* --type: one kind of alert */
extern int all_opt;          /* --all: closed alerts too */
int admin_alerts(int argc, char **argv);

/* migrate.c */
/* migrate: the data of older releases into this release's layout. */
int admin_migrate(int argc, char **argv);
#endif
