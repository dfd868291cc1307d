/* sr_node.c - one Redis node connected: its address read from a URL, the
 * connection made (AUTH, SELECT), the Lua scripts loaded on it, and what
 * failed said in an operator's words. The pipeline (sr_pipe.c), the
 * cluster's and the sentinels' lookups (sr_cluster.c, sr_sentinel.c)
 * connect their nodes through it. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/time.h>

#include <curl/curl.h>

#include "sr.h"
/* The scripts' SHA1s, known from the first load: a script's SHA is its
 * text's, the same on every node. */
char sr_lua_sha[SR_LUA_COUNT][41];

/* What went wrong on connection c, in an operator's words. A reply not
 * read within the timeout comes from hiredis as the socket's EAGAIN text
 * ("Resource temporarily unavailable"), which reads like a local fault:
 * it is said as the stall it is, with the setting that bounds it. */
const char *
sr_redis_conn_error(const struct sr_redis *r, const redisContext *c)
{
	static char said[160];

	if (!c)
		return "out of memory";
	if (!c->errstr[0])
		return "unknown error";
	if (c->err == REDIS_ERR_IO && (!strcmp(c->errstr, strerror(EAGAIN)) ||
	    !strcmp(c->errstr, strerror(EWOULDBLOCK)))) {
		snprintf(said, sizeof said, "no answer from Redis within %ld ms (SRQ_REDIS_TIMEOUT_MS): "
		    "stalled, or the network dropped", r->cfg->redis_timeout_ms);
		return said;
	}
	return c->errstr;
}

int
sr_node_load_scripts(struct sr_redis *r, struct sr_node *n)
{
	for (int i = 0; i < SR_LUA_COUNT; i++) {
		redisReply *rep = redisCommand(n->c, "SCRIPT LOAD %s", sr_lua_source[i]);

		if (!rep) {
			snprintf(r->errstr, sizeof r->errstr, "%s", sr_redis_conn_error(r, n->c));
			return -1;
		}
		if (rep->type != REDIS_REPLY_STRING || rep->len != 40) {
			snprintf(r->errstr, sizeof r->errstr, "cannot load script '%s': %s",
			    sr_lua_name[i], rep->type == REDIS_REPLY_ERROR ? rep->str : "bad reply");
			freeReplyObject(rep);
			return -1;
		}
		memcpy(sr_lua_sha[i], rep->str, 41);
		freeReplyObject(rep);
	}
	n->loads++;
	return 0;
}

/* A database number: 0 to INT_MAX (what SELECT takes). */
static int
parse_db(const char *s, int *db)
{
	long v = sr_parse_long(s);

	if (v < 0 || v > INT_MAX)
		return -1;
	*db = (int)v;
	return 0;
}

/* Split redis://host[:port][/db] (host may be [IPv6], read by libcurl's
 * URL parser) or unix:///path[?db=N]. -2: credentials in the URL, refused
 * (they would sit in argv and in error messages); -1: not such a URL. */
int
sr_redis_parse_url(const char *url, char *host, size_t hostlen, int *port, char *path, size_t pathlen,
    int *db)
{
	*db = 0;
	*port = 6379;
	host[0] = path[0] = '\0';
	if (strncmp(url, "unix://", 7) == 0) {
		const char *p = url + 7, *q = strchr(p, '?');
		size_t n = q ? (size_t)(q - p) : strlen(p);

		if (*p != '/') /* an authority: credentials, or a host */
			return memchr(p, '@', n) ? -2 : -1;
		if (n >= pathlen)
			return -1;
		memcpy(path, p, n);
		path[n] = '\0';
		if (q && (strncmp(q, "?db=", 4) || parse_db(q + 4, db) < 0))
			return strstr(q, "pass") ? -2 : -1;
		return 0;
	}
	if (strncmp(url, "redis://", 8) != 0)
		return -1;
	{
		CURLU *u = curl_url();
		char *user = NULL, *pw = NULL, *h = NULL, *pt = NULL, *pa = NULL, *qu = NULL;
		int rc = -1;

		if (!u)
			return -1;
		if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
			goto out;
		curl_url_get(u, CURLUPART_USER, &user, 0);
		curl_url_get(u, CURLUPART_PASSWORD, &pw, 0);
		if (user || pw) {
			rc = -2;
			goto out;
		}
		if (curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK || !*h ||
		    curl_url_get(u, CURLUPART_QUERY, &qu, 0) == CURLUE_OK)
			goto out;
		/* hiredis wants an IPv6 address without its brackets */
		snprintf(host, hostlen, "%.*s", (int)(h[0] == '[' ? strlen(h) - 2 : strlen(h)),
		    h[0] == '[' ? h + 1 : h);
		if (curl_url_get(u, CURLUPART_PORT, &pt, 0) == CURLUE_OK) {
			long p = sr_parse_long(pt); /* range first: (int)4294967297 is 1 */

			if (p < 1 || p > 65535)
				goto out;
			*port = (int)p;
		}
		if (curl_url_get(u, CURLUPART_PATH, &pa, 0) == CURLUE_OK && strcmp(pa, "/") &&
		    parse_db(pa + 1, db) < 0)
			goto out;
		rc = 0;
	out:
		curl_free(user);
		curl_free(pw);
		curl_free(h);
		curl_free(pt);
		curl_free(pa);
		curl_free(qu);
		curl_url_cleanup(u);
		return rc;
	}
}

int
sr_redis_node_connect(struct sr_redis *r, struct sr_node *n, int scripts)
{
	long ms = r->cfg->redis_timeout_ms;
	struct timeval ctv = { 3, 0 }, tv = { ms / 1000, ms % 1000 * 1000 };
	redisReply *rep;

	n->c = n->path[0] ? redisConnectUnixWithTimeout(n->path, ctv)
			  : redisConnectWithTimeout(n->host, n->port, ctv);
	if (!n->c || n->c->err) {
		if (n->path[0])
			snprintf(r->errstr, sizeof r->errstr, "cannot connect to Redis at '%s': %s", n->path,
			    sr_redis_conn_error(r, n->c));
		else
			snprintf(r->errstr, sizeof r->errstr, "cannot connect to Redis at %s port %d: %s",
			    n->host, n->port, sr_redis_conn_error(r, n->c));
		return -1;
	}
	redisSetTimeout(n->c, tv);
	if (r->password) {
		const char *argv[2] = { "AUTH", r->password };

		rep = redisCommandArgv(n->c, 2, argv, NULL);
		if (!rep || rep->type == REDIS_REPLY_ERROR) {
			/* The reply text never contains the password itself. */
			snprintf(r->errstr, sizeof r->errstr, "Redis AUTH failed: %s",
			    rep ? rep->str : sr_redis_conn_error(r, n->c));
			if (rep)
				freeReplyObject(rep);
			return -1;
		}
		freeReplyObject(rep);
	}
	if (r->db) {
		rep = redisCommand(n->c, "SELECT %d", r->db);
		if (!rep || rep->type == REDIS_REPLY_ERROR) {
			snprintf(r->errstr, sizeof r->errstr, "SELECT %d failed: %s", r->db,
			    rep ? rep->str : sr_redis_conn_error(r, n->c));
			if (rep)
				freeReplyObject(rep);
			return -1;
		}
		freeReplyObject(rep);
	}
	return scripts ? sr_node_load_scripts(r, n) : 0;
}

/* Node i connected, or connected again once a failed connection owes
 * nothing more. 0, or -1 with errstr set. */
int
sr_node_ready(struct sr_redis *r, int i)
{
	struct sr_node *n = &r->node[i];

	if (n->c && !n->c->err)
		return 0;
	if (n->c && n->owed.len)
		return -1; /* its replies are lost: answered as such first */
	if (n->c)
		redisFree(n->c);
	n->c = NULL;
	if (sr_redis_node_connect(r, n, 1) == 0) {
		n->gen++;
		n->wrote = 1; /* nothing confirmed on this connection yet */
		return 0;
	}
	if (n->c)
		redisFree(n->c);
	n->c = NULL;
	return -1;
}
