/* sr_sentinel.h - the API of sr_sentinel.c. */
#ifndef SR_SENTINEL_H
#define SR_SENTINEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_redis.h"

/* Parse redis+sentinel://host:port[,host:port...]/MASTERNAME into r. 0, -1
 * not such a URL, -2 credentials in it. */
int sr_sentinel_parse(struct sr_redis *r, const char *url);
/* Ask the sentinels for the master's address (the first that answers) and
 * make it r's master, once it says it is one (ROLE): a failover may be
 * under way, so it asks again for up to a few seconds. 0, or -1 with errstr. */
int sr_sentinel_resolve(struct sr_redis *r);

#endif
