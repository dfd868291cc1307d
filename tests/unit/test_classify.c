/* test_classify.c - gateway answers to outcomes (SPEC section 7). */
#include <string.h>

#include "sr.h"
#include "unit.h"

int
main(void)
{
	static const struct {
		long http;
		const char *body;
		int query;
		enum sr_outcome want;
	} rows[] = {
		{ 200, "{\"code\":\"OK\"}", 0, SR_OUT_OK },
		{ 200, "{\"code\":\"ALREADY\"}", 0, SR_OUT_ALREADY },
		{ 409, "{\"code\":\"ALREADY\"}", 0, SR_OUT_ALREADY },
		{ 409, "{\"code\":\"TOO_FREQUENT\"}", 0, SR_OUT_RETRY },
		{ 429, "", 0, SR_OUT_RETRY },
		{ 400, "{\"code\":\"BAD\"}", 0, SR_OUT_FAIL },
		{ 403, "", 0, SR_OUT_FAIL },
		{ 404, "", 0, SR_OUT_FAIL },
		{ 409, "{\"code\":\"CONFLICT\"}", 0, SR_OUT_FAIL },
		{ 500, "{\"code\":\"OK\"}", 0, SR_OUT_UNKNOWN },
		{ 503, "", 0, SR_OUT_UNKNOWN },
		{ 200, "not json", 0, SR_OUT_UNKNOWN },
		{ 200, "{\"status\":\"stopped\"}", 1, SR_OUT_OK },
		{ 200, "{\"status\":\"weird\"}", 1, SR_OUT_UNKNOWN },
		{ 429, "", 1, SR_OUT_RETRY },
		{ 502, "", 1, SR_OUT_UNKNOWN },
	};
	char obs[16];

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		enum sr_outcome o = sr_classify_http(rows[i].http, rows[i].body, rows[i].query, obs, sizeof obs);

		CHECK(o == rows[i].want, "%ld %s (query %d): got %s, want %s", rows[i].http, rows[i].body,
		    rows[i].query, sr_outcome_name(o), sr_outcome_name(rows[i].want));
	}
	sr_classify_http(200, "{\"status\":\"active\"}", 1, obs, sizeof obs);
	CHECK(!strcmp(obs, "active"), "query reports what it observed");
	return unit_done("test_classify");
}
