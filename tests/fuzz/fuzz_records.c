/* fuzz_records.c - the task and result parsers (sr_task_parse,
 * sr_result_check) on what sr_json_line makes of one input line, in the
 * order sr-confirm applies them (sr-exec stops after the first).
 *
 * Feeds: the input as one line of text (and, when that is JSON but not an
 * object, the value itself to sr_task_parse, which must refuse it).
 *
 * Checks, both ways, against the record formats as the README and sr.h
 * state them: a task is accepted exactly when "task" is call or query,
 * "card" and "carrier" are ids ([A-Za-z0-9_.-]{1,64}), "action" is stop or
 * resume, "token" is a non-empty string under 64 bytes, "ver" a whole number
 * from 1, "attempt", when present, one from 0, "lane", when present, a
 * lane's name, and "txn", when present, a string of 1 to 63 bytes with no
 * control byte - and then struct sr_task holds exactly those values; a
 * result is accepted exactly when its numbers are whole and in range, its
 * text fields strings, in_progress a boolean and "order", when present, a
 * query's done, failed, pending, other or "". A refusal leaves a non-empty message inside err; parsing twice
 * gives the same answer. */
#include <stdint.h>
#include <string.h>

#include "sr.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
is_id(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n < 1 || n > 64)
		return 0;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", *s))
			return 0;
	return 1;
}

static int
str_in(const char *s, const char *a, const char *b)
{
	return s && (!strcmp(s, a) || !strcmp(s, b));
}

/* A task's "txn": absent, or text a request may carry. */
static int
txn_ok(json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;

	if (!v)
		return 1;
	if (n < 1 || n > 63)
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

static int
lane_ok(json_t *v)
{
	for (int i = 0; v && i < SR_LANE_COUNT; i++)
		if (json_is_string(v) && !strcmp(json_string_value(v), sr_lane_name[i]))
			return 1;
	return !v;
}

static void
check_task(json_t *o)
{
	struct sr_task t, t2;
	char err[160], err2[160];
	json_t *ver = json_object_get(o, "ver"), *att = json_object_get(o, "attempt");
	const char *kind = sr_jstr(o, "task"), *token = sr_jstr(o, "token");
	int want, rc;

	memset(err, 0x55, sizeof err);
	rc = sr_task_parse(o, &t, err, sizeof err);
	want = str_in(kind, "call", "query") && is_id(sr_jstr(o, "card")) &&
	    is_id(sr_jstr(o, "carrier")) && str_in(sr_jstr(o, "action"), "stop", "resume") &&
	    token && *token && strlen(token) < 64 &&
	    json_is_integer(ver) && json_integer_value(ver) >= 1 &&
	    (!att || (json_is_integer(att) && json_integer_value(att) >= 0)) &&
	    lane_ok(json_object_get(o, "lane")) && txn_ok(json_object_get(o, "txn"));
	FUZZ_CHECK(rc == 0 || rc == -1, "returned %d", rc);
	FUZZ_CHECK((rc == 0) == want, "task %s, should be %s (%s)", rc ? "refused" : "accepted",
	    want ? "accepted" : "refused", rc ? err : "");
	if (rc == 0) {
		FUZZ_CHECK(!strcmp(t.kind, kind) && !strcmp(t.card, sr_jstr(o, "card")) &&
		    !strcmp(t.carrier, sr_jstr(o, "carrier")) && !strcmp(t.action, sr_jstr(o, "action")) &&
		    !strcmp(t.token, token) && !strcmp(t.txn, sr_jstr(o, "txn") ? sr_jstr(o, "txn") : ""),
		    "the task's text fields differ from the record");
		FUZZ_CHECK(t.ver == json_integer_value(ver) &&
		    t.attempt == (att ? json_integer_value(att) : 0), "the task's numbers differ");
	} else
		FUZZ_CHECK(fuzz_terminated(err, sizeof err) && *err, "refused without a reason");
	FUZZ_CHECK(sr_task_parse(o, &t2, err2, sizeof err2) == rc &&
	    (rc ? !strcmp(err, err2) : !memcmp(&t, &t2, sizeof t)), "a second parse differs");
}

static void
check_result(json_t *o)
{
	/* Whole numbers from 0 up to these (sr.h: http 0..999; the others are
	 * durations and times, bounded so a typo cannot overflow arithmetic). */
	static const struct { const char *name; long long hi; } nums[] = {
		{ "http", 999 }, { "retry_after_ms", 86400000LL * 366 }, { "ms", 86400000LL },
		{ "at", 253402300799999LL }, { "gated", 253402300799999LL },
	};
	static const char *const strs[] = { "outcome", "class", "error", "gate", "observed", "txn",
		"carrier_state", "status" };
	char err[160];
	json_t *ip = json_object_get(o, "in_progress"), *order = json_object_get(o, "order");
	int want = !ip || json_is_boolean(ip), rc;
	const char *ow = json_string_value(order), *kind = sr_jstr(o, "task");

	if (order && (!ow || !kind || strcmp(kind, "query") || (strcmp(ow, "done") && strcmp(ow, "failed") &&
	    strcmp(ow, "pending") && strcmp(ow, "other") && *ow)))
		want = 0;

	for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
		json_t *v = json_object_get(o, nums[i].name);

		if (v && (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > nums[i].hi))
			want = 0;
	}
	for (size_t i = 0; i < sizeof strs / sizeof *strs; i++) {
		json_t *v = json_object_get(o, strs[i]);

		if (v && !json_is_string(v))
			want = 0;
	}
	memset(err, 0x55, sizeof err);
	rc = sr_result_check(o, err, sizeof err);
	FUZZ_CHECK(rc == 0 || rc == -1, "returned %d", rc);
	FUZZ_CHECK((rc == 0) == want, "result %s, should be %s (%s)", rc ? "refused" : "accepted",
	    want ? "accepted" : "refused", rc ? err : "");
	if (rc)
		FUZZ_CHECK(fuzz_terminated(err, sizeof err) && !strncmp(err, "bad \"", 5),
		    "refused without a reason");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = fuzz_cstring(data, size), err[256];
	json_t *o = sr_json_line(line, err, sizeof err);

	if (o) {
		check_task(o);
		check_result(o);
		json_decref(o);
	} else if ((o = json_loads(line, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL))) {
		/* JSON, but not an object (sr_json_line refused it): the task
		 * parser, given it anyway, must refuse it too. */
		struct sr_task t;

		FUZZ_CHECK(json_is_object(o) || sr_task_parse(o, &t, err, sizeof err) == -1,
		    "a non-object accepted as a task");
		json_decref(o);
	}
	free(line);
	return 0;
}
