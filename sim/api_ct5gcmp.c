/* api_ct5gcmp.c - sr-gwsim's China Telecom 5GCMP-like API shape: GET,
 * signed in headers (an MD5 over the query, the app secret and a
 * timestamp); the outcome an RspCode in XML inside HTTP 200; a change is
 * an order the order query follows.
 */
#include <string.h>

#include "gwsim.h"

/* Is the request signed as the headers say: Sign the upper-case hex MD5
 * of the query parameters as signed_params joins them, then the app
 * secret (--sign-key-file), then the Timestamp? */
static int
ct5g_signed(struct MHD_Connection *con)
{
	const char *sign = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Sign");
	const char *ts = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Timestamp");
	char text[8192], want[129], key[512];
	size_t len = signed_params(con, text, sizeof text);

	key_now(key, sizeof key);
	if (!sign || !ts || len >= sizeof text ||
	    (len += (size_t)snprintf(text + len, sizeof text - len, "%s%s", key, ts)) >= sizeof text ||
	    sr_digest_hex(SR_SIGN_MD5, NULL, 0, text, len, 1, want) < 0)
		return 0;
	return !strcmp(sign, want);
}

/* China Telecom 5GCMP-like shape: every request a GET whose headers sign
 * it (AppKey: the account, Timestamp: ms, Sign: the upper-case hex MD5 of
 * the query parameters as signed_params joins them, then the app secret
 * (--sign-key-file), then the Timestamp), answered in XML inside HTTP 200:
 *   /5gcmp/openapi/v1/common/disabledNumberService?accessNumber=&orderTypeId=19|20
 *   /5gcmp/openapi/v1/prodinst/queryCardMainStatus?accessNumber=
 *   /5gcmp/openapi/v1/common/queryOrderStatus?groupTransactionId=
 * A change is an order (GROUP_TRANSACTIONID), which the order query
 * follows. */
static int
parse_ct5gcmp(struct MHD_Connection *con, const char *method, const char *url,
    const struct ctx *cx, struct call *c, const char **bad)
{
	static const char prefix[] = "/5gcmp/openapi/v1/";
	const char *order = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "orderTypeId");
	const char *txn = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "groupTransactionId");
	const char *path = url + sizeof prefix - 1;

	(void)cx;
	*bad = "{\"code\":\"NOT_FOUND\"}";
	if (strcmp(method, "GET") || strncmp(url, prefix, sizeof prefix - 1))
		return 404;
	*bad = "<SvcCont><Response><RspType>1</RspType><RspCode>1001</RspCode>"
	    "<RspDesc>参数错误</RspDesc></Response></SvcCont>";
	if (!strcmp(path, "prodinst/queryCardMainStatus"))
		c->kind = K_STATUS;
	else if (!strcmp(path, "common/disabledNumberService") && order && !strcmp(order, "19"))
		c->kind = K_STOP;
	else if (!strcmp(path, "common/disabledNumberService") && order && !strcmp(order, "20"))
		c->kind = K_RESUME;
	else if (!strcmp(path, "common/queryOrderStatus") && txn && strlen(txn) < sizeof c->txn &&
	    sr_valid_id(txn)) {
		c->kind = K_ORDER;
		snprintf(c->txn, sizeof c->txn, "%s", txn);
	} else if (!strncmp(path, "common/", 7) || !strncmp(path, "prodinst/", 9))
		return 200;
	else
		return 404;
	if (c->kind != K_ORDER)
		id_copy(c->card, MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "accessNumber"));
	id_copy(c->carrier, MHD_lookup_connection_value(con, MHD_HEADER_KIND, "AppKey"));
	if ((c->kind != K_ORDER && !c->card[0]) || !c->carrier[0])
		return 200;
	if (!ct5g_signed(con))
		c->v = V_AUTH;
	if (!bearer_ok(con))
		c->v = V_BEARER;
	return 0;
}

static void
answer_ct5gcmp(const struct call *c, struct answer *a)
{
	static const struct {
		const char *code, *message;
	} w[] = {
		[V_OK] = { "0000", "成功" },
		[V_ALREADY] = { "0001", "号码已是该状态" },
		[V_ACCEPTED] = { "0000", "成功" },
		[V_TOO_FREQUENT] = { "1009", "操作过于频繁" },
		[V_RATE] = { "1010", "超过调用频率限制" },
		[V_AUTH] = { "1003", "签名错误" },
		[V_NOT_ALLOWED] = { "1002", "号码状态不允许办理" },
	};
	/* 4 在用 (active), 5 停机 (stopped), 1 可激活 (not yet activated: the
	 * simulator's retired card, never to be changed by srq). */
	static const char *const main_status[] = { "4", "5", "1" };
	const char *word;
	int n;

	if (answer_outside(c, a))
		return;
	a->type = "application/xml";
	if (c->kind == K_ORDER && c->v == V_NOT_ALLOWED) {
		a->code = "1004";
		snprintf(a->body, sizeof a->body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><SvcCont>"
		    "<Response><RspType>1</RspType><RspCode>1004</RspCode><RspDesc>订单不存在</RspDesc>"
		    "</Response></SvcCont>");
		return;
	}
	a->code = w[c->v].code;
	n = snprintf(a->body, sizeof a->body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><SvcCont>"
	    "<Response><RspType>%d</RspType><RspCode>%s</RspCode><RspDesc>%s</RspDesc></Response>",
	    strcmp(a->code, "0000") != 0, a->code, w[c->v].message);
	if (c->kind == K_ORDER && c->v == V_OK) {
		word = !strcmp(c->order, "done") ? "1" : !strcmp(c->order, "failed") ? "2" : "0";
		a->code = c->order;
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<GROUP_TRANSACTIONID>%s</GROUP_TRANSACTIONID>"
		    "<accessNumber>%s</accessNumber><STATUSCD>%s</STATUSCD></SvcCont>", c->named_txn,
		    c->named, word);
	} else if (c->kind == K_STATUS && c->v == V_OK) {
		a->code = state_name[c->said];
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<productInfo><accessNumber>%s</accessNumber>"
		    "<productMainStatusCd>%s</productMainStatusCd></productInfo></SvcCont>", c->named,
		    main_status[c->said]);
	} else if (c->v == V_ACCEPTED)
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<accessNumber>%s</accessNumber>"
		    "<GROUP_TRANSACTIONID>%s</GROUP_TRANSACTIONID></SvcCont>", c->named, c->txn);
	else if (c->v == V_OK || c->v == V_ALREADY)
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<accessNumber>%s</accessNumber></SvcCont>",
		    c->named);
	else
		snprintf(a->body + n, sizeof a->body - (size_t)n, "</SvcCont>");
}

const struct shape shape_ct5gcmp = { "ct5gcmp", parse_ct5gcmp, answer_ct5gcmp, need_sign_key };
