/* result.c - sr-exec's result lines: each task's outcome as it ends, and
 * at the end of the run whether an account's gateway was reached. */
#include <stdlib.h>
#include <string.h>

#include "exec.h"

/* Per account, the calls of this run that never reached its gateway (no
 * connection, no name, a token fetch that failed so), and whether the last
 * call to finish was one of them; and those whose request could not even be
 * built (the configuration's fault: a profile's secret not set). */
struct reach {
	char carrier[65];
	long unsent, unbuilt;
	int last_unsent;
	char error[160], unbuilt_error[160];
	struct reach *next;
};
static struct reach *reaches;


static void
count_reach(const struct item *it)
{
	const struct sr_call *c = &it->call;
	struct reach *r;

	/* No call was made: the gate held it. Unless it waited on its
	 * account's token, whose fetch could not reach the gateway: that is
	 * the gateway unavailable, as for a call. */
	if (!it->at && !(c->class && !strcmp(c->class, "not_sent")))
		return;
	for (r = reaches; r && strcmp(r->carrier, it->t.carrier); r = r->next)
		;
	if (!r) {
		r = sr_malloc(sizeof *r);
		memset(r, 0, sizeof *r);
		snprintf(r->carrier, sizeof r->carrier, "%s", it->t.carrier);
		r->next = reaches;
		reaches = r;
	}
	if (c->local_fail) {
		r->unbuilt++;
		snprintf(r->unbuilt_error, sizeof r->unbuilt_error, "%s", c->error);
		return;
	}
	r->last_unsent = c->class && !strcmp(c->class, "not_sent");
	if (r->last_unsent) {
		r->unsent++;
		snprintf(r->error, sizeof r->error, "%s", c->error[0] ? c->error : "no connection");
	}
}

/* An account whose gateway the run ended without reaching (its last call
 * not sent: down all along, or gone during the run) is a backend down:
 * exit 3, as for Redis, so cron pages. A connection that failed between
 * calls that went is the carrier's weather, left to the retry and the
 * breaker. Either way the lines are retries (class not_sent): nothing is
 * lost. */
int
gateway_verdict(void)
{
	int st = SR_EX_OK;

	while (reaches) {
		struct reach *r = reaches;

		if (r->last_unsent) {
			sr_warn("account %s: its gateway is unavailable (%s); %ld calls not sent, "
			    "they go again", r->carrier, r->error, r->unsent);
			st = SR_EX_BACKEND;
		}
		/* Not the gateway: nothing was tried. Exit 2, a configuration
		 * error, so that what pages says where to look. */
		if (r->unbuilt) {
			sr_warn("account %s: a configuration error: %ld calls could not be made (%s); "
			    "they go again (see sr-admin profile %s)", r->carrier, r->unbuilt,
			    r->unbuilt_error, r->carrier);
			st = sr_worst(st, SR_EX_USAGE);
		}
		reaches = r->next;
		free(r);
	}
	return st;
}

void
emit_result(struct item *it, const char *outcome, const char *error)
{
	json_t *o = it->obj;
	struct sr_call *c = &it->call;

	count_reach(it);

	json_object_set_new(o, "outcome", json_string(outcome));
	json_object_set_new(o, "http", json_integer(c->http));
	json_object_set_new(o, "error", json_string(error ? error : ""));
	json_object_set_new(o, "ms", json_integer(c->ms));
	if (c->class)
		json_object_set_new(o, "class", json_string(c->class));
	if (c->observed[0])
		json_object_set_new(o, "observed", json_string(c->observed));
	/* A poll's word on the order ("": not read); with it, sr-confirm
	 * settles the change by its order. */
	if (!strcmp(c->action, "poll"))
		json_object_set_new(o, "order", json_string(c->order));
	/* What the carrier said, where srq's name for it does not say it all. */
	if (!strcmp(c->observed, "other") || (!strcmp(c->observed, "pending") && c->raw_state[0]) ||
	    (!strcmp(c->action, "poll") && c->raw_state[0]))
		json_object_set_new(o, "carrier_state", json_string(c->raw_state));
	if (c->in_progress)
		json_object_set_new(o, "in_progress", json_true());
	if (c->txn[0])
		json_object_set_new(o, "txn", json_string(c->txn));
	if (c->class && !strcmp(c->class, "mismatch"))
		json_object_set_new(o, "answer_card", json_string(c->answer_card));
	if (c->retry_after_ms)
		json_object_set_new(o, "retry_after_ms", json_integer(c->retry_after_ms));
	if (it->at) {
		json_object_set_new(o, "at", json_integer(it->at));
		json_object_set_new(o, "gated", json_integer(it->gated));
	}
	sr_emit(o);
	it->obj = NULL;
	it->state = IT_DONE;
}

void
result_error(struct item *it, const char *error)
{
	json_object_set_new(it->obj, "status", json_string("error"));
	json_object_set_new(it->obj, "error", json_string(error));
	sr_emit(it->obj);
	it->obj = NULL;
	it->state = IT_DONE;
	status = sr_worst(status, SR_EX_BACKEND);
}

void
blocked(struct item *it, const char *why, const char *error)
{
	json_object_set_new(it->obj, "gate", json_string(why));
	emit_result(it, "blocked", error);
}
