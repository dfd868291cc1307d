/* api_default.c - sr-gwsim's default API shape, the gateway contract of
 * srq's default profile: POST /v1/cards/{card}/stop|resume with the
 * account in a JSON body, GET .../status, GET /v1/orders/{txn}; the
 * verdict in the HTTP status and a JSON code.
 */
#include <string.h>

#include "gwsim.h"

/* The default shape: POST /v1/cards/{card}/stop|resume, GET .../status.
 * Returns 0, or the HTTP status of a malformed request (body set). */
static int
parse_default(struct MHD_Connection *con, const char *method, const char *url,
    const struct ctx *cx, struct call *c, const char **bad)
{
	const char *p, *slash, *action;

	*bad = "{\"code\":\"NOT_FOUND\"}";
	if (!strncmp(url, "/v1/orders/", 11) && !strcmp(method, "GET")) {
		/* An accepted change's order: GET /v1/orders/{txn}?carrier=c17 */
		if (strlen(url + 11) >= sizeof c->txn || !sr_valid_id(url + 11))
			return 404;
		snprintf(c->txn, sizeof c->txn, "%s", url + 11);
		c->kind = K_ORDER;
		id_copy(c->carrier, MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "carrier"));
		*bad = "{\"code\":\"BAD_CARRIER\"}";
		if (!sr_valid_id(c->carrier))
			return 400;
		if (!bearer_ok(con))
			c->v = V_BEARER;
		return 0;
	}
	if (strncmp(url, "/v1/cards/", 10) != 0 || !(slash = strchr(url + 10, '/')) ||
	    (size_t)(slash - url - 10) >= sizeof c->card || slash == url + 10)
		return 404;
	memcpy(c->card, url + 10, (size_t)(slash - url - 10));
	action = slash + 1;
	if (!strcmp(method, "GET") && !strcmp(action, "status")) {
		c->kind = K_STATUS;
		p = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "carrier");
		id_copy(c->carrier, p);
	} else if (!strcmp(method, "POST") && (!strcmp(action, "stop") || !strcmp(action, "resume"))) {
		json_t *j = cx->body ? json_loads(cx->body, 0, NULL) : NULL;

		c->kind = !strcmp(action, "stop") ? K_STOP : K_RESUME;
		id_copy(c->carrier, j ? sr_jstr(j, "carrier") : NULL);
		json_decref(j);
		p = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Idempotency-Key");
		snprintf(c->key, sizeof c->key, "%s", p ? p : "");
	} else
		return 404;
	*bad = "{\"code\":\"BAD_CARD\"}";
	if (!sr_valid_id(c->card))
		return 400;
	*bad = "{\"code\":\"BAD_CARRIER\"}";
	if (!sr_valid_id(c->carrier))
		return 400;
	if (!bearer_ok(con))
		c->v = V_BEARER;
	return 0;
}

static void
answer_default(const struct call *c, struct answer *a)
{
	static const struct {
		int http;
		const char *code;
	} w[] = {
		[V_OK] = { 200, "OK" },
		[V_ALREADY] = { 200, "ALREADY" },
		[V_ACCEPTED] = { 202, "ACCEPTED" },
		[V_TOO_FREQUENT] = { 409, "TOO_FREQUENT" },
		[V_RATE] = { 429, "RATE_LIMITED" },
		[V_AUTH] = { 401, "UNAUTHORIZED" },
		[V_BEARER] = { 401, "UNAUTHORIZED" },
		[V_NOT_ALLOWED] = { 422, "NOT_ALLOWED" },
		[V_INTERNAL] = { 500, "INTERNAL" },
	};

	a->http = w[c->v].http;
	a->code = w[c->v].code;
	if (c->v == V_RATE && throttle_in_body)
		a->http = 200, a->code = "THROTTLED";
	a->retry_after = a->http == 429;
	if (c->kind == K_ORDER && c->v == V_OK) {
		a->code = c->order;
		snprintf(a->body, sizeof a->body, "{\"card\":\"%s\",\"txn\":\"%s\",\"order\":\"%s\"}",
		    c->named, c->named_txn, c->order);
	} else if (c->kind == K_ORDER && c->v == V_NOT_ALLOWED) {
		a->http = 404, a->code = "NO_ORDER";
		snprintf(a->body, sizeof a->body, "{\"code\":\"NO_ORDER\"}");
	} else if (c->kind == K_STATUS && c->v == V_OK) {
		a->code = c->said_pending ? pending_state : state_name[c->said];
		snprintf(a->body, sizeof a->body, "{\"card\":\"%s\",\"status\":\"%s\"}", c->named, a->code);
	} else if (c->v == V_ACCEPTED)
		snprintf(a->body, sizeof a->body, "{\"code\":\"%s\",\"card\":\"%s\",\"txn\":\"%s\"}",
		    a->code, c->named, c->txn);
	else if (c->v == V_OK || c->v == V_ALREADY)
		snprintf(a->body, sizeof a->body, "{\"code\":\"%s\",\"card\":\"%s\"}", a->code, c->named);
	else
		snprintf(a->body, sizeof a->body, "{\"code\":\"%s\"}", a->code);
}

const struct shape shape_default = { "default", parse_default, answer_default, NULL };
