/* admin/migrate.c - sr-admin migrate: move a deployment's data to the
 * layout this release writes (docs/operations.md "Upgrading from 0.1 to 0.2"):
 *   - facts: every card's and device's facts hash has its long field names
 *     renamed to the short ones (migrate_facts.lua);
 *   - idle cards: every card's hash that no longer holds a command is put
 *     to sleep in its idle bucket (migrate_card.lua).
 * The keys are walked with SCAN on every master, one script per key,
 * pipelined. The tools read both layouts meanwhile, so it runs beside a
 * live pipeline, and again without harm: what is already migrated is
 * counted and left alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"

#define CHUNK 256

struct walk {
	enum sr_script script;
	int with_bucket;   /* KEYS[2]: the card's idle bucket */
	const char **args; /* the script's ARGV */
	int nargs;
	char *keys[CHUNK];
	int n;
	long scanned, changed, refused;
};

/* Run the script over the keys collected so far. */
static void
flush(struct walk *w)
{
	for (int i = 0; i < w->n; i++) {
		const char *argv[2 + 2 * 16];
		char bucket[SR_KEY_MAX];
		int nk = 1;

		argv[0] = w->keys[i];
		if (w->with_bucket) {
			sr_key_idle_of(bucket, w->keys[i]); /* collect() kept card keys only */
			argv[nk++] = bucket;
		}
		if (w->nargs)
			memcpy(argv + nk, w->args, (size_t)w->nargs * sizeof *argv);
		sr_redis_append_script(&rds, w->script, nk, nk + w->nargs, argv, NULL);
	}
	for (int i = 0; i < w->n; i++) {
		redisReply *rep = sr_redis_reply(&rds);

		if (!rep)
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		if (rep->type == REDIS_REPLY_INTEGER) {
			w->changed += rep->integer > 0;
		} else {
			fprintf(stderr, "%s: %s: not migrated: %s\n", sr_prog, w->keys[i],
			    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
			w->refused++;
		}
		freeReplyObject(rep);
		free(w->keys[i]);
	}
	w->n = 0;
}

static void
collect(const char *key, void *arg)
{
	struct walk *w = arg;
	char bucket[SR_KEY_MAX];
	const char *keys[2] = { key, bucket };

	if (w->with_bucket && !sr_key_idle_of(bucket, key)) {
		sr_warn("%s: not a card's key, left alone", key);
		return;
	}
	w->scanned++;
	/* A scan's pattern is wider than a script's keys (carrier:*:card:*
	 * also finds an untagged t:carrier:c1:card:X): such a key is no card
	 * of ours, and a script must never be sent it. */
	if (sr_lua_check_keys(w->script, 1 + w->with_bucket, keys, NULL, NULL, 0)) {
		fprintf(stderr, "%s: %s: not migrated: not a key of srq's layout (docs/redis.md)\n", sr_prog,
		    key);
		w->refused++;
		return;
	}
	w->keys[w->n++] = sr_strdup(key);
	if (w->n == CHUNK)
		flush(w);
}

/* Walk the keys of each pattern (after the prefix) with script; one record. */
static long
walk(const char *what, enum sr_script script, const char **args, int nargs,
    const char *const *patterns)
{
	struct walk w = { .script = script, .with_bucket = script == SR_LUA_MIGRATE_CARD, .args = args,
		.nargs = nargs };
	char pattern[SR_KEY_MAX];

	for (; *patterns; patterns++) {
		snprintf(pattern, sizeof pattern, "%s:%s", cfg.prefix, *patterns);
		sr_redis_scan_must(&rds, pattern, 0, collect, &w);
	}
	flush(&w);
	sr_out(json_pack("{ss sI sI sI}", "migrated", what, "keys", (json_int_t)w.scanned, "changed",
	    (json_int_t)w.changed, "refused", (json_int_t)w.refused));
	return w.refused;
}

int
admin_migrate(int argc, char **argv)
{
	static const char *const facts[] = { "card:*:facts", "device:*:facts", NULL };
	static const char *const cards[] = { "carrier:*:card:*", NULL };
	const char *renames[2 * 16];
	int n = sr_facts_renames(renames, (int)(sizeof renames / sizeof renames[0]));
	long refused;

	(void)argc;
	(void)argv;
	refused = walk("facts", SR_LUA_MIGRATE_FACTS, renames, n, facts);
	refused += walk("idle_cards", SR_LUA_MIGRATE_CARD, NULL, 0, cards);
	return refused ? SR_EX_REJECTED : SR_EX_OK;
}
