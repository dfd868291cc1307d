/* test_judge.c - the judgment (docs/internals.md: The judgment) as a table: every rule, its
 * precedence, and the manual-stop case. */
#include <string.h>

#include "sr.h"
#include "unit.h"

#define NOW 1800000000LL
#define FUTURE (NOW + 86400)
#define PAST (NOW - 1)

struct row {
	const char *name;
	/* card */
	const char *status, *stopped_by;
	long long pkg, used, quota;
	int refunded;
	/* device: has, pkg, disabled */
	int dev;
	long long dev_pkg;
	int dev_disabled;
	/* expected */
	int target_stopped;
	enum sr_want want;
	const char *reason;
};

static const struct row rows[] = {
	{ "entitled active card: nothing", "active", "", FUTURE, 0, 0, 0, 0, 0, 0, 0, SR_WANT_NONE, "entitled" },
	{ "entitled card stopped by us: resume", "stopped", "auto", FUTURE, 0, 0, 0, 0, 0, 0, 0, SR_WANT_RESUME, "entitled" },
	{ "entitled card stopped by hand: never auto-resumed", "stopped", "manual", FUTURE, 0, 0, 0, 0, 0, 0, 0, SR_WANT_NONE, "entitled" },
	{ "entitled, unknown status: nothing", "", "", FUTURE, 0, 0, 0, 0, 0, 0, 0, SR_WANT_NONE, "entitled" },
	{ "package expired: stop", "active", "", PAST, 0, 0, 0, 0, 0, 0, 1, SR_WANT_STOP, "package_expired" },
	{ "package expiring exactly now counts as expired", "active", "", NOW, 0, 0, 0, 0, 0, 0, 1, SR_WANT_STOP, "package_expired" },
	{ "no package at all: stop", "active", "", 0, 0, 0, 0, 0, 0, 0, 1, SR_WANT_STOP, "package_expired" },
	{ "unknown status, expired: stop", "", "", PAST, 0, 0, 0, 0, 0, 0, 1, SR_WANT_STOP, "package_expired" },
	{ "already stopped and expired: nothing", "stopped", "auto", PAST, 0, 0, 0, 0, 0, 0, 1, SR_WANT_NONE, "package_expired" },
	{ "data used up: stop", "active", "", FUTURE, 100, 100, 0, 0, 0, 0, 1, SR_WANT_STOP, "data_exhausted" },
	{ "data below quota: nothing", "active", "", FUTURE, 99, 100, 0, 0, 0, 0, 0, SR_WANT_NONE, "entitled" },
	{ "quota 0 is unlimited", "active", "", FUTURE, 1000000, 0, 0, 0, 0, 0, 0, SR_WANT_NONE, "entitled" },
	{ "refunded: stop", "active", "", FUTURE, 0, 0, 1, 0, 0, 0, 1, SR_WANT_STOP, "refund" },
	{ "refund wins over everything", "active", "", PAST, 100, 100, 1, 1, PAST, 1, 1, SR_WANT_STOP, "refund" },
	{ "device disabled: stop", "active", "", FUTURE, 0, 0, 0, 1, 0, 1, 1, SR_WANT_STOP, "device_disabled" },
	{ "device disabled wins over device package", "active", "", FUTURE, 0, 0, 0, 1, PAST, 1, 1, SR_WANT_STOP, "device_disabled" },
	{ "device package expired: stop", "active", "", FUTURE, 0, 0, 0, 1, PAST, 0, 1, SR_WANT_STOP, "device_package_expired" },
	{ "device package expired wins over card package", "active", "", PAST, 0, 0, 0, 1, PAST, 0, 1, SR_WANT_STOP, "device_package_expired" },
	{ "device package valid: card rules apply", "active", "", PAST, 0, 0, 0, 1, FUTURE, 0, 1, SR_WANT_STOP, "package_expired" },
	{ "device without a device package: card rules", "stopped", "auto", FUTURE, 0, 0, 0, 1, 0, 0, 0, SR_WANT_RESUME, "entitled" },
	{ "manual stop, device package expired: nothing", "stopped", "manual", FUTURE, 0, 0, 0, 1, PAST, 0, 1, SR_WANT_NONE, "device_package_expired" },
};

int
main(void)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		struct sr_card_facts c;
		struct sr_device_facts d = { r->dev_pkg > 0, r->dev_pkg, r->dev_disabled };
		struct sr_judgment j;

		memset(&c, 0, sizeof c);
		strcpy(c.status, r->status);
		strcpy(c.stopped_by, r->stopped_by);
		c.pkg_expires_at = r->pkg;
		c.data_used_kb = r->used;
		c.data_quota_kb = r->quota;
		c.refunded = r->refunded;
		j = sr_judge(&c, r->dev ? &d : NULL, NOW);
		CHECK(j.target_stopped == r->target_stopped, "%s: target %d", r->name, j.target_stopped);
		CHECK(j.want == r->want, "%s: want %s", r->name, sr_want_name(j.want));
		CHECK(!strcmp(j.reason, r->reason), "%s: reason %s", r->name, j.reason);
	}

	/* sr-exec's re-judgment compares directions, not the cached status. */
	{
		struct sr_card_facts c;
		struct sr_judgment j;

		memset(&c, 0, sizeof c);
		c.pkg_expires_at = FUTURE;
		strcpy(c.status, "active"); /* stale cache: card may really be stopped */
		j = sr_judge(&c, NULL, NOW);
		CHECK(sr_action_still_wanted("resume", &c, &j), "resume still wanted when entitled");
		CHECK(!sr_action_still_wanted("stop", &c, &j), "stop superseded by a renewal");
		strcpy(c.stopped_by, "manual");
		CHECK(!sr_action_still_wanted("resume", &c, &j), "no resume after a manual stop");
		c.pkg_expires_at = PAST;
		j = sr_judge(&c, NULL, NOW);
		CHECK(sr_action_still_wanted("stop", &c, &j), "stop wanted when expired");
		CHECK(!sr_action_still_wanted("resume", &c, &j), "resume superseded by expiry");
	}
	return unit_done("test_judge");
}
