/* enqueue/judge.c - judgment, a batch's round 3: each card request judged
 * (sr_judge) on its facts as read, then in one flush its facts writes, the
 * enqueue scripts (sr_command.c: a versioned command, a cancellation, or
 * nothing), the device requests and the device rechecks; then their
 * replies, which settle each request. */
#include "enqueue.h"

/* The judged intent of a card request, ready for sr_command.c. */
void
judge(struct req *r, long long now)
{
	r->cmd.card = r->card;
	r->cmd.carrier = r->carrier;
	r->cmd.scene = r->scene;
	r->cmd.source = r->source;
	r->cmd.prio = r->prio;
	r->cmd.j = sr_judge(&r->cf, r->cf.device[0] ? &r->df : NULL, now);
}

/* Round 3: judge, then the facts writes and the enqueue scripts in one
 * flush. On a cluster a card's facts and its account's script live on
 * different masters, and one flush sends to both at once: there the facts
 * are answered first, so that a request's facts are written before its
 * script runs, as on one server (judge_again relies on it). -1 if Redis
 * failed. */
int
append_commands(struct batch *b, long long now)
{
	struct sr_cmd *cmds[BATCH];
	int n = 0;

	append_facts_writes(b);
	if (rds.cluster && collect_facts_writes(b) < 0)
		return -1;
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];

		if (r->st != ST_PENDING || r->is_device)
			continue;
		judge(r, now);
		cmds[n++] = &r->cmd;
	}
	b->calls = sr_cmds_append(&rds, &cfg, cmds, n);
	append_devices(b);
	append_rechecks(b);
	sr_redis_flush(&rds);
	return 0;
}

/* Collect the replies of a batch's round 3. Returns -1 if Redis failed. */
int
collect_commands(struct batch *b)
{
	struct req *reqs = b->reqs;
	int rc;

	if (!b->calls)
		return 0;
	rc = collect_facts_writes(b);
	/* Always consumes (and frees) the handle; after a failure it only
	 * finds the connection dead. */
	if (sr_cmds_collect(&rds, b->calls) < 0)
		rc = -1;
	b->calls = NULL;
	if (rc == 0 && collect_devices(b) < 0)
		rc = -1;
	if (rc == 0 && collect_rechecks(b) < 0)
		rc = -1;
	for (int i = 0; i < b->n; i++) {
		struct req *r = &reqs[i];

		if (r->st != ST_PENDING || r->is_device)
			continue;
		if (r->cmd.status)
			r->st = ST_DONE;
		else if (r->cmd.error[0]) {
			r->st = ST_ERROR;
			snprintf(r->error, sizeof r->error, "%s", r->cmd.error);
		}
		facts_refused_is_error(r);
	}
	return rc;
}
