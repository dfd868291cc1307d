/* test_valid.c - input validation: ids, scenes and their priority, fields. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sr.h"
#include "unit.h"

int
main(void)
{
	static const char *good[] = { "a", "89860012345678901234", "c17", "D-42_x.y",
		"0123456789012345678901234567890123456789012345678901234567890123", NULL };
	static const char *bad[] = { "", "a b", "a/b", "a:b", "{c17}", "é", "a\nb", "a*",
		"01234567890123456789012345678901234567890123456789012345678901234", NULL };
	static const char *allowed[] = { "card", "scene", NULL };
	json_t *o;

	for (int i = 0; good[i]; i++)
		CHECK(sr_valid_id(good[i]), "'%s' is a valid id", good[i]);
	for (int i = 0; bad[i]; i++)
		CHECK(!sr_valid_id(bad[i]), "'%s' is not a valid id", bad[i]);
	CHECK(!sr_valid_id(NULL), "NULL is not a valid id");

	CHECK(sr_scene_prio("order") == SR_PRIO_HIGH, "order is high priority");
	CHECK(sr_scene_prio("activation") == SR_PRIO_HIGH, "activation is high priority");
	CHECK(sr_scene_prio("package_expired") == SR_PRIO_NORMAL, "package_expired is normal");
	CHECK(sr_scene_prio("reset") == SR_PRIO_BULK, "reset is bulk");
	CHECK(sr_scene_prio("manual_recheck") == SR_PRIO_NORMAL, "manual_recheck is normal");
	CHECK(sr_scene_prio("Order") == -1, "scenes are case-sensitive");
	CHECK(sr_scene_prio("bogus") == -1, "unknown scene");
	CHECK(sr_scene_prio(NULL) == -1, "missing scene");

	o = json_pack("{ss ss}", "card", "x", "scene", "order");
	CHECK(sr_unknown_key(o, allowed) == NULL, "known keys pass");
	json_object_set_new(o, "colour", json_string("red"));
	CHECK(sr_unknown_key(o, allowed) && !strcmp(sr_unknown_key(o, allowed), "colour"),
	    "unknown key is named");
	json_decref(o);

	{
		/* When a fact was true: a record's zone is required, ms are
		 * epoch ms; an option's time without a zone is the local
		 * zone's (here UTC; tests/unit/test_time.c: other zones). */
		static const struct {
			const char *in;
			int flag;
			long long want; /* -1: refused */
		} as_of[] = {
			{ "2026-12-01T10:00:00Z", 0, 1796119200000LL },
			{ "2026-12-01T18:00:00+08:00", 0, 1796119200000LL },
			{ "2026-12-01T18:00+0800", 0, 1796119200000LL },
			{ "2026-12-01T05:00-05", 0, 1796119200000LL },
			{ "2026-12-01 10:00:00.250z", 0, 1796119200250LL },
			{ "2026-12-01T10:00:00.5Z", 0, 1796119200500LL },
			{ "1796119200000", 0, 1796119200000LL },
			{ "2026-12-01T10:00:00", 0, -1 },      /* no zone */
			{ "2026-12-01T10:00:00", 1, 1796119200000LL }, /* an option's: local */
			{ "2026-12-01", 1, -1 },               /* a date alone is no time */
			{ "2026-12-01", 0, -1 },               /* no time, no zone */
			{ "1796119200", 0, -1 },               /* epoch seconds */
			{ "2026-12-01T10:00:00Z junk", 0, -1 },
			{ "2026-13-01T10:00:00Z", 0, -1 },
			{ "2026-12-01T10:00:00+24:00", 0, -1 },
			{ "2026-12-01T10:00:00.Z", 0, -1 },
			{ "now", 0, -1 }, { "2h", 0, -1 },     /* words only for a flag */
			{ "now", 1, 1796122800000LL }, { "2h", 1, 1796115600000LL },
			{ "2026-12-01T11:04:00Z", 0, 1796123040000LL }, /* 4 min ahead: taken */
			{ "2026-12-01T11:06:00Z", 0, -1 },     /* 6 min ahead: refused */
			{ "", 0, -1 },
		};
		const long long now = 1796122800000LL; /* 2026-12-01T11:00:00Z */
		char err[400], zone[200];

		setenv("TZ", "UTC", 1);
		tzset();
		for (size_t i = 0; i < sizeof as_of / sizeof as_of[0]; i++) {
			long long got = sr_parse_as_of(as_of[i].in, now, as_of[i].flag, zone, sizeof zone, err,
			    sizeof err);

			CHECK(got == as_of[i].want, "as_of '%s' (flag %d): %lld, want %lld", as_of[i].in,
			    as_of[i].flag, got, as_of[i].want);
		}
		sr_parse_as_of("2026-12-01T10:00", now, 0, zone, sizeof zone, err, sizeof err);
		CHECK(!strcmp(err, "'2026-12-01T10:00' has no zone (Z, +08:00)"), "a zone asked for: %s", err);
	}

	CHECK(sr_parse_long("42") == 42, "parse 42");
	CHECK(sr_parse_long("-1") == -1 && sr_parse_long("4x") == -1 && sr_parse_long("") == -1,
	    "parse rejects signs, junk and empty");
	return unit_done("test_valid");
}
