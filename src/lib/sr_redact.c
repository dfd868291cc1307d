/* sr_redact.c - the secrets a request carried, cut out of what the carrier
 * says back.
 *
 * A carrier may echo what it was sent in its error message ("invalid token
 * 3f9c..."), and that message becomes the result's error: stdout, Redis,
 * the audit, alerts. It echoes a secret as it received it, or as its own
 * code wrote it back: srq sends one raw (a header, a text body),
 * percent-encoded (a URL, a form), JSON-escaped (a JSON body) or in base64
 * (Basic credentials, noted as a secret of their own), and a carrier may
 * write %2f for %2F, + for a space (a form decoded and encoded again), \/
 * for / (PHP's json_encode) or \u0041 for A. So a secret is looked for
 * byte by byte, each byte in any of those spellings, mixed as they come.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "sr.h"

/* Shorter secrets are not looked for: "42" would cut up every message
 * ("HTTP [secret]2"), and so short a value is no secret for its length
 * alone. */
#define SECRET_MIN 4

static int
hexval(int ch)
{
	return isdigit(ch) ? ch - '0' : isxdigit(ch) ? tolower(ch) - 'a' + 10 : -1;
}

/* Whether the n hex digits at s (any case) spell c. */
static int
hex_is(const char *s, int n, unsigned c)
{
	unsigned v = 0;

	for (int i = 0; i < n; i++) {
		if (hexval((unsigned char)s[i]) < 0)
			return 0;
		v = v * 16 + (unsigned)hexval((unsigned char)s[i]);
	}
	return v == c;
}

/* Whether the first n bytes of spelling (cut short by the message's end)
 * may still spell c: what hex digits there are agree with it. */
static int
hex_prefix(const char *s, size_t n, unsigned c, int digits)
{
	for (size_t i = 0; i < n; i++) {
		int h = hexval((unsigned char)s[i]);

		if (h < 0 || (unsigned)h != ((c >> (4 * (digits - 1 - (int)i))) & 15))
			return 0;
	}
	return 1;
}

/* How many bytes at s (len of them left) spell the secret's byte c: 0 when
 * none do. At the message's end, a spelling cut short counts, and *cut is
 * set. */
static size_t
spelled(const char *s, size_t len, unsigned char c, int *cut)
{
	static const char json_short[] = "\bb\ff\nn\rr\tt";

	*cut = 0;
	if (len == 0)
		return 0;
	if ((unsigned char)s[0] == c)
		return 1;
	if (s[0] == '+' && c == ' ')
		return 1; /* a form's space */
	if (s[0] == '%') { /* percent-encoded, in either case */
		if (len >= 3)
			return hex_is(s + 1, 2, c) ? 3 : 0;
		*cut = hex_prefix(s + 1, len - 1, c, 2);
		return *cut ? len : 0;
	}
	if (s[0] != '\\')
		return 0;
	/* JSON-escaped: \/ \" \\, \n and its kind, \u00XX */
	if (len == 1) {
		*cut = 1;
		return 1;
	}
	if (s[1] == (char)c && (c == '/' || c == '"' || c == '\\'))
		return 2;
	for (size_t i = 0; i + 1 < sizeof json_short; i += 2)
		if ((unsigned char)json_short[i] == c && s[1] == json_short[i + 1])
			return 2;
	if (s[1] == 'u' && c < 0x80) {
		if (len >= 6)
			return hex_is(s + 2, 4, c) ? 6 : 0;
		*cut = hex_prefix(s + 2, len - 2, c, 4);
		return *cut ? len : 0;
	}
	return 0;
}

/* How many bytes of s from its start spell the whole secret v, or, reaching
 * the message's end, its first SECRET_MIN bytes or more (a secret cut short
 * by the message's length: a JWT is longer than a message keeps). 0: no. */
static size_t
spells(const char *s, size_t len, const char *v, size_t vlen)
{
	size_t at = 0, k = 0;
	int cut = 0;

	while (k < vlen) {
		size_t n = spelled(s + at, len - at, (unsigned char)v[k], &cut);

		if (n == 0)
			break;
		at += n;
		if (cut)
			break; /* at the end: k bytes spelled whole */
		k++;
	}
	if (k == vlen)
		return at;
	return at == len && k >= SECRET_MIN ? at : 0;
}

void
sr_redact(char *s, size_t size, char *const *secrets, int nsecrets)
{
	char mark[1024], out[1024];
	size_t len = strlen(s), o = 0;
	int any = 0;

	if (len >= sizeof mark)
		len = sizeof mark - 1;
	memset(mark, 0, len);
	/* Every byte of every match is marked first, then each marked run said
	 * once as [secret]: a secret inside another, or overlapping it, leaves
	 * none of the other's rest. */
	for (int i = 0; i < nsecrets; i++) {
		size_t vlen = strlen(secrets[i]);

		if (vlen < SECRET_MIN)
			continue;
		for (size_t at = 0; at < len; at++) {
			size_t n = spells(s + at, len - at, secrets[i], vlen);

			if (n) {
				memset(mark + at, 1, n);
				any = 1;
			}
		}
	}
	if (!any)
		return;
	for (size_t i = 0; i < len && o + 1 < sizeof out; i++) {
		if (!mark[i])
			out[o++] = s[i];
		else if (i == 0 || !mark[i - 1])
			o += (size_t)snprintf(out + o, sizeof out - o, "[secret]");
	}
	out[o < sizeof out ? o : sizeof out - 1] = '\0';
	snprintf(s, size, "%s", out);
}
