/* enqueue/emit.c - the output records: one ack per request, in input order,
 * once Redis answered its writes: its status (queued, cancelled, ...,
 * device_queued, direct_ok, rejected, error), what it queued, its followup,
 * stale facts and warnings; the exit status they make. */
#include <stdlib.h>
#include <string.h>

#include "enqueue.h"

long n_errors; /* requests answered "status":"error" */

/* The facts changed while the request was judged (or during its direct
 * call): what they now want was queued, or the command they no longer
 * want cancelled (judge_again). */
static void
emit_followup(json_t *o, const struct req *r)
{
	const struct sr_judgment *j = &r->follow.j;
	enum sr_want w = j->want;

	if (!r->has_follow || !r->follow.status ||
	    (strcmp(r->follow.status, "queued") != 0 && strcmp(r->follow.status, "cancelled") != 0))
		return;
	/* "Nothing to do" queued: the queue turned it towards the target (a
	 * command confirming, or the card last seen otherwise: enqueue.lua),
	 * and the line says what it queued, as sr_cmd_ack does. */
	if (w == SR_WANT_NONE && !strcmp(r->follow.status, "queued"))
		w = j->target_stopped ? SR_WANT_STOP : SR_WANT_RESUME;
	json_object_set_new(o, "followup", json_string(sr_want_name(w)));
	json_object_set_new(o, "followup_status", json_string(r->follow.status));
	json_object_set_new(o, "followup_ver", json_integer(r->follow.ver));
}

static void
emit_direct(json_t *o, struct req *r)
{
	struct sr_direct *d = r->direct;

	json_object_set_new(o, "status", json_string(d->ok ? "direct_ok" : "direct_failed"));
	json_object_set_new(o, "action", json_string(d->action));
	json_object_set_new(o, "reason", json_string(r->cmd.j.reason));
	json_object_set_new(o, "ver", json_integer(d->ver));
	json_object_set_new(o, "tries", json_integer(d->tries));
	if (!d->ok) {
		json_object_set_new(o, "error", json_string(d->error[0] ? d->error : d->outcome));
		/* Not lost: kept in the queue for when the switch is on again. */
		if (r->cmd.status)
			json_object_set_new(o, "queued_ver", json_integer(r->cmd.ver));
	}
	emit_followup(o, r);
}

int
emit_batch(struct req *reqs, int n)
{
	int status = SR_EX_OK;

	for (int i = 0; i < n; i++) {
		struct req *r = &reqs[i];
		json_t *o = json_object();

		json_object_set_new(o, "line", json_integer(r->line));
		if (r->card[0])
			json_object_set_new(o, "card", json_string(r->card));
		if (r->carrier[0])
			json_object_set_new(o, "carrier", json_string(r->carrier));
		if (r->is_device)
			json_object_set_new(o, "device", json_string(r->device));
		switch (r->st) {
		case ST_DONE:
			if (r->is_device) {
				json_object_set_new(o, "status", json_string("device_queued"));
				json_object_set_new(o, "scene", json_string(r->scene));
				json_object_set_new(o, "ver", json_integer(r->cmd.ver));
			} else if (r->direct) {
				emit_direct(o, r);
				if (!r->direct->ok) {
					/* the carrier's failure, or the account's: said, as
					 * the exit 3 it makes */
					sr_warn_each(NULL, "direct call failed: queued for when the switch is on");
					status = sr_worst(status, SR_EX_BACKEND);
				}
			} else {
				sr_cmd_ack(o, &r->cmd);
				emit_followup(o, r);
				/* An evaluation of its device ran while it was judged:
				 * the device is judged again (device_recheck.lua). */
				if (r->requeued_ver > 0) {
					json_object_set_new(o, "device_requeued", json_string(r->requeued_device));
					json_object_set_new(o, "device_ver", json_integer(r->requeued_ver));
				}
			}
			/* Facts the stored ones outdate: not written, not judged on. */
			if (r->stale)
				json_object_set(o, "stale_facts", r->stale);
			if (!r->warning[0] && r->cmd.warning[0]) /* its account not registered */
				snprintf(r->warning, sizeof r->warning, "%s", r->cmd.warning);
			if (r->warning[0]) {
				json_object_set_new(o, "warning", json_string(r->warning));
				sr_warn("line %ld: %s", r->line, r->warning);
				status = sr_worst(status, SR_EX_BACKEND);
			}
			break;
		case ST_REJECTED:
			status = sr_worst(status, sr_rejected(o, r->line, r->error));
			break;
		default:
			json_object_set_new(o, "status", json_string("error"));
			json_object_set_new(o, "error", json_string(r->error[0] ? r->error : "not processed"));
			status = sr_worst(status, SR_EX_BACKEND);
			if (n_errors++ == 0 && redis_up) /* Redis refused: the first said; lost: said at the end */
				sr_warn("line %ld: not queued: %s", r->line, r->error[0] ? r->error : "not processed");
			break;
		}
		sr_emit(o);
		json_decref(r->obj);
		r->obj = NULL;
		json_decref(r->stale);
		r->stale = NULL;
		free(r->direct);
		r->direct = NULL;
	}
	sr_flush();
	return status;
}
