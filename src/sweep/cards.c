/* cards.c - sr-sweep's card pass: every card id of an account (a command
 * hash, a queue entry, a card waiting packed in a bucket) and every device
 * evaluation through its sweep script; and the buckets of the wrong type. */
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

void
push_str(char ***list, size_t *n, size_t *cap, const char *s)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 256;
		*list = sr_realloc(*list, *cap * sizeof **list);
	}
	(*list)[(*n)++] = sr_strdup(s);
}

void
free_strs(char ***list, size_t *n, size_t *cap)
{
	for (size_t i = 0; i < *n; i++)
		free((*list)[i]);
	free(*list);
	*list = NULL;
	*n = *cap = 0;
}

void
collect_id(const char *id, void *arg)
{
	struct sweep *w = arg;

	if (!sr_valid_id(id))
		return; /* e.g. a device's ":scenes" set */
	push_str(&w->ids, &w->n, &w->cap, id);
}

/* One of the account's keys, named past "P:carrier:{c}:": a card's command
 * hash, or an idle or wait bucket ("idle:HEAD", "wait:HEAD"; a name with
 * one more ':' is a key moved aside, no bucket). */
void
collect_key(const char *rest, void *arg)
{
	struct sweep *w = arg;
	struct buckets *b = !strncmp(rest, "idle:", 5) ? &w->idle : !strncmp(rest, "wait:", 5) ? &w->wait :
	    NULL;

	if (!strncmp(rest, "card:", 5))
		collect_id(rest + 5, w);
	else if (b && !strchr(rest + 5, ':'))
		push_str(&b->heads, &b->n, &b->cap, rest + 5);
}

/* The grace given to what looks lost before the sweep repairs it, by
 * lane (--grace-*). */
long grace_high = 120000, grace_normal = 600000, grace_bulk = 3600000, grace_device = 600000;

void
report(const char *finding, const char *kind, const char *id, const char *carrier)
{
	json_t *o = json_pack("{ss ss}", "finding", finding, kind, id);

	if (carrier)
		json_object_set_new(o, "carrier", json_string(carrier));
	sr_emit(o);
	fflush(stdout);
}

int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run the sweep script over w->ids (each once), pipelined in chunks. */

void
sweep_ids(struct sweep *w, int device, int shard)
{
	char k[SR_SWEEP_CARD_KEYS][SR_KEY_MAX], interval[24], gh[24], gn[24], gb[24], gd[24];

	snprintf(interval, sizeof interval, "%ld", w->carrier ? sr_account(&cfg, w->carrier)->interval_ms :
	    cfg.min_interval_ms);
	snprintf(gh, sizeof gh, "%ld", grace_high);
	snprintf(gn, sizeof gn, "%ld", grace_normal);
	snprintf(gb, sizeof gb, "%ld", grace_bulk);
	snprintf(gd, sizeof gd, "%ld", grace_device);
	if (w->n == 0)
		return;
	/* A card is found both by its hash and by its queue entry: once is enough. */
	qsort(w->ids, w->n, sizeof *w->ids, cmp_str);
	{
		size_t u = 0;

		for (size_t i = 0; i < w->n; i++) {
			if (u > 0 && !strcmp(w->ids[u - 1], w->ids[i])) {
				free(w->ids[i]);
				continue;
			}
			w->ids[u++] = w->ids[i];
		}
		w->n = u;
	}
	for (size_t s = 0; s < w->n; s += 512) {
		size_t e = s + 512 < w->n ? s + 512 : w->n;

		for (size_t i = s; i < e; i++) {
			if (device) {
				/* (the shard the device was found in: a device under
				 * another shard's tag is swept where it lies) */
				const char *a[SR_SWEEP_DEVICE_KEYS + SR_SWEEP_DEVICE_ARGC] = {
					sr_key_shard(k[0], cfg.prefix, shard, "queue"),
					sr_key_device_eval(k[1], cfg.prefix, w->ids[i], ""),
					sr_key_device_eval(k[2], cfg.prefix, w->ids[i], ":scenes") };
				const char **arg = a + SR_SWEEP_DEVICE_KEYS;

				arg[SR_SWEEP_DEVICE_ARGV_DEVICE] = w->ids[i];
				arg[SR_SWEEP_DEVICE_ARGV_GRACE] = gd;
				sr_redis_append_script(&rds, SR_LUA_SWEEP_DEVICE, SR_SWEEP_DEVICE_KEYS,
				    SR_SWEEP_DEVICE_KEYS + SR_SWEEP_DEVICE_ARGC, a, NULL);
			} else {
				const char *a[SR_SWEEP_CARD_KEYS + SR_SWEEP_CARD_ARGC];
				const char **arg = a + SR_SWEEP_CARD_KEYS;

				sr_keys_script(k, a, cfg.prefix, w->carrier, w->ids[i], sr_lua_sweep_card_keys);
				arg[SR_SWEEP_CARD_ARGV_CARD] = w->ids[i];
				arg[SR_SWEEP_CARD_ARGV_INTERVAL] = interval;
				arg[SR_SWEEP_CARD_ARGV_GRACE_HIGH] = gh;
				arg[SR_SWEEP_CARD_ARGV_GRACE_NORMAL] = gn;
				arg[SR_SWEEP_CARD_ARGV_GRACE_BULK] = gb;
				sr_redis_append_script(&rds, SR_LUA_SWEEP_CARD, SR_SWEEP_CARD_KEYS,
				    SR_SWEEP_CARD_KEYS + SR_SWEEP_CARD_ARGC, a, NULL);
			}
		}
		for (size_t i = s; i < e; i++) {
			redisReply *rep = sr_redis_reply(&rds);

			if (!rep)
				sr_die(SR_EX_BACKEND, "%s", rds.errstr);
			if (!device && rep->type == REDIS_REPLY_STRING && !strncmp(rep->str, "wrong_type:", 11)) {
				/* Its command cannot be read: left for a look. */
				char key[SR_KEY_MAX];

				sr_emit(json_pack("{ss ss ss ss ss ss sb}", "finding", "wrong_type", "card", w->ids[i],
				    "carrier", w->carrier, "key", sr_key_card(key, cfg.prefix, w->carrier, w->ids[i]),
				    "type", rep->str + 11, "want", "hash", "repaired", 0));
				fflush(stdout);
				keys_left++;
			} else if (rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_STATUS) {
				report(rep->str, device ? "device" : "card", w->ids[i], device ? NULL : w->carrier);
				w->findings++;
			} else if (rep->type == REDIS_REPLY_ERROR) {
				sr_warn("sweep of '%s' failed: %s", w->ids[i], rep->str);
				sweep_failed++;
			}
			freeReplyObject(rep);
		}
	}
	for (size_t i = 0; i < w->n; i++)
		free(w->ids[i]);
	free(w->ids);
	w->ids = NULL;
	w->n = w->cap = 0;
}

/* The cards whose commands wait in the wait bucket key (of HEAD). */
static void
collect_waiting(struct sweep *w, const char *key, const char *head)
{
	const char *a[] = { "HKEYS", key };
	redisReply *rep = sr_redis_must(&rds, 2, a);

	for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
		char id[SR_KEY_MAX];

		snprintf(id, sizeof id, "%s%s", head, rep->element[i]->str);
		collect_id(id, w);
	}
	freeReplyObject(rep);
}

/* The account's idle or wait buckets (where cards with no command sleep,
 * and where a command waits packed for its claim: docs/redis.md "Redis layout")
 * of the wrong type: each fails every request and finish of its up to 100
 * cards. Moved aside: what it held is gone already; with no idle bucket its
 * cards start again as new ones (the next command of each is not held to
 * an interval counted from a call made before the damage), and with no wait
 * bucket the card pass removes the queue entries left without a command.
 * The cards waiting in the sound wait buckets are swept too (collected into
 * w): one whose queue entry was lost is found only there. Returns the
 * findings repaired. */
long
check_buckets(struct sweep *w, struct buckets *b, const char *kind)
{
	static char keys[256][SR_KEY_MAX], types[256][16];
	long repaired = 0;
	int64_t now = -1;

	for (size_t s = 0; s < b->n; s += 256) {
		size_t n = b->n - s < 256 ? b->n - s : 256;

		for (size_t i = 0; i < n; i++) {
			char name[SR_KEY_MAX];

			snprintf(name, sizeof name, "%s:%s", kind, b->heads[s + i]);
			sr_key_account(keys[i], cfg.prefix, w->carrier, name);
		}
		key_types(keys, n, types);
		for (size_t i = 0; i < n; i++) {
			json_t *o;

			if (!strcmp(types[i], "none"))
				continue;
			if (!strcmp(types[i], "hash")) {
				if (b == &w->wait)
					collect_waiting(w, keys[i], b->heads[s + i]);
				continue;
			}
			o = json_pack("{ss ss ss ss ss}", "finding", "wrong_type", "key", keys[i], "type", types[i],
			    "want", "hash", "carrier", w->carrier);
			if (!move_aside(keys[i], "hash", o, &now)) {
				json_decref(o);
				continue;
			}
			if (json_object_get(o, "moved_to"))
				repaired++;
			sr_emit(o);
			fflush(stdout);
		}
	}
	free_strs(&b->heads, &b->n, &b->cap);
	return repaired;
}
