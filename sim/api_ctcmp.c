/* api_ctcmp.c - sr-gwsim's China Telecom CMP-like API shape (the older
 * API): every call a GET to one path, the account, its password and a
 * signature in the query string; the outcome a resultCode in XML inside
 * HTTP 200.
 */
#include <string.h>
#include <strings.h>

#include "gwsim.h"

/* Is the query string signed with --sign-key-file's key? sign is the hex
 * HMAC-SHA256 of the text signed_params joins. */
static int
ctcmp_signed(struct MHD_Connection *con)
{
	const char *sign = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "sign");
	char text[8192], want[129], key[512];
	size_t len = signed_params(con, text, sizeof text);

	key_now(key, sizeof key);
	if (!sign || len >= sizeof text || sr_digest_hex(SR_SIGN_HMAC_SHA256, key,
	    strlen(key), text, len, 0, want) < 0)
		return 0;
	return !strcasecmp(sign, want);
}

/* China Telecom CMP-like shape (the older API): every call a GET to one
 * path, the account, its password and a signature in the query string:
 *   /m2m_ec/query.do?method=disabledNumber&user_id=&access_number=&orderTypeId=19|20&passWord=&sign=
 *   /m2m_ec/query.do?method=queryCardMainStatus&user_id=&access_number=&passWord=&sign=
 * (19 stop, 20 resume). The account is the user_id. A wrong signature or
 * password is refused alike. Returns 0, or the HTTP status of an answer
 * in *bad. */
static int
parse_ctcmp(struct MHD_Connection *con, const char *method, const char *url,
    const struct ctx *cx, struct call *c, const char **bad)
{
	const char *m = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "method");
	const char *order = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "orderTypeId");
	const char *pw = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "passWord");

	(void)cx;
	*bad = "{\"code\":\"NOT_FOUND\"}";
	if (strcmp(method, "GET") || strcmp(url, "/m2m_ec/query.do"))
		return 404;
	*bad = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><businessServiceResponse>"
	    "<resultCode>-1</resultCode><resultMsg>参数错误</resultMsg></businessServiceResponse>";
	if (m && !strcmp(m, "queryCardMainStatus"))
		c->kind = K_STATUS;
	else if (m && !strcmp(m, "disabledNumber") && order && !strcmp(order, "19"))
		c->kind = K_STOP;
	else if (m && !strcmp(m, "disabledNumber") && order && !strcmp(order, "20"))
		c->kind = K_RESUME;
	else
		return 200;
	id_copy(c->card, MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "access_number"));
	id_copy(c->carrier, MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "user_id"));
	if (!c->card[0] || !c->carrier[0])
		return 200;
	if (!ctcmp_signed(con) || (password && (!pw || strcmp(pw, password))))
		c->v = V_AUTH;
	if (!bearer_ok(con))
		c->v = V_BEARER;
	return 0;
}

static void
answer_ctcmp(const struct call *c, struct answer *a)
{
	static const struct {
		const char *code, *message;
	} w[] = {
		[V_OK] = { "0", "处理成功" },
		[V_ALREADY] = { "-3", "号码已是该状态" },
		[V_ACCEPTED] = { "0", "处理成功" },
		[V_TOO_FREQUENT] = { "-4", "操作过于频繁" },
		[V_RATE] = { "-6", "超过调用频率限制" },
		[V_AUTH] = { "-5", "签名或密码错误" },
		[V_NOT_ALLOWED] = { "-2", "号码状态不允许办理" },
	};
	/* 4 在用 (active), 5 停机 (stopped), 1 可激活 (not yet activated: the
	 * simulator's retired card, never to be changed by srq). */
	static const char *const main_status[] = { "4", "5", "1" };
	int n;

	if (answer_outside(c, a))
		return;
	a->type = "application/xml";
	a->code = w[c->v].code;
	n = snprintf(a->body, sizeof a->body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
	    "<businessServiceResponse><resultCode>%s</resultCode><resultMsg>%s</resultMsg>",
	    a->code, w[c->v].message);
	if (c->kind == K_STATUS && c->v == V_OK) {
		a->code = state_name[c->said];
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<access_number>%s</access_number>"
		    "<productMainStatusCd>%s</productMainStatusCd></businessServiceResponse>", c->named,
		    main_status[c->said]);
	} else if (c->v == V_ACCEPTED)
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<access_number>%s</access_number>"
		    "<GROUP_TRANSACTIONID>%s</GROUP_TRANSACTIONID></businessServiceResponse>", c->named, c->txn);
	else if (c->v == V_OK || c->v == V_ALREADY)
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<access_number>%s</access_number>"
		    "</businessServiceResponse>", c->named);
	else
		snprintf(a->body + n, sizeof a->body - (size_t)n, "</businessServiceResponse>");
}

const struct shape shape_ctcmp = { "ctcmp", parse_ctcmp, answer_ctcmp, need_sign_key };
