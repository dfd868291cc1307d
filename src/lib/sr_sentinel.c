/* sr_sentinel.c - Redis Sentinel: which server is the master now.
 *
 * With redis+sentinel://host:port[,host:port...]/MASTERNAME srq asks the
 * sentinels for MASTERNAME's address (SENTINEL get-master-addr-by-name), the
 * first that answers, and talks to that one server. After a failover the old
 * master is gone or demoted: a lost connection or a READONLY reply marks the
 * address stale, and the next command asks the sentinels again
 * (sr_redis.c). A server that is not (yet) a master by its own ROLE is not
 * used: during a failover the sentinels may name the new master before it
 * has taken the role. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sr.h"

int
sr_sentinel_parse(struct sr_redis *r, const char *url)
{
	const char *p = url + strlen("redis+sentinel://"), *slash;

	if (strncmp(url, "redis+sentinel://", 17) != 0)
		return -1;
	if (strchr(p, '@'))
		return -2;
	if (!(slash = strchr(p, '/')) || !slash[1] || strchr(slash + 1, '/') ||
	    strlen(slash + 1) >= sizeof r->master_name)
		return -1;
	snprintf(r->master_name, sizeof r->master_name, "%s", slash + 1);
	while (p < slash) {
		size_t n = strcspn(p, ",/");
		struct sr_addr a;

		if (sr_parse_hostport(p, n, a.host, sizeof a.host, &a.port) < 0 || !a.host[0])
			return -1;
		r->sentinels = realloc(r->sentinels, (size_t)(r->nsentinels + 1) * sizeof *r->sentinels);
		if (!r->sentinels)
			sr_die(SR_EX_BACKEND, "out of memory");
		r->sentinels[r->nsentinels++] = a;
		p += n;
		if (*p == ',')
			p++;
	}
	return r->nsentinels ? 0 : -1;
}

/* The master's address by one sentinel. 0; -2 it monitors no master of that
 * name (an answer, not a failure); -1 with why set. */
static int
ask(const struct sr_addr *s, const char *name, struct sr_addr *m, char *why, size_t whylen)
{
	struct timeval tv = { 1, 0 };
	redisContext *c = redisConnectWithTimeout(s->host, s->port, tv);
	redisReply *rep = NULL;
	int rc = -1;

	if (!c || c->err) {
		snprintf(why, whylen, "sentinel %s port %d: %s", s->host, s->port,
		    c ? c->errstr : "out of memory");
		goto out;
	}
	redisSetTimeout(c, tv);
	rep = redisCommand(c, "SENTINEL get-master-addr-by-name %s", name);
	if (rep && rep->type == REDIS_REPLY_NIL) {
		snprintf(why, whylen, "sentinel %s port %d does not know that master", s->host, s->port);
		rc = -2;
		goto out;
	}
	if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
	    rep->element[0]->type != REDIS_REPLY_STRING || rep->element[1]->type != REDIS_REPLY_STRING) {
		snprintf(why, whylen, "sentinel %s port %d: %s", s->host, s->port,
		    !rep ? c->errstr : rep->type == REDIS_REPLY_ERROR ? rep->str
								 : "does not know that master");
		goto out;
	}
	snprintf(m->host, sizeof m->host, "%s", rep->element[0]->str);
	m->port = (int)sr_parse_long(rep->element[1]->str);
	rc = m->port > 0 && m->port <= 65535 ? 0 : -1;
	if (rc < 0)
		snprintf(why, whylen, "sentinel %s port %d: a bad port", s->host, s->port);
out:
	if (rep)
		freeReplyObject(rep);
	if (c)
		redisFree(c);
	return rc;
}

/* Does the server at m say it is a master? 0 yes, -1 no (why set). */
static int
is_master(struct sr_redis *r, const struct sr_addr *m, char *why, size_t whylen)
{
	struct sr_node probe;
	redisReply *rep = NULL;
	int rc = -1;

	memset(&probe, 0, sizeof probe);
	snprintf(probe.host, sizeof probe.host, "%s", m->host);
	probe.port = m->port;
	if (sr_redis_node_connect(r, &probe, 0) < 0) {
		snprintf(why, whylen, "%s", r->errstr);
		goto out;
	}
	rep = redisCommand(probe.c, "ROLE");
	if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
	    rep->element[0]->type == REDIS_REPLY_STRING && !strcmp(rep->element[0]->str, "master"))
		rc = 0;
	else
		snprintf(why, whylen, "%s port %d, named by the sentinels, is not a master (yet)",
		    m->host, m->port);
out:
	if (rep)
		freeReplyObject(rep);
	if (probe.c)
		redisFree(probe.c);
	return rc;
}

int
sr_sentinel_resolve(struct sr_redis *r)
{
	char why[256] = "no sentinel";
	struct timespec pause = { 0, 200 * 1000000L };
	int64_t until = sr_mono_ms() + 5000;

	/* For up to about 5 s: a failover takes the sentinels a moment. */
	while (sr_mono_ms() < until) {
		int unknown = 0;

		for (int i = 0; i < r->nsentinels; i++) {
			struct sr_addr m;
			int rc = ask(&r->sentinels[i], r->master_name, &m, why, sizeof why);

			unknown += rc == -2;
			if (rc < 0)
				continue;
			if (is_master(r, &m, why, sizeof why) < 0)
				continue; /* named, not (yet) a master: ask the next one */
			if (!r->master && !(r->master = malloc(sizeof *r->master)))
				sr_die(SR_EX_BACKEND, "out of memory");
			r->master[0] = sr_cluster_node(r, m.host, m.port);
			r->nmasters = 1;
			r->stale = 0;
			return 0;
		}
		if (unknown == r->nsentinels)
			break; /* none of them monitors it: no use asking again */
		nanosleep(&pause, NULL);
	}
	snprintf(r->errstr, sizeof r->errstr, "no master '%s' from the sentinels: %s", r->master_name,
	    why);
	return -1;
}
