/* test_profile.c - the profile format: parsing, errors with line numbers,
 * 'from' derivation, templates and their escaping, answer paths. */
#include <stdlib.h>
#include <string.h>

#include "sr.h"
#include "unit.h"

static const char minimal[] =
    "accounts = c1 c2\n"
    "stop.method = POST\nstop.url = {base}/s/{card}\n"
    "resume.method = POST\nresume.url = {base}/r/{card}\n"
    "query.method = GET\nquery.url = {base}/q/{card}\n"
    "state = st\nstate.active = A\nstate.stopped = S\n"
    "rule = * => unknown\n";

static void
bad(const char *extra, const char *want)
{
	char text[4096], err[300];
	struct sr_profile *p;

	snprintf(text, sizeof text, "%s%s", minimal, extra);
	p = sr_profile_parse(text, "t", "t.profile", NULL, err, sizeof err);
	CHECK(!p && strstr(err, want), "'%s' is refused with '%s' (got '%s')", extra, want,
	    p ? "accepted" : err);
	sr_profile_free(p);
}

struct vals {
	const char *card, *token;
};

static const char *
look(void *arg, const char *name, int *raw)
{
	struct vals *v = arg;

	*raw = 0;
	if (!strcmp(name, "card"))
		return v->card;
	if (!strcmp(name, "token"))
		return v->token;
	if (!strcmp(name, "base")) {
		*raw = 1;
		return "http://h:1/x?";
	}
	return NULL;
}

static void
expands(const char *tmpl, int ctx, const char *want)
{
	char buf[256], err[100] = "";
	struct sr_buf out = { buf, 0, sizeof buf };
	struct vals v = { "8986 01&x", "a\"b\\c" };
	int rc = sr_expand(tmpl, ctx, look, &v, &out, err, sizeof err);

	CHECK(rc == 0 && !strcmp(buf, want), "'%s' expands to '%s' (got '%s' %s)", tmpl, want, buf, err);
}

int
main(void)
{
	char err[300];
	struct sr_profile *p = sr_profile_parse(minimal, "t", "t.profile", NULL, err, sizeof err);

	CHECK(p && p->naccounts == 2 && p->qps == -1, "a minimal profile parses: %s", p ? "" : err);
	sr_profile_free(p);

	/* Errors name the file and the line, and what is wrong (never the
	 * value: it may be a secret under the wrong key). */
	bad("qps = 0\n", "t.profile: line 12: qps: the value is not an integer from 1 to 100000");
	bad("qps = 5x\n", "qps: the value is not an integer");
	bad("qps = 99999999999999999999\n", "qps:");
	bad("bogus = 1\n", "unknown key 'bogus'");
	bad("base = a\nbase = b\n", "'base' is set twice");
	bad("rule = http=700 => ok\n", "is not an HTTP status");
	bad("rule = http=200 => maybe\n", "the outcome is not one of ok");
	bad("rule = code=1\n", "rule: no '=> outcome'");
	bad("set.card = x\n", "would hide the built-in placeholder");
	bad("secret.Bad = x\n", "a name is [a-z0-9_]{1,32}");
	bad("sign = md5\n", "sign needs sign.input");
	/* {sign} goes wherever a placeholder may, but needs 'sign' to make
	 * it, and cannot be part of what it signs or of what is filled before
	 * the request ({base}, {reqid}), itself or through a set.NAME. */
	bad("header = X-Sign: {sign}\n", "line 12: header: {sign} with no 'sign' to say how to make it");
	bad("set.sig = {sign}\n", "set.sig: {sign} with no 'sign'");
	bad("sign = md5\nsign.input = {params}{sign}\n", "line 13: sign.input: {sign} cannot be part of");
	bad("sign = md5\nsign.input = {params}{x}\nset.x = {ts}{sign}\n", "sign.input: {sign} cannot");
	bad("sign = hmac-sha256\nsign.input = {params}\nsign.key = {sign}\n", "sign.key: {sign} cannot");
	bad("sign = md5\nsign.input = {params}\nreqid = {card}{sign}\n", "reqid: {sign} cannot");
	bad("token.url = {base}/t\n", "token.url needs token.field");
	bad("token.url = {base}/t\ntoken.field = tok\ntoken.body = {\"a\":\"b\"}\n",
	    "token.url needs token.method");
	bad("just words\n", "line 12: not 'key = value' (the line is not shown)");
	bad("token.method = DELETE\n", "token.method: the value is not GET, POST, PUT or PATCH");
	bad("header = X-Key sk_1\n", "header: the value is not 'Name: value'");
	bad("X-Key: sk_1==\n", "unknown key (not shown: it is not a key name)");
	bad("max_share.srq = 0.5\n", "not srq");
	bad("max_share.Usage = 0.5\n", "a class is [a-z0-9_]{1,32}");
	bad("max_share = 1.5\n", "max_share:");
	bad("max_share.usage = 0.2\nmax_share.usage = 0.3\n", "'max_share.usage' is set twice");
	bad("reserve_qps = -1\n", "reserve_qps:");

	/* The account's rate shared (sr-rate): srq's reserve, each class's share;
	 * a profile's shares override its base's, class by class. */
	p = sr_profile_parse("from = default\naccounts = c9\nreserve_qps = 6\nmax_share = 0.5\n"
	    "max_share.usage = 0.2\nmax_share = 0.4\n", "d", "d.profile", NULL, err, sizeof err);
	CHECK(!p && strstr(err, "'max_share' is set twice"), "max_share twice: %s", err);
	sr_profile_free(p);
	p = sr_profile_parse("from = default\naccounts = c9\nreserve_qps = 6\nmax_share = 0.5\n"
	    "max_share.usage = 0.2\n", "d", "d.profile", NULL, err, sizeof err);
	CHECK(p && p->reserve_qps == 6 && p->nshares == 2 && !strcmp(p->shares[0].cls, "*") &&
	    p->shares[0].share == 0.5 && !strcmp(p->shares[1].cls, "usage") && p->shares[1].share == 0.2,
	    "reserve_qps and max_share[.CLASS] parse: %s", p ? "" : err);
	sr_profile_free(p);

	/* from: start from the built-in default, override some keys. */
	p = sr_profile_parse("from = default\naccounts = c9\nqps = 7\nrule = * => fail\n", "d",
	    "d.profile", NULL, err, sizeof err);
	CHECK(p != NULL, "from = default parses: %s", err);
	if (p) {
		CHECK(p->qps == 7 && p->naccounts == 1 && !strcmp(p->accounts[0], "c9"),
		    "its own keys override");
		CHECK(p->nrules == 1 && p->rules[0].verdict == SR_V_FAIL, "its rules replace the base's");
		CHECK(p->nqrules > 0 && p->req[SR_REQ_STOP].url && p->nheaders == 2,
		    "what it leaves out comes from the base");
		sr_profile_free(p);
	}
	p = sr_profile_parse("accounts = x\nfrom = default\n", "d", "d.profile", NULL, err, sizeof err);
	CHECK(!p && strstr(err, "'from' must come before"), "from comes first: %s", err);
	sr_profile_free(p);

	/* Each value is escaped for where it goes; a base URL goes in as it is. */
	expands("{base}q?c={card}", SR_CTX_URL, "http://h:1/x?q?c=8986%2001%26x");
	expands("{\"c\":\"{card}\",\"t\":\"{token}\"}", SR_CTX_JSON, "{\"c\":\"8986 01&x\",\"t\":\"a\\\"b\\\\c\"}");
	expands("c={card}&t={token}", SR_CTX_FORM, "c=8986%2001%26x&t=a%22b%5Cc");
	expands("{notaplaceholder {CARD} { card}", SR_CTX_RAW, "{notaplaceholder {CARD} { card}");
	{
		char buf[16], e2[100];
		struct sr_buf out = { buf, 0, sizeof buf };
		struct vals v = { "x", "y" };

		CHECK(sr_expand("{nope}", SR_CTX_RAW, look, &v, &out, e2, sizeof e2) < 0 &&
		    strstr(e2, "unknown placeholder {nope}"), "an unknown placeholder is an error");
		CHECK(sr_expand("0123456789{card}{card}{card}{card}{card}{card}", SR_CTX_RAW, look, &v,
		    &out, e2, sizeof e2) < 0, "an expansion never overflows its buffer");
		v.card = "a\r\nX-Evil: 1";
		CHECK(sr_expand("H: {card}", SR_CTX_HEADER, look, &v, &out, e2, sizeof e2) < 0,
		    "a value cannot start a new header");
	}

	/* Paths into answers. */
	{
		json_t *j = json_loads("{\"a\":{\"b\":[{\"c\":\"x\"},{\"c\":7}]},\"t\":true}", 0, NULL);
		char out[32];

		CHECK(sr_answer_field(j, NULL, "a.b[1].c", out, sizeof out) && !strcmp(out, "7"),
		    "a.b[1].c is 7 (%s)", out);
		CHECK(sr_answer_field(j, NULL, "a.b[0].c", out, sizeof out) && !strcmp(out, "x"), "x");
		CHECK(sr_answer_field(j, NULL, "t", out, sizeof out) && !strcmp(out, "true"), "true");
		CHECK(!sr_answer_field(j, NULL, "a.b[2].c", out, sizeof out), "out of range");
		CHECK(!sr_answer_field(j, NULL, "a.z", out, sizeof out), "absent");
		json_decref(j);
		CHECK(sr_answer_field(NULL, "<R><RspCode>0000</RspCode></R>", "xml:RspCode", out,
		    sizeof out) && !strcmp(out, "0000"), "xml:RspCode");
	}
	/* Signatures by libcrypto: known answers (RFC 1321, RFC 4231 case 2). */
	{
		char hex[160];

		CHECK(sr_digest_hex(SR_SIGN_MD5, NULL, 0, "abc", 3, 0, hex) == 0 &&
		    !strcmp(hex, "900150983cd24fb0d6963f7d28e17f72"), "md5(abc) %s", hex);
		CHECK(sr_digest_hex(SR_SIGN_MD5, NULL, 0, "abc", 3, 1, hex) == 0 &&
		    !strcmp(hex, "900150983CD24FB0D6963F7D28E17F72"), "MD5(abc) upper %s", hex);
		CHECK(sr_digest_hex(SR_SIGN_SHA256, NULL, 0, "abc", 3, 0, hex) == 0 &&
		    !strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
		    "sha256(abc) %s", hex);
		CHECK(sr_digest_hex(SR_SIGN_HMAC_SHA256, "Jefe", 4, "what do ya want for nothing?", 28, 0,
		    hex) == 0 && !strcmp(hex,
		    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
		    "hmac-sha256 %s", hex);
	}
	return unit_done("test_profile");
}
