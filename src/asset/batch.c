/* asset/batch.c - one batch of sr-asset's rows into Redis: where each card
 * is now (its account and device), its facts written as of their time
 * (facts_write.lua), its device's membership moved with it, and its
 * account registered; two or three pipelined round trips a batch. */
#include <stdlib.h>
#include <string.h>

#include "asset.h"

struct sr_facts_batch writes;

void
fail_batch(struct row *rows, int n)
{
	sr_facts_batch_reset(&writes);
	for (int i = 0; i < n; i++)
		if (rows[i].st == ST_PENDING) {
			rows[i].st = ST_ERROR;
			snprintf(rows[i].error, sizeof rows[i].error, "%s", rds.errstr);
		}
	sr_redis_lost(&rds, &redis_up, "row");
}

/* The row's facts (but those in skip), as of the row's time, a card's
 * with its account, into writes. */
static void
add_facts(struct row *r, const char *key, const char *const *skip)
{
	struct sr_facts_write w;

	sr_facts_write_init(&w, key, r->as_of, sr_prog, r->card ? r->carrier : NULL);
	sr_facts_write_json(&w, r->obj, skip);
	sr_facts_batch_add(&writes, &w);
	r->fw = writes.n;
}

/* The time facts_write.lua writes a row's facts as of: its own, never
 * past now (the batch's clock), else now. */
static long long
written_as_of(const struct row *r, long long now)
{
	return r->as_of && r->as_of < now ? r->as_of : now;
}

#define SEEN (2 * BATCH)

static size_t
hash(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h % SEEN;
}

/* The replies to the writes of every pending row: ST_ERROR if Redis
 * refused one, ST_REJECTED if the card is another account's (taken since
 * it was read), else ST_DONE, or still ST_PENDING if the row's card leaves
 * a device (its device fact is written next). Its facts first
 * (facts_write.lua): those it did not write, the stored ones being newer,
 * are kept for its line (a second round's added). */
static int
take_replies(struct row *rows, int n)
{
	redisReply *rep;

	if (writes.calls && sr_facts_batch_read(&rds, &writes) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];

		if (r->st != ST_PENDING)
			continue;
		if (r->fw) {
			json_t *stale = NULL;
			int rc = sr_facts_written(sr_facts_batch_reply(&writes, r->fw - 1),
			    r->card ? SR_FACTS_CARD : SR_FACTS_DEVICE, &stale, r->error, sizeof r->error);

			if (stale && r->stale) {
				json_array_extend(r->stale, stale);
				json_decref(stale);
			} else if (stale)
				r->stale = stale;
			if (rc == -2)
				r->st = ST_REJECTED;
			else if (rc < 0) {
				r->st = ST_ERROR;
				sr_warn("line %ld: %s", r->line, r->error);
			}
			r->fw = 0;
		}
		for (int k = 0; k < r->ncmd; k++) {
			if (!(rep = sr_redis_reply(&rds)))
				return -1;
			if (rep->type == REDIS_REPLY_ERROR && r->st == ST_PENDING) {
				r->st = ST_ERROR;
				snprintf(r->error, sizeof r->error, "not loaded: Redis refused the write: %s", rep->str);
				sr_warn("line %ld: %s", r->line, r->error);
			}
			freeReplyObject(rep);
		}
		r->ncmd = 0;
		if (r->st == ST_PENDING && !r->moves)
			r->st = ST_DONE;
	}
	sr_facts_batch_reset(&writes);
	return 0;
}

/* The accounts of the cards loaded are known from now on (sr-stat,
 * sr-admin limits, alerts), before any request names them: an account set
 * up for a carrier's SIMs shows, with its cards. Once per account per run
 * (sr_account_register), sent after the batch's writes (their order is
 * the rows'); the accounts sent, in sent, *ns of them. */
static void
register_accounts(struct row *rows, int n, const char **sent, int *ns)
{
	*ns = 0;
	for (int i = 0; i < n; i++)
		if (rows[i].st == ST_PENDING && rows[i].card && sr_account_register(&rds, &cfg, rows[i].carrier))
			sent[(*ns)++] = rows[i].carrier;
}

/* Their replies: one Redis refused is said, and sent again with the next
 * batch; its cards are loaded all the same. */
static int
registered(const char **sent, int ns)
{
	redisReply *rep;

	for (int k = 0; k < ns; k++) {
		if (!(rep = sr_redis_reply(&rds)))
			return -1;
		if (rep->type == REDIS_REPLY_ERROR) {
			sr_warn("account '%s': not registered: %s", sent[k], rep->str);
			sr_account_forget(sent[k]);
		}
		freeReplyObject(rep);
	}
	return 0;
}

int
process(struct row *rows, int n)
{
	static struct row *seen[SEEN]; /* card -> its last row in this batch */
	static const char *sent[BATCH]; /* the accounts registered with this batch */
	int ns;
	static const char *const card_skip[] = { "card", "carrier", "as_of", NULL };
	static const char *const card_skip_device[] = { "card", "carrier", "as_of", "device", NULL };
	static const char *const dev_skip[] = { "device", "as_of", NULL };
	struct sr_card_facts cf;
	char key[SR_KEY_MAX], no_clock[200] = "";
	long long now = 0;
	redisReply *rep;

	if (!redis_up)
		return -1;
	/* Round 1: the clock, and where each card is now (account and device,
	 * and as of when its device fact was true). */
	sr_redis_append_time(&rds);
	for (int i = 0; i < n; i++)
		if (rows[i].st == ST_PENDING && rows[i].card) {
			const char *argv[] = { "HGETALL", sr_key_card_facts(key, cfg.prefix, rows[i].card) };

			sr_redis_append(&rds, 2, argv, NULL);
		}
	if (!(rep = sr_redis_reply(&rds)))
		return -1;
	if ((now = sr_redis_clock(&rds, rep)) < 0)
		snprintf(no_clock, sizeof no_clock, "%s", rds.errstr);
	freeReplyObject(rep);
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];

		if (r->st != ST_PENDING || !r->card)
			continue;
		if (!(rep = sr_redis_reply(&rds)))
			return -1;
		/* (A key damaged by hand reads as nothing: its write fails.) */
		sr_card_facts_load(&cf, rep);
		snprintf(r->old_carrier, sizeof r->old_carrier, "%s", cf.carrier);
		snprintf(r->old_device, sizeof r->old_device, "%s", cf.device);
		r->device_as_of = sr_fact_as_of(&cf, "device");
		freeReplyObject(rep);
		memcpy(r->from_device, r->old_device, sizeof r->from_device);
	}
	/* With no clock, no row's time can be checked nor told from its
	 * device's: each is an error, to be sent again. */
	for (int i = 0; i < n && no_clock[0]; i++)
		if (rows[i].st == ST_PENDING) {
			rows[i].st = ST_ERROR;
			snprintf(rows[i].error, sizeof rows[i].error, "%s", no_clock);
		}
	/* A time ahead of the Redis clock by more than the skew is not trusted:
	 * its facts would outlive every newer one. */
	for (int i = 0; i < n; i++) {
		if (rows[i].st == ST_PENDING &&
		    sr_as_of_ahead("\"as_of\"", rows[i].as_of, now, rows[i].error, sizeof rows[i].error))
			rows[i].st = ST_REJECTED;
	}
	/* Rows of one batch that name the same card see each other's effect, as
	 * if applied one by one: a later row starts from the earlier row's
	 * account and device. */
	memset(seen, 0, sizeof seen);
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i], *prev;
		size_t h;

		if (r->st != ST_PENDING || !r->card)
			continue;
		for (h = hash(r->card); seen[h] && strcmp(seen[h]->card, r->card); h = (h + 1) % SEEN)
			;
		if ((prev = seen[h])) {
			snprintf(r->old_carrier, sizeof r->old_carrier, "%s", prev->carrier);
			if (prev->device && !prev->stale_device) {
				snprintf(r->old_device, sizeof r->old_device, "%s", prev->device);
				r->device_as_of = written_as_of(prev, now);
			} else {
				snprintf(r->old_device, sizeof r->old_device, "%s", prev->old_device);
				r->device_as_of = prev->device_as_of;
			}
		}
		if (r->old_carrier[0] && strcmp(r->old_carrier, r->carrier)) {
			r->st = ST_REJECTED;
			snprintf(r->error, sizeof r->error,
			    "card belongs to carrier '%s'; moving a card between accounts is not supported",
			    r->old_carrier);
			continue;
		}
		/* A device fact older than the stored one moves nothing. */
		r->stale_device = r->device && r->as_of && written_as_of(r, now) < r->device_as_of;
		seen[h] = r;
	}
	/* Round 2: the facts, and the card's device membership. Rows of one
	 * batch that name the same card are applied in input order. A device
	 * fact older than the stored one moves nothing.
	 *
	 * A card is added to its device's members whenever a row names the
	 * device, new or not: the facts and the membership are written side by
	 * side (their keys are in different slots), and when Redis refuses the
	 * membership of a new card, its facts already name the device; the
	 * same row sent again writes it again.
	 *
	 * A card that leaves a device is what the next load compares with to
	 * know the card must leave it, so it gets its device fact only in round
	 * 3, once Redis took the membership writes: a refused SREM leaves the
	 * old device in the facts, and the same row sent again leaves it again.
	 * A later row of the same card in the batch cannot know whether an
	 * earlier one's membership was taken: it also leaves the device the
	 * card had before the batch. */
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];

		if (r->st != ST_PENDING)
			continue;
		if (!r->card) {
			add_facts(r, sr_key_device_facts(key, cfg.prefix, r->device), dev_skip);
			continue;
		}
		r->moves = r->device && !r->stale_device && ((r->old_device[0] && strcmp(r->device, r->old_device)) ||
		    (r->from_device[0] && strcmp(r->device, r->from_device)));
		add_facts(r, sr_key_card_facts(key, cfg.prefix, r->card), r->moves ? card_skip_device : card_skip);
	}
	sr_facts_batch_append(&rds, &writes);
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		char key2[SR_KEY_MAX];
		const char *from[] = { r->old_device, r->from_device };

		if (r->st != ST_PENDING || !r->card || !r->device || r->stale_device)
			continue;
		if (r->device[0]) {
			const char *add[] = { "SADD", sr_key_device_cards(key, cfg.prefix, r->device), r->card };

			sr_redis_append(&rds, 3, add, NULL);
			r->ncmd++;
			r->joined = 1;
		}
		for (int j = 0; r->moves && j < 2; j++) {
			const char *rem[] = { "SREM", sr_key_device_cards(key2, cfg.prefix, from[j]), r->card };

			if (!from[j][0] || !strcmp(from[j], r->device) || (j == 1 && !strcmp(from[1], from[0])))
				continue;
			sr_redis_append(&rds, 3, rem, NULL);
			r->ncmd++;
		}
	}
	register_accounts(rows, n, sent, &ns);
	/* A row is loaded only if Redis took every one of its writes (out of
	 * memory, a read-only replica, a key of the wrong type: an error). A
	 * card that leaves a device stays pending for round 3. */
	if (take_replies(rows, n) < 0 || registered(sent, ns) < 0)
		return -1;
	/* Round 3: the device fact of the cards that left their device. */
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		struct sr_facts_write w;

		if (r->st != ST_PENDING)
			continue;
		sr_facts_write_init(&w, sr_key_card_facts(key, cfg.prefix, r->card), r->as_of, sr_prog, r->carrier);
		sr_facts_write_add(&w, "device", r->device);
		sr_facts_batch_add(&writes, &w);
		r->fw = writes.n;
		r->moves = 0;
	}
	sr_facts_batch_append(&rds, &writes);
	if (take_replies(rows, n) < 0)
		return -1;
	/* A device fact that proved older than the stored one (a newer write
	 * named another device since this batch read it): the membership this
	 * row wrote follows the stored fact again. */
	for (int i = 0; i < n; i++)
		if (rows[i].joined && rows[i].stale && sr_jarray_has(rows[i].stale, "device") &&
		    sr_device_membership_restore(&rds, cfg.prefix, rows[i].card, rows[i].device) < 0)
			return -1;
	return 0;
}
