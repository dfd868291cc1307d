/* sr_auth.c - the kinds of authentication a profile may use, one table
 * that profile parsing (sr_profile.c), checking (sr_profile_check.c) and
 * request building (sr_request.c) go through, as curl's lib/vauth/ does.
 * The list of kinds, and how to add one, is in sr_auth.h
 * (SR_AUTH_KINDS).
 */
#define _POSIX_C_SOURCE 200809L
#include "sr.h"

#define SR_AUTH_ROW(k) { #k, sr_auth_##k##_parse, sr_auth_##k##_check, sr_auth_##k##_apply },
const struct sr_auth sr_auths[] = { SR_AUTH_KINDS(SR_AUTH_ROW) };
#undef SR_AUTH_ROW
const int sr_nauths = sizeof sr_auths / sizeof sr_auths[0];

int
sr_auth_parse(struct sr_parse *ps, const char *key, char *v)
{
	for (int i = 0; i < sr_nauths; i++) {
		int rc = sr_auths[i].parse(ps, key, v);

		if (rc != 0)
			return rc;
	}
	return 0;
}

int
sr_auth_check(struct sr_parse *ps, int stage)
{
	for (int i = 0; i < sr_nauths; i++)
		if (sr_auths[i].check(ps, stage) < 0)
			return -1;
	return 0;
}

int
sr_auth_apply(struct sr_build *b, int stage, struct sr_request *req)
{
	for (int i = 0; i < sr_nauths; i++)
		if (sr_auths[i].apply(b, stage, req) < 0)
			return -1;
	return 0;
}
