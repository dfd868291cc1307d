/* sr_profile.c - carrier profiles parsed: how srq talks to each account's
 * carrier.
 *
 * A profile is a line-oriented "key = value" file (docs/carriers.md, "Carrier
 * profiles"): which accounts it serves, their limits, the requests (URL,
 * method, headers and body templates), the authentication, and the rules that
 * classify the carrier's answers. This file reads one profile's text into a
 * struct sr_profile: each key, its value checked on its own (the checks that
 * need the whole profile: sr_profile_check.c; the rules: sr_rule.c; the
 * authentication's keys: its kind's file, sr_auth.c). Where profiles come
 * from and which serves an account: sr_profile_load.c; an account's
 * settings: sr_account.c; templates: sr_template.c; answers: sr_answer.c.
 * It never prints a secret: secret values are resolved (sr_secret.c) when a
 * request is built (sr_request.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sr.h"

/* ------------------------------------------------------------ parsing */

/* A profile holds secrets (a header's value, a literal in secret.NAME,
 * sign.key, a token in a URL), and a line under the wrong key, or under
 * none, carries one into its error, which goes to stderr and the logs. So
 * an error names the file, the line and the key (when the key is a name),
 * and shows nothing of a value but what srq looks up by name: the profile
 * 'from' names, a placeholder, a rule's condition. */
int
sr_perr(struct sr_parse *ps, const char *fmt, const char *arg)
{
	char msg[160];

	snprintf(msg, sizeof msg, fmt, arg);
	snprintf(ps->err, sizeof ps->err, "%s: line %d: %s", ps->file, ps->line, msg);
	return -1;
}

char *
sr_trim(char *s)
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
int
sr_pnum(struct sr_parse *ps, const char *key, const char *v, long lo, long hi, long *out)
{
	long n = sr_parse_long(v);

	if (n < lo || n > hi) {
		char what[120];

		snprintf(what, sizeof what, "%s: the value is not an integer from %ld to %ld", key, lo, hi);
		return sr_perr(ps, "%s", what);
	}
	*out = n;
	return 0;
}

int
sr_preal(struct sr_parse *ps, const char *key, const char *v, double lo, double hi, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (!*v || *end || errno || !(d >= lo && d <= hi)) {
		char what[120];

		snprintf(what, sizeof what, "%s: the value is not a number from %g to %g", key, lo, hi);
		return sr_perr(ps, "%s", what);
	}
	*out = d;
	return 0;
}

void
sr_push_str(char ***v, int *n, const char *s)
{
	*v = sr_realloc(*v, (size_t)(*n + 1) * sizeof **v);
	(*v)[(*n)++] = sr_strdup(s);
}

static int
parse_type(struct sr_parse *ps, const char *key, const char *v, int *type)
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
		return sr_perr(ps, "%s", what);
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
const char *const sr_builtin_names[] = { "card", "carrier", "action", "ver", "reqid", "base",
	"gateway", "token", "ts", "ms", "seq", "nonce", "params", "sign", "txn", NULL };

const char *const sr_req_name[SR_REQ_COUNT] = {
	[SR_REQ_STOP] = "stop", [SR_REQ_RESUME] = "resume", [SR_REQ_QUERY] = "query",
	[SR_REQ_TOKEN] = "token", [SR_REQ_POLL] = "poll",
};

/* A key this file sets for the first time overrides what a base profile
 * ('from') gave; a repeatable key's first line replaces the base's list. A
 * key set twice in one file is an error (which one was meant?). */
static int
first_in_file(struct sr_parse *ps, const char *key, int repeatable)
{
	struct sr_profile *p = ps->p;

	for (int i = 0; i < ps->nseen; i++)
		if (!strcmp(ps->seen[i], key)) {
			if (repeatable)
				return 0;
			return sr_perr(ps, "'%s' is set twice", key);
		}
	ps->seen_line = sr_realloc(ps->seen_line, (size_t)(ps->nseen + 1) * sizeof *ps->seen_line);
	ps->seen_line[ps->nseen] = ps->line;
	sr_push_str(&ps->seen, &ps->nseen, key);
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
		sr_rules_free(p->rules, p->nrules);
		p->rules = NULL;
		p->nrules = 0;
	} else if (!strcmp(key, "query.rule")) {
		sr_rules_free(p->qrules, p->nqrules);
		p->qrules = NULL;
		p->nqrules = 0;
	}
	return 1;
}

/* max_share = F (every class of sr-rate's callers) or max_share.CLASS = F
 * (that class): the fraction of the account's rate one class may take. A
 * profile's overrides its base's, class by class. */
static int
parse_share(struct sr_parse *ps, const char *key, const char *v)
{
	struct sr_profile *p = ps->p;
	const char *cls = key[9] ? key + 10 : "*";
	double share;
	int i;

	if (key[9] && (!valid_name(cls) || !strcmp(cls, "srq")))
		return sr_perr(ps, "'%s': a class is [a-z0-9_]{1,32}, and not srq (srq's own calls)", key);
	if (sr_preal(ps, key, v, 0.01, 1, &share) < 0)
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
parse_line(struct sr_parse *ps, char *key, char *v)
{
	struct sr_profile *p = ps->p;
	int rep = !strcmp(key, "accounts") || !strcmp(key, "header") || !strcmp(key, "rule") ||
	    !strcmp(key, "query.rule"), first, taken;
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
	};
	struct {
		const char *key;
		char **dst;
	} strs[] = {
		{ "base", &p->base }, { "reqid", &p->reqid },
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
			return sr_perr(ps, "%s.NAME: the name is not [a-z0-9_]{1,32} (not shown)",
			    key[1] == 'e' && key[2] == 'c' ? "secret" : "set");
		return sr_perr(ps, "%s", "unknown key (not shown: it is not a key name)");
	}
	if (strncmp(key, "set.", 4) && strncmp(key, "secret.", 7) &&
	    (first = first_in_file(ps, key, rep)) < 0)
		return -1;
	if (!strcmp(key, "from"))
		return sr_profile_from(ps, v);
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
		if (!strcmp(key, nums[i].key))
			return sr_pnum(ps, key, v, nums[i].lo, nums[i].hi, nums[i].dst);
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
		if (!strcmp(key, strs[i].key)) {
			free(*strs[i].dst);
			*strs[i].dst = sr_strdup(v);
			return 0;
		}
	if (!strcmp(key, "aimd_increase"))
		return sr_preal(ps, key, v, 0.01, 100000, &p->aimd_inc);
	if (!strcmp(key, "aimd_decrease"))
		return sr_preal(ps, key, v, 0.1, 0.99, &p->aimd_beta);
	if (!strcmp(key, "aimd_noise"))
		return sr_preal(ps, key, v, 0, 0.5, &p->aimd_noise);
	if (!strcmp(key, "breaker_ratio"))
		return sr_preal(ps, key, v, 0.01, 1, &p->brk_ratio);
	if (!strcmp(key, "max_share") || !strncmp(key, "max_share.", 10))
		return parse_share(ps, key, v);
	if (!strcmp(key, "accounts")) {
		char *tok, *save;

		for (tok = strtok_r(v, " ,\t", &save); tok; tok = strtok_r(NULL, " ,\t", &save))
			sr_push_str(&p->accounts, &p->naccounts, tok);
		return 0;
	}
	if (!strcmp(key, "async")) {
		if (strcmp(v, "yes") && strcmp(v, "no"))
			return sr_perr(ps, "%s", "async: the value is not yes or no");
		p->async = !strcmp(v, "yes");
		return 0;
	}
	/* The authentication's keys: its kinds' (sr_auth.c). */
	if ((taken = sr_auth_parse(ps, key, v)) != 0)
		return taken < 0 ? -1 : 0;
	if (!strcmp(key, "rule"))
		return sr_rule_parse(ps, v, &p->rules, &p->nrules);
	if (!strcmp(key, "query.rule"))
		return sr_rule_parse(ps, v, &p->qrules, &p->nqrules);
	if (!strncmp(key, "set.", 4) || !strncmp(key, "secret.", 7)) {
		int secret = key[1] == 'e' && key[2] == 'c';
		const char *name = key + (secret ? 7 : 4);

		if (!valid_name(name))
			return sr_perr(ps, "'%s': a name is [a-z0-9_]{1,32}", key);
		for (int i = 0; sr_builtin_names[i]; i++)
			if (!strcmp(name, sr_builtin_names[i]))
				return sr_perr(ps, "'%s' would hide the built-in placeholder", key);
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
				return sr_perr(ps, "%s.method: the value is not GET, POST, PUT or PATCH", sr_req_name[r]);
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
	return sr_perr(ps, "unknown key '%s'", key);
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

int
sr_profile_parse_text(struct sr_parse *ps, const char *text)
{
	char *copy = sr_strdup(text), *line, *next;
	int rc = 0;

	for (line = copy; line; line = next) {
		char *eq, *key, *v;

		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		ps->line++;
		line = sr_trim(line);
		if (!*line || *line == '#')
			continue;
		if (!(eq = strchr(line, '='))) {
			rc = sr_perr(ps, "%s", "not 'key = value' (the line is not shown)");
			break;
		}
		*eq = '\0';
		key = sr_trim(line);
		v = sr_trim(eq + 1);
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
	struct sr_parse ps;
	int rc;

	memset(&ps, 0, sizeof ps);
	ps.p = p;
	ps.file = file;
	ps.dir = dir;
	profile_init(p);
	p->name = sr_strdup(name);
	p->path = sr_strdup(file);
	rc = sr_profile_parse_text(&ps, text);
	if (rc == 0)
		rc = sr_profile_check(&ps);
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

const char *
sr_profile_opt(const struct sr_profile *p, const char *key)
{
	for (int i = 0; i < p->nopts; i++)
		if (!strcmp(p->opts[i].name, key))
			return p->opts[i].value;
	return NULL;
}

void
sr_profile_set_opt(struct sr_profile *p, const char *key, const char *v)
{
	int i;

	for (i = 0; i < p->nopts && strcmp(p->opts[i].name, key); i++)
		;
	if (i == p->nopts) {
		p->opts = sr_realloc(p->opts, (size_t)(p->nopts + 1) * sizeof *p->opts);
		p->opts[p->nopts++] = (struct sr_var){ sr_strdup(key), NULL, 0 };
	}
	free(p->opts[i].value);
	p->opts[i].value = sr_strdup(v);
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
	sr_rules_free(p->rules, p->nrules);
	sr_rules_free(p->qrules, p->nqrules);
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
	for (int i = 0; i < p->nopts; i++) {
		free(p->opts[i].name);
		free(p->opts[i].value);
	}
	free(p->opts);
	free(p);
}

