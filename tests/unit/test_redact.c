/* test_redact.c - secrets cut out of what a carrier says back (sr_redact),
 * in every spelling srq sends them in or a carrier writes them back in. */
#include <string.h>

#include "sr.h"
#include "unit.h"

struct row {
	const char *said, *want;
};

static void
table(char *const *secrets, int n, const struct row *rows, size_t nrows)
{
	for (size_t i = 0; i < nrows; i++) {
		char s[160];

		snprintf(s, sizeof s, "%s", rows[i].said);
		sr_redact(s, sizeof s, secrets, n);
		CHECK(!strcmp(s, rows[i].want), "'%s': got '%s', want '%s'", rows[i].said, s,
		    rows[i].want);
	}
}

int
main(void)
{
	/* A password with a slash, a plus, a space and padding, and Basic's
	 * base64 of acme:<it>, as the gateway notes them. */
	char pw[] = "Sekr3t/+p w==", b64[] = "YWNtZTpTZWtyM3QvK3Agdz09";
	char *secrets[] = { pw, b64 };
	static const struct row rows[] = {
		{ "bad pw: Sekr3t/+p w== here", "bad pw: [secret] here" },
		/* percent-encoded as srq sends it, and in lower case */
		{ "pw=Sekr3t%2F%2Bp%20w%3D%3D&x=1", "pw=[secret]&x=1" },
		{ "pw=Sekr3t%2f%2bp%20w%3d%3d", "pw=[secret]" },
		/* every byte encoded, even those that need not be */
		{ "pw=%53%65%6b%72%33%74%2F%2B%70%20%77%3D%3D.", "pw=[secret]." },
		/* form-encoded: + for the space */
		{ "pw=Sekr3t%2F%2Bp+w%3D%3D", "pw=[secret]" },
		/* JSON-escaped, as PHP writes a slash, and as \u escapes */
		{ "{\"pw\": \"Sekr3t\\/+p w==\"}", "{\"pw\": \"[secret]\"}" },
		{ "Sekr3t\\u002f\\u002Bp\\u0020w\\u003d=", "[secret]" },
		/* the base64 of Basic's credentials, and that percent-encoded */
		{ "Basic YWNtZTpTZWtyM3QvK3Agdz09", "Basic [secret]" },
		{ "auth=YWNtZTpTZWtyM3QvK3Agdz09", "auth=[secret]" },
		{ "auth=YWNtZTpTZWtyM3QvK3Agdz09%3D", "auth=[secret]%3D" },
		/* cut short by the message's end, mid-escape too */
		{ "you sent Sekr3t%2F%2", "you sent [secret]" },
		{ "you sent Sekr3t\\", "you sent [secret]" },
		{ "you sent Sekr", "you sent [secret]" },
		/* under 4 bytes of it at the end are no secret */
		{ "you sent Sek", "you sent Sek" },
		/* another word, and another case, are not the secret */
		{ "Sekr3t/-p w==", "Sekr3t/-p w==" },
		{ "SEKR3T/+P W==", "SEKR3T/+P W==" },
		{ "a %2F and a + and \\/", "a %2F and a + and \\/" },
	};
	char tok[] = "tok-3f9c1e77aa", key[] = "tok-3f9c", pin[] = "42";
	char *overlapping[] = { key, tok, pin };
	static const struct row more[] = {
		/* one secret inside another: the whole run is one [secret] */
		{ "bad token: tok-3f9c1e77aa", "bad token: [secret]" },
		{ "tok-3f9c1e77aa,tok-3f9c", "[secret],[secret]" },
		/* under 4 bytes: not looked for */
		{ "HTTP 422 pin 42", "HTTP 422 pin 42" },
	};

	table(secrets, 2, rows, sizeof rows / sizeof rows[0]);
	table(overlapping, 3, more, sizeof more / sizeof more[0]);
	{
		char s[8] = "Sekr3t";

		/* the result fits the caller's buffer */
		sr_redact(s, sizeof s, secrets, 2);
		CHECK(!strcmp(s, "[secret"), "cut to its buffer: '%s'", s);
	}
	return unit_done("test_redact");
}
