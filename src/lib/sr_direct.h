/* sr_direct.h - the API of sr_direct.c. */
#ifndef SR_DIRECT_H
#define SR_DIRECT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_config.h"
#include "sr_gateway.h"
#include "sr_redis.h"

/* One request executed on the spot (switch off). */
struct sr_dlock; /* sr_direct.c's */
struct sr_direct {
	/* in */
	const char *card, *carrier, *action; /* action: stop or resume */
	const char *device; /* take this device's lock first (device-level reason), or NULL */
	long long ver;      /* for the request id: card-ver-action */
	/* out */
	int ok;             /* the card is in the target state */
	int tries;          /* state-change calls made */
	char outcome[16], error[160];
	char unrecorded[200]; /* ok, but its status fact not written: why ('' written) */
	/* private */
	int state, queries, query_next, reauthed, resend;
	int to_record;      /* the answer says the card is there: its status is to write */
	struct sr_dlock *lk; /* the run's lock of its device, or NULL */
	const char *kind;   /* of the call in flight: call, query, resend */
	long long gated;    /* when its slot was granted (Redis ms) */
	long long slot;     /* the slot: the card's last call while it is in flight */
	char prev_call[24]; /* the card's last call before it ('' if none) */
	int64_t wake, started;
	struct sr_call call;
};
/* Run every request to its end: up to 3 tries 2 s apart, each through
 * direct_gate.lua; -1 if Redis failed (requests left unfinished). */
int sr_direct_run(struct sr_redis *r, struct sr_gateway *gw, const struct sr_config *cfg,
    struct sr_direct **v, int n);
/* After a run that failed: d's call was at the carrier (its result unknown). */
int sr_direct_in_flight(const struct sr_direct *d);

#endif
