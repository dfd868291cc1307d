/* sr_gateway.h - the API of sr_gateway.c: the gateway client, a call, and
 * an account's side of the client. */
#ifndef SR_GATEWAY_H
#define SR_GATEWAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include <curl/curl.h>

#include "sr_account.h"
#include "sr_config.h"
#include "sr_outcome.h"
#include "sr_profile.h"

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
	struct sr_secret *secrets; /* its profile's, as read (sr_secret.c) */
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

/* The client: its parts (sr_http.c, sr_pace.c, sr_request.c) share it. */
#define SR_EDGE_BUCKETS 64
struct sr_gateway {
	CURLM *multi;
	const struct sr_config *cfg;
	struct sr_edge *edges[SR_EDGE_BUCKETS];
	struct sr_origin *origins;
	struct sr_call **failed; /* calls that could not be built: done at once */
	int nfailed, capfailed;
	int running;
	unsigned long seq;
};
struct sr_gateway *sr_gateway_new(const struct sr_config *cfg);
void sr_gateway_free(struct sr_gateway *gw);
/* The account's side of the client (made on first use). */
struct sr_edge *sr_gateway_edge(struct sr_gateway *gw, const char *carrier);
/* Every account's side made so far: the first (e NULL), or the one after e;
 * NULL after the last. */
struct sr_edge *sr_gateway_edge_next(struct sr_gateway *gw, struct sr_edge *e);

#endif
