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
static const char *account_opt, *since_opt;

redisReply *
cmd(int argc, const char **argv)
{
	return sr_redis_must(&rds, argc, argv);
}

redisReply *
cmd_or_error(int argc, const char **argv)
{
	redisReply *rep = sr_redis_cmd(&rds, argc, argv);

	if (!rep)
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	return rep;
}

/* Fields that are numbers, printed as JSON numbers (Redis keeps strings),
 * with the numeric facts (sr_numeric_facts); one written empty (the http of
 * a call that never went) has no value: null, never "". Ids are never in
 * this list: an ICCID has more digits than a double. */
static const char *const numeric[] = { "ver", "ver_before", "ver_after", "http", "last_http",
	"fails", "first_fail", "last_call", "lease_until", "attempt", "prio", "ms", "ms_min", "at", "due",
	"retry_after_ms", "until", "qps", "qps_from", "qps_to", "running", "burst", "value", "threshold",
	"seen_ms", "counted_ver", "accepted", "prev_call", "superseded", "frozen",
	"confirming", NULL };

static int
is_numeric(const char *name)
{
	for (const char *const *n = numeric; *n; n++)
		if (!strcmp(*n, name))
			return 1;
	for (const char *const *n = sr_numeric_facts(); *n; n++)
		if (!strcmp(*n, name))
			return 1;
	return 0;
}

static json_t *
field_value(const char *name, const char *v)
{
	char *end;

	if (!*v && is_numeric(name))
		return json_null();
	if (*v && is_numeric(name)) {
		double d = strtod(v, &end);

		if (!*end)
			return d == (double)(long long)d && !strchr(v, '.') ? json_integer(atoll(v)) :
			    json_real(d);
	}
	return sr_json_text(v);
}

json_t *
hash_obj(redisReply *rep)
{
	json_t *o = json_object();

	for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements; i += 2) {
		const char *k = rep->element[i]->str;

		/* "carrier" is the account's field in every record. */
		json_object_set_new(o, !strcmp(k, "account") ? "carrier" : k,
		    field_value(k, rep->element[i + 1]->str));
	}
	return o;
}

void
need_reason(const char *what)
{
	if (!reason[0])
		sr_die(SR_EX_USAGE, "%s changes state: say why with --reason TEXT (it goes in the audit, "
		    "with who)", what);
}

double
jnum(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : json_is_string(v) ? atof(json_string_value(v)) : 0;
}

static long long
hint(json_t *o, const char *k)
{
	return (long long)jnum(o, k);
}

/* The card's account: --carrier, or the asset mirror's. NULL if unknown. */
static char *
card_carrier(const char *card)
{
	char key[SR_KEY_MAX];
	const char *argv[] = { "HMGET", sr_key_card_facts(key, cfg.prefix, card), sr_fact_field("carrier"),
		"carrier" };
	redisReply *rep;
	char *c = NULL;

	if (carrier_opt)
		return sr_strdup(carrier_opt);
	rep = cmd(4, argv);
	/* The short field, else the legacy one (before sr-admin migrate). */
	for (size_t i = 0; !c && rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++)
		if (rep->element[i]->type == REDIS_REPLY_STRING)
			c = sr_strdup(rep->element[i]->str);
	freeReplyObject(rep);
	return c;
}

/* Page by page (however many entries of other cards are newer), at most
 * AUDIT_SCAN entries back: a card with a short history does not read a
 * long stream to its start each time. */
#define AUDIT_SCAN 200000
char entries_error[256]; /* why audit_entries returned NULL */
json_t *
audit_entries(const char *stream, const char *card, long limit)
{
	char count[24], end[48], start[32];
	const char *argv[] = { "XREVRANGE", stream, end, start, "COUNT", count };
	json_t *list = json_array();
	long page = card ? 5000 : limit, scanned = 0;

	snprintf(count, sizeof count, "%ld", page);
	snprintf(start, sizeof start, "%lld", since);
	snprintf(end, sizeof end, "+");
	for (;;) {
		redisReply *rep = cmd_or_error(6, argv);
		size_t n = rep->type == REDIS_REPLY_ARRAY ? rep->elements : 0;

		if (rep->type == REDIS_REPLY_ERROR) {
			/* (a stream damaged by hand) the caller says whose */
			snprintf(entries_error, sizeof entries_error, "%s", rep->str);
			freeReplyObject(rep);
			json_decref(list);
			return NULL;
		}

		for (size_t i = 0; i < n && (long)json_array_size(list) < limit; i++) {
			redisReply *e = rep->element[i];
			json_t *o = hash_obj(e->element[1]);

			if (card && strcmp(sr_jstr(o, "card") ? sr_jstr(o, "card") : "", card)) {
				json_decref(o);
				continue;
			}
			json_object_set_new(o, "id", json_string(e->element[0]->str));
			json_array_insert_new(list, 0, o);
		}
		/* The next page: before the oldest entry of this one. */
		if (n > 0)
			snprintf(end, sizeof end, "(%s", rep->element[n - 1]->element[0]->str);
		freeReplyObject(rep);
		scanned += (long)n;
		if (!card || (long)n < page || (long)json_array_size(list) >= limit)
			return list;
		if (scanned >= AUDIT_SCAN) {
			sr_warn("audit of '%s': only the newest %d entries of the account were searched; "
			    "narrow with --since", card, AUDIT_SCAN);
			return list;
		}
	}
}

void
said_cut(json_t *list, const char *what, const char *account)
{
	if (json_array_size(list) >= LIST_MAX)
		sr_warn("only the newest %d %s of account '%s' are printed; narrow with --since", LIST_MAX,
		    what, account);
}

/* A packed value (a sleeping card's state, sr_key_idle, or its waiting
 * command, sr_key_wait) into o, as its hash's fields would be. */
static void
idle_fields(json_t *o, const char *packed, const char *const *fields)
{
	char v[128];

	int wait = fields == sr_wait_fields;

	for (int i = 0; fields[i]; i++)
		if ((wait ? sr_wait_get : sr_idle_get)(packed, i, v, sizeof v))
			json_object_set_new(o, fields[i], field_value(fields[i], v));
	if (wait && !json_object_get(o, "source"))
		json_object_set_new(o, "source", json_string("")); /* as its hash has it */
}

/* Everything about one card, for show and why. */
static json_t *
card_state(const char *card, const char *carrier, long long *now_ms, int history)
{
	static const char *qs[] = { "stop_resume:high", "stop_resume", "stop_resume:bulk" };
	char key[SR_KEY_MAX], fkey[SR_KEY_MAX], zkey[SR_KEY_MAX];
	json_t *o = json_object(), *command, *audit;
	redisReply *rep;
	long long last;

	*now_ms = sr_redis_time_ms(&rds);
	json_object_set_new(o, "card", json_string(card));
	json_object_set_new(o, "carrier", json_string(carrier));
	/* The card's hash, or with none, its packed state in its idle bucket.
	 * A card can wake (bucket to hash) between the two reads, and then
	 * neither has it: read again, a few times, rather than show version 0. */
	for (int tries = 0;; tries++) {
		const char *a[] = { "HGETALL", sr_key_card(key, cfg.prefix, carrier, card) };
		int found = 1;

		command = hash_obj(rep = cmd(2, a));
		if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 0) {
			char wkey[SR_KEY_MAX];
			const char *field = sr_key_idle(key, cfg.prefix, carrier, card);
			const char *b[] = { "HGET", key, field }, *c[] = { "HGET", wkey, field };
			redisReply *v, *w;

			sr_key_wait(wkey, cfg.prefix, carrier, card);
			v = cmd(3, b);
			w = cmd(3, c);
			if (v->type == REDIS_REPLY_STRING)
				idle_fields(command, v->str, sr_idle_fields);
			if (w->type == REDIS_REPLY_STRING) /* its command, waiting packed */
				idle_fields(command, w->str, sr_wait_fields);
			found = v->type == REDIS_REPLY_STRING || w->type == REDIS_REPLY_STRING;
			freeReplyObject(v);
			freeReplyObject(w);
		}
		freeReplyObject(rep);
		if (found || tries == 2)
			break;
		json_decref(command); /* a card never seen, or one that just woke */
	}
	{
		const char *a[] = { "HGETALL", sr_key_card_facts(fkey, cfg.prefix, card) };

		json_object_set_new(o, "facts", sr_facts_json(rep = cmd(2, a), SR_FACTS_CARD));
		/* Each fact as of when, and who said so. */
		json_object_set_new(o, "facts_as_of", sr_facts_times_json(rep, SR_FACTS_CARD));
		freeReplyObject(rep);
	}
	for (int q = 0; q < 3; q++) {
		const char *a[] = { "ZSCORE", sr_key_account(zkey, cfg.prefix, carrier, qs[q]), card };

		rep = cmd(3, a);
		if (rep->type == REDIS_REPLY_STRING) {
			json_object_set_new(o, "queue", json_string(qs[q]));
			json_object_set_new(o, "due_ms", json_integer(atoll(rep->str)));
		}
		freeReplyObject(rep);
	}
	last = hint(command, "last_call");
	json_object_set_new(o, "ver", json_integer(hint(command, "ver")));
	json_object_set_new(o, "last_call_ms", last ? json_integer(last) : json_null());
	{
		long interval = sr_account(&cfg, carrier)->interval_ms;

		json_object_set_new(o, "interval_left_ms",
		    json_integer(last + interval > *now_ms ? last + interval - *now_ms : 0));
	}
	if (hint(command, "frozen")) {
		const char *a[] = { "ZSCORE", sr_key_account(zkey, cfg.prefix, carrier, "frozen"), card };

		rep = cmd(3, a);
		if (rep->type == REDIS_REPLY_STRING)
			json_object_set_new(o, "frozen_ms", json_integer(atoll(rep->str)));
		freeReplyObject(rep);
	}
	json_object_set_new(o, "command", command);
	if (history) {
		if (!(audit = audit_entries(sr_key_account(zkey, cfg.prefix, carrier, "audit"), card, 10)))
			sr_die(SR_EX_BACKEND, "%s: %s", zkey, entries_error);
		json_object_set_new(o, "audit", audit);
	}
	return o;
}

/* A card with no command, no state and no facts in the account (a typo,
 * or --carrier naming the wrong account) is not found, and said so: its
 * record would be empty, or advise to queue a request for it. */
static int
card_unknown(json_t *s, const char *card, const char *carrier)
{
	if (json_object_size(json_object_get(s, "command")) || json_object_size(json_object_get(s, "facts")))
		return 0;
	fprintf(stderr, "%s: card '%s' is not known in account '%s': no command, no state and no "
	    "facts\n", sr_prog, card, carrier);
	return 1;
}

static int
do_show(const char *card, const char *account)
{
	char *carrier = account ? sr_strdup(account) : card_carrier(card);
	long long now;

	json_t *s;

	if (!carrier) {
		fprintf(stderr, "%s: card '%s': no account known (give --carrier)\n", sr_prog, card);
		return SR_EX_REJECTED;
	}
	s = card_state(card, carrier, &now, 1);
	if (card_unknown(s, card, carrier)) {
		json_decref(s);
		free(carrier);
		return SR_EX_REJECTED;
	}
	sr_out(s);
	free(carrier);
	return SR_EX_OK;
}

/* The card's newest audit entry, if it is its command's drop by hand. */
static json_t *
last_drop(const char *card, const char *carrier)
{
	char key[SR_KEY_MAX];
	json_t *list = audit_entries(sr_key_account(key, cfg.prefix, carrier, "audit"), card, 1), *e;

	if (!list)
		sr_die(SR_EX_BACKEND, "%s: %s", key, entries_error);
	e = json_array_get(list, 0);
	if (e && sr_jstr(e, "event") && !strcmp(sr_jstr(e, "event"), "admin:drop"))
		json_incref(e);
	else
		e = NULL;
	json_decref(list);
	return e;
}

static int
do_why(const char *card, const char *account)
{
	char *carrier = account ? sr_strdup(account) : card_carrier(card), key[SR_KEY_MAX], sentence[400];
	char run[200];
	const struct sr_why_account *acc;
	json_t *dropped = NULL;
	json_t *s, *c, *o;
	long long now;
	struct sr_card_facts cf;
	struct sr_device_facts df;
	struct sr_judgment j;
	struct sr_why_card w;
	const char *state;

	if (!carrier) {
		fprintf(stderr, "%s: card '%s': no account known (give --carrier)\n", sr_prog, card);
		return SR_EX_REJECTED;
	}
	s = card_state(card, carrier, &now, 0);
	if (card_unknown(s, card, carrier)) {
		json_decref(s);
		free(carrier);
		return SR_EX_REJECTED;
	}
	o = json_object();
	c = json_object_get(s, "command");
	memset(&w, 0, sizeof w);
	w.card = card;
	w.action = sr_jstr(c, "action");
	w.superseded = hint(c, "superseded");
	w.frozen = hint(c, "frozen") != 0;
	w.frozen_who = sr_jstr(c, "frozen_who");
	w.frozen_why = sr_jstr(c, "frozen_why");
	w.frozen_at = sr_jint(s, "frozen_ms", 0);
	w.fails = hint(c, "fails");
	w.first_fail = hint(c, "first_fail");
	w.last_error = sr_jstr(c, "last_error");
	w.claim = sr_jstr(c, "claim");
	w.lease_until = hint(c, "lease_until");
	w.called = sr_jstr(c, "called") != NULL;
	w.confirming = hint(c, "confirming") != 0;
	w.due = sr_jint(s, "due_ms", 0);
	w.last_call = hint(c, "last_call");
	w.interval_ms = sr_account(&cfg, carrier)->interval_ms;
	json_object_set_new(o, "card", json_string(card));
	json_object_set_new(o, "carrier", json_string(carrier));
	json_object_set_new(o, "ver", json_integer(hint(c, "ver")));
	if (w.action)
		json_object_set_new(o, "action", json_string(w.action));
	else {
		/* No command: what the judgment says now. */
		const char *a[] = { "HGETALL", sr_key_card_facts(key, cfg.prefix, card) };
		redisReply *rep = cmd(2, a);

		sr_card_facts_load(&cf, rep);
		freeReplyObject(rep);
		memset(&df, 0, sizeof df);
		if (cf.device[0]) {
			const char *d[] = { "HGETALL", sr_key_device_facts(key, cfg.prefix, cf.device) };

			sr_device_facts_load(&df, rep = cmd(2, d));
			freeReplyObject(rep);
		}
		j = sr_judge(&cf, cf.device[0] ? &df : NULL, now / 1000);
		w.judged = &j;
		w.status = cf.status;
		json_object_set_new(o, "judged", json_string(j.reason));
		/* A card that had a command: was the last one dropped by hand?
		 * Its audit says who, when and why. */
		if (hint(c, "ver") > 0 && (dropped = last_drop(card, carrier))) {
			w.dropped_who = sr_jstr(dropped, "who");
			w.dropped_why = sr_jstr(dropped, "why");
			w.dropped_at = atoll(sr_jstr(dropped, "id"));
		}
	}
	acc = account_why_load(carrier);
	state = sr_why(&w, acc, now, sentence, sizeof sentence);
	json_object_set_new(o, "state", json_string(state));
	json_object_set_new(o, "why", sr_json_text(sentence)); /* never dropped */
	/* The command the sentence ends with, whole, for a script. */
	if (*sr_why_run(&w, acc, state, run, sizeof run))
		json_object_set_new(o, "run", json_string(run));
	json_decref(dropped);
	json_object_set_new(o, "details", s);
	sr_out(o);
	free(carrier);
	return SR_EX_OK;
}

/* The card has facts, or a state asleep in its account's idle bucket. */
static int
card_known(const char *card, const char *carrier)
{
	char fkey[SR_KEY_MAX], ikey[SR_KEY_MAX];
	const char *e[] = { "EXISTS", sr_key_card_facts(fkey, cfg.prefix, card) };
	const char *h[] = { "HEXISTS", ikey, sr_key_idle(ikey, cfg.prefix, carrier, card) };
	redisReply *a = cmd(2, e), *b = cmd(3, h);
	int known = (a->type == REDIS_REPLY_INTEGER && a->integer) || (b->type == REDIS_REPLY_INTEGER && b->integer);

	freeReplyObject(a);
	freeReplyObject(b);
	return known;
}

/* retry / freeze / drop one card: one script reads and writes the command
 * with its audit entry (share/lua/admin_card.lua). */
int
card_mutate(const char *what, const char *card, const char *account)
{
	static const char *qs[] = { "stop_resume:high", "stop_resume", "stop_resume:bulk" };
	char *carrier = account ? sr_strdup(account) : card_carrier(card), keys[10][SR_KEY_MAX], maxlen[24];
	const char *argv[15];
	redisReply *rep;
	json_t *o;
	int n = 0;

	need_reason(what);
	if (!carrier) {
		fprintf(stderr, "%s: card '%s': no account known (give --carrier)\n", sr_prog, card);
		return SR_EX_REJECTED;
	}
	snprintf(maxlen, sizeof maxlen, "%ld", cfg.audit_maxlen);
	argv[n++] = sr_key_card(keys[0], cfg.prefix, carrier, card);
	for (int i = 0; i < 3; i++)
		argv[n++] = sr_key_account(keys[1 + i], cfg.prefix, carrier, qs[i]);
	argv[n++] = sr_key_account(keys[4], cfg.prefix, carrier, "frozen");
	argv[n++] = sr_key_account(keys[5], cfg.prefix, carrier, "confirming");
	argv[n++] = sr_key_account(keys[6], cfg.prefix, carrier, "audit");
	argv[n++] = sr_key_account(keys[7], cfg.prefix, carrier, "alerts_open");
	sr_key_idle(keys[8], cfg.prefix, carrier, card);
	argv[n++] = keys[8];
	sr_key_wait(keys[9], cfg.prefix, carrier, card);
	argv[n++] = keys[9];
	argv[n++] = what;
	argv[n++] = card;
	argv[n++] = who;
	argv[n++] = reason;
	argv[n++] = maxlen;
	sr_redis_append_script(&rds, SR_LUA_ADMIN_CARD, 10, n, argv, NULL);
	if (!(rep = sr_redis_reply(&rds)))
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	/* A drop of a card that has no command leaves it as asked: no change,
	 * no error (a list piped in twice drops nothing the second time). A
	 * card nobody knows is still a typo. */
	if (rep->type == REDIS_REPLY_ERROR && !strcmp(rep->str, "no command") && !strcmp(what, "drop") &&
	    card_known(card, carrier)) {
		sr_out(json_pack("{ss ss ss sb}", "card", card, "carrier", carrier, "done", what, "changed", 0));
		freeReplyObject(rep);
		free(carrier);
		return SR_EX_OK;
	}
	if (rep->type == REDIS_REPLY_ERROR) {
		int backend = sr_redis_backend_error(rep->str);

		if (backend)
			fprintf(stderr, "%s: card '%s': %s refused by Redis: %s\n", sr_prog, card, what, rep->str);
		else
			fprintf(stderr, "%s: card '%s': %s to %s\n", sr_prog, card, rep->str, what);
		freeReplyObject(rep);
		free(carrier);
		return backend ? SR_EX_BACKEND : SR_EX_REJECTED;
	}
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 || rep->element[0]->type != REDIS_REPLY_STRING)
		sr_die(SR_EX_BACKEND, "card '%s': %s: unexpected reply from Redis", card, what);
	o = json_pack("{ss ss ss ss sI sb}", "card", card, "carrier", carrier, "done", what, "action",
	    rep->element[0]->str, "ver", (json_int_t)rep->element[1]->integer, "changed", 1);
	freeReplyObject(rep);
	sr_out(o);
	free(carrier);
	return SR_EX_OK;
}

/* A card line's "carrier" (NULL: none), checked against the card's account
 * (--carrier, or the asset mirror's; the line's when neither knows it): a
 * line naming another account must not act on the card where it is. NULL
 * if it may go on (*account: the account to use, or NULL), else why not. */
static const char *
line_account(json_t *line, const char *card, const char **account, char *why, size_t n)
{
	json_t *v = json_object_get(line, "carrier");
	const char *named = json_string_value(v);
	char *where;

	*account = NULL;
	if (!v)
		return NULL;
	if (!named || !sr_valid_id(named)) {
		snprintf(why, n, "\"carrier\" is not an account id: nothing done");
		return why;
	}
	if ((where = card_carrier(card)) && strcmp(where, named)) {
		if (carrier_opt)
			snprintf(why, n, "the line names account '%s', but --carrier says '%s': nothing done",
			    named, where);
		else
			snprintf(why, n, "the line names account '%s', but card '%s' is in '%s': nothing done",
			    named, card, where);
		free(where);
		return why;
	}
	free(where);
	*account = named;
	return NULL;
}

/* fn on each card: the arguments, and for '-' the lines of stdin (an id, or
 * a JSON object with "card" and, if it says, its account "carrier"). */
static int
for_cards(int argc, char **argv, int (*fn)(const char *, const char *, const char *), const char *what)
{
	int status = SR_EX_OK;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "-")) {
			if (!sr_valid_id(argv[i])) {
				fprintf(stderr, "%s: '%s' is not a card id\n", sr_prog, argv[i]);
				status = sr_worst(status, SR_EX_REJECTED);
				continue;
			}
			status = sr_worst(status, fn(what, argv[i], NULL));
			continue;
		}
		{
			struct sr_reader rd;
			char *line;
			int rc;

			sr_reader_init(&rd, STDIN_FILENO);
			while ((rc = sr_reader_next(&rd, &line, 1)) != SR_READ_EOF) {
				json_t *j = NULL;
				const char *id = "", *account, *refused;
				char why[300];

				if (rc == SR_READ_BAD) {
					fprintf(stderr, "%s: line %ld: %s\n", sr_prog, rd.lineno, rd.why);
					status = sr_worst(status, SR_EX_REJECTED);
					continue;
				}
				/* The id as read, whole, until it is checked: one cut to
				 * fit a buffer would be another card's. */
				if (rc == SR_READ_LINE && line[0] == '{' && (j = json_loads(line, JSON_REJECT_DUPLICATES, NULL)) &&
				    sr_jstr(j, "card"))
					id = sr_jstr(j, "card");
				else if (rc == SR_READ_LINE)
					id = line;
				if (!id[0])
					; /* a blank line: nothing asked */
				else if (!sr_valid_id(id)) {
					fprintf(stderr, "%s: line %ld: '%s' is not a card id\n", sr_prog, rd.lineno, id);
					status = sr_worst(status, SR_EX_REJECTED);
				} else if ((refused = line_account(j, id, &account, why, sizeof why))) {
					json_t *o = json_pack("{sI ss so}", "line", (json_int_t)rd.lineno, "card", id,
					    "carrier", json_incref(json_object_get(j, "carrier")));

					status = sr_worst(status, sr_rejected(o, rd.lineno, refused));
					sr_out(o);
				} else
					status = sr_worst(status, fn(what, id, account));
				json_decref(j);
			}
			status = sr_worst(status, sr_reader_failed(&rd));
			sr_reader_free(&rd);
		}
	}
	return status;
}

static int
show_one(const char *what, const char *card, const char *account)
{
	return !strcmp(what, "show") ? do_show(card, account) : do_why(card, account);
}

static int
do_audit(const char *card, const char *account)
{
	char *carrier;
	char key[SR_KEY_MAX];
	json_t *list, *e;
	size_t i;

	if (account)
		known_account(account, 0);
	carrier = account ? sr_strdup(account) : card_carrier(card);
	if (!carrier) {
		fprintf(stderr, "%s: card '%s': no account known (give --carrier)\n", sr_prog, card);
		return SR_EX_REJECTED;
	}
	if (!(list = audit_entries(sr_key_account(key, cfg.prefix, carrier, "audit"), card, LIST_MAX)))
		sr_die(SR_EX_BACKEND, "%s: %s", key, entries_error);
	if (!card)
		said_cut(list, "entries", carrier);
	/* Every record names its account: the stream's entries do not (the
	 * stream is the account's), a line piped on must. */
	json_array_foreach(list, i, e) {
		json_object_set_new(e, "carrier", json_string(carrier));
		sr_out(json_incref(e));
	}
	json_decref(list);
	free(carrier);
	return SR_EX_OK;
}

/* ------------------------------------------------------------ the commands */

static int
c_switch(int argc, char **argv)
{
	const char *pos = argc == 1 ? argv[0] : "";
	int on;

	if (argc != 1 || (strcmp(pos, "on") && strcmp(pos, "off") && strcmp(pos, "show")))
		command_usage();
	if (strcmp(pos, "show"))
		need_reason("switch");
	if (strcmp(pos, "show") && sr_switch_set(&rds, &cfg, !strcmp(pos, "on"), who, reason) < 0)
		sr_die(SR_EX_BACKEND, "cannot set the switch: %s", rds.errstr);
	if ((on = sr_switch_get(&rds, &cfg)) < 0)
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	sr_out(json_pack("{ss}", "switch", on ? "on" : "off"));
	return SR_EX_OK;
}

static int
c_show(int argc, char **argv)
{
	if (argc < 1)
		command_usage();
	if (carrier_opt)
		known_account(carrier_opt, 0);
	return for_cards(argc, argv, show_one, "show");
}

static int
c_why(int argc, char **argv)
{
	if (argc < 1)
		command_usage();
	if (carrier_opt)
		known_account(carrier_opt, 0);
	return for_cards(argc, argv, show_one, "why");
}

static int
do_mutate(const char *what, const char *card, const char *account)
{
	return card_mutate(what, card, account);
}

static int
mutate(const char *what, int argc, char **argv)
{
	if (argc < 1)
		command_usage();
	return for_cards(argc, argv, do_mutate, what);
}

static int
c_retry(int argc, char **argv)
{
	if (argc == 0 && account_opt)
		return admin_retry_account(account_opt);
	return mutate("retry", argc, argv);
}

static int
c_list(int argc, char **argv)
{
	return admin_list(argc, argv);
}
static int c_freeze(int argc, char **argv) { return mutate("freeze", argc, argv); }
static int c_drop(int argc, char **argv) { return mutate("drop", argc, argv); }

static int
c_audit(int argc, char **argv)
{
	if ((!account_opt && argc != 1) || (argc == 1 && !sr_valid_id(argv[0])))
		command_usage();
	/* With --account, a card given still narrows it to that card's. */
	return do_audit(argc == 1 ? argv[0] : NULL, account_opt);
}

static void
print_setting(const char *name, const char *value, const char *from, const char *secret, void *arg)
{
	char shown[1024];

	(void)arg;
	/* A flag given to this very command beats the environment and the file;
	 * redacted as sr_config_each redacts theirs: a password in the URL
	 * must not reach the output, whoever gave it. */
	if (!strcmp(name, "SRQ_REDIS") && !strcmp(cfg.redis_from, "--redis")) {
		value = sr_url_shown(cfg.redis_url, shown, sizeof shown);
		from = "--redis";
	} else if (!strcmp(name, "SRQ_PREFIX") && strcmp(value, cfg.prefix)) {
		value = cfg.prefix;
		from = "--prefix";
	}
	/* A secret's state (never its value): a missing or unreadable one is
	 * said, not fatal; the tool that needs it fails when it does. */
	if (secret)
		sr_out(json_pack("{ss ss ss ss}", "setting", name, "value", value, "from", from,
		    "secret", secret));
	else
		sr_out(json_pack("{ss ss ss}", "setting", name, "value", value, "from", from));
}

static int
c_config(int argc, char **argv)
{
	char err[1024];

	(void)argv;
	if (argc)
		command_usage();
	sr_config_each(print_setting, NULL);
	/* Printed first: what it says is how to find the setting to fix. */
	if (sr_lease_check_all(&cfg, err, sizeof err) < 0) {
		fprintf(stderr, "%s: %s\n", sr_prog, err);
		return SR_EX_USAGE;
	}
	return SR_EX_OK;
}

/* The command table: each command's name, what runs it (with its own
 * arguments), how many arguments it takes, and its usage line, which its
 * usage errors print. A new command is one row here and one handler. */
static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	int min_args, max_args; /* checked before Redis is asked anything (-1: any) */
	const char *usage;
} commands[] = {
	{ "show", c_show, 1, -1, "show CARD... | -" },
	{ "why", c_why, 1, -1, "why CARD... | -" },
	{ "list", c_list, 1, 1, "list ACCOUNT [--state frozen|claimed|paused|confirming|due|backoff|scheduled] "
	  "[--reason R] [--error-class 5xx|4xx|none|CODE] [--limit N] [--table]" },
	{ "retry", c_retry, 0, -1, "retry CARD... | - --reason TEXT, or retry --account A [--state S] "
	  "[--error-class C] [--dry-run] --reason TEXT" },
	{ "freeze", c_freeze, 1, -1, "freeze CARD... | - --reason TEXT" },
	{ "drop", c_drop, 1, -1, "drop CARD... | - --reason TEXT" },
	{ "limits", admin_limits, 1, 4, "limits ACCOUNT [qps=N] [running=N] [burst=N] [--reason TEXT]" },
	{ "pause", admin_pause, 1, 1, "pause ACCOUNT [--until TIME] --reason TEXT" },
	{ "resume", admin_resume, 1, 1, "resume ACCOUNT --reason TEXT" },
	{ "breaker", admin_breaker, 1, 2, "breaker ACCOUNT [open|close] [--reason TEXT]" },
	{ "profile", admin_profile, 1, 1, "profile ACCOUNT [--test FILE | --probe CARD]" },
	{ "config", c_config, 0, 0, "config" },
	{ "switch", c_switch, 1, 1, "switch on|off|show [--reason TEXT]" },
	{ "alerts", admin_alerts, 0, 0, "alerts [--all] [--type T] [--since TIME] [--carrier A], or alerts "
	  "--ack ID|- [--carrier A] --reason TEXT, or alerts --ack --carrier A [--type T] --reason TEXT" },
	{ "audit", c_audit, 0, 1, "audit CARD [--account A] | --account A [--since TIME]" },
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
		int bulk = running->run == c_retry && optind == argc; /* retry --account A */

		refuse_option("--dry-run", dry_run, bulk && account_opt, "retry --account A");
		refuse_option("--state", state_opt != NULL, bulk || running->run == c_list,
		    "retry --account A and list");
		refuse_option("--error-class", error_class_opt != NULL, bulk || running->run == c_list,
		    "retry --account A and list");
		refuse_option("--account", account_opt != NULL, bulk || running->run == c_audit,
		    "retry --account A (no cards) and audit");
		/* A bulk retry retries every one: a cap would leave the rest
		 * frozen without a word. */
		refuse_option("--limit", limit_opt, running->run == c_list, "list");
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
	if (running->run == c_config || running->run == admin_profile) {
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
