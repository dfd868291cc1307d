/* sr_switch.h - the API of sr_switch.c. */
#ifndef SR_SWITCH_H
#define SR_SWITCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_config.h"
#include "sr_redis.h"

/* The global switch: 1 on (also when never set), 0 off, -1 Redis failed.
 * Append the reads of the switch (pipelined with a batch), then read them:
 * 1 on, 0 off, -1 on a lost connection or an error reply (errstr). */
void sr_switch_append(struct sr_redis *r, const struct sr_config *cfg);
int sr_switch_read(struct sr_redis *r);
int sr_switch_get(struct sr_redis *r, const struct sr_config *cfg);
/* Set it, audited with who and why in P:{global}:admin_audit. 0, or -1. */
int sr_switch_set(struct sr_redis *r, const struct sr_config *cfg, int on, const char *who,
    const char *why);

#endif
