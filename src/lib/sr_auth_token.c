/* sr_auth_token.c - a token fetched from the carrier: "token.url" (and
 * .method, .body, .type: the request, a profile's fifth), "token.field"
 * (where its answer holds the token), "token.ttl_field" or "token.ttl_s"
 * (how long it lives). One fetch for every call waiting on it, renewed
 * before it dies, fetched again when the carrier refuses it; it goes where
 * the profile's templates put {token} (a header: sr_auth_header.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "sr.h"

int
sr_auth_token_parse(struct sr_parse *ps, const char *key, char *v)
{
	struct sr_profile *p = ps->p;
	char **str = !strcmp(key, "token.field") ? &p->token_field :
	    !strcmp(key, "token.ttl_field") ? &p->token_ttl_field : NULL;

	if (str) {
		free(*str);
		*str = sr_strdup(v);
		return 1;
	}
	if (!strcmp(key, "token.ttl_s"))
		return sr_pnum(ps, key, v, 1, 86400 * 30, &p->token_ttl_s) < 0 ? -1 : 1;
	return 0;
}

int
sr_auth_token_check(struct sr_parse *ps, int stage)
{
	const struct sr_profile *p = ps->p;

	if (stage != SR_AUTH_CHECK_NEEDS)
		return 0;
	if (p->req[SR_REQ_TOKEN].url && !p->token_field)
		return sr_perr(ps, "%s", "token.url needs token.field (where the token is in the answer)");
	if (p->req[SR_REQ_TOKEN].url && !p->req[SR_REQ_TOKEN].method)
		return sr_perr(ps, "%s", "token.url needs token.method");
	return 0;
}

/* (The token goes in through {token}: sr_request.c's lookup.) */
int
sr_auth_token_apply(struct sr_build *b, int stage, struct sr_request *req)
{
	(void)b;
	(void)stage;
	(void)req;
	return 0;
}

/* A token fetch that failed is not tried again before this (the breaker,
 * opened by the calls it failed, holds the account meanwhile). */
#define AUTH_RETRY_MS 5000

void
sr_token_forget(struct sr_edge *e)
{
	sr_secret_wipe(e->token);
	e->token = NULL;
}

/* ------------------------------------------------------------ authentication */

int
sr_edge_ready(struct sr_gateway *gw, struct sr_edge *e)
{
	const struct sr_profile *p = e->acct->p;

	if (e->auth_failed && sr_mono_ms() < e->auth_failed_until)
		return -1;
	e->auth_failed = 0; /* a failed authentication is tried again after a while */
	if (!p->req[SR_REQ_TOKEN].url)
		return 1;
	if (e->token && sr_mono_ms() < e->token_until)
		return 1;
	if (!e->fetch) {
		/* One fetch for every call that waits on it: no stampede. */
		e->fetch = sr_malloc(sizeof *e->fetch);
		memset(e->fetch, 0, sizeof *e->fetch);
		snprintf(e->fetch->carrier, sizeof e->fetch->carrier, "%s", e->acct->id);
		e->fetch->is_fetch = 1;
		e->fetch->edge = e;
		sr_token_forget(e);
		if (sr_http_start(gw, e, e->fetch) < 0) {
			snprintf(e->auth_error, sizeof e->auth_error, "%s", e->fetch->error);
			e->auth_class = "auth";
			e->auth_failed = 1;
			e->auth_failed_until = sr_mono_ms() + AUTH_RETRY_MS;
			sr_call_cleanup(e->fetch);
			free(e->fetch);
			e->fetch = NULL;
			return -1;
		}
	}
	return 0;
}

void
sr_edge_reauth(struct sr_edge *e, int gen)
{
	if (e->auth_gen != gen)
		return; /* another call re-authenticated already */
	e->auth_gen++;
	e->auth_failed = 0;
	e->auth_error[0] = '\0';
	sr_token_forget(e);
	sr_secrets_free(&e->secrets, &e->nsecrets); /* files are read again */
}

void
sr_token_fetched(struct sr_edge *e, CURLcode rc, long http)
{
	const struct sr_profile *p = e->acct->p;
	struct sr_call *f = e->fetch;
	json_t *j = sr_answer_json(f->body);
	char tok[2048] = "", ttl[32] = "", msg[160] = "";
	long ttl_s;

	/* The carrier unreachable or failing is not a refused login: those
	 * calls were not sent (the breaker counts them), they did not fail to
	 * authenticate (which opens it at once). */
	e->auth_class = rc != CURLE_OK || http >= 500 ? "not_sent" : "auth";
	if (rc != CURLE_OK)
		snprintf(e->auth_error, sizeof e->auth_error, "token fetch failed: %s",
		    curl_easy_strerror(rc));
	else if (!sr_token_read(p, j, f->body, tok, sizeof tok, &ttl_s)) {
		sr_answer_field(j, f->body, p->msg_path, msg, sizeof msg);
		sr_answer_field(j, f->body, p->code_path, ttl, sizeof ttl);
		snprintf(e->auth_error, sizeof e->auth_error, "token fetch refused: HTTP %ld%s%s%s%s",
		    http, ttl[0] ? " " : "", ttl, msg[0] ? " " : "", msg);
		sr_call_redact(f, e->auth_error, sizeof e->auth_error);
	} else {
		e->token = sr_strdup(tok);
		/* Renewed a little early, so no call goes out on a token about to die. */
		e->token_until = sr_mono_ms() + ttl_s * 900;
		e->fetches++;
	}
	memset(tok, 0, sizeof tok);
	json_decref(j);
	if (!e->token) {
		e->auth_failed = 1;
		e->auth_failed_until = sr_mono_ms() + AUTH_RETRY_MS;
	}
	sr_call_cleanup(f);
	free(f);
	e->fetch = NULL;
}

int
sr_token_read(const struct sr_profile *p, json_t *j, const char *body, char *tok, size_t toklen,
    long *ttl_s)
{
	char ttl[32];

	*ttl_s = p->token_ttl_s > 0 ? p->token_ttl_s : 1800;
	if (!sr_answer_field(j, body, p->token_field, tok, toklen) || !tok[0])
		return 0;
	if (sr_answer_field(j, body, p->token_ttl_field, ttl, sizeof ttl) && sr_parse_long(ttl) > 0)
		*ttl_s = sr_parse_long(ttl);
	return 1;
}
