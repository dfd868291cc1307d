/* sr_redis.c - one hiredis connection, pipelining, and the Lua scripts.
 *
 * Scripts are embedded at build time (sr_lua_gen.c, from share/lua) and
 * loaded with SCRIPT LOAD at connect; calls go out as EVALSHA. If Redis lost
 * its script cache meanwhile (restart, SCRIPT FLUSH), the NOSCRIPT reply is
 * answered by loading the scripts again and resending that one call: the call
 * did not run, so resending it is safe, and the replies the caller sees stay
 * in pipeline order. The scripts are loaded once per burst: the other calls
 * of the same pipeline, sent before that load, meet NOSCRIPT too and are
 * only resent. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/time.h>

#include <curl/curl.h>

#include "sr.h"

struct pend {
	int script; /* -1: a plain command (not retried) */
	char *cmd;  /* a script call as sent (RESP), kept to resend on NOSCRIPT */
	long long len;
	unsigned long loads; /* script loads done when it was sent */
};

/* A FIFO of fixed-size elements, grown by doubling. */
struct ring {
	char *a;
	size_t size, cap, head, len;
};

static void
ring_push(struct ring *q, const void *elem)
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
ring_pop(struct ring *q, void *elem)
{
	memcpy(elem, q->a + q->head * q->size, q->size);
	q->head = (q->head + 1) % q->cap;
	q->len--;
}

/* Per-process bookkeeping (one connection per tool): the commands awaiting
 * replies, and replies read ahead while recovering from NOSCRIPT. */
static struct ring pq = { NULL, sizeof(struct pend), 0, 0, 0 };
static struct ring rbuf = { NULL, sizeof(redisReply *), 0, 0, 0 };
static char sha[SR_LUA_COUNT][41];
static unsigned long loads; /* how many times the scripts were loaded */

static void
pend_free(struct pend *p)
{
	if (p->cmd)
		redisFreeCommand(p->cmd);
}

static int
load_scripts(struct sr_redis *r)
{
	for (int i = 0; i < SR_LUA_COUNT; i++) {
		redisReply *rep = redisCommand(r->c, "SCRIPT LOAD %s", sr_lua_source[i]);

		if (!rep) {
			snprintf(r->errstr, sizeof r->errstr, "%s", r->c->errstr);
			return -1;
		}
		if (rep->type != REDIS_REPLY_STRING || rep->len != 40) {
			snprintf(r->errstr, sizeof r->errstr, "cannot load script '%s': %s",
			    sr_lua_name[i], rep->type == REDIS_REPLY_ERROR ? rep->str : "bad reply");
			freeReplyObject(rep);
			return -1;
		}
		memcpy(sha[i], rep->str, 41);
		freeReplyObject(rep);
	}
	loads++;
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
static int
parse_url(const char *url, char *host, size_t hostlen, int *port, char *path, size_t pathlen,
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
sr_redis_connect(struct sr_redis *r, const struct sr_config *cfg)
{
	char host[256], path[512];
	int port, db, rc;
	struct timeval ctv = { 3, 0 }, tv = { 15, 0 };
	redisReply *rep;

	memset(r, 0, sizeof *r);
	r->cfg = cfg;
	if (strncmp(cfg->redis_url, "redis+cluster://", 16) == 0) {
		snprintf(r->errstr, sizeof r->errstr,
		    "redis+cluster:// is not supported by this build yet");
		return -2;
	}
	if ((rc = parse_url(cfg->redis_url, host, sizeof host, &port, path, sizeof path, &db)) < 0) {
		if (rc == -2)
			snprintf(r->errstr, sizeof r->errstr, "%s: put the password in "
			    "SRQ_REDIS_PASSWORD or SRQ_REDIS_PASSWORD_FILE, not in the URL", cfg->redis_from);
		else
			/* Not echoed: a URL we cannot read may still hold a secret. */
			snprintf(r->errstr, sizeof r->errstr, "%s: not redis://host[:port][/db] nor "
			    "unix:///path[?db=N] (db 0 to %d)", cfg->redis_from, INT_MAX);
		return -2;
	}
	r->c = path[0] ? redisConnectUnixWithTimeout(path, ctv)
		       : redisConnectWithTimeout(host, port, ctv);
	if (!r->c || r->c->err) {
		if (path[0])
			snprintf(r->errstr, sizeof r->errstr, "cannot connect to Redis at '%s': %s", path,
			    r->c ? r->c->errstr : "out of memory");
		else
			snprintf(r->errstr, sizeof r->errstr, "cannot connect to Redis at %s port %d: %s",
			    host, port, r->c ? r->c->errstr : "out of memory");
		return -1;
	}
	redisSetTimeout(r->c, tv);
	if (cfg->redis_password) {
		const char *argv[2] = { "AUTH", cfg->redis_password };

		rep = redisCommandArgv(r->c, 2, argv, NULL);
		if (!rep || rep->type == REDIS_REPLY_ERROR) {
			/* The reply text never contains the password itself. */
			snprintf(r->errstr, sizeof r->errstr, "Redis AUTH failed: %s",
			    rep ? rep->str : r->c->errstr);
			if (rep)
				freeReplyObject(rep);
			return -1;
		}
		freeReplyObject(rep);
	}
	if (db) {
		rep = redisCommand(r->c, "SELECT %d", db);
		if (!rep || rep->type == REDIS_REPLY_ERROR) {
			snprintf(r->errstr, sizeof r->errstr, "SELECT %d failed", db);
			if (rep)
				freeReplyObject(rep);
			return -1;
		}
		freeReplyObject(rep);
	}
	return load_scripts(r);
}

void
sr_redis_close(struct sr_redis *r)
{
	while (pq.len) {
		struct pend p;

		ring_pop(&pq, &p);
		pend_free(&p);
	}
	while (rbuf.len) {
		redisReply *rep;

		ring_pop(&rbuf, &rep);
		freeReplyObject(rep);
	}
	free(pq.a);
	free(rbuf.a);
	pq.a = rbuf.a = NULL;
	pq.cap = pq.head = rbuf.cap = rbuf.head = 0;
	if (r->c)
		redisFree(r->c);
	r->c = NULL;
}

void
sr_redis_append(struct sr_redis *r, int argc, const char **argv, const size_t *lens)
{
	struct pend p = { -1, NULL, 0, 0 };

	if (redisAppendCommandArgv(r->c, argc, argv, lens) != REDIS_OK)
		sr_die(SR_EX_BACKEND, "cannot queue a Redis command: %s", r->c->errstr);
	r->pending++;
	ring_push(&pq, &p);
}

void
sr_redis_append_script(struct sr_redis *r, enum sr_script s, int nkeys, int argc,
    const char **argv, const size_t *lens)
{
	struct pend p = { (int)s, NULL, 0, 0 };
	const char **full;
	size_t *flen = sr_malloc((size_t)(argc + 3) * sizeof *flen);
	char nk[16];

	/* The keys a caller passes are the keys the script's header documents
	 * (scripts/lua-embed reads them): a caller out of step with its script
	 * is a bug, stopped here rather than run with the wrong keys. */
	if (sr_lua_keys[s] >= 0 ? nkeys != sr_lua_keys[s] : nkeys <= -sr_lua_keys[s]) {
		fprintf(stderr, "%s: bug: %s.lua called with %d keys; its header says %s%d\n", sr_prog,
		    sr_lua_name[s], nkeys, sr_lua_keys[s] < 0 ? "at least " : "",
		    sr_lua_keys[s] < 0 ? 1 - sr_lua_keys[s] : sr_lua_keys[s]);
		abort();
	}
	full = sr_malloc((size_t)(argc + 3) * sizeof *full);
	snprintf(nk, sizeof nk, "%d", nkeys);
	full[0] = "EVALSHA";
	full[1] = sha[s];
	full[2] = nk;
	flen[0] = 7;
	flen[1] = 40;
	flen[2] = strlen(nk);
	for (int i = 0; i < argc; i++) {
		full[i + 3] = argv[i];
		flen[i + 3] = lens ? lens[i] : strlen(argv[i]);
	}
	/* Formatted once, kept as sent: the SHA of a script never changes, so
	 * after a reload the very same bytes can be sent again. */
	p.loads = loads;
	p.len = redisFormatCommandArgv(&p.cmd, argc + 3, full, flen);
	if (p.len < 0)
		sr_die(SR_EX_USAGE, "out of memory");
	if (redisAppendFormattedCommand(r->c, p.cmd, (size_t)p.len) != REDIS_OK)
		sr_die(SR_EX_BACKEND, "cannot queue a Redis command: %s", r->c->errstr);
	r->pending++;
	ring_push(&pq, &p);
	free(full);
	free(flen);
}

void
sr_redis_flush(struct sr_redis *r)
{
	int done = 0;

	while (!r->c->err && !done)
		if (redisBufferWrite(r->c, &done) != REDIS_OK)
			break;
}

static redisReply *
read_one(struct sr_redis *r)
{
	void *rep = NULL;

	if (rbuf.len) {
		ring_pop(&rbuf, &rep);
		return rep;
	}
	if (r->c->err || redisGetReply(r->c, &rep) != REDIS_OK) {
		snprintf(r->errstr, sizeof r->errstr, "Redis connection failed: %s",
		    r->c->errstr[0] ? r->c->errstr : "unknown error");
		return NULL;
	}
	r->pending--;
	return rep;
}

static int
is_noscript(const redisReply *rep)
{
	return rep && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOSCRIPT", 8) == 0;
}

redisReply *
sr_redis_reply(struct sr_redis *r)
{
	struct pend p;
	redisReply *rep;

	if (!pq.len)
		return NULL;
	ring_pop(&pq, &p);
	rep = read_one(r);
	if (p.script >= 0 && is_noscript(rep)) {
		freeReplyObject(rep);
		/* Read the rest of the pipeline ahead so the connection is idle. */
		while (r->pending > 0) {
			void *next = NULL;

			if (redisGetReply(r->c, &next) != REDIS_OK)
				break;
			r->pending--;
			ring_push(&rbuf, &next);
		}
		rep = NULL;
		if (p.loads < loads || load_scripts(r) == 0) {
			void *again = NULL;

			if (redisAppendFormattedCommand(r->c, p.cmd, (size_t)p.len) != REDIS_OK ||
			    redisGetReply(r->c, &again) != REDIS_OK)
				snprintf(r->errstr, sizeof r->errstr, "Redis connection failed: %s",
				    r->c->errstr);
			rep = again;
		}
	}
	pend_free(&p);
	return rep;
}

void
sr_redis_discard(struct sr_redis *r)
{
	while (pq.len) {
		redisReply *rep = sr_redis_reply(r);

		if (rep)
			freeReplyObject(rep);
	}
}

redisReply *
sr_redis_cmd(struct sr_redis *r, int argc, const char **argv)
{
	sr_redis_append(r, argc, argv, NULL);
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

int64_t
sr_redis_time_ms(struct sr_redis *r)
{
	const char *argv[] = { "TIME" };
	redisReply *rep = sr_redis_cmd(r, 1, argv);
	int64_t ms = -1;

	if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
		ms = atoll(rep->element[0]->str) * 1000 + atoll(rep->element[1]->str) / 1000;
	if (rep)
		freeReplyObject(rep);
	return ms;
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
	if (rc < 0)
		fprintf(stderr, "%s: error: %s; every %s\n", sr_prog, r->errstr, answer);
	return rc == 0;
}

int
sr_redis_wait_replicas(struct sr_redis *r, const struct sr_config *cfg)
{
	char n[24], ms[24];
	const char *argv[] = { "WAIT", n, ms };
	redisReply *rep;
	int rc = 0;

	if (cfg->wait_replicas <= 0)
		return 0;
	snprintf(n, sizeof n, "%ld", cfg->wait_replicas);
	snprintf(ms, sizeof ms, "%ld", cfg->wait_timeout_ms);
	if (!(rep = sr_redis_cmd(r, 3, argv)))
		return -1;
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
	return rc;
}

void
sr_redis_lost(struct sr_redis *r, int *up, const char *answer)
{
	if (*up)
		fprintf(stderr, "%s: error: %s; every %s not yet done is answered with \"error\"\n", sr_prog,
		    r->errstr, answer);
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
