/* sr_pipe.h - the API of sr_pipe.c: the pipeline to Redis. */
#ifndef SR_PIPE_H
#define SR_PIPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>

#include "sr_lua_gen.h"
#include "sr_redis.h"

/* Append a command to the pipeline (binary safe). */
void sr_redis_append(struct sr_redis *r, int argc, const char **argv, const size_t *lens);
/* Append EVALSHA of a script; a NOSCRIPT reply is retried with EVAL by
 * sr_redis_reply transparently (the script text is kept for that). */
/* Its keys (argv[0..nkeys)) are checked first against those the script's
 * header declares (sr_lua_check_keys): a call that does not pass is a
 * bug, said on stderr, and the process aborts. */
void sr_redis_append_script(struct sr_redis *r, enum sr_script s, int nkeys, int argc,
    const char **argv, const size_t *lens);
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
/* Where the last reply sr_redis_reply returned came from: a node and its
 * connection. */
void sr_redis_reply_from(struct sr_redis *r, int *node, unsigned *gen);
/* The Redis server's clock in ms, or -1 on failure. */
int64_t sr_redis_time_ms(struct sr_redis *r);
/* A TIME appended to a pipeline; sr_time_reply_ms reads its reply: the
 * clock in ms, or -1 when the reply is no clock (an error: BUSY, LOADING,
 * an ACL that refuses TIME). -1, never 0: a clock of 0 would judge every
 * package unexpired and every fact fresh. */
void sr_redis_append_time(struct sr_redis *r);
int64_t sr_time_reply_ms(const redisReply *rep);
/* The same, -1 with errstr set ("Redis's clock not read: ..."). */
int64_t sr_redis_clock(struct sr_redis *r, const redisReply *rep);
/* A command to node i, whatever it serves (sr_replicas.c's WAIT). */
void sr_redis_append_at(struct sr_redis *r, int i, int argc, const char **argv);
/* The pipeline of a connection made (sr_redis_connect), and freed with
 * whatever it still holds (sr_redis_close). */
void sr_pipe_init(struct sr_redis *r);
void sr_pipe_free(struct sr_redis *r);

#endif
