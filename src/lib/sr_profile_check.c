/* sr_profile_check.c - the checks that need a whole profile: every
 * placeholder known, {sign} and {txn} where they may be, polling whole,
 * the required requests and keys there. A mistake is a configuration error
 * when the profile is read, not a request that fails later. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "sr.h"

/* Whether two comma-separated lists of codes share one. */
static int
lists_share(const char *a, const char *b)
{
	char code[64];

	for (const char *p = a; p && *p;) {
		size_t k = strcspn(p, ",");

		snprintf(code, sizeof code, "%.*s", (int)(k < sizeof code ? k : sizeof code - 1), p);
		if (sr_code_in_list(b, code))
			return 1;
		p += k;
		if (*p == ',')
			p++;
	}
	return 0;
}

int
sr_parse_line_of(const struct sr_parse *ps, const char *key)
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
int
sr_profile_check_names(struct sr_parse *ps, const char *key, const char *tmpl)
{
	const struct sr_profile *p = ps->p;
	const char *name;
	size_t n;

	for (const char *t = tmpl; (name = next_placeholder(t, &n)); t = name + n + 1) {
		int known = 0;

		for (int i = 0; sr_builtin_names[i] && !known; i++)
			known = is_name(name, n, sr_builtin_names[i]);
		for (int i = 0; i < p->nvars && !known; i++)
			known = is_name(name, n, p->vars[i].name);
		if (!known || (is_name(name, n, "sign") && !p->sign)) {
			char what[160];

			ps->line = sr_parse_line_of(ps, key);
			if (known)
				snprintf(what, sizeof what, "%s: {sign} with no 'sign' to say how to make it", key);
			else
				snprintf(what, sizeof what, "%s: unknown placeholder {%.*s}", key, (int)n, name);
			return sr_perr(ps, "%s", what);
		}
	}
	return 0;
}

static int
check_templates(struct sr_parse *ps)
{
	struct sr_profile *p = ps->p;
	char key[64];

	if (sr_profile_check_names(ps, "base", p->base) < 0 || sr_profile_check_names(ps, "reqid", p->reqid) < 0 ||
	    sr_auth_check(ps, SR_AUTH_CHECK_NAMES) < 0)
		return -1;
	for (int r = 0; r < SR_REQ_COUNT; r++) {
		snprintf(key, sizeof key, "%s.url", sr_req_name[r]);
		if (sr_profile_check_names(ps, key, p->req[r].url) < 0)
			return -1;
		snprintf(key, sizeof key, "%s.body", sr_req_name[r]);
		if (sr_profile_check_names(ps, key, p->req[r].body) < 0)
			return -1;
	}
	for (int i = 0; i < p->nheaders; i++)
		if (sr_profile_check_names(ps, "header", p->headers[i]) < 0)
			return -1;
	for (int i = 0; i < p->nvars; i++) {
		snprintf(key, sizeof key, "%s.%s", p->vars[i].secret ? "secret" : "set", p->vars[i].name);
		if (sr_profile_check_names(ps, key, p->vars[i].value) < 0)
			return -1;
	}
	return 0;
}

/* Does a template name placeholder {that}, itself or through what it
 * names ({base}, {reqid}, a set.NAME)? depth bounds a variable that names
 * itself. */
int
sr_profile_names(const struct sr_profile *p, const char *tmpl, const char *that, int depth)
{
	const char *name;
	size_t n;

	if (depth > 8)
		return 0;
	for (const char *t = tmpl; (name = next_placeholder(t, &n)); t = name + n + 1) {
		if (is_name(name, n, that) ||
		    (is_name(name, n, "base") && sr_profile_names(p, p->base, that, depth + 1)) ||
		    (is_name(name, n, "reqid") && sr_profile_names(p, p->reqid, that, depth + 1)))
			return 1;
		for (int i = 0; i < p->nvars; i++)
			if (!p->vars[i].secret && is_name(name, n, p->vars[i].name) &&
			    sr_profile_names(p, p->vars[i].value, that, depth + 1))
				return 1;
	}
	return 0;
}

/* Order polling (poll.*): all of it or none. A poll that names no {txn}
 * would ask about no order, or another, and be believed; {txn} anywhere
 * else has no value (only a poll has an order). */
static int
check_poll(struct sr_parse *ps)
{
	const struct sr_profile *p = ps->p;
	const struct sr_request_tmpl *t = &p->req[SR_REQ_POLL];
	int named = sr_profile_names(p, t->url, "txn", 0) || sr_profile_names(p, t->body, "txn", 0);

	ps->line = 0;
	for (int r = 0; r < SR_REQ_COUNT; r++)
		if (r != SR_REQ_POLL && (sr_profile_names(p, p->req[r].url, "txn", 0) || sr_profile_names(p, p->req[r].body, "txn", 0)))
			return sr_perr(ps, "%s: {txn} is only known to a poll (poll.url, poll.body)", sr_req_name[r]);
	for (int i = 0; i < p->nheaders; i++)
		if (sr_profile_names(p, p->headers[i], "txn", 0))
			return sr_perr(ps, "%s", "header: {txn} is only known to a poll (poll.url, poll.body)");
	if (!t->url && !t->method && !t->body && !p->poll_state && !p->poll_done && !p->poll_failed &&
	    !p->poll_pending && !p->poll_card && !p->poll_txn)
		return 0;
	if (!t->url || !t->method)
		return sr_perr(ps, "%s", "poll.url and poll.method are required to poll orders");
	if (!named)
		return sr_perr(ps, "%s", "poll: neither poll.url nor poll.body names {txn} (the order asked about)");
	if (!p->poll_state || !p->poll_done)
		return sr_perr(ps, "%s", "poll needs poll.state (where the answer says how the order stands) "
		    "and poll.done (its codes for an order carried out)");
	/* A code in two lists would be read as the first: a failed order
	 * taken for done, or a done one polled until settle_ms. */
	if (lists_share(p->poll_done, p->poll_failed) || lists_share(p->poll_done, p->poll_pending) ||
	    lists_share(p->poll_failed, p->poll_pending))
		return sr_perr(ps, "%s", "poll.done, poll.failed and poll.pending share a code");
	return 0;
}

/* The checks that need the whole profile. */
int
sr_profile_check(struct sr_parse *ps)
{
	struct sr_profile *p = ps->p;
	const char *const *reqs = sr_req_name;

	if (check_templates(ps) < 0 || sr_auth_check(ps, SR_AUTH_CHECK_PLACE) < 0 || check_poll(ps) < 0)
		return -1;
	ps->line = 0;
	for (int r = 0; r < 3; r++)
		if (!p->req[r].url || !p->req[r].method)
			return sr_perr(ps, "%s.url and .method are required", reqs[r]);
	/* A request that does not say which card would change, or ask about,
	 * another one (or none), and its answer would be believed. */
	for (int r = 0; r < 3; r++) {
		int named = sr_profile_names(p, p->req[r].url, "card", 0) || sr_profile_names(p, p->req[r].body, "card", 0);

		for (int i = 0; i < p->nheaders && !named; i++)
			named = sr_profile_names(p, p->headers[i], "card", 0);
		if (!named) {
			char what[120];

			snprintf(what, sizeof what, "%s: neither %s.url, %s.body nor a header names {card}",
			    reqs[r], reqs[r], reqs[r]);
			return sr_perr(ps, "%s", what);
		}
	}
	if (sr_auth_check(ps, SR_AUTH_CHECK_NEEDS) < 0)
		return -1;
	if (p->state_path && (!p->state_active || !p->state_stopped))
		return sr_perr(ps, "%s", "state needs state.active and state.stopped");
	/* A code in two lists would be read as the first: a card on its way
	 * taken for landed, or a settled one polled until settle_ms. */
	if (lists_share(p->state_pending, p->state_active) || lists_share(p->state_pending, p->state_stopped))
		return sr_perr(ps, "%s", "state.pending names a code of state.active or state.stopped");
	if (!p->state_path)
		return sr_perr(ps, "%s", "state is required (where a status query's answer says the card's state)");
	if (p->nrules == 0)
		return sr_perr(ps, "%s", "no rule: every answer would be unknown");
	if (p->brk_cool_ms > 0 && p->brk_cool_max_ms > 0 && p->brk_cool_max_ms < p->brk_cool_ms)
		return sr_perr(ps, "%s", "breaker_cooldown_max_ms is below breaker_cooldown_ms");
	for (int r = 0; r < SR_REQ_COUNT; r++)
		if (p->req[r].type < 0)
			p->req[r].type = p->req[r].body ? SR_BODY_JSON : SR_BODY_NONE;
	return 0;
}
