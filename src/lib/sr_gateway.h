/* sr_gateway.h - the API of sr_gateway.c. */
#ifndef SR_GATEWAY_H
#define SR_GATEWAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_config.h"
#include "sr_profile.h"
#include "sr_redis.h"

/* What a process knows of one Redis server's clock against its monotonic
 * clock (sr_clock.c): bounds of offset = redis_ms - mono_ms, as of mono ms
 * at. */
struct sr_clock {
	int known;
	double lo, hi;
	int64_t at;
	long long since;      /* Redis ms of the last reading within the bounds */
	int stepped;          /* a forward step seen, not yet recorded */
	long step_lo, step_hi;
	long long step_since;
	/* every step this process saw, added up, and when the last was seen
	 * (mono ms): an account first gated since then was not recorded */
	long seen_lo, seen_hi;
	long long seen_since;
	int64_t seen_at;
};

/* Outcome classes of one gateway call: the "outcome" of a result record. */
enum sr_outcome {
	SR_OUT_OK, SR_OUT_ALREADY, SR_OUT_RETRY, SR_OUT_FAIL, SR_OUT_UNKNOWN,
	SR_OUT_SUPERSEDED, SR_OUT_BLOCKED,
};
const char *sr_outcome_name(enum sr_outcome o);

struct sr_edge;

struct sr_call {
	/* in */
	char card[65], carrier[65], action[8]; /* action: stop, resume, status, poll */
	long long ver;
	long long seq;          /* the account's call number from the gate ({seq}; 0: none) */
	void *user;
	/* out */
	enum sr_outcome outcome;
	const char *class;      /* a retry: throttled, too_frequent, refused, not_sent, auth;
	                         * an unknown: mismatch (the answer was about another card) */
	int verdict;            /* what the profile's rules said (SR_V_*), -1 before an answer */
	int in_progress;        /* ok, but the carrier only accepted the change */
	long http;
	char error[160];
	char observed[16];      /* for status: active/stopped/other */
	char raw_state[32], txn[64]; /* txn: a poll's order (in), else what a change's answer said */
	char order[12];         /* a poll's: done, failed, pending, other, or "" (not read) */
	char answer_card[65];   /* the card the answer named ("": none); with class
	                         * "mismatch", the one it was not believed of */
	long long retry_after_ms;
	long long ms;           /* duration of the call */
	int auth_gen;           /* the account's authentication it went out with */
	int cold;               /* it set up a new connection */
	/* private */
	struct sr_edge *edge;
	struct sr_origin *origin;
	int is_fetch, conn_close;
	int sends;              /* times libcurl was about to send the request */
	long status_seen;       /* the status of the last status line read (0: none) */
	int headers_done;       /* that answer's headers were read to their end */
	int local_fail;         /* not sent for a reason of ours: its request could not be built */
	char *sent_secrets[8];  /* copies of the secrets the request carries: redacted from
	                         * what the carrier says back (zeroed and freed at cleanup) */
	int nsent_secrets;
	void *easy, *headers;
	char *body, *reqbody;
	size_t body_len, reqlen, reqoff;
	int body_cut;           /* the answer's body ran past what is kept: not read */
	int64_t started;
};

/* The connections to one origin (scheme://host:port). libcurl keeps one pool
 * for the process and hands any idle connection to the next call to the same
 * origin, whatever its account: whether a call leaves on a warm connection is
 * a property of the origin's traffic, so it is counted here. */
#define SR_ORIGIN_CONNS 256
struct sr_origin {
	char name[200];
	int running;          /* calls running to it, all accounts */
	struct { long port; int64_t used; } conns[SR_ORIGIN_CONNS]; /* connections known alive */
	int nconns;
	struct sr_origin *next;
};

/* One account's side of the client: what it learned of its connections'
 * setup, its authentication. */
struct sr_edge {
	const struct sr_account *acct;
	struct sr_origin *origin; /* where its last call went (NULL: none yet) */
	int held;             /* calls holding a slot, not started yet (kept by the caller) */
	int running;          /* calls running */
	long cold_ms;         /* how much later than sent a call on a new connection may leave */
#define SR_EDGE_SETUPS 8
	long setups[SR_EDGE_SETUPS]; /* the last new connections' setup times, ms */
	int nsetups;
	long warm_ms;         /* the quickest answer on a warm connection (-1: none yet) */
	/* authentication */
	int auth_gen;         /* bumped by each re-authentication */
	int auth_failed;
	int64_t auth_failed_until; /* then a new fetch may be tried */
	const char *auth_class;    /* its calls' class: auth (refused), not_sent (unreachable) */
	char auth_error[200];
	char *token;          /* a fetched token, and until when it is used (mono ms) */
	int64_t token_until;
	long fetches;         /* tokens fetched */
	struct sr_call *fetch; /* the token fetch in flight */
	struct secret *secrets;
	int nsecrets;
	/* the Redis server's clock (sr_clock.c) */
	int clock_node;       /* the node its last gate ran on (-1: none yet) */
	int step;             /* a forward step of its clock seen, not yet recorded */
	long step_lo, step_hi;
	long long step_since;
	int saved_state;      /* the clock an earlier process saved: 0 not asked, 1 asked */
	struct sr_clock saved; /* known: for its first reading */
	/* How late its calls leave (sr_edge_late): a histogram of the lateness
	 * at send, in SR_LATE_BIN_MS steps, per ten seconds for the last minute;
	 * its p99 is the headroom reported to the account's edge. */
	struct sr_late_slice *late;  /* SR_LATE_SLICES of them, made on first use */
	long hr_sent;                /* the headroom last reported (0: none) */
	int64_t hr_sent_at;          /* when (mono ms) */
	struct sr_edge *next;
};

struct sr_gateway;
struct sr_gateway *sr_gateway_new(const struct sr_config *cfg);
void sr_gateway_free(struct sr_gateway *gw);
/* The account's side of the client (made on first use). */
struct sr_edge *sr_gateway_edge(struct sr_gateway *gw, const char *carrier);
/* Every account's side made so far: the first (e NULL), or the one after e;
 * NULL after the last. */
struct sr_edge *sr_gateway_edge_next(struct sr_gateway *gw, struct sr_edge *e);
/* How much later than its slot the account's next call may leave: 0 when a
 * warm connection is idle for it, else the setup time of a new one. */
long sr_edge_spread(struct sr_edge *e);
/* Right before a call leaves: if it leaves SR_LATE_MS or more after its
 * slot (mono ms) - a new connection to set up, or a late send - move the
 * account's pace by that much (late.lua), so the rate accounts for when it
 * really leaves. The send's lateness is counted too, and its p99 over the
 * last minute (SR_HR_MIN_MS..SR_HR_MAX_MS) is reported as the account's
 * headroom when it changes (at most once a second) and every 20 s while it
 * is above the floor, in the same round trip. -1 if Redis failed. */
#define SR_LATE_MS 3
#define SR_LATE_SLICES 6
#define SR_LATE_SLICE_MS 10000
#define SR_LATE_BIN_MS 5
#define SR_HR_MAX_MS 200
#define SR_LATE_BINS (SR_HR_MAX_MS / SR_LATE_BIN_MS + 1)
struct sr_late_slice {
	int64_t start; /* mono ms / SR_LATE_SLICE_MS */
	unsigned n[SR_LATE_BINS];
};
int sr_edge_late(struct sr_redis *r, const struct sr_config *cfg, struct sr_edge *e, int64_t slot);
/* Authentication: 1 ready, 0 waiting for a token (its fetch is started:
 * one for every waiting call), -1 failed (e->auth_error). */
int sr_edge_ready(struct sr_gateway *gw, struct sr_edge *e);
/* The carrier refused a call sent with authentication gen: re-authenticate
 * (secret files read again, a new token fetched), once for every call in
 * flight with that gen. */
void sr_edge_reauth(struct sr_edge *e, int gen);
/* Start a call (non-blocking). A request that cannot be built (a secret
 * file missing, a template error) finishes at once as retry/not_sent. */
void sr_gateway_start(struct sr_gateway *gw, struct sr_call *call);
/* Run transfers for up to timeout_ms (returns early when one finishes);
 * extra_fd >= 0 is also waited on. Returns finished calls one by one through
 * sr_gateway_done. */
void sr_gateway_poll(struct sr_gateway *gw, int timeout_ms, int extra_fd);
struct sr_call *sr_gateway_done(struct sr_gateway *gw);
int sr_gateway_running(struct sr_gateway *gw);
/* Check an account's profile as it would be used: every secret resolved
 * (reported as set, not set, or why it cannot be read; never its value),
 * every request built and sent nowhere. Fills report; -1 if any failed. */
int sr_edge_check(struct sr_gateway *gw, struct sr_edge *e, json_t *report);

#endif
