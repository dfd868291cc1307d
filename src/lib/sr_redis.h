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

/* A FIFO of fixed-size elements, grown by doubling (sr_redis.c). */
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

/* The Lua scripts, embedded at build time from share/lua: enum sr_script
 * (SR_LUA_<NAME>, one per file), sr_lua_source[] and sr_lua_name[]. */

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
/* Append a command to the pipeline (binary safe). */
void sr_redis_append(struct sr_redis *r, int argc, const char **argv, const size_t *lens);
/* Append EVALSHA of a script; a NOSCRIPT reply is retried with EVAL by
 * sr_redis_reply transparently (the script text is kept for that). */
/* Its keys (argv[0..nkeys)) are checked first against those the script's
 * header declares (sr_lua_check_keys): a call that does not pass is a
 * bug, said on stderr, and the process aborts. */
void sr_redis_append_script(struct sr_redis *r, enum sr_script s, int nkeys, int argc,
    const char **argv, const size_t *lens);
/* Whether key (len bytes) has shape, a key's shape as a script's header
 * declares it (scripts/lua-embed): an account's key by its suffix, any
 * other from the prefix "P:", '*' any text, '|' between alternatives. */
int sr_lua_key_ok(const char *shape, const char *key, size_t len);
/* 0 when a call of script s with these nkeys keys (lens: their lengths,
 * or NULL) passes as many keys as its header declares, each of the shape
 * declared at its place; else -1 and what is wrong in err (errn bytes). */
int sr_lua_check_keys(enum sr_script s, int nkeys, const char **keys, const size_t *lens, char *err,
    size_t errn);
/* Send what was appended without waiting for replies, so Redis works while
 * the caller does something else. Errors surface at the next reply. */
void sr_redis_flush(struct sr_redis *r);
/* Read the next pipelined reply. NULL means the connection failed (errstr
 * set); every later reply is lost too. Caller frees with freeReplyObject. */
redisReply *sr_redis_reply(struct sr_redis *r);
/* Drain and free every reply still owed (after an error, for instance). */
void sr_redis_discard(struct sr_redis *r);
/* Run one command and return its reply (NULL on connection failure). */
redisReply *sr_redis_cmd(struct sr_redis *r, int argc, const char **argv);
/* How many masters hold the data: 1 for one server. A command that is not
 * about one key (SCAN, DBSIZE) runs on each with sr_redis_cmd_at. */
int sr_redis_masters(struct sr_redis *r);
redisReply *sr_redis_cmd_at(struct sr_redis *r, int master, int argc, const char **argv);
/* The same, for tools that cannot go on without the answer: a lost
 * connection or an error reply ends the tool (exit 3), naming the command. */
redisReply *sr_redis_must(struct sr_redis *r, int argc, const char **argv);
/* The keys matching pattern, by SCAN on every master (for the low-frequency
 * jobs allowed to walk the keyspace: the sweep, a migration): fn(key + skip,
 * arg) for each key longer than skip. A failure ends the tool (exit 3). */
void sr_redis_scan_must(struct sr_redis *r, const char *pattern, size_t skip,
    void (*fn)(const char *, void *), void *arg);
/* An error reply that says Redis cannot take the command now (out of
 * memory, a read-only replica, loading, busy...), rather than a refusal by a
 * script: 1. */
int sr_redis_backend_error(const char *err);
/* With SRQ_WAIT_REPLICAS=N, before acking what was written: WAIT until N
 * replicas have it. 0 (or N is 0), 1 if fewer had it within the timeout
 * (errstr says so: the writes stand on the master but could be lost with
 * it), -1 if the connection failed. */
int sr_redis_wait_replicas(struct sr_redis *r, const struct sr_config *cfg);
/* Where the last reply sr_redis_reply returned came from: a node and its
 * connection. */
void sr_redis_reply_from(struct sr_redis *r, int *node, unsigned *gen);
/* The same WAIT, on that node for what was written there, on that very
 * connection: 1 (short, errstr set) if it was lost and made again since,
 * for a new connection's WAIT would not speak for the old one's writes. */
int sr_redis_wait_on(struct sr_redis *r, const struct sr_config *cfg, int node, unsigned gen);
/* Redis was lost mid-run: say so on stderr once (the records say it per
 * line too) and clear *up. */
void sr_redis_lost(struct sr_redis *r, int *up, const char *answer);
/* The Redis server's clock in ms, or -1 on failure. */
int64_t sr_redis_time_ms(struct sr_redis *r);

#endif
