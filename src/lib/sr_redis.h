/* sr_redis.h - the API of sr_redis.c. */
#ifndef SR_REDIS_H
#define SR_REDIS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_config.h"
#include "sr_lua_gen.h"

/* A FIFO of fixed-size elements, grown by doubling (sr_pipe.c). */
struct sr_ring {
	char *a;
	size_t size, cap, head, len;
};

/* One Redis server srq talks to: the one server, or one master of a
 * cluster. Its replies come back in the order its commands were sent; owed
 * lists whose they are (pipeline sequence numbers). */
struct sr_node {
	redisContext *c;
	char host[256];
	int port;
	char path[512];       /* a unix socket instead of host and port */
	unsigned long loads;  /* how many times the scripts were loaded on it */
	int wrote;            /* sent commands since the last WAIT */
	int waited;           /* what the last WAIT said: 0 confirmed, 1 short, -1 failed */
	unsigned gen;         /* connections made so far: a WAIT speaks for its own */
	struct sr_ring owed;
};

/* The connection: one server (redis://, unix://), or the masters of a
 * cluster (redis+cluster://, sr_cluster.c: each key goes to the master that
 * serves its slot). Replies come back in the order the caller appended the
 * commands, whichever nodes ran them. errstr holds the last connection-level
 * error (Redis down, I/O); a script's own error reply is returned as a
 * REDIS_REPLY_ERROR reply instead. */
struct sr_addr {
	char host[256];
	int port;
};

struct sr_redis {
	const struct sr_config *cfg;
	char errstr[256];
	int cluster;
	int sentinel;             /* redis+sentinel://: the master is whom the sentinels name */
	struct sr_addr *sentinels;
	int nsentinels;
	char master_name[128];
	int db;                   /* one server: SELECT it */
	struct sr_node *node;     /* node[0]: the server; on a cluster, every node met */
	int nnodes;
	int *master;              /* the masters (indexes into node), in slot order */
	int nmasters;
	int *slot;                /* cluster: slot -> node index, -1 while unknown */
	int stale;                /* cluster: read the slot map again before routing */
	struct sr_ring pq;        /* the commands awaiting replies, in caller order (pq.len: how many) */
	int last_node;            /* where the last reply came from, on which connection */
	unsigned last_gen;
	long long retry_at;       /* a failed map or master lookup: not again before (ms) */
	int discarding;           /* sr_redis_discard: replies dropped, nothing sent again */
	long long *loop_until;    /* cluster, per slot: its redirects ran out; not waited for
	                           * again before this (monotonic ms). NULL until needed */
	unsigned long long seq0;  /* the sequence number of pq's first */
	char *password;           /* SRQ_REDIS_PASSWORD(_FILE), read as it connects; never argv */
};

/* Connect (and AUTH when a password is configured: read here, by the tools
 * that talk to Redis only). Returns 0, -1 with r->errstr set, or -2 for a
 * configuration error (a URL holding a password, a password file that
 * cannot be read). Parses redis://host:port[/db] and unix:///path[?db=N]. */
int sr_redis_connect(struct sr_redis *r, const struct sr_config *cfg);
void sr_redis_close(struct sr_redis *r);
/* Connect or die: a bad URL exits 2, Redis unavailable exits 3 (for tools
 * with no input lines to answer). */
void sr_redis_open(struct sr_redis *r, const struct sr_config *cfg);
/* For filters: a bad URL exits 2; Redis unavailable returns 0 after saying
 * on stderr that "every <answer>", since each input line must still be
 * answered with an error record. 1 when connected. */
int sr_redis_open_filter(struct sr_redis *r, const struct sr_config *cfg, const char *answer);
/* An error reply that says Redis cannot take the command now (out of
 * memory, a read-only replica, loading, busy...), rather than a refusal by a
 * script: 1. */
int sr_redis_backend_error(const char *err);
/* Redis was lost mid-run: say so on stderr once (the records say it per
 * line too) and clear *up. */
void sr_redis_lost(struct sr_redis *r, int *up, const char *answer);

#endif
