/* admin/list.c - sr-admin's views of one account's commands, and the bulk
 * actions built on them.
 *
 *   list ACCOUNT [--state S] [--reason R] [--error-class C] [--limit N]
 *   retry --account A [--state frozen] [--error-class C] [--dry-run] --reason TEXT
 *
 * Read only: a list takes no lease and changes nothing (sr-claim is what
 * takes). It walks the account's queues and its frozen set a page at a
 * time, reads each command, and says where it stands:
 *   frozen      out of the queues until retried (a permanent rejection, or
 *               too many failures)
 *   claimed     leased by a dispatcher (its call may be in flight)
 *   paused      its account is paused (or has a limit below 1): nothing
 *               of it is called, a status query neither, until resumed
 *   confirming  an unknown result waiting for its status query
 *   due         due now, waiting for a dispatcher
 *   backoff     failed, waiting to be tried again
 *   scheduled   waiting for its time (the card's interval, a Retry-After)
 * A bulk retry is the list, of every command that passes (no --limit),
 * then one atomic retry per card (the same as 'retry CARD'), each audited;
 * --dry-run prints what it would retry. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"

long list_limit = 1000;
int dry_run;
const char *state_opt, *error_class_opt;

static const char *const fields[] = { "action", "ver", "prio", "fails", "last_error", "last_http",
	"reason", "scene", "frozen", "claim", "lease_until", "confirming", NULL };
enum { F_ACTION, F_VER, F_PRIO, F_FAILS, F_LAST_ERROR, F_LAST_HTTP, F_REASON, F_SCENE, F_FROZEN,
	F_CLAIM, F_LEASE, F_CONFIRMING, F_COUNT };

static const char *reason_match; /* list: --reason filters on the command's reason */

static const char *const states[] = { "frozen", "claimed", "paused", "confirming", "due", "backoff",
	"scheduled", NULL };

/* --error-class: 5xx, 4xx, an HTTP status (403), or none (no answer). */
static int
class_matches(const char *cls, long long http)
{
	if (!cls)
		return 1;
	if (!strcmp(cls, "5xx"))
		return http >= 500 && http <= 599;
	if (!strcmp(cls, "4xx"))
		return http >= 400 && http <= 499;
	if (!strcmp(cls, "none"))
		return http == 0;
	return http == sr_parse_long(cls);
}

static void
check_options(void)
{
	int ok = !state_opt;

	for (int i = 0; states[i] && !ok; i++)
		ok = !strcmp(state_opt, states[i]);
	if (!ok)
		sr_die(SR_EX_USAGE, "--state: '%s' is not one of frozen, claimed, paused, confirming, due, "
		    "backoff, scheduled", state_opt);
	if (error_class_opt && strcmp(error_class_opt, "5xx") && strcmp(error_class_opt, "4xx") &&
	    strcmp(error_class_opt, "none") && (sr_parse_long(error_class_opt) < 100 ||
	    sr_parse_long(error_class_opt) > 599))
		sr_die(SR_EX_USAGE, "--error-class: '%s' is not 5xx, 4xx, none or an HTTP status",
		    error_class_opt);
}

/* A command's fields, as read: its hash's, or packed (sr_key_wait). */
struct command {
	const char *v[F_COUNT];
	char packed[F_COUNT][130];
};

static const char *
field(const struct command *h, int f)
{
	return h->v[f];
}

static long long
num(const struct command *h, int f)
{
	const char *s = field(h, f);

	return s ? atoll(s) : 0;
}

/* The command of a card from the replies to its hash's HMGET (r), or with
 * no command there, to its wait and idle entries' HGETs (w, i: a command
 * waiting packed for its claim). */
static void
command_read(struct command *h, redisReply *r, redisReply *w, redisReply *i)
{
	static const struct { int f, i, idle; } map[] = {
		{ F_ACTION, SR_WAIT_ACTION, 0 }, { F_REASON, SR_WAIT_REASON, 0 },
		{ F_SCENE, SR_WAIT_SCENE, 0 }, { F_PRIO, SR_WAIT_PRIO, 0 }, { F_VER, SR_IDLE_VER, 1 },
	};

	for (int f = 0; f < F_COUNT; f++)
		h->v[f] = r->type == REDIS_REPLY_ARRAY && (size_t)f < r->elements &&
		    r->element[f]->type == REDIS_REPLY_STRING ? r->element[f]->str : NULL;
	if (h->v[F_ACTION] || h->v[F_VER] || w->type != REDIS_REPLY_STRING)
		return;
	for (size_t m = 0; m < sizeof map / sizeof map[0]; m++) {
		redisReply *from = map[m].idle ? i : w;

		if (from->type == REDIS_REPLY_STRING &&
		    (map[m].idle ? sr_idle_get : sr_wait_get)(from->str, map[m].i, h->packed[map[m].f],
		    sizeof h->packed[0]))
			h->v[map[m].f] = h->packed[map[m].f];
	}
}

/* Where one command stands; its record if it passes the filters. paused:
 * its account holds every call (as sr-admin why says "paused"). */
static json_t *
card_record(const char *account, const char *card, const struct command *h, int in_frozen,
    long long due, long long now, int paused)
{
	const char *state, *filter = reason_match;
	char iso[40];
	json_t *o;

	if (!field(h, F_ACTION))
		return NULL; /* finished since it was listed */
	if (in_frozen || num(h, F_FROZEN) > 0)
		state = "frozen";
	else if (field(h, F_CLAIM) && num(h, F_LEASE) > now)
		state = "claimed";
	else if (paused)
		state = "paused";
	else if (num(h, F_CONFIRMING) > 0) /* "0": its query saw the call had not applied */
		state = "confirming";
	else if (due <= now)
		state = "due";
	else if (num(h, F_FAILS) > 0)
		state = "backoff";
	else
		state = "scheduled";
	if ((state_opt && strcmp(state, state_opt)) ||
	    (filter && (!field(h, F_REASON) || strcmp(filter, field(h, F_REASON)))) ||
	    (error_class_opt && (!field(h, F_LAST_HTTP) || !class_matches(error_class_opt, num(h, F_LAST_HTTP)))))
		return NULL;
	o = json_pack("{ss ss ss ss sI}", "card", card, "carrier", account, "state", state,
	    "action", field(h, F_ACTION), "ver", (json_int_t)num(h, F_VER));
	if (field(h, F_REASON))
		json_object_set_new(o, "reason", json_string(field(h, F_REASON)));
	if (field(h, F_SCENE))
		json_object_set_new(o, "scene", json_string(field(h, F_SCENE)));
	if (!in_frozen) {
		json_object_set_new(o, "due_ms", json_integer(due));
		/* (for people, with --local, in their zone) */
		json_object_set_new(o, "due_at", json_string(sr_iso_people(iso, sizeof iso, due)));
	}
	if (num(h, F_FAILS))
		json_object_set_new(o, "fails", json_integer(num(h, F_FAILS)));
	if (field(h, F_LAST_HTTP))
		json_object_set_new(o, "http", json_integer(num(h, F_LAST_HTTP)));
	if (field(h, F_LAST_ERROR))
		json_object_set_new(o, "last_error", json_string(field(h, F_LAST_ERROR)));
	return o;
}

/* Call fn on each command of the account that passes the filters, up to
 * limit; returns how many. Pages of 500: a big backlog is never read in one
 * reply. */
static long
walk(const char *account, long limit, void (*fn)(json_t *, void *), void *arg)
{
	static const char *qs[] = { "stop_resume:high", "stop_resume", "stop_resume:bulk", "frozen" };
	char key[SR_KEY_MAX], ck[SR_KEY_MAX];
	long found = 0;
	int64_t now = sr_redis_time_ms(&rds);
	const struct sr_why_account *acc;
	int paused;

	if (now < 0)
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	acc = account_why_load(account);
	paused = acc->limit_below_1 || acc->pause_until > now;
	for (int q = 0; q < 4 && found < limit; q++) {
		sr_key_account(key, cfg.prefix, account, qs[q]);
		for (long off = 0; found < limit; off += 500) {
			char start[24], stop[24];
			const char *z[] = { "ZRANGE", key, start, stop, "WITHSCORES" };
			redisReply *page;

			snprintf(start, sizeof start, "%ld", off);
			snprintf(stop, sizeof stop, "%ld", off + 499);
			page = cmd(5, z);
			if (page->type != REDIS_REPLY_ARRAY || page->elements == 0) {
				freeReplyObject(page);
				break;
			}
			/* Per card its wait and idle entries, then its hash: a
			 * claim moves a waiting command from the first into the
			 * last, never back, so one read in between sees it once. */
			for (size_t i = 0; i + 1 < page->elements; i += 2) {
				const char *card = page->element[i]->str;
				char wk[SR_KEY_MAX], ik[SR_KEY_MAX];
				const char *field = sr_key_wait(wk, cfg.prefix, account, card);
				const char *w[] = { "HGET", wk, field }, *b[] = { "HGET", ik, field };
				const char *a[2 + F_COUNT] = { "HMGET", sr_key_card(ck, cfg.prefix, account, card) };

				sr_key_idle(ik, cfg.prefix, account, card);
				for (int f = 0; f < F_COUNT; f++)
					a[2 + f] = fields[f];
				sr_redis_append(&rds, 3, w, NULL);
				sr_redis_append(&rds, 3, b, NULL);
				sr_redis_append(&rds, 2 + F_COUNT, a, NULL);
			}
			for (size_t i = 0; i + 1 < page->elements; i += 2) {
				redisReply *w = sr_redis_reply(&rds), *b = w ? sr_redis_reply(&rds) : NULL;
				redisReply *h = b ? sr_redis_reply(&rds) : NULL;
				json_t *o = NULL;

				if (!h)
					sr_die(SR_EX_BACKEND, "%s", rds.errstr);
				if (found < limit) {
					struct command c;

					command_read(&c, h, w, b);
					o = card_record(account, page->element[i]->str, &c, q == 3,
					    atoll(page->element[i + 1]->str), now, paused);
				}
				freeReplyObject(w);
				freeReplyObject(b);
				freeReplyObject(h);
				if (o) {
					found++;
					fn(o, arg);
				}
			}
			freeReplyObject(page);
		}
	}
	return found;
}

static void
print(json_t *o, void *arg)
{
	(void)arg;
	sr_out(o);
}

int
admin_list(int argc, char **argv)
{
	long n;

	(void)argc;
	if (!sr_valid_id(argv[0]))
		command_usage();
	check_options();
	known_account(argv[0], 0);
	reason_match = reason[0] ? reason : NULL;
	n = walk(argv[0], list_limit, print, NULL);
	if (n == list_limit)
		fprintf(stderr, "%s: list: stopped at --limit %ld\n", sr_prog, list_limit);
	return SR_EX_OK;
}

struct ids {
	char **v;
	long n;
};

static void
collect(json_t *o, void *arg)
{
	struct ids *ids = arg;

	ids->v = sr_realloc(ids->v, (size_t)(ids->n + 1) * sizeof *ids->v);
	ids->v[ids->n++] = sr_strdup(sr_jstr(o, "card"));
	if (dry_run)
		sr_out(o);
	else
		json_decref(o);
}

int
admin_retry_account(const char *account)
{
	struct ids ids = { NULL, 0 };
	int status = SR_EX_OK;

	check_options();
	if (!state_opt)
		state_opt = "frozen"; /* what a bulk retry is for */
	/* The filter is on the command's own reason only for list; here
	 * --reason is the operator's, for the audit. */
	if (!dry_run)
		need_reason("retry --account");
	known_account(account, 0);
	/* Every one, as the operator asked: --limit is a list's, for people
	 * reading it; a retry that stopped at it would leave the rest frozen
	 * without a word. */
	walk(account, LONG_MAX, collect, &ids);
	fprintf(stderr, "%s: %s %ld %s command%s of account '%s'%s%s\n", sr_prog,
	    dry_run ? "would retry" : "retrying", ids.n, state_opt, ids.n == 1 ? "" : "s", account,
	    error_class_opt ? " with last error class " : "", error_class_opt ? error_class_opt : "");
	for (long i = 0; i < ids.n; i++) {
		if (!dry_run)
			status = sr_worst(status, card_mutate("retry", ids.v[i], account));
		free(ids.v[i]);
	}
	free(ids.v);
	return status;
}
