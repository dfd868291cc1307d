/* sr_replicas.h - the API of sr_replicas.c: SRQ_WAIT_REPLICAS. */
#ifndef SR_REPLICAS_H
#define SR_REPLICAS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>

#include "sr_config.h"
#include "sr_redis.h"

/* With SRQ_WAIT_REPLICAS=N, before acking what was written: WAIT until N
 * replicas have it. 0 (or N is 0), 1 if fewer had it within the timeout
 * (errstr says so: the writes stand on the master but could be lost with
 * it), -1 if the connection failed. */
int sr_redis_wait_replicas(struct sr_redis *r, const struct sr_config *cfg);
/* The same WAIT, on that node for what was written there, on that very
 * connection: 1 (short, errstr set) if it was lost and made again since,
 * for a new connection's WAIT would not speak for the old one's writes. */
int sr_redis_wait_on(struct sr_redis *r, const struct sr_config *cfg, int node, unsigned gen);

#endif
