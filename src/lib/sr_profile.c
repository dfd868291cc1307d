/* sr_profile.c - carrier profiles: how srq talks to each account's carrier.
 *
 * A profile is a line-oriented "key = value" file (README, "Carrier
 * profiles"): which accounts it serves, their limits, the requests (URL,
 * method, headers and body templates), the authentication, and the rules that
 * classify the carrier's answers. Profiles live in SRQ_PROFILES (a directory
 * of *.profile files, read in name order); an account uses the first whose
 * 'accounts' patterns match it, and the default profile otherwise: the
 * directory's default.profile, or the built-in one (srq's own gateway
 * contract, share/profiles/default.profile).
 *
 * This file parses profiles, resolves an account's settings (profile first,
 * then the environment's defaults), expands templates, and classifies
 * answers. It never prints a secret: secret values are resolved by the
 * gateway client, per account, when a request is built.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sr.h"

extern const char sr_default_profile[]; /* generated from share/profiles/default.profile */

static struct sr_profile **profiles;
static int nprofiles;
static struct sr_profile *builtin;

#define ACCT_BUCKETS 256
static struct sr_account *accounts[ACCT_BUCKETS];

/* ------------------------------------------------------------ parsing */

struct parse {
	struct sr_profile *p;
	const char *file, *dir;
	int line, depth;
	char err[300];
	char **seen; /* the keys this file set (a repeatable key: its first line) */
	int *seen_line;
	int nseen;
};

/* A profile holds secrets (a header's value, a literal in secret.NAME,
 * sign.key, a token in a URL), and a line under the wrong key, or under
 * none, carries one into its error, which goes to stderr and the logs. So
 * an error names the file, the line and the key (when the key is a name),
 * and shows nothing of a value but what srq looks up by name: the profile
 * 'from' names, a placeholder, a rule's condition. */
static int
perr(struct parse *ps, const char *fmt, const char *arg)
{
	char msg[160];

	snprintf(msg, sizeof msg, fmt, arg);
	snprintf(ps->err, sizeof ps->err, "%s: line %d: %s", ps->file, ps->line, msg);
	return -1;
}

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* A bounded integer; -1 with an error when out of [lo, hi] or not a number. */
static int
pnum(struct parse *ps, const char *key, const char *v, long lo, long hi, long *out)
{
	long n = sr_parse_long(v);

	if (n < lo || n > hi) {
		char what[120];

		snprintf(what, sizeof what, "%s: the value is not an integer from %ld to %ld", key, lo, hi);
		return perr(ps, "%s", what);
	}
	*out = n;
	return 0;
}

static int
preal(struct parse *ps, const char *key, const char *v, double lo, double hi, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (!*v || *end || errno || !(d >= lo && d <= hi)) {
		char what[120];

		snprintf(what, sizeof what, "%s: the value is not a number from %g to %g", key, lo, hi);
		return perr(ps, "%s", what);
	}
	*out = d;
	return 0;
}

static void
push_str(char ***v, int *n, const char *s)
{
	*v = sr_realloc(*v, (size_t)(*n + 1) * sizeof **v);
	(*v)[(*n)++] = sr_strdup(s);
}

static int
in_list(const char *list, const char *v)
{
	size_t n = strlen(v);

	for (const char *p = list; p && *p;) {
		size_t k = strcspn(p, ",");

		if (k == n && !strncmp(p, v, n))
			return 1;
		p += k;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* Whether two comma-separated lists of codes share one. */
static int
lists_share(const char *a, const char *b)
{
	char code[64];

	for (const char *p = a; p && *p;) {
		size_t k = strcspn(p, ",");

		snprintf(code, sizeof code, "%.*s", (int)(k < sizeof code ? k : sizeof code - 1), p);
		if (in_list(b, code))
			return 1;
		p += k;
		if (*p == ',')
			p++;
	}
	return 0;
}

static const struct {
	const char *name;
	int verdict;
} verdicts[] = {
	{ "ok", SR_V_OK }, { "already", SR_V_ALREADY }, { "in_progress", SR_V_IN_PROGRESS },
	{ "throttle", SR_V_THROTTLE }, { "too_frequent", SR_V_TOO_FREQUENT },
	{ "retry", SR_V_REFUSED }, { "fail", SR_V_FAIL }, { "unknown", SR_V_UNKNOWN },
	{ "reauth", SR_V_REAUTH },
};

int
sr_verdict_parse(const char *name)
{
	for (size_t i = 0; i < sizeof verdicts / sizeof verdicts[0]; i++)
		if (!strcmp(verdicts[i].name, name))
			return verdicts[i].verdict;
	return -1;
}

const char *
sr_verdict_name(int v)
{
	for (size_t i = 0; i < sizeof verdicts / sizeof verdicts[0]; i++)
		if (verdicts[i].verdict == v)
			return verdicts[i].name;
	return "?";
}

/* "http=200,409 code=OK msg~text body~text => outcome", or "* => outcome". */
static int
parse_rule(struct parse *ps, char *v, struct sr_rule **rules, int *nrules)
{
	struct sr_rule r;
	char *arrow = strstr(v, "=>"), *tok, *save;
	const char *out;
	size_t i;

	memset(&r, 0, sizeof r);
	if (!arrow)
		return perr(ps, "%s", "rule: no '=> outcome'");
	*arrow = '\0';
	out = trim(arrow + 2);
	for (i = 0; i < sizeof verdicts / sizeof verdicts[0]; i++)
		if (!strcmp(out, verdicts[i].name))
			break;
	if (i == sizeof verdicts / sizeof verdicts[0])
		return perr(ps, "%s", "rule: the outcome is not one of ok already in_progress throttle "
		    "too_frequent retry fail unknown reauth");
	r.verdict = verdicts[i].verdict;
	r.line = ps->line;
	for (tok = strtok_r(v, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (!strcmp(tok, "*"))
			continue;
		if ((!strncmp(tok, "http=", 5) && !tok[5]) || (!strncmp(tok, "code=", 5) && !tok[5]))
			return perr(ps, "rule: '%s' names nothing (an empty list would match every answer)", tok);
		if (!strncmp(tok, "http=", 5)) {
			char *part, *s2;

			for (part = strtok_r(tok + 5, ",", &s2); part; part = strtok_r(NULL, ",", &s2)) {
				char *dash = strchr(part, '-');
				long lo, hi;

				if (r.nhttp == SR_RULE_HTTP_MAX)
					return perr(ps, "rule: too many statuses in '%s'", tok);
				if (dash)
					*dash = '\0';
				lo = sr_parse_long(part);
				hi = dash ? sr_parse_long(dash + 1) : lo;
				if (lo < 100 || hi > 599 || hi < lo)
					return perr(ps, "rule: '%s' is not an HTTP status or range", part);
				r.http_lo[r.nhttp] = lo;
				r.http_hi[r.nhttp++] = hi;
			}
		} else if (!strncmp(tok, "code=", 5)) {
			char *part, *s2;

			for (part = strtok_r(tok + 5, ",", &s2); part; part = strtok_r(NULL, ",", &s2))
				push_str(&r.codes, &r.ncodes, part);
		} else if (!strncmp(tok, "msg~", 4) && tok[4]) {
			r.msg = sr_strdup(tok + 4);
		} else if (!strncmp(tok, "body~", 5) && tok[5]) {
			r.body = sr_strdup(tok + 5);
		} else
			return perr(ps, "rule: unknown condition '%s' (http= code= msg~ body~ *)", tok);
	}
	*rules = sr_realloc(*rules, (size_t)(*nrules + 1) * sizeof **rules);
	(*rules)[(*nrules)++] = r;
	return 0;
}

static int
parse_type(struct parse *ps, const char *key, const char *v, int *type)
{
	if (!strcmp(v, "json"))
		*type = SR_BODY_JSON;
	else if (!strcmp(v, "form"))
		*type = SR_BODY_FORM;
	else if (!strcmp(v, "text"))
		*type = SR_BODY_TEXT;
	else if (!strcmp(v, "none"))
		*type = SR_BODY_NONE;
	else {
		char what[80];

		snprintf(what, sizeof what, "%s: the value is not json, form, text or none", key);
		return perr(ps, "%s", what);
	}
	return 0;
}

static int
valid_name(const char *s)
{
	if (!*s || strlen(s) > 32)
		return 0;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

/* Placeholders every request knows; a set. or secret. name may not shadow them. */
static const char *const builtin_names[] = { "card", "carrier", "action", "ver", "reqid", "base",
	"gateway", "token", "ts", "ms", "seq", "nonce", "params", "sign", "txn", NULL };

const char *const sr_req_name[SR_REQ_COUNT] = {
	[SR_REQ_STOP] = "stop", [SR_REQ_RESUME] = "resume", [SR_REQ_QUERY] = "query",
	[SR_REQ_TOKEN] = "token", [SR_REQ_POLL] = "poll",
};

static void
rules_free(struct sr_rule *rules, int n);

/* A key this file sets for the first time overrides what a base profile
 * ('from') gave; a repeatable key's first line replaces the base's list. A
 * key set twice in one file is an error (which one was meant?). */
static int
first_in_file(struct parse *ps, const char *key, int repeatable)
{
	struct sr_profile *p = ps->p;

	for (int i = 0; i < ps->nseen; i++)
		if (!strcmp(ps->seen[i], key)) {
			if (repeatable)
				return 0;
			return perr(ps, "'%s' is set twice", key);
		}
	ps->seen_line = sr_realloc(ps->seen_line, (size_t)(ps->nseen + 1) * sizeof *ps->seen_line);
	ps->seen_line[ps->nseen] = ps->line;
	push_str(&ps->seen, &ps->nseen, key);
	if (!repeatable)
		return 1;
	if (!strcmp(key, "accounts")) {
		for (int i = 0; i < p->naccounts; i++)
			free(p->accounts[i]);
		p->naccounts = 0;
	} else if (!strcmp(key, "header")) {
		for (int i = 0; i < p->nheaders; i++)
			free(p->headers[i]);
		p->nheaders = 0;
	} else if (!strcmp(key, "rule")) {
		rules_free(p->rules, p->nrules);
		p->rules = NULL;
		p->nrules = 0;
	} else if (!strcmp(key, "query.rule")) {
		rules_free(p->qrules, p->nqrules);
		p->qrules = NULL;
		p->nqrules = 0;
	}
	return 1;
}

static int parse_text(struct parse *ps, const char *text);

static char *
slurp(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (!f) {
		snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	buf = sr_malloc(SR_PROFILE_MAX + 1);
	n = fread(buf, 1, SR_PROFILE_MAX + 1, f);
	fclose(f);
	if (n > SR_PROFILE_MAX) {
		snprintf(err, errlen, "'%s' is over %d bytes", path, SR_PROFILE_MAX);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	if (memchr(buf, '\0', n)) {
		snprintf(err, errlen, "'%s' holds a NUL byte", path);
		free(buf);
		return NULL;
	}
	return buf;
}


/* The shipped example profiles as make install lays them out: the tools in
 * PREFIX/bin, the examples in PREFIX/share/srq/profiles, so from the
 * directory of the running tool they are ../share/srq/profiles (a prefix
 * moved whole, or a DESTDIR staging tree, finds its own). Written into buf;
 * -1 when the running executable cannot be named. */
static int
examples_dir(char *buf, size_t len)
{
	char exe[4096], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	if (!(slash = strrchr(exe, '/')))
		return -1;
	*slash = '\0';
	snprintf(buf, len, "%s/../share/srq/profiles", exe);
	return 0;
}

/* from = NAME: start from another profile (the built-in 'default', or a
 * profile file of the same directory, else of the installed examples), then
 * override what this file sets. */
static int
parse_from(struct parse *ps, const char *name)
{
	char path[4096], err[200], dir[4096], *text = NULL;
	struct parse base;
	int rc;

	if (ps->nseen > 1)
		return perr(ps, "%s", "'from' must come before every other key");
	if (ps->depth >= 4)
		return perr(ps, "from = %s: profiles derived too deep", name);
	memset(&base, 0, sizeof base);
	base.p = ps->p;
	base.dir = ps->dir;
	base.depth = ps->depth + 1;
	if (!strcmp(name, "default")) {
		base.file = "(built-in default)";
		rc = parse_text(&base, sr_default_profile);
	} else {
		if (!sr_valid_id(name) || !ps->dir)
			return perr(ps, "from: no profile '%s'", name);
		snprintf(path, sizeof path, "%s/%s.profile", ps->dir, name);
		if (access(path, F_OK) != 0 && errno == ENOENT && examples_dir(dir, sizeof dir) == 0) {
			char shipped[4096 + 300];

			snprintf(shipped, sizeof shipped, "%s/%s.profile", dir, name);
			if (access(shipped, F_OK) != 0) {
				snprintf(ps->err, sizeof ps->err, "%s: line %d: from: no profile '%s' in %s, "
				    "nor in the installed examples (%s)", ps->file, ps->line, name, ps->dir, dir);
				return -1;
			}
			snprintf(path, sizeof path, "%s", shipped);
		}
		if (!(text = slurp(path, err, sizeof err)))
			return perr(ps, "from: %s", err);
		base.file = path;
		rc = parse_text(&base, text);
		free(text);
	}
	for (int i = 0; i < base.nseen; i++)
		free(base.seen[i]);
	free(base.seen);
	free(base.seen_line);
	if (rc < 0) {
		snprintf(ps->err, sizeof ps->err, "%s", base.err);
		return -1;
	}
	/* The base's accounts are its own business. */
	for (int i = 0; i < ps->p->naccounts; i++)
		free(ps->p->accounts[i]);
	ps->p->naccounts = 0;
	return 0;
}

/* max_share = F (every class of sr-rate's callers) or max_share.CLASS = F
 * (that class): the fraction of the account's rate one class may take. A
 * profile's overrides its base's, class by class. */
static int
parse_share(struct parse *ps, const char *key, const char *v)
{
	struct sr_profile *p = ps->p;
	const char *cls = key[9] ? key + 10 : "*";
	double share;
	int i;

	if (key[9] && (!valid_name(cls) || !strcmp(cls, "srq")))
		return perr(ps, "'%s': a class is [a-z0-9_]{1,32}, and not srq (srq's own calls)", key);
	if (preal(ps, key, v, 0.01, 1, &share) < 0)
		return -1;
	for (i = 0; i < p->nshares && strcmp(p->shares[i].cls, cls); i++)
		;
	if (i == p->nshares) {
		p->shares = sr_realloc(p->shares, (size_t)(p->nshares + 1) * sizeof *p->shares);
		p->shares[p->nshares++].cls = sr_strdup(cls);
	}
	p->shares[i].share = share;
	return 0;
}

static int
parse_line(struct parse *ps, char *key, char *v)
{
	struct sr_profile *p = ps->p;
	int rep = !strcmp(key, "accounts") || !strcmp(key, "header") || !strcmp(key, "rule") ||
	    !strcmp(key, "query.rule"), first;
	struct {
		const char *key;
		long *dst, lo, hi;
	} nums[] = {
		{ "qps", &p->qps, 1, 100000 },
		{ "burst", &p->burst, 1, 1000 },
		{ "max_inflight", &p->running, 1, 100000 },
		{ "reserve_qps", &p->reserve_qps, 0, 100000 },
		{ "interval_ms", &p->interval_ms, 0, 86400000L * 7 },
		{ "timeout_ms", &p->timeout_ms, 100, 600000 },
		{ "connect_timeout_ms", &p->connect_timeout_ms, 100, 600000 },
		{ "connect_budget_ms", &p->connect_budget_ms, 0, 60000 },
		{ "keepalive_ms", &p->keepalive_ms, 0, 3600000 },
		{ "poll_ms", &p->poll_ms, 100, 3600000 },
		{ "settle_ms", &p->settle_ms, 0, 86400000 },
		{ "aimd_memory_ms", &p->aimd_memory_ms, 0, 3600000 },
		{ "breaker_failures", &p->brk_failures, 1, 1000000 },
		{ "breaker_window_ms", &p->brk_window_ms, 1000, 3600000 },
		{ "breaker_cooldown_ms", &p->brk_cool_ms, 100, 3600000 },
		{ "breaker_cooldown_max_ms", &p->brk_cool_max_ms, 100, 86400000 },
		{ "token.ttl_s", &p->token_ttl_s, 1, 86400 * 30 },
	};
	struct {
		const char *key;
		char **dst;
	} strs[] = {
		{ "base", &p->base }, { "reqid", &p->reqid }, { "basic", &p->basic },
		{ "token.field", &p->token_field }, { "token.ttl_field", &p->token_ttl_field },
		{ "sign.input", &p->sign_input }, { "sign.key", &p->sign_key },
		{ "code", &p->code_path }, { "message", &p->msg_path }, { "state", &p->state_path },
		{ "txn", &p->txn_path }, { "state.active", &p->state_active },
		{ "card", &p->card_path }, { "query.card", &p->qcard_path },
		{ "state.stopped", &p->state_stopped }, { "state.pending", &p->state_pending },
		{ "poll.state", &p->poll_state }, { "poll.done", &p->poll_done },
		{ "poll.failed", &p->poll_failed }, { "poll.pending", &p->poll_pending },
		{ "poll.card", &p->poll_card }, { "poll.txn", &p->poll_txn },
	};

	/* Text before an '=' that is no key name may be a secret (a token
	 * with base64 padding on a line of its own): not shown. */
	if (!sr_valid_id(key)) {
		if (!strncmp(key, "set.", 4) || !strncmp(key, "secret.", 7))
			return perr(ps, "%s.NAME: the name is not [a-z0-9_]{1,32} (not shown)",
			    key[1] == 'e' && key[2] == 'c' ? "secret" : "set");
		return perr(ps, "%s", "unknown key (not shown: it is not a key name)");
	}
	if (strncmp(key, "set.", 4) && strncmp(key, "secret.", 7) &&
	    (first = first_in_file(ps, key, rep)) < 0)
		return -1;
	if (!strcmp(key, "from"))
		return parse_from(ps, v);
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
		if (!strcmp(key, nums[i].key))
			return pnum(ps, key, v, nums[i].lo, nums[i].hi, nums[i].dst);
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
		if (!strcmp(key, strs[i].key)) {
			free(*strs[i].dst);
			*strs[i].dst = sr_strdup(v);
			return 0;
		}
	if (!strcmp(key, "aimd_increase"))
		return preal(ps, key, v, 0.01, 100000, &p->aimd_inc);
	if (!strcmp(key, "aimd_decrease"))
		return preal(ps, key, v, 0.1, 0.99, &p->aimd_beta);
	if (!strcmp(key, "aimd_noise"))
		return preal(ps, key, v, 0, 0.5, &p->aimd_noise);
	if (!strcmp(key, "breaker_ratio"))
		return preal(ps, key, v, 0.01, 1, &p->brk_ratio);
	if (!strcmp(key, "max_share") || !strncmp(key, "max_share.", 10))
		return parse_share(ps, key, v);
	if (!strcmp(key, "accounts")) {
		char *tok, *save;

		for (tok = strtok_r(v, " ,\t", &save); tok; tok = strtok_r(NULL, " ,\t", &save))
			push_str(&p->accounts, &p->naccounts, tok);
		return 0;
	}
	if (!strcmp(key, "async")) {
		if (strcmp(v, "yes") && strcmp(v, "no"))
			return perr(ps, "%s", "async: the value is not yes or no");
		p->async = !strcmp(v, "yes");
		return 0;
	}
	if (!strcmp(key, "sign")) {
		if (!strcmp(v, "md5"))
			p->sign = SR_SIGN_MD5;
		else if (!strcmp(v, "sha256"))
			p->sign = SR_SIGN_SHA256;
		else if (!strcmp(v, "hmac-sha256"))
			p->sign = SR_SIGN_HMAC_SHA256;
		else
			return perr(ps, "%s", "sign: the value is not md5, sha256 or hmac-sha256");
		return 0;
	}
	if (!strcmp(key, "sign.case")) {
		if (strcmp(v, "lower") && strcmp(v, "upper"))
			return perr(ps, "%s", "sign.case: the value is not lower or upper");
		p->sign_upper = !strcmp(v, "upper");
		return 0;
	}
	if (!strcmp(key, "header")) {
		if (!strchr(v, ':'))
			return perr(ps, "%s", "header: the value is not 'Name: value'");
		push_str(&p->headers, &p->nheaders, v);
		return 0;
	}
	if (!strcmp(key, "rule"))
		return parse_rule(ps, v, &p->rules, &p->nrules);
	if (!strcmp(key, "query.rule"))
		return parse_rule(ps, v, &p->qrules, &p->nqrules);
	if (!strncmp(key, "set.", 4) || !strncmp(key, "secret.", 7)) {
		int secret = key[1] == 'e' && key[2] == 'c';
		const char *name = key + (secret ? 7 : 4);

		if (!valid_name(name))
			return perr(ps, "'%s': a name is [a-z0-9_]{1,32}", key);
		for (int i = 0; builtin_names[i]; i++)
			if (!strcmp(name, builtin_names[i]))
				return perr(ps, "'%s' would hide the built-in placeholder", key);
		if (first_in_file(ps, key, 0) < 0)
			return -1;
		for (int i = 0; i < p->nvars; i++)
			if (!strcmp(p->vars[i].name, name)) { /* overrides the base's */
				free(p->vars[i].value);
				p->vars[i].value = sr_strdup(v);
				p->vars[i].secret = secret;
				return 0;
			}
		p->vars = sr_realloc(p->vars, (size_t)(p->nvars + 1) * sizeof *p->vars);
		p->vars[p->nvars].name = sr_strdup(name);
		p->vars[p->nvars].value = sr_strdup(v);
		p->vars[p->nvars++].secret = secret;
		return 0;
	}
	for (int r = 0; r < SR_REQ_COUNT; r++) {
		size_t n = strlen(sr_req_name[r]);
		struct sr_request_tmpl *t = &p->req[r];

		if (strncmp(key, sr_req_name[r], n) || key[n] != '.')
			continue;
		if (!strcmp(key + n + 1, "method")) {
			if (strcmp(v, "GET") && strcmp(v, "POST") && strcmp(v, "PUT") && strcmp(v, "PATCH"))
				return perr(ps, "%s.method: the value is not GET, POST, PUT or PATCH", sr_req_name[r]);
			free(t->method);
			t->method = sr_strdup(v);
			return 0;
		}
		if (!strcmp(key + n + 1, "url")) {
			free(t->url);
			t->url = sr_strdup(v);
			return 0;
		}
		if (!strcmp(key + n + 1, "body")) {
			free(t->body);
			t->body = sr_strdup(v);
			return 0;
		}
		if (!strcmp(key + n + 1, "type"))
			return parse_type(ps, key, v, &t->type);
	}
	return perr(ps, "unknown key '%s'", key);
}

static void
profile_init(struct sr_profile *p)
{
	memset(p, 0, sizeof *p);
	p->qps = p->burst = p->running = p->interval_ms = p->timeout_ms = -1;
	p->connect_timeout_ms = p->connect_budget_ms = p->keepalive_ms = -1;
	p->poll_ms = p->settle_ms = p->aimd_memory_ms = -1;
	p->brk_failures = p->brk_window_ms = p->brk_cool_ms = p->brk_cool_max_ms = -1;
	p->token_ttl_s = p->reserve_qps = -1;
	p->aimd_inc = p->aimd_beta = p->aimd_noise = p->brk_ratio = -1;
	for (int r = 0; r < SR_REQ_COUNT; r++)
		p->req[r].type = -1;
}

/* The line of a key this file set (0: it came from a base profile). */
static int
line_of(const struct parse *ps, const char *key)
{
	for (int i = 0; i < ps->nseen; i++)
		if (!strcmp(ps->seen[i], key))
			return ps->seen_line[i];
	return 0;
}

/* The next placeholder {name} of a template at or after t: its name (n
 * bytes of [a-z0-9_]), or NULL when there is none. */
static const char *
next_placeholder(const char *t, size_t *n)
{
	for (; t && (t = strchr(t, '{')); t++) {
		*n = strspn(t + 1, "abcdefghijklmnopqrstuvwxyz0123456789_");
		if (*n > 0 && t[1 + *n] == '}')
			return t + 1;
	}
	return NULL;
}

/* Is the placeholder name (n bytes) this one? */
static int
is_name(const char *name, size_t n, const char *that)
{
	return strlen(that) == n && !strncmp(name, that, n);
}

/* Every {name} of a template is a placeholder the profile knows: a typo
 * ({crad}) is a configuration error now, not a request that fails later. */
static int
check_names(struct parse *ps, const char *key, const char *tmpl)
{
	const struct sr_profile *p = ps->p;
	const char *name;
	size_t n;

	for (const char *t = tmpl; (name = next_placeholder(t, &n)); t = name + n + 1) {
		int known = 0;

		for (int i = 0; builtin_names[i] && !known; i++)
			known = is_name(name, n, builtin_names[i]);
		for (int i = 0; i < p->nvars && !known; i++)
			known = is_name(name, n, p->vars[i].name);
		if (!known || (is_name(name, n, "sign") && !p->sign)) {
			char what[160];

			ps->line = line_of(ps, key);
			if (known)
				snprintf(what, sizeof what, "%s: {sign} with no 'sign' to say how to make it", key);
			else
				snprintf(what, sizeof what, "%s: unknown placeholder {%.*s}", key, (int)n, name);
			return perr(ps, "%s", what);
		}
	}
	return 0;
}

static int
check_templates(struct parse *ps)
{
	struct sr_profile *p = ps->p;
	char key[64];

	if (check_names(ps, "base", p->base) < 0 || check_names(ps, "reqid", p->reqid) < 0 ||
	    check_names(ps, "basic", p->basic) < 0 || check_names(ps, "sign.input", p->sign_input) < 0 ||
	    check_names(ps, "sign.key", p->sign_key) < 0)
		return -1;
	for (int r = 0; r < SR_REQ_COUNT; r++) {
		snprintf(key, sizeof key, "%s.url", sr_req_name[r]);
		if (check_names(ps, key, p->req[r].url) < 0)
			return -1;
		snprintf(key, sizeof key, "%s.body", sr_req_name[r]);
		if (check_names(ps, key, p->req[r].body) < 0)
			return -1;
	}
	for (int i = 0; i < p->nheaders; i++)
		if (check_names(ps, "header", p->headers[i]) < 0)
			return -1;
	for (int i = 0; i < p->nvars; i++) {
		snprintf(key, sizeof key, "%s.%s", p->vars[i].secret ? "secret" : "set", p->vars[i].name);
		if (check_names(ps, key, p->vars[i].value) < 0)
			return -1;
	}
	return 0;
}

/* Does a template name placeholder {that}, itself or through what it
 * names ({base}, {reqid}, a set.NAME)? depth bounds a variable that names
 * itself. */
static int
names(const struct sr_profile *p, const char *tmpl, const char *that, int depth)
{
	const char *name;
	size_t n;

	if (depth > 8)
		return 0;
	for (const char *t = tmpl; (name = next_placeholder(t, &n)); t = name + n + 1) {
		if (is_name(name, n, that) ||
		    (is_name(name, n, "base") && names(p, p->base, that, depth + 1)) ||
		    (is_name(name, n, "reqid") && names(p, p->reqid, that, depth + 1)))
			return 1;
		for (int i = 0; i < p->nvars; i++)
			if (!p->vars[i].secret && is_name(name, n, p->vars[i].name) &&
			    names(p, p->vars[i].value, that, depth + 1))
				return 1;
	}
	return 0;
}

/* {sign} is made last, from the request built around it (README, Signed
 * requests): it may go into a request's URL or body, a header or the Basic
 * credentials, but not into what is filled before the request is ({base},
 * {reqid}), nor into what it is made of. */
static int
check_sign_place(struct parse *ps)
{
	const struct sr_profile *p = ps->p;
	const struct {
		const char *key, *tmpl;
	} before[] = {
		{ "base", p->base }, { "reqid", p->reqid }, { "sign.input", p->sign_input },
		{ "sign.key", p->sign_key },
	};

	for (size_t i = 0; i < sizeof before / sizeof before[0]; i++)
		if (names(p, before[i].tmpl, "sign", 0)) {
			char what[160];

			ps->line = line_of(ps, before[i].key);
			snprintf(what, sizeof what, "%s: {sign} cannot be part of what is filled before "
			    "the request, or of what it signs", before[i].key);
			return perr(ps, "%s", what);
		}
	return 0;
}

/* Order polling (poll.*): all of it or none. A poll that names no {txn}
 * would ask about no order, or another, and be believed; {txn} anywhere
 * else has no value (only a poll has an order). */
static int
check_poll(struct parse *ps)
{
	const struct sr_profile *p = ps->p;
	const struct sr_request_tmpl *t = &p->req[SR_REQ_POLL];
	int named = names(p, t->url, "txn", 0) || names(p, t->body, "txn", 0);

	ps->line = 0;
	for (int r = 0; r < SR_REQ_COUNT; r++)
		if (r != SR_REQ_POLL && (names(p, p->req[r].url, "txn", 0) || names(p, p->req[r].body, "txn", 0)))
			return perr(ps, "%s: {txn} is only known to a poll (poll.url, poll.body)", sr_req_name[r]);
	for (int i = 0; i < p->nheaders; i++)
		if (names(p, p->headers[i], "txn", 0))
			return perr(ps, "%s", "header: {txn} is only known to a poll (poll.url, poll.body)");
	if (!t->url && !t->method && !t->body && !p->poll_state && !p->poll_done && !p->poll_failed &&
	    !p->poll_pending && !p->poll_card && !p->poll_txn)
		return 0;
	if (!t->url || !t->method)
		return perr(ps, "%s", "poll.url and poll.method are required to poll orders");
	if (!named)
		return perr(ps, "%s", "poll: neither poll.url nor poll.body names {txn} (the order asked about)");
	if (!p->poll_state || !p->poll_done)
		return perr(ps, "%s", "poll needs poll.state (where the answer says how the order stands) "
		    "and poll.done (its codes for an order carried out)");
	/* A code in two lists would be read as the first: a failed order
	 * taken for done, or a done one polled until settle_ms. */
	if (lists_share(p->poll_done, p->poll_failed) || lists_share(p->poll_done, p->poll_pending) ||
	    lists_share(p->poll_failed, p->poll_pending))
		return perr(ps, "%s", "poll.done, poll.failed and poll.pending share a code");
	return 0;
}

/* The checks that need the whole profile. */
static int
profile_check(struct parse *ps)
{
	struct sr_profile *p = ps->p;
	const char *const *reqs = sr_req_name;

	if (check_templates(ps) < 0 || check_sign_place(ps) < 0 || check_poll(ps) < 0)
		return -1;
	ps->line = 0;
	for (int r = 0; r < 3; r++)
		if (!p->req[r].url || !p->req[r].method)
			return perr(ps, "%s.url and .method are required", reqs[r]);
	/* A request that does not say which card would change, or ask about,
	 * another one (or none), and its answer would be believed. */
	for (int r = 0; r < 3; r++) {
		int named = names(p, p->req[r].url, "card", 0) || names(p, p->req[r].body, "card", 0);

		for (int i = 0; i < p->nheaders && !named; i++)
			named = names(p, p->headers[i], "card", 0);
		if (!named) {
			char what[120];

			snprintf(what, sizeof what, "%s: neither %s.url, %s.body nor a header names {card}",
			    reqs[r], reqs[r], reqs[r]);
			return perr(ps, "%s", what);
		}
	}
	if (p->req[SR_REQ_TOKEN].url && !p->token_field)
		return perr(ps, "%s", "token.url needs token.field (where the token is in the answer)");
	if (p->req[SR_REQ_TOKEN].url && !p->req[SR_REQ_TOKEN].method)
		return perr(ps, "%s", "token.url needs token.method");
	if (p->sign && !p->sign_input)
		return perr(ps, "%s", "sign needs sign.input (what is signed)");
	if (p->sign == SR_SIGN_HMAC_SHA256 && !p->sign_key)
		return perr(ps, "%s", "sign = hmac-sha256 needs sign.key");
	if (p->state_path && (!p->state_active || !p->state_stopped))
		return perr(ps, "%s", "state needs state.active and state.stopped");
	/* A code in two lists would be read as the first: a card on its way
	 * taken for landed, or a settled one polled until settle_ms. */
	if (lists_share(p->state_pending, p->state_active) || lists_share(p->state_pending, p->state_stopped))
		return perr(ps, "%s", "state.pending names a code of state.active or state.stopped");
	if (!p->state_path)
		return perr(ps, "%s", "state is required (where a status query's answer says the card's state)");
	if (p->nrules == 0)
		return perr(ps, "%s", "no rule: every answer would be unknown");
	if (p->brk_cool_ms > 0 && p->brk_cool_max_ms > 0 && p->brk_cool_max_ms < p->brk_cool_ms)
		return perr(ps, "%s", "breaker_cooldown_max_ms is below breaker_cooldown_ms");
	for (int r = 0; r < SR_REQ_COUNT; r++)
		if (p->req[r].type < 0)
			p->req[r].type = p->req[r].body ? SR_BODY_JSON : SR_BODY_NONE;
	return 0;
}

static int
parse_text(struct parse *ps, const char *text)
{
	char *copy = sr_strdup(text), *line, *next;
	int rc = 0;

	for (line = copy; line; line = next) {
		char *eq, *key, *v;

		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		ps->line++;
		line = trim(line);
		if (!*line || *line == '#')
			continue;
		if (!(eq = strchr(line, '='))) {
			rc = perr(ps, "%s", "not 'key = value' (the line is not shown)");
			break;
		}
		*eq = '\0';
		key = trim(line);
		v = trim(eq + 1);
		if ((rc = parse_line(ps, key, v)) < 0)
			break;
	}
	free(copy);
	return rc;
}

struct sr_profile *
sr_profile_parse(const char *text, const char *name, const char *file, const char *dir, char *err,
    size_t errlen)
{
	struct sr_profile *p = sr_malloc(sizeof *p);
	struct parse ps;
	int rc;

	memset(&ps, 0, sizeof ps);
	ps.p = p;
	ps.file = file;
	ps.dir = dir;
	profile_init(p);
	p->name = sr_strdup(name);
	p->path = sr_strdup(file);
	rc = parse_text(&ps, text);
	if (rc == 0)
		rc = profile_check(&ps);
	for (int i = 0; i < ps.nseen; i++)
		free(ps.seen[i]);
	free(ps.seen);
	free(ps.seen_line);
	if (rc == 0)
		return p;
	snprintf(err, errlen, "%s", ps.err);
	sr_profile_free(p);
	return NULL;
}

static void
rules_free(struct sr_rule *rules, int n)
{
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < rules[i].ncodes; k++)
			free(rules[i].codes[k]);
		free(rules[i].codes);
		free(rules[i].msg);
		free(rules[i].body);
	}
	free(rules);
}

void
sr_profile_free(struct sr_profile *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->path);
	for (int i = 0; i < p->naccounts; i++)
		free(p->accounts[i]);
	free(p->accounts);
	for (int i = 0; i < p->nheaders; i++)
		free(p->headers[i]);
	free(p->headers);
	for (int i = 0; i < p->nvars; i++) {
		free(p->vars[i].name);
		free(p->vars[i].value);
	}
	free(p->vars);
	for (int i = 0; i < p->nshares; i++)
		free(p->shares[i].cls);
	free(p->shares);
	rules_free(p->rules, p->nrules);
	rules_free(p->qrules, p->nqrules);
	for (int r = 0; r < SR_REQ_COUNT; r++) {
		free(p->req[r].method);
		free(p->req[r].url);
		free(p->req[r].body);
	}
	free(p->base);
	free(p->reqid);
	free(p->basic);
	free(p->token_field);
	free(p->token_ttl_field);
	free(p->sign_input);
	free(p->sign_key);
	free(p->code_path);
	free(p->msg_path);
	free(p->state_path);
	free(p->txn_path);
	free(p->card_path);
	free(p->qcard_path);
	free(p->state_active);
	free(p->state_stopped);
	free(p->state_pending);
	free(p->poll_state);
	free(p->poll_done);
	free(p->poll_failed);
	free(p->poll_pending);
	free(p->poll_card);
	free(p->poll_txn);
	free(p);
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Load the built-in default and every *.profile of dir (when set). */
static void
load_all(const struct sr_config *cfg)
{
	char err[300];
	DIR *d;
	struct dirent *de;
	char **names = NULL;
	int n = 0;

	if (builtin)
		return;
	if (!(builtin = sr_profile_parse(sr_default_profile, "default", "(built-in default)", NULL,
	    err, sizeof err)))
		sr_die(SR_EX_USAGE, "%s", err);
	if (!cfg->profiles_dir)
		return;
	if (!(d = opendir(cfg->profiles_dir)))
		sr_die(SR_EX_USAGE, "SRQ_PROFILES: cannot open '%s':", cfg->profiles_dir);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len > 8 && !strcmp(de->d_name + len - 8, ".profile") && de->d_name[0] != '.')
			push_str(&names, &n, de->d_name);
	}
	closedir(d);
	/* A directory with no profile yet serves every account by the
	 * default, as no SRQ_PROFILES does (and names is NULL: no qsort). */
	if (n > 0)
		qsort(names, (size_t)n, sizeof *names, cmp_names);
	for (int i = 0; i < n; i++) {
		char path[4096], name[256], *text;
		struct sr_profile *p;

		snprintf(path, sizeof path, "%s/%s", cfg->profiles_dir, names[i]);
		snprintf(name, sizeof name, "%.*s", (int)(strlen(names[i]) - 8), names[i]);
		if (!(text = slurp(path, err, sizeof err)))
			sr_die(SR_EX_USAGE, "SRQ_PROFILES: %s", err);
		if (!(p = sr_profile_parse(text, name, path, cfg->profiles_dir, err, sizeof err)))
			sr_die(SR_EX_USAGE, "profile %s", err);
		free(text);
		free(names[i]);
		if (!strcmp(name, "default")) {
			/* default.profile replaces the built-in: it serves every
			 * account no other profile names. */
			if (p->naccounts)
				sr_die(SR_EX_USAGE, "profile %s: the default profile serves every account no "
				    "other profile names: give it no 'accounts' line", path);
			sr_profile_free(builtin);
			builtin = p;
			continue;
		}
		if (p->naccounts == 0)
			sr_die(SR_EX_USAGE, "profile %s: no 'accounts' line: which accounts does it serve?",
			    path);
		profiles = sr_realloc(profiles, (size_t)(nprofiles + 1) * sizeof *profiles);
		profiles[nprofiles++] = p;
	}
	free(names);
}

const struct sr_profile *
sr_profile_for(const struct sr_config *cfg, const char *carrier)
{
	load_all(cfg);
	for (int i = 0; i < nprofiles; i++)
		for (int k = 0; k < profiles[i]->naccounts; k++)
			if (fnmatch(profiles[i]->accounts[k], carrier, 0) == 0)
				return profiles[i];
	return builtin;
}

/* ------------------------------------------------------------ accounts */

static long
pick(long v, long dflt)
{
	return v >= 0 ? v : dflt;
}

static double
pickd(double v, double dflt)
{
	return v >= 0 ? v : dflt;
}

const struct sr_account *
sr_account(const struct sr_config *cfg, const char *carrier)
{
	uint32_t h = 2166136261u;
	struct sr_account *a;
	const struct sr_profile *p;
	json_t *s;

	for (const unsigned char *c = (const unsigned char *)carrier; *c; c++)
		h = (h ^ *c) * 16777619u;
	for (a = accounts[h % ACCT_BUCKETS]; a; a = a->next)
		if (!strcmp(a->id, carrier))
			return a;
	p = sr_profile_for(cfg, carrier);
	a = sr_malloc(sizeof *a);
	memset(a, 0, sizeof *a);
	snprintf(a->id, sizeof a->id, "%s", carrier);
	a->p = p;
	a->qps = pick(p->qps, cfg->qps);
	a->running = pick(p->running, cfg->max_running);
	a->burst = pick(p->burst, cfg->burst);
	a->interval_ms = pick(p->interval_ms, cfg->min_interval_ms);
	a->window_ms = cfg->rate_window_ms;
	a->lease_ms = cfg->lease_ms;
	a->timeout_ms = pick(p->timeout_ms, cfg->gw_timeout_ms);
	a->connect_timeout_ms = pick(p->connect_timeout_ms, cfg->gw_connect_timeout_ms);
	a->connect_budget_ms = pick(p->connect_budget_ms, 100);
	a->keepalive_ms = pick(p->keepalive_ms, 4000);
	a->poll_ms = pick(p->poll_ms, 2000);
	a->settle_ms = pick(p->settle_ms, 600000);
	a->confirm_delay_ms = cfg->confirm_delay_ms;
	a->alert_after = cfg->alert_after;
	a->freeze_after = cfg->freeze_after;
	a->audit_max = cfg->audit_maxlen;
	a->aimd_inc = pickd(p->aimd_inc, a->qps > 0 ? (a->qps / 20.0 > 0.1 ? a->qps / 20.0 : 0.1) : 1);
	a->aimd_beta = pickd(p->aimd_beta, 0.7);
	/* The share of calls a carrier refuses for rate at random, noise not
	 * its limit (includes/edge.lua, edgeLower). */
	a->aimd_noise = pickd(p->aimd_noise, 0.1);
	a->aimd_memory_ms = pick(p->aimd_memory_ms, 20000);
	a->reserve_qps = pick(p->reserve_qps, 0);
	a->brk_failures = pick(p->brk_failures, 5);
	a->brk_ratio = pickd(p->brk_ratio, 0.5);
	a->brk_window_ms = pick(p->brk_window_ms, 10000);
	a->brk_cool_ms = pick(p->brk_cool_ms, 10000);
	a->brk_cool_max_ms = pick(p->brk_cool_max_ms, 300000);
	if (a->brk_cool_max_ms < a->brk_cool_ms)
		a->brk_cool_max_ms = a->brk_cool_ms;
	s = json_pack("{sI sI sI sI sI sI sI sI sI sI sI sI sI sf sf sf sI sI sf sI sI sI sI sb}",
	    "interval", (json_int_t)a->interval_ms, "window", (json_int_t)a->window_ms,
	    "lease", (json_int_t)a->lease_ms, "qps", (json_int_t)a->qps,
	    "running", (json_int_t)a->running, "burst", (json_int_t)a->burst,
	    "alert_after", (json_int_t)a->alert_after, "freeze_after", (json_int_t)a->freeze_after,
	    "audit_max", (json_int_t)a->audit_max, "confirm_delay", (json_int_t)a->confirm_delay_ms,
	    "poll", (json_int_t)a->poll_ms, "settle", (json_int_t)a->settle_ms,
	    "aimd_memory", (json_int_t)a->aimd_memory_ms, "aimd_inc", a->aimd_inc,
	    "aimd_beta", a->aimd_beta, "aimd_noise", a->aimd_noise, "brk_failures", (json_int_t)a->brk_failures,
	    "brk_window", (json_int_t)a->brk_window_ms, "brk_ratio", a->brk_ratio,
	    "brk_cool", (json_int_t)a->brk_cool_ms, "brk_cool_max", (json_int_t)a->brk_cool_max_ms,
	    "connect_budget", (json_int_t)a->connect_budget_ms, "call", (json_int_t)a->timeout_ms,
	    "async", p->async);
	if (!s || !(a->settings = json_dumps(s, JSON_COMPACT)))
		sr_die(SR_EX_USAGE, "out of memory");
	json_decref(s);
	a->next = accounts[h % ACCT_BUCKETS];
	accounts[h % ACCT_BUCKETS] = a;
	return a;
}

/* Whether a claim's lease outlives a call that runs its whole timeout
 * (CURLOPT_TIMEOUT_MS: its connection included) under profile p by
 * SR_LEASE_MARGIN_MS. The gate extends a lease to the call's slot plus the
 * lease whenever less than the call's timeout plus half a lease is left, so
 * its result has min(lease - timeout, lease / 2) to reach sr-confirm; a
 * call that outlives its lease lets another pipeline claim the card and
 * ask the carrier again (a status query per lease). -1 with err if not. */
int
sr_lease_check(const struct sr_config *cfg, const struct sr_profile *p, char *err, size_t errlen)
{
	long timeout = pick(p->timeout_ms, cfg->gw_timeout_ms);
	char what[600];

	if (cfg->lease_ms >= timeout + SR_LEASE_MARGIN_MS)
		return 0;
	if (p->timeout_ms >= 0)
		snprintf(what, sizeof what, "timeout_ms '%ld' of profile '%s' (%s)", timeout, p->name, p->path);
	else
		snprintf(what, sizeof what, "SRQ_GATEWAY_TIMEOUT_MS '%ld'", timeout);
	snprintf(err, errlen, "SRQ_LEASE_MS '%ld' must exceed %s by at least %d ms: a call that "
	    "outlives its claim's lease lets another pipeline claim the card and ask the carrier "
	    "again", cfg->lease_ms, what, SR_LEASE_MARGIN_MS);
	return -1;
}

int
sr_lease_check_all(const struct sr_config *cfg, char *err, size_t errlen)
{
	load_all(cfg);
	if (sr_lease_check(cfg, builtin, err, errlen) < 0)
		return -1;
	for (int i = 0; i < nprofiles; i++)
		if (sr_lease_check(cfg, profiles[i], err, errlen) < 0)
			return -1;
	return 0;
}

void
sr_lease_require(const struct sr_config *cfg)
{
	char err[1024];

	if (sr_lease_check_all(cfg, err, sizeof err) < 0)
		sr_die(SR_EX_USAGE, "%s", err);
}

void
sr_accounts_free(void)
{
	for (int b = 0; b < ACCT_BUCKETS; b++)
		while (accounts[b]) {
			struct sr_account *a = accounts[b];

			accounts[b] = a->next;
			free(a->settings);
			free(a);
		}
	for (int i = 0; i < nprofiles; i++)
		sr_profile_free(profiles[i]);
	free(profiles);
	profiles = NULL;
	nprofiles = 0;
	sr_profile_free(builtin);
	builtin = NULL;
}

/* ------------------------------------------------------------ templates */

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

/* ------------------------------------------------------------ answers */

/* The text at a small path ("a.b", "a[0].b", "[1]") of a JSON value, or of
 * an XML document ("xml:Tag": the first element's text). Numbers and
 * booleans are given as text. Returns 1 and fills out, else 0. */
int
sr_answer_field(json_t *j, const char *body, const char *path, char *out, size_t outlen)
{
	if (!path || !*path)
		return 0;
	if (!strncmp(path, "xml:", 4)) {
		char open[80], close[80];
		const char *a, *b;

		snprintf(open, sizeof open, "<%s>", path + 4);
		snprintf(close, sizeof close, "</%s>", path + 4);
		if (!body || !(a = strstr(body, open)) || !(b = strstr(a, close)))
			return 0;
		a += strlen(open);
		if ((size_t)(b - a) >= outlen)
			return 0;
		snprintf(out, outlen, "%.*s", (int)(b - a), a);
		return 1;
	}
	for (const char *p = path; j && *p;) {
		char name[80];
		size_t n = strcspn(p, ".[");

		if (n >= sizeof name)
			return 0;
		if (n > 0) {
			snprintf(name, sizeof name, "%.*s", (int)n, p);
			j = json_is_object(j) ? json_object_get(j, name) : NULL;
			p += n;
		}
		while (j && *p == '[') {
			char *end;
			long idx = strtol(p + 1, &end, 10);

			if (*end != ']' || idx < 0)
				return 0;
			j = json_is_array(j) ? json_array_get(j, (size_t)idx) : NULL;
			p = end + 1;
		}
		if (*p == '.')
			p++;
	}
	if (json_is_string(j))
		snprintf(out, outlen, "%s", json_string_value(j));
	else if (json_is_integer(j))
		snprintf(out, outlen, "%lld", (long long)json_integer_value(j));
	else if (json_is_real(j))
		snprintf(out, outlen, "%g", json_real_value(j));
	else if (json_is_boolean(j))
		snprintf(out, outlen, "%s", json_is_true(j) ? "true" : "false");
	else
		return 0;
	return 1;
}


static int
rule_matches(const struct sr_rule *r, long http, const char *code, int has_code, const char *msg,
    const char *body)
{
	int ok = r->nhttp == 0;

	for (int i = 0; i < r->nhttp; i++)
		ok |= http >= r->http_lo[i] && http <= r->http_hi[i];
	if (!ok)
		return 0;
	if (r->ncodes) {
		ok = 0;
		for (int i = 0; has_code && i < r->ncodes; i++)
			ok |= !strcmp(code, r->codes[i]);
		if (!ok)
			return 0;
	}
	if (r->msg && !strstr(msg, r->msg))
		return 0;
	if (r->body && (!body || !strstr(body, r->body)))
		return 0;
	return 1;
}

json_t *
sr_answer_json(const char *body)
{
	const char *s = body;

	/* Duplicate keys are refused: {"code":"FAILED","code":"OK"} is no "OK".
	 * A UTF-8 byte order mark and white space before the JSON (gateways
	 * that pretty-print, or write a BOM) are skipped: the answer is still
	 * JSON, and read as none it would be unknown (an ok answer queried, a
	 * query's state never read, a token never found). */
	if (!s)
		return NULL;
	if (!strncmp(s, "\xEF\xBB\xBF", 3))
		s += 3;
	s += strspn(s, " \t\r\n");
	return *s == '{' || *s == '[' ? json_loads(s, JSON_REJECT_DUPLICATES, NULL) : NULL;
}

/* Whether the answer j/body names want at path (card, query.card,
 * poll.card, poll.txn): 1 when it does, or names none and the path ends
 * in '?' (checked only when present) or there is no path; else 0, what it
 * named in named. answer_about: the card, named into a. */
static int
path_names(json_t *j, const char *body, const char *path, const char *want, char *named, size_t n)
{
	char at[80];
	size_t len;

	if (!path || !*path)
		return 1;
	len = strlen(path);
	snprintf(at, sizeof at, "%.*s", (int)(path[len - 1] == '?' ? len - 1 : len), path);
	if (!sr_answer_field(j, body, at, named, n))
		return path[len - 1] == '?';
	return want && !strcmp(named, want);
}

static int
answer_about(json_t *j, const char *body, const char *path, const char *card, struct sr_answer *a)
{
	return path_names(j, body, path, card, a->card, sizeof a->card);
}

/* How a poll's answer says its order stands (poll.state): done, failed,
 * pending, or other (a code no list names); "" when it says nothing. */
static void
read_order(const struct sr_profile *p, json_t *j, const char *body, struct sr_answer *a)
{
	if (!sr_answer_field(j, body, p->poll_state, a->raw_state, sizeof a->raw_state))
		return;
	snprintf(a->order, sizeof a->order, "%s", in_list(p->poll_done, a->raw_state) ? "done" :
	    in_list(p->poll_failed, a->raw_state) ? "failed" :
	    in_list(p->poll_pending, a->raw_state) ? "pending" : "other");
}

void
sr_classify(const struct sr_profile *p, long http, const char *body, size_t body_len,
    enum sr_ask ask, const char *card, const char *txn, struct sr_answer *a)
{
	json_t *j;
	int has_code, is_query = ask != SR_ASK_CHANGE;
	char named_txn[64];

	memset(a, 0, sizeof *a);
	a->verdict = SR_V_UNKNOWN;
	/* An informational status (1xx) or one past 599 is no answer to the
	 * request: rules that weigh only a code would take it for one. */
	if (http < 200 || http > 599) {
		snprintf(a->unread, sizeof a->unread,
		    "carrier answered with HTTP status %ld (not a final status)", http);
		return;
	}
	/* Everything here reads the body as a C string: a NUL would hide what
	 * follows it ({"code":"OK"}, NUL, {"code":"INTERNAL"} read as ok). A
	 * change may have applied, a query saw nothing: unknown, not read. */
	if (body && memchr(body, '\0', body_len)) {
		snprintf(a->unread, sizeof a->unread,
		    "carrier answered HTTP %ld with a NUL byte in its body: not read", http);
		return;
	}
	j = sr_answer_json(body);
	has_code = sr_answer_field(j, body, p->code_path, a->code, sizeof a->code);
	sr_answer_field(j, body, p->msg_path, a->msg, sizeof a->msg);
	sr_answer_field(j, body, p->txn_path, a->txn, sizeof a->txn);
	{
		/* Queries have rules of their own when the profile gives them. */
		const struct sr_rule *rules = is_query && p->nqrules ? p->qrules : p->rules;
		int n = is_query && p->nqrules ? p->nqrules : p->nrules;

		for (int i = 0; i < n; i++)
			if (rule_matches(&rules[i], http, a->code, has_code, a->msg, body)) {
				a->verdict = rules[i].verdict;
				a->rule = rules[i].line;
				break;
			}
	}
	if (ask == SR_ASK_POLL) {
		/* A poll is ok only with the order's state read; what it says
		 * of the card is decided by confirm.lua, against the change
		 * the order is (srq's outstanding one, by its txn). */
		if (a->verdict == SR_V_OK || a->verdict == SR_V_ALREADY || a->verdict == SR_V_IN_PROGRESS) {
			read_order(p, j, body, a);
			a->verdict = a->order[0] ? SR_V_OK : SR_V_UNKNOWN;
		}
	} else if (is_query) {
		/* A query is ok only with a state we can read, or when a rule of
		 * its own (query.rule) says the card's change is under way
		 * (in_progress): the card is on its way, whatever state the
		 * answer names, and is asked again (pending). A change's rule
		 * that a query falls back on (a 202 accepted) says nothing of the
		 * sort: the state is read as it always was. */
		if (a->verdict == SR_V_OK || a->verdict == SR_V_ALREADY || a->verdict == SR_V_IN_PROGRESS) {
			int read = sr_answer_field(j, body, p->state_path, a->raw_state, sizeof a->raw_state);
			int under_way = a->verdict == SR_V_IN_PROGRESS && p->nqrules;

			if (under_way || (read && in_list(p->state_pending, a->raw_state)))
				snprintf(a->observed, sizeof a->observed, "pending");
			else if (read)
				snprintf(a->observed, sizeof a->observed, "%s",
				    in_list(p->state_active, a->raw_state) ? "active" :
				    in_list(p->state_stopped, a->raw_state) ? "stopped" : "other");
			a->verdict = a->observed[0] ? SR_V_OK : SR_V_UNKNOWN;
		}
	} else if (a->verdict == SR_V_OK && p->async)
		a->verdict = SR_V_IN_PROGRESS;
	/* What says how the card stands must be about this card, and a
	 * poll's about this order: another order of the same card (its stop
	 * before this resume) done is not this one done. */
	if (a->verdict == SR_V_OK || a->verdict == SR_V_ALREADY || a->verdict == SR_V_IN_PROGRESS) {
		if (!answer_about(j, body, ask == SR_ASK_POLL ? p->poll_card : is_query && p->qcard_path ?
		    p->qcard_path : p->card_path, card, a))
			a->mismatch = 1;
		else if (ask == SR_ASK_POLL &&
		    !path_names(j, body, p->poll_txn, txn, named_txn, sizeof named_txn)) {
			a->mismatch = 2;
			snprintf(a->txn, sizeof a->txn, "%s", named_txn);
		}
		if (a->mismatch) {
			a->verdict = SR_V_UNKNOWN;
			a->observed[0] = a->order[0] = '\0';
		}
	}
	json_decref(j);
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
