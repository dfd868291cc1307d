/* control.c - sr-gwsim's control endpoint for the tests, POST /_sim/set:
 * the rate, the failing account, the token TTL and the orders' failure
 * rate changed mid-run.
 */
#include <stdlib.h>
#include <string.h>

#include "gwsim.h"

/* What POST /_sim/set asks: each member is set only if given. */
struct setting {
	int bad, has_qps, has_fail, has_ttl, has_order_failed;
	long qps, token_ttl_ms;
	double order_failed;
	char fail_account[65];
};

static enum MHD_Result
setting_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct setting *st = cls;

	(void)kind;
	if (!strcmp(key, "qps")) {
		st->has_qps = 1;
		st->bad |= (st->qps = sr_parse_long(value)) < 0;
	} else if (!strcmp(key, "token_ttl_ms")) {
		st->has_ttl = 1;
		st->bad |= (st->token_ttl_ms = sr_parse_long(value)) < 0;
	} else if (!strcmp(key, "order_failed")) {
		char *end;

		st->has_order_failed = 1;
		st->order_failed = value ? strtod(value, &end) : -1;
		st->bad |= !value || *end || !(st->order_failed >= 0 && st->order_failed <= 1);
	} else if (!strcmp(key, "fail_account")) {
		st->has_fail = 1;
		value = value ? value : "";
		st->bad |= *value && !sr_valid_id(value);
		snprintf(st->fail_account, sizeof st->fail_account, "%s", value);
	} else
		st->bad = 1;
	return MHD_YES;
}

/* The tests' control: POST /_sim/set?qps=N&fail_account=ID&token_ttl_ms=N&order_failed=P
 * changes the carrier mid-run; a new TTL applies to the tokens already
 * issued too (expiry is judged when a token is used). Neither logged nor
 * counted: it is not a call. All or nothing: a bad or unknown parameter
 * changes nothing. */
enum MHD_Result
control(struct MHD_Connection *con, const char *method, const char *url)
{
	struct setting st;

	if (strcmp(method, "POST") || strcmp(url, "/_sim/set"))
		return reply(con, 404, "{\"code\":\"NOT_FOUND\"}", 0);
	memset(&st, 0, sizeof st);
	MHD_get_connection_values(con, MHD_GET_ARGUMENT_KIND, setting_arg, &st);
	if (st.bad || !(st.has_qps || st.has_fail || st.has_ttl || st.has_order_failed))
		return reply(con, 400, "{\"ok\":false}", 0);
	pthread_mutex_lock(&mu);
	if (st.has_qps)
		qps = st.qps;
	if (st.has_fail)
		snprintf(fail_account, sizeof fail_account, "%s", st.fail_account);
	if (st.has_ttl)
		token_ttl_ms = st.token_ttl_ms;
	if (st.has_order_failed)
		porder_failed = st.order_failed;
	pthread_mutex_unlock(&mu);
	return reply(con, 200, "{\"ok\":true}", 0);
}
