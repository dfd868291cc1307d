/* enqueue/direct.c - the direct path (sr-admin switch off).
 *
 * Switch off: the batch's card requests are executed on the spot (the
 * legacy path, made safe by sr_direct.c), synchronously. A request that
 * failed is queued for when the switch is on again; device requests are
 * queued as always (dev-eval claims nothing while the switch is off). */
#include <stdlib.h>
#include <string.h>

#include "enqueue.h"

static struct sr_gateway *gw; /* the direct path's, made when first needed */

/* Redis lost while the outcomes of direct calls were being recorded: the
 * calls that went say so (their lines stand: the carrier did it); the
 * rest of the batch is answered error by the caller. -1. */
static int
records_lost(struct batch *b)
{
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];

		/* (over an earlier warning: the outcome matters more) */
		if (r->st == ST_DONE && r->direct && (r->sadd || r->nrecords || r->fw))
			snprintf(r->warning, sizeof r->warning, "outcome not recorded: %s", rds.errstr);
	}
	return -1;
}

/* Redis lost while the direct calls ran: a card the carrier already put in
 * its target state is done, whatever Redis could not record (its line
 * stands, with a warning); a call that was at the carrier has a result
 * nobody knows, and its line says so. The rest of the batch is answered
 * error by the caller (not called, not queued). -1. */
static int
run_lost(struct batch *b)
{
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];

		if (r->st != ST_PENDING || !r->direct)
			continue;
		if (r->direct->ok) {
			r->st = ST_DONE;
			snprintf(r->warning, sizeof r->warning, "outcome not recorded: %s", rds.errstr);
		} else if (sr_direct_in_flight(r->direct)) {
			r->st = ST_ERROR;
			snprintf(r->error, sizeof r->error, "Redis lost while its call was at the carrier: "
			    "its result is unknown (send the request again: a status query settles it): %s",
			    rds.errstr);
		}
	}
	return -1;
}

int
run_direct(struct batch *b, long long now)
{
	static struct sr_direct *v[BATCH];
	struct sr_cmd *retry[BATCH];
	struct req *queued[BATCH]; /* the requests of retry[] */
	char akey[SR_KEY_MAX], maxlen[24];
	redisReply *rep;
	int n = 0, nretry = 0;

	snprintf(maxlen, sizeof maxlen, "%ld", cfg.audit_maxlen);
	if (!gw)
		gw = sr_gateway_new(&cfg);
	/* The request facts first (the judgment and the next run read them),
	 * answered before anything is called: a request whose facts Redis
	 * refused (a facts key damaged by hand) is an error, not a call. */
	append_facts_writes(b);
	if (collect_facts_writes(b) < 0)
		return -1;
	for (int i = 0; i < b->n; i++)
		facts_refused_is_error(&b->reqs[i]);
	/* A request the facts judge "nothing to do" goes through the queue's
	 * own script, as with the switch on: a command of the card still
	 * unresolved there (in flight, confirming) may have changed the card,
	 * and the script queues its reverse (a renewal after a stop that went);
	 * one not yet called is cancelled; else it is a noop. */
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];

		if (r->st != ST_PENDING || r->is_device)
			continue;
		judge(r, now);
		if (r->cmd.j.want == SR_WANT_NONE)
			retry[nretry++] = &r->cmd;
	}
	if (nretry > 0 && sr_cmds_collect(&rds, sr_cmds_append(&rds, &cfg, retry, nretry)) < 0)
		return -1;
	nretry = 0;
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];

		if (r->st != ST_PENDING || r->is_device || r->cmd.j.want == SR_WANT_NONE)
			continue;
		/* A fresh version: the request id (card-ver-action) of every
		 * intent is unique, and a claim of an older one fails its gate. */
		{
			char keys[SR_DIRECT_VERSION_KEYS][SR_KEY_MAX];
			const char *argv[SR_DIRECT_VERSION_KEYS];

			sr_keys_script(keys, argv, cfg.prefix, r->carrier, r->card, sr_lua_direct_version_keys);
			sr_redis_append_script(&rds, SR_LUA_DIRECT_VERSION, SR_DIRECT_VERSION_KEYS,
			    SR_DIRECT_VERSION_KEYS + SR_DIRECT_VERSION_ARGC, argv, NULL);
		}
		r->direct = sr_malloc(sizeof *r->direct);
		memset(r->direct, 0, sizeof *r->direct);
		r->direct->card = r->card;
		r->direct->carrier = r->carrier;
		r->direct->action = sr_want_name(r->cmd.j.want);
		if (!strcmp(r->cmd.j.reason, "device_disabled") ||
		    !strcmp(r->cmd.j.reason, "device_package_expired"))
			r->direct->device = r->cf.device;
	}
	for (int i = 0; i < b->n; i++)
		if (b->reqs[i].direct) {
			struct req *r = &b->reqs[i];

			if (!(rep = sr_redis_reply(&rds)))
				return -1;
			r->direct->ver = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
			freeReplyObject(rep);
			if (r->direct->ver < 0) {
				/* The card's command is frozen: an operator's, never
				 * called on the spot. The request goes to the queue,
				 * answered as it would be with the switch on. */
				free(r->direct);
				r->direct = NULL;
			} else
				v[n++] = r->direct;
		}
	if (n > 0 && sr_direct_run(&rds, gw, &cfg, v, n) < 0)
		return run_lost(b);
	/* Outcomes: an audit entry; failures queued. */
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];
		struct sr_direct *d = r->direct;
		char ver[24];

		if (r->st != ST_PENDING || r->is_device)
			continue;
		if (!d && r->cmd.j.want == SR_WANT_NONE) {
			/* judged "nothing to do": the queue's script said what */
			r->st = r->cmd.status ? ST_DONE : ST_ERROR;
			if (r->st == ST_ERROR)
				snprintf(r->error, sizeof r->error, "%s",
				    r->cmd.error[0] ? r->cmd.error : "enqueue script gave no status");
			continue;
		}
		/* A call that failed, and a frozen card's request, stay pending
		 * until the queue has them (below): Redis lost before that, their
		 * lines say error, not done. */
		if (!d)
			continue;
		if (d->ok)
			r->st = ST_DONE;
		snprintf(ver, sizeof ver, "%lld", d->ver);
		/* (sr-stat, sr-sweep, audit --account) */
		r->sadd = sr_account_register(&rds, &cfg, r->carrier);
		{
			const char *audit[] = { "XADD", sr_key_account(akey, cfg.prefix, r->carrier, "audit"),
				"MAXLEN", "~", maxlen, "*", "card", r->card, "ver_before", ver, "ver_after", ver,
				"event", d->ok ? "direct:ok" : "direct:failed", "action", d->action,
				"reason", r->cmd.j.reason, "scene", r->scene, "source", r->source,
				"error", d->error };

			sr_redis_append(&rds, 24, audit, NULL);
			r->nrecords++;
		}
		/* (its status fact: written by the run, under its device lock) */
		if (d->unrecorded[0])
			snprintf(r->warning, sizeof r->warning, "outcome not recorded: %s", d->unrecorded);
	}
	/* What was done at the carrier is done: a record of it Redis refused
	 * (its audit entry, the card's status fact) is said on its line, and
	 * the exit is 3: the next judgment would read stale facts. */
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];

		if (r->sadd) {
			/* Its account's registration: refused, it is sent again
			 * with the account's next request (the queueing below). */
			if (!(rep = sr_redis_reply(&rds)))
				return records_lost(b);
			if (rep->type == REDIS_REPLY_ERROR) {
				sr_account_forget(r->carrier);
				if (!r->warning[0])
					snprintf(r->warning, sizeof r->warning, "account not registered: %s", rep->str);
			}
			freeReplyObject(rep);
			r->sadd = 0;
		}
		for (int said = 0; r->nrecords > 0; r->nrecords--) {
			if (!(rep = sr_redis_reply(&rds)))
				return records_lost(b);
			/* (over a refused registration: the outcome matters more) */
			if (rep->type == REDIS_REPLY_ERROR && !said++)
				snprintf(r->warning, sizeof r->warning, "outcome not recorded: %s", rep->str);
			freeReplyObject(rep);
		}
	}
	/* Frozen, or failed at the carrier: queued for when the switch is on.
	 * One that Redis refused to queue is lost unless its line says so. */
	for (int i = 0; i < b->n; i++) {
		struct req *r = &b->reqs[i];

		if (r->st == ST_PENDING && !r->is_device && r->cmd.j.want != SR_WANT_NONE &&
		    (!r->direct || !r->direct->ok)) {
			queued[nretry] = r;
			retry[nretry++] = &r->cmd;
		}
	}
	if (nretry > 0 && sr_cmds_collect(&rds, sr_cmds_append(&rds, &cfg, retry, nretry)) < 0)
		return -1;
	for (int i = 0; i < nretry; i++) {
		struct req *r = queued[i];

		if (r->cmd.status) {
			r->st = ST_DONE;
			continue;
		}
		r->st = ST_ERROR;
		if (r->direct)
			snprintf(r->error, sizeof r->error, "not queued after the direct call failed (%s): %s",
			    r->direct->error[0] ? r->direct->error : r->direct->outcome, r->cmd.error);
		else
			snprintf(r->error, sizeof r->error, "%s", r->cmd.error);
	}
	return 0;
}

void
direct_free(void)
{
	sr_gateway_free(gw);
}
