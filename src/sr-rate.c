/* sr-rate - the account's rate, shared with its other callers: slots for a usage or status poller.
 *
 * A carrier's rate limit belongs to the API account, and srq is not its only
 * caller. sr-rate takes slots for another caller from the account's one pace
 * in Redis, the pace srq's own calls take theirs from
 * (share/lua/rate_take.lua), and says when to send, or waits until then;
 * `show` says who used the pace over the last minute
 * (share/lua/rate_show.lua). Every record is one JSON line on stdout, a
 * refusal said on stderr too.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "sr.h"

static const char usage[] =
"usage: sr-rate take ACCOUNT [--class NAME] [--n N] [--wait MS] [--late MS]\n"
"       sr-rate show ACCOUNT\n"
"       sr-rate contract ACCOUNT | sr-rate script\n"
"\n"
"A carrier's rate limit (qps) belongs to the API account: a usage or status\n"
"poller that calls the same account counts against it as srq's stops and\n"
"resumes do. sr-rate gives such a caller slots from the account's one pace in\n"
"Redis, the pace srq's own calls take theirs from, so the carrier never sees\n"
"more than the account's limit in a second, srq's calls and the others'\n"
"together. Every time is the Redis server's clock.\n"
"\n"
"take     N slots for class NAME. Send call i at slot i (epoch ms); a call that\n"
"         leaves early crowds the one before it. Without --wait: a slot within\n"
"         the next window (SRQ_RATE_WINDOW_MS), or refused with when to ask\n"
"         again. With --wait MS: asks again as told, waits until the first slot\n"
"         and then exits, for up to MS; refused when the slot is further away.\n"
"  {\"account\":\"c17\",\"class\":\"usage\",\"n\":1,\"status\":\"ok\",\"at\":1780000000123,\n"
"   \"wait_ms\":40,\"slots\":[1780000000123],\"waited_ms\":0}\n"
"         (wait_ms: from Redis's now to the first slot; waited_ms: how long\n"
"         sr-rate waited, asks again included)\n"
"  {\"account\":\"c17\",\"class\":\"usage\",\"n\":1,\"status\":\"refused\",\"why\":\"reserve\",\n"
"   \"retry_at\":1780000000500,\"error\":\"...\"}\n"
"         why: wait (the next slot is further away than --wait, or a window),\n"
"         reserve (the other classes hold what srq's reserve leaves them),\n"
"         share (the class holds its max_share), paused, breaker (the\n"
"         account's: no caller sends), over (N with --late is more than the\n"
"         class may ever hold in a window), unknown_account (srq never had a\n"
"         request for it: a typo would pace nobody's calls). retry_at: when to\n"
"         ask again (Redis clock), when known; \"at\": the next slot, for wait.\n"
"show     one JSON line: the rate, the reserve and whether srq is active, srq's\n"
"         calls (this minute and the last), and per class its slots of the\n"
"         last minute, their weight (lateness included), max_share and cap.\n"
"contract one JSON line for a caller that runs the script itself (docs/carriers.md:\n"
"         Sharing the account's rate): {\"script\":\"rate_take\",\"sha1\":..,\"keys\":[3 keys],\n"
"         \"settings\":ARGV[1]}; then ARGV[2..5] are class, n, ahead ms, late ms\n"
"script   the text of rate_take.lua as Redis runs it (its header documents\n"
"         KEYS, ARGV and the reply), for SCRIPT LOAD\n"
"\n"
"Limits (the account's carrier profile, see docs/carriers.md: Carrier profiles):\n"
"  reserve_qps = R     srq's own calls keep R of the account's calls a second\n"
"                      while they have work (asked for a slot within two windows);\n"
"                      when they have none, the reserve is lent to the others\n"
"  max_share = F, max_share.NAME = F\n"
"                      one class takes at most F of the rate (at least 1 a window)\n"
"\n"
"Options:\n"
"  --class NAME  the caller's class, [a-z0-9_]{1,32}, not srq [other]\n"
"  --n N         slots at once, 1..1000 [1]\n"
"  --wait MS     wait for the first slot up to MS ms (0..3600000)\n"
"  --late MS     how much later than its slot a call may reach the carrier\n"
"                (0..10000): the pace is held that much longer per slot, charged\n"
"                to the class [50: sr-rate exiting and curl starting]\n"
"  --redis URL, --prefix P, -h/--help, --version\n"
"Exit: 0 a slot (or show), 1 refused (a record says why), 2 usage, 3 Redis\n"
"  unavailable; each with a JSON record on stdout and the reason on stderr.\n"
"Example (a status poller, in turn with srq's drain):\n"
"  while read -r card; do\n"
"    sr-rate take c17 --class status --wait 5000 >/dev/null || break\n"
"    curl -s \"https://carrier.example/v1/cards/$card/status\"\n"
"  done <cards.txt\n";

static struct sr_config cfg;
static struct sr_redis rds;
static const char *account = "", *cls = "other";
static long n = 1;

/* A record about this take, with the fields every record has. */
static json_t *
record(const char *status)
{
	json_t *o = json_object();

	json_object_set_new(o, "account", json_string(account));
	json_object_set_new(o, "class", json_string(cls));
	json_object_set_new(o, "n", json_integer(n));
	json_object_set_new(o, "status", json_string(status));
	return o;
}

/* Say why on stderr and in the record o (or a new "error" record), and
 * exit with code. */
static void __attribute__((noreturn, format(printf, 3, 4)))
fail(int code, json_t *o, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (!o)
		o = record("error");
	json_object_set_new(o, "error", json_string(msg));
	sr_emit(o);
	fprintf(stderr, "%s: %s\n", sr_prog, msg);
	exit(sr_finish(code));
}

static long
option(const char *name, const char *v, long lo, long hi)
{
	long x = sr_parse_long(v);

	if (x < lo || x > hi)
		fail(SR_EX_USAGE, NULL, "%s: '%s' is not a whole number from %ld to %ld", name, v, lo, hi);
	return x;
}

static int
valid_class(const char *s)
{
	size_t k = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_");

	return k > 0 && k <= 32 && !s[k] && strcmp(s, "srq");
}

/* The settings the scripts take: the account's own (its profile, then the
 * environment), with its reserve and its classes' shares. */
static char *
settings(const struct sr_account *a)
{
	json_t *s = json_loads(a->settings, 0, NULL), *sh = json_object();
	char *out;

	if (!s)
		sr_die(SR_EX_USAGE, "out of memory");
	for (int i = 0; i < a->p->nshares; i++)
		json_object_set_new(sh, a->p->shares[i].cls, json_real(a->p->shares[i].share));
	json_object_set_new(s, "reserve", json_integer(a->reserve_qps));
	json_object_set_new(s, "share", sh);
	if (!(out = json_dumps(s, JSON_COMPACT)))
		sr_die(SR_EX_USAGE, "out of memory");
	json_decref(s);
	return out;
}

/* The reply of a script, or exit 3 with a record. */
static redisReply *
run(enum sr_script script, int nkeys, int argc, const char **argv)
{
	redisReply *rep;

	sr_redis_append_script(&rds, script, nkeys, argc, argv, NULL);
	if (!(rep = sr_redis_reply(&rds)))
		fail(SR_EX_BACKEND, NULL, "Redis: %s", rds.errstr);
	if (rep->type == REDIS_REPLY_ERROR) {
		if (sr_redis_backend_error(rep->str))
			fail(SR_EX_BACKEND, NULL, "Redis: %s", rep->str);
		fail(SR_EX_USAGE, NULL, "%s", rep->str);
	}
	return rep;
}

static long long
elem(const redisReply *r, size_t i)
{
	if (r->type != REDIS_REPLY_ARRAY || i >= r->elements)
		return 0;
	if (r->element[i]->type == REDIS_REPLY_INTEGER)
		return r->element[i]->integer;
	if (r->element[i]->type == REDIS_REPLY_STRING)
		return atoll(r->element[i]->str);
	return 0;
}

static const char *
why_text(const char *why)
{
	if (!strcmp(why, "reserve"))
		return "the other classes hold what srq's reserve (reserve_qps) leaves them";
	if (!strcmp(why, "share"))
		return "the class holds its share (max_share) of the rate";
	if (!strcmp(why, "paused"))
		return "the account is paused";
	if (!strcmp(why, "breaker"))
		return "the account's breaker is open";
	return "the account's next slot is further away";
}

static int
take(const char *set, long wait_ms, long late)
{
	char k[SR_RATE_TAKE_KEYS][SR_KEY_MAX], nbuf[16], ahead[24], lbuf[16];
	/* rate_take.lua's keys and arguments, as its header declares them */
	const char *argv[SR_RATE_TAKE_KEYS + SR_RATE_TAKE_ARGC], **a = argv + SR_RATE_TAKE_KEYS;
	int64_t t0 = sr_mono_ms(), deadline = t0 + (wait_ms >= 0 ? wait_ms : 0);

	sr_keys_account(k, argv, cfg.prefix, account, sr_lua_rate_take_keys);
	a[SR_RATE_TAKE_ARGV_SETTINGS] = set;
	a[SR_RATE_TAKE_ARGV_CLASS] = cls;
	snprintf(nbuf, sizeof nbuf, "%ld", n);
	a[SR_RATE_TAKE_ARGV_N] = nbuf;
	a[SR_RATE_TAKE_ARGV_AHEAD] = ahead;
	snprintf(lbuf, sizeof lbuf, "%ld", late);
	a[SR_RATE_TAKE_ARGV_LATE] = lbuf;
	for (;;) {
		/* Without --wait: a slot within the window (the script grants no
		 * further); with it, within what is left of the wait. */
		int64_t left = deadline - sr_mono_ms();
		redisReply *rep;
		char why[16];
		long long at, now, again;
		json_t *o;

		snprintf(ahead, sizeof ahead, "%lld", (long long)(wait_ms >= 0 ? (left > 0 ? left : 0) :
		    cfg.rate_window_ms));
		rep = run(SR_LUA_RATE_TAKE, SR_RATE_TAKE_KEYS, SR_RATE_TAKE_KEYS + SR_RATE_TAKE_ARGC, argv);
		if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2 ||
		    rep->element[0]->type != REDIS_REPLY_STRING)
			fail(SR_EX_BACKEND, NULL, "rate_take: an answer that is not one");
		snprintf(why, sizeof why, "%s", rep->element[0]->str);
		if (!strcmp(why, "ok")) {
			const redisReply *sl = rep->element[2];
			json_t *slots = json_array();
			int64_t got = sr_mono_ms();

			now = elem(rep, 1);
			for (size_t i = 0; sl->type == REDIS_REPLY_ARRAY && i < sl->elements; i++)
				json_array_append_new(slots, json_integer(sl->element[i]->integer));
			at = json_integer_value(json_array_get(slots, 0));
			/* Never early: the wait counts from when the answer came,
			 * which is after the script read the clock. */
			if (wait_ms >= 0)
				sr_sleep_ms(at - now - (sr_mono_ms() - got));
			o = record("ok");
			json_object_set_new(o, "at", json_integer(at));
			json_object_set_new(o, "wait_ms", json_integer(at - now));
			json_object_set_new(o, "slots", slots);
			json_object_set_new(o, "waited_ms", json_integer(wait_ms >= 0 ? sr_mono_ms() - t0 : 0));
			freeReplyObject(rep);
			sr_emit(o);
			return SR_EX_OK;
		}
		o = record("refused");
		if (!strcmp(why, "over")) {
			long long cap = elem(rep, 1);

			json_object_set_new(o, "why", json_string("over"));
			json_object_set_new(o, "cap", json_integer(cap));
			freeReplyObject(rep);
			fail(SR_EX_REJECTED, o, "account '%s': --n %ld with --late %ld is more than class '%s' may "
			    "ever hold in a window (%lld slots: its max_share of the rate, or srq's reserve)",
			    account, n, late, cls, cap);
		}
		/* when: the first slot (rate) or the end of what holds it;
		 * again: when to ask again. */
		at = elem(rep, 1);
		now = elem(rep, 2);
		again = !strcmp(why, "rate") ? elem(rep, 3) : at;
		json_object_set_new(o, "why", json_string(!strcmp(why, "rate") ? "wait" : why));
		json_object_set_new(o, "retry_at", json_integer(again));
		if (!strcmp(why, "rate"))
			json_object_set_new(o, "at", json_integer(at));
		freeReplyObject(rep);
		left = deadline - sr_mono_ms();
		if (wait_ms < 0)
			fail(SR_EX_REJECTED, o, "account '%s', class '%s': %s: ask again in %lld ms", account, cls,
			    why_text(why), again - now);
		if (at - now > left)
			fail(SR_EX_REJECTED, o, "account '%s', class '%s': %s: no slot within --wait %ld ms "
			    "(not before %lld ms from now)", account, cls, why_text(why), wait_ms, at - now);
		json_decref(o);
		sr_sleep_ms(again - now > 1 ? again - now : 1);
	}
}

/* What a caller in another language needs to run rate_take.lua itself. */
static int
contract(const char *set)
{
	const char *src = sr_lua_source[SR_LUA_RATE_TAKE];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1], k[SR_KEY_MAX];
	json_t *o = json_object(), *keys = json_array();

	if (!EVP_Digest(src, strlen(src), md, &mdlen, EVP_sha1(), NULL))
		fail(SR_EX_USAGE, NULL, "%s", "SHA-1 not available");
	for (unsigned int i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	json_object_set_new(o, "account", json_string(account));
	json_object_set_new(o, "script", json_string("rate_take"));
	json_object_set_new(o, "sha1", json_string(hex));
	for (int i = 0; i < SR_RATE_TAKE_KEYS; i++)
		json_array_append_new(keys,
		    json_string(sr_key_account(k, cfg.prefix, account, sr_lua_rate_take_keys[i])));
	json_object_set_new(o, "keys", keys);
	json_object_set_new(o, "settings", json_string(set));
	sr_emit(o);
	return SR_EX_OK;
}

static int
show(const char *set)
{
	char k[SR_RATE_SHOW_KEYS][SR_KEY_MAX], stats[SR_KEY_MAX];
	/* rate_show.lua's keys and arguments, as its header declares them */
	const char *argv[SR_RATE_SHOW_KEYS + SR_RATE_SHOW_ARGC], **a = argv + SR_RATE_SHOW_KEYS;
	redisReply *rep;
	json_t *got, *o;

	sr_keys_account(k, argv, cfg.prefix, account, sr_lua_rate_show_keys);
	a[SR_RATE_SHOW_ARGV_SETTINGS] = set;
	a[SR_RATE_SHOW_ARGV_STATS] = sr_key_account(stats, cfg.prefix, account, "stats:");
	rep = run(SR_LUA_RATE_SHOW, SR_RATE_SHOW_KEYS, SR_RATE_SHOW_KEYS + SR_RATE_SHOW_ARGC, argv);
	got = rep->type == REDIS_REPLY_STRING ? json_loads(rep->str, 0, NULL) : NULL;
	freeReplyObject(rep);
	if (!json_is_object(got))
		fail(SR_EX_BACKEND, NULL, "rate_show: an answer that is not one");
	/* In an order for people (the script's encoder keeps none). */
	static const char *const order[] = { "now", "qps", "qps_effective", "burst", "window_ms",
		"slots_per_window", "reserve_qps", "srq_active", "srq_asked_at", "others_cap",
		"paused_or_breaker", "srq", "classes", NULL };
	o = json_object();
	json_object_set_new(o, "account", json_string(account));
	for (int i = 0; order[i]; i++)
		if (json_object_get(got, order[i]))
			json_object_set(o, order[i], json_object_get(got, order[i]));
	json_object_update_missing(o, got);
	json_decref(got);
	sr_emit(o);
	return SR_EX_OK;
}

int
main(int argc, char *argv[])
{
	enum { O_CLASS = 1, O_N, O_WAIT, O_LATE };
	static const struct option longopts[] = {
		SR_COMMON_LONGOPTS,
		{ "class", required_argument, NULL, O_CLASS },
		{ "n", required_argument, NULL, O_N },
		{ "wait", required_argument, NULL, O_WAIT },
		{ "late", required_argument, NULL, O_LATE },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd;
	long wait_ms = -1, late = 50;
	int c, rc;
	char *set;
	char key[SR_KEY_MAX];
	redisReply *rep;

	sr_prog = "sr-rate";
	sr_config_init(&cfg);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_CLASS:
			cls = optarg;
			if (!valid_class(optarg))
				fail(SR_EX_USAGE, NULL, "--class: '%s' is not [a-z0-9_]{1,32}, or is srq (srq's own "
				    "calls)", optarg);
			break;
		case O_N: n = option("--n", optarg, 1, 1000); break;
		case O_WAIT: wait_ms = option("--wait", optarg, 0, 3600000); break;
		case O_LATE: late = option("--late", optarg, 0, 10000); break;
		default:
			if (!sr_config_option(&cfg, c, optarg, usage))
				sr_usage(SR_EX_USAGE, usage);
		}
	}
	if (argc - optind == 1 && !strcmp(argv[optind], "script")) {
		fputs(sr_lua_source[SR_LUA_RATE_TAKE], stdout);
		return sr_finish(SR_EX_OK);
	}
	if (argc - optind != 2 || (strcmp(argv[optind], "take") && strcmp(argv[optind], "show") &&
	    strcmp(argv[optind], "contract"))) {
		fprintf(stderr, "%s: %s\n", sr_prog, argc - optind < 1 ? "take, show, contract or script?" :
		    argc - optind == 1 ? "which account?" : "expected: take|show|contract ACCOUNT, or script");
		sr_usage(SR_EX_USAGE, usage);
	}
	cmd = argv[optind];
	account = argv[optind + 1];
	if (!sr_valid_id(account))
		fail(SR_EX_USAGE, NULL, "account '%s' is not [A-Za-z0-9_.-]{1,64}", account);
	if ((rc = sr_redis_connect(&rds, &cfg)) < 0) /* -2: the configuration's fault */
		fail(rc == -2 ? SR_EX_USAGE : SR_EX_BACKEND, NULL, "%s", rds.errstr);
	{
		/* A mistyped account would pace nobody's calls. */
		const char *m[] = { "SISMEMBER", sr_key_accounts(key, cfg.prefix), account };

		if (!(rep = sr_redis_cmd(&rds, 3, m)))
			fail(SR_EX_BACKEND, NULL, "Redis: %s", rds.errstr);
		if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 0) {
			json_t *o = record("refused");

			freeReplyObject(rep);
			json_object_set_new(o, "why", json_string("unknown_account"));
			fail(SR_EX_REJECTED, o, "account '%s' has never had a request under the prefix '%s' (is it "
			    "spelt right? is SRQ_PREFIX the right one?)", account, cfg.prefix);
		}
		freeReplyObject(rep);
	}
	set = settings(sr_account(&cfg, account));
	rc = !strcmp(cmd, "take") ? take(set, wait_ms, late) : !strcmp(cmd, "show") ? show(set) :
	    contract(set);
	free(set);
	sr_accounts_free();
	sr_redis_close(&rds);
	return sr_finish(rc);
}
