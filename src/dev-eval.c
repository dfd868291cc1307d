/* dev-eval - device evaluation: all the cards of a device, judged together.
 *
 * Device requests (sr-enqueue {"device":...}) merge in a sharded device
 * queue. dev-eval claims due devices (device_claim.lua: atomic per shard, a
 * lease per device, so two dev-eval processes never take the same device;
 * the claim snapshots the device's version and scenes), then for each one:
 *   1. takes the device lock (sr_lock.c; the direct path takes the same one),
 *   2. reads the device's facts, its member cards and their facts,
 *   3. judges every card with the device's facts (device-level reasons apply
 *      to all its cards, so the device ends consistent) and writes each
 *      card's command through sr_command.c, the path sr-enqueue uses,
 *   4. releases the lock (held for those reads and writes only),
 *   5. finishes (device_finish.lua): removes the processed scenes, and the
 *      device from the queue only if its version did not move meanwhile;
 *      otherwise it stays due for exactly one more pass.
 * One output line per device. With the global switch off it claims nothing.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "sr.h"

#define LOCK_WAIT_MS 2000
#define LOCK_HOLD_MS 10000
#define RETRY_MS 1000

static const char usage[] =
"usage: dev-eval [--follow | --until-empty] [--for SECONDS] [--max N] [--batch N]\n"
"\n"
"Evaluate due devices: judge all the cards of each device together, under the\n"
"device lock, and queue their commands. One line per device evaluated.\n"
"\n"
"Options:\n"
"  --follow         keep evaluating, sleeping until the next device is due\n"
"  --until-empty    follow until no device is queued at all (claimed ones count)\n"
"  --for SECONDS    stop claiming after SECONDS and exit\n"
"  --max N          evaluate at most N devices in all\n"
"  --batch N        claim at most N devices per round (default 64)\n"
"  --redis URL, --prefix P, -h/--help, --version\n"
"\n"
"Output: {\"device\":\"D42\",\"ver\":3,\"scenes\":[\"device\"],\"state\":\"done\",\n"
"         \"cards\":[{\"card\":\"...\",\"carrier\":\"c17\",\"status\":\"queued\",\"action\":\"stop\",...}]}\n"
"state: done; again (a request came in meanwhile: one more pass follows);\n"
"  retry (due again in 1 s: the device lock was busy, Redis refused part of the\n"
"  evaluation, said in \"error\", or the facts of the cards in \"changed\" changed\n"
"  while they were judged); lost (lease expired); error (Redis refused to\n"
"  finish it: evaluated again after its lease).\n"
"Environment: SRQ_LEASE_MS, SRQ_MIN_INTERVAL_MS, SRQ_AUDIT_MAXLEN.\n"
"Exit: 0 done, 2 usage, 3 Redis unavailable or refusing a write.\n"
"SIGTERM or SIGINT stops it as --for does: the devices it claimed are evaluated\n"
"first; a second one kills it (what it claimed then waits for its lease).\n"
"Example (cron, every minute; or srq-dev-eval.service, dev-eval --follow):\n"
"  flock -n /tmp/srq-dev-eval.lock dev-eval --follow --for 55\n";

struct claim {
	char device[65], token[64];
	long long ver;
	json_t *scenes; /* array of strings */
};

static struct sr_config cfg;
static struct sr_redis rds;
static int status = SR_EX_OK; /* SR_EX_BACKEND once a shard's claim failed */

/* The scene the cards' commands carry: the most urgent of the snapshot. */
static const char *
urgent_scene(json_t *scenes)
{
	const char *best = "device";
	int bestp = sr_scene_prio(best);
	size_t i;
	json_t *v;

	json_array_foreach(scenes, i, v) {
		int p = sr_scene_prio(json_string_value(v));

		if (p >= 0 && p < bestp) {
			best = json_string_value(v);
			bestp = p;
		}
	}
	return best;
}

static int
finish(struct claim *c, const char *how, json_t *out)
{
	char keys[SR_DEVICE_FINISH_KEYS][SR_KEY_MAX], ver[24], delay[24];
	size_t nscenes = json_array_size(c->scenes);
	/* device_finish.lua's keys and arguments, as its header declares them */
	const char **argv = sr_malloc((SR_DEVICE_FINISH_KEYS + SR_DEVICE_FINISH_ARGC + nscenes) * sizeof *argv);
	const char **a = argv + SR_DEVICE_FINISH_KEYS;
	redisReply *rep;
	int rc = 0;

	snprintf(ver, sizeof ver, "%lld", c->ver);
	snprintf(delay, sizeof delay, "%d", RETRY_MS);
	sr_keys_script(keys, argv, cfg.prefix, NULL, c->device, sr_lua_device_finish_keys);
	a[SR_DEVICE_FINISH_ARGV_DEVICE] = c->device;
	a[SR_DEVICE_FINISH_ARGV_TOKEN] = c->token;
	a[SR_DEVICE_FINISH_ARGV_VERSION] = ver;
	a[SR_DEVICE_FINISH_ARGV_HOW] = how;
	a[SR_DEVICE_FINISH_ARGV_DELAY] = delay;
	for (size_t i = 0; i < nscenes; i++)
		a[SR_DEVICE_FINISH_ARGV_SCENES + i] = json_string_value(json_array_get(c->scenes, i));
	sr_redis_append_script(&rds, SR_LUA_DEVICE_FINISH, SR_DEVICE_FINISH_KEYS,
	    (int)(SR_DEVICE_FINISH_KEYS + SR_DEVICE_FINISH_ARGC + nscenes), argv, NULL);
	free(argv);
	if (!(rep = sr_redis_reply(&rds)))
		return -1;
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
		json_object_set_new(out, "state", json_string(rep->element[0]->str));
	else {
		/* Refused: the device stays claimed until its lease runs out,
		 * then it is evaluated again. */
		const char *why = rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply";

		json_object_set_new(out, "state", json_string("error"));
		json_object_set_new(out, "error", json_string(why));
		sr_warn("device '%s': not finished: %s", c->device, why);
		status = SR_EX_BACKEND;
	}
	freeReplyObject(rep);
	return rc;
}

/* Redis refused part of a device's evaluation: it is said (the line's
 * error, stderr, exit 3), and the device is evaluated again later. */
static int
refused(struct claim *c, const char *why, json_t *out)
{
	json_object_set_new(out, "error", json_string(why));
	sr_warn("device '%s': %s", c->device, why);
	status = SR_EX_BACKEND;
	return finish(c, "retry", out);
}

/* Release the device lock; a refusal is said (the lock runs out by itself).
 * -1 if Redis failed. */
static int
unlock(struct claim *c, const char *token)
{
	int u = sr_device_unlock(&rds, &cfg, c->device, token);

	if (u == -2) {
		sr_warn("device '%s': %s", c->device, rds.errstr);
		status = SR_EX_BACKEND;
	} else if (u == -3) /* its hold ran out under us: said, as the direct path says it */
		sr_warn("device '%s': %s", c->device, rds.errstr);
	return u == -1 ? -1 : 0;
}

/* After the cards' commands are written: did any judged card's facts, or
 * the device's, change since they were read? Card requests (sr-enqueue) and
 * sr-asset do not take the device lock, so a renewal written between our
 * read and our write was judged before ours and is replaced by ours, judged
 * on the facts before it (a cancel: the card stays stopped). Read again
 * after our write, a change made before it is seen: the cards are judged
 * again (at the same instant, so the clock alone changes nothing), and a
 * card whose judgment or device moved is named in *changed. Returns how
 * many, or -1 if Redis failed. */
static int
facts_moved(struct claim *c, struct sr_cmd **pcmds, int ncmds, long long now, json_t *changed)
{
	char key[SR_KEY_MAX];
	const char *f[] = { "HGETALL", sr_key_device_facts(key, cfg.prefix, c->device) };
	struct sr_device_facts df;
	redisReply *rep;
	int moved = 0, dev_unread;

	sr_redis_append(&rds, 2, f, NULL);
	for (int i = 0; i < ncmds; i++) {
		const char *argv[] = { "HGETALL", sr_key_card_facts(key, cfg.prefix, pcmds[i]->card) };

		sr_redis_append(&rds, 2, argv, NULL);
	}
	if (!(rep = sr_redis_reply(&rds)))
		return -1;
	dev_unread = sr_device_facts_load(&df, rep) < 0;
	freeReplyObject(rep);
	for (int i = 0; i < ncmds; i++) {
		struct sr_card_facts cf;
		struct sr_judgment j;
		int unread;

		if (!(rep = sr_redis_reply(&rds)))
			return -1;
		unread = sr_card_facts_load(&cf, rep) < 0;
		freeReplyObject(rep);
		if (!unread && !dev_unread) {
			j = sr_judge(&cf, &df, now);
			if (!strcmp(cf.device, c->device) && j.want == pcmds[i]->j.want &&
			    j.target_stopped == pcmds[i]->j.target_stopped && j.manual == pcmds[i]->j.manual &&
			    !strcmp(j.reason, pcmds[i]->j.reason))
				continue;
		}
		json_array_append_new(changed, json_string(pcmds[i]->card));
		moved++;
	}
	return moved;
}

/* Evaluate one claimed device; prints its line. -1 if Redis failed. */
static int
evaluate(struct claim *c)
{
	char key[SR_KEY_MAX], token[SR_TOKEN_MAX];
	json_t *out = json_object(), *cards = json_array(), *changed = NULL;
	struct sr_device_facts df;
	struct sr_card_facts *cf = NULL;
	struct sr_cmd *cmds = NULL, **pcmds = NULL;
	redisReply *members = NULL, *rep;
	long long now = 0;
	size_t n = 0;
	int got, ncmds = 0, nfailed = 0, nchanged = 0, rc = -1;
	char failed[256] = ""; /* the first card's error */

	json_object_set_new(out, "device", json_string(c->device));
	json_object_set_new(out, "ver", json_integer(c->ver));
	json_object_set_new(out, "scenes", json_incref(c->scenes));
	if ((got = sr_device_lock(&rds, &cfg, c->device, token, LOCK_HOLD_MS, LOCK_WAIT_MS)) == -1)
		goto out;
	if (got == -2) {
		rc = refused(c, rds.errstr, out);
		goto print;
	}
	if (!got) {
		rc = finish(c, "retry", out);
		goto print;
	}
	/* Under the lock: reads and writes only. */
	{
		const char *f[] = { "HGETALL", sr_key_device_facts(key, cfg.prefix, c->device) };
		char mkey[SR_KEY_MAX], msg[256] = "";
		const char *m[] = { "SMEMBERS", sr_key_device_cards(mkey, cfg.prefix, c->device) };
		int64_t now_ms;

		sr_redis_append_time(&rds);
		sr_redis_append(&rds, 2, f, NULL);
		sr_redis_append(&rds, 2, m, NULL);
		if (!(rep = sr_redis_reply(&rds)))
			goto unlock;
		/* With no clock every package would look unexpired. */
		if ((now_ms = sr_redis_clock(&rds, rep)) < 0)
			snprintf(msg, sizeof msg, "%s", rds.errstr);
		now = now_ms / 1000;
		freeReplyObject(rep);
		if (!(rep = sr_redis_reply(&rds)))
			goto unlock;
		if (msg[0] || sr_device_facts_load(&df, rep) < 0) {
			/* A device facts key damaged by hand (a string where the hash
			 * is) is not a device with no facts: judged on nothing, a card
			 * of a disabled device would be resumed. Nothing is queued;
			 * the device is evaluated again later, and says so each time. */
			if (!msg[0])
				snprintf(msg, sizeof msg, "device facts not read: %s", rep->str);
			freeReplyObject(rep);
			if (!(members = sr_redis_reply(&rds)))
				goto unlock;
			if (unlock(c, token) < 0)
				goto out;
			rc = refused(c, msg, out);
			goto print;
		}
		freeReplyObject(rep);
		if (!(members = sr_redis_reply(&rds)))
			goto unlock;
	}
	n = members->type == REDIS_REPLY_ARRAY ? members->elements : 0;
	cf = sr_malloc((n + 1) * sizeof *cf);
	cmds = sr_malloc((n + 1) * sizeof *cmds);
	pcmds = sr_malloc((n + 1) * sizeof *pcmds);
	for (size_t i = 0; i < n; i++) {
		const char *argv[] = { "HGETALL", sr_key_card_facts(key, cfg.prefix, members->element[i]->str) };

		sr_redis_append(&rds, 2, argv, NULL);
	}
	for (size_t i = 0; i < n; i++) {
		if (!(rep = sr_redis_reply(&rds)))
			goto unlock;
		memset(&cmds[i], 0, sizeof cmds[i]);
		if (sr_card_facts_load(&cf[i], rep) < 0) {
			/* Damaged by hand: not a card with no facts, nor one of
			 * another device. Its line says so; the device goes again. */
			json_t *o = json_object();
			char msg[256];

			snprintf(msg, sizeof msg, "facts not read: %s", rep->str);
			json_object_set_new(o, "card", json_string(members->element[i]->str));
			json_object_set_new(o, "status", json_string("error"));
			json_object_set_new(o, "error", json_string(msg));
			json_array_append_new(cards, o);
			if (!nfailed++)
				snprintf(failed, sizeof failed, "%s", msg);
			freeReplyObject(rep);
			continue;
		}
		freeReplyObject(rep);
		/* A member whose facts moved it to another device is not ours. */
		if (!cf[i].carrier[0] || strcmp(cf[i].device, c->device))
			continue;
		cmds[i].card = members->element[i]->str;
		cmds[i].carrier = cf[i].carrier;
		cmds[i].scene = urgent_scene(c->scenes);
		cmds[i].source = "dev-eval";
		cmds[i].prio = sr_scene_prio(cmds[i].scene);
		cmds[i].j = sr_judge(&cf[i], &df, now);
		pcmds[ncmds++] = &cmds[i];
	}
	if (ncmds > 0 && sr_cmds_collect(&rds, sr_cmds_append(&rds, &cfg, pcmds, ncmds)) < 0)
		goto unlock;
	changed = json_array();
	if (ncmds > 0 && (nchanged = facts_moved(c, pcmds, ncmds, now, changed)) < 0)
		goto unlock;
	if (unlock(c, token) < 0)
		goto out;
	for (int i = 0; i < ncmds; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "card", json_string(pcmds[i]->card));
		json_object_set_new(o, "carrier", json_string(pcmds[i]->carrier));
		if (pcmds[i]->status && pcmds[i]->warning[0]) {
			/* Queued, its account not registered: no claim finds it
			 * until one is; the next pass registers it. */
			sr_cmd_ack(o, pcmds[i]);
			json_object_set_new(o, "warning", json_string(pcmds[i]->warning));
			if (!nfailed++)
				snprintf(failed, sizeof failed, "%s", pcmds[i]->warning);
		} else if (pcmds[i]->status)
			sr_cmd_ack(o, pcmds[i]);
		else {
			json_object_set_new(o, "status", json_string("error"));
			json_object_set_new(o, "error", json_string(pcmds[i]->error));
			if (!nfailed++)
				snprintf(failed, sizeof failed, "%s", pcmds[i]->error);
		}
		json_array_append_new(cards, o);
	}
	json_object_set_new(out, "cards", cards);
	cards = NULL;
	if (nchanged > 0) {
		/* Judged on facts that changed under it: not done; judged again
		 * in a second, on the facts as they are then. */
		json_object_set_new(out, "changed", changed);
		changed = NULL;
	}
	if (nchanged > 0 && !nfailed)
		rc = finish(c, "retry", out);
	else if (nfailed) {
		/* Not done while a card's command is not written (on a cluster
		 * its account's master may refuse what the device's took); said,
		 * and exit 3, whether or not other cards changed as well. */
		char why[400];

		snprintf(why, sizeof why, "%d of %zu cards: %s", nfailed, n, failed);
		rc = refused(c, why, out);
	} else
		rc = finish(c, "done", out);
	goto print;
unlock:
	sr_device_unlock(&rds, &cfg, c->device, token); /* Redis failed: best effort */
	goto out;
print:
	if (rc == 0)
		sr_emit(json_incref(out));
out:
	json_decref(changed);
	json_decref(cards);
	json_decref(out);
	if (members)
		freeReplyObject(members);
	free(cf);
	free(cmds);
	free(pcmds);
	return rc;
}

/* One claim round over every shard. Returns devices claimed (in *claims),
 * or -1. *queued: devices in the queues; *wait_ms: until the next is due. */
static int
claim_round(long budget, long batch, struct claim **claims, long long *queued, long long *wait_ms)
{
	char key[SR_KEY_MAX], prefix[SR_KEY_MAX], max[24], lease[24];
	int n = 0, failed = 0, seen = 0;

	*queued = 0;
	*wait_ms = 250;
	*claims = NULL;
	snprintf(lease, sizeof lease, "%ld", cfg.lease_ms);
	/* The budget shared evenly over the shards; one short of one per shard
	 * goes one each to the next shards, and what they leave unclaimed to
	 * the ones after them (sr-claim's accounts likewise). */
	while (seen < SR_DEVICE_SHARDS && n < budget) {
		long left = budget - n;
		int m = left < SR_DEVICE_SHARDS - seen ? (int)left : SR_DEVICE_SHARDS - seen;
		long share = left / m, extra = left % m;

		for (int k = 0; k < m; k++) {
			int s = seen + k;
			long mine = share + (k < extra);
			/* device_claim.lua's: its key is the shard's queue */
			const char *argv[SR_DEVICE_CLAIM_KEYS + SR_DEVICE_CLAIM_ARGC];
			const char **a = argv + SR_DEVICE_CLAIM_KEYS;

			snprintf(max, sizeof max, "%ld", mine < batch ? mine : batch);
			snprintf(prefix, sizeof prefix, "%s:device_eval:{d%d}:dev:", cfg.prefix, s);
			argv[0] = sr_key_shard(key, cfg.prefix, s, "queue");
			a[SR_DEVICE_CLAIM_ARGV_DEV_PREFIX] = prefix;
			a[SR_DEVICE_CLAIM_ARGV_MAX] = max;
			a[SR_DEVICE_CLAIM_ARGV_LEASE] = lease;
			sr_redis_append_script(&rds, SR_LUA_DEVICE_CLAIM, SR_DEVICE_CLAIM_KEYS,
			    SR_DEVICE_CLAIM_KEYS + SR_DEVICE_CLAIM_ARGC, argv, NULL);
		}
		for (int k = 0; k < m; k++) {
			int s = seen + k;
			redisReply *rep = sr_redis_reply(&rds), *list;

			if (!rep)
				return -1;
			if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 4) {
				/* Nothing claimed on this shard (a script runs whole
				 * or not at all); said once, after the round. */
				snprintf(rds.errstr, sizeof rds.errstr, "device claim failed on shard %d: %s", s,
				    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
				failed++;
				freeReplyObject(rep);
				continue;
			}
			list = rep->element[0];
			*claims = sr_realloc(*claims, (size_t)(n + (int)list->elements + 1) * sizeof **claims);
			for (size_t i = 0; i < list->elements; i++) {
				redisReply *e = list->element[i];
				struct claim *c = &(*claims)[n++];

				snprintf(c->device, sizeof c->device, "%s", e->element[0]->str);
				c->ver = e->element[1]->integer;
				snprintf(c->token, sizeof c->token, "%s", e->element[2]->str);
				c->scenes = json_array();
				for (size_t j = 0; j < e->element[3]->elements; j++)
					json_array_append_new(c->scenes, json_string(e->element[3]->element[j]->str));
			}
			*queued += rep->element[2]->integer;
			if (rep->element[1]->integer >= 0 &&
			    rep->element[1]->integer - rep->element[3]->integer < *wait_ms)
				*wait_ms = rep->element[1]->integer - rep->element[3]->integer;
			freeReplyObject(rep);
		}
		seen += m;
	}
	if (seen > 0 && failed == seen)
		return -1; /* Redis refuses every claim (read only, out of memory) */
	if (failed) {
		char msg[sizeof rds.errstr + 64];

		/* --follow: said once, then counted, while it lasts */
		snprintf(msg, sizeof msg, "%d of %d shards: %s", failed, seen, rds.errstr);
		sr_warn_each(NULL, msg);
		status = SR_EX_BACKEND;
	}
	return n;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		SR_COMMON_LONGOPTS,
		SR_DISPATCH_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct sr_dispatch d;
	int c;

	sr_prog = "dev-eval";
	sr_log_stamp = 1; /* it runs unattended: its stderr is a log */
	sr_config_init(&cfg);
	sr_dispatch_init(&d);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
		if (!sr_dispatch_option(&d, c, optarg) && !sr_config_option(&cfg, c, optarg, usage))
			sr_usage(SR_EX_USAGE, usage);
	sr_no_operands(argc, argv, usage);
	sr_redis_open(&rds, &cfg);

	while (!sr_dispatch_done(&d)) {
		long long queued = 0, wait_ms = 250;
		struct claim *claims = NULL;
		int on, got;

		if ((on = sr_switch_get(&rds, &cfg)) < 0)
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		if (!on) {
			if (!sr_dispatch_switch_off(&d, "queued devices"))
				break;
			continue;
		}
		d.said_off = 0;
		if ((got = claim_round(sr_dispatch_budget(&d, d.batch * SR_DEVICE_SHARDS), d.batch, &claims,
		    &queued, &wait_ms)) < 0)
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		for (int i = 0; i < got; i++) {
			if (evaluate(&claims[i]) < 0)
				sr_die(SR_EX_BACKEND, "%s", rds.errstr);
			json_decref(claims[i].scenes);
		}
		free(claims);
		sr_flush();
		d.total += got;
		if (got > 0 && !(d.until_empty && queued == 0))
			continue;
		if (!sr_dispatch_idle(&d, queued, wait_ms))
			break;
	}
	sr_redis_close(&rds);
	return sr_finish(status);
}
