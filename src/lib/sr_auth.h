/* sr_auth.h - the API of sr_auth.c: the kinds of authentication, one table. */
#ifndef SR_AUTH_H
#define SR_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_profile.h"
#include "sr_request.h"

/* When a kind's check is asked, as sr_profile_check.c checks a profile. */
enum {
	SR_AUTH_CHECK_NAMES, /* the placeholders of its templates (after base and reqid's) */
	SR_AUTH_CHECK_PLACE, /* where its placeholders may go (after every template's names) */
	SR_AUTH_CHECK_NEEDS, /* the keys it needs (after the requests') */
};
/* When a kind's apply is asked, as a request is built (sr_request.c). */
enum {
	SR_AUTH_INIT,    /* the build begun, before any template is filled */
	SR_AUTH_SIGN,    /* the URL and body filled (b->url, b->body) */
	SR_AUTH_HEADERS, /* its header lines, appended to req (NULL: checked only) */
	SR_AUTH_CREDS,   /* the transfer's credentials, into req */
};

/* A kind of authentication (a row of the table, sr_auth.c):
 *   parse  a profile key of its own: 1 taken, 0 not its key, -1 with
 *          ps->err (sr_perr) when its value is bad;
 *   check  the whole profile at stage SR_AUTH_CHECK_*: 0, or -1 with ps->err;
 *   apply  its part of the request b builds at stage SR_AUTH_*: 0, or -1
 *          with b->err (and b->what: what was not built). */
struct sr_auth {
	const char *name;
	int (*parse)(struct sr_parse *ps, const char *key, char *v);
	int (*check)(struct sr_parse *ps, int stage);
	int (*apply)(struct sr_build *b, int stage, struct sr_request *req);
};

/* The kinds, in the order they are asked: each is sr_auth_NAME.c, which
 * defines sr_auth_NAME_parse, _check and _apply (declared here by this
 * list). To add a kind: write its file, and add X(NAME) here: that is its
 * row of the table. Its settings go in the profile's generic options
 * (sr_profile_opt, sr_profile_set_opt) unless a field is made for them.
 * Two things stay outside the kind's file: a key that may be given more
 * than once (as header is) is also named in sr_profile.c's parse_line,
 * and a placeholder of its own ({token}, {sign}) is sr_request.c's lookup
 * and sr_builtin_names'.
 *   header  header lines (header = Name: value): a bearer token
 *           ({token}), an API key ({secret.NAME})
 *   basic   HTTP Basic credentials (basic = user:password)
 *   token   a token fetched (token.*): its answer read, its lifetime
 *   sign    a request signature (sign, sign.*): made last, over the
 *           request as sent */
#define SR_AUTH_KINDS(X) X(header) X(basic) X(token) X(sign)

#define SR_AUTH_DECLARE(k) \
	int sr_auth_##k##_parse(struct sr_parse *ps, const char *key, char *v); \
	int sr_auth_##k##_check(struct sr_parse *ps, int stage); \
	int sr_auth_##k##_apply(struct sr_build *b, int stage, struct sr_request *req);
SR_AUTH_KINDS(SR_AUTH_DECLARE)
#undef SR_AUTH_DECLARE

extern const struct sr_auth sr_auths[];
extern const int sr_nauths;

/* Each kind asked in turn: a key taken by one (1), none (0), or -1. */
int sr_auth_parse(struct sr_parse *ps, const char *key, char *v);
/* Every kind's check at stage; -1 at the first that fails. */
int sr_auth_check(struct sr_parse *ps, int stage);
/* Every kind's apply at stage; -1 at the first that fails. */
int sr_auth_apply(struct sr_build *b, int stage, struct sr_request *req);

#endif
