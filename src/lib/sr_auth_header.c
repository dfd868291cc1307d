/* sr_auth_header.c - authentication in header lines: "header = Name:
 * value", as many as the carrier needs, each a template - a bearer token
 * (Authorization: Bearer {token}, the token fetched: sr_auth_token.c), an
 * API key (X-Api-Key: {api_key}, a secret.NAME). A header whose optional
 * secret is not set is left out.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "sr.h"

int
sr_auth_header_parse(struct sr_parse *ps, const char *key, char *v)
{
	struct sr_profile *p = ps->p;

	if (strcmp(key, "header"))
		return 0;
	if (!strchr(v, ':'))
		return sr_perr(ps, "%s", "header: the value is not 'Name: value'");
	sr_push_str(&p->headers, &p->nheaders, v);
	return 1;
}

/* (Its placeholders are checked with the requests': sr_profile_check.c.) */
int
sr_auth_header_check(struct sr_parse *ps, int stage)
{
	(void)ps;
	(void)stage;
	return 0;
}

int
sr_auth_header_apply(struct sr_build *b, int stage, struct sr_request *req)
{
	const struct sr_profile *p = b->e->acct->p;
	char hdr[2048];

	if (stage != SR_AUTH_HEADERS)
		return 0;
	for (int i = 0; i < p->nheaders; i++) {
		struct sr_buf hb = { hdr, 0, sizeof hdr };

		b->unset = 0;
		b->err[0] = '\0';
		if (sr_expand(p->headers[i], SR_CTX_HEADER, sr_build_lookup, b, &hb, b->err,
		    sizeof b->err) < 0) {
			if (b->unset && !strstr(b->err, "cannot read")) {
				b->err[0] = '\0';
				continue; /* an optional secret that is not set: no header */
			}
			b->what = "header not built";
			return -1;
		}
		if (req)
			sr_request_add_header(req, hdr);
	}
	return 0;
}
