/* sr_auth_basic.c - HTTP Basic authentication: "basic = user:password", a
 * template (its password a secret.NAME), given to libcurl as the
 * transfer's credentials.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "sr.h"

int
sr_auth_basic_parse(struct sr_parse *ps, const char *key, char *v)
{
	struct sr_profile *p = ps->p;

	if (strcmp(key, "basic"))
		return 0;
	free(p->basic);
	p->basic = sr_strdup(v);
	return 1;
}

int
sr_auth_basic_check(struct sr_parse *ps, int stage)
{
	if (stage == SR_AUTH_CHECK_NAMES)
		return sr_profile_check_names(ps, "basic", ps->p->basic);
	return 0;
}

int
sr_auth_basic_apply(struct sr_build *b, int stage, struct sr_request *req)
{
	const struct sr_profile *p = b->e->acct->p;
	struct sr_buf ab = { req ? req->user : NULL, 0, req ? sizeof req->user : 0 };
	char *colon;

	if (stage != SR_AUTH_CREDS || !p->basic || !req)
		return 0;
	b->err[0] = '\0';
	if (sr_expand(p->basic, SR_CTX_RAW, sr_build_lookup, b, &ab, b->err, sizeof b->err) < 0 ||
	    !(colon = strchr(req->user, ':'))) {
		if (!b->err[0])
			snprintf(b->err, sizeof b->err, "no ':'");
		b->what = "basic credentials not built";
		memset(req->user, 0, sizeof req->user);
		return -1;
	}
	{
		/* What goes on the wire, and what a carrier echoes
		 * ("Basic dXNlcj..."): base64 of user:password. */
		unsigned char b64[4 * (sizeof req->user / 3 + 1) + 1];

		EVP_EncodeBlock(b64, (const unsigned char *)req->user, (int)strlen(req->user));
		sr_build_note_secret(b, (const char *)b64);
		memset(b64, 0, sizeof b64);
	}
	*colon = '\0';
	req->password = colon + 1;
	req->basic = 1;
	return 0;
}
