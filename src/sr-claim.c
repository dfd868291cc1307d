/* sr-claim - the dispatcher: lease due commands and print them as tasks.
 *
 * Each round calls claim.lua once per account (pipelined), starting from a
 * different account each round so no account is always served first. A round
 * takes at most --batch commands per account, and claim.lua never hands out
 * more than the account's max-running allows; the rate itself is enforced at
 * the gate in sr-exec, right before each call.
 *
 * Tasks are printed, and stdout flushed, as soon as each round is done. A
 * claimed task that is never confirmed (this pipeline died) becomes claimable
 * again when its lease expires: nothing is lost by killing any stage.
 *
 * A claim's token is what sr-confirm trusts a result line for: claim.lua
 * makes it from the version and a hash of this process's secret (16 random
 * bytes, read once) and the account's sequence, so it cannot be guessed.
 *
 * --until-empty ends when nothing is queued, or when all that is left is
 * held by a pause or an open breaker that lasts past --for (without --for:
 * at once): waiting would only spin until --for. It says which account
 * holds what, until when, and exits 4. SIGTERM ends it as --for does.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "sr.h"

static const char usage[] =
"usage: sr-claim [--follow | --until-empty] [--for SECONDS] [--max N] [--carrier ID]...\n"
"\n"
"Claim due stop/resume commands from the account queues (all accounts unless\n"
"--carrier is given) and print one task per line for sr-exec.\n"
"\n"
"Options:\n"
"  --follow         keep claiming, sleeping until the next command is due\n"
"  --until-empty    follow until no command is queued at all (claimed ones count),\n"
"                   or all that is left is held by a pause or an open breaker\n"
"                   that lasts past --for: each such account said on stderr, exit 4\n"
"  --for SECONDS    stop claiming after SECONDS and exit\n"
"  --max N          claim at most N tasks in all\n"
"  --carrier ID     only this account (repeatable)\n"
"  --batch N        at most N tasks per account per round (default 64)\n"
"  --redis URL, --prefix P, -h/--help, --version\n"
"\n"
"Task: {\"task\":\"call\",\"card\":\"...\",\"carrier\":\"c17\",\"action\":\"stop\",\"ver\":7,\n"
"       \"token\":\"7-9c1f0e5a7d2b4e83\",\"attempt\":1,\"reason\":\"...\",\"scene\":\"...\",\n"
"       \"lane\":\"normal\"}\n"
"task is \"query\" when an unknown result is being confirmed. token is the claim's:\n"
"the version and 16 hex digits no one can guess; only its results count.\n"
"lane, the order in which an account's work is claimed and sent: query (a status\n"
"query due), retry (a call the carrier did not apply), high, normal, bulk (a tenth\n"
"kept for bulk). An account's claims in flight are at most what its rate sends in\n"
"a second plus what its calls keep out: claimed ahead, a task only waits.\n"
"Environment: SRQ_LEASE_MS (default 60000; at least 1000 more than every call's\n"
"  timeout, SRQ_GATEWAY_TIMEOUT_MS or a profile's timeout_ms), SRQ_MAX_RUNNING,\n"
"  SRQ_MIN_INTERVAL_MS, SRQ_PROFILES.\n"
"Exit: 0 done, 2 usage or configuration (a lease a call may outlive), 3 Redis\n"
"  unavailable, 4 --until-empty left work held by a pause or a breaker.\n"
"SIGTERM or SIGINT stops it as --for does: what it printed was claimed, and is\n"
"handed on; a second one kills it (what it claimed then waits for its lease).\n"
"Takes leases: what it prints is claimed for SRQ_LEASE_MS; to look without\n"
"taking, use sr-admin why/show.\n"
"Example (cron, every minute, under flock; or srq-drain, which also reports):\n"
"  flock -n /tmp/srq-drain.lock sr-claim --follow --for 55 | sr-exec | sr-confirm\n"
"Never wrap it in timeout: --for stops claiming, the rest finishes by itself.\n";

static struct sr_config cfg;
static struct sr_redis rds;
static const char **carriers;
static int ncarriers, fixed_carriers;
static int status = SR_EX_OK; /* SR_EX_BACKEND once a claim script failed */
static char secret[33]; /* claim.lua's ARGV[4]: 16 random bytes, in hex */

/* The accounts the last round found held (a pause, an open breaker) with
 * commands queued: claim.lua's held and held_until, its now, its queued. */
static struct held {
	char carrier[65];
	int breaker;
	long long until, now, queued; /* until 0: no end (a limit of 0) */
} *held;
static int nheld;

/* The account list: --carrier, or the accounts set (refreshed every round). */
static int
load_accounts(void)
{
	char key[SR_KEY_MAX];
	const char *argv[] = { "SMEMBERS", sr_key_accounts(key, cfg.prefix) };
	redisReply *rep;

	if (fixed_carriers)
		return 0;
	if (!(rep = sr_redis_cmd(&rds, 2, argv)))
		return -1;
	for (int i = 0; i < ncarriers; i++)
		free((char *)carriers[i]);
	ncarriers = 0;
	carriers = sr_realloc(carriers, (rep->elements + 1) * sizeof *carriers);
	for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++)
		if (sr_valid_id(rep->element[i]->str))
			carriers[ncarriers++] = sr_strdup(rep->element[i]->str);
	freeReplyObject(rep);
	return 0;
}

/* claim.lua's tasks come as one flat array, this many values to a task. */
#define CLAIM_TASK_VALUES 10

/* One task: the 10 values claim.lua gives it, at t[0..9]. */
static void
emit_task(const char *carrier, redisReply **t)
{
	json_t *o = json_object();

	json_object_set_new(o, "task", json_string(t[0]->str));
	json_object_set_new(o, "card", json_string(t[1]->str));
	json_object_set_new(o, "carrier", json_string(carrier));
	json_object_set_new(o, "action", json_string(t[2]->str));
	json_object_set_new(o, "ver", json_integer(t[3]->integer));
	json_object_set_new(o, "token", json_string(t[4]->str));
	json_object_set_new(o, "attempt", json_integer(t[5]->integer));
	json_object_set_new(o, "reason", json_string(t[6]->str));
	json_object_set_new(o, "scene", json_string(t[7]->str));
	json_object_set_new(o, "lane", json_string(t[8]->str));
	/* A query's order at the carrier, when it gave one (not UTF-8: none,
	 * and the card's status is asked instead). */
	if (t[9]->type == REDIS_REPLY_STRING && t[9]->len)
		json_object_set_new(o, "txn", json_stringn(t[9]->str, t[9]->len));
	sr_emit(o);
}

/* Note an account held with commands queued (rep: claim.lua's reply);
 * 1 when it is. */
static int
note_held(const char *carrier, redisReply *rep)
{
	struct held *h;

	if (rep->element[2]->integer <= 0 || rep->element[4]->type != REDIS_REPLY_STRING ||
	    rep->element[4]->len == 0)
		return 0;
	held = sr_realloc(held, (size_t)(nheld + 1) * sizeof *held);
	h = &held[nheld++];
	snprintf(h->carrier, sizeof h->carrier, "%s", carrier);
	h->breaker = !strcmp(rep->element[4]->str, "breaker");
	h->until = rep->element[5]->integer;
	h->now = rep->element[3]->integer;
	h->queued = rep->element[2]->integer;
	return 1;
}

/* Whether every hold the last round found lasts past --for (or has no
 * end): then waiting for them only spins. */
static int
holds_outlast(const struct sr_dispatch *d)
{
	long long left = sr_dispatch_left_ms(d);

	for (int i = 0; i < nheld; i++)
		if (left >= 0 && held[i].until > 0 && held[i].until - held[i].now <= left)
			return 0;
	return 1;
}

/* 9999-12-31: a pause or a breaker opened by hand with no end. */
#define HELD_FOREVER 253402300799000LL

static void
say_held(void)
{
	for (int i = 0; i < nheld; i++) {
		const struct held *h = &held[i];

		if (h->until <= 0)
			sr_warn("account '%s': %lld commands held: its limits are 0 (sr-admin limits)",
			    h->carrier, h->queued);
		else if (h->until >= HELD_FOREVER)
			sr_warn("account '%s': %lld commands held by %s", h->carrier, h->queued,
			    h->breaker ? "its breaker, open until closed (sr-admin breaker)" :
			    "a pause until resumed (sr-admin resume)");
		else
			sr_warn("account '%s': %lld commands held by %s until %s", h->carrier, h->queued,
			    h->breaker ? "its breaker, open" : "a pause", sr_when(h->until, h->now));
	}
}

/* One round over every account. Returns tasks claimed, or -1 (Redis down,
 * or refusing every account's claim).
 * *queued gets the number of queued commands, *held_queued those of them
 * at accounts held (noted in held[]), *wait_ms how long until the next one
 * is due. */
static long
round_robin(int start, long budget, long batch, long long *queued, long long *held_queued,
    long long *wait_ms)
{
	char keys[SR_CLAIM_KEYS][SR_KEY_MAX], prefix[SR_KEY_MAX], max[24];
	long claimed = 0;
	int failed = 0, seen = 0;

	*queued = *held_queued = 0;
	*wait_ms = 250;
	nheld = 0;
	/* A limited budget (--max) is shared evenly, the remainder going to
	 * the accounts first in this round's rotation. A budget short of one
	 * per account goes one each to the next accounts, and what they leave
	 * unclaimed to the ones after them, until every account was asked. */
	while (seen < ncarriers && claimed < budget) {
		long left = budget - claimed;
		int n = left < ncarriers - seen ? (int)left : ncarriers - seen;
		long share = left / n, extra = left % n;

		for (int k = 0; k < n; k++) {
			const char *c = carriers[(start + seen + k) % ncarriers];
			/* claim.lua's keys and arguments, as its header declares them */
			const char *argv[SR_CLAIM_KEYS + SR_CLAIM_ARGC], **a = argv + SR_CLAIM_KEYS;
			long mine = share + (k < extra);

			snprintf(max, sizeof max, "%ld", mine < batch ? mine : batch);
			sr_keys_account(keys, argv, cfg.prefix, c, sr_lua_claim_keys);
			a[SR_CLAIM_ARGV_SETTINGS] = sr_account(&cfg, c)->settings;
			a[SR_CLAIM_ARGV_CARD_PREFIX] = sr_key_account(prefix, cfg.prefix, c, "card:");
			a[SR_CLAIM_ARGV_MAX] = max;
			a[SR_CLAIM_ARGV_SECRET] = secret;
			sr_redis_append_script(&rds, SR_LUA_CLAIM, SR_CLAIM_KEYS, SR_CLAIM_KEYS + SR_CLAIM_ARGC,
			    argv, NULL);
		}
		for (int k = 0; k < n; k++) {
			const char *c = carriers[(start + seen + k) % ncarriers];
			redisReply *rep = sr_redis_reply(&rds);

			if (!rep)
				return -1;
			if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 6) {
				/* Nothing was claimed for this account (a script either
				 * runs whole or not at all); the others go on, and the
				 * exit says so. Said once, after the round. */
				snprintf(rds.errstr, sizeof rds.errstr, "claim script failed for account '%s': %s",
				    c, rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
				freeReplyObject(rep);
				failed++;
				continue;
			}
			for (size_t i = 0; i + CLAIM_TASK_VALUES <= rep->element[0]->elements;
			    i += CLAIM_TASK_VALUES)
				emit_task(c, rep->element[0]->element + i);
			claimed += (long)(rep->element[0]->elements / CLAIM_TASK_VALUES);
			*queued += rep->element[2]->integer;
			if (note_held(c, rep))
				*held_queued += rep->element[2]->integer;
			if (rep->element[1]->integer >= 0) {
				long long w = rep->element[1]->integer - rep->element[3]->integer;

				if (w < *wait_ms)
					*wait_ms = w;
			}
			freeReplyObject(rep);
		}
		seen += n;
	}
	sr_flush();
	if (seen > 0 && failed == seen)
		return -1; /* Redis refuses every claim (read only, out of memory) */
	if (failed) {
		sr_warn("%d of %d accounts: %s", failed, seen, rds.errstr);
		status = SR_EX_BACKEND;
	}
	return claimed;
}

int
main(int argc, char *argv[])
{
	enum { O_CARRIER = 1 };
	static const struct option longopts[] = {
		SR_COMMON_LONGOPTS,
		SR_DISPATCH_LONGOPTS,
		{ "carrier", required_argument, NULL, O_CARRIER },
		{ NULL, 0, NULL, 0 },
	};
	struct sr_dispatch d;
	int c, start = 0;
	long long queued = 0, held_queued = 0;

	sr_prog = "sr-claim";
	sr_log_stamp = 1; /* it runs unattended: its stderr is a log */
	sr_config_init(&cfg);
	sr_dispatch_init(&d);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == O_CARRIER) {
			if (!sr_valid_id(optarg))
				sr_die(SR_EX_USAGE, "--carrier: '%s' must match [A-Za-z0-9_.-]{1,64}", optarg);
			carriers = sr_realloc(carriers, (size_t)(ncarriers + 1) * sizeof *carriers);
			carriers[ncarriers++] = sr_strdup(optarg);
			fixed_carriers = 1;
		} else if (!sr_dispatch_option(&d, c, optarg) && !sr_config_option(&cfg, c, optarg, usage))
			sr_usage(SR_EX_USAGE, usage);
	}
	sr_no_operands(argc, argv, usage);
	sr_lease_require(&cfg);
	{
		unsigned char r[16];

		if (RAND_bytes(r, sizeof r) != 1)
			sr_die(SR_EX_BACKEND, "cannot read random bytes for the claim tokens");
		for (size_t i = 0; i < sizeof r; i++)
			snprintf(secret + 2 * i, 3, "%02x", r[i]);
		memset(r, 0, sizeof r);
	}
	sr_redis_open(&rds, &cfg);

	while (!sr_dispatch_done(&d)) {
		long long wait_ms = 250;
		long got = 0;
		int on;

		queued = held_queued = 0;
		if ((on = sr_switch_get(&rds, &cfg)) < 0 || load_accounts() < 0)
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		if (!on) {
			/* The direct path is in charge; what is queued is kept. */
			if (!sr_dispatch_switch_off(&d, "queued commands"))
				break;
			continue;
		}
		d.said_off = 0;
		if (ncarriers > 0 && (got = round_robin(start++, sr_dispatch_budget(&d, d.batch * ncarriers),
		    d.batch, &queued, &held_queued, &wait_ms)) < 0)
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		d.total += got;
		if (got > 0 && !(d.until_empty && queued == 0))
			continue; /* more may be due right now */
		if (d.until_empty && queued > 0 && queued == held_queued && holds_outlast(&d))
			break;
		if (!sr_dispatch_idle(&d, queued, wait_ms))
			break;
	}
	/* --until-empty ended with work left, all of it held: said, exit 4. */
	if (d.until_empty && queued > 0 && queued == held_queued) {
		say_held();
		status = sr_worst(status, SR_EX_HELD);
	}
	for (int i = 0; i < ncarriers; i++)
		free((char *)carriers[i]);
	free(carriers);
	free(held);
	sr_redis_close(&rds);
	sr_accounts_free();
	return sr_finish(status);
}
