/* sr_template.c - template expansion: {name} placeholders filled, each
 * value escaped for where it goes (URL, form, JSON, header). */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <string.h>

#include "sr.h"

/* Append s to out, escaped for the context. Returns -1 when out is full. */
static int
put_escaped(struct sr_buf *out, const char *s, int ctx)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char tmp[8];
		size_t n = 0;

		switch (ctx) {
		case SR_CTX_URL:
		case SR_CTX_FORM:
			if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
				tmp[n++] = (char)c;
			else {
				tmp[n++] = '%';
				tmp[n++] = hex[c >> 4];
				tmp[n++] = hex[c & 15];
			}
			break;
		case SR_CTX_JSON:
			if (c == '"' || c == '\\') {
				tmp[n++] = '\\';
				tmp[n++] = (char)c;
			} else if (c < 0x20)
				n = (size_t)snprintf(tmp, sizeof tmp, "\\u%04x", c);
			else
				tmp[n++] = (char)c;
			break;
		case SR_CTX_HEADER:
			if (c == '\r' || c == '\n')
				return -1; /* a value must never start a new header */
			tmp[n++] = (char)c;
			break;
		default:
			tmp[n++] = (char)c;
		}
		if (out->len + n >= out->cap)
			return -1;
		memcpy(out->s + out->len, tmp, n);
		out->len += n;
	}
	out->s[out->len] = '\0';
	return 0;
}

int
sr_expand(const char *tmpl, int ctx, sr_lookup_fn *lookup, void *arg, struct sr_buf *out,
    char *err, size_t errlen)
{
	err[0] = '\0';
	out->len = 0;
	out->s[0] = '\0';
	for (const char *p = tmpl; *p;) {
		if (*p == '{') {
			const char *q = p + 1;

			while (islower((unsigned char)*q) || isdigit((unsigned char)*q) || *q == '_')
				q++;
			if (*q == '}' && q > p + 1) {
				char name[40];
				const char *v;
				int raw;

				snprintf(name, sizeof name, "%.*s", (int)(q - p - 1), p + 1);
				if (!(v = lookup(arg, name, &raw))) {
					if (!err[0]) /* unless the lookup said better */
						snprintf(err, errlen, "unknown placeholder {%s}", name);
					return -1;
				}
				if (put_escaped(out, v, raw ? SR_CTX_RAW : ctx) < 0) {
					snprintf(err, errlen, "{%s} is too long or not allowed here", name);
					return -1;
				}
				p = q + 1;
				continue;
			}
		}
		if (out->len + 1 >= out->cap) {
			snprintf(err, errlen, "the expanded text is over %zu bytes", out->cap - 1);
			return -1;
		}
		out->s[out->len++] = *p++;
		out->s[out->len] = '\0';
	}
	return 0;
}

