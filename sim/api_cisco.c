/* api_cisco.c - sr-gwsim's Cisco IoT Control Center-like API shape: HTTP
 * Basic (the user is the account), PUT a device's status to change it,
 * GET it to query; errors as an errorCode and errorMessage.
 */
#include <string.h>

#include "gwsim.h"

/* Cisco IoT Control Center shape:
 *   PUT /rws/api/v1/devices/{iccid}  {"status":"DEACTIVATED"|"ACTIVATED"}
 *   GET /rws/api/v1/devices/{iccid}
 * HTTP Basic: the user is the account, the password its API key (from
 * --password-file, or --token-file). Returns 0, or the HTTP status of an
 * answer in *bad. */
static int
parse_cisco(struct MHD_Connection *con, const char *method, const char *url,
    const struct ctx *cx, struct call *c, const char **bad)
{
	static const char prefix[] = "/rws/api/v1/devices/";
	const char *key = password ? password : token, *st, *p;
	char *user, *pw = NULL;
	json_t *j;

	*bad = "{\"code\":\"NOT_FOUND\"}";
	if (strncmp(url, prefix, sizeof prefix - 1) || (strcmp(method, "GET") && strcmp(method, "PUT")))
		return 404;
	*bad = "{\"errorCode\":\"20000001\",\"errorMessage\":\"Invalid ICCID\"}";
	if (!sr_valid_id(url + sizeof prefix - 1))
		return 404;
	snprintf(c->card, sizeof c->card, "%s", url + sizeof prefix - 1);
	c->kind = K_STATUS;
	if (!strcmp(method, "PUT")) {
		j = cx->body ? json_loads(cx->body, 0, NULL) : NULL;
		st = j ? sr_jstr(j, "status") : NULL;
		c->kind = st && !strcmp(st, "DEACTIVATED") ? K_STOP : K_RESUME;
		if (!st || (strcmp(st, "DEACTIVATED") && strcmp(st, "ACTIVATED"))) {
			json_decref(j);
			*bad = "{\"errorCode\":\"10000024\",\"errorMessage\":\"Invalid status\"}";
			return 400;
		}
		json_decref(j);
	}
	p = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Idempotency-Key");
	snprintf(c->key, sizeof c->key, "%s", p ? p : "");
	user = MHD_basic_auth_get_username_password(con, &pw);
	id_copy(c->carrier, user);
	if (!c->carrier[0] || (key && (!pw || strcmp(pw, key))))
		c->v = V_AUTH;
	MHD_free(user);
	MHD_free(pw);
	return 0;
}

static void
answer_cisco(const struct call *c, struct answer *a)
{
	static const char *const status[] = { "ACTIVATED", "DEACTIVATED", "RETIRED" };
	static const struct {
		int http;
		const char *code, *message;
	} w[] = {
		[V_TOO_FREQUENT] = { 400, "30000009", "Too many status changes" },
		[V_RATE] = { 429, "40000029", "Rate limit exceeded" },
		[V_AUTH] = { 401, "10000001", "Invalid credentials or IP" },
		[V_BEARER] = { 401, "10000001", "Invalid credentials or IP" },
		[V_NOT_ALLOWED] = { 404, "20000001", "Invalid ICCID" },
		[V_INTERNAL] = { 500, "30000001", "Unknown server error" },
	};

	a->http = 200;
	if (c->kind == K_STATUS && c->v == V_OK) {
		a->code = state_name[c->said];
		snprintf(a->body, sizeof a->body, "{\"iccid\":\"%s\",\"status\":\"%s\"}", c->named,
		    status[c->said]);
	} else if (c->v == V_OK || c->v == V_ALREADY) {
		a->code = c->v == V_OK ? "OK" : "ALREADY";
		snprintf(a->body, sizeof a->body, "{\"iccid\":\"%s\"}", c->named);
	} else if (c->v == V_ACCEPTED) {
		a->http = 202, a->code = "ACCEPTED";
		snprintf(a->body, sizeof a->body, "{\"iccid\":\"%s\",\"status\":\"PENDING\"}", c->named);
	} else {
		a->http = w[c->v].http, a->code = w[c->v].code;
		a->retry_after = a->http == 429;
		snprintf(a->body, sizeof a->body, "{\"errorCode\":\"%s\",\"errorMessage\":\"%s\"}",
		    a->code, w[c->v].message);
	}
}

static void
setup_cisco(void)
{
	if (token && password)
		sr_die(SR_EX_USAGE, "--profile cisco: the API key is --password-file or "
		    "--token-file, not both");
}

const struct shape shape_cisco = { "cisco", parse_cisco, answer_cisco, setup_cisco };
