/* gwsim.h - what sr-gwsim's files share: a request as asked and decided,
 * the cards, the settings, and each file's functions the others call.
 *
 * The files, one job each: main.c (options, start-up and shutdown),
 * usage.c (--help), http.c (libmicrohttpd's callbacks, arrivals, a
 * request's way from parse to answer, the shapes' table), admit.c (the
 * accounts' rate and calls in flight), cards.c (the cards' states),
 * decide.c (what the carrier decides, the log), applier.c (changes that
 * land later, their orders), control.c (/_sim/set), sign.c (what the
 * signing shapes sign), and api_NAME.c for each API shape: what a request
 * asks and how a verdict is said.
 *
 * One lock, mu, guards the carrier's state: the cards, the accounts, the
 * pending changes and orders, the tokens, the fault generator and the
 * settings /_sim/set changes.
 */
#ifndef GWSIM_H
#define GWSIM_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <microhttpd.h>

#include "sr.h"

enum state { ST_ACTIVE, ST_STOPPED, ST_RETIRED };
extern const char *const state_name[]; /* active, stopped, retired */

enum kind { K_STOP, K_RESUME, K_STATUS, K_APPLY, K_TOKEN, K_ORDER };

/* What the carrier decided about a request, whatever the API shape. */
enum verdict {
	V_NONE,         /* not decided yet */
	V_OK,           /* changed; for a query, the state */
	V_ALREADY,      /* the card was (or will be) in the asked state already */
	V_ACCEPTED,     /* --async-ms: the change lands later */
	V_TOO_FREQUENT, /* inside the card's interval */
	V_RATE,         /* over the account's rate (or the 429 fault): refused */
	V_AUTH,         /* bad or missing credentials (or token): refused */
	V_BEARER,       /* no good --token-file bearer: refused at the door */
	V_NOT_ALLOWED,  /* a permanent rejection (retired card, --fault-reject) */
	V_INTERNAL,     /* 5xx */
};

struct card {
	char id[65], carrier[65];
	enum state state;
	enum state will;     /* once its pending changes (--async-ms) have landed */
	int64_t last_change; /* last accepted change call, ms */
};

enum rate_mode { RM_SLIDING, RM_FIXED, RM_BUCKET };
extern const char *const rate_mode_name[]; /* sliding, fixed, bucket */

/* One HTTP request being received. */
struct ctx {
	int64_t arrived;
	char *body;
	size_t len;
};

/* One request, as asked and as decided. */
struct call {
	enum kind kind;
	char card[65], carrier[65], key[160], txn[24];
	char named[65];   /* the card its answer names: its own, but for --fault-other-card */
	enum state said;  /* the state a query's answer says: the named card's */
	int said_pending; /* --pending-state: the named card's change has not landed */
	int64_t arrived;
	enum verdict v;
	enum state state; /* the card's, after the request */
	int applied, drop, slow;
	const char *fault;
	char token[33];   /* K_TOKEN: the one issued */
	const char *order; /* K_ORDER: pending, done or failed; NULL: no such order */
	char named_txn[24]; /* the order its answer names: its own, but for --fault-other-order */
};

/* How a verdict is said on the wire. */
struct answer {
	int http;
	char body[512];
	const char *code; /* for the log */
	const char *type; /* Content-Type; NULL: JSON */
	int retry_after;
};

/* An API shape (--profile NAME): where the account of a call comes from,
 * what a request asks (parse: 0, or the HTTP status of a malformed
 * request, its body in *bad), how each verdict is said (answer), and what
 * it needs of the options, checked once they are all read (setup; NULL:
 * nothing). A shape is one file, api_NAME.c, defining shape_NAME: one
 * name on the line below and one row of shapes[] in http.c. */
struct shape {
	const char *name;
	int (*parse)(struct MHD_Connection *con, const char *method, const char *url,
	    const struct ctx *cx, struct call *c, const char **bad);
	void (*answer)(const struct call *c, struct answer *a);
	void (*setup)(void);
};
extern const struct shape shape_default, shape_onelink, shape_cisco, shape_ctcmp, shape_ct5gcmp;

/* The settings, as the options give them (main.c); /_sim/set changes
 * qps, fail_account, token_ttl_ms and porder_failed mid-run, under mu. */
extern pthread_mutex_t mu;
extern const struct shape *shape; /* --profile */
extern FILE *log_file;
extern long qps, interval_ms, latency_ms, slow_ms, retry_after_s;
extern enum rate_mode rate_mode;
extern long burst; /* bucket capacity; -1: follows qps */
extern long max_inflight;
extern double p429, preject, p5xx_before, p5xx_after, pdrop_after, ptimeout_after, pother_card;
extern double porder_failed, pother_order;
extern int throttle_in_body;
extern char other_card[65]; /* --other-card */
extern unsigned seed, jitter_seed; /* jitter draws leave the faults' sequence alone */
extern long conn_delay_ms, jitter_ms;
extern long async_ms;
extern const char *pending_state; /* --pending-state: NULL, none */
extern char *token;     /* --token-file */
extern char *password;  /* --password-file */
extern char *sign_key;  /* --sign-key-file, as last read (key_now) */
extern const char *sign_key_path;
extern long token_ttl_ms;
extern char fail_account[65]; /* every call of this account: 500 */

/* usage.c */
extern const char usage[];

/* http.c */
int64_t now_ms(void);
enum MHD_Result reply(struct MHD_Connection *con, int http, const char *body, int retry_after);
void id_copy(char *dst, const char *src);
int bearer_ok(struct MHD_Connection *con);
int answer_outside(const struct call *c, struct answer *a);
const struct shape *shape_find(const char *name);
struct MHD_Daemon *serve(long port);

/* admit.c (caller holds mu; release takes it) */
const char *admit(const char *carrier, int64_t t);
void release(const char *carrier);
void accounts_free(void);

/* cards.c */
struct card *card_get(const char *id, const char *carrier);
void load_cards(const char *path);
void cards_free(void);

/* decide.c (caller holds mu) */
double coin(void);
void decide(struct call *c);
void name_card(struct call *c);
void log_call(const struct call *c, const struct answer *a);

/* applier.c */
extern char txn_prefix; /* T<n>; OneLink says jobId J<n> */
void schedule(struct call *c, enum state want, int fails);
void apply_due(int64_t now);
void decide_order(struct call *c);
int applier_start(void);
void applier_stop(void);
void applier_free(void);

/* control.c */
enum MHD_Result control(struct MHD_Connection *con, const char *method, const char *url);

/* sign.c */
size_t signed_params(struct MHD_Connection *con, char *text, size_t size);
void key_now(char *out, size_t n);
void need_sign_key(void);

/* api_onelink.c: its tokens */
void token_issue(struct call *c);
void tokens_free(void);

#endif
