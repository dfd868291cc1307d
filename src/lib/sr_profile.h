/* sr_profile.h - the API of sr_profile.c: a carrier profile and its parsing. */
#ifndef SR_PROFILE_H
#define SR_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_config.h"

/* A carrier profile (docs/carriers.md, "Carrier profiles"). Numbers are -1 when the
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
#define SR_VERDICTS(X) \
	/* applied / in state / accepted, lands later */ \
	X(SR_V_OK, "ok") X(SR_V_ALREADY, "already") X(SR_V_IN_PROGRESS, "in_progress") \
	/* not applied: account rate, card window, other */ \
	X(SR_V_THROTTLE, "throttle") X(SR_V_TOO_FREQUENT, "too_frequent") X(SR_V_REFUSED, "retry") \
	/* permanent, may have applied, authentication */ \
	X(SR_V_FAIL, "fail") X(SR_V_UNKNOWN, "unknown") X(SR_V_REAUTH, "reauth")
#define SR_V_ENUM(e, name) e,
enum sr_verdict { SR_VERDICTS(SR_V_ENUM) };
#undef SR_V_ENUM
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
	/* The settings of an authentication kind that has no field here
	 * (sr_auth.h): its keys and their values. */
	struct sr_var *opts;
	int nopts;
};
/* Parse a profile's text; NULL with err set ("FILE: line N: ...") when bad.
 * dir is where 'from = NAME' finds NAME.profile (the built-in 'default'
 * needs none). */
struct sr_profile *sr_profile_parse(const char *text, const char *name, const char *file,
    const char *dir, char *err, size_t errlen);
void sr_profile_free(struct sr_profile *p);

/* An authentication kind's setting key (sr_auth.h): its value, or NULL
 * when the profile (or its base) sets none; set (over a base's). */
const char *sr_profile_opt(const struct sr_profile *p, const char *key);
void sr_profile_set_opt(struct sr_profile *p, const char *key, const char *v);

/* Placeholders every request knows (NULL-terminated); a set. or secret.
 * name may not shadow them. */
extern const char *const sr_builtin_names[];

/* A profile being parsed: the parts of it (sr_profile_load.c's 'from',
 * sr_rule.c, sr_profile_check.c, an authentication kind's keys) report an
 * error through it. */
struct sr_parse {
	struct sr_profile *p;
	const char *file, *dir;
	int line, depth;
	char err[300];
	char **seen; /* the keys this file set (a repeatable key: its first line) */
	int *seen_line;
	int nseen;
};
/* Parse text into ps->p (its keys over what it holds); -1 with ps->err. */
int sr_profile_parse_text(struct sr_parse *ps, const char *text);
/* The error "FILE: line N: " and fmt with arg (a name, never a value) in
 * ps->err; returns -1. */
int sr_perr(struct sr_parse *ps, const char *fmt, const char *arg);
/* A bounded integer or number for key; -1 with an error when out of
 * [lo, hi] or not a number. */
int sr_pnum(struct sr_parse *ps, const char *key, const char *v, long lo, long hi, long *out);
int sr_preal(struct sr_parse *ps, const char *key, const char *v, double lo, double hi, double *out);
/* s, white space cut from both ends (in place). */
char *sr_trim(char *s);
/* Append a copy of s to the list *v of *n. */
void sr_push_str(char ***v, int *n, const char *s);

#endif
