/* sr_auth_sign.c - a request signature: "sign = md5 | sha256 |
 * hmac-sha256" over "sign.input" (a template: {params}, {ts}, a secret),
 * keyed by "sign.key" for hmac, in "sign.case" hex; {sign} put where the
 * profile says (URL, body, a header, the Basic credentials).
 *
 * {sign} is made last, over the request as sent (docs/carriers.md, Signed requests):
 * the templates are filled with a stand-in for it (random hex as long as
 * the signature), {params} read from them, the signature made and put in
 * the stand-in's place. What it is made of: sr_sign.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "sr.h"

int
sr_auth_sign_parse(struct sr_parse *ps, const char *key, char *v)
{
	struct sr_profile *p = ps->p;
	char **str = !strcmp(key, "sign.input") ? &p->sign_input : !strcmp(key, "sign.key") ?
	    &p->sign_key : NULL;

	if (str) {
		free(*str);
		*str = sr_strdup(v);
		return 1;
	}
	if (!strcmp(key, "sign")) {
		if (!strcmp(v, "md5"))
			p->sign = SR_SIGN_MD5;
		else if (!strcmp(v, "sha256"))
			p->sign = SR_SIGN_SHA256;
		else if (!strcmp(v, "hmac-sha256"))
			p->sign = SR_SIGN_HMAC_SHA256;
		else
			return sr_perr(ps, "%s", "sign: the value is not md5, sha256 or hmac-sha256");
		return 1;
	}
	if (!strcmp(key, "sign.case")) {
		if (strcmp(v, "lower") && strcmp(v, "upper"))
			return sr_perr(ps, "%s", "sign.case: the value is not lower or upper");
		p->sign_upper = !strcmp(v, "upper");
		return 1;
	}
	return 0;
}

/* {sign} is made last, from the request built around it (docs/carriers.md, Signed
 * requests): it may go into a request's URL or body, a header or the Basic
 * credentials, but not into what is filled before the request is ({base},
 * {reqid}), nor into what it is made of. */
static int
sign_place(struct sr_parse *ps)
{
	const struct sr_profile *p = ps->p;
	const struct {
		const char *key, *tmpl;
	} before[] = {
		{ "base", p->base }, { "reqid", p->reqid }, { "sign.input", p->sign_input },
		{ "sign.key", p->sign_key },
	};

	for (size_t i = 0; i < sizeof before / sizeof before[0]; i++)
		if (sr_profile_names(p, before[i].tmpl, "sign", 0)) {
			char what[160];

			ps->line = sr_parse_line_of(ps, before[i].key);
			snprintf(what, sizeof what, "%s: {sign} cannot be part of what is filled before "
			    "the request, or of what it signs", before[i].key);
			return sr_perr(ps, "%s", what);
		}
	return 0;
}

int
sr_auth_sign_check(struct sr_parse *ps, int stage)
{
	const struct sr_profile *p = ps->p;

	if (stage == SR_AUTH_CHECK_NAMES)
		return sr_profile_check_names(ps, "sign.input", p->sign_input) < 0 ||
		    sr_profile_check_names(ps, "sign.key", p->sign_key) < 0 ? -1 : 0;
	if (stage == SR_AUTH_CHECK_PLACE)
		return sign_place(ps);
	if (p->sign && !p->sign_input)
		return sr_perr(ps, "%s", "sign needs sign.input (what is signed)");
	if (p->sign == SR_SIGN_HMAC_SHA256 && !p->sign_key)
		return sr_perr(ps, "%s", "sign = hmac-sha256 needs sign.key");
	return 0;
}

/* The signature's stand-in, before any template is filled. */
static void
stand_in(struct sr_build *b)
{
	const struct sr_profile *p = b->e->acct->p;

	if (p->sign) {
		/* Random hex as long as the signature's: no escaping changes it,
		 * no parameter holds it by chance, and the signature takes its
		 * place without moving a byte. */
		unsigned char r[64];
		int n = EVP_MD_size(p->sign == SR_SIGN_MD5 ? EVP_md5() : EVP_sha256());

		if (RAND_bytes(r, n) != 1)
			snprintf(b->err, sizeof b->err, "no random bytes for the signature's stand-in");
		sr_hex(r, (size_t)n, b->stand_in, 0);
	}
}

/* {sign}: a digest of sign.input (hex), as the profile says. */
static int
make_sign(struct sr_build *b)
{
	const struct sr_profile *p = b->e->acct->p;
	char input[SR_REQ_MAX], key[1024];
	struct sr_buf in = { input, 0, sizeof input }, kb = { key, 0, sizeof key };
	int rc;

	if (!p->sign)
		return 0;
	key[0] = '\0';
	if (sr_expand(p->sign_input, SR_CTX_RAW, sr_build_lookup, b, &in, b->err, sizeof b->err) < 0 ||
	    (p->sign == SR_SIGN_HMAC_SHA256 &&
	    sr_expand(p->sign_key, SR_CTX_RAW, sr_build_lookup, b, &kb, b->err, sizeof b->err) < 0))
		return -1;
	rc = sr_digest_hex(p->sign, key, kb.len, input, in.len, p->sign_upper, b->sign);
	memset(input, 0, sizeof input);
	memset(key, 0, sizeof key);
	if (rc < 0) {
		snprintf(b->err, sizeof b->err, "signing failed");
		return -1;
	}
	b->have_sign = 1;
	return 0;
}

/* Put the signature where its stand-in is: the same length, so in place. */
static void
put_sign(const struct sr_build *b, struct sr_buf *out)
{
	size_t n = strlen(b->stand_in);

	for (char *at = out->s; n && (at = strstr(at, b->stand_in)); at += n)
		memcpy(at, b->sign, n);
}

int
sr_auth_sign_apply(struct sr_build *b, int stage, struct sr_request *req)
{
	(void)req;
	if (stage == SR_AUTH_INIT)
		stand_in(b);
	if (stage != SR_AUTH_SIGN)
		return 0;
	if (make_sign(b) < 0)
		return -1;
	if (b->have_sign) {
		put_sign(b, b->url);
		put_sign(b, b->body);
	}
	return 0;
}
