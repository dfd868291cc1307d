/* sr_answer.c - a carrier's answer read by the account's profile: its
 * fields (JSON paths, XML tags), its rule, the card and order it names,
 * and so its verdict (sr_classify). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "sr.h"

int
sr_code_in_list(const char *list, const char *v)
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
	snprintf(a->order, sizeof a->order, "%s", sr_code_in_list(p->poll_done, a->raw_state) ? "done" :
	    sr_code_in_list(p->poll_failed, a->raw_state) ? "failed" :
	    sr_code_in_list(p->poll_pending, a->raw_state) ? "pending" : "other");
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
			if (sr_rule_matches(&rules[i], http, a->code, has_code, a->msg, body)) {
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

			if (under_way || (read && sr_code_in_list(p->state_pending, a->raw_state)))
				snprintf(a->observed, sizeof a->observed, "pending");
			else if (read)
				snprintf(a->observed, sizeof a->observed, "%s",
				    sr_code_in_list(p->state_active, a->raw_state) ? "active" :
				    sr_code_in_list(p->state_stopped, a->raw_state) ? "stopped" : "other");
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

