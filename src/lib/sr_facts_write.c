/* sr_facts_write.c - the one way facts are written: each as of its time,
 * through facts_write.lua, which keeps whichever fact is newest.
 *
 * A write names one facts hash (a card's or a device's), the time its facts
 * were true (0: now, the moment srq receives them), who says so, and for a
 * card its account; its facts go in by name. The reply says which of them
 * were older than the stored ones and not written (stale), or that the card
 * is another account's (nothing written). sr-enqueue, sr-asset, sr-confirm
 * and the direct path all write through here, so one rule holds for every
 * fact whoever writes it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sr.h"

void
sr_facts_write_init(struct sr_facts_write *w, const char *key, long long as_of, const char *source,
    const char *carrier)
{
	memset(w, 0, sizeof *w);
	snprintf(w->key, sizeof w->key, "%s", key);
	w->as_of = as_of;
	w->source = source && *source ? source : "unknown";
	w->carrier = carrier;
}

int
sr_facts_write_add(struct sr_facts_write *w, const char *name, const char *value)
{
	const char *field = sr_fact_field(name);

	if (!field || w->n == SR_FACTS_MAX)
		return -1;
	w->field[w->n] = field;
	snprintf(w->value[w->n], sizeof w->value[0], "%s", value);
	w->n++;
	return 0;
}

void
sr_facts_write_json(struct sr_facts_write *w, json_t *facts, const char *const *skip)
{
	const char *name;
	json_t *v;

	json_object_foreach(facts, name, v) {
		char val[sizeof w->value[0]];
		int skipped = !strcmp(name, "carrier"); /* the card's account: w->carrier */

		for (const char *const *s = skip; s && *s; s++)
			skipped |= !strcmp(*s, name);
		if (skipped)
			continue;
		sr_fact_value(v, val, sizeof val);
		sr_facts_write_add(w, name, val);
	}
}

/* Writes per script call at most: a call holds Redis for its length. */
#define WRITES_PER_CALL 256

void
sr_facts_batch_add(struct sr_facts_batch *b, const struct sr_facts_write *w)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 64;
		b->w = sr_realloc(b->w, (size_t)b->cap * sizeof *b->w);
	}
	b->w[b->n++] = *w;
}

/* One script call for writes [from, to): facts_write.lua's keys, one per
 * write (its header's KEYS[i.1]), then each write's record. */
static void
append_call(struct sr_redis *rds, struct sr_facts_batch *b, int from, int to)
{
	int nargs = 0, nkeys = to - from, argc = 0;
	const char **argv;
	char (*num)[24];

	for (int i = from; i < to; i++)
		nargs += 5 + 2 * b->w[i].n;
	argv = sr_malloc((size_t)(nkeys + nargs) * sizeof *argv);
	num = sr_malloc((size_t)nkeys * 2 * sizeof *num);
	for (int i = from; i < to; i++)
		argv[argc++] = b->w[i].key;
	for (int i = from; i < to; i++) {
		const struct sr_facts_write *w = &b->w[i];
		char *as_of = num[2 * (i - from)], *n = num[2 * (i - from) + 1];

		snprintf(as_of, sizeof num[0], "%lld", w->as_of > 0 ? w->as_of : 0);
		if (w->as_of <= 0)
			as_of[0] = '\0';
		snprintf(n, sizeof num[0], "%d", w->n);
		argv[argc++] = as_of;
		argv[argc++] = w->source;
		argv[argc++] = w->carrier ? sr_fact_field("carrier") : "";
		argv[argc++] = w->carrier ? w->carrier : "";
		argv[argc++] = n;
		for (int k = 0; k < w->n; k++) {
			argv[argc++] = w->field[k];
			argv[argc++] = w->value[k];
		}
	}
	sr_redis_append_script(rds, SR_LUA_FACTS_WRITE, nkeys, argc, argv, NULL);
	free(argv);
	free(num);
	b->calls++;
}

void
sr_facts_batch_append(struct sr_redis *rds, struct sr_facts_batch *b)
{
	/* One server: the batch's writes at once. A cluster: each card's
	 * facts are their own slot, and each write its own call. */
	int per = rds->cluster ? 1 : WRITES_PER_CALL;

	for (int i = 0; i < b->n; i += per)
		append_call(rds, b, i, i + per < b->n ? i + per : b->n);
}

int
sr_facts_batch_read(struct sr_redis *rds, struct sr_facts_batch *b)
{
	int per = rds->cluster ? 1 : WRITES_PER_CALL;

	b->got = sr_malloc((size_t)(b->calls + 1) * sizeof *b->got);
	b->rep = sr_malloc((size_t)(b->n + 1) * sizeof *b->rep);
	for (int c = 0; c < b->calls; c++) {
		redisReply *rep = sr_redis_reply(rds);

		if (!rep)
			return -1;
		b->got[b->ngot++] = rep;
		/* One reply per write; a call refused whole (out of memory) is
		 * each of its writes' error. */
		for (int i = c * per; i < b->n && i < (c + 1) * per; i++)
			b->rep[i] = rep->type == REDIS_REPLY_ARRAY && (size_t)(i - c * per) < rep->elements ?
			    rep->element[i - c * per] : rep;
	}
	return 0;
}

void
sr_facts_batch_reset(struct sr_facts_batch *b)
{
	for (int i = 0; i < b->ngot; i++)
		freeReplyObject(b->got[i]);
	free(b->got);
	free(b->rep);
	b->got = NULL;
	b->rep = NULL;
	b->n = b->calls = b->ngot = 0;
}

void
sr_facts_batch_free(struct sr_facts_batch *b)
{
	sr_facts_batch_reset(b);
	free(b->w);
	memset(b, 0, sizeof *b);
}

int
sr_facts_written(const redisReply *rep, enum sr_fact_kind kind, json_t **stale, char *err, size_t errlen)
{
	*stale = NULL;
	if (rep->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "facts not written: %s", rep->str);
		return -1;
	}
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 && rep->element[1]->type == REDIS_REPLY_STRING) {
		snprintf(err, errlen, "card belongs to carrier '%s' in the asset mirror", rep->element[1]->str);
		return -2;
	}
	if (rep->type != REDIS_REPLY_STRING) {
		snprintf(err, errlen, "facts not written: unexpected reply");
		return -1;
	}
	/* The fields not written, "pe,du": by name. */
	*stale = sr_facts_named(rep->str, kind);
	return 0;
}

long long
sr_json_as_of(json_t *v, char *err, size_t errlen)
{
	char buf[64], why[160], zone[8]; /* (a record's time has its zone) */
	long long t;

	if (json_is_integer(v))
		snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v) && json_string_length(v) < sizeof buf)
		snprintf(buf, sizeof buf, "%s", json_string_value(v));
	else {
		snprintf(err, errlen, "\"as_of\" must be a time: epoch ms, or ISO-8601 with a zone");
		return -1;
	}
	if ((t = sr_parse_as_of(buf, -1, 0, zone, sizeof zone, why, sizeof why)) < 0)
		snprintf(err, errlen, "\"as_of\": %s", why);
	return t;
}

long long
sr_as_of_option(struct sr_redis *rds, int redis_up, const char *opt)
{
	/* On the Redis clock, which every fact's time is on. Without Redis
	 * every line is an error anyway: the local clock only checks the flag. */
	int64_t now = redis_up ? sr_redis_time_ms(rds) : -1;
	char why[600], zone[300];
	long long t;

	if (now < 0)
		now = (int64_t)time(NULL) * 1000;
	if ((t = sr_parse_as_of(opt, now, 1, zone, sizeof zone, why, sizeof why)) < 0)
		sr_die(SR_EX_USAGE, "--as-of: %s; or a duration ago (10m, 2h, 1d), or now", why);
	if (zone[0])
		sr_time_note("--as-of", opt, t, zone);
	return t;
}

void
sr_facts_status_add(struct sr_facts_batch *b, const char *key, const char *carrier, const char *status,
    const char *stopped_by, long long as_of, const char *source)
{
	struct sr_facts_write w;

	sr_facts_write_init(&w, key, as_of, source, carrier);
	sr_facts_write_add(&w, "status", status);
	if (stopped_by)
		sr_facts_write_add(&w, "stopped_by", stopped_by);
	sr_facts_batch_add(b, &w);
}

int
sr_device_membership_restore(struct sr_redis *rds, const char *prefix, const char *card, const char *device)
{
	char key[SR_KEY_MAX], dkey[SR_KEY_MAX];
	const char *get[] = { "HGET", sr_key_card_facts(key, prefix, card), sr_fact_field("device") };
	redisReply *rep = sr_redis_cmd(rds, 3, get);
	char stored[80] = "";

	if (!rep)
		return -1;
	if (rep->type == REDIS_REPLY_STRING)
		snprintf(stored, sizeof stored, "%s", rep->str);
	freeReplyObject(rep);
	if (!strcmp(stored, device))
		return 0;
	if (stored[0]) {
		const char *add[] = { "SADD", sr_key_device_cards(dkey, prefix, stored), card };

		if (!(rep = sr_redis_cmd(rds, 3, add)))
			return -1;
		freeReplyObject(rep);
	}
	if (device[0]) {
		const char *rem[] = { "SREM", sr_key_device_cards(dkey, prefix, device), card };

		if (!(rep = sr_redis_cmd(rds, 3, rem)))
			return -1;
		freeReplyObject(rep);
	}
	return 0;
}
