/* sr_profile.h - the API of sr_profile.c. */
#ifndef SR_PROFILE_H
#define SR_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_config.h"

/* A carrier profile (README, "Carrier profiles"). Numbers are -1 when the
 * profile leaves them to the environment's defaults. */
#define SR_PROFILE_MAX (64 * 1024)
#define SR_RULE_HTTP_MAX 8
/* A profile's requests; sr_req_name[r] is the prefix of its keys
 * ("stop.url", "poll.method"). poll: an accepted change's order, by its
 * txn ({txn}). */
enum { SR_REQ_STOP, SR_REQ_RESUME, SR_REQ_QUERY, SR_REQ_TOKEN, SR_REQ_POLL, SR_REQ_COUNT };
extern const char *const sr_req_name[SR_REQ_COUNT];
enum { SR_BODY_NONE, SR_BODY_JSON, SR_BODY_FORM, SR_BODY_TEXT };
enum { SR_SIGN_NONE, SR_SIGN_MD5, SR_SIGN_SHA256, SR_SIGN_HMAC_SHA256 };
/* What a rule makes of an answer. */
enum sr_verdict {
	SR_V_OK, SR_V_ALREADY, SR_V_IN_PROGRESS, /* applied / in state / accepted, lands later */
	SR_V_THROTTLE, SR_V_TOO_FREQUENT, SR_V_REFUSED, /* not applied: account rate, card window, other */
	SR_V_FAIL, SR_V_UNKNOWN, SR_V_REAUTH,    /* permanent, may have applied, authentication */
};
struct sr_request_tmpl {
	char *method, *url, *body;
	int type; /* SR_BODY_*: how placeholders in the body are escaped, and its Content-Type */
};
struct sr_rule {
	long http_lo[SR_RULE_HTTP_MAX], http_hi[SR_RULE_HTTP_MAX];
	int nhttp;        /* none: any status */
	char **codes;     /* any of these business codes (none: any) */
	int ncodes;
	char *msg, *body; /* substrings of the message / the body, or NULL */
	int verdict, line;
};
struct sr_var {
	char *name, *value;
	int secret; /* secret.NAME: file:PATH, env:NAME or literal; never printed */
};
struct sr_profile {
	char *name, *path;
	char **accounts; /* fnmatch patterns */
	int naccounts;
	long qps, running, burst, interval_ms, timeout_ms, connect_timeout_ms;
	long connect_budget_ms, keepalive_ms, poll_ms, settle_ms, aimd_memory_ms;
	long brk_failures, brk_window_ms, brk_cool_ms, brk_cool_max_ms, token_ttl_s;
	double aimd_inc, aimd_beta, aimd_noise, brk_ratio;
	long reserve_qps; /* the account's calls a second kept for srq's own (sr-rate) */
	struct sr_share { char *cls; double share; } *shares; /* max_share ("*") and max_share.CLASS */
	int nshares;
	int async;
	char *base, *reqid, *basic;
	struct sr_request_tmpl req[SR_REQ_COUNT];
	char **headers;
	int nheaders;
	struct sr_var *vars;
	int nvars;
	char *token_field, *token_ttl_field;
	int sign, sign_upper;
	char *sign_input, *sign_key;
	char *code_path, *msg_path, *state_path, *txn_path, *state_active, *state_stopped;
	/* The carrier's codes for a card whose change is still under way
	 * (state.pending; NULL: none): a query observes "pending". */
	char *state_pending;
	/* Where a change's (card) and a query's (query.card, else card) answer
	 * names its card; a path ending in '?' is checked only when present. */
	char *card_path, *qcard_path;
	/* Order polling: where a poll's answer says how the order stands, the
	 * codes of each verdict (poll.done, .failed, .pending), and where it
	 * names its card and its order (checked as card is). */
	char *poll_state, *poll_done, *poll_failed, *poll_pending, *poll_card, *poll_txn;
	struct sr_rule *rules, *qrules; /* qrules: query.rule, when a profile gives them */
	int nrules, nqrules;
};
/* Parse a profile's text; NULL with err set ("FILE: line N: ...") when bad.
 * dir is where 'from = NAME' finds NAME.profile (the built-in 'default'
 * needs none). */
struct sr_profile *sr_profile_parse(const char *text, const char *name, const char *file,
    const char *dir, char *err, size_t errlen);
void sr_profile_free(struct sr_profile *p);
/* The profile serving an account: the first in SRQ_PROFILES (name order)
 * whose 'accounts' match it, else the built-in default. Profiles are loaded
 * on first use; a bad profile is a configuration error (exit 2). */
const struct sr_profile *sr_profile_for(const struct sr_config *cfg, const char *carrier);
const char *sr_verdict_name(int verdict);
/* A rule outcome's name (ok, already, ...) as its verdict; -1 if none. */
int sr_verdict_parse(const char *name);

/* An account's resolved settings: its profile's, then the environment's. */
struct sr_account {
	char id[65];
	const struct sr_profile *p;
	long qps, running, burst, interval_ms, window_ms, lease_ms, timeout_ms, connect_timeout_ms;
	long connect_budget_ms, keepalive_ms, poll_ms, settle_ms, confirm_delay_ms;
	long alert_after, freeze_after, audit_max, aimd_memory_ms;
	long brk_failures, brk_window_ms, brk_cool_ms, brk_cool_max_ms;
	double aimd_inc, aimd_beta, aimd_noise, brk_ratio;
	long reserve_qps; /* 0: none */
	char *settings; /* the same, as the JSON the scripts take */
	struct sr_account *next;
};
/* The account's settings (cached per process). Never NULL. */
const struct sr_account *sr_account(const struct sr_config *cfg, const char *carrier);
void sr_accounts_free(void);
/* A claim's lease (SRQ_LEASE_MS) must outlast a call's whole timeout
 * (SRQ_GATEWAY_TIMEOUT_MS, or a profile's timeout_ms) by this much, so that
 * the result of a call that ran its whole timeout reaches sr-confirm before
 * another pipeline may claim the card again. */
#define SR_LEASE_MARGIN_MS 1000
/* Whether it does under profile p: 0, or -1 with err naming both settings. */
int sr_lease_check(const struct sr_config *cfg, const struct sr_profile *p, char *err, size_t errlen);
/* The same for every profile (the default one and SRQ_PROFILES'). */
int sr_lease_check_all(const struct sr_config *cfg, char *err, size_t errlen);
/* sr_lease_check_all, or exit 2 with its message (the tools that take
 * leases or make calls under them: sr-claim, sr-exec). */
void sr_lease_require(const struct sr_config *cfg);

/* A bounded text buffer for expansions. */
struct sr_buf {
	char *s;
	size_t len, cap;
};
/* Where an expanded value goes, and so how it is escaped. */
enum { SR_CTX_RAW, SR_CTX_URL, SR_CTX_JSON, SR_CTX_FORM, SR_CTX_HEADER };
/* Give the value of placeholder name (NULL: unknown); *raw = 1 to insert it
 * unescaped (a base URL). */
typedef const char *sr_lookup_fn(void *arg, const char *name, int *raw);
/* Expand {name} placeholders of tmpl into out, each value escaped for ctx.
 * Anything else, JSON braces included, is copied as it is. -1 with err. */
int sr_expand(const char *tmpl, int ctx, sr_lookup_fn *lookup, void *arg, struct sr_buf *out,
    char *err, size_t errlen);

/* A carrier's answer, read by a profile's rules. */
struct sr_answer {
	int verdict;        /* enum sr_verdict */
	int rule;           /* the line of the matching rule (0: none matched) */
	char code[64], msg[160], txn[64];
	char raw_state[32]; /* queries: the carrier's state code */
	char observed[16];  /* queries: active, stopped or other */
	char order[12];     /* polls: done, failed, pending or other ("": not read) */
	char card[65];      /* the card the answer names (card, query.card), if any */
	int mismatch;       /* it names another card (1) or order (2, its txn in txn), or
	                     * none where it must: not believed */
	char unread[120];   /* why the answer was not read at all (unknown, no rule asked) */
};
/* What a request asked: how its answer is read. */
enum sr_ask { SR_ASK_CHANGE, SR_ASK_QUERY, SR_ASK_POLL };
/* Classify the answer to a request about card (a change, a status query,
 * or a poll of the order txn); body holds body_len bytes (and a NUL after
 * them). A poll is read with the query's rules, its order's state by
 * poll.state; it must name this card and order where the profile says
 * (poll.card, poll.txn). A status that is
 * not final (not 200..599) or a body holding a NUL byte is not read:
 * unknown, with unread saying why. An answer that would say how the card
 * stands (ok, already, accepted, a state) but names another card, or none
 * where the profile says it must, is unknown, its mismatch set: never
 * believed of this card. */
void sr_classify(const struct sr_profile *p, long http, const char *body, size_t body_len,
    enum sr_ask ask, const char *card, const char *txn, struct sr_answer *a);
/* A carrier's body as JSON (a byte order mark and white space before it
 * skipped, duplicate keys refused), or NULL when it holds none. */
json_t *sr_answer_json(const char *body);
/* The text at a small path of a JSON answer ("a.b", "a[0].b") or of an XML
 * one ("xml:Tag"). 1 when found. */
int sr_answer_field(json_t *j, const char *body, const char *path, char *out, size_t outlen);
/* The token of a token fetch's answer (token.field, not empty) and how long
 * it lives in s (token.ttl_field, else token.ttl_s, else 1800). 1 when the
 * answer holds one. */
int sr_token_read(const struct sr_profile *p, json_t *j, const char *body, char *tok, size_t toklen,
    long *ttl_s);

#endif
