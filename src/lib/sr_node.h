/* sr_node.h - the API of sr_node.c: one Redis node connected. */
#ifndef SR_NODE_H
#define SR_NODE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>

#include "sr_lua_gen.h"
#include "sr_redis.h"

/* Connect to one node (AUTH, SELECT, scripts loaded when scripts). 0, or
 * -1 with r->errstr set. */
int sr_redis_node_connect(struct sr_redis *r, struct sr_node *n, int scripts);
/* What failed on a node's connection, a read timeout said as such. */
const char *sr_redis_conn_error(const struct sr_redis *r, const redisContext *c);

/* Node i of r connected, or connected again once a failed connection owes
 * nothing more. 0, or -1 with errstr set. */
int sr_node_ready(struct sr_redis *r, int i);
/* Split redis://host[:port][/db] or unix:///path[?db=N]. -2: credentials in
 * the URL, refused; -1: not such a URL. */
int sr_redis_parse_url(const char *url, char *host, size_t hostlen, int *port, char *path,
    size_t pathlen, int *db);
/* The scripts' SHA1s, known from the first load (a script's SHA is its
 * text's, the same on every node). */
/* Load every script on node n (again, after a NOSCRIPT). 0, or -1 with
 * r->errstr set. */
int sr_node_load_scripts(struct sr_redis *r, struct sr_node *n);
extern char sr_lua_sha[SR_LUA_COUNT][41];

#endif
