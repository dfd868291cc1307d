/* test_time.c - times read in the local zone (TZ) when they have none: each
 * zone's offset, a date's start, today and yesterday, a local time the
 * zone skips or has twice refused, a TZ that names no zone refused; and
 * times written for people in the local zone (--local). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sr.h"
#include "unit.h"

static void
zone(const char *tz)
{
	setenv("TZ", tz, 1);
	tzset();
}

int
main(void)
{
	/* 2026-12-03T20:00:00Z: 04:00 on the 4th in Shanghai. */
	const long long now = 1796328000000LL;
	static const struct {
		const char *tz, *in;
		long long want;   /* -1 not a time, -2 refused */
		const char *said; /* in zone (read in), or in err (refused); "" none */
	} cases[] = {
		/* The case: 18:00 in Shanghai is 10:00Z, and said. */
		{ "Asia/Shanghai", "2026-12-03 18:00", 1796292000000LL, "Asia/Shanghai (CST, +08:00)" },
		{ "Asia/Shanghai", "2026-12-03T18:00:00", 1796292000000LL, "+08:00" },
		{ ":Asia/Shanghai", "2026-12-03T18:00", 1796292000000LL, "Asia/Shanghai" },
		/* A zone given wins, and nothing is said. */
		{ "Asia/Shanghai", "2026-12-03T18:00Z", 1796320800000LL, "" },
		{ "Asia/Shanghai", "2026-12-03T18:00+08:00", 1796292000000LL, "" },
		{ "Asia/Shanghai", "2026-12-03T05:00-05", 1796292000000LL, "" },
		/* A date alone: the start of that local day; today, yesterday too. */
		{ "Asia/Shanghai", "2026-12-03", 1796227200000LL, "+08:00" },
		{ "Asia/Shanghai", "2026-12-03Z", 1796256000000LL, "" },
		{ "Asia/Shanghai", "today", 1796313600000LL, "Asia/Shanghai" },
		{ "Asia/Shanghai", "yesterday", 1796227200000LL, "Asia/Shanghai" },
		{ "UTC", "today", 1796256000000LL, "UTC" },
		/* No zone needed. */
		{ "Asia/Shanghai", "2h", now + 7200000, "" },
		{ "Asia/Shanghai", "now", now, "" },
		{ "Asia/Shanghai", "1796292000000", 1796292000000LL, "" },
		/* A POSIX rule is a zone too. */
		{ "CST-8", "2026-12-03 18:00", 1796292000000LL, "CST-8" },
		/* New York: the clocks go back at 02:00 on 2026-11-01 (01:30
		 * happens twice) and forward at 02:00 on 2026-03-08 (02:30
		 * never happens): refused, naming both offsets. */
		{ "America/New_York", "2026-11-01 00:30", 1793507400000LL, "EDT, -04:00" },
		{ "America/New_York", "2026-11-01 03:00", 1793520000000LL, "EST, -05:00" },
		{ "America/New_York", "2026-11-01 01:30", -2, "is ambiguous in America/New_York: it happens "
		  "twice, at -04:00 and at -05:00" },
		{ "America/New_York", "2026-03-08T02:30", -2, "'2026-03-08T02:30' does not exist in "
		  "America/New_York: its clocks skip it" },
		{ "America/New_York", "2026-03-08T01:59", 1772953140000LL, "-05:00" },
		{ "America/New_York", "2026-03-08T03:00", 1772953200000LL, "-04:00" },
		/* With an offset it is one time, fold or not. */
		{ "America/New_York", "2026-11-01T01:30-05:00", 1793514600000LL, "" },
		/* A TZ that names no zone would be read as UTC: refused. */
		{ "Asia/Shangai", "2026-12-03 18:00", -2, "TZ='Asia/Shangai' names no zone" },
		{ "Asia/Shangai", "2026-12-03T18:00Z", 1796320800000LL, "" },
		/* Not times. */
		{ "UTC", "2026-02-30", -1, "" },
		{ "UTC", "2026-12-03 18", -1, "" },
		{ "UTC", "1796292000", -1, "" },
	};
	char z[300], err[600], buf[64];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		long long got;

		zone(cases[i].tz);
		got = sr_parse_when(cases[i].in, now, 1, z, sizeof z, err, sizeof err);
		CHECK(got == cases[i].want, "TZ=%s '%s': %lld, want %lld (%s)", cases[i].tz, cases[i].in, got,
		    cases[i].want, err);
		if (cases[i].want == -2)
			CHECK(strstr(err, cases[i].said) != NULL, "TZ=%s '%s': err '%s', want '%s'", cases[i].tz,
			    cases[i].in, err, cases[i].said);
		else if (cases[i].want >= 0 && !cases[i].said[0])
			CHECK(z[0] == '\0', "TZ=%s '%s': nothing to say, said '%s'", cases[i].tz, cases[i].in, z);
		else if (cases[i].want >= 0)
			CHECK(strstr(z, cases[i].said) != NULL, "TZ=%s '%s': read in '%s', want '%s'", cases[i].tz,
			    cases[i].in, z, cases[i].said);
	}

	/* An option's as_of without a zone: the local zone's; a record's: refused. */
	zone("Asia/Shanghai");
	CHECK(sr_parse_as_of("2026-12-03T18:00", now, 1, z, sizeof z, err, sizeof err) == 1796292000000LL &&
	    strstr(z, "+08:00"), "an option's as_of in Shanghai: %s", z);
	CHECK(sr_parse_as_of("2026-12-03T18:00", now, 0, z, sizeof z, err, sizeof err) == -1 &&
	    !strcmp(err, "'2026-12-03T18:00' has no zone (Z, +08:00)"), "a record's: %s", err);
	zone("America/New_York");
	CHECK(sr_parse_as_of("2026-11-01T01:30", now, 1, z, sizeof z, err, sizeof err) == -1 &&
	    strstr(err, "is ambiguous"), "an option's as_of in a fold: %s", err);

	/* Written for people: UTC, or with --local the zone's time and offset;
	 * records (sr_iso_ms) stay UTC either way. */
	zone("Asia/Shanghai");
	CHECK(!strcmp(sr_iso_people(buf, sizeof buf, 1796292000123LL), "2026-12-03T10:00:00.123Z"),
	    "people, UTC: %s", buf);
	CHECK(!strcmp(sr_when(1796292000000LL, 1796292000000LL - 125000), "2026-12-03T10:00:00Z (in 2m05s)"),
	    "a sentence, UTC: %s", sr_when(1796292000000LL, 1796292000000LL - 125000));
	zone("Asia/Shangai");
	CHECK(sr_times_local(err, sizeof err) == -1 && strstr(err, "names no zone"), "--local, bad TZ: %s",
	    err);
	zone("Asia/Shanghai");
	CHECK(sr_times_local(err, sizeof err) == 0, "--local");
	CHECK(!strcmp(sr_iso_people(buf, sizeof buf, 1796292000123LL), "2026-12-03T18:00:00.123+08:00"),
	    "people, local: %s", buf);
	CHECK(!strcmp(sr_iso_ms(buf, sizeof buf, 1796292000123LL), "2026-12-03T10:00:00.123Z"),
	    "records stay UTC: %s", buf);
	CHECK(!strcmp(sr_when(1796292000000LL, 1796292000000LL + 3000), "2026-12-03T18:00:00+08:00 (3s ago)"),
	    "a sentence, local: %s", sr_when(1796292000000LL, 1796292000000LL + 3000));
	zone("America/New_York");
	CHECK(!strcmp(sr_iso_people(buf, sizeof buf, 1793514600000LL), "2026-11-01T01:30:00.000-05:00"),
	    "people, local, after the fold: %s", buf);
	return unit_done("test_time");
}
