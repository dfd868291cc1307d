/* test_classify.c - carriers' answers to outcomes, through the profiles'
 * rules: the built-in default (srq's own contract) and the shipped
 * OneLink-like and Cisco-like examples. */
#include <stdlib.h>
#include <string.h>

#include "sr.h"
#include "unit.h"

static struct sr_profile *
load(const char *path)
{
	char err[300], *text = NULL;
	FILE *f = fopen(path, "r");
	size_t n;
	struct sr_profile *p;

	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		exit(1);
	}
	text = calloc(1, SR_PROFILE_MAX + 1);
	n = fread(text, 1, SR_PROFILE_MAX, f);
	fclose(f);
	text[n] = '\0';
	p = sr_profile_parse(text, path, path, NULL, err, sizeof err);
	CHECK(p != NULL, "%s parses: %s", path, err);
	free(text);
	if (!p)
		exit(1);
	return p;
}

struct row {
	long http;
	const char *body;
	int query, want;
	const char *observed;
};

static void
table(const char *name, const struct sr_profile *p, const struct row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct sr_answer a;

		sr_classify(p, rows[i].http, rows[i].body, strlen(rows[i].body), rows[i].query, "X", NULL, &a);
		CHECK(a.verdict == rows[i].want, "%s: %ld %s (query %d): got %s, want %s", name,
		    rows[i].http, rows[i].body, rows[i].query, sr_verdict_name(a.verdict),
		    sr_verdict_name(rows[i].want));
		if (rows[i].observed)
			CHECK(!strcmp(a.observed, rows[i].observed), "%s: %s observed '%s', want '%s'",
			    name, rows[i].body, a.observed, rows[i].observed);
	}
}

int
main(void)
{
	static const struct row dflt[] = {
		{ 200, "{\"code\":\"OK\"}", 0, SR_V_OK, NULL },
		/* the card called is X: an answer naming another is not believed */
		{ 200, "{\"code\":\"OK\",\"card\":\"X\"}", 0, SR_V_OK, NULL },
		{ 200, "{\"code\":\"OK\",\"card\":\"Y\"}", 0, SR_V_UNKNOWN, NULL },
		{ 200, "{\"card\":\"Y\",\"status\":\"active\"}", 1, SR_V_UNKNOWN, "" },
		{ 200, "{\"code\":\"ALREADY\"}", 0, SR_V_ALREADY, NULL },
		{ 409, "{\"code\":\"ALREADY\"}", 0, SR_V_ALREADY, NULL },
		{ 409, "{\"code\":\"TOO_FREQUENT\"}", 0, SR_V_TOO_FREQUENT, NULL },
		{ 429, "", 0, SR_V_THROTTLE, NULL },
		{ 200, "{\"code\":\"THROTTLED\"}", 0, SR_V_THROTTLE, NULL },
		{ 202, "{\"code\":\"ACCEPTED\",\"txn\":\"T1\"}", 0, SR_V_IN_PROGRESS, NULL },
		{ 400, "{\"code\":\"BAD\"}", 0, SR_V_FAIL, NULL },
		{ 401, "", 0, SR_V_REAUTH, NULL },
		{ 403, "", 0, SR_V_REAUTH, NULL },
		{ 404, "", 0, SR_V_FAIL, NULL },
		{ 422, "{\"code\":\"NOT_ALLOWED\"}", 0, SR_V_FAIL, NULL },
		{ 409, "{\"code\":\"CONFLICT\"}", 0, SR_V_FAIL, NULL },
		{ 500, "{\"code\":\"OK\"}", 0, SR_V_UNKNOWN, NULL },
		{ 503, "", 0, SR_V_UNKNOWN, NULL },
		{ 200, "not json", 0, SR_V_UNKNOWN, NULL },
		/* a duplicate key is no answer at all, whatever its last value */
		{ 200, "{\"code\":\"FAILED\",\"code\":\"OK\"}", 0, SR_V_UNKNOWN, NULL },
		{ 200, "{\"status\":\"stopped\"}", 1, SR_V_OK, "stopped" },
		{ 200, "{\"status\":\"active\"}", 1, SR_V_OK, "active" },
		{ 200, "{\"status\":\"retired\"}", 1, SR_V_OK, "other" },
		{ 200, "{\"state\":\"stopped\"}", 1, SR_V_UNKNOWN, "" },
		/* not a final status: no answer, whatever the body says */
		{ 100, "{\"code\":\"OK\"}", 0, SR_V_UNKNOWN, NULL },
		{ 999, "{\"code\":\"OK\"}", 0, SR_V_UNKNOWN, NULL },
		{ 999, "{\"status\":\"stopped\"}", 1, SR_V_UNKNOWN, "" },
		{ 429, "", 1, SR_V_THROTTLE, NULL },
		{ 502, "", 1, SR_V_UNKNOWN, NULL },
	};
	static const struct row onelink[] = {
		{ 200, "{\"status\":\"0\",\"message\":\"正确\",\"result\":[{\"msisdn\":\"X\"}]}", 0, SR_V_OK, NULL },
		{ 200, "{\"status\":\"12021\",\"message\":\"TOKEN不存在或已过期，请重新获取\"}", 0, SR_V_REAUTH, NULL },
		{ 200, "{\"status\":\"12040\",\"message\":\"调用频繁，请稍后再试\"}", 0, SR_V_THROTTLE, NULL },
		{ 200, "{\"status\":\"99999\",\"message\":\"接口调用过于频繁\"}", 0, SR_V_THROTTLE, NULL },
		{ 200, "{\"status\":\"12039\",\"message\":\"同一卡号3分钟内不能重复办理\"}", 0, SR_V_TOO_FREQUENT, NULL },
		{ 200, "{\"status\":\"12058\",\"message\":\"卡状态已是目标状态\"}", 0, SR_V_ALREADY, NULL },
		{ 200, "{\"status\":\"12087\",\"message\":\"号码状态不允许办理\"}", 0, SR_V_FAIL, NULL },
		{ 500, "Internal Server Error", 0, SR_V_UNKNOWN, NULL },
		/* its rules weigh the code alone: a status that is not final is no answer */
		{ 999, "{\"status\":\"0\"}", 0, SR_V_UNKNOWN, NULL },
		{ 200, "{\"status\":\"0\",\"result\":[{\"cardStatus\":\"2\"}]}", 1, SR_V_OK, "active" },
		{ 200, "{\"status\":\"0\",\"result\":[{\"cardStatus\":\"4\"}]}", 1, SR_V_OK, "stopped" },
		{ 200, "{\"status\":\"0\",\"result\":[{\"cardStatus\":\"9\"}]}", 1, SR_V_OK, "other" },
		{ 200, "{\"status\":\"12021\"}", 1, SR_V_REAUTH, NULL },
	};
	static const struct row cisco[] = {
		{ 200, "{\"iccid\":\"X\"}", 0, SR_V_OK, NULL },
		{ 200, "{\"iccid\":\"Y\"}", 0, SR_V_UNKNOWN, NULL },
		{ 200, "{}", 0, SR_V_UNKNOWN, NULL }, /* names no device where it must */
		{ 202, "{\"iccid\":\"X\",\"status\":\"PENDING\"}", 0, SR_V_IN_PROGRESS, NULL },
		{ 429, "{\"errorCode\":\"40000029\",\"errorMessage\":\"Rate limit exceeded\"}", 0, SR_V_THROTTLE, NULL },
		{ 400, "{\"errorCode\":\"30000009\",\"errorMessage\":\"Too many status changes\"}", 0, SR_V_TOO_FREQUENT, NULL },
		{ 401, "{\"errorCode\":\"10000001\"}", 0, SR_V_REAUTH, NULL },
		{ 404, "{\"errorCode\":\"20000001\",\"errorMessage\":\"Invalid ICCID\"}", 0, SR_V_FAIL, NULL },
		{ 500, "{\"errorCode\":\"30000001\"}", 0, SR_V_UNKNOWN, NULL },
		{ 200, "{\"iccid\":\"X\",\"status\":\"DEACTIVATED\"}", 1, SR_V_OK, "stopped" },
		/* a query falling back on the change's rules: their in_progress
		 * (a 202) is no word on the card's change; its state is read */
		{ 202, "{\"iccid\":\"X\",\"status\":\"DEACTIVATED\"}", 1, SR_V_OK, "stopped" },
		{ 200, "{\"iccid\":\"X\",\"status\":\"RETIRED\"}", 1, SR_V_OK, "other" },
	};
	struct sr_profile *d = load("share/profiles/default.profile");
	struct sr_profile *o = load("share/profiles/onelink.profile");
	struct sr_profile *c = load("share/profiles/cisco.profile");

	table("default", d, dflt, sizeof dflt / sizeof dflt[0]);
	table("onelink", o, onelink, sizeof onelink / sizeof onelink[0]);
	table("cisco", c, cisco, sizeof cisco / sizeof cisco[0]);
	{
		struct sr_answer a;

		static const char accepted[] = "{\"code\":\"ACCEPTED\",\"txn\":\"T42\"}";

		sr_classify(d, 202, accepted, sizeof accepted - 1, 0, "C1", NULL, &a);
		/* the default profile reads the txn an accepted answer gives:
		 * its order, polled where a profile says how */
		CHECK(!strcmp(a.txn, "T42"), "the default profile reads the txn");
	}
	{
		/* A NUL byte hides what follows it from every reader of the body:
		 * it is not read at all. */
		static const char change[] = "{\"code\":\"OK\"}\0{\"code\":\"INTERNAL\"}";
		static const char query[] = "{\"status\":\"stopped\"}\0{\"status\":\"active\"}";
		struct sr_answer a;

		sr_classify(d, 200, change, sizeof change - 1, 0, "C1", NULL, &a);
		CHECK(a.verdict == SR_V_UNKNOWN && a.unread[0], "a change's body with a NUL: %s, '%s'",
		    sr_verdict_name(a.verdict), a.unread);
		sr_classify(d, 200, query, sizeof query - 1, 1, "C1", NULL, &a);
		CHECK(a.verdict == SR_V_UNKNOWN && !a.observed[0] && !a.raw_state[0],
		    "a query's body with a NUL: %s, observed '%s'", sr_verdict_name(a.verdict), a.observed);
		sr_classify(d, 999, "", 0, 0, "C1", NULL, &a);
		CHECK(!strcmp(a.unread, "carrier answered with HTTP status 999 (not a final status)"),
		    "a status that is not final says so: '%s'", a.unread);
	}
	{
		/* A card on its way: state.pending's codes, or a query rule that
		 * says the change is under way (no state needed); never "other". */
		static const struct row pending[] = {
			{ 200, "{\"status\":\"updating\"}", 1, SR_V_OK, "pending" },
			{ 200, "{\"status\":\"scheduled\"}", 1, SR_V_OK, "pending" },
			{ 200, "{\"status\":\"retired\"}", 1, SR_V_OK, "other" },
			{ 200, "{\"status\":\"stopped\"}", 1, SR_V_OK, "stopped" },
			{ 200, "{\"code\":\"UPDATING\"}", 1, SR_V_OK, "pending" },
			{ 200, "{\"code\":\"UPDATING\",\"status\":\"active\"}", 1, SR_V_OK, "pending" },
			/* about another card: not believed, whatever it says */
			{ 200, "{\"card\":\"Y\",\"status\":\"updating\"}", 1, SR_V_UNKNOWN, "" },
			{ 200, "{\"card\":\"Y\",\"code\":\"UPDATING\"}", 1, SR_V_UNKNOWN, "" },
			/* a change's answer is no state */
			{ 200, "{\"code\":\"OK\",\"status\":\"updating\"}", 0, SR_V_OK, "" },
		};
		char err[300];
		struct sr_profile *pp = sr_profile_parse("from = default\nstate.pending = updating,scheduled\n"
		    "query.rule = code=UPDATING => in_progress\nquery.rule = http=200 => ok\n"
		    "query.rule = * => unknown\n", "pending", "pending.profile", NULL, err, sizeof err);

		CHECK(pp != NULL, "state.pending parses: %s", err);
		if (pp) {
			table("pending", pp, pending, sizeof pending / sizeof pending[0]);
			sr_profile_free(pp);
		}
		pp = sr_profile_parse("from = default\nstate.pending = updating,stopped\n", "both",
		    "both.profile", NULL, err, sizeof err);
		CHECK(pp == NULL && strstr(err, "state.pending"), "a code in state.pending and state.stopped: '%s'",
		    err);
		sr_profile_free(pp);
	}
	o->async = 1;
	{
		struct sr_answer a;

		static const char ok[] = "{\"status\":\"0\"}";

		sr_classify(o, 200, ok, sizeof ok - 1, 0, "C1", NULL, &a);
		CHECK(a.verdict == SR_V_IN_PROGRESS, "an asynchronous carrier's ok is accepted, not done");
	}
	sr_profile_free(d);
	sr_profile_free(o);
	sr_profile_free(c);
	return unit_done("test_classify");
}
