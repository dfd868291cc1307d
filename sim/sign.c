/* sign.c - what sr-gwsim's signing shapes (ctcmp, ct5gcmp) sign: a
 * request's query parameters as the carrier joins them, and the signing
 * key (--sign-key-file) as it stands now. Each shape checks its own
 * signature with them.
 */
#include <stdlib.h>
#include <string.h>

#include "gwsim.h"

static pthread_mutex_t keymu = PTHREAD_MUTEX_INITIALIZER;

/* One query parameter of a request, decoded (MHD decodes them). */
struct qparam {
	const char *name, *value;
};

struct qparams {
	struct qparam v[64];
	int n, over;
};

static enum MHD_Result
qparam_add(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct qparams *q = cls;

	(void)kind;
	if (!strcmp(key, "sign"))
		return MHD_YES;
	if (q->n == (int)(sizeof q->v / sizeof q->v[0])) {
		q->over = 1;
		return MHD_NO;
	}
	q->v[q->n].name = key;
	q->v[q->n++].value = value ? value : "";
	return MHD_YES;
}

static int
qparam_cmp(const void *a, const void *b)
{
	const struct qparam *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->value, y->value);
}

/* The signing key now, into out: --sign-key-file read again at each
 * request, so a test rotates it as a carrier would (unreadable for a
 * moment, as it is replaced: the last one read). */
void
key_now(char *out, size_t n)
{
	FILE *f;
	char buf[512];
	size_t len;

	pthread_mutex_lock(&keymu);
	if ((f = fopen(sign_key_path, "r"))) {
		len = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
			len--;
		buf[len] = '\0';
		if (len) {
			free(sign_key);
			sign_key = sr_strdup(buf);
		}
	}
	snprintf(out, n, "%s", sign_key);
	pthread_mutex_unlock(&keymu);
}

/* A signing shape's setup: it checks every request's signature. */
void
need_sign_key(void)
{
	if (!sign_key)
		sr_die(SR_EX_USAGE, "--profile %s needs --sign-key-file: it checks every "
		    "request's signature", shape->name);
}

/* A request's query parameters as a carrier signs them: every one but
 * "sign", decoded, sorted by name, then by value (byte order), joined as
 * "k=v&k=v", nothing encoded again: what the carrier computes on its
 * side, written here apart from srq's own. Its length (size: too many). */
size_t
signed_params(struct MHD_Connection *con, char *text, size_t size)
{
	struct qparams q;
	size_t len = 0;

	memset(&q, 0, sizeof q);
	MHD_get_connection_values(con, MHD_GET_ARGUMENT_KIND, qparam_add, &q);
	if (q.over)
		return size;
	qsort(q.v, (size_t)q.n, sizeof q.v[0], qparam_cmp);
	text[0] = '\0';
	for (int i = 0; i < q.n && len < size; i++)
		len += (size_t)snprintf(text + len, size - len, "%s%s=%s", i ? "&" : "",
		    q.v[i].name, q.v[i].value);
	return len;
}
