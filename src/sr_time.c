/* sr_time.c - times read and written: durations, ISO-8601 and epoch ms
 * read on the Redis clock; ISO-8601 and sentences for people. It only
 * converts: every decision is on the Redis server's clock. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int64_t
sr_parse_when(const char *s, int64_t now_ms, int dir)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} units[] = { { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 } };
	int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;
	char *end;
	long long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	if (!strcmp(s, "now"))
		return now_ms;
	if (!strcmp(s, "today") || !strcmp(s, "yesterday"))
		return (now_ms / 86400000 - (s[0] == 'y')) * 86400000;
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
	if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10)
		return -1;
	s += 10;
	if (*s == 'T' || *s == ' ') {
		int k = 0;

		if (sscanf(s + 1, "%2d:%2d%n", &h, &mi, &k) != 2 || k != 5)
			return -1;
		s += 6;
		if (*s == ':') {
			if (sscanf(s + 1, "%2d%n", &sec, &k) != 1 || k != 2)
				return -1;
			s += 3;
		}
	}
	if (*s == 'Z')
		s++;
	if (*s || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1970)
		return -1;
	return ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000LL + sec * 1000LL;
}

/* "2026-12-01T10:00:00.250+08:00": ms, or INT64_MIN with err set (a time
 * before the epoch is negative, not an error here). The zone is
 * required: a time without one means another clock on every machine. */
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

static int64_t
parse_iso_zoned(const char *s, char *err, size_t errlen)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h, mi, sec = 0, n = 0, zh = 0, zm = 0, sign = 0;
	int64_t ms = 0;
	const char *t = s;

	if (!digits_at(t, 4) || t[4] != '-' || !digits_at(t + 5, 2) || t[7] != '-' || !digits_at(t + 8, 2) ||
	    sscanf(t, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10 || (t[10] != 'T' && t[10] != ' '))
		goto bad;
	t += 11;
	if (!digits_at(t, 2) || t[2] != ':' || !digits_at(t + 3, 2) ||
	    sscanf(t, "%2d:%2d%n", &h, &mi, &n) != 2 || n != 5)
		goto bad;
	t += 5;
	if (*t == ':') {
		if (!digits_at(t + 1, 2) || sscanf(t + 1, "%2d%n", &sec, &n) != 1 || n != 2)
			goto bad;
		t += 3;
		if (*t == '.' || *t == ',') {
			int64_t scale = 100;

			if (t[1] < '0' || t[1] > '9')
				goto bad;
			for (t++; *t >= '0' && *t <= '9'; t++, scale /= 10)
				ms += (*t - '0') * scale;
		}
	}
	if (*t == 'Z' || *t == 'z')
		t++;
	else if (*t == '+' || *t == '-') {
		sign = *t == '-' ? -1 : 1;
		if (!digits_at(t + 1, 2) || sscanf(t + 1, "%2d%n", &zh, &n) != 1 || n != 2)
			goto bad;
		t += 3;
		if (*t == ':')
			t++;
		if (*t) {
			if (!digits_at(t, 2) || sscanf(t, "%2d%n", &zm, &n) != 1 || n != 2)
				goto bad;
			t += 2;
		}
	} else {
		snprintf(err, errlen, "'%s' has no zone (Z, +08:00)", s);
		return INT64_MIN;
	}
	if (*t || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    (mo == 2 && d == 29 && (y % 4 || (y % 100 == 0 && y % 400))) || h > 23 || mi > 59 || sec > 60 ||
	    y < 1970 || zh > 23 || zm > 59)
		goto bad;
	return ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000LL + sec * 1000LL + ms -
	    sign * (zh * 60 + zm) * 60000LL;
bad:
	snprintf(err, errlen, "'%s' is not a time (ISO-8601 with a zone, 2026-12-01T10:00:00Z, or "
	    "epoch ms)", s);
	return INT64_MIN;
}

int64_t
sr_parse_as_of(const char *s, int64_t now_ms, int flag, char *err, size_t errlen)
{
	int64_t t;
	const char *p = s;

	if (!s || !*s) {
		snprintf(err, errlen, "an empty time");
		return -1;
	}
	while (*p >= '0' && *p <= '9')
		p++;
	if (!*p) {
		/* Epoch ms: seconds would be a silent mistake of 1000 times. */
		if ((t = sr_parse_when(s, 0, -1)) < 0) {
			snprintf(err, errlen, "'%s' is not a time in epoch ms (13 digits)", s);
			return -1;
		}
	} else if (flag && p != s && now_ms > 0 && (!strcmp(p, "ms") || !strcmp(p, "s") ||
	    !strcmp(p, "m") || !strcmp(p, "h") || !strcmp(p, "d")))
		t = sr_parse_when(s, now_ms, -1); /* that long ago */
	else if (flag && now_ms > 0 && !strcmp(s, "now"))
		t = now_ms;
	else if ((t = parse_iso_zoned(s, err, errlen)) == INT64_MIN)
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
	char *b = bufs[next++ % 8], iso[32], rel[32];
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
	span(rel, sizeof rel, ms > now ? ms - now : now - ms);
	snprintf(b, sizeof bufs[0], "%s (%s%s)", iso, ms > now ? "in " : "", ms > now ? rel :
	    ms == now ? "now" : strcat(rel, " ago"));
	return b;
}
