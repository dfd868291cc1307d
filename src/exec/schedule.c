/* schedule.c - sr-exec's scheduling step: which tasks to gate and judge in
 * one round trip, sending the held calls when due, and reaping the calls
 * that finished. */
#include <stdlib.h>
#include <string.h>

#include "exec.h"

/* The items to ask the gate for, in claim order, up to cap: the judged ones,
 * and the waiting ones now due, within each account's in-flight limit, once
 * its authentication is ready. */
static int
gate_candidates(struct item **batch, int64_t now, int cap)
{
	/* Accounts with an item waiting for the pace's next slot: the items
	 * behind it in lane order do not ask for that slot meanwhile. Asking
	 * the moment they are judged, they would win it from the item that
	 * waits on a timer (a bulk call from a due status query). */
	struct sr_edge **waiting = sr_malloc((size_t)(nitems + 1) * sizeof *waiting);
	int n = 0, nwaiting = 0;

	for (struct item *it = items; it && n < cap; it = it->next) {
		struct sr_edge *e = it->edge;
		int ready, behind = 0;

		if (it->state != IT_READY && it->state != IT_WAIT)
			continue;
		if (it->judged) { /* no call: nothing of the account's to wait for */
			batch[n++] = it;
			continue;
		}
		for (int i = 0; i < nwaiting && !behind; i++)
			behind = waiting[i] == e;
		if (behind)
			continue;
		if (it->state == IT_WAIT && it->wake > now) {
			waiting[nwaiting++] = e;
			continue;
		}
		if (e->acct->running > 0 && e->held + e->running >= e->acct->running)
			continue; /* the account's calls in flight are at its limit */
		if ((ready = sr_edge_ready(gw, e)) == 0)
			continue; /* its token is being fetched */
		if (ready < 0) {
			it->call.class = e->auth_class ? e->auth_class : "auth";
			emit_result(it, "retry", e->auth_error);
			continue;
		}
		batch[n++] = it;
	}
	free(waiting);
	return n;
}

/* The judged candidates batch[0..m-1] less those a new task of the same
 * account in a higher lane is to go before: gated now, they would take the
 * account's next slot while it is judged; gated in the next round, after
 * it. Returns how many are left, in order. */
static int
behind_fresh(struct item **batch, int m, struct item **fresh, int nfresh)
{
	int k = 0;

	for (int i = 0; i < m; i++) {
		int behind = 0;

		for (int j = 0; j < nfresh && !behind; j++)
			behind = fresh[j]->edge == batch[i]->edge && fresh[j]->t.lane < batch[i]->t.lane;
		if (!behind)
			batch[k++] = batch[i];
	}
	return k;
}

/* One scheduling step: ask the gate for tasks judged before, and judge the
 * tasks the next step will want, in one round trip; then, if slots are
 * still free, ask the gate for the newly judged at once (a second round
 * trip, as when the pipeline starts). The next step is expected to free
 * about as many slots as calls finished since the last (twice that, for
 * the jitter), so that many tasks are judged ahead: a freed slot costs one
 * round trip, and a task is judged a step or two before its gate, not long
 * before. A judgment older than
 * JUDGED_MAX_MS (a task that waited on its account's rate or limit) is
 * made again. Then send what is held and due. Returns ms until the next
 * held or waiting item is due. */
int64_t
schedule(void)
{
	struct item **batch = sr_malloc((size_t)(nitems + 1) * sizeof *batch);
	struct item **fresh = sr_malloc((size_t)(nitems + 1) * sizeof *fresh);
	struct item **stale = sr_malloc((size_t)(nitems + 1) * sizeof *stale);
	int64_t now = sr_mono_ms(), next = 50;
	int slots = (int)cfg.concurrency - sr_gateway_running(gw) - nheld;
	int ahead = 2 * freed < (int)cfg.concurrency ? 2 * freed : (int)cfg.concurrency;

	/* A status query decides an earlier call and is never skipped: it has
	 * nothing to judge, and no facts to read. */
	for (struct item *it = items; it; it = it->next)
		if (it->state == IT_NEW && strcmp(it->t.kind, "call") != 0)
			it->state = IT_READY;
	for (int round = 0; round < 2 && redis_up && slots > 0; round++) {
		struct gating g = { 0 };
		int n = gate_candidates(batch, now, round == 0 ? slots + ahead : slots), rc = 0;
		int nfresh = 0, nstale = 0, m = 0;
		int64_t sent;

		if (round == 0) {
			/* Judged long ago: judged again (gated in the next round). */
			for (int i = 0; i < n; i++)
				if (!batch[i]->resend && !strcmp(batch[i]->t.kind, "call") &&
				    now - batch[i]->judged_at > JUDGED_MAX_MS)
					stale[nstale++] = batch[i];
				else
					batch[m++] = batch[i];
			/* The new tasks the judged ones fall short of, in claim order. */
			for (struct item *it = items; it && m + nstale + nfresh < slots + ahead; it = it->next)
				if (it->state == IT_NEW)
					fresh[nfresh++] = it;
			for (int i = 0; i < nstale; i++) {
				stale[i]->state = IT_NEW;
				fresh[nfresh++] = stale[i];
			}
			m = behind_fresh(batch, m, fresh, nfresh);
			n = m < slots ? m : slots; /* the rest: the next step's */
		}
		if (n == 0 && nfresh == 0)
			break;
		sent = sr_mono_ms();
		if (n > 0)
			gate_append(&g, batch, n);
		g.sent = sent;
		if (nfresh > 0)
			rejudge_append(fresh, nfresh);
		if (n > 0)
			rc = gate_read(&g);
		if (rc == 0 && nfresh > 0)
			rc = rejudge_read(fresh, nfresh, sent);
		if (n > 0)
			gate_end(&g, rc < 0);
		/* A step of Redis's clock seen this round: recorded before the
		 * next gate runs on it. */
		if (rc == 0 && sr_clocks_record(&clocks, &rds, &cfg, gw, sr_prog) < 0)
			rc = -1;
		if (rc < 0)
			sr_redis_lost(&rds, &redis_up, "task");
		if (nfresh == 0)
			break;
		slots = (int)cfg.concurrency - sr_gateway_running(gw) - nheld;
	}
	if (!redis_up) {
		for (struct item *it = items; it; it = it->next)
			if (it->state == IT_NEW || it->state == IT_READY || it->state == IT_WAIT)
				result_error(it, rds.errstr);
		sr_redis_discard(&rds);
	}
	/* Send what is due; the rest says when it will be. */
	now = sr_mono_ms();
	for (struct item *it = items; it; it = it->next)
		if (it->state == IT_WAIT && it->wake > now && it->wake - now < next)
			next = it->wake - now; /* (a due one waits for a freed slot) */
		else if (it->state == IT_HOLD) {
			if (it->wake <= now) {
				it->state = IT_CALL;
				it->edge->held--;
				nheld--;
				/* Tests only: a machine too loaded to send on time, made
				 * deterministic (every call leaves this late). */
				if (send_delay_ms > 0)
					sr_sleep_ms(send_delay_ms);
				if (redis_up && sr_edge_late(&rds, &cfg, it->edge, it->wake) < 0) /* sent all the same: its slot was granted */
					sr_redis_lost(&rds, &redis_up, "task");
				sr_gateway_start(gw, &it->call);
			} else if (it->wake - now < next)
				next = it->wake - now;
		}
	freed = 0;
	free(batch);
	free(fresh);
	free(stale);
	sr_flush();
	return next < 1 ? 1 : next;
}

/* The calls that finished: each one's result line, or, refused for
 * authentication, sent again once through the gate. */
void
reap(void)
{
	struct sr_call *call;
	struct item **pp;

	while ((call = sr_gateway_done(gw))) {
		struct item *it = (struct item *)((char *)call - offsetof(struct item, call));

		freed++;
		if (call->class && !strcmp(call->class, "auth") && call->verdict == SR_V_REAUTH &&
		    !it->resend) {
			/* Refused for authentication: re-authenticate (once for every
			 * call in flight) and send it again, through the gate. */
			sr_edge_reauth(call->edge, call->auth_gen);
			it->resend = 1;
			it->state = IT_READY;
			continue;
		}
		emit_result(it, sr_outcome_name(call->outcome), call->error);
	}
	for (pp = &items; *pp;) {
		if ((*pp)->state == IT_DONE) {
			struct item *dead = *pp;

			*pp = dead->next;
			free(dead);
			nitems--;
		} else
			pp = &(*pp)->next;
	}
	sr_flush();
}
