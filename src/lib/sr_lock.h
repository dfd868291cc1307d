/* sr_lock.h - the API of sr_lock.c. */
#ifndef SR_LOCK_H
#define SR_LOCK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_config.h"
#include "sr_redis.h"

#define SR_TOKEN_MAX 64
/* Take the device lock for at most hold_ms, waiting up to wait_ms for it.
 * token (SR_TOKEN_MAX) receives our token. 1 taken, 0 busy, -1 Redis failed,
 * -2 Redis refused it (out of memory, read only; said in r->errstr). */
int sr_device_lock(struct sr_redis *r, const struct sr_config *cfg, const char *device, char *token,
    long hold_ms, long wait_ms);
/* Release it if it is still ours. 0, -1 when Redis failed, -2 when Redis
 * refused (r->errstr; the lock is held until its hold runs out), -3 when it
 * was no longer ours (r->errstr: its hold ran out under us). */
int sr_device_unlock(struct sr_redis *r, const struct sr_config *cfg, const char *device,
    const char *token);
/* Extend its hold to hold_ms from now if it is still ours: 1 extended, 0 no
 * longer ours, -1 Redis failed, -2 Redis refused (r->errstr). */
int sr_device_lock_extend(struct sr_redis *r, const struct sr_config *cfg, const char *device,
    const char *token, long hold_ms);

#endif
