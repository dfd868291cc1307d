/* sr_replicas.c - SRQ_WAIT_REPLICAS: what was written is on the replicas
 * before it is acked (WAIT on each node written to), and on the very
 * connection that wrote it. */
#include <string.h>
#include <sys/time.h>

#include "sr.h"
/* WAIT on node i for what was written there. 0, 1 short, -1 connection
 * failed. Nothing written since the last WAIT: that WAIT's answer, which
 * covers it all (the same node is asked for several accounts in turn). */
static int
wait_node(struct sr_redis *r, const struct sr_config *cfg, int i)
{
	char n[24], ms[24];
	const char *argv[] = { "WAIT", n, ms };
	redisReply *rep;
	int rc = 0;

	if (!r->node[i].wrote)
		return r->node[i].waited;
	snprintf(n, sizeof n, "%ld", cfg->wait_replicas);
	snprintf(ms, sizeof ms, "%ld", cfg->wait_timeout_ms);
	sr_redis_append_at(r, i, 3, argv);
	r->node[i].wrote = 0;
	/* WAIT may take its whole timeout: the read must wait longer. */
	if (cfg->wait_timeout_ms + 5000 > cfg->redis_timeout_ms && r->node[i].c) {
		struct timeval tv = { (cfg->wait_timeout_ms + 5000) / 1000, 0 };

		redisSetTimeout(r->node[i].c, tv);
	}
	rep = sr_redis_reply(r);
	if (cfg->wait_timeout_ms + 5000 > cfg->redis_timeout_ms && r->node[i].c && !r->node[i].c->err) {
		struct timeval tv = { cfg->redis_timeout_ms / 1000, cfg->redis_timeout_ms % 1000 * 1000 };

		redisSetTimeout(r->node[i].c, tv);
	}
	if (!rep)
		return r->node[i].waited = -1;
	if (rep->type != REDIS_REPLY_INTEGER || rep->integer < cfg->wait_replicas) {
		if (rep->type == REDIS_REPLY_INTEGER)
			snprintf(r->errstr, sizeof r->errstr, "written on the master, but only %lld of %ld "
			    "replicas confirmed it within %ld ms (SRQ_WAIT_REPLICAS): send it again",
			    rep->integer, cfg->wait_replicas, cfg->wait_timeout_ms);
		else
			snprintf(r->errstr, sizeof r->errstr, "WAIT failed: %s",
			    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
		rc = 1;
	}
	freeReplyObject(rep);
	return r->node[i].waited = rc;
}

int
sr_redis_wait_replicas(struct sr_redis *r, const struct sr_config *cfg)
{
	int rc = 0;

	if (cfg->wait_replicas <= 0)
		return 0;
	/* Each node written to since the last WAIT (on a cluster, the masters
	 * of the accounts written), one after the other. */
	for (int i = 0; i < r->nnodes && rc == 0; i++)
		if (r->node[i].wrote)
			rc = wait_node(r, cfg, i);
	return rc;
}

int
sr_redis_wait_on(struct sr_redis *r, const struct sr_config *cfg, int node, unsigned gen)
{
	struct sr_node *n = &r->node[node];

	if (cfg->wait_replicas <= 0)
		return 0;
	if (n->gen != gen || !n->c || n->c->err) {
		snprintf(r->errstr, sizeof r->errstr, "the connection to the master that took it was "
		    "lost: not known to be on %ld replicas (SRQ_WAIT_REPLICAS)", cfg->wait_replicas);
		return 1;
	}
	return wait_node(r, cfg, node);
}
