/* sr_gateway.c - the carrier gateway client, on libcurl's multi interface:
 * many calls in flight over one pool of kept-alive connections, requests
 * built from the account's profile (sr_profile.c).
 *
 * Classification is the heart of "nothing lost, nothing doubled": an error
 * before the request could have reached the carrier is "retry" (definitely
 * not executed); anything after it may have been executed and is "unknown",
 * which sr-confirm resolves with a status query, never with a blind re-call.
 *
 * The rate is held at the wire: the client counts the connections to each
 * origin (struct sr_origin), so it knows whether a call goes out on a warm
 * connection (it leaves when it is sent) or must set up a new one first (it
 * leaves up to the connection's setup time later: the gate holds the
 * account's pace that much longer, see sr_edge_spread). One pool, not one per
 * account: per-account pools kept up to --concurrency idle connections for
 * every account, thousands to one carrier, until its server stopped taking
 * new ones and calls timed out.
 *
 * Secrets (tokens, passwords, app secrets) are read from files or the
 * environment when a request is built, go into that request only, and are
 * never logged or printed; a URL that carries one is never printed either.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "sr.h"

#define BODY_MAX (64 * 1024)
#define REQ_MAX (16 * 1024)
#define EDGE_BUCKETS 64
/* A token fetch that failed is not tried again before this (the breaker,
 * opened by the calls it failed, holds the account meanwhile). */
#define AUTH_RETRY_MS 5000

struct secret {
	char name[40];
	char *value;      /* NULL: not set, or unreadable (failed) */
	int failed;
	char error[200];
	char path[512];   /* the file it came from, if any */
	struct timespec mtime;
	int64_t checked;  /* when the file was last looked at (mono ms) */
};

struct sr_gateway {
	CURLM *multi;
	const struct sr_config *cfg;
	struct sr_edge *edges[EDGE_BUCKETS];
	struct sr_origin *origins;
	struct sr_call **failed; /* calls that could not be built: done at once */
	int nfailed, capfailed;
	int running;
	unsigned long seq;
};

const char *
sr_outcome_name(enum sr_outcome o)
{
	static const char *names[] = { "ok", "already", "retry", "fail", "unknown", "superseded",
		"blocked" };

	return names[o];
}

struct sr_gateway *
sr_gateway_new(const struct sr_config *cfg)
{
	struct sr_gateway *gw = sr_malloc(sizeof *gw);

	memset(gw, 0, sizeof *gw);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(gw->multi = curl_multi_init()))
		sr_die(SR_EX_USAGE, "cannot initialise libcurl");
	gw->cfg = cfg;
	if (curl_multi_setopt(gw->multi, CURLMOPT_MAXCONNECTS, (long)cfg->concurrency) != CURLM_OK)
		sr_die(SR_EX_USAGE, "cannot set up libcurl (CURLMOPT_MAXCONNECTS)");
	return gw;
}

static void
secrets_free(struct sr_edge *e)
{
	for (int i = 0; i < e->nsecrets; i++)
		if (e->secrets[i].value) {
			memset(e->secrets[i].value, 0, strlen(e->secrets[i].value));
			free(e->secrets[i].value);
		}
	free(e->secrets);
	e->secrets = NULL;
	e->nsecrets = 0;
}

static void
token_forget(struct sr_edge *e)
{
	if (e->token) {
		memset(e->token, 0, strlen(e->token));
		free(e->token);
	}
	e->token = NULL;
}

void
sr_gateway_free(struct sr_gateway *gw)
{
	if (!gw)
		return;
	for (int b = 0; b < EDGE_BUCKETS; b++)
		while (gw->edges[b]) {
			struct sr_edge *e = gw->edges[b];

			gw->edges[b] = e->next;
			secrets_free(e);
			token_forget(e);
			free(e->fetch);
			e->fetch = NULL;
			free(e->late);
			free(e);
		}
	while (gw->origins) {
		struct sr_origin *o = gw->origins;

		gw->origins = o->next;
		free(o);
	}
	curl_multi_cleanup(gw->multi);
	free(gw->failed);
	free(gw);
	curl_global_cleanup();
}

static uint32_t
edge_bucket(const char *carrier)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *c = (const unsigned char *)carrier; *c; c++)
		h = (h ^ *c) * 16777619u;
	return h % EDGE_BUCKETS;
}

struct sr_edge *
sr_gateway_edge(struct sr_gateway *gw, const char *carrier)
{
	uint32_t h = edge_bucket(carrier);
	struct sr_edge *e;

	for (e = gw->edges[h]; e; e = e->next)
		if (!strcmp(e->acct->id, carrier))
			return e;
	e = sr_malloc(sizeof *e);
	memset(e, 0, sizeof *e);
	e->acct = sr_account(gw->cfg, carrier);
	e->cold_ms = e->acct->connect_budget_ms;
	e->warm_ms = -1;
	e->clock_node = -1;
	e->next = gw->edges[h];
	gw->edges[h] = e;
	return e;
}

struct sr_edge *
sr_gateway_edge_next(struct sr_gateway *gw, struct sr_edge *e)
{
	uint32_t h = 0;

	if (e) {
		if (e->next)
			return e->next;
		h = edge_bucket(e->acct->id) + 1;
	}
	for (; h < EDGE_BUCKETS; h++)
		if (gw->edges[h])
			return gw->edges[h];
	return NULL;
}

/* ------------------------------------------------------------ warm connections */

/* The origin of a URL, "scheme://authority", as libcurl's pool tells its
 * connections apart (a URL is not parsed further: the origin only names). */
static struct sr_origin *
origin_of(struct sr_gateway *gw, const char *url)
{
	const char *sep = strstr(url, "://");
	size_t n = sep ? (size_t)(sep - url) + 3 + strcspn(sep + 3, "/?#") : strlen(url);
	struct sr_origin *o;

	if (n >= sizeof o->name)
		n = sizeof o->name - 1;
	for (o = gw->origins; o; o = o->next)
		if (!strncmp(o->name, url, n) && !o->name[n])
			return o;
	o = sr_malloc(sizeof *o);
	memset(o, 0, sizeof *o);
	memcpy(o->name, url, n);
	o->next = gw->origins;
	gw->origins = o;
	return o;
}

static void
conn_used(struct sr_origin *o, long port, int64_t now)
{
	int i, oldest = 0;

	for (i = 0; i < o->nconns; i++)
		if (o->conns[i].port == port)
			break;
	if (i == o->nconns) {
		if (o->nconns < SR_ORIGIN_CONNS)
			i = o->nconns++;
		else {
			for (int k = 1; k < o->nconns; k++)
				if (o->conns[k].used < o->conns[oldest].used)
					oldest = k;
			i = oldest;
		}
	}
	o->conns[i].port = port;
	o->conns[i].used = now;
}

static void
conn_closed(struct sr_origin *o, long port)
{
	for (int i = 0; i < o->nconns; i++)
		if (o->conns[i].port == port) {
			o->conns[i] = o->conns[--o->nconns];
			return;
		}
}

long
sr_edge_spread(struct sr_edge *e)
{
	struct sr_origin *o = e->origin;
	int64_t now = sr_mono_ms();
	int warm = 0;

	if (!o)
		return e->cold_ms;
	for (int i = 0; i < o->nconns; i++)
		warm += now - o->conns[i].used < e->acct->keepalive_ms;
	/* Each running call holds one of them; only the rest are idle. */
	return warm > o->running ? 0 : e->cold_ms;
}

/* Count one send's lateness (ms after its slot) and return the p99 of those
 * of the last minute, ms: the upper end of its bin, so never less than
 * measured (SR_HR_MAX_MS at most: lateness beyond it is counted there). */
static long
late_p99(struct sr_edge *e, int64_t now, long late)
{
	int64_t slice = now / SR_LATE_SLICE_MS;
	struct sr_late_slice *s;
	unsigned long total = 0, sum = 0, bins[SR_LATE_BINS] = { 0 };
	int b;

	if (!e->late) {
		e->late = sr_malloc(SR_LATE_SLICES * sizeof *e->late);
		memset(e->late, 0, SR_LATE_SLICES * sizeof *e->late);
	}
	s = &e->late[slice % SR_LATE_SLICES];
	if (s->start != slice) {
		memset(s, 0, sizeof *s);
		s->start = slice;
	}
	b = late < 0 ? 0 : late / SR_LATE_BIN_MS;
	s->n[b < SR_LATE_BINS ? b : SR_LATE_BINS - 1]++;
	for (int i = 0; i < SR_LATE_SLICES; i++)
		if (slice - e->late[i].start < SR_LATE_SLICES)
			for (b = 0; b < SR_LATE_BINS; b++) {
				bins[b] += e->late[i].n[b];
				total += e->late[i].n[b];
			}
	for (b = 0; b < SR_LATE_BINS - 1; b++)
		if ((sum += bins[b]) * 100 >= total * 99)
			break;
	return b < SR_LATE_BINS - 1 ? (long)(b + 1) * SR_LATE_BIN_MS : SR_HR_MAX_MS;
}

/* Who reports a headroom (late.lua): host and process. */
static const char *
reporter(void)
{
	static char id[300];

	if (!id[0]) {
		char host[256] = "";

		if (gethostname(host, sizeof host - 1) != 0)
			snprintf(host, sizeof host, "?");
		snprintf(id, sizeof id, "%s:%ld", host, (long)getpid());
	}
	return id;
}

int
sr_edge_late(struct sr_redis *r, const struct sr_config *cfg, struct sr_edge *e, int64_t slot)
{
	int64_t now = sr_mono_ms();
	long sent_late = (long)(now - slot), late = sr_edge_spread(e) + sent_late;
	long floor = e->acct->window_ms - 1000, hr = late_p99(e, now, sent_late);
	char key[SR_KEY_MAX], ms[24], hrs[24] = "";
	const char *argv[] = { sr_key_account(key, cfg->prefix, e->acct->id, "edge"), ms, hrs,
		reporter() };
	redisReply *rep;

	/* Under the configured headroom the pace does not change: reported as
	 * 0, once, to take back a larger report of this process's. Above it,
	 * a change at most once a second, and every 20 s to keep it current
	 * (a report a minute old is not used). */
	if (hr <= floor)
		hr = 0;
	if ((hr != e->hr_sent && now - e->hr_sent_at >= 1000) ||
	    (hr > 0 && now - e->hr_sent_at >= 20000)) {
		snprintf(hrs, sizeof hrs, "%ld", hr);
		e->hr_sent = hr;
		e->hr_sent_at = now;
	}
	/* A few ms are within the headroom: not worth a round trip. */
	if (late < SR_LATE_MS)
		late = 0;
	if (!late && !hrs[0])
		return 0;
	snprintf(ms, sizeof ms, "%ld", late);
	sr_redis_append_script(r, SR_LUA_LATE, 1, 4, argv, NULL);
	if (!(rep = sr_redis_reply(r)))
		return -1;
	if (rep->type == REDIS_REPLY_ERROR)
		sr_warn("account '%s': the pace was not moved for a late call: %s", e->acct->id,
		    rep->str);
	freeReplyObject(rep);
	return 0;
}

/* ------------------------------------------------------------ secrets */

static char *
read_secret_file(const char *path, struct timespec *mtime, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	struct stat st;
	char buf[4096];
	size_t n;

	if (!f || fstat(fileno(f), &st) < 0) {
		snprintf(err, errlen, "cannot read the secret file '%s': %s", path, strerror(errno));
		if (f)
			fclose(f);
		return NULL;
	}
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	*mtime = st.st_mtim;
	if (n == 0) {
		snprintf(err, errlen, "the secret file '%s' is empty", path);
		return NULL;
	}
	if (strpbrk(buf, "\r\n")) {
		snprintf(err, errlen, "the secret file '%s' holds more than one line", path);
		return NULL;
	}
	return sr_strdup(buf);
}

struct build {
	struct sr_gateway *gw;
	struct sr_edge *e;
	struct sr_call *call; /* NULL for a token fetch */
	struct sr_call *rec;  /* the transfer it builds (a token fetch's too): its secrets noted */
	const char *action;
	char reqid[256], ts[16], ms[24], seq[16], nonce[40], ver[24], base[1024];
	char sign[160];
	char stand_in[160];   /* {sign} until it is made (see build_request) */
	char params[REQ_MAX];
	int have_sign, have_params, depth;
	int filling;          /* the request's URL and body are being expanded */
	int checking;         /* sr_edge_check: nothing is sent, a token stands in */
	int unset;            /* a placeholder had no value (an unset secret) */
	char err[200];
	char vbuf[4][1024];   /* set.NAME expansions */
	int nv;
};

static const char *lookup(void *arg, const char *name, int *raw);

/* A secret that goes into the request, noted so that what the carrier says
 * back can be redacted (see redact_secrets). */
static void
note_secret(struct build *b, const char *v)
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

static void
forget_sent_secrets(struct sr_call *c)
{
	for (int i = 0; i < c->nsent_secrets; i++) {
		memset(c->sent_secrets[i], 0, strlen(c->sent_secrets[i]));
		free(c->sent_secrets[i]);
		c->sent_secrets[i] = NULL;
	}
	c->nsent_secrets = 0;
}

/* Every secret the request carried, cut out of what the carrier said back
 * (in every spelling srq sends it in, or a carrier writes it back in:
 * sr_redact.c). */
static void
redact_secrets(const struct sr_call *c, char *s, size_t size)
{
	sr_redact(s, size, c->sent_secrets, c->nsent_secrets);
}

/* A secret's value for this account: the first of its alternatives that is
 * set ("file:PATH", "env:NAME", "env-file:NAME", or a literal). Files are
 * re-read when they change (looked at once a second at most). NULL when
 * none is set; -1 in *failed with b->err when a file cannot be read. */
static const char *
secret_value(struct build *b, const struct sr_var *v, int *failed)
{
	struct sr_edge *e = b->e;
	struct secret *s = NULL;
	int64_t now = sr_mono_ms();
	char spec[1024], *alt, *save;

	for (int i = 0; i < e->nsecrets; i++)
		if (!strcmp(e->secrets[i].name, v->name))
			s = &e->secrets[i];
	if (s && (!s->path[0] || now - s->checked < 1000)) {
		if (s->failed) { /* still unreadable: no request without it */
			snprintf(b->err, sizeof b->err, "%s", s->error);
			*failed = 1;
		}
		return s->value;
	}
	if (s && s->path[0]) {
		struct stat st;

		s->checked = now;
		if (stat(s->path, &st) == 0 && st.st_mtim.tv_sec == s->mtime.tv_sec &&
		    st.st_mtim.tv_nsec == s->mtime.tv_nsec)
			return s->value;
	}
	if (!s) {
		e->secrets = sr_realloc(e->secrets, (size_t)(e->nsecrets + 1) * sizeof *e->secrets);
		s = &e->secrets[e->nsecrets++];
		memset(s, 0, sizeof *s);
		snprintf(s->name, sizeof s->name, "%s", v->name);
	}
	if (s->value) {
		memset(s->value, 0, strlen(s->value));
		free(s->value);
	}
	s->value = NULL;
	s->path[0] = '\0';
	s->checked = now;
	s->failed = 0;
	snprintf(spec, sizeof spec, "%s", v->value);
	for (alt = strtok_r(spec, " \t", &save); alt; alt = strtok_r(NULL, " \t", &save)) {
		const char *path = NULL;
		char expanded[512];

		if (!strncmp(alt, "env:", 4)) {
			const char *val = getenv(alt + 4);

			if (val && *val) {
				s->value = sr_strdup(val);
				return s->value;
			}
			continue;
		}
		if (!strncmp(alt, "env-file:", 9)) {
			if (!(path = getenv(alt + 9)) || !*path)
				continue;
		} else if (!strncmp(alt, "file:", 5)) {
			struct sr_buf out = { expanded, 0, sizeof expanded };

			if (sr_expand(alt + 5, SR_CTX_RAW, lookup, b, &out, b->err, sizeof b->err) < 0) {
				*failed = 1;
				return NULL;
			}
			path = expanded;
		} else {
			s->value = sr_strdup(alt);
			return s->value;
		}
		snprintf(s->path, sizeof s->path, "%s", path);
		if (!(s->value = read_secret_file(s->path, &s->mtime, b->err, sizeof b->err))) {
			*failed = s->failed = 1;
			snprintf(s->error, sizeof s->error, "%s", b->err);
		}
		return s->value;
	}
	return NULL;
}

/* ------------------------------------------------------------ building requests */

static const char *
var_value(struct build *b, const char *name, int *found)
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
			const char *s = secret_value(b, v, &failed);

			if (failed)
				return NULL;
			if (!s)
				b->unset = 1;
			note_secret(b, s);
			return s;
		}
		if (b->depth > 4 || b->nv == 4) {
			snprintf(b->err, sizeof b->err, "set.%s: placeholders nested too deep", name);
			return NULL;
		} else {
			struct sr_buf out = { b->vbuf[b->nv], 0, sizeof b->vbuf[0] };
			const char *r;

			b->depth++;
			r = sr_expand(v->value, SR_CTX_RAW, lookup, b, &out, b->err, sizeof b->err) < 0 ?
			    NULL : b->vbuf[b->nv++];
			b->depth--;
			return r;
		}
	}
	return NULL;
}

static const char *
lookup(void *arg, const char *name, int *raw)
{
	struct build *b = arg;
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
		note_secret(b, b->e->token);
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

static void
build_init(struct build *b, struct sr_gateway *gw, struct sr_edge *e, struct sr_call *call,
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
	out = (struct sr_buf){ b->base, 0, sizeof b->base };
	if (sr_expand(p->base ? p->base : "{gateway}", SR_CTX_RAW, lookup, b, &out, b->err,
	    sizeof b->err) < 0)
		return;
	out = (struct sr_buf){ b->reqid, 0, sizeof b->reqid };
	sr_expand(p->reqid ? p->reqid : "{card}-{ver}-{action}", SR_CTX_RAW, lookup, b, &out, b->err,
	    sizeof b->err);
}

/* Whether a request carries its body: a GET sends none (see start()), so
 * none of its parameters reaches the carrier, and none is signed. */
static int
sends_body(const struct sr_request_tmpl *t)
{
	return t->body && strcmp(t->method, "GET");
}

/* {params} of the request being built (sr_sign.c): the signature's own
 * parameter, the one that holds {sign}'s stand-in, left out. */
static void
collect_params(struct build *b, const char *url, const char *body, int type)
{
	b->have_params = sr_params(url, body, type, b->stand_in, b->params, sizeof b->params) == 0;
}

/* {sign}: a digest of sign.input (hex), as the profile says. */
static int
make_sign(struct build *b)
{
	const struct sr_profile *p = b->e->acct->p;
	char input[REQ_MAX], key[1024];
	struct sr_buf in = { input, 0, sizeof input }, kb = { key, 0, sizeof key };
	int rc;

	if (!p->sign)
		return 0;
	key[0] = '\0';
	if (sr_expand(p->sign_input, SR_CTX_RAW, lookup, b, &in, b->err, sizeof b->err) < 0 ||
	    (p->sign == SR_SIGN_HMAC_SHA256 &&
	    sr_expand(p->sign_key, SR_CTX_RAW, lookup, b, &kb, b->err, sizeof b->err) < 0))
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
put_sign(const struct build *b, struct sr_buf *out)
{
	size_t n = strlen(b->stand_in);

	for (char *at = out->s; n && (at = strstr(at, b->stand_in)); at += n)
		memcpy(at, b->sign, n);
}

enum { BUILT, NOT_BUILT, NOT_SIGNED };

/* A request's URL and body (the body expanded even when a GET does not
 * send it), every placeholder filled, {sign} last: the templates are
 * expanded with a stand-in for it, {params} is read from what they hold
 * (leaving out the parameter that holds the stand-in: the signature's
 * own), the signature is made of them, and put in the stand-in's place.
 * So it is made over the request as sent, wherever it goes. */
static int
build_request(struct build *b, const struct sr_request_tmpl *t, struct sr_buf *ub,
    struct sr_buf *bb)
{
	int ok;

	bb->len = 0;
	bb->s[0] = '\0'; /* none: nothing to sign in it, no stand-in */
	b->filling = 1;
	ok = !b->err[0] && sr_expand(t->url, SR_CTX_URL, lookup, b, ub, b->err, sizeof b->err) == 0 &&
	    (!t->body || sr_expand(t->body, t->type == SR_BODY_FORM ? SR_CTX_FORM :
	    t->type == SR_BODY_JSON ? SR_CTX_JSON : SR_CTX_RAW, lookup, b, bb, b->err,
	    sizeof b->err) == 0);
	b->filling = 0;
	if (!ok)
		return NOT_BUILT;
	collect_params(b, ub->s, sends_body(t) ? bb->s : NULL, t->type);
	if (make_sign(b) < 0)
		return NOT_SIGNED;
	if (b->have_sign) {
		put_sign(b, ub);
		put_sign(b, bb);
	}
	return BUILT;
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *userp)
{
	struct sr_call *call = userp;
	size_t n = size * nmemb, room = BODY_MAX - call->body_len;

	if (n > room) {
		n = room; /* keep the start; the answer is not read (classify) */
		call->body_cut = 1;
	}
	call->body = sr_realloc(call->body, call->body_len + n + 1);
	memcpy(call->body + call->body_len, data, n);
	call->body_len += n;
	call->body[call->body_len] = '\0';
	return size * nmemb;
}

/* Each header line of the answer, its status line and the empty line
 * that ends its headers included (once per answer: a 100 Continue has its
 * own). */
static size_t
on_header(char *data, size_t size, size_t nmemb, void *userp)
{
	struct sr_call *call = userp;
	size_t n = size * nmemb;

	if (n > 5 && !strncmp(data, "HTTP/", 5)) {
		const char *sp = memchr(data, ' ', n);

		call->status_seen = sp ? strtol(sp + 1, NULL, 10) : 0;
		call->headers_done = 0;
	} else if ((n == 2 && data[0] == '\r' && data[1] == '\n') || (n == 1 && data[0] == '\n'))
		call->headers_done = 1;
	if (n >= 17 && !strncasecmp(data, "connection:", 11)) {
		const char *v = data + 11;

		while (*v == ' ')
			v++;
		if (!strncasecmp(v, "close", 5))
			call->conn_close = 1;
	}
	return n;
}

static size_t
on_read(char *buf, size_t size, size_t nitems, void *userp)
{
	struct sr_call *call = userp;
	size_t left = call->reqlen - call->reqoff, n = size * nitems;

	if (n > left)
		n = left;
	memcpy(buf, call->reqbody + call->reqoff, n);
	call->reqoff += n;
	return n;
}

/* Called by libcurl right before each time it sends the request. When a
 * kept-alive connection dies before any byte of the answer, libcurl sends
 * the request again on a new connection by itself, unless it would have to
 * rewind a body (see start()). A change with no body to rewind (a GET, or an
 * empty POST or PUT, as some carriers' APIs are) would go out twice: the
 * carrier may have applied the first, and the second is paced by no gate.
 * So a change is sent once: a second send is aborted, and the call is
 * unknown (settled by a status query). A query or a token fetch may go
 * again: it changes nothing. */
/* A stop or resume: what a second send could apply twice. */
static int
is_change(const struct sr_call *call)
{
	return !call->is_fetch && (!strcmp(call->action, "stop") || !strcmp(call->action, "resume"));
}

static int
on_prereq(void *userp, char *ip, char *local_ip, int remote_port, int local_port)
{
	struct sr_call *call = userp;

	(void)ip;
	(void)local_ip;
	(void)remote_port;
	(void)local_port;
	if (++call->sends > 1 && is_change(call))
		return CURL_PREREQFUNC_ABORT;
	return CURL_PREREQFUNC_OK;
}

/* A call that never reached the wire, for a reason of ours. */
static void
fail_now(struct sr_gateway *gw, struct sr_call *call, const char *cls, const char *error)
{
	call->outcome = SR_OUT_RETRY;
	call->class = cls;
	if (error)
		snprintf(call->error, sizeof call->error, "%s", error);
	if (gw->nfailed == gw->capfailed) {
		gw->capfailed = gw->capfailed ? gw->capfailed * 2 : 16;
		gw->failed = sr_realloc(gw->failed, (size_t)gw->capfailed * sizeof *gw->failed);
	}
	gw->failed[gw->nfailed++] = call;
}

/* A header appended, or the end: libcurl returns NULL (and keeps the list)
 * only when out of memory. */
static struct curl_slist *
slist_add(struct curl_slist *h, const char *s)
{
	struct curl_slist *n = curl_slist_append(h, s);

	if (!n)
		sr_die(SR_EX_BACKEND, "out of memory building a request");
	return n;
}

#define SETOPT(e, opt, val) do { if (curl_easy_setopt(e, opt, val) != CURLE_OK) goto setopt_failed; } while (0)

/* Build and start one transfer: a call (call->action stop, resume or
 * status) or the account's token fetch (call->is_fetch). */
static int
start(struct sr_gateway *gw, struct sr_edge *ed, struct sr_call *call)
{
	const struct sr_profile *p = ed->acct->p;
	int r = call->is_fetch ? SR_REQ_TOKEN : !strcmp(call->action, "status") ? SR_REQ_QUERY :
	    !strcmp(call->action, "poll") ? SR_REQ_POLL :
	    !strcmp(call->action, "stop") ? SR_REQ_STOP : SR_REQ_RESUME;
	const struct sr_request_tmpl *t = &p->req[r];
	char url[REQ_MAX], body[REQ_MAX], hdr[2048];
	struct sr_buf ub = { url, 0, sizeof url }, bb = { body, 0, sizeof body };
	struct build b;
	struct curl_slist *h = NULL;
	CURL *e;
	int built;

	build_init(&b, gw, ed, call->is_fetch ? NULL : call, call->is_fetch ? "token" : call->action);
	forget_sent_secrets(call);
	b.rec = call;
	if ((built = build_request(&b, t, &ub, &bb)) != BUILT) {
		snprintf(call->error, sizeof call->error, "request not %s: %s",
		    built == NOT_SIGNED ? "signed" : "built", b.err);
		return -1;
	}
	for (int i = 0; i < p->nheaders; i++) {
		struct sr_buf hb = { hdr, 0, sizeof hdr };

		b.unset = 0;
		b.err[0] = '\0';
		if (sr_expand(p->headers[i], SR_CTX_HEADER, lookup, &b, &hb, b.err, sizeof b.err) < 0) {
			if (b.unset && !strstr(b.err, "cannot read"))
				continue; /* an optional secret that is not set: no header */
			snprintf(call->error, sizeof call->error, "header not built: %s", b.err);
			curl_slist_free_all(h);
			return -1;
		}
		h = slist_add(h, hdr);
	}
	if (t->body && t->type == SR_BODY_JSON)
		h = slist_add(h, "Content-Type: application/json");
	else if (t->body && t->type == SR_BODY_FORM)
		h = slist_add(h, "Content-Type: application/x-www-form-urlencoded");
	h = slist_add(h, "Expect:");
	call->headers = h;
	call->body = NULL;
	call->body_len = 0;
	call->body_cut = 0;
	call->conn_close = 0;
	call->sends = 0;
	call->status_seen = 0;
	call->headers_done = 0;
	call->started = sr_mono_ms();
	call->auth_gen = ed->auth_gen;
	if (!(e = curl_easy_init())) {
		snprintf(call->error, sizeof call->error, "libcurl: out of memory");
		return -1;
	}
	call->easy = e;
	call->origin = origin_of(gw, url);
	if (!call->is_fetch)
		ed->origin = call->origin;
	SETOPT(e, CURLOPT_URL, url);
	SETOPT(e, CURLOPT_HTTPHEADER, h);
	SETOPT(e, CURLOPT_USERAGENT, "srq/" SR_VERSION);
	SETOPT(e, CURLOPT_NOSIGNAL, 1L);
	SETOPT(e, CURLOPT_TIMEOUT_MS, ed->acct->timeout_ms);
	SETOPT(e, CURLOPT_CONNECTTIMEOUT_MS, ed->acct->connect_timeout_ms);
	/* A connection idle longer than this is not reused: the carrier may
	 * have closed it, and a request on a dying connection may be lost. */
	SETOPT(e, CURLOPT_MAXAGE_CONN, (ed->acct->keepalive_ms + 999) / 1000);
	SETOPT(e, CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(e, CURLOPT_WRITEDATA, call);
	SETOPT(e, CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(e, CURLOPT_HEADERDATA, call);
	SETOPT(e, CURLOPT_PRIVATE, call);
	SETOPT(e, CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(e, CURLOPT_PREREQFUNCTION, on_prereq);
	SETOPT(e, CURLOPT_PREREQDATA, call);
	if (strcmp(t->method, "GET")) {
		/* The body is handed to libcurl by a read callback with no way to
		 * rewind: when a kept-alive connection dies before any byte of the
		 * answer, libcurl would silently re-send the request on a new
		 * connection (a carrier that applied the first would see the change
		 * twice). Unable to rewind, it fails the transfer instead
		 * (CURLE_SEND_FAIL_REWIND), which is classified unknown and settled
		 * by a status query. */
		call->reqlen = sends_body(t) ? bb.len : 0;
		call->reqbody = sr_malloc(call->reqlen + 1);
		memcpy(call->reqbody, body, call->reqlen);
		call->reqoff = 0;
		SETOPT(e, CURLOPT_READFUNCTION, on_read);
		SETOPT(e, CURLOPT_READDATA, call);
		if (!strcmp(t->method, "POST")) {
			SETOPT(e, CURLOPT_POST, 1L);
			SETOPT(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)call->reqlen);
		} else {
			SETOPT(e, CURLOPT_UPLOAD, 1L);
			SETOPT(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)call->reqlen);
			if (strcmp(t->method, "PUT"))
				SETOPT(e, CURLOPT_CUSTOMREQUEST, t->method);
		}
	}
	if (p->basic) {
		char up[1024], *colon;
		struct sr_buf ab = { up, 0, sizeof up };

		b.err[0] = '\0';
		if (sr_expand(p->basic, SR_CTX_RAW, lookup, &b, &ab, b.err, sizeof b.err) < 0 ||
		    !(colon = strchr(up, ':'))) {
			snprintf(call->error, sizeof call->error, "basic credentials not built: %s",
			    b.err[0] ? b.err : "no ':'");
			memset(up, 0, sizeof up);
			return -1;
		}
		{
			/* What goes on the wire, and what a carrier echoes
			 * ("Basic dXNlcj..."): base64 of user:password. */
			unsigned char b64[4 * (sizeof up / 3 + 1) + 1];

			EVP_EncodeBlock(b64, (const unsigned char *)up, (int)strlen(up));
			note_secret(&b, (const char *)b64);
			memset(b64, 0, sizeof b64);
		}
		*colon = '\0';
		SETOPT(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		SETOPT(e, CURLOPT_USERNAME, up);
		SETOPT(e, CURLOPT_PASSWORD, colon + 1);
		memset(up, 0, sizeof up);
	}
	memset(url, 0, sizeof url); /* it may carry a token */
	memset(body, 0, sizeof body);
	if (curl_multi_add_handle(gw->multi, e) != CURLM_OK) {
		snprintf(call->error, sizeof call->error, "libcurl: cannot start the transfer");
		return -1;
	}
	gw->running++;
	ed->running++;
	call->origin->running++;
	return 0;
setopt_failed:
	snprintf(call->error, sizeof call->error, "libcurl refused an option");
	return -1;
}

static void
cleanup(struct sr_call *call)
{
	if (call->easy)
		curl_easy_cleanup(call->easy);
	call->easy = NULL;
	curl_slist_free_all(call->headers);
	call->headers = NULL;
	free(call->body);
	call->body = NULL;
	if (call->reqbody)
		memset(call->reqbody, 0, call->reqlen);
	free(call->reqbody);
	call->reqbody = NULL;
	forget_sent_secrets(call);
}

void
sr_gateway_start(struct sr_gateway *gw, struct sr_call *call)
{
	struct sr_edge *ed = sr_gateway_edge(gw, call->carrier);

	call->edge = ed;
	call->error[0] = call->observed[0] = call->raw_state[0] = call->order[0] = '\0';
	call->answer_card[0] = '\0';
	if (strcmp(call->action, "poll")) /* (a poll's is the order it asks about) */
		call->txn[0] = '\0';
	call->http = 0;
	call->retry_after_ms = 0;
	call->class = NULL;
	call->in_progress = 0;
	call->verdict = -1;
	call->ms = 0;
	call->is_fetch = 0;
	call->local_fail = 0;
	if (start(gw, ed, call) < 0) {
		/* (a profile's secret unset or unreadable, a signature that
		 * failed: the configuration's fault, not the gateway's) */
		cleanup(call);
		call->local_fail = 1;
		fail_now(gw, call, "not_sent", NULL);
	}
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
		token_forget(e);
		if (start(gw, e, e->fetch) < 0) {
			snprintf(e->auth_error, sizeof e->auth_error, "%s", e->fetch->error);
			e->auth_class = "auth";
			e->auth_failed = 1;
			e->auth_failed_until = sr_mono_ms() + AUTH_RETRY_MS;
			cleanup(e->fetch);
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
	token_forget(e);
	secrets_free(e); /* files are read again */
}

static void
fetch_done(struct sr_edge *e, CURLcode rc, long http)
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
		redact_secrets(f, e->auth_error, sizeof e->auth_error);
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
	cleanup(f);
	free(f);
	e->fetch = NULL;
}

/* ------------------------------------------------------------ running */

int
sr_gateway_running(struct sr_gateway *gw)
{
	return gw->running;
}

void
sr_gateway_poll(struct sr_gateway *gw, int timeout_ms, int extra_fd)
{
	struct curl_waitfd wfd = { extra_fd, CURL_WAIT_POLLIN, 0 };
	int still;

	if (gw->nfailed)
		timeout_ms = 0;
	curl_multi_perform(gw->multi, &still);
	curl_multi_wait(gw->multi, extra_fd >= 0 ? &wfd : NULL, extra_fd >= 0 ? 1 : 0, timeout_ms,
	    NULL);
	curl_multi_perform(gw->multi, &still);
}

static void
classify_transport(struct sr_call *call, CURLcode rc, CURL *e)
{
	curl_off_t pre = 0;

	/* The request went once (libcurl was about to send it: on_prereq) and
	 * what failed came after: libcurl's own retry on a new connection that
	 * could not connect, or the handshake of that one. The carrier may have
	 * applied the first send: a change is unknown, never not_sent (which
	 * gives the card its interval back and calls it again). */
	if (call->sends > 0 && is_change(call)) {
		call->outcome = SR_OUT_UNKNOWN;
		return;
	}
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
	/* The carrier's certificate refused (expired, another host's, an
	 * unknown CA, a pinned key that does not match): the TLS handshake
	 * stopped before a byte of the request was sent. Unknown would keep the
	 * card's interval and settle nothing: its status query fails the same. */
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
		call->outcome = SR_OUT_RETRY; /* never reached the carrier */
		call->class = "not_sent";
		return;
	case CURLE_OPERATION_TIMEDOUT:
		curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pre);
		call->outcome = pre == 0 ? SR_OUT_RETRY : SR_OUT_UNKNOWN;
		call->class = pre == 0 ? "not_sent" : NULL;
		return;
	default:
		call->outcome = SR_OUT_UNKNOWN; /* got nothing, reset, partial: may have applied */
	}
}

/* The error of a call libcurl failed, in words that say what happened:
 * libcurl's own name for some of them misleads (a header over its limit is
 * "Out of memory", an answer after a 100 Continue that is not HTTP
 * "Unsupported protocol", as if srq had asked for a wrong scheme). */
static void
transport_error(struct sr_call *call, CURLcode rc)
{
	char *err = call->error;
	size_t n = sizeof call->error;

	if (call->sends > 1 && rc == CURLE_ABORTED_BY_CALLBACK)
		snprintf(err, n, "the connection closed with no answer after the request was sent "
		    "(not sent again)");
	/* While reading the answer's headers, libcurl runs out of memory only
	 * at its limit for one header line (CURL_MAX_HTTP_HEADER): srq's own
	 * allocations end the process when memory runs out. */
	else if (rc == CURLE_OUT_OF_MEMORY && call->sends > 0 && !call->headers_done)
		snprintf(err, n, "response header too long (over libcurl's limit): the answer was "
		    "not read");
	else if ((rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_WEIRD_SERVER_REPLY) &&
	    call->sends > 0) {
		if (call->status_seen && (call->status_seen < 200 || call->status_seen > 599))
			snprintf(err, n, "carrier answered with HTTP status %ld (not a final status), then "
			    "no answer libcurl could read", call->status_seen);
		else
			snprintf(err, n, "carrier answered with no HTTP status line libcurl could read");
	} else
		snprintf(err, n, "%s", curl_easy_strerror(rc));
}

/* What the call's timings teach about the account's connections. */
static void
learn(struct sr_edge *ed, struct sr_call *call, CURL *e)
{
	long port = 0, news = 0;
	curl_off_t pre = 0, ttfb = 0;
	int64_t now = sr_mono_ms();

	curl_easy_getinfo(e, CURLINFO_LOCAL_PORT, &port);
	curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &news);
	curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pre);
	curl_easy_getinfo(e, CURLINFO_STARTTRANSFER_TIME_T, &ttfb);
	call->cold = news > 0;
	if (port > 0) {
		if (call->conn_close)
			conn_closed(call->origin, port);
		else
			conn_used(call->origin, port, now);
	}
	if (ttfb <= 0)
		return;
	if (!call->cold) {
		/* The answer time of a warm call: the carrier's own latency. */
		long warm = (long)((ttfb - pre) / 1000);

		if (ed->warm_ms < 0 || warm < ed->warm_ms)
			ed->warm_ms = warm;
	} else {
		/* A new connection's setup: what libcurl saw (TCP, TLS), or, when a
		 * carrier sets it up lazily, the extra answer time it cost. Once a
		 * few are known, the pace charges the longest of the last ones and
		 * a quarter more (the profile's connect_budget_ms until then), so a
		 * quick carrier is not charged a slow one's setup. */
		long setup = (long)(pre / 1000), extra = (long)(ttfb / 1000) - ed->warm_ms;
		long most = 0;

		if (ed->warm_ms >= 0 && extra > setup)
			setup = extra;
		ed->setups[ed->nsetups++ % SR_EDGE_SETUPS] = setup < 10000 ? setup : 10000;
		for (int i = 0; i < SR_EDGE_SETUPS && i < ed->nsetups; i++)
			if (ed->setups[i] > most)
				most = ed->setups[i];
		if (ed->nsetups >= 3)
			ed->cold_ms = most + most / 4 + 1;
	}
}

static void
classify(struct sr_call *call)
{
	const struct sr_profile *p = call->edge->acct->p;
	struct sr_answer a;
	enum sr_ask ask = !strcmp(call->action, "status") ? SR_ASK_QUERY :
	    !strcmp(call->action, "poll") ? SR_ASK_POLL : SR_ASK_CHANGE;

	if (call->body_cut) {
		/* Its end was not kept: what it says there (an error after a
		 * padded ok) is unknown, and so is the answer. */
		call->verdict = SR_V_UNKNOWN;
		call->outcome = SR_OUT_UNKNOWN;
		snprintf(call->error, sizeof call->error,
		    "carrier answered HTTP %ld with a body over %d bytes: not read", call->http, BODY_MAX);
		return;
	}
	sr_classify(p, call->http, call->body, call->body_len, ask, call->card, call->txn, &a);
	/* Each field the carrier wrote, redacted on its own: one cut short to
	 * its field's size ends in the start of a secret, which the error put
	 * together from them would carry in its middle, past the check for a
	 * secret cut short at the end. */
	redact_secrets(call, a.code, sizeof a.code);
	redact_secrets(call, a.msg, sizeof a.msg);
	redact_secrets(call, a.card, sizeof a.card);
	call->verdict = a.verdict;
	snprintf(call->observed, sizeof call->observed, "%s", a.observed);
	snprintf(call->raw_state, sizeof call->raw_state, "%s", a.raw_state);
	snprintf(call->order, sizeof call->order, "%s", a.order);
	/* (A poll's txn is the order it asked about, kept.) */
	if (ask != SR_ASK_POLL)
		snprintf(call->txn, sizeof call->txn, "%s", a.txn);
	switch (a.verdict) {
	case SR_V_OK: call->outcome = SR_OUT_OK; break;
	case SR_V_IN_PROGRESS: call->outcome = SR_OUT_OK; call->in_progress = 1; break;
	case SR_V_ALREADY: call->outcome = SR_OUT_ALREADY; break;
	case SR_V_THROTTLE: call->outcome = SR_OUT_RETRY; call->class = "throttled"; break;
	case SR_V_TOO_FREQUENT: call->outcome = SR_OUT_RETRY; call->class = "too_frequent"; break;
	case SR_V_REFUSED: call->outcome = SR_OUT_RETRY; call->class = "refused"; break;
	case SR_V_REAUTH: call->outcome = SR_OUT_RETRY; call->class = "auth"; break;
	case SR_V_FAIL: call->outcome = SR_OUT_FAIL; break;
	default: call->outcome = SR_OUT_UNKNOWN;
	}
	/* What the answer named, believed or not (a probe shows it). */
	snprintf(call->answer_card, sizeof call->answer_card, "%s", a.card);
	if (a.mismatch) {
		/* Not believed: the call may have applied (a change is then
		 * queried), and what a query said is no observation. */
		call->class = "mismatch";
		if (a.mismatch == 2) {
			redact_secrets(call, a.txn, sizeof a.txn);
			snprintf(call->error, sizeof call->error, a.txn[0] ?
			    "HTTP %ld: the answer is about order %s, not %s" :
			    "HTTP %ld: the answer names no order%s, not %s", call->http, a.txn, call->txn);
		} else if (a.card[0])
			snprintf(call->error, sizeof call->error, "HTTP %ld: the answer is about card %s, not %s",
			    call->http, a.card, call->card);
		else
			snprintf(call->error, sizeof call->error, "HTTP %ld: the answer names no card", call->http);
	} else if (a.unread[0])
		snprintf(call->error, sizeof call->error, "%s", a.unread);
	else if (call->outcome != SR_OUT_OK && call->outcome != SR_OUT_ALREADY)
		snprintf(call->error, sizeof call->error, "HTTP %ld%s%s%s%s", call->http,
		    a.code[0] ? " " : "", a.code, a.msg[0] ? " " : "", a.msg);
	redact_secrets(call, call->error, sizeof call->error);
	redact_secrets(call, call->raw_state, sizeof call->raw_state);
	redact_secrets(call, call->txn, sizeof call->txn);
	redact_secrets(call, call->answer_card, sizeof call->answer_card);
}

struct sr_call *
sr_gateway_done(struct sr_gateway *gw)
{
	int left;
	CURLMsg *m;

	if (gw->nfailed) {
		struct sr_call *c = gw->failed[0];

		memmove(gw->failed, gw->failed + 1, (size_t)--gw->nfailed * sizeof *gw->failed);
		return c;
	}
	while ((m = curl_multi_info_read(gw->multi, &left))) {
		struct sr_call *call;
		struct sr_edge *ed;
		CURL *e = m->easy_handle;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&call);
		ed = call->edge;
		curl_multi_remove_handle(gw->multi, e);
		gw->running--;
		ed->running--;
		call->origin->running--;
		call->ms = sr_mono_ms() - call->started;
		learn(ed, call, e);
		if (call->is_fetch) {
			long http = 0;

			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &http);
			fetch_done(ed, m->data.result, http);
			continue;
		}
		if (m->data.result == CURLE_OK) {
			curl_off_t ra = 0;

			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &call->http);
			classify(call);
			if (curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
				call->retry_after_ms = (ra > 3600 ? 3600 : ra) * 1000;
		} else {
			classify_transport(call, m->data.result, e);
			transport_error(call, m->data.result);
		}
		cleanup(call);
		return call;
	}
	return NULL;
}

/* ------------------------------------------------------------ checking a profile */

int
sr_edge_check(struct sr_gateway *gw, struct sr_edge *e, json_t *report)
{
	const char *const *names = sr_req_name;
	const struct sr_profile *p = e->acct->p;
	json_t *reqs = json_object(), *secrets = json_object();
	struct sr_call call;
	int bad = 0;

	memset(&call, 0, sizeof call);
	snprintf(call.card, sizeof call.card, "89860000000000000000");
	snprintf(call.carrier, sizeof call.carrier, "%s", e->acct->id);
	call.ver = 1;
	/* Every secret, as the account would get it: set, unset, or unreadable. */
	for (int i = 0; i < p->nvars; i++) {
		struct build b;
		int failed = 0;
		const char *v;

		if (!p->vars[i].secret)
			continue;
		build_init(&b, gw, e, &call, "stop");
		v = secret_value(&b, &p->vars[i], &failed);
		json_object_set_new(secrets, p->vars[i].name, json_string(failed ? b.err : v ? "set" : "not set"));
		bad |= failed;
	}
	/* Every request built as it would be, sent nowhere. */
	snprintf(call.txn, sizeof call.txn, "T0");
	for (int r = 0; r < SR_REQ_COUNT; r++) {
		const struct sr_request_tmpl *t = &p->req[r];
		char url[REQ_MAX], body[REQ_MAX];
		struct sr_buf ub = { url, 0, sizeof url }, bb = { body, 0, sizeof body };
		struct build b;

		if (!t->url)
			continue;
		snprintf(call.action, sizeof call.action, "%s", r == SR_REQ_QUERY ? "status" :
		    r == SR_REQ_TOKEN ? "token" : names[r]);
		build_init(&b, gw, e, r == SR_REQ_TOKEN ? NULL : &call, call.action);
		b.checking = 1;
		if (build_request(&b, t, &ub, &bb) == BUILT)
			for (int i = 0; i < p->nheaders && !b.err[0]; i++) {
				char hdr[2048];
				struct sr_buf hb = { hdr, 0, sizeof hdr };

				b.unset = 0;
				if (sr_expand(p->headers[i], SR_CTX_HEADER, lookup, &b, &hb, b.err,
				    sizeof b.err) < 0 && b.unset && !strstr(b.err, "cannot read"))
					b.err[0] = '\0'; /* an optional header, left out */
			}
		memset(url, 0, sizeof url);
		memset(body, 0, sizeof body);
		json_object_set_new(reqs, names[r], json_string(b.err[0] ? b.err : "ok"));
		bad |= b.err[0] != '\0';
	}
	json_object_set_new(report, "requests", reqs);
	json_object_set_new(report, "secrets", secrets);
	return bad ? -1 : 0;
}
