/* enqueue/facts.c - a batch's facts in Redis. Round 1 reads the clock, the
 * global switch, each card's stored facts (and those of a device its
 * request names) and checks each request against them: its card's carrier,
 * a card nobody knows, an as_of too far ahead of Redis's clock; round 2 the
 * facts of devices known from the stored facts alone. The requests' facts
 * are written (facts_write.lua: each as of its request's time, a stored one
 * that is newer stays) with the card's device membership, and the replies
 * said on each request. */
#include <stdlib.h>
#include <string.h>

#include "enqueue.h"

/* Overlay the request's facts on the stored ones, as the write will: a
 * fact stored as of a later time than the request's stays. */
static void
merge_facts(struct req *r)
{
	if (!r->cf.carrier[0])
		strcpy(r->cf.carrier, r->carrier);
	if (!r->facts)
		return;
	r->cf.known = 1;
	sr_card_facts_merge(&r->cf, r->facts, r->as_of);
}

/* Who says a request's facts: its source, else the tool. */
const char *
facts_source(const struct req *r)
{
	return r->source[0] ? r->source : sr_prog;
}

/* The request's facts, each as of the request's time, into its batch's
 * writes (facts_write.lua: one older than the stored one is not written). */
static void
add_facts_write(struct batch *b, struct req *r)
{
	struct sr_facts_write w;
	char key[SR_KEY_MAX];

	sr_facts_write_init(&w, sr_key_card_facts(key, cfg.prefix, r->card), r->as_of, facts_source(r),
	    r->carrier);
	sr_facts_write_json(&w, r->facts, NULL);
	sr_facts_batch_add(&b->facts, &w);
	r->fw = b->facts.n;
}

/* A card its request puts on a device is that device's member (dev-eval
 * evaluates a device's members), as sr-asset does. Written whether or not
 * the stored facts name that device already: the facts and the membership
 * go in one flush, so facts that name it may be all that is left of a
 * membership Redis refused. Not for a device fact older than the stored
 * one's: it moves nothing. */
static void
append_membership(struct req *r)
{
	const char *name = sr_jstr(r->facts, "device");
	char dkey[SR_KEY_MAX];

	r->nwrites = 0;
	if (!name || sr_fact_older(&r->cf, "device", r->as_of))
		return;
	if (*name) {
		const char *add[] = { "SADD", sr_key_device_cards(dkey, cfg.prefix, name), r->card };

		sr_redis_append(&rds, 3, add, NULL);
		r->nwrites++;
	}
	if (r->old_device[0] && strcmp(name, r->old_device)) {
		const char *rem[] = { "SREM", sr_key_device_cards(dkey, cfg.prefix, r->old_device), r->card };

		sr_redis_append(&rds, 3, rem, NULL);
		r->nwrites++;
	}
}

/* The reply to a request's facts write, then to its membership writes.
 * Either refused is said in the request's warning (its line, stderr, exit
 * 3). What that does to the request is its caller's: the direct path calls
 * nothing for refused facts (facts_refused_is_error); the queue path sent
 * the enqueue script in the same flush, and Redis may have run it (on a
 * cluster a card's facts live on another master than its account), so its
 * ack says what the script did. A refused membership never stops the
 * request. */
static void
facts_written(struct req *r, const redisReply *rep)
{
	if (r->st != ST_PENDING)
		return;
	/* (A card another account took since it was read: refused too.) */
	if (sr_facts_written(rep, SR_FACTS_CARD, &r->stale, r->warning, sizeof r->warning) < 0)
		r->facts_refused = 1;
}

static void
membership_written(struct req *r, const redisReply *rep)
{
	if (r->st == ST_PENDING && rep->type == REDIS_REPLY_ERROR && !r->warning[0])
		snprintf(r->warning, sizeof r->warning, "device membership not written: %s", rep->str);
}

/* Refused facts make a request that has done nothing yet an error. */
void
facts_refused_is_error(struct req *r)
{
	if (!r->facts_refused || r->st != ST_PENDING)
		return;
	r->st = ST_ERROR;
	snprintf(r->error, sizeof r->error, "%s", r->warning);
	r->warning[0] = '\0';
}

/* The replies of the batch's facts writes and memberships
 * (append_facts_writes), each said on its request. -1 if Redis failed. */
int
collect_facts_writes(struct batch *b)
{
	redisReply *rep;

	if (b->facts.calls && sr_facts_batch_read(&rds, &b->facts) < 0)
		return -1;
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];

		if (r->is_device) /* (its write is in dev_facts: collect_devices) */
			continue;
		if (r->fw)
			facts_written(r, sr_facts_batch_reply(&b->facts, r->fw - 1));
		r->fw = 0;
		r->restore = r->nwrites > 0 && r->stale && sr_jarray_has(r->stale, "device");
		for (int w = 0; w < r->nwrites; w++) {
			if (!(rep = sr_redis_reply(&rds)))
				return -1;
			membership_written(r, rep);
			freeReplyObject(rep);
		}
		r->nwrites = 0; /* (answered: not again) */
	}
	sr_facts_batch_reset(&b->facts);
	return 0;
}

/* A card's device facts as read. A device facts key damaged by hand (a
 * string where the hash is) makes the request an error: judged as a device
 * with no facts, a card of a disabled device would be resumed. */
static void
device_facts_loaded(struct req *r, const redisReply *rep)
{
	if (sr_device_facts_load(&r->df, rep) < 0 && r->st == ST_PENDING) {
		r->st = ST_ERROR;
		snprintf(r->error, sizeof r->error, "device facts not read: %s", rep->str);
	}
}

/* A request whose facts claim a time further ahead of Redis's clock (now,
 * ms) than SR_AS_OF_SKEW_MS is rejected: trusted, its facts would outlive
 * every newer one. 1 when rejected. */
static int
too_far_ahead(struct req *r, long long now)
{
	if (!sr_as_of_ahead("\"as_of\"", r->as_of, now, r->error, sizeof r->error))
		return 0;
	r->st = ST_REJECTED;
	return 1;
}

/* Round 1: the clock, each card's stored facts, and the facts of a device
 * named in the request. Sent without waiting (see process). */
void
append_read_facts(struct req *reqs, int n)
{
	char key[SR_KEY_MAX];

	sr_redis_append_time(&rds);
	sr_switch_append(&rds, &cfg);
	for (int i = 0; i < n; i++) {
		struct req *r = &reqs[i];
		const char *dev = r->facts ? sr_jstr(r->facts, "device") : NULL;

		if (r->st != ST_PENDING)
			continue;
		if (r->is_device) {
			/* Does the mirror know the device? (Only asked when the
			 * request brings no facts of its own.) One key per EXISTS:
			 * on a cluster the two live in different slots. */
			char key2[SR_KEY_MAX];
			const char *cards[] = { "EXISTS", sr_key_device_cards(key, cfg.prefix, r->device) };
			const char *facts[] = { "EXISTS", sr_key_device_facts(key2, cfg.prefix, r->device) };

			if (!r->facts) {
				sr_redis_append(&rds, 2, cards, NULL);
				sr_redis_append(&rds, 2, facts, NULL);
			}
			continue;
		}
		{
			const char *argv[] = { "HGETALL", sr_key_card_facts(key, cfg.prefix, r->card) };

			sr_redis_append(&rds, 2, argv, NULL);
		}
		if (dev) {
			const char *argv[] = { "HGETALL", sr_key_device_facts(key, cfg.prefix, dev) };

			append_device_state(dev);
			sr_redis_append(&rds, 2, argv, NULL);
			r->dev_fetched = 1;
		}
	}
	sr_redis_flush(&rds);
}

/* Read round 1; check ownership; overlay the request's facts. Returns the
 * Redis clock in seconds, or -1 if Redis failed. */
long long
read_facts(struct batch *b)
{
	struct req *reqs = b->reqs;
	long long now = -1;
	int64_t now_ms;
	redisReply *rep;
	int n = b->n;

	if (!(rep = sr_redis_reply(&rds)))
		return -1;
	/* (no clock: the batch is answered with errstr, nothing judged) */
	if ((now_ms = sr_redis_clock(&rds, rep)) >= 0)
		now = now_ms / 1000;
	freeReplyObject(rep);
	if ((b->switch_on = sr_switch_read(&rds)) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		struct req *r = &reqs[i];

		if (r->st != ST_PENDING || (r->is_device && r->facts))
			continue;
		if (r->is_device) {
			long long known = 0;
			int failed = 0;

			for (int k = 0; k < 2; k++) {
				if (!(rep = sr_redis_reply(&rds)))
					return -1;
				if (rep->type == REDIS_REPLY_INTEGER)
					known += rep->integer;
				else if (!failed++) {
					r->st = ST_ERROR;
					snprintf(r->error, sizeof r->error, "device not queued: %s",
					    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
				}
				freeReplyObject(rep);
			}
			/* Answered like an unknown card: nothing to evaluate. */
			if (!failed && known == 0)
				reject(r, "no cards or facts known for this device: load them with sr-asset "
				    "or send \"facts\"%s", "");
			continue;
		}
		if (!(rep = sr_redis_reply(&rds)))
			return -1;
		if (sr_card_facts_load(&r->cf, rep) < 0) {
			/* A facts key damaged by hand (a string where the hash is):
			 * judged on nothing, its request would be queued while its
			 * facts write fails. It is an error, and nothing of it is
			 * written. */
			r->st = ST_ERROR;
			snprintf(r->error, sizeof r->error, "facts not read: %s", rep->str);
		}
		freeReplyObject(rep);
		snprintf(r->old_device, sizeof r->old_device, "%s", r->cf.device);
		if (r->dev_fetched) {
			if (!(rep = sr_redis_reply(&rds)))
				return -1;
			device_state_read(r, rep);
			freeReplyObject(rep);
			if (!(rep = sr_redis_reply(&rds)))
				return -1;
			device_facts_loaded(r, rep);
			freeReplyObject(rep);
		}
		if (r->st != ST_PENDING || too_far_ahead(r, now_ms))
			continue;
		if (r->cf.carrier[0] && strcmp(r->cf.carrier, r->carrier) != 0)
			reject(r, "card belongs to carrier '%s' in the asset mirror", r->cf.carrier);
		else if (!r->cf.known && !r->facts)
			reject(r, "no facts known for this card: load them with sr-asset or send \"facts\"%s", "");
		else
			merge_facts(r);
	}
	for (int i = 0; i < n; i++) {
		if (reqs[i].st == ST_PENDING && reqs[i].is_device)
			too_far_ahead(&reqs[i], now_ms);
	}
	return now;
}

/* Round 2, only when needed: facts of devices known from the stored card
 * facts alone. Returns -1 if Redis failed. */
int
read_devices(struct req *reqs, int n)
{
	char key[SR_KEY_MAX];
	redisReply *rep;
	int k = 0;

	for (int i = 0; i < n; i++)
		if (reqs[i].st == ST_PENDING && !reqs[i].is_device && reqs[i].cf.device[0] &&
		    !reqs[i].dev_fetched) {
			const char *argv[] = { "HGETALL", sr_key_device_facts(key, cfg.prefix, reqs[i].cf.device) };

			append_device_state(reqs[i].cf.device);
			sr_redis_append(&rds, 2, argv, NULL);
			k++;
		}
	for (int i = 0; k > 0 && i < n; i++)
		if (reqs[i].st == ST_PENDING && !reqs[i].is_device && reqs[i].cf.device[0] &&
		    !reqs[i].dev_fetched) {
			if (!(rep = sr_redis_reply(&rds)))
				return -1;
			device_state_read(&reqs[i], rep);
			freeReplyObject(rep);
			if (!(rep = sr_redis_reply(&rds)))
				return -1;
			device_facts_loaded(&reqs[i], rep);
			freeReplyObject(rep);
		}
	return 0;
}

/* Before the scripts, in the same flush: the requests' facts, then their
 * device memberships. */
void
append_facts_writes(struct batch *b)
{
	for (int i = 0; i < b->n; i++)
		if (b->reqs[i].st == ST_PENDING && !b->reqs[i].is_device && b->reqs[i].facts)
			add_facts_write(b, &b->reqs[i]);
	sr_facts_batch_append(&rds, &b->facts);
	for (int i = 0; i < b->n; i++)
		if (b->reqs[i].fw)
			append_membership(&b->reqs[i]);
}

/* A request whose membership was written while its device fact proved
 * older than the stored one: the membership follows the stored fact again
 * (once every reply of the batch is in). -1 if Redis failed. */
int
restore_memberships(struct batch *b)
{
	for (int i = 0; i < b->n; i++)
		if (b->reqs[i].restore && (b->reqs[i].restore = 0,
		    sr_device_membership_restore(&rds, cfg.prefix, b->reqs[i].card,
		    sr_jstr(b->reqs[i].facts, "device")) < 0))
			return -1;
	return 0;
}
