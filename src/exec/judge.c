/* judge.c - sr-exec judges each new task again with fresh facts before its
 * gate: a call no longer wanted ends without touching the gateway. */
#include <stdlib.h>
#include <string.h>

#include "exec.h"

/* Re-judging the new items with fresh facts: their reads are appended
 * (rejudge_append), to go out with the gate's scripts of the items judged
 * before, then read (rejudge_read): one round trip a scheduling step. */
void
rejudge_append(struct item **batch, int n)
{
	char key[SR_KEY_MAX];

	sr_redis_append_time(&rds);
	for (int i = 0; i < n; i++) {
		const char *argv[] = { "HGETALL", sr_key_card_facts(key, cfg.prefix, batch[i]->t.card) };

		sr_redis_append(&rds, 2, argv, NULL);
	}
}

/* The replies to rejudge_append (sent at mono ms sent), and the devices'
 * facts (one more round trip, for cards that have a device). -1 if Redis
 * failed. */
int
rejudge_read(struct item **batch, int n, int64_t sent)
{
	struct sr_card_facts *cf = sr_malloc((size_t)n * sizeof *cf);
	char (*unread)[200] = sr_malloc((size_t)n * sizeof *unread);
	struct sr_device_facts df;
	char key[SR_KEY_MAX];
	redisReply *rep;
	char no_clock[200] = "";
	int64_t now_ms;
	long long now;
	int rc = -1;

	if (!(rep = sr_redis_reply(&rds)))
		goto out;
	if ((now_ms = sr_redis_clock(&rds, rep)) >= 0) {
		int node;
		unsigned gen;

		/* A reading of Redis's clock: its steps (sr_clock.c). */
		sr_redis_reply_from(&rds, &node, &gen);
		sr_clocks_read(&clocks, node, now_ms, sent, sr_mono_ms());
	} else
		/* Judged with no clock, every package would look unexpired:
		 * each task is an error, its claim left to its lease. */
		snprintf(no_clock, sizeof no_clock, "%s", rds.errstr);
	now = now_ms / 1000;
	freeReplyObject(rep);
	for (int i = 0; i < n; i++) {
		if (!(rep = sr_redis_reply(&rds)))
			goto out;
		/* A facts key damaged by hand (a string where the hash is) is
		 * not a card with no facts: judged on nothing, the call could go
		 * the wrong way. The task is an error, and no call is made. */
		snprintf(unread[i], sizeof unread[i], "%s", no_clock);
		if (sr_card_facts_load(&cf[i], rep) < 0 && !no_clock[0])
			snprintf(unread[i], sizeof unread[i], "facts not read: %s", rep->str);
		freeReplyObject(rep);
	}
	for (int i = 0; i < n; i++)
		if (cf[i].device[0]) {
			const char *argv[] = { "HGETALL", sr_key_device_facts(key, cfg.prefix, cf[i].device) };

			sr_redis_append(&rds, 2, argv, NULL);
		}
	for (int i = 0; i < n; i++) {
		struct sr_judgment j;
		int has_dev = cf[i].device[0] != '\0';

		memset(&df, 0, sizeof df);
		if (has_dev) {
			if (!(rep = sr_redis_reply(&rds)))
				goto out;
			if (sr_device_facts_load(&df, rep) < 0 && !unread[i][0])
				snprintf(unread[i], sizeof unread[i], "device facts not read: %s", rep->str);
			freeReplyObject(rep);
		}
		if (unread[i][0]) {
			/* Its claim stays until its lease runs out: claimed again
			 * then, it is judged again, once the key is repaired. */
			result_error(batch[i], unread[i]);
			continue;
		}
		batch[i]->state = IT_READY;
		batch[i]->judged_at = sr_mono_ms();
		batch[i]->judged = 0;
		json_object_del(batch[i]->obj, "judged");
		j = sr_judge(&cf[i], has_dev ? &df : NULL, now);
		if (cf[i].carrier[0] && strcmp(cf[i].carrier, batch[i]->t.carrier) != 0) {
			/* The mirror says the card is another account's. The
			 * ownership checks (sr-asset's, sr-enqueue's) read before
			 * they write, so two loads of a new card naming two
			 * accounts can each pass, and the card is queued in both:
			 * only the account the mirror names calls it (twice, the
			 * card would change twice within its interval, each gate
			 * counting its own account's last call). */
			json_object_set_new(batch[i]->obj, "judged", json_string("account_moved"));
			batch[i]->judged = 1;
		} else if (!sr_action_still_wanted(batch[i]->t.action, &cf[i], &j)) {
			/* No call: the gate finishes the command (kind "judged"). */
			json_object_set_new(batch[i]->obj, "judged", json_string(j.reason));
			batch[i]->judged = 1;
		}
	}
	rc = 0;
out:
	free(cf);
	free(unread);
	return rc;
}
