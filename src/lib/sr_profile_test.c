/* sr_profile_test.c - checking a profile before an account goes live on it:
 * recorded answers replayed through it (sr-admin profile ACCOUNT --test),
 * and one live status query (--probe). Both read answers with the code the
 * pipeline reads them with (sr_classify, sr_token_read, the gateway), so
 * what passes here is what srq will make of the carrier. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr.h"

/* One recorded answer: a line of the file. */
struct rec_case {
	int line;
	const char *kind;   /* change, query, poll or token */
	long http;
	const char *body;
	size_t body_len;
	const char *card;
	const char *txn;    /* a poll's: the order asked about */
	int outcome;        /* the expected verdict (rule outcome names) */
	const char *observed, *answer_card, *order;
	int mismatch;       /* -1: not checked */
	json_t *obj;
};

/* The keys a case may have: any other is most likely a misspelt one, which
 * would check nothing while the case passed. */
static const char *const case_keys[] = { "kind", "http", "headers", "body", "card", "txn",
	"outcome", "observed", "order", "answer_card", "mismatch", "note", NULL };

static int
bad_line(const char *path, int line, const char *fmt, const char *what)
{
	fprintf(stderr, "%s: %s: line %d: ", sr_prog, path, line);
	fprintf(stderr, fmt, what);
	fputc('\n', stderr);
	return -1;
}

static const char *
opt_string(json_t *o, const char *k, int *bad)
{
	json_t *v = json_object_get(o, k);

	if (!v)
		return NULL;
	if (!json_is_string(v))
		*bad = 1;
	return json_string_value(v);
}

/* Read and check line's case into c: 0, or -1 said on stderr. */
static int
case_parse(const struct sr_profile *p, const char *path, int line, const char *text,
    struct rec_case *c)
{
	json_error_t je;
	const char *k, *outcome;
	json_t *v, *h;
	int bad = 0;

	memset(c, 0, sizeof *c);
	c->line = line;
	c->mismatch = -1;
	/* A body may hold a NUL (\u0000): it is replayed as it came, and read
	 * as the pipeline reads it (not at all). */
	if (!(c->obj = json_loads(text, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &je)) ||
	    !json_is_object(c->obj))
		return bad_line(path, line, "not a JSON object: %s", c->obj ? "" : je.text);
	json_object_foreach(c->obj, k, v) {
		int known = 0;

		for (int i = 0; case_keys[i]; i++)
			known |= !strcmp(k, case_keys[i]);
		if (!known)
			return bad_line(path, line, "unknown key '%s' (kind http headers body card txn "
			    "outcome observed order answer_card mismatch note)", k);
	}
	c->kind = opt_string(c->obj, "kind", &bad);
	if (bad || !c->kind || (strcmp(c->kind, "change") && strcmp(c->kind, "query") &&
	    strcmp(c->kind, "poll") && strcmp(c->kind, "token")))
		return bad_line(path, line, "%s", "\"kind\" must be change, query, poll or token");
	v = json_object_get(c->obj, "http");
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 999)
		return bad_line(path, line, "%s", "\"http\" must be a status, 0..999");
	c->http = (long)json_integer_value(v);
	if ((h = json_object_get(c->obj, "headers"))) {
		/* Kept with the answer as it was recorded; no rule reads a header. */
		if (!json_is_object(h))
			return bad_line(path, line, "%s", "\"headers\" must be an object of strings");
		json_object_foreach(h, k, v)
			if (!json_is_string(v))
				return bad_line(path, line, "%s", "\"headers\" must be an object of strings");
	}
	v = json_object_get(c->obj, "body");
	if (v && !json_is_string(v))
		return bad_line(path, line, "%s", "\"body\" must be a string (the answer's text)");
	c->body = v ? json_string_value(v) : "";
	c->body_len = v ? json_string_length(v) : 0;
	outcome = opt_string(c->obj, "outcome", &bad);
	if (bad || !outcome || (c->outcome = sr_verdict_parse(outcome)) < 0)
		return bad_line(path, line, "%s", "\"outcome\" must be one of ok already in_progress "
		    "throttle too_frequent retry fail unknown reauth");
	c->observed = opt_string(c->obj, "observed", &bad);
	c->answer_card = opt_string(c->obj, "answer_card", &bad);
	c->card = opt_string(c->obj, "card", &bad);
	c->txn = opt_string(c->obj, "txn", &bad);
	c->order = opt_string(c->obj, "order", &bad);
	if (bad)
		return bad_line(path, line, "%s", "\"observed\", \"order\", \"answer_card\", \"card\" "
		    "and \"txn\" are strings");
	if ((v = json_object_get(c->obj, "mismatch"))) {
		if (!json_is_boolean(v))
			return bad_line(path, line, "%s", "\"mismatch\" must be true or false");
		c->mismatch = json_is_true(v);
	}
	if (!strcmp(c->kind, "token")) {
		if (!p->req[SR_REQ_TOKEN].url)
			return bad_line(path, line, "%s", "a token answer, but the profile fetches no token "
			    "(no token.url)");
		if (c->outcome != SR_V_OK && c->outcome != SR_V_FAIL)
			return bad_line(path, line, "%s", "a token answer is ok (a token read) or fail");
		if (c->observed || c->order || c->answer_card || c->mismatch >= 0 || c->card || c->txn)
			return bad_line(path, line, "%s", "a token answer is about no card: \"outcome\" only");
		return 0;
	}
	if (!c->card || !sr_valid_id(c->card))
		return bad_line(path, line, "%s", "\"card\" (the card the call was about) must match "
		    "[A-Za-z0-9_.-]{1,64}");
	if (strcmp(c->kind, "query") && c->observed)
		return bad_line(path, line, "%s", "\"observed\" is a query's");
	if (strcmp(c->kind, "poll") && (c->order || c->txn))
		return bad_line(path, line, "%s", "\"order\" and \"txn\" are a poll's");
	if (!strcmp(c->kind, "poll")) {
		if (!p->req[SR_REQ_POLL].url)
			return bad_line(path, line, "%s", "a poll answer, but the profile polls no orders "
			    "(no poll.url)");
		if (!c->txn || !*c->txn)
			return bad_line(path, line, "%s", "\"txn\" (the order the poll asked about) is needed");
		if (c->outcome == SR_V_OK && !c->order)
			return bad_line(path, line, "%s", "a poll read as ok is read as an order's state: "
			    "\"order\" (done, failed, pending, other) is needed");
		if (c->order && strcmp(c->order, "done") && strcmp(c->order, "failed") &&
		    strcmp(c->order, "pending") && strcmp(c->order, "other"))
			return bad_line(path, line, "%s", "\"order\" must be done, failed, pending or other");
	}
	if (!strcmp(c->kind, "query") && c->outcome == SR_V_OK && !c->observed)
		return bad_line(path, line, "%s", "a query read as ok is read as a state: "
		    "\"observed\" (active, stopped, pending, other) is needed");
	if (c->observed && strcmp(c->observed, "active") && strcmp(c->observed, "stopped") &&
	    strcmp(c->observed, "pending") && strcmp(c->observed, "other"))
		return bad_line(path, line, "%s", "\"observed\" must be active, stopped, pending or other");
	return 0;
}

/* Replay c; its record (what was expected, what was read, pass) is
 * returned, and *why says what differs ("" when it passed). */
static json_t *
case_run(const struct sr_profile *p, const struct rec_case *c, char *why, size_t whylen)
{
	json_t *o = json_object(), *exp = json_object(), *rd = json_object();
	struct sr_answer a;
	int verdict;

	why[0] = '\0';
	json_object_set_new(o, "line", json_integer(c->line));
	json_object_set_new(o, "kind", json_string(c->kind));
	if (c->card)
		json_object_set_new(o, "card", json_string(c->card));
	if (json_object_get(c->obj, "note"))
		json_object_set(o, "note", json_object_get(c->obj, "note"));
	json_object_set_new(exp, "outcome", json_string(sr_verdict_name(c->outcome)));
	if (c->observed)
		json_object_set_new(exp, "observed", json_string(c->observed));
	if (c->order)
		json_object_set_new(exp, "order", json_string(c->order));
	if (c->answer_card)
		json_object_set_new(exp, "answer_card", json_string(c->answer_card));
	if (c->mismatch >= 0)
		json_object_set_new(exp, "mismatch", json_boolean(c->mismatch));
	if (!strcmp(c->kind, "token")) {
		/* As a fetch reads it: a token in it, or none (refused). */
		char tok[2048] = "";
		long ttl_s;
		json_t *j = sr_answer_json(c->body);

		memset(&a, 0, sizeof a);
		verdict = c->http >= 200 && c->http <= 599 && !memchr(c->body, '\0', c->body_len) &&
		    sr_token_read(p, j, c->body, tok, sizeof tok, &ttl_s) ? SR_V_OK : SR_V_FAIL;
		if (verdict == SR_V_OK)
			json_object_set_new(rd, "ttl_s", json_integer(ttl_s));
		else
			sr_answer_field(j, c->body, p->code_path, a.code, sizeof a.code);
		memset(tok, 0, sizeof tok);
		json_decref(j);
	} else {
		sr_classify(p, c->http, c->body, c->body_len, !strcmp(c->kind, "query") ? SR_ASK_QUERY :
		    !strcmp(c->kind, "poll") ? SR_ASK_POLL : SR_ASK_CHANGE, c->card, c->txn, &a);
		verdict = a.verdict;
		json_object_set_new(rd, "rule", json_integer(a.rule));
		if (a.observed[0])
			json_object_set_new(rd, "observed", json_string(a.observed));
		if (a.order[0])
			json_object_set_new(rd, "order", json_string(a.order));
		if (a.raw_state[0])
			json_object_set_new(rd, "carrier_state", json_string(a.raw_state));
		json_object_set_new(rd, "answer_card", json_string(a.card));
		json_object_set_new(rd, "mismatch", json_boolean(a.mismatch != 0));
		if (a.mismatch == 2)
			json_object_set_new(rd, "answer_txn", json_string(a.txn));
		if (a.unread[0])
			json_object_set_new(rd, "unread", json_string(a.unread));
	}
	json_object_set_new(rd, "outcome", json_string(sr_verdict_name(verdict)));
	if (a.code[0])
		json_object_set_new(rd, "code", json_string(a.code));
	if (verdict != c->outcome)
		snprintf(why, whylen, "expected outcome %s, read %s", sr_verdict_name(c->outcome),
		    sr_verdict_name(verdict));
	else if (c->observed && strcmp(c->observed, a.observed))
		snprintf(why, whylen, "expected observed %s, read %s", c->observed,
		    a.observed[0] ? a.observed : "none");
	else if (c->order && strcmp(c->order, a.order))
		snprintf(why, whylen, "expected order %s, read %s", c->order, a.order[0] ? a.order : "none");
	else if (c->answer_card && strcmp(c->answer_card, a.card))
		snprintf(why, whylen, "expected the answer to name card '%s', it names '%s'",
		    c->answer_card, a.card);
	else if (c->mismatch >= 0 && c->mismatch != (a.mismatch != 0))
		snprintf(why, whylen, "expected mismatch %s, read %s", c->mismatch ? "true" : "false",
		    a.mismatch ? "true" : "false");
	if (why[0] && strcmp(c->kind, "token"))
		snprintf(why + strlen(why), whylen - strlen(why), a.rule ? " (rule at line %d)" :
		    " (no rule matched)", a.rule);
	json_object_set_new(o, "expected", exp);
	json_object_set_new(o, "read", rd);
	json_object_set_new(o, "pass", json_boolean(!why[0]));
	if (why[0])
		json_object_set_new(o, "why", json_string(why));
	return o;
}

int
sr_profile_replay(const struct sr_profile *p, const char *path, void (*emit)(json_t *))
{
	FILE *f = fopen(path, "r");
	struct rec_case *cases = NULL;
	char *text = NULL;
	size_t cap = 0;
	ssize_t n;
	int ncases = 0, line = 0, bad = 0, failed = 0;
	json_t *failed_lines = json_array();

	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", sr_prog, path, strerror(errno));
		json_decref(failed_lines);
		return SR_EX_USAGE;
	}
	/* Every line read and checked before any is replayed: a file that is
	 * half read would pass what it read. */
	while ((n = getline(&text, &cap, f)) >= 0) {
		line++;
		while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
			text[--n] = '\0';
		if (!n)
			continue;
		cases = sr_realloc(cases, (size_t)(ncases + 1) * sizeof *cases);
		if (case_parse(p, path, line, text, &cases[ncases]) < 0) {
			json_decref(cases[ncases].obj);
			bad++;
			continue;
		}
		ncases++;
	}
	if (ferror(f)) {
		fprintf(stderr, "%s: %s: %s\n", sr_prog, path, strerror(errno));
		bad++;
	}
	fclose(f);
	free(text);
	if (!bad && !ncases) {
		fprintf(stderr, "%s: %s: no recorded answer in it: nothing tested\n", sr_prog, path);
		bad++;
	}
	for (int i = 0; i < ncases && !bad; i++) {
		char why[300];
		json_t *o = case_run(p, &cases[i], why, sizeof why);

		emit(o);
		if (why[0]) {
			fprintf(stderr, "%s: %s: line %d: %s\n", sr_prog, path, cases[i].line, why);
			json_array_append_new(failed_lines, json_integer(cases[i].line));
			failed++;
		}
	}
	for (int i = 0; i < ncases; i++)
		json_decref(cases[i].obj);
	free(cases);
	if (bad) {
		json_decref(failed_lines);
		return SR_EX_USAGE;
	}
	emit(json_pack("{sb ss ss ss? si si si so}", "summary", 1, "file", path, "profile", p->name,
	    "profile_file", p->path, "cases", ncases, "passed", ncases - failed, "failed", failed,
	    "failed_lines", failed_lines));
	return failed ? SR_EX_REJECTED : SR_EX_OK;
}

int
sr_profile_probe(struct sr_gateway *gw, const char *account, const char *card, json_t **out)
{
	struct sr_edge *e = sr_gateway_edge(gw, account);
	struct sr_call call, *done = NULL;
	json_t *o = json_object();
	int ready, fetched;

	json_object_set_new(o, "carrier", json_string(account));
	json_object_set_new(o, "card", json_string(card));
	json_object_set_new(o, "profile", json_string(e->acct->p->name));
	*out = o;
	/* Authentication as a call gets it: the token fetched first when the
	 * profile has one (libcurl's own timeouts end the fetch). */
	while ((ready = sr_edge_ready(gw, e)) == 0) {
		sr_gateway_poll(gw, 100, -1);
		while (sr_gateway_done(gw))
			; /* the fetch is finished inside */
	}
	fetched = e->fetches > 0;
	if (e->acct->p->req[SR_REQ_TOKEN].url)
		json_object_set_new(o, "token", json_string(fetched ? "fetched" : "refused"));
	if (ready < 0) {
		/* No query without authentication: it would only be refused. */
		json_object_set_new(o, "error", json_string(e->auth_error));
		return SR_EX_REJECTED;
	}
	memset(&call, 0, sizeof call);
	snprintf(call.card, sizeof call.card, "%s", card);
	snprintf(call.carrier, sizeof call.carrier, "%s", account);
	snprintf(call.action, sizeof call.action, "status");
	sr_gateway_start(gw, &call);
	while (!done) {
		sr_gateway_poll(gw, 100, -1);
		done = sr_gateway_done(gw);
	}
	/* One query, whatever it is answered: a refused token is said, not
	 * fetched again and sent once more as the pipeline would. */
	json_object_set_new(o, "http", json_integer(call.http));
	json_object_set_new(o, "verdict", call.verdict >= 0 ? json_string(sr_verdict_name(call.verdict)) :
	    json_null());
	json_object_set_new(o, "outcome", json_string(sr_outcome_name(call.outcome)));
	if (call.class)
		json_object_set_new(o, "class", json_string(call.class));
	if (call.observed[0])
		json_object_set_new(o, "observed", json_string(call.observed));
	if (call.raw_state[0])
		json_object_set_new(o, "carrier_state", json_string(call.raw_state));
	json_object_set_new(o, "answer_card", json_string(call.answer_card));
	if (call.txn[0])
		json_object_set_new(o, "txn", json_string(call.txn));
	if (call.error[0])
		json_object_set_new(o, "error", json_string(call.error));
	json_object_set_new(o, "ms", json_integer(call.ms));
	return call.verdict == SR_V_OK && call.observed[0] ? SR_EX_OK : SR_EX_REJECTED;
}
