/* sr_command.c - write judged intents to the account queues (enqueue.lua).
 *
 * The one code path by which a card's command is written, shared by
 * sr-enqueue and dev-eval: cards are grouped by account (one script call
 * per group of up to SR_CMD_GROUP cards, the account being the hash tag
 * every key of the call shares), and the calls are pipelined. */
#include <stdlib.h>
#include <string.h>

#include "sr.h"

struct sr_cmd_calls {
	int nsadd;            /* account registrations sent before the scripts */
	const char **sadd;    /* their accounts */
	int ncalls;
	int *size;            /* cards per call */
	struct sr_cmd **order; /* cards in call order */
	int norder;
};

static char **known; /* the accounts registered by this process */
static size_t nknown;

int
sr_account_register(struct sr_redis *r, const struct sr_config *cfg, const char *carrier)
{
	char key[SR_KEY_MAX];
	const char *argv[] = { "SADD", sr_key_accounts(key, cfg->prefix), carrier };

	for (size_t k = 0; k < nknown; k++)
		if (!strcmp(known[k], carrier))
			return 0;
	known = sr_realloc(known, (nknown + 1) * sizeof *known);
	known[nknown++] = sr_strdup(carrier);
	sr_redis_append(r, 3, argv, NULL);
	return 1;
}

void
sr_account_forget(const char *carrier)
{
	for (size_t k = 0; k < nknown; k++)
		if (!strcmp(known[k], carrier)) {
			free(known[k]);
			known[k] = known[--nknown];
			return;
		}
}

/* The accounts of cmds registered; c->sadd lists those an SADD was sent for. */
static void
register_accounts(struct sr_redis *r, const struct sr_config *cfg, struct sr_cmd_calls *c,
    struct sr_cmd **cmds, int n)
{
	c->nsadd = 0;
	for (int i = 0; i < n; i++)
		if (sr_account_register(r, cfg, cmds[i]->carrier))
			c->sadd[c->nsadd++] = cmds[i]->carrier;
}

/* The reply to the SADD of account: refused, every command of the account
 * in c says so, and the next request of the account sends it again. */
static void
account_registered(struct sr_cmd_calls *c, const char *account, const redisReply *rep)
{
	if (rep->type != REDIS_REPLY_ERROR)
		return;
	sr_account_forget(account);
	for (int i = 0; i < c->norder; i++)
		if (!strcmp(c->order[i]->carrier, account))
			snprintf(c->order[i]->warning, sizeof c->order[i]->warning,
			    "account not registered: %s", rep->str);
}

static const char *
cmd_account(const void *items, int i)
{
	return ((struct sr_cmd *const *)items)[i]->carrier;
}

struct sr_cmd_calls *
sr_cmds_append(struct sr_redis *r, const struct sr_config *cfg, struct sr_cmd **cmds, int n)
{
	struct sr_cmd_calls *c = sr_malloc(sizeof *c);
	char interval[24], maxlen[24];
	char (*keys)[SR_KEY_MAX] =
	    sr_malloc((SR_ENQUEUE_KEYS + SR_ENQUEUE_ITEM_KEYS * SR_CMD_GROUP) * sizeof *keys);
	char (*prio)[4] = sr_malloc((size_t)(n + 1) * sizeof *prio);
	struct sr_batch b;

	c->sadd = sr_malloc((size_t)(n + 1) * sizeof *c->sadd);
	register_accounts(r, cfg, c, cmds, n);
	c->order = sr_malloc((size_t)(n + 1) * sizeof *c->order);
	snprintf(maxlen, sizeof maxlen, "%ld", cfg->audit_maxlen);
	/* One script call per account's commands, in input order. */
	sr_batch_by_account(&b, n, cmds, cmd_account, SR_CMD_GROUP);
	for (int i = 0; i < b.nitems; i++)
		c->order[i] = cmds[b.order[i]];
	c->size = b.size;
	c->ncalls = b.ngroups;
	c->norder = b.nitems;
	for (int g = 0, s = 0; g < b.ngroups; s += b.size[g++]) {
		const char *carrier = c->order[s]->carrier, **argv, **a;
		int e = s + b.size[g], nk;

		/* enqueue.lua's keys and arguments, as its header declares them:
		 * the account's, then each card's (its command hash, idle and wait
		 * buckets) */
		argv = sr_malloc((size_t)(SR_ENQUEUE_KEYS + SR_ENQUEUE_ARGC +
		    (SR_ENQUEUE_ITEM_KEYS + SR_ENQUEUE_ITEM_ARGC) * (e - s)) * sizeof *argv);
		nk = sr_keys_account(keys, argv, cfg->prefix, carrier, sr_lua_enqueue_keys);
		for (int k = s; k < e; k++)
			nk += sr_keys_script(keys + nk, argv + nk, cfg->prefix, carrier, c->order[k]->card,
			    sr_lua_enqueue_item_keys);
		a = argv + nk;
		/* the account's interval: its profile's, or the environment's */
		snprintf(interval, sizeof interval, "%ld", sr_account(cfg, carrier)->interval_ms);
		a[SR_ENQUEUE_ARGV_INTERVAL] = interval;
		a[SR_ENQUEUE_ARGV_AUDIT_MAX] = maxlen;
		for (int k = s; k < e; k++) {
			struct sr_cmd *m = c->order[k];
			const char **v = a + SR_ENQUEUE_ARGC + SR_ENQUEUE_ITEM_ARGC * (k - s);

			snprintf(prio[k], sizeof prio[k], "%d", m->prio);
			v[SR_ENQUEUE_ITEM_ARGV_CARD] = m->card;
			v[SR_ENQUEUE_ITEM_ARGV_WANT] = sr_want_name(m->j.want);
			v[SR_ENQUEUE_ITEM_ARGV_TARGET] = m->j.target_stopped ? "stop" : "resume";
			v[SR_ENQUEUE_ITEM_ARGV_REASON] = m->j.reason;
			v[SR_ENQUEUE_ITEM_ARGV_SCENE] = m->scene;
			v[SR_ENQUEUE_ITEM_ARGV_SOURCE] = m->source;
			v[SR_ENQUEUE_ITEM_ARGV_PRIO] = prio[k];
			v[SR_ENQUEUE_ITEM_ARGV_MANUAL] = m->j.manual ? "1" : "0";
		}
		sr_redis_append_script(r, SR_LUA_ENQUEUE, nk,
		    nk + SR_ENQUEUE_ARGC + SR_ENQUEUE_ITEM_ARGC * (e - s), argv, NULL);
		free(argv);
	}
	free(b.order);
	free(keys);
	free(prio);
	return c;
}

int
sr_cmds_collect(struct sr_redis *r, struct sr_cmd_calls *c)
{
	static const char *statuses[] = { "queued", "unchanged", "cancelled", "noop" };
	int at = 0, rc = 0;

	for (int k = 0; k < c->nsadd && rc == 0; k++) {
		redisReply *rep = sr_redis_reply(r);

		if (!rep)
			rc = -1;
		else {
			account_registered(c, c->sadd[k], rep);
			freeReplyObject(rep);
		}
	}
	for (int k = 0; k < c->ncalls && rc == 0; k++) {
		redisReply *rep = sr_redis_reply(r);

		if (!rep) {
			rc = -1; /* the connection failed: the caller answers the rest */
			break;
		}
		for (int i = 0; i < c->size[k]; i++) {
			struct sr_cmd *m = c->order[at + i];

			if (rep->type != REDIS_REPLY_ARRAY || rep->elements != (size_t)c->size[k] * 2) {
				snprintf(m->error, sizeof m->error, "enqueue script failed: %s",
				    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
				continue;
			}
			if (rep->element[2 * i]->type == REDIS_REPLY_ERROR) {
				/* this card's own key is damaged: the others went on */
				snprintf(m->error, sizeof m->error, "enqueue failed: %s", rep->element[2 * i]->str);
				continue;
			}
			for (int s = 0; s < 4; s++)
				if (!strcmp(rep->element[2 * i]->str, statuses[s]))
					m->status = statuses[s];
			m->ver = rep->element[2 * i + 1]->integer;
		}
		at += c->size[k];
		freeReplyObject(rep);
	}
	free(c->size);
	free(c->order);
	free(c->sadd);
	free(c);
	return rc;
}

void
sr_cmd_ack(json_t *o, const struct sr_cmd *m)
{
	/* A command that was kept or written is reported with its action; a
	 * "confirming" command turned towards the target carries the target. */
	int none = !strcmp(m->status, "cancelled") || !strcmp(m->status, "noop");
	enum sr_want w = m->j.want != SR_WANT_NONE ? m->j.want :
	    m->j.target_stopped ? SR_WANT_STOP : SR_WANT_RESUME;

	json_object_set_new(o, "status", json_string(m->status));
	json_object_set_new(o, "action", json_string(none ? "none" : sr_want_name(w)));
	json_object_set_new(o, "reason", json_string(m->j.reason));
	json_object_set_new(o, "ver", json_integer(m->ver));
}
