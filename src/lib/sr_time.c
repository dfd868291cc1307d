/* sr_time.c - times read and written.
 *
 * Read: durations, ISO-8601 and epoch ms, on the Redis clock. A time an
 * operator gives without a zone is a time on the clock on the wall: it is
 * read in the local zone (TZ) and said so on stderr, never taken for UTC in
 * silence. A local time the zone skips or has twice (its clocks set forward
 * or back for daylight saving) is refused, not guessed; so is a TZ that
 * names no zone (the C library would read it as UTC, in silence).
 *
 * Written: ISO-8601 in UTC in every record; for people (--table --local)
 * in the local zone, with its offset. It only converts: every decision is
 * on the Redis server's clock. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sr.h"

/* Days since 1970-01-01 of a civil date (proleptic Gregorian). */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (unsigned)((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1);
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* The civil date of a day since 1970-01-01 (days_from_civil backwards). */
static void
civil_from_days(int64_t z, int *y, int *m, int *d)
{
	int64_t era, yoe, doy, mp;
	unsigned doe;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = (int)(yoe + era * 400 + (*m <= 2));
}

/* ------------------------------------------------------------ the local zone */

/* The local zone's offset from UTC at t (s), and the civil time there. */
static long
local_at(time_t t, struct tm *tm)
{
	static int ready;

	if (!ready) { /* localtime_r need not read TZ itself */
		tzset();
		ready = 1;
	}
	localtime_r(&t, tm);
	return (long)(((days_from_civil(tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday) * 24 +
	    tm->tm_hour) * 60 + tm->tm_min) * 60 + tm->tm_sec - (int64_t)t);
}

/* "+08:00" */
static void
offset_text(char *buf, size_t n, long off)
{
	long a = off < 0 ? -off : off;

	snprintf(buf, n, "%c%02ld:%02ld", off < 0 ? '-' : '+', a / 3600, a / 60 % 60);
}

/* The local zone's name, for what is said: TZ's, else what /etc/localtime
 * links to, else none. */
static const char *
zone_name(char *buf, size_t n)
{
	const char *tz = getenv("TZ"), *z;
	char link[512];
	ssize_t len;

	if (tz && *tz)
		return tz[0] == ':' ? tz + 1 : tz;
	if (tz) /* TZ set but empty: the C library reads UTC */
		return "UTC";
	if ((len = readlink("/etc/localtime", link, sizeof link - 1)) > 0) {
		link[len] = '\0';
		if ((z = strstr(link, "zoneinfo/"))) {
			snprintf(buf, n, "%s", z + 9);
			return buf;
		}
	}
	return "the system's zone";
}

/* A zone file: it starts with "TZif" (tzfile(5)); any other file (TZ=/etc/
 * passwd) the C library would read as UTC. */
static int
is_zone_file(const char *path)
{
	char magic[4];
	FILE *f = fopen(path, "rb");
	int ok = f && fread(magic, 1, 4, f) == 4 && !memcmp(magic, "TZif", 4);

	if (f)
		fclose(f);
	return ok;
}

/* A POSIX TZ rule's start (tzset(3)): a name of 3 or more letters (or <...>)
 * and an offset, [+-]hh[:mm[:ss]]; then nothing, or a daylight-saving name
 * (the rest, its offset and rules, is left to the C library). "CST-8" and
 * "EST5EDT,M3.2.0,M11.1.0" are rules; "Asia/Shangai8" is not. */
static int
is_posix_rule(const char *s)
{
	size_t n = 0;

	if (*s == '<') {
		const char *e = strchr(s, '>');

		if (!e || e - s < 4)
			return 0;
		s = e + 1;
	} else {
		while (s[n] >= 'A' && s[n] <= 'Z' ? 1 : (s[n] >= 'a' && s[n] <= 'z'))
			n++;
		if (n < 3)
			return 0;
		s += n;
	}
	if (*s == '+' || *s == '-')
		s++;
	for (n = 0; *s >= '0' && *s <= '9'; s++)
		n++;
	if (n < 1 || n > 2)
		return 0;
	for (int part = 0; part < 2 && *s == ':'; part++) {
		if (!(s[1] >= '0' && s[1] <= '9' && s[2] >= '0' && s[2] <= '9'))
			return 0;
		s += 3;
	}
	return !*s || *s == '<' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z');
}

int
sr_zone_check(char *err, size_t errlen)
{
	const char *tz = getenv("TZ"), *dir = getenv("TZDIR");
	char path[1024];

	if (!tz || !*tz)
		return 0;
	if (*tz == ':')
		tz++;
	if (*tz == '/')
		snprintf(path, sizeof path, "%s", tz);
	else
		snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", tz);
	/* A zone's file, or else a POSIX rule ("CST-8": a name and an offset);
	 * the C library reads anything else as UTC, in silence. */
	if (access(path, F_OK) == 0 ? is_zone_file(path) : is_posix_rule(tz))
		return 0;
	snprintf(err, errlen, "TZ='%s' names no zone (%s %s; the C library would read it as "
	    "UTC): set TZ to a zone (Asia/Shanghai), or give the time a zone (Z, +08:00)", tz,
	    access(path, F_OK) == 0 ? "not a zone file:" : "no such zone file, nor a rule:", path);
	return -1;
}

/* "Asia/Shanghai (CST, +08:00)": the zone a time was read in, at t (s). */
static void
zone_said(char *buf, size_t n, int64_t t)
{
	struct tm tm;
	char buf2[256], abbr[16], off[8];
	long o = local_at((time_t)t, &tm);
	const char *name = zone_name(buf2, sizeof buf2);

	if (!strftime(abbr, sizeof abbr, "%Z", &tm))
		abbr[0] = '\0';
	offset_text(off, sizeof off, o);
	if (abbr[0] && strcmp(abbr, name) && abbr[0] != '+' && abbr[0] != '-')
		snprintf(buf, n, "%s (%s, %s)", name, abbr, off);
	else
		snprintf(buf, n, "%s (%s)", name, off);
}

/* What parse_iso and local_civil return for a time they understood and
 * refuse (err says why), apart from one they did not understand. */
#define REFUSED (INT64_MIN + 1)

/* y-mo-d h:mi:sec in the local zone, in s (s: the text, for err); REFUSED
 * with err set when the zone skips that time or has it twice. zone: the
 * zone it was read in. */
static int64_t
local_civil(const char *s, int y, int mo, int d, int h, int mi, int sec, char *zone, size_t zonelen,
    char *err, size_t errlen)
{
	int64_t naive = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 + sec, at[2] = { 0, 0 };
	long off[2];
	struct tm tm;
	char buf[256], o1[8], o2[8];
	const char *name;
	int n = 0;

	if (sr_zone_check(err, errlen) < 0)
		return REFUSED;
	/* The zone's offset a day before and a day after: the same one, or
	 * the two sides of a change. The time is each offset's whose instant
	 * the zone shows as that time: one (the usual), none (a gap: the
	 * clocks jumped over it), or two (a fold: they went over it twice). */
	off[0] = local_at((time_t)(naive - 86400), &tm);
	off[1] = local_at((time_t)(naive + 86400), &tm);
	for (int i = 0; i < 2; i++)
		if (local_at((time_t)(naive - off[i]), &tm) == off[i] && (n == 0 || at[0] != naive - off[i]))
			at[n++] = naive - off[i];
	name = zone_name(buf, sizeof buf);
	if (n == 0) {
		snprintf(err, errlen, "'%s' does not exist in %s: its clocks skip it (a daylight-saving "
		    "change); give the time a zone (Z, +08:00)", s, name);
		return REFUSED;
	}
	if (n == 2) {
		offset_text(o1, sizeof o1, off[0]);
		offset_text(o2, sizeof o2, off[1]);
		snprintf(err, errlen, "'%s' is ambiguous in %s: it happens twice, at %s and at %s (a "
		    "daylight-saving change); give the time a zone (%s or %s)", s, name, o1, o2, o1, o2);
		return REFUSED;
	}
	zone_said(zone, zonelen, at[0]);
	return at[0];
}

/* ---------------------------------------------------------------- reading */

/* The n characters at p are all digits (sscanf's %d takes a sign or
 * spaces: "T-1:00" is no time). */
static int
digits_at(const char *p, int n)
{
	for (int i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return 0;
	return 1;
}

enum {
	ISO_DATE = 1,  /* a date alone: its start */
	ISO_LOCAL = 2, /* no zone: the local zone's time (else refused) */
};

/* "2026-12-01T10:00:00.250+08:00" (or a space for the T; the seconds,
 * their fraction and the zone's minutes optional; Z for UTC): ms, or
 * INT64_MIN when it is no such time, REFUSED when it is one refused (err
 * says why). A time before the epoch is negative, not an error here. A
 * time without a zone means another clock on every machine: refused, or
 * with ISO_LOCAL read in the local zone (zone says which; "" when the
 * time had one). */
static int64_t
parse_iso(const char *s, int flags, char *zone, size_t zonelen, char *err, size_t errlen)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h = 0, mi = 0, sec = 0, n = 0, zh = 0, zm = 0, sign = 0, zoned = 1;
	int64_t ms = 0, t;
	const char *p = s;

	zone[0] = '\0';
	if (!digits_at(p, 4) || p[4] != '-' || !digits_at(p + 5, 2) || p[7] != '-' || !digits_at(p + 8, 2) ||
	    sscanf(p, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10)
		goto bad;
	p += 10;
	if ((flags & ISO_DATE) && (!*p || ((*p == 'Z' || *p == 'z') && !p[1])))
		; /* its start */
	else if (*p != 'T' && *p != ' ')
		goto bad;
	else {
		p++;
		if (!digits_at(p, 2) || p[2] != ':' || !digits_at(p + 3, 2) ||
		    sscanf(p, "%2d:%2d%n", &h, &mi, &n) != 2 || n != 5)
			goto bad;
		p += 5;
		if (*p == ':') {
			if (!digits_at(p + 1, 2) || sscanf(p + 1, "%2d%n", &sec, &n) != 1 || n != 2)
				goto bad;
			p += 3;
			if (*p == '.' || *p == ',') {
				int64_t scale = 100;

				if (p[1] < '0' || p[1] > '9')
					goto bad;
				for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
					ms += (*p - '0') * scale;
			}
		}
	}
	if (*p == 'Z' || *p == 'z')
		p++;
	else if (*p == '+' || *p == '-') {
		sign = *p == '-' ? -1 : 1;
		if (!digits_at(p + 1, 2) || sscanf(p + 1, "%2d%n", &zh, &n) != 1 || n != 2)
			goto bad;
		p += 3;
		if (*p == ':')
			p++;
		if (*p) {
			if (!digits_at(p, 2) || sscanf(p, "%2d%n", &zm, &n) != 1 || n != 2)
				goto bad;
			p += 2;
		}
	} else if (!*p) {
		if (!(flags & ISO_LOCAL)) {
			snprintf(err, errlen, "'%s' has no zone (Z, +08:00)", s);
			return INT64_MIN;
		}
		zoned = 0;
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    (mo == 2 && d == 29 && (y % 4 || (y % 100 == 0 && y % 400))) || h > 23 || mi > 59 || sec > 60 ||
	    y < 1970 || zh > 23 || zm > 59)
		goto bad;
	if (!zoned)
		return (t = local_civil(s, y, mo, d, h, mi, sec, zone, zonelen, err, errlen)) == REFUSED ?
		    REFUSED : t * 1000 + ms;
	return ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000LL + sec * 1000LL + ms -
	    sign * (zh * 60 + zm) * 60000LL;
bad:
	snprintf(err, errlen, "'%s' is not a time (ISO-8601 with a zone, 2026-12-01T10:00:00Z, or "
	    "epoch ms)", s);
	return INT64_MIN;
}

int64_t
sr_parse_when(const char *s, int64_t now_ms, int dir, char *zone, size_t zonelen, char *err,
    size_t errlen)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} units[] = { { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 } };
	char *end;
	long long v;
	int64_t t;

	zone[0] = err[0] = '\0';
	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	if (!strcmp(s, "now"))
		return now_ms;
	if (!strcmp(s, "today") || !strcmp(s, "yesterday")) {
		/* The start of the local day (the zone's midnight may be
		 * skipped: refused as any time it skips). */
		struct tm tm;
		int y, mo, d;

		local_at((time_t)(now_ms / 1000), &tm);
		civil_from_days(days_from_civil(tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday) - (s[0] == 'y'),
		    &y, &mo, &d);
		if ((t = local_civil(s, y, mo, d, 0, 0, 0, zone, zonelen, err, errlen)) == REFUSED)
			return -2;
		return t > 0 ? t * 1000 : 0;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (!*end) /* epoch milliseconds; seconds would be a silent mistake */
		return v >= 100000000000LL && v < 100000000000000LL ? v : -1;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (!strcmp(end, units[i].unit)) {
			if (v > (INT64_MAX - now_ms) / units[i].ms)
				return -1;
			return dir > 0 ? now_ms + v * units[i].ms :
			    now_ms - v * units[i].ms > 0 ? now_ms - v * units[i].ms : 0;
		}
	if ((t = parse_iso(s, ISO_DATE | ISO_LOCAL, zone, zonelen, err, errlen)) == INT64_MIN)
		return -1;
	if (t == REFUSED)
		return -2;
	return t > 0 ? t : 0; /* before the epoch: in the past all the same */
}

void
sr_time_note(const char *opt, const char *s, int64_t ms, const char *zone)
{
	char iso[32];

	sr_note("%s '%s' has no zone: read in %s, that is %s", opt, s, zone, sr_iso_ms(iso, sizeof iso, ms));
}

int64_t
sr_time_option(const char *opt, const char *s, int64_t now_ms, int dir, const char *forms)
{
	char zone[300], err[600];
	int64_t t = sr_parse_when(s, now_ms, dir, zone, sizeof zone, err, sizeof err);

	if (t == -1)
		sr_die(SR_EX_USAGE, "%s: '%s' is not a time %s", opt, s, forms);
	if (t == -2)
		sr_die(SR_EX_USAGE, "%s: %s", opt, err);
	if (zone[0])
		sr_time_note(opt, s, t, zone);
	return t;
}

int64_t
sr_parse_as_of(const char *s, int64_t now_ms, int flag, char *zone, size_t zonelen, char *err,
    size_t errlen)
{
	char unused[8];
	int64_t t;
	const char *p = s;

	zone[0] = '\0';
	if (!s || !*s) {
		snprintf(err, errlen, "an empty time");
		return -1;
	}
	while (*p >= '0' && *p <= '9')
		p++;
	if (!*p) {
		/* Epoch ms: seconds would be a silent mistake of 1000 times. */
		if ((t = sr_parse_when(s, 0, -1, unused, sizeof unused, unused, sizeof unused)) < 0) {
			snprintf(err, errlen, "'%s' is not a time in epoch ms (13 digits)", s);
			return -1;
		}
	} else if (flag && p != s && now_ms > 0 && (!strcmp(p, "ms") || !strcmp(p, "s") ||
	    !strcmp(p, "m") || !strcmp(p, "h") || !strcmp(p, "d")))
		t = sr_parse_when(s, now_ms, -1, unused, sizeof unused, unused, sizeof unused); /* that long ago */
	else if (flag && now_ms > 0 && !strcmp(s, "now"))
		t = now_ms;
	else if ((t = parse_iso(s, flag ? ISO_LOCAL : 0, zone, zonelen, err, errlen)) == INT64_MIN ||
	    t == REFUSED)
		return -1;
	/* 0 is "now" to every writer: the epoch itself (a null timestamp
	 * exported as 1970), a zone before it, or a duration longer than
	 * the epoch is no time a fact was true. */
	if (t <= 0) {
		snprintf(err, errlen, "'%s' is not after 1970-01-01T00:00:00Z", s);
		return -1;
	}
	{
		char subject[80];

		snprintf(subject, sizeof subject, "'%s'", s);
		if (sr_as_of_ahead(subject, t, now_ms, err, errlen))
			return -1;
	}
	return t;
}

int
sr_as_of_ahead(const char *subject, int64_t t, int64_t now_ms, char *err, size_t errlen)
{
	if (now_ms <= 0 || t <= now_ms + SR_AS_OF_SKEW_MS)
		return 0;
	snprintf(err, errlen, "%s is %lld s ahead of Redis's clock (at most %d min is taken)", subject,
	    (long long)(t - now_ms) / 1000, SR_AS_OF_SKEW_MS / 60000);
	return 1;
}

/* ---------------------------------------------------------------- writing */

static int people_local; /* --local: times for people in the local zone */

int
sr_times_local(char *err, size_t errlen)
{
	if (sr_zone_check(err, errlen) < 0)
		return -1;
	people_local = 1;
	return 0;
}

void
sr_people_zone(int table, int utc, int local)
{
	char err[400];

	if (utc && local)
		sr_die(SR_EX_USAGE, "--utc and --local: one or the other");
	/* A record's time is UTC, whoever reads it: a script must not parse
	 * another zone because of where it runs. */
	if (local && !table)
		sr_die(SR_EX_USAGE, "--local: only for --table (records keep their times in UTC)");
	if (local && sr_times_local(err, sizeof err) < 0)
		sr_die(SR_EX_USAGE, "--local: %s", err);
}

char *
sr_iso_ms(char *buf, size_t n, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char day[24];

	gmtime_r(&t, &tm);
	strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, n, "%s.%03dZ", day, (int)(ms % 1000));
	return buf;
}

/* "2026-12-01T18:00:00" and its zone ("Z", or with --local "+08:00"). */
static void
people_time(char *day, size_t dn, char *zone, size_t zn, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (people_local)
		offset_text(zone, zn, local_at(t, &tm));
	else {
		gmtime_r(&t, &tm);
		snprintf(zone, zn, "Z");
	}
	strftime(day, dn, "%Y-%m-%dT%H:%M:%S", &tm);
}

char *
sr_iso_people(char *buf, size_t n, int64_t ms)
{
	char day[24], zone[8];

	people_time(day, sizeof day, zone, sizeof zone, ms);
	snprintf(buf, n, "%s.%03d%s", day, (int)(ms % 1000), zone);
	return buf;
}

/* "2m05s", "3h10m", "2d4h", "850ms": the two largest units. */
static void
span(char *buf, size_t n, int64_t ms)
{
	int64_t s = ms / 1000;

	if (ms < 1000)
		snprintf(buf, n, "%lldms", (long long)ms);
	else if (s < 60)
		snprintf(buf, n, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(buf, n, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
	else if (s < 86400)
		snprintf(buf, n, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
	else
		snprintf(buf, n, "%lldd%lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
}

const char *
sr_when(int64_t ms, int64_t now)
{
	static char bufs[8][80];
	static int next;
	char *b = bufs[next++ % 8], day[24], zone[8], rel[32];

	people_time(day, sizeof day, zone, sizeof zone, ms);
	span(rel, sizeof rel, ms > now ? ms - now : now - ms);
	snprintf(b, sizeof bufs[0], "%s%s (%s%s)", day, zone, ms > now ? "in " : "", ms > now ? rel :
	    ms == now ? "now" : strcat(rel, " ago"));
	return b;
}
