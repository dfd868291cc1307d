/* sr_edge_check.c - an account's profile checked as it would be used:
 * every secret resolved (said set, not set, or why unreadable; never its
 * value), every request built and sent nowhere.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "sr.h"

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
		struct sr_build b;
		int failed = 0;
		const char *v;

		if (!p->vars[i].secret)
			continue;
		sr_build_init(&b, gw, e, &call, "stop");
		v = sr_build_secret(&b, &p->vars[i], &failed);
		json_object_set_new(secrets, p->vars[i].name, json_string(failed ? b.err : v ? "set" : "not set"));
		bad |= failed;
	}
	/* Every request built as it would be, sent nowhere. */
	snprintf(call.txn, sizeof call.txn, "T0");
	for (int r = 0; r < SR_REQ_COUNT; r++) {
		const struct sr_request_tmpl *t = &p->req[r];
		char url[SR_REQ_MAX], body[SR_REQ_MAX];
		struct sr_buf ub = { url, 0, sizeof url }, bb = { body, 0, sizeof body };
		struct sr_build b;

		if (!t->url)
			continue;
		snprintf(call.action, sizeof call.action, "%s", r == SR_REQ_QUERY ? "status" :
		    r == SR_REQ_TOKEN ? "token" : names[r]);
		sr_build_init(&b, gw, e, r == SR_REQ_TOKEN ? NULL : &call, call.action);
		b.checking = 1;
		if (sr_build_request(&b, t, &ub, &bb) == SR_BUILT)
			sr_build_headers(&b, NULL); /* (an optional header is left out) */
		memset(url, 0, sizeof url);
		memset(body, 0, sizeof body);
		json_object_set_new(reqs, names[r], json_string(b.err[0] ? b.err : "ok"));
		bad |= b.err[0] != '\0';
	}
	json_object_set_new(report, "requests", reqs);
	json_object_set_new(report, "secrets", secrets);
	return bad ? -1 : 0;
}
