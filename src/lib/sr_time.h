/* sr_time.h - the API of sr_time.c. */
#ifndef SR_TIME_H
#define SR_TIME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

/* A moment, in ms on the clock of now_ms (the Redis server's): a duration
 * ("500ms", "90s", "10m", "2h", "1d") from now, ahead (dir > 0: --until) or
 * ago (dir < 0: --since); "now"; "today" or "yesterday" (the start of the
 * local day); ISO-8601 ("2026-12-01", "2026-12-01T10:00", "...:00Z",
 * "...+08:00"); or epoch milliseconds (epoch seconds are refused: a silent
 * factor of 1000). A time without a zone is the local zone's (TZ): zone
 * says which ("" when none was needed). -1 when not understood; -2 (err
 * says why) when understood and refused: the zone skips that local time or
 * has it twice (daylight saving), or TZ names no zone. A time before the
 * epoch is 0. */
int64_t sr_parse_when(const char *s, int64_t now_ms, int dir, char *zone, size_t zonelen, char *err,
    size_t errlen);
/* An option's time (--until: dir > 0, --since: dir < 0), as sr_parse_when
 * reads it; one not understood dies (exit 2) with "OPT: 'S' is not a time
 * FORMS", one refused with why; one read in the local zone is said on
 * stderr (sr_time_note). */
int64_t sr_time_option(const char *opt, const char *s, int64_t now_ms, int dir, const char *forms);
/* "PROG: note: OPT 'S' has no zone: read in ZONE, that is ISO-UTC". */
void sr_time_note(const char *opt, const char *s, int64_t ms, const char *zone);
/* TZ, when set, names a zone (a file under TZDIR or /usr/share/zoneinfo,
 * or a POSIX rule such as CST-8): 0, else -1 with err saying so. */
int sr_zone_check(char *err, size_t errlen);
/* How far ahead of the Redis clock a fact's time may be: more is refused
 * (a writer's clock wrong, a typo), not trusted. */
#define SR_AS_OF_SKEW_MS (5 * 60 * 1000)
/* When a fact was true (a request's "as_of", --as-of): epoch ms, or
 * ISO-8601 with a zone ("2026-12-01T10:00:00Z", "...+08:00", seconds and
 * their fraction optional); in a record a time without a zone is refused,
 * not read as UTC. flag (an option's value): also "now" and a duration ago
 * ("10m", "2h"), and a time without a zone is the local zone's, as
 * sr_parse_when reads it (zone says which). With now_ms > 0 (the Redis
 * clock), a time more than SR_AS_OF_SKEW_MS ahead of it is refused. ms, or
 * -1 with err set. */
int64_t sr_parse_as_of(const char *s, int64_t now_ms, int flag, char *zone, size_t zonelen, char *err,
    size_t errlen);
/* Whether a time t is more than SR_AS_OF_SKEW_MS ahead of the Redis clock
 * (now_ms; not known when <= 0): 1 with err saying so of subject. Trusted,
 * its facts would outlive every newer one. */
int sr_as_of_ahead(const char *subject, int64_t t, int64_t now_ms, char *err, size_t errlen);
/* Epoch ms as ISO-8601 UTC ("2026-12-01T10:00:00.123Z") into buf (>= 32):
 * what records say. */
char *sr_iso_ms(char *buf, size_t n, int64_t ms);
/* --local (a --table's times): from now on, times for people (sr_iso_people,
 * sr_when) are in the local zone, with its offset, instead of UTC. -1 (err
 * set) when TZ names no zone. */
int sr_times_local(char *err, size_t errlen);
/* A tool's --utc and --local: both, or --local without --table (the view
 * for people: a record's times stay UTC), or a TZ that names no zone, die
 * (exit 2); --local, times for people from then on (sr_times_local). */
void sr_people_zone(int table, int utc, int local);
/* Epoch ms for people: as sr_iso_ms, or with --local
 * "2026-12-01T18:00:00.123+08:00". */
char *sr_iso_people(char *buf, size_t n, int64_t ms);
/* A time for a sentence: "2026-12-01T10:00:00Z (in 2m05s)" or "(3m ago)",
 * relative to now (both epoch ms); with --local "...+08:00 (in 2m05s)". The
 * text lives in one of 8 static buffers, reused in turn: enough for one
 * sentence. */
const char *sr_when(int64_t ms, int64_t now);
/* Worst of two exit statuses: BACKEND > USAGE > REJECTED > HELD > OK. */
int sr_worst(int a, int b);

#endif
