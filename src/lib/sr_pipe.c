/* sr_pipe.c - the pipeline to Redis: the commands appended and their
 * replies read back, wherever they ran.
 *
 * Commands are appended to a pipeline and their replies read back in the
 * order they were appended. On a cluster (sr_cluster.c) each command goes to
 * the master serving its key's slot (a script's: its first key), so one
 * pipeline spans several connections; each node answers its own commands in
 * order, and a reply read while waiting for another's is kept with its
 * command until the caller gets to it.
 *
 * Scripts are embedded at build time (sr_lua_gen.c, from share/lua) and
 * loaded with SCRIPT LOAD when a node is connected; calls go out as EVALSHA.
 * If a node lost its script cache meanwhile (restart, SCRIPT FLUSH, a
 * replica promoted), the NOSCRIPT reply is answered by loading the scripts on
 * that node again and resending that one call: the call did not run, so
 * resending it is safe. The scripts are loaded once per node per burst: the
 * other calls of the same pipeline, sent before that load, meet NOSCRIPT too
 * and are only resent. In the same way a MOVED or ASK reply sends the command
 * on to the node named (the command did not run), and TRYAGAIN or
 * CLUSTERDOWN (a slot being moved, a failover under way) sends it again after
 * a pause, a few times at most. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <limits.h>
#include <time.h>

#include "sr.h"

/* A command awaiting its reply. */
struct pend {
	int script;           /* -1: a plain command */
	int node;             /* the node it was sent to */
	char *cmd;            /* as sent (RESP), kept to send again; NULL: never sent again */
	long long len;
	unsigned long loads;  /* that node's script loads when it was sent */
	redisReply *reply;    /* read ahead, while reading an earlier command's */
	int have;             /* reply is its reply (NULL: the connection failed) */
	int tries;            /* times sent again */
	int redirects;        /* of them, after MOVED or ASK */
	int asked;            /* sent with ASKING: the slot is moving to its node */
};

/* In a node's owed list: the reply to an ASKING, dropped when read. */
#define OWED_ASKING ULLONG_MAX

static void
ring_push(struct sr_ring *q, const void *elem)
{
	if (q->len == q->cap) {
		size_t ncap = q->cap ? q->cap * 2 : 64;
		char *n = sr_malloc(ncap * q->size);

		for (size_t i = 0; i < q->len; i++)
			memcpy(n + i * q->size, q->a + ((q->head + i) % q->cap) * q->size, q->size);
		free(q->a);
		q->a = n;
		q->cap = ncap;
		q->head = 0;
	}
	memcpy(q->a + ((q->head + q->len++) % q->cap) * q->size, elem, q->size);
}

static void
ring_pop(struct sr_ring *q, void *elem)
{
	memcpy(elem, q->a + q->head * q->size, q->size);
	q->head = (q->head + 1) % q->cap;
	q->len--;
}

static void *
ring_at(const struct sr_ring *q, size_t i)
{
	return q->a + ((q->head + i) % q->cap) * q->size;
}

static struct pend *
pend_at(struct sr_redis *r, unsigned long long seq)
{
	return ring_at(&r->pq, (size_t)(seq - r->seq0));
}

static void
pend_free(struct pend *p)
{
	if (p->cmd)
		redisFreeCommand(p->cmd);
	if (p->reply)
		freeReplyObject(p->reply);
}

/* Commands that name no key: they go to the first master. */
static int
keyless(const char *cmd)
{
	static const char *const names[] = { "TIME", "PING", "INFO", "WAIT", "SCRIPT", "CLUSTER",
		"DBSIZE", "FLUSHALL", "FLUSHDB", "SCAN", "ASKING", "CONFIG", "MEMORY", NULL };

	for (int i = 0; names[i]; i++)
		if (!strcasecmp(cmd, names[i]))
			return 1;
	return 0;
}

/* Read the slot map, or ask the sentinels, again; after a failure not
 * before a second has passed: a batch of commands appended while the map is
 * stale must not pay for a lookup each. 0, or -1. */
static int
relook(struct sr_redis *r)
{
	int64_t now = sr_mono_ms();
	int rc;

	if (now < r->retry_at)
		return -1;
	rc = r->sentinel ? sr_sentinel_resolve(r) : sr_cluster_refresh(r);
	r->retry_at = rc < 0 ? now + 1000 : 0;
	return rc;
}

/* The node that serves a key now (on one server: that server). */
static int
route(struct sr_redis *r, const char *key, size_t len)
{
	int n;

	if (r->sentinel) {
		if (r->stale)
			relook(r); /* on failure the address stays as it was */
		return r->master[0];
	}
	if (!r->cluster)
		return 0;
	if (r->stale)
		relook(r); /* on failure the map stays as it was */
	n = key ? r->slot[sr_key_slot(key, len)] : -1;
	if (n < 0 && key) {
		r->stale = 1;
		if (relook(r) == 0)
			n = r->slot[sr_key_slot(key, len)];
	}
	return n >= 0 ? n : r->master[0];
}

/* A pend's reply is known now: `rep` (NULL: its connection failed). */
static void
pend_settle(struct pend *p, redisReply *rep)
{
	p->reply = rep;
	p->have = 1;
}

/* Send pend seq (formatted in p->cmd, or argv for a plain command sent
 * once) to node i, after an ASKING when ask. A node that cannot be reached
 * settles it as failed at once. */
static void
pend_send(struct sr_redis *r, unsigned long long seq, int i, int ask, int argc, const char **argv,
    const size_t *lens)
{
	struct pend *p = pend_at(r, seq);
	struct sr_node *n;
	int rc;

	p->node = i;
	p->have = 0;
	p->asked = ask;
	if (sr_node_ready(r, i) < 0) {
		pend_settle(p, NULL);
		if (r->cluster || r->sentinel)
			r->stale = 1;
		return;
	}
	n = &r->node[i];
	if (ask) {
		unsigned long long mark = OWED_ASKING;

		if (redisAppendCommand(n->c, "ASKING") != REDIS_OK)
			sr_die(SR_EX_BACKEND, "cannot queue a Redis command: %s", n->c->errstr);
		ring_push(&n->owed, &mark);
	}
	p->loads = n->loads;
	rc = p->cmd ? redisAppendFormattedCommand(n->c, p->cmd, (size_t)p->len)
		    : redisAppendCommandArgv(n->c, argc, argv, lens);
	if (rc != REDIS_OK)
		sr_die(SR_EX_BACKEND, "cannot queue a Redis command: %s", n->c->errstr);
	ring_push(&n->owed, &seq);
	n->wrote = 1;
}

/* Append to the pipeline: to node `at` (-1: the node of argv[key], or the
 * first master for a command without a key). */
static void
append(struct sr_redis *r, int script, int at, int key, int argc, const char **argv,
    const size_t *lens)
{
	struct pend p = { script, 0, NULL, 0, 0, NULL, 0, 0, 0, 0 };
	unsigned long long seq = r->seq0 + r->pq.len;

	if (at < 0)
		at = key < argc ? route(r, argv[key], lens ? lens[key] : strlen(argv[key])) : route(r, NULL, 0);
	/* Kept to send again: a script (NOSCRIPT), anything on a cluster
	 * (MOVED, ASK) or behind sentinels (READONLY from a demoted master).
	 * One server's plain commands go as they are. */
	if (script >= 0 || r->cluster || r->sentinel) {
		size_t *flen = NULL;

		if (!lens) {
			flen = sr_malloc((size_t)argc * sizeof *flen);
			for (int i = 0; i < argc; i++)
				flen[i] = strlen(argv[i]);
		}
		p.len = redisFormatCommandArgv(&p.cmd, argc, argv, lens ? lens : flen);
		free(flen);
		if (p.len < 0)
			sr_die(SR_EX_USAGE, "out of memory");
	}
	ring_push(&r->pq, &p);
	pend_send(r, seq, at, 0, argc, argv, lens);
}

void
sr_redis_append(struct sr_redis *r, int argc, const char **argv, const size_t *lens)
{
	append(r, -1, -1, keyless(argv[0]) ? argc : 1, argc, argv, lens);
}

void
sr_redis_append_script(struct sr_redis *r, enum sr_script s, int nkeys, int argc,
    const char **argv, const size_t *lens)
{
	const char **full;
	size_t *flen;
	char nk[16], err[512];

	/* The keys a caller passes are the keys the script's header declares
	 * (scripts/lua-embed reads them), each at its place: a caller out of
	 * step with its script is a bug, stopped here rather than run with
	 * the wrong keys. */
	if (sr_lua_check_keys(s, nkeys, argv, lens, err, sizeof err) < 0) {
		fprintf(stderr, "%s: bug: %s\n", sr_prog, err);
		abort();
	}
	flen = sr_malloc((size_t)(argc + 3) * sizeof *flen);
	full = sr_malloc((size_t)(argc + 3) * sizeof *full);
	snprintf(nk, sizeof nk, "%d", nkeys);
	full[0] = "EVALSHA";
	full[1] = sr_lua_sha[s];
	full[2] = nk;
	flen[0] = 7;
	flen[1] = 40;
	flen[2] = strlen(nk);
	for (int i = 0; i < argc; i++) {
		full[i + 3] = argv[i];
		flen[i + 3] = lens ? lens[i] : strlen(argv[i]);
	}
	/* Every key of a script shares its first key's slot (one hash tag). */
	append(r, (int)s, -1, 3, argc + 3, full, flen);
	free(full);
	free(flen);
}

void
sr_redis_flush(struct sr_redis *r)
{
	for (int i = 0; i < r->nnodes; i++) {
		struct sr_node *n = &r->node[i];
		int done = 0;

		while (n->c && !n->c->err && !done)
			if (redisBufferWrite(n->c, &done) != REDIS_OK)
				break;
	}
}

/* Read node i's next reply and settle the command it answers. -1 when the
 * connection failed: every command it still owes is settled as failed. */
static int
read_owed(struct sr_redis *r, int i)
{
	struct sr_node *n = &r->node[i];
	unsigned long long seq;
	void *rep = NULL;

	if (!n->c || n->c->err || redisGetReply(n->c, &rep) != REDIS_OK) {
		if (n->path[0])
			snprintf(r->errstr, sizeof r->errstr, "Redis connection failed: %s",
			    n->c ? sr_redis_conn_error(r, n->c) : "unknown error");
		else
			snprintf(r->errstr, sizeof r->errstr, "Redis connection failed: %s (%s port %d)",
			    n->c ? sr_redis_conn_error(r, n->c) : "unknown error", n->host, n->port);
		while (n->owed.len) {
			ring_pop(&n->owed, &seq);
			if (seq != OWED_ASKING)
				pend_settle(pend_at(r, seq), NULL);
		}
		if (r->cluster || r->sentinel)
			r->stale = 1;
		return -1;
	}
	ring_pop(&n->owed, &seq);
	if (seq == OWED_ASKING)
		freeReplyObject(rep);
	else
		pend_settle(pend_at(r, seq), rep);
	return 0;
}

static int
is_error(const redisReply *rep, const char *code)
{
	size_t n = strlen(code);

	return rep && rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, code, n) &&
	    (rep->str[n] == ' ' || rep->str[n] == '\0');
}

/* The slot a MOVED or ASK reply names, or -1. */
static int
redirect_slot(const redisReply *rep)
{
	const char *p;

	if (rep->type != REDIS_REPLY_ERROR || (strncmp(rep->str, "MOVED ", 6) && strncmp(rep->str, "ASK ", 4)))
		return -1;
	p = strchr(rep->str, ' ') + 1;
	int slot = *p >= '0' && *p <= '9' ? atoi(p) : -1;

	return slot < SR_CLUSTER_SLOTS ? slot : -1;
}

/* Sleep ms milliseconds. */
static void
pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

redisReply *
sr_redis_reply(struct sr_redis *r)
{
	struct pend *p, done;
	redisReply *rep;

	if (!r->pq.len)
		return NULL;
	for (;;) {
		int to, ask;

		p = pend_at(r, r->seq0);
		while (!p->have)
			if (read_owed(r, p->node) < 0)
				break;
		rep = p->reply;
		p->reply = NULL;
		if (rep && p->tries >= 8 && p->redirects && r->cluster && redirect_slot(rep) >= 0) {
			/* Its redirects ran out: the slot's masters still disagree.
			 * The next commands for it do not wait again for a while:
			 * they fail at once, and hold back no other account. */
			if (!r->loop_until) {
				r->loop_until = sr_malloc(SR_CLUSTER_SLOTS * sizeof *r->loop_until);
				memset(r->loop_until, 0, SR_CLUSTER_SLOTS * sizeof *r->loop_until);
			}
			r->loop_until[redirect_slot(rep)] = sr_mono_ms() + 10000;
		}
		/* Discarded: answered already, never sent again. */
		if (!rep || rep->type != REDIS_REPLY_ERROR || p->tries >= 8 || !p->cmd || r->discarding)
			break;
		if (r->cluster && (to = sr_cluster_redirect(r, p->node, rep->str, &ask)) >= 0) {
			/* The slot is served elsewhere: for good (MOVED, the map is
			 * read again before the next command), or while it moves (ASK). */
			if (!ask)
				r->stale = 1;
			/* Redirected a third time: the masters do not agree on the
			 * slot (a view gone stale in a failover or a move, two masters
			 * naming each other). They settle within a second or two of
			 * gossip: wait, as for TRYAGAIN, rather than spend every try at
			 * once; but not for a slot that ran out of tries just now. */
			if (++p->redirects >= 3 &&
			    (!r->loop_until || redirect_slot(rep) < 0 || sr_mono_ms() >= r->loop_until[redirect_slot(rep)]))
				pause_ms(50L << (p->redirects - 3 < 5 ? p->redirects - 3 : 5));
		} else if (r->cluster && (is_error(rep, "TRYAGAIN") || is_error(rep, "CLUSTERDOWN"))) {
			/* A slot being moved, a failover under way: again, after a pause. */
			pause_ms(50L << (p->tries < 5 ? p->tries : 5));
			if (is_error(rep, "CLUSTERDOWN"))
				r->stale = 1;
			to = p->node;
			ask = p->asked;
		} else if (r->sentinel && is_error(rep, "READONLY")) {
			/* The master was demoted by a failover: the sentinels name
			 * the new one (after a pause, if they have not yet). */
			if (p->tries)
				pause_ms(200);
			if (sr_sentinel_resolve(r) < 0) {
				freeReplyObject(rep);
				rep = NULL;
				break;
			}
			to = r->master[0];
			ask = 0;
		} else if (p->script >= 0 && is_error(rep, "NOSCRIPT")) {
			struct sr_node *n = &r->node[p->node];

			to = p->node;
			ask = p->asked;
			if (p->loads == n->loads) {
				/* Not loaded since it was sent: read what the node
				 * still owes (kept with its commands), then load. */
				while (n->owed.len)
					if (read_owed(r, to) < 0)
						break;
				if (!n->c || n->c->err || sr_node_load_scripts(r, n) < 0) {
					freeReplyObject(rep);
					rep = NULL;
					break;
				}
			}
		} else {
			break;
		}
		freeReplyObject(rep);
		p->tries++;
		pend_send(r, r->seq0, to, ask, 0, NULL, NULL);
	}
	ring_pop(&r->pq, &done);
	r->seq0++;
	r->last_node = done.node;
	r->last_gen = r->node[done.node].gen;
	pend_free(&done);
	return rep;
}

void
sr_redis_discard(struct sr_redis *r)
{
	r->discarding = 1;
	while (r->pq.len) {
		redisReply *rep = sr_redis_reply(r);

		if (rep)
			freeReplyObject(rep);
	}
	r->discarding = 0;
}

redisReply *
sr_redis_cmd(struct sr_redis *r, int argc, const char **argv)
{
	sr_redis_append(r, argc, argv, NULL);
	return sr_redis_reply(r);
}

int
sr_redis_masters(struct sr_redis *r)
{
	if (r->cluster && r->stale)
		relook(r);
	return r->nmasters;
}

redisReply *
sr_redis_cmd_at(struct sr_redis *r, int master, int argc, const char **argv)
{
	append(r, -1, r->master[master], argc, argc, argv, NULL);
	return sr_redis_reply(r);
}

redisReply *
sr_redis_must(struct sr_redis *r, int argc, const char **argv)
{
	redisReply *rep = sr_redis_cmd(r, argc, argv);

	if (!rep)
		sr_die(SR_EX_BACKEND, "%s", r->errstr);
	if (rep->type == REDIS_REPLY_ERROR)
		sr_die(SR_EX_BACKEND, "%s: %s", argv[0], rep->str);
	return rep;
}

void
sr_redis_scan_must(struct sr_redis *r, const char *pattern, size_t skip,
    void (*fn)(const char *, void *), void *arg)
{
	for (int m = 0; m < sr_redis_masters(r); m++) {
		char cursor[32] = "0";

		do {
			const char *a[] = { "SCAN", cursor, "MATCH", pattern, "COUNT", "1000" };
			redisReply *rep = sr_redis_cmd_at(r, m, 6, a);

			if (!rep)
				sr_die(SR_EX_BACKEND, "%s", r->errstr);
			if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2)
				sr_die(SR_EX_BACKEND, "SCAN: %s",
				    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
			snprintf(cursor, sizeof cursor, "%s", rep->element[0]->str);
			for (size_t i = 0; i < rep->element[1]->elements; i++) {
				const char *k = rep->element[1]->element[i]->str;

				if (strlen(k) > skip)
					fn(k + skip, arg);
			}
			freeReplyObject(rep);
		} while (strcmp(cursor, "0"));
	}
}

void
sr_redis_append_time(struct sr_redis *r)
{
	const char *argv[] = { "TIME" };

	sr_redis_append(r, 1, argv, NULL);
}

int64_t
sr_time_reply_ms(const redisReply *rep)
{
	char *end;
	long long s, us;

	if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
	    rep->element[0]->type != REDIS_REPLY_STRING || rep->element[1]->type != REDIS_REPLY_STRING)
		return -1;
	s = strtoll(rep->element[0]->str, &end, 10);
	if (*end || end == rep->element[0]->str || s <= 0)
		return -1;
	us = strtoll(rep->element[1]->str, &end, 10);
	if (*end || end == rep->element[1]->str || us < 0 || us > 999999)
		return -1;
	return (int64_t)s * 1000 + us / 1000;
}

int64_t
sr_redis_clock(struct sr_redis *r, const redisReply *rep)
{
	int64_t ms = sr_time_reply_ms(rep);

	if (ms < 0)
		snprintf(r->errstr, sizeof r->errstr, "Redis's clock not read: %s",
		    !rep ? "no reply" : rep->type == REDIS_REPLY_ERROR ? rep->str : "not a TIME reply");
	return ms;
}

int64_t
sr_redis_time_ms(struct sr_redis *r)
{
	redisReply *rep;
	int64_t ms;

	sr_redis_append_time(r);
	if (!(rep = sr_redis_reply(r)))
		return -1; /* (errstr: the connection's failure) */
	ms = sr_redis_clock(r, rep);
	freeReplyObject(rep);
	return ms;
}

void
sr_redis_reply_from(struct sr_redis *r, int *node, unsigned *gen)
{
	*node = r->last_node;
	*gen = r->last_gen;
}

/* Appended to node i, whatever it serves (a WAIT for what was written
 * there). */
void
sr_redis_append_at(struct sr_redis *r, int i, int argc, const char **argv)
{
	append(r, -1, i, argc, argc, argv, NULL);
}

void
sr_pipe_init(struct sr_redis *r)
{
	r->pq.size = sizeof(struct pend);
}

void
sr_pipe_free(struct sr_redis *r)
{
	while (r->pq.len) {
		struct pend p;

		ring_pop(&r->pq, &p);
		pend_free(&p);
	}
	free(r->pq.a);
	memset(&r->pq, 0, sizeof r->pq);
}
