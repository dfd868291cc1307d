/* enqueue/judge_again.c - judging again: once a batch's writes are
 * answered, each card it wrote (a command queued, or a direct call that
 * went) is judged on its facts as they are now, and what they want instead
 * is queued (the line's "followup"). Why, below: judge_again. */
#include <stdlib.h>
#include <string.h>

#include "enqueue.h"

/* A direct call that went: the card is where it put it, nothing queued. */
static int
called(const struct req *r)
{
	return r->direct && r->direct->ok;
}

/* Whether a request's card is judged again after its write (judge_again):
 * a command written through the queue (a direct call that failed too: it
 * was queued, and replaced what a request judged meanwhile had written),
 * or a direct call that went. Not one whose facts Redis refused while it
 * ran its script all the same (on a cluster, its account's master took
 * it): judged again on the facts Redis holds, which lack its own, it would
 * undo its own command, which its ack says is queued, judged on its facts
 * (its warning says to send it again). */
static int
written(const struct req *r)
{
	return r->st == ST_DONE && !r->is_device && !r->facts_refused &&
	    (called(r) || r->cmd.status != NULL);
}

/* Redis lost while the cards written were judged again: their lines stand,
 * and say so (exit 3: a request judged at the same time may have been
 * overwritten), each as far as it got: not judged again, or judged again
 * with its followup unanswered (follows: the followups were sent). The rest
 * of the batch is answered error by the caller. -1. */
static int
recheck_lost(struct batch *b, int follows)
{
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];

		if (!r->again || r->warning[0])
			continue;
		if (follows)
			snprintf(r->warning, sizeof r->warning, "judged again after its %s, the facts want "
			    "%s, and that was not answered (send it again): %s", called(r) ? "call" : "write",
			    sr_want_name(r->follow.j.want), rds.errstr);
		else
			snprintf(r->warning, sizeof r->warning, "not judged again after its %s: %s",
			    called(r) ? "call" : "write", rds.errstr);
	}
	return -1;
}

/* Does a judgment ask for what was written? want_only: a direct call that
 * went, which left nothing queued (its card is where the call put it). */
static int
judged_alike(const struct sr_judgment *a, const struct sr_judgment *b, int want_only)
{
	return a->want == b->want && (want_only || (a->target_stopped == b->target_stopped &&
	    a->manual == b->manual));
}

/* Passes of judge_again: each one follows a write another request made
 * between the previous pass's read and its own. */
#define JUDGE_PASSES 3

/* After a batch's writes are answered: each card written is judged again on
 * its facts as they are now, and when they want something else, that is
 * queued and the line says so (followup, followup_status, followup_ver).
 *
 * Two requests for one card bring facts the other lacks (a renewal, a
 * usage report), and each judges on the facts it read before writing its
 * own: the one whose script runs last wins with a judgment that misses the
 * other's facts, and cancels (or reverses) a command the other had acked.
 * Every request writes its facts before its script, and reads them again
 * after it (on a cluster, its facts are answered before its script is
 * sent: append_commands): so the request whose script ran last reads every
 * fact that any request wrote before, and queues what they all want.
 *
 * The direct path's calls likewise: a direct call has no command in the
 * queue while it is at the carrier, so a request for the card judged
 * meanwhile (a renewal while the stop is at the carrier) read facts that
 * lag the call and found nothing to do; this read comes after this call's
 * finish wrote the card's 'seen' (direct_done.lua), which a script run
 * later judges against (enqueue.lua). So one of the two sees the other.
 * -1 if Redis failed. */
int
judge_again(struct batch *b)
{
	struct sr_cmd *cmds[BATCH];
	char key[SR_KEY_MAX];
	redisReply *rep;

	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];

		r->has_follow = 0;
		if ((r->again = written(r)))
			r->last = called(r) ? (struct sr_judgment){ 1, SR_WANT_NONE, NULL, 0 } : r->cmd.j;
	}
	for (int pass = 0; pass < JUDGE_PASSES; pass++) {
		long long now = -1;
		int n = 0, k = 0;

		for (int i = 0; i < b->n; i++) {
			struct req *r = &b->reqs[i];
			const char *argv[] = { "HGETALL", sr_key_card_facts(key, cfg.prefix, r->card) };

			if (!r->again)
				continue;
			if (!k++)
				sr_redis_append_time(&rds);
			sr_redis_append(&rds, 2, argv, NULL);
		}
		if (!k)
			return 0;
		if (!(rep = sr_redis_reply(&rds)))
			return recheck_lost(b, 0);
		if ((now = sr_redis_clock(&rds, rep)) >= 0) /* (no clock: nothing judged, the write stands) */
			now /= 1000;
		freeReplyObject(rep);
		for (int i = 0; i < b->n; i++) {
			struct req *r = &b->reqs[i];

			if (!r->again)
				continue;
			if (!(rep = sr_redis_reply(&rds)))
				return recheck_lost(b, 0);
			memset(&r->cf, 0, sizeof r->cf);
			memset(&r->df, 0, sizeof r->df);
			/* (facts not read: nothing judged, the write stands) */
			r->again = now > 0 && sr_card_facts_load(&r->cf, rep) == 0;
			freeReplyObject(rep);
			if (r->again && r->cf.device[0]) {
				const char *argv[] = { "HGETALL", sr_key_device_facts(key, cfg.prefix, r->cf.device) };

				sr_redis_append(&rds, 2, argv, NULL);
			}
		}
		for (int i = 0; i < b->n; i++) {
			struct req *r = &b->reqs[i];
			struct sr_judgment j;

			if (!r->again)
				continue;
			if (r->cf.device[0]) {
				if (!(rep = sr_redis_reply(&rds)))
					return recheck_lost(b, 0);
				r->again = sr_device_facts_load(&r->df, rep) == 0;
				freeReplyObject(rep);
			}
			if (!r->again)
				continue;
			j = sr_judge(&r->cf, r->cf.device[0] ? &r->df : NULL, now);
			/* What was written is what the facts want. */
			if (judged_alike(&j, &r->last, called(r) && !r->has_follow)) {
				r->again = 0;
				continue;
			}
			r->follow = r->cmd;
			r->follow.status = NULL;
			r->follow.error[0] = r->follow.warning[0] = '\0';
			r->follow.j = j;
			cmds[n++] = &r->follow;
		}
		if (n == 0)
			return 0;
		if (sr_cmds_collect(&rds, sr_cmds_append(&rds, &cfg, cmds, n)) < 0)
			return recheck_lost(b, 1);
		for (int i = 0; i < b->n; i++) {
			struct req *r = &b->reqs[i];

			if (!r->again)
				continue;
			if (!r->follow.status) {
				char why[sizeof r->follow.error];

				memcpy(why, r->follow.error, sizeof why); /* (one struct: no overlap for snprintf) */
				if (!r->warning[0])
					snprintf(r->warning, sizeof r->warning, "the facts changed %s, and what they "
					    "now want was not queued: %s", called(r) ? "during its call" :
					    "while it was judged", why);
				r->again = 0;
				continue;
			}
			r->has_follow = 1;
			r->last = r->follow.j;
		}
	}
	/* Still moving after the last pass: said, and the exit is 3. */
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];

		if (r->again && !r->warning[0])
			snprintf(r->warning, sizeof r->warning, "its card's facts kept changing while it was "
			    "judged: send it again to be sure of the last word");
	}
	return 0;
}
