/* decide.c - what sr-gwsim's carrier decides about a request, whatever
 * its API shape: a verdict, the faults it injects, the change a call
 * makes (now, or later with --async-ms), the card an answer names; and
 * each request logged as one JSON line.
 */
#include <stdlib.h>
#include <string.h>

#include "gwsim.h"

static const char *const kind_name[] = { "stop", "resume", "status", "apply", "token", "order" };

double
coin(void)
{
	return (double)rand_r(&seed) / ((double)RAND_MAX + 1);
}

void
log_call(const struct call *c, const struct answer *a)
{
	int refused = c->v == V_RATE || c->v == V_AUTH || c->v == V_BEARER;
	json_t *key = json_string(c->key); /* NULL if not UTF-8 (sent so, or cut to fit) */
	json_t *o = json_pack("{sI ss ss ss si ss sb ss ss so sb}", "t", (json_int_t)c->arrived,
	    "kind", kind_name[c->kind], "card", c->card, "carrier", c->carrier,
	    "http", c->drop ? 0 : a->http, "code", a->code, "applied", c->applied,
	    "state", c->kind == K_TOKEN ? "" : state_name[c->state],
	    "fault", c->fault ? c->fault : "", "key", key ? key : json_string(""),
	    "refused", refused);
	char *s;

	if (c->txn[0])
		json_object_set_new(o, "txn", json_string(c->txn));
	if (c->named[0] && strcmp(c->named, c->card))
		json_object_set_new(o, "named", json_string(c->named));
	if (c->named_txn[0] && strcmp(c->named_txn, c->txn))
		json_object_set_new(o, "named_txn", json_string(c->named_txn));
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	fprintf(log_file, "%s\n", s);
	fflush(log_file);
	free(s);
	json_decref(o);
}

/* A change call the carrier takes: the card's interval starts now, and
 * "already" is judged on the state the card will have once what is pending
 * has landed. The faults after applying strike here. */
static void
accept_change(struct call *c, struct card *k)
{
	enum state want = c->kind == K_STOP ? ST_STOPPED : ST_ACTIVE;

	k->last_change = c->arrived;
	c->v = V_ALREADY;
	if (k->will != want && async_ms > 0) {
		/* --fault-order-failed: accepted, then the order fails at the
		 * carrier: the card stays as it is. */
		int fails = porder_failed > 0 && coin() < porder_failed;

		if (!fails)
			k->will = want;
		else
			c->fault = "order_failed";
		c->v = V_ACCEPTED;
		schedule(c, want, fails);
	} else if (k->will != want) {
		k->state = k->will = want;
		c->v = V_OK, c->applied = 1;
	}
	if (p5xx_after > 0 && coin() < p5xx_after)
		c->v = V_INTERNAL, c->fault = "5xx_after";
	else if (pdrop_after > 0 && coin() < pdrop_after)
		c->drop = 1, c->fault = "drop_after";
	else if (ptimeout_after > 0 && coin() < ptimeout_after)
		c->slow = 1, c->fault = "timeout_after";
}

/* --fault-other-card: an answer that says how a card stands is another
 * card's (--other-card's, else the last card answered before it): crossed
 * answers. A query's then says the state of the card it names. */
void
name_card(struct call *c)
{
	static char last[65];
	const struct card *k;

	snprintf(c->named, sizeof c->named, "%s", c->card);
	c->said = c->state;
	if (pother_card > 0 && (c->v == V_OK || c->v == V_ALREADY || c->v == V_ACCEPTED) &&
	    coin() < pother_card) {
		if (other_card[0])
			snprintf(c->named, sizeof c->named, "%s", other_card);
		else if (last[0] && strcmp(last, c->card))
			snprintf(c->named, sizeof c->named, "%s", last);
		else
			snprintf(c->named, sizeof c->named, "%.60s-0", c->card);
		if (c->kind == K_STATUS)
			c->said = card_get(c->named, c->carrier)->state;
		if (!c->fault)
			c->fault = "other_card";
	}
	/* A carrier whose status answers say a change is on its way: what it
	 * says until the change lands. */
	if (c->kind == K_STATUS && pending_state) {
		k = card_get(c->named, c->carrier);
		c->said_pending = k->will != k->state;
	}
	snprintf(last, sizeof last, "%s", c->card);
}

/* The carrier's decision on an admitted request, or a token fetch (caller
 * holds mu). The order is the carrier's: an account that is down fails
 * everything; the faults but that one hit change calls only. */
void
decide(struct call *c)
{
	struct card *k;

	if (c->kind == K_TOKEN) {
		token_issue(c);
		c->v = V_OK;
		return;
	}
	if (c->kind == K_ORDER) {
		if (fail_account[0] && !strcmp(fail_account, c->carrier))
			c->v = V_INTERNAL, c->fault = "account_down";
		else
			decide_order(c);
		return;
	}
	k = card_get(c->card, c->carrier);
	if (fail_account[0] && !strcmp(fail_account, c->carrier)) {
		c->v = V_INTERNAL, c->fault = "account_down";
	} else if (c->kind == K_STATUS) {
		c->v = V_OK;
	} else if (p429 > 0 && coin() < p429) {
		c->v = V_RATE, c->fault = "429";
	} else if (k->state == ST_RETIRED) {
		c->v = V_NOT_ALLOWED;
	} else if (preject > 0 && coin() < preject) {
		c->v = V_NOT_ALLOWED, c->fault = "reject";
	} else if (p5xx_before > 0 && coin() < p5xx_before) {
		c->v = V_INTERNAL, c->fault = "5xx_before";
	} else if (interval_ms > 0 && k->last_change && c->arrived - k->last_change < interval_ms) {
		c->v = V_TOO_FREQUENT;
	} else
		accept_change(c, k);
}
