/* admin_migrate.c - sr-admin migrate: move a deployment's data to the
 * layout this release writes (README "Upgrading from 0.1"). Today that is
 * the facts hashes' short fields: every card's and device's facts hash is
 * walked (SCAN, on every master) and its old long-named fields renamed by
 * migrate_facts.lua, one hash at a time, pipelined. The readers understand
 * both layouts meanwhile, so it runs beside a live pipeline, and again
 * without harm: a hash already migrated is counted and left alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"

#define CHUNK 256

struct walk {
	char *keys[CHUNK];
	int n;
	long scanned, migrated, fields, refused;
	const char *renames[2 * 16];
	int nrenames;
};

/* Run the script over the keys collected so far. */
static void
flush(struct walk *w)
{
	for (int i = 0; i < w->n; i++) {
		const char *argv[1 + 2 * 16];

		argv[0] = w->keys[i];
		memcpy(argv + 1, w->renames, (size_t)w->nrenames * sizeof *argv);
		sr_redis_append_script(&rds, SR_LUA_MIGRATE_FACTS, 1, 1 + w->nrenames, argv, NULL);
	}
	for (int i = 0; i < w->n; i++) {
		redisReply *rep = sr_redis_reply(&rds);

		if (!rep)
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		if (rep->type == REDIS_REPLY_INTEGER) {
			w->migrated += rep->integer > 0;
			w->fields += rep->integer;
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

	w->scanned++;
	w->keys[w->n++] = sr_strdup(key);
	if (w->n == CHUNK)
		flush(w);
}

int
admin_migrate(int argc, char **argv)
{
	static const char *const kinds[] = { "card", "device" };
	struct walk w = { .n = 0 };
	char pattern[SR_KEY_MAX];

	(void)argv;
	if (argc)
		command_usage();
	w.nrenames = sr_facts_renames(w.renames, (int)(sizeof w.renames / sizeof w.renames[0]));
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		snprintf(pattern, sizeof pattern, "%s:%s:*:facts", cfg.prefix, kinds[k]);
		sr_redis_scan_must(&rds, pattern, 0, collect, &w);
	}
	flush(&w);
	sr_out(json_pack("{ss sI sI sI sI}", "migrated", "facts", "keys", (json_int_t)w.scanned,
	    "changed", (json_int_t)w.migrated, "fields", (json_int_t)w.fields, "refused",
	    (json_int_t)w.refused));
	return w.refused ? SR_EX_REJECTED : SR_EX_OK;
}
