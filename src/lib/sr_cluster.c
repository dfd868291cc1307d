/* sr_cluster.c - Redis Cluster: which master serves a key.
 *
 * A cluster splits the keys into 16384 slots (CRC16 of the key, or of its
 * hash tag); each master serves some of them. srq's keys carry the account
 * ({c17}) or the device shard ({d3}) as their tag, so every script's keys
 * live on one master. The map comes from CLUSTER SLOTS; a MOVED reply (the
 * slot has moved for good) marks it stale so the next command reads it again,
 * an ASK reply (the slot is being moved) sends that one command on with
 * ASKING. Routing and the pipeline across the masters are in sr_redis.c. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "sr.h"

/* CRC16-CCITT (XMODEM): polynomial 0x1021, initial 0, as Redis computes it. */
static uint16_t
crc16(const char *buf, size_t len)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)((unsigned char)buf[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

unsigned
sr_key_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len);

	if (open) {
		size_t from = (size_t)(open - key) + 1;
		const char *close = memchr(key + from, '}', len - from);

		if (close && close > key + from)
			return crc16(key + from, (size_t)(close - key) - from) % SR_CLUSTER_SLOTS;
	}
	return crc16(key, len) % SR_CLUSTER_SLOTS;
}

int
sr_cluster_node(struct sr_redis *r, const char *host, int port)
{
	for (int i = 0; i < r->nnodes; i++)
		if (r->node[i].port == port && !strcmp(r->node[i].host, host))
			return i;
	r->node = realloc(r->node, (size_t)(r->nnodes + 1) * sizeof *r->node);
	if (!r->node)
		sr_die(SR_EX_BACKEND, "out of memory");
	memset(&r->node[r->nnodes], 0, sizeof r->node[0]);
	snprintf(r->node[r->nnodes].host, sizeof r->node[0].host, "%s", host);
	r->node[r->nnodes].port = port;
	r->node[r->nnodes].owed.size = sizeof(unsigned long long);
	return r->nnodes++;
}

/* host:port, host may be [IPv6] or empty (":6381": the node that said it). 0 or -1. */
int
sr_parse_hostport(const char *s, size_t n, char *host, size_t hostlen, int *port)
{
	const char *colon;
	char num[8];
	long p;

	if (n && s[0] == '[') {
		const char *end = memchr(s, ']', n);

		if (!end || end + 1 >= s + n || end[1] != ':')
			return -1;
		if ((size_t)(end - s - 1) >= hostlen)
			return -1;
		memcpy(host, s + 1, (size_t)(end - s - 1));
		host[end - s - 1] = '\0';
		colon = end + 1;
	} else {
		const char *c = NULL;

		for (size_t i = 0; i < n; i++)
			if (s[i] == ':')
				c = s + i;
		if (!c || (size_t)(c - s) >= hostlen)
			return -1;
		memcpy(host, s, (size_t)(c - s));
		host[c - s] = '\0';
		colon = c;
	}
	n -= (size_t)(colon + 1 - s);
	if (n == 0 || n >= sizeof num)
		return -1;
	memcpy(num, colon + 1, n);
	num[n] = '\0';
	p = sr_parse_long(num);
	if (p < 1 || p > 65535)
		return -1;
	*port = (int)p;
	return 0;
}

int
sr_cluster_parse(struct sr_redis *r, const char *url)
{
	const char *p = url + strlen("redis+cluster://");

	if (strncmp(url, "redis+cluster://", 16) != 0)
		return -1;
	if (strchr(p, '@'))
		return -2;
	if (!*p)
		return -1;
	while (*p) {
		size_t n = strcspn(p, ",");
		char host[256];
		int port;

		if (sr_parse_hostport(p, n, host, sizeof host, &port) < 0 || !host[0])
			return -1;
		sr_cluster_node(r, host, port);
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static int
cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* A CLUSTER SLOTS entry's master: host (NIL, "" or "?": the node asked) and
 * port, in range. 0, or -1 when the entry is not one. */
static int
entry_master(const struct sr_redis *r, const redisReply *e, int from, char *host, size_t hostlen,
    int *port, int *lo, int *hi)
{
	const redisReply *m, *h;

	if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
	    e->element[0]->type != REDIS_REPLY_INTEGER || e->element[1]->type != REDIS_REPLY_INTEGER ||
	    (m = e->element[2])->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
	    m->element[1]->type != REDIS_REPLY_INTEGER)
		return -1;
	h = m->element[0];
	if (h->type != REDIS_REPLY_STRING && h->type != REDIS_REPLY_NIL)
		return -1;
	if (e->element[0]->integer < 0 || e->element[1]->integer >= SR_CLUSTER_SLOTS ||
	    e->element[0]->integer > e->element[1]->integer ||
	    m->element[1]->integer < 1 || m->element[1]->integer > 65535)
		return -1;
	snprintf(host, hostlen, "%s", h->type == REDIS_REPLY_STRING && h->len && strcmp(h->str, "?") ?
	    h->str : r->node[from].host);
	*port = (int)m->element[1]->integer;
	*lo = (int)e->element[0]->integer;
	*hi = (int)e->element[1]->integer;
	return 0;
}

/* Apply a CLUSTER SLOTS reply from node `from`, once all of it reads: a
 * reply that does not leaves the map as it was. 0, or -1. */
static int
apply_slots(struct sr_redis *r, const redisReply *rep, int from)
{
	char host[256];
	int port, lo, hi;

	if (rep->type != REDIS_REPLY_ARRAY || rep->elements == 0)
		return -1;
	for (size_t i = 0; i < rep->elements; i++)
		if (entry_master(r, rep->element[i], from, host, sizeof host, &port, &lo, &hi) < 0)
			return -1;
	for (int s = 0; s < SR_CLUSTER_SLOTS; s++)
		r->slot[s] = -1;
	r->nmasters = 0;
	for (size_t i = 0; i < rep->elements; i++) {
		int n, known = 0;

		entry_master(r, rep->element[i], from, host, sizeof host, &port, &lo, &hi);
		n = sr_cluster_node(r, host, port);
		for (int s = lo; s <= hi; s++)
			r->slot[s] = n;
		for (int k = 0; k < r->nmasters; k++)
			known |= r->master[k] == n;
		if (!known) {
			r->master = realloc(r->master, (size_t)(r->nmasters + 1) * sizeof *r->master);
			if (!r->master)
				sr_die(SR_EX_BACKEND, "out of memory");
			r->master[r->nmasters++] = n;
		}
	}
	/* The same order whatever the reply's: node indexes only grow. */
	qsort(r->master, (size_t)r->nmasters, sizeof *r->master, cmp_int);
	return 0;
}

int
sr_cluster_refresh(struct sr_redis *r)
{
	char why[256] = "no node to ask";
	int reached = 0; /* a node accepted a connection */

	if (!r->slot && !(r->slot = malloc(SR_CLUSTER_SLOTS * sizeof *r->slot)))
		sr_die(SR_EX_BACKEND, "out of memory");
	/* Every node met so far, in turn, on a connection of its own: the
	 * pipeline's connections may be owed replies. */
	for (int i = 0; i < r->nnodes; i++) {
		struct sr_node probe;
		redisReply *rep;
		int ok;

		memset(&probe, 0, sizeof probe);
		snprintf(probe.host, sizeof probe.host, "%s", r->node[i].host);
		probe.port = r->node[i].port;
		if (sr_redis_node_connect(r, &probe, 0) < 0) {
			/* (connected, but AUTH or SELECT refused: not a lost connection) */
			reached |= probe.c && !probe.c->err;
			snprintf(why, sizeof why, "%s", r->errstr);
			if (probe.c)
				redisFree(probe.c);
			continue;
		}
		reached = 1;
		rep = redisCommand(probe.c, "CLUSTER SLOTS");
		ok = rep && apply_slots(r, rep, i) == 0;
		if (!ok)
			snprintf(why, sizeof why, "%s:%d: CLUSTER SLOTS: %s", probe.host, probe.port,
			    !rep ? sr_redis_conn_error(r, probe.c) : rep->type == REDIS_REPLY_ERROR ? rep->str
										 : "no slots served");
		if (rep)
			freeReplyObject(rep);
		redisFree(probe.c);
		if (ok) {
			r->stale = 0;
			return 0;
		}
	}
	/* No node reachable is a connection lost, said as one whether it is
	 * met on an open connection or here, looking again after it. */
	snprintf(r->errstr, sizeof r->errstr, "%scannot read the cluster's slot map: %s",
	    reached ? "" : "Redis connection failed: ", why);
	return -1;
}

int
sr_cluster_redirect(struct sr_redis *r, int from, const char *err, int *ask)
{
	const char *p;
	char host[256];
	int port;

	*ask = !strncmp(err, "ASK ", 4);
	if (!*ask && strncmp(err, "MOVED ", 6))
		return -1;
	/* "<MOVED|ASK> <slot> <host:port>" */
	if (!(p = strchr(err, ' ')) || !(p = strchr(p + 1, ' ')))
		return -1;
	p++;
	if (sr_parse_hostport(p, strlen(p), host, sizeof host, &port) < 0)
		return -1;
	if (!host[0])
		snprintf(host, sizeof host, "%s", r->node[from].host);
	return sr_cluster_node(r, host, port);
}
