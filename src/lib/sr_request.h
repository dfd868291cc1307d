/* sr_request.h - the API of sr_request.c: a request built from a profile. */
#ifndef SR_REQUEST_H
#define SR_REQUEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_gateway.h"
#include "sr_profile.h"
#include "sr_template.h"

/* The most of a request's URL, body or signed text. */
#define SR_REQ_MAX (16 * 1024)

/* What the kinds of authentication (sr_auth.c) add to a request besides
 * its URL and body. */
struct sr_request {
	char **headers;       /* header lines, copies (wiped when freed) */
	int nheaders;
	int basic;            /* HTTP Basic credentials: user and password */
	char user[1024];      /* the user, then (after its NUL) the password */
	const char *password;
};
/* A header line appended (a copy). */
void sr_request_add_header(struct sr_request *req, const char *line);
/* What req holds, wiped and freed. */
void sr_request_free(struct sr_request *req);

/* A request being built: what its placeholders are filled with. */
struct sr_build {
	struct sr_gateway *gw;
	struct sr_edge *e;
	struct sr_call *call; /* NULL for a token fetch */
	struct sr_call *rec;  /* the transfer it builds (a token fetch's too): its secrets noted */
	const char *action;
	char reqid[256], ts[16], ms[24], seq[16], nonce[40], ver[24], base[1024];
	char sign[160];
	char stand_in[160];   /* {sign} until it is made (see sr_build_request) */
	char params[SR_REQ_MAX];
	int have_sign, have_params, depth;
	int filling;          /* the request's URL and body are being expanded */
	int checking;         /* sr_edge_check: nothing is sent, a token stands in */
	int unset;            /* a placeholder had no value (an unset secret) */
	char err[200];
	const char *what;     /* what an authentication kind did not build (with err) */
	struct sr_buf *url, *body; /* the request's, once filled (to be signed) */
	char vbuf[4][1024];   /* set.NAME expansions */
	int nv;
};

/* Start building a request for call (NULL: the account's token fetch)
 * doing action: {ts}, {seq}, {nonce}, {sign}'s stand-in, {base}, {reqid};
 * an error left in b->err. */
void sr_build_init(struct sr_build *b, struct sr_gateway *gw, struct sr_edge *e,
    struct sr_call *call, const char *action);
/* The value of placeholder name in the request being built (arg: its
 * struct sr_build), as sr_expand asks it. */
const char *sr_build_lookup(void *arg, const char *name, int *raw);
enum { SR_BUILT, SR_NOT_BUILT, SR_NOT_SIGNED };
/* The request's URL into ub and body into bb, every placeholder filled,
 * {sign} last: SR_BUILT, or why not with b->err. */
int sr_build_request(struct sr_build *b, const struct sr_request_tmpl *t, struct sr_buf *ub,
    struct sr_buf *bb);
/* The request's header lines, and its credentials, by the kinds of
 * authentication (sr_auth.c): 0, or -1 with b->what and b->err. */
int sr_build_headers(struct sr_build *b, struct sr_request *req);
int sr_build_creds(struct sr_build *b, struct sr_request *req);
/* Whether a request carries its body (a GET sends none). */
int sr_sends_body(const struct sr_request_tmpl *t);
/* A secret that goes into the request, noted on the call it builds. */
void sr_build_note_secret(struct sr_build *b, const char *v);
/* The secrets a call's request carried, forgotten (wiped). */
void sr_call_forget_secrets(struct sr_call *c);
/* Every secret the call's request carried cut out of s (size bytes). */
void sr_call_redact(const struct sr_call *c, char *s, size_t size);
/* A secret.NAME's value for the account (NULL: not set; *failed with
 * b->err when it cannot be read). */
const char *sr_build_secret(struct sr_build *b, const struct sr_var *v, int *failed);

#endif
