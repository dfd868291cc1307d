/* sr_cluster.h - the API of sr_cluster.c. */
#ifndef SR_CLUSTER_H
#define SR_CLUSTER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_redis.h"

#define SR_CLUSTER_SLOTS 16384
/* The cluster slot of a key: CRC16 of the key, or of its hash tag (the
 * text between the first '{' and the next '}', when not empty). */
unsigned sr_key_slot(const char *key, size_t len);
/* Parse redis+cluster://host:port[,host:port...] into r's nodes (not yet
 * connected). 0, -1 not such a URL, -2 credentials in it. */
int sr_cluster_parse(struct sr_redis *r, const char *url);
/* Read the slot map (CLUSTER SLOTS) from the first node that answers, on a
 * connection of its own. 0, or -1 with errstr set. */
int sr_cluster_refresh(struct sr_redis *r);
/* The node a MOVED or ASK error from node `from` points at ("MOVED 3999
 * 127.0.0.1:6381"), added when new; -1 if the error is neither. *ask is set
 * for ASK. */
int sr_cluster_redirect(struct sr_redis *r, int from, const char *err, int *ask);
/* The index of node host:port, added (not connected) when new. */
int sr_cluster_node(struct sr_redis *r, const char *host, int port);
/* host:port, host may be [IPv6] or empty. 0 or -1. */
int sr_parse_hostport(const char *s, size_t n, char *host, size_t hostlen, int *port);
#endif
