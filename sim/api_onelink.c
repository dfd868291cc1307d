/* api_onelink.c - sr-gwsim's OneLink-like API shape (China Mobile): a
 * token fetched with the appid's password, then calls and queries with
 * the token, their parameters in the query or the body; the outcome a
 * status code in the body of HTTP 200.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gwsim.h"

/* A OneLink token: each fetch issues a new one, and older ones of the same
 * appid stay valid until they expire themselves. */
struct token {
	char tok[33], appid[65];
	int64_t issued;
};

static struct token *tokens;
static size_t ntokens, captokens;

/* Decode %XX and '+' in place. */
static void
url_decode(char *s)
{
	char *o = s, hex[3] = "";

	for (; *s; s++) {
		if (*s == '+') {
			*o++ = ' ';
		} else if (*s == '%' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2])) {
			hex[0] = s[1], hex[1] = s[2];
			*o++ = (char)strtol(hex, NULL, 16);
			s += 2;
		} else
			*o++ = *s;
	}
	*o = '\0';
}

/* A POST body's parameters as a JSON object: a JSON body as it is, an
 * application/x-www-form-urlencoded one decoded into strings. NULL if none. */
static json_t *
body_params(struct MHD_Connection *con, const struct ctx *cx)
{
	const char *type = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Content-Type");
	char *copy, *save = NULL, *kv, *v;
	json_t *o;

	if (!cx->body)
		return NULL;
	if ((type && !strncasecmp(type, "application/json", 16)) || cx->body[0] == '{')
		return json_loads(cx->body, 0, NULL);
	o = json_object();
	copy = sr_strdup(cx->body);
	for (kv = strtok_r(copy, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
		if ((v = strchr(kv, '=')))
			*v++ = '\0';
		url_decode(kv);
		if (v)
			url_decode(v);
		json_object_set_new(o, kv, json_string(v ? v : ""));
	}
	free(copy);
	return o;
}

/* A OneLink parameter: from the body if there is one, else the query.
 * Truncated to fit buf (ids are read with id_param, never truncated). */
static const char *
param(struct MHD_Connection *con, json_t *body, const char *name, char *buf, size_t len)
{
	json_t *v = json_is_object(body) ? json_object_get(body, name) : NULL;
	const char *q;

	if (json_is_string(v))
		snprintf(buf, len, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if ((q = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, name)))
		snprintf(buf, len, "%s", q);
	else
		buf[0] = '\0';
	return buf;
}

/* An id parameter into dst (65 bytes), or "" if absent or not an id. */
static void
id_param(struct MHD_Connection *con, json_t *body, const char *name, char *dst)
{
	char buf[256];

	id_copy(dst, param(con, body, name, buf, sizeof buf));
}

/* The token tok, newest first, or NULL (caller holds mu). */
static const struct token *
token_find(const char *tok)
{
	for (size_t i = ntokens; i-- > 0;)
		if (!strcmp(tokens[i].tok, tok))
			return &tokens[i];
	return NULL;
}

/* Issue a new token for appid into c->token (caller holds mu). */
void
token_issue(struct call *c)
{
	unsigned char r[16];
	FILE *f = fopen("/dev/urandom", "r");
	struct token *t;

	if (!f || fread(r, 1, sizeof r, f) != sizeof r)
		for (size_t i = 0; i < sizeof r; i++) /* unlikely; unique is enough */
			r[i] = (unsigned char)rand_r(&jitter_seed);
	if (f)
		fclose(f);
	for (size_t i = 0; i < sizeof r; i++)
		snprintf(c->token + 2 * i, 3, "%02x", r[i]);
	if (ntokens == captokens) {
		captokens = captokens ? captokens * 2 : 64;
		tokens = sr_realloc(tokens, captokens * sizeof *tokens);
	}
	t = &tokens[ntokens++];
	snprintf(t->tok, sizeof t->tok, "%s", c->token);
	snprintf(t->appid, sizeof t->appid, "%s", c->carrier);
	t->issued = c->arrived;
}

/* OneLink (China Mobile) shape, GET with a query or POST with a JSON or
 * form body:
 *   /v5/ec/get/token?appid=&password=&transid=
 *   /v5/ec/change/sim-status?msisdn=&operType=0|1&token=&transid=
 *   /v5/ec/query/sim-status?msisdn=&token=&transid=
 * The account is the appid, the token's for calls and queries; the key
 * is the transid. Returns 0, or the HTTP status of an answer in *bad. */
static int
parse_onelink(struct MHD_Connection *con, const char *method, const char *url,
    const struct ctx *cx, struct call *c, const char **bad)
{
	json_t *body = !strcmp(method, "POST") ? body_params(con, cx) : NULL;
	char op[8], tok[80], pw[512];
	const struct token *t;
	int ret = 0;

	*bad = "{\"status\":\"12002\",\"message\":\"参数错误\"}";
	param(con, body, "transid", c->key, sizeof c->key);
	if ((strcmp(method, "GET") && strcmp(method, "POST")) || strncmp(url, "/v5/ec/", 7)) {
		*bad = "{\"code\":\"NOT_FOUND\"}";
		ret = 404;
	} else if (!strcmp(url + 7, "get/token")) {
		c->kind = K_TOKEN;
		id_param(con, body, "appid", c->carrier);
		param(con, body, "password", pw, sizeof pw);
		if (!sr_valid_id(c->carrier))
			ret = 200;
		else if (password && strcmp(pw, password))
			c->v = V_AUTH;
	} else if (!strcmp(url + 7, "change/sim-status") || !strcmp(url + 7, "query/sim-status")) {
		c->kind = url[7] == 'q' ? K_STATUS : !strcmp(param(con, body, "operType", op,
		    sizeof op), "0") ? K_STOP : K_RESUME;
		id_param(con, body, "msisdn", c->card);
		param(con, body, "token", tok, sizeof tok);
		if (!sr_valid_id(c->card) || (c->kind != K_STATUS && strcmp(op, "0") && strcmp(op, "1")))
			ret = 200;
		pthread_mutex_lock(&mu);
		if ((t = token_find(tok)))
			snprintf(c->carrier, sizeof c->carrier, "%s", t->appid);
		if (!t || (token_ttl_ms > 0 && c->arrived - t->issued >= token_ttl_ms))
			c->v = V_AUTH;
		pthread_mutex_unlock(&mu);
	} else {
		*bad = "{\"code\":\"NOT_FOUND\"}";
		ret = 404;
	}
	json_decref(body);
	if (!bearer_ok(con))
		c->v = V_BEARER;
	return ret;
}

static void
answer_onelink(const struct call *c, struct answer *a)
{
	static const struct {
		const char *status, *message;
	} w[] = {
		[V_OK] = { "0", "正确" },
		[V_ALREADY] = { "12058", "卡状态已是目标状态" },
		[V_ACCEPTED] = { "0", "正确" },
		[V_TOO_FREQUENT] = { "12039", "同一卡号3分钟内不能重复办理" },
		[V_RATE] = { "12040", "调用频繁，请稍后再试" },
		[V_AUTH] = { "12021", "TOKEN不存在或已过期，请重新获取" },
		[V_NOT_ALLOWED] = { "12087", "号码状态不允许办理" },
	};
	static const char *const card_status[] = { "2", "4", "9" }; /* active, stopped, retired */

	if (answer_outside(c, a))
		return;
	if (c->kind == K_TOKEN && c->v == V_AUTH) {
		a->code = "12001";
		snprintf(a->body, sizeof a->body, "{\"status\":\"12001\",\"message\":\"APPID或密码错误\"}");
		return;
	}
	a->code = w[c->v].status;
	if (c->v != V_OK && c->v != V_ACCEPTED)
		snprintf(a->body, sizeof a->body, "{\"status\":\"%s\",\"message\":\"%s\"}", a->code,
		    w[c->v].message);
	else if (c->kind == K_TOKEN)
		snprintf(a->body, sizeof a->body, "{\"status\":\"0\",\"message\":\"正确\",\"result\":"
		    "[{\"token\":\"%s\",\"ttl\":\"3600\"}]}", c->token);
	else if (c->kind == K_STATUS) {
		a->code = state_name[c->said];
		snprintf(a->body, sizeof a->body, "{\"status\":\"0\",\"message\":\"正确\",\"result\":"
		    "[{\"cardStatus\":\"%s\"}]}", card_status[c->said]);
	} else if (c->v == V_ACCEPTED)
		snprintf(a->body, sizeof a->body, "{\"status\":\"0\",\"message\":\"正确\",\"result\":"
		    "[{\"msisdn\":\"%s\",\"jobId\":\"%s\"}]}", c->named, c->txn);
	else
		snprintf(a->body, sizeof a->body, "{\"status\":\"0\",\"message\":\"正确\",\"result\":"
		    "[{\"msisdn\":\"%s\"}]}", c->named);
}

/* A OneLink change's order is a job: jobId J<n>. */
static void
setup_onelink(void)
{
	txn_prefix = 'J';
}

const struct shape shape_onelink = { "onelink", parse_onelink, answer_onelink, setup_onelink };

void
tokens_free(void)
{
	free(tokens);
}
