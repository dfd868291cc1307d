/* sr_sign.c - what a request signature is made of: {params}, the
 * parameters the carrier receives, put as it reads them; and the digest
 * of a profile's sign.input (md5, sha256, hmac-sha256, in hex).
 *
 * A carrier that checks a signature rebuilds the signed text from the
 * request it got: the parameters decoded, sorted by name and joined. srq
 * must build the same text from the request it sends, byte for byte, or
 * every call is refused (docs/carriers.md, Signed requests).
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "sr.h"

/* A request's parameters that are signed, at most. */
#define PARAMS_MAX 128
/* The query string and a form body, copied to be cut up. */
#define PARAMS_TEXT_MAX (16 * 1024)

/* One parameter of a request, decoded, as the carrier reads it. */
struct param {
	char *name, *value;
};

/* By name, then by value, byte by byte (strcmp compares unsigned chars):
 * what a carrier that sorts its parameters by name computes. Sorting
 * whole "k=v" strings would put user=u1 after user.id= and user2=
 * ('=' is above '.' and '2'). */
static int
cmp_param(const void *a, const void *b)
{
	const struct param *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->value, y->value);
}

/* Decode %XX and '+' (a space) in place: a query string's or a form's
 * text as the carrier reads it. */
static void
form_decode(char *s)
{
	char *o = s;

	for (char *i = s; *i; i++) {
		if (*i == '%' && isxdigit((unsigned char)i[1]) && isxdigit((unsigned char)i[2])) {
			char h[3] = { i[1], i[2], 0 };

			*o++ = (char)strtol(h, NULL, 16);
			i += 2;
		} else
			*o++ = *i == '+' ? ' ' : *i;
	}
	*o = '\0';
}

/* Is this the signature's own parameter: does it hold skip? */
static int
skipped(const char *skip, const char *s)
{
	return skip && *skip && strstr(s, skip);
}

int
sr_params(const char *url, const char *body, int type, const char *skip, char *out, size_t outlen)
{
	struct param items[PARAMS_MAX];
	char copy[PARAMS_TEXT_MAX];
	int n = 0;
	const char *q = strchr(url, '?');
	size_t len = 0;

	copy[0] = '\0';
	if (q)
		snprintf(copy, sizeof copy, "%s", q + 1);
	if (body && type == SR_BODY_FORM)
		snprintf(copy + strlen(copy), sizeof copy - strlen(copy), "%s%s", copy[0] ? "&" : "", body);
	for (char *s = copy, *save = NULL, *t; (t = strtok_r(s, "&", &save)) && n < PARAMS_MAX;
	    s = NULL) {
		char *eq = strchr(t, '=');

		if (eq)
			*eq = '\0';
		form_decode(t);
		if (eq)
			form_decode(eq + 1);
		if (skipped(skip, t) || (eq && skipped(skip, eq + 1)))
			continue;
		items[n].name = sr_strdup(t);
		items[n++].value = sr_strdup(eq ? eq + 1 : "");
	}
	if (body && type == SR_BODY_JSON) {
		json_t *j = json_loads(body, 0, NULL);
		const char *k;
		json_t *v;

		json_object_foreach(j, k, v) {
			char val[512];

			if (n == PARAMS_MAX)
				break;
			if (json_is_string(v))
				snprintf(val, sizeof val, "%s", json_string_value(v));
			else if (json_is_integer(v))
				snprintf(val, sizeof val, "%lld", (long long)json_integer_value(v));
			else
				continue;
			if (skipped(skip, k) || skipped(skip, val))
				continue;
			items[n].name = sr_strdup(k);
			items[n++].value = sr_strdup(val);
		}
		json_decref(j);
	}
	qsort(items, (size_t)n, sizeof *items, cmp_param);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		len += (size_t)snprintf(out + len, len < outlen ? outlen - len : 0,
		    "%s%s=%s", i ? "&" : "", items[i].name, items[i].value);
		free(items[i].name);
		free(items[i].value);
	}
	return len < outlen ? 0 : -1;
}

void
sr_hex(const unsigned char *md, size_t n, char *out, int upper)
{
	static const char lo[] = "0123456789abcdef", up[] = "0123456789ABCDEF";
	const char *h = upper ? up : lo;

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = h[md[i] >> 4];
		out[2 * i + 1] = h[md[i] & 15];
	}
	out[2 * n] = '\0';
}

int
sr_digest_hex(int alg, const char *key, size_t keylen, const char *data, size_t len, int upper,
    char *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int ok;

	if (alg == SR_SIGN_HMAC_SHA256)
		ok = HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)data, len, md, &mdlen) != NULL;
	else
		ok = EVP_Digest(data, len, md, &mdlen, alg == SR_SIGN_MD5 ? EVP_md5() : EVP_sha256(),
		    NULL) == 1;
	if (!ok)
		return -1;
	sr_hex(md, mdlen, out, upper);
	return 0;
}
