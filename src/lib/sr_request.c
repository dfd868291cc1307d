/* sr_request.c - a request built from the account's profile: every
 * placeholder of its templates filled ({card}, {ts}, a set.NAME, a
 * secret.NAME), escaped for where it goes; and what the kinds of
 * authentication add (sr_auth.c: header lines, credentials, a signature
 * made last), asked at each step of the build.
 *
 * Secrets (tokens, passwords, app secrets) go into the request they are
 * read for only, each noted on the call so that what the carrier says back
 * is redacted of it; a URL that carries one is never printed.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "sr.h"

/* A secret that goes into the request, noted so that what the carrier says
 * back can be redacted (see sr_call_redact). */
void
sr_build_note_secret(struct sr_build *b, const char *v)
{
	struct sr_call *c = b->rec;

	if (!c || b->checking || !v || !*v ||
	    c->nsent_secrets == (int)(sizeof c->sent_secrets / sizeof c->sent_secrets[0]))
		return;
	for (int i = 0; i < c->nsent_secrets; i++)
		if (!strcmp(c->sent_secrets[i], v))
			return;
	c->sent_secrets[c->nsent_secrets++] = sr_strdup(v);
}

void
sr_call_forget_secrets(struct sr_call *c)
{
	for (int i = 0; i < c->nsent_secrets; i++) {
		sr_secret_wipe(c->sent_secrets[i]);
		c->sent_secrets[i] = NULL;
	}
	c->nsent_secrets = 0;
}

/* Every secret the request carried, cut out of what the carrier said back
 * (in every spelling srq sends it in, or a carrier writes it back in:
 * sr_redact.c). */
void
sr_call_redact(const struct sr_call *c, char *s, size_t size)
{
	sr_redact(s, size, c->sent_secrets, c->nsent_secrets);
}

/* A secret.NAME's value for this account (sr_secret.c), a file:PATH's
 * placeholders filled as the request's. */
const char *
sr_build_secret(struct sr_build *b, const struct sr_var *v, int *failed)
{
	return sr_secret_get(&b->e->secrets, &b->e->nsecrets, v->name, v->value, sr_build_lookup, b,
	    failed, b->err, sizeof b->err);
}

/* ------------------------------------------------------------ building requests */

static const char *
var_value(struct sr_build *b, const char *name, int *found)
{
	const struct sr_profile *p = b->e->acct->p;

	*found = 0;
	for (int i = 0; i < p->nvars; i++) {
		const struct sr_var *v = &p->vars[i];

		if (strcmp(v->name, name))
			continue;
		*found = 1;
		if (v->secret) {
			int failed = 0;
			const char *s = sr_build_secret(b, v, &failed);

			if (failed)
				return NULL;
			if (!s)
				b->unset = 1;
			sr_build_note_secret(b, s);
			return s;
		}
		if (b->depth > 4 || b->nv == 4) {
			snprintf(b->err, sizeof b->err, "set.%s: placeholders nested too deep", name);
			return NULL;
		} else {
			struct sr_buf out = { b->vbuf[b->nv], 0, sizeof b->vbuf[0] };
			const char *r;

			b->depth++;
			r = sr_expand(v->value, SR_CTX_RAW, sr_build_lookup, b, &out, b->err, sizeof b->err) < 0 ?
			    NULL : b->vbuf[b->nv++];
			b->depth--;
			return r;
		}
	}
	return NULL;
}

const char *
sr_build_lookup(void *arg, const char *name, int *raw)
{
	struct sr_build *b = arg;
	struct sr_call *c = b->call;
	int found;
	const char *v;

	*raw = 0;
	if (!strcmp(name, "card"))
		return c ? c->card : "";
	if (!strcmp(name, "carrier"))
		return b->e->acct->id;
	if (!strcmp(name, "txn"))
		return c ? c->txn : "";
	if (!strcmp(name, "action"))
		return b->action;
	if (!strcmp(name, "ver"))
		return b->ver;
	if (!strcmp(name, "reqid"))
		return b->reqid;
	if (!strcmp(name, "base")) {
		*raw = 1;
		return b->base;
	}
	if (!strcmp(name, "gateway")) {
		*raw = 1;
		return b->gw->cfg->gateway;
	}
	if (!strcmp(name, "token")) {
		if (b->checking)
			return "TOKEN";
		if (!b->e->token)
			snprintf(b->err, sizeof b->err, "{token} is used but the profile fetches none");
		sr_build_note_secret(b, b->e->token);
		return b->e->token;
	}
	if (!strcmp(name, "ts"))
		return b->ts;
	if (!strcmp(name, "ms"))
		return b->ms;
	if (!strcmp(name, "seq"))
		return b->seq;
	if (!strcmp(name, "nonce"))
		return b->nonce;
	if (!strcmp(name, "params")) {
		if (!b->have_params)
			snprintf(b->err, sizeof b->err, "{params} is only known once the request is built");
		return b->have_params ? b->params : NULL;
	}
	if (!strcmp(name, "sign")) {
		if (b->have_sign)
			return b->sign;
		if (b->filling && b->stand_in[0])
			return b->stand_in;
		snprintf(b->err, sizeof b->err, b->e->acct->p->sign ? "{sign} cannot be part of what is "
		    "filled before the request, or of what it signs" : "{sign} with no 'sign' to make it");
		return NULL;
	}
	v = var_value(b, name, &found);
	if (!found)
		snprintf(b->err, sizeof b->err, "unknown placeholder {%s}", name);
	else if (!v && b->unset && !b->err[0])
		snprintf(b->err, sizeof b->err, "secret.%s is not set", name);
	return v;
}

void
sr_build_init(struct sr_build *b, struct sr_gateway *gw, struct sr_edge *e, struct sr_call *call,
    const char *action)
{
	const struct sr_profile *p = e->acct->p;
	struct sr_buf out;
	struct timespec ts;
	struct tm tm;
	unsigned char rnd[8];

	memset(b, 0, sizeof *b);
	b->gw = gw;
	b->e = e;
	b->call = call;
	b->rec = call;
	b->action = action;
	snprintf(b->ver, sizeof b->ver, "%lld", call ? call->ver : 0LL);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(b->ts, sizeof b->ts, "%Y%m%d%H%M%S", &tm);
	snprintf(b->ms, sizeof b->ms, "%lld", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	/* {seq}: the account's call number from the gate, unique across every
	 * process; a token fetch (not gated) takes a random one. */
	if (call && call->seq > 0)
		snprintf(b->seq, sizeof b->seq, "%08lld", call->seq % 100000000LL);
	else {
		unsigned char r[4];

		if (RAND_bytes(r, sizeof r) != 1)
			memset(r, 0, sizeof r);
		snprintf(b->seq, sizeof b->seq, "%08lu",
		    (((unsigned long)r[0] << 24 | (unsigned long)r[1] << 16 | r[2] << 8 | r[3]) +
		    ++gw->seq) % 100000000UL);
	}
	if (RAND_bytes(rnd, sizeof rnd) != 1)
		memset(rnd, 0, sizeof rnd);
	for (size_t i = 0; i < sizeof rnd; i++)
		snprintf(b->nonce + 2 * i, 3, "%02x", rnd[i]);
	sr_auth_apply(b, SR_AUTH_INIT, NULL); /* (an error stays in b->err) */
	out = (struct sr_buf){ b->base, 0, sizeof b->base };
	if (sr_expand(p->base ? p->base : "{gateway}", SR_CTX_RAW, sr_build_lookup, b, &out, b->err,
	    sizeof b->err) < 0)
		return;
	out = (struct sr_buf){ b->reqid, 0, sizeof b->reqid };
	sr_expand(p->reqid ? p->reqid : "{card}-{ver}-{action}", SR_CTX_RAW, sr_build_lookup, b, &out, b->err,
	    sizeof b->err);
}

/* Whether a request carries its body: a GET sends none (see sr_http_start), so
 * none of its parameters reaches the carrier, and none is signed. */
int
sr_sends_body(const struct sr_request_tmpl *t)
{
	return t->body && strcmp(t->method, "GET");
}

/* {params} of the request being built (sr_sign.c): the signature's own
 * parameter, the one that holds {sign}'s stand-in, left out. */
static void
collect_params(struct sr_build *b, const char *url, const char *body, int type)
{
	b->have_params = sr_params(url, body, type, b->stand_in, b->params, sizeof b->params) == 0;
}

/* A request's URL and body (the body expanded even when a GET does not
 * send it), every placeholder filled, {sign} last: the templates are
 * expanded with a stand-in for it, {params} is read from what they hold
 * (leaving out the parameter that holds the stand-in: the signature's
 * own), the signature is made of them, and put in the stand-in's place.
 * So it is made over the request as sent, wherever it goes. */
int
sr_build_request(struct sr_build *b, const struct sr_request_tmpl *t, struct sr_buf *ub,
    struct sr_buf *bb)
{
	int ok;

	bb->len = 0;
	bb->s[0] = '\0'; /* none: nothing to sign in it, no stand-in */
	b->filling = 1;
	ok = !b->err[0] && sr_expand(t->url, SR_CTX_URL, sr_build_lookup, b, ub, b->err, sizeof b->err) == 0 &&
	    (!t->body || sr_expand(t->body, t->type == SR_BODY_FORM ? SR_CTX_FORM :
	    t->type == SR_BODY_JSON ? SR_CTX_JSON : SR_CTX_RAW, sr_build_lookup, b, bb, b->err,
	    sizeof b->err) == 0);
	b->filling = 0;
	if (!ok)
		return SR_NOT_BUILT;
	collect_params(b, ub->s, sr_sends_body(t) ? bb->s : NULL, t->type);
	b->url = ub;
	b->body = bb;
	if (sr_auth_apply(b, SR_AUTH_SIGN, NULL) < 0)
		return SR_NOT_SIGNED;
	return SR_BUILT;
}

int
sr_build_headers(struct sr_build *b, struct sr_request *req)
{
	return sr_auth_apply(b, SR_AUTH_HEADERS, req);
}

int
sr_build_creds(struct sr_build *b, struct sr_request *req)
{
	return sr_auth_apply(b, SR_AUTH_CREDS, req);
}

void
sr_request_add_header(struct sr_request *req, const char *line)
{
	req->headers = sr_realloc(req->headers, (size_t)(req->nheaders + 1) * sizeof *req->headers);
	req->headers[req->nheaders++] = sr_strdup(line);
}

void
sr_request_free(struct sr_request *req)
{
	for (int i = 0; i < req->nheaders; i++)
		sr_secret_wipe(req->headers[i]);
	free(req->headers);
	req->headers = NULL;
	req->nheaders = 0;
	memset(req->user, 0, sizeof req->user);
	req->password = NULL;
	req->basic = 0;
}
