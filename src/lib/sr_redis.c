/* sr_redis.c - the connection to Redis: one server, the masters of a
 * cluster, or the master the sentinels name; opened, lost and closed.
 * The nodes are connected by sr_node.c, the commands go through the
 * pipeline of sr_pipe.c, and SRQ_WAIT_REPLICAS is sr_replicas.c. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "sr.h"
/* A URL that cannot be used (rc -2: it holds credentials): errstr says so,
 * naming the form it should have, never echoing it (a URL we cannot read
 * may still hold a secret). Returns -2, what sr_redis_connect returns. */
static int
url_refused(struct sr_redis *r, int rc, const char *form)
{
	if (rc == -2)
		snprintf(r->errstr, sizeof r->errstr, "%s: put the password in "
		    "SRQ_REDIS_PASSWORD or SRQ_REDIS_PASSWORD_FILE, not in the URL", r->cfg->redis_from);
	else
		snprintf(r->errstr, sizeof r->errstr, "%s: not %s", r->cfg->redis_from, form);
	return -2;
}

int
sr_redis_connect(struct sr_redis *r, const struct sr_config *cfg)
{
	char host[256], path[512];
	int port, rc;

	memset(r, 0, sizeof *r);
	r->cfg = cfg;
	sr_pipe_init(r);
	/* Read here, not with the rest of the configuration: a tool that
	 * needs no Redis (sr-admin config, profile) needs no password. */
	if (sr_secret_read("SRQ_REDIS_PASSWORD", &r->password, r->errstr, sizeof r->errstr) < 0)
		return -2;
	if (strncmp(cfg->redis_url, "redis+sentinel://", 17) == 0) {
		r->sentinel = 1;
		if ((rc = sr_sentinel_parse(r, cfg->redis_url)) < 0)
			return url_refused(r, rc, "redis+sentinel://host:port[,host:port...]/MASTERNAME");
		if (sr_sentinel_resolve(r) < 0)
			return -1;
		return sr_node_ready(r, r->master[0]);
	}
	if (strncmp(cfg->redis_url, "redis+cluster://", 16) == 0) {
		r->cluster = 1;
		if ((rc = sr_cluster_parse(r, cfg->redis_url)) < 0)
			return url_refused(r, rc, "redis+cluster://host:port[,host:port...]");
		if (sr_cluster_refresh(r) < 0)
			return -1;
		/* Every master now: an unreachable one is said at once, not at
		 * the first command for one of its slots. */
		for (int k = 0; k < r->nmasters; k++)
			if (sr_node_ready(r, r->master[k]) < 0)
				return -1;
		return 0;
	}
	if ((rc = sr_redis_parse_url(cfg->redis_url, host, sizeof host, &port, path, sizeof path, &r->db)) < 0) {
		char form[96];

		snprintf(form, sizeof form, "redis://host[:port][/db] nor unix:///path[?db=N] (db 0 to %d)",
		    INT_MAX);
		return url_refused(r, rc, form);
	}
	sr_cluster_node(r, host, port);
	snprintf(r->node[0].path, sizeof r->node[0].path, "%s", path);
	r->master = sr_malloc(sizeof *r->master);
	r->master[0] = 0;
	r->nmasters = 1;
	return sr_node_ready(r, 0);
}

void
sr_redis_close(struct sr_redis *r)
{
	sr_pipe_free(r);
	for (int i = 0; i < r->nnodes; i++) {
		if (r->node[i].c)
			redisFree(r->node[i].c);
		free(r->node[i].owed.a);
	}
	free(r->node);
	free(r->master);
	free(r->slot);
	free(r->loop_until);
	r->loop_until = NULL;
	free(r->sentinels);
	r->sentinels = NULL;
	r->node = NULL;
	r->master = r->slot = NULL;
	r->nnodes = r->nmasters = 0;
	if (r->password) {
		memset(r->password, 0, strlen(r->password));
		free(r->password);
		r->password = NULL;
	}
}

void
sr_redis_open(struct sr_redis *r, const struct sr_config *cfg)
{
	int rc = sr_redis_connect(r, cfg);

	if (rc < 0)
		sr_die(rc == -2 ? SR_EX_USAGE : SR_EX_BACKEND, "%s", r->errstr);
}

int
sr_redis_open_filter(struct sr_redis *r, const struct sr_config *cfg, const char *answer)
{
	int rc = sr_redis_connect(r, cfg);

	if (rc == -2)
		sr_die(SR_EX_USAGE, "%s", r->errstr);
	if (rc < 0) {
		sr_log_head(SR_LOG_ERR);
		fprintf(stderr, "%s: error: %s; every %s\n", sr_prog, r->errstr, answer);
	}
	return rc == 0;
}

void
sr_redis_lost(struct sr_redis *r, int *up, const char *answer)
{
	if (*up) {
		sr_log_head(SR_LOG_ERR);
		fprintf(stderr, "%s: error: %s; every %s not yet done is answered with \"error\"\n", sr_prog,
		    r->errstr, answer);
	}
	*up = 0;
}

int
sr_redis_backend_error(const char *err)
{
	static const char *const codes[] = { "OOM", "READONLY", "MASTERDOWN", "LOADING", "BUSY",
		"CLUSTERDOWN", "TRYAGAIN", "MOVED", "ASK", "NOREPLICAS", "MISCONF", "NOSCRIPT", "NOAUTH",
		"NOPERM", NULL };

	for (int i = 0; codes[i]; i++) {
		size_t n = strlen(codes[i]);

		if (!strncmp(err, codes[i], n) && (err[n] == ' ' || err[n] == '\0'))
			return 1;
	}
	return 0;
}
