/* sr_redis.c - the connection to Redis: pipelining, the Lua scripts, and
 * the masters of a cluster.
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
#include <errno.h>
#include <limits.h>
#include <time.h>
#include <sys/time.h>

#include <curl/curl.h>

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

/* The scripts' SHA1s, known from the first load: a script's SHA is its
 * text's, the same on every node. */
static char sha[SR_LUA_COUNT][41];

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

static int
load_scripts(struct sr_redis *r, struct sr_node *n)
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
		memcpy(sha[i], rep->str, 41);
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
	return scripts ? load_scripts(r, n) : 0;
}

/* Node i connected, or connected again once a failed connection owes
 * nothing more. 0, or -1 with errstr set. */
static int
node_ready(struct sr_redis *r, int i)
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
	r->pq.size = sizeof(struct pend);
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
		return node_ready(r, r->master[0]);
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
			if (node_ready(r, r->master[k]) < 0)
				return -1;
		return 0;
	}
	if ((rc = parse_url(cfg->redis_url, host, sizeof host, &port, path, sizeof path, &r->db)) < 0) {
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
	return node_ready(r, 0);
}

static void
pend_free(struct pend *p)
{
	if (p->cmd)
		redisFreeCommand(p->cmd);
	if (p->reply)
		freeReplyObject(p->reply);
}

void
sr_redis_close(struct sr_redis *r)
{
	while (r->pq.len) {
		struct pend p;

		ring_pop(&r->pq, &p);
		pend_free(&p);
	}
	free(r->pq.a);
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
	memset(&r->pq, 0, sizeof r->pq);
	if (r->password) {
		memset(r->password, 0, strlen(r->password));
		free(r->password);
		r->password = NULL;
	}
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
	if (node_ready(r, i) < 0) {
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

/* Whether str[0..n) matches pat[0..m): '*' any text, anything else itself. */
static int
glob(const char *pat, size_t m, const char *str, size_t n)
{
	while (m && *pat != '*') {
		if (!n || *pat != *str)
			return 0;
		pat++, m--, str++, n--;
	}
	if (!m)
		return !n;
	/* the last '*': what follows it ends str */
	if (!memchr(pat + 1, '*', m - 1))
		return n >= m - 1 && !memcmp(str + n - (m - 1), pat + 1, m - 1);
	for (size_t k = 0; k <= n; k++)
		if (glob(pat + 1, m - 1, str + k, n - k))
			return 1;
	return 0;
}

int
sr_lua_key_ok(const char *shape, const char *key, size_t len)
{
	static const char acct[] = "*:carrier:{*}:";

	for (const char *s = shape, *e; *s; s = *e ? e + 1 : e) {
		char pat[SR_KEY_MAX + sizeof acct];
		int n;

		e = s + strcspn(s, "|");
		/* P: the prefix; a key of an account's is named by its suffix */
		n = s[0] == 'P' && s[1] == ':' ? snprintf(pat, sizeof pat, "*%.*s", (int)(e - s - 1), s + 1) :
		    snprintf(pat, sizeof pat, "%s%.*s", acct, (int)(e - s), s);
		if (n > 0 && (size_t)n < sizeof pat && glob(pat, (size_t)n, key, len))
			return 1;
	}
	return 0;
}

int
sr_lua_check_keys(enum sr_script s, int nkeys, const char **keys, const size_t *lens, char *err,
    size_t errn)
{
	int fixed = sr_lua_keys[s] == SR_LUA_KEYS_EACH ? 0 : sr_lua_keys[s] < 0 ? -sr_lua_keys[s] :
	    sr_lua_keys[s];
	int each = sr_lua_item_keys[s];

	if (each ? nkeys <= fixed || (nkeys - fixed) % each : nkeys != fixed) {
		if (each)
			snprintf(err, errn, "%s.lua called with %d keys; its header declares %d and %d per item",
			    sr_lua_name[s], nkeys, fixed, each);
		else
			snprintf(err, errn, "%s.lua called with %d keys; its header declares %d",
			    sr_lua_name[s], nkeys, fixed);
		return -1;
	}
	for (int i = 0; i < nkeys; i++) {
		const char *shape = i < fixed ? sr_lua_key_shapes[s][i] :
		    sr_lua_item_shapes[s][(i - fixed) % each];
		size_t len = lens ? lens[i] : strlen(keys[i]);

		if (!sr_lua_key_ok(shape, keys[i], len)) {
			if (i < fixed)
				snprintf(err, errn, "%s.lua's KEYS[%d] is '%.*s'; its header declares %s there",
				    sr_lua_name[s], i + 1, (int)(len < 200 ? len : 200), keys[i], shape);
			else
				snprintf(err, errn, "%s.lua's KEYS[%d] (item %d's key %d) is '%.*s'; its header "
				    "declares %s there", sr_lua_name[s], i + 1, (i - fixed) / each + 1,
				    (i - fixed) % each + 1, (int)(len < 200 ? len : 200), keys[i], shape);
			return -1;
		}
	}
	return 0;
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
	full[1] = sha[s];
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
				if (!n->c || n->c->err || load_scripts(r, n) < 0) {
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
	if (rc < 0) {
		sr_log_head(SR_LOG_ERR);
		fprintf(stderr, "%s: error: %s; every %s\n", sr_prog, r->errstr, answer);
	}
	return rc == 0;
}

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
	append(r, -1, i, 3, 3, argv, NULL);
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

void
sr_redis_reply_from(struct sr_redis *r, int *node, unsigned *gen)
{
	*node = r->last_node;
	*gen = r->last_gen;
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
