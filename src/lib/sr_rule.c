/* sr_rule.c - a profile's rules: "http=... code=... msg~... body~... =>
 * outcome", parsed, matched against an answer, freed; and the names of
 * their outcomes (verdicts). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "sr.h"

static const struct {
	const char *name;
	int verdict;
} verdicts[] = {
#define SR_V_ROW(e, name) { name, e },
	SR_VERDICTS(SR_V_ROW)
#undef SR_V_ROW
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
int
sr_rule_parse(struct sr_parse *ps, char *v, struct sr_rule **rules, int *nrules)
{
	struct sr_rule r;
	char *arrow = strstr(v, "=>"), *tok, *save;
	const char *out;
	size_t i;

	memset(&r, 0, sizeof r);
	if (!arrow)
		return sr_perr(ps, "%s", "rule: no '=> outcome'");
	*arrow = '\0';
	out = sr_trim(arrow + 2);
	for (i = 0; i < sizeof verdicts / sizeof verdicts[0]; i++)
		if (!strcmp(out, verdicts[i].name))
			break;
	if (i == sizeof verdicts / sizeof verdicts[0])
#define SR_V_WORD(e, name) " " name
		return sr_perr(ps, "%s", "rule: the outcome is not one of" SR_VERDICTS(SR_V_WORD));
#undef SR_V_WORD
	r.verdict = verdicts[i].verdict;
	r.line = ps->line;
	for (tok = strtok_r(v, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (!strcmp(tok, "*"))
			continue;
		if ((!strncmp(tok, "http=", 5) && !tok[5]) || (!strncmp(tok, "code=", 5) && !tok[5]))
			return sr_perr(ps, "rule: '%s' names nothing (an empty list would match every answer)", tok);
		if (!strncmp(tok, "http=", 5)) {
			char *part, *s2;

			for (part = strtok_r(tok + 5, ",", &s2); part; part = strtok_r(NULL, ",", &s2)) {
				char *dash = strchr(part, '-');
				long lo, hi;

				if (r.nhttp == SR_RULE_HTTP_MAX)
					return sr_perr(ps, "rule: too many statuses in '%s'", tok);
				if (dash)
					*dash = '\0';
				lo = sr_parse_long(part);
				hi = dash ? sr_parse_long(dash + 1) : lo;
				if (lo < 100 || hi > 599 || hi < lo)
					return sr_perr(ps, "rule: '%s' is not an HTTP status or range", part);
				r.http_lo[r.nhttp] = lo;
				r.http_hi[r.nhttp++] = hi;
			}
		} else if (!strncmp(tok, "code=", 5)) {
			char *part, *s2;

			for (part = strtok_r(tok + 5, ",", &s2); part; part = strtok_r(NULL, ",", &s2))
				sr_push_str(&r.codes, &r.ncodes, part);
		} else if (!strncmp(tok, "msg~", 4) && tok[4]) {
			r.msg = sr_strdup(tok + 4);
		} else if (!strncmp(tok, "body~", 5) && tok[5]) {
			r.body = sr_strdup(tok + 5);
		} else
			return sr_perr(ps, "rule: unknown condition '%s' (http= code= msg~ body~ *)", tok);
	}
	*rules = sr_realloc(*rules, (size_t)(*nrules + 1) * sizeof **rules);
	(*rules)[(*nrules)++] = r;
	return 0;
}

void
sr_rules_free(struct sr_rule *rules, int n)
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

int
sr_rule_matches(const struct sr_rule *r, long http, const char *code, int has_code, const char *msg,
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

