/* enqueue/device.c - devices. A device request ({"device":...}) writes its
 * facts, then device_enqueue.lua asks dev-eval to evaluate every card of
 * the device. A card request judged with its device races an evaluation of
 * that device: the evaluation state is read with the card's facts, and
 * device_recheck.lua, after the card's script, asks for the device again
 * when an evaluation was claimed in between. */
#include <string.h>

#include "enqueue.h"

/* The evaluation state of a card's device, read before the device's facts:
 * an evaluation claimed after this read, or claimed already, may write the
 * card's command between this request's read and its write, judged on
 * newer facts; device_recheck.lua then asks for the device again. */
void
append_device_state(const char *device)
{
	char key[SR_KEY_MAX];
	const char *argv[] = { "HMGET", sr_key_device_eval(key, cfg.prefix, device, ""), "seq", "claim" };

	sr_redis_append(&rds, 4, argv, NULL);
}

void
device_state_read(struct req *r, const redisReply *rep)
{
	r->dev_state_read = rep->type == REDIS_REPLY_ARRAY && rep->elements == 2;
	if (!r->dev_state_read)
		return; /* not read: no recheck (the request itself goes on) */
	snprintf(r->dev_seq, sizeof r->dev_seq, "%s",
	    rep->element[0]->type == REDIS_REPLY_STRING ? rep->element[0]->str : "");
	r->dev_claimed = rep->element[1]->type == REDIS_REPLY_STRING;
}

/* Device requests: their facts, then device_enqueue.lua (merge into the
 * device's pending evaluation), one reply each. */
void
append_devices(struct batch *b)
{
	char k1[SR_KEY_MAX], keys[SR_DEVICE_ENQUEUE_KEYS][SR_KEY_MAX];

	b->ndevices = 0;
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];
		struct sr_facts_write w;

		if (r->st != ST_PENDING || !r->is_device || !r->facts)
			continue;
		sr_facts_write_init(&w, sr_key_device_facts(k1, cfg.prefix, r->device), r->as_of,
		    facts_source(r), NULL);
		sr_facts_write_json(&w, r->facts, NULL);
		sr_facts_batch_add(&b->dev_facts, &w);
		r->fw = b->dev_facts.n;
	}
	sr_facts_batch_append(&rds, &b->dev_facts);
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];
		const char *argv[SR_DEVICE_ENQUEUE_KEYS + SR_DEVICE_ENQUEUE_ARGC];
		const char **a = argv + SR_DEVICE_ENQUEUE_KEYS;

		if (r->st != ST_PENDING || !r->is_device)
			continue;
		sr_keys_script(keys, argv, cfg.prefix, NULL, r->device, sr_lua_device_enqueue_keys);
		a[SR_DEVICE_ENQUEUE_ARGV_DEVICE] = r->device;
		a[SR_DEVICE_ENQUEUE_ARGV_SCENE] = r->scene;
		sr_redis_append_script(&rds, SR_LUA_DEVICE_ENQUEUE, SR_DEVICE_ENQUEUE_KEYS,
		    SR_DEVICE_ENQUEUE_KEYS + SR_DEVICE_ENQUEUE_ARGC, argv, NULL);
		b->ndevices++;
	}
}

int
collect_devices(struct batch *b)
{
	redisReply *rep;
	char why[sizeof b->reqs[0].warning - 8];

	if (b->dev_facts.calls && sr_facts_batch_read(&rds, &b->dev_facts) < 0)
		return -1;
	for (int i = 0; i < b->n && b->ndevices > 0; i++) {
		struct req *r = &b->reqs[i];

		if (r->st != ST_PENDING || !r->is_device)
			continue;
		/* Its facts, then its script: refused facts are said in a
		 * warning, and the ack says what the script did. */
		if (r->fw && sr_facts_written(sr_facts_batch_reply(&b->dev_facts, r->fw - 1), SR_FACTS_DEVICE,
		    &r->stale, why, sizeof why) < 0)
			snprintf(r->warning, sizeof r->warning, "device %s", why);
		r->fw = 0;
		if (!(rep = sr_redis_reply(&rds)))
			return -1;
		if (rep->type == REDIS_REPLY_ERROR) {
			r->st = ST_ERROR;
			snprintf(r->error, sizeof r->error, "device not queued: %s", rep->str);
			r->warning[0] = '\0';
		} else if (r->st == ST_PENDING) {
			r->cmd.ver = rep->integer;
			r->st = ST_DONE;
		}
		freeReplyObject(rep);
	}
	sr_facts_batch_reset(&b->dev_facts);
	b->ndevices = 0;
	return 0;
}

/* After the enqueue scripts, in the same flush (so, on one server, after
 * them): device_recheck.lua for each card judged with a device whose
 * evaluation state was read. (On a cluster the device's shard may live on
 * another master than the card's account: the two run side by side, and a
 * race is missed only if a whole evaluation fits between them.) */
void
append_rechecks(struct batch *b)
{
	char keys[SR_DEVICE_RECHECK_KEYS][SR_KEY_MAX];

	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];
		const char *argv[SR_DEVICE_RECHECK_KEYS + SR_DEVICE_RECHECK_ARGC];
		const char **a = argv + SR_DEVICE_RECHECK_KEYS;

		r->recheck = r->st == ST_PENDING && !r->is_device && r->cf.device[0] && r->dev_state_read;
		if (!r->recheck)
			continue;
		sr_keys_script(keys, argv, cfg.prefix, NULL, r->cf.device, sr_lua_device_recheck_keys);
		a[SR_DEVICE_RECHECK_ARGV_DEVICE] = r->cf.device;
		a[SR_DEVICE_RECHECK_ARGV_SEQ] = r->dev_seq;
		a[SR_DEVICE_RECHECK_ARGV_CLAIMED] = r->dev_claimed ? "1" : "0";
		sr_redis_append_script(&rds, SR_LUA_DEVICE_RECHECK, SR_DEVICE_RECHECK_KEYS,
		    SR_DEVICE_RECHECK_KEYS + SR_DEVICE_RECHECK_ARGC, argv, NULL);
	}
}

/* The replies of append_rechecks. A refused recheck is the ack's warning:
 * the race it looks for is not ruled out. -1 if Redis failed. */
int
collect_rechecks(struct batch *b)
{
	redisReply *rep;

	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];

		if (!r->recheck)
			continue;
		r->recheck = 0;
		if (!(rep = sr_redis_reply(&rds)))
			return -1;
		if (rep->type == REDIS_REPLY_INTEGER) {
			r->requeued_ver = rep->integer;
			/* (one struct: no overlap for snprintf; the same size) */
			memcpy(r->requeued_device, r->cf.device, sizeof r->requeued_device);
		}
		else if (!r->warning[0])
			snprintf(r->warning, sizeof r->warning, "device not checked for a concurrent evaluation: %s",
			    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
		freeReplyObject(rep);
	}
	return 0;
}
