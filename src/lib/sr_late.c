/* sr_late.c - the late-send pace step: right before a call leaves, the
 * account's pace moved by how late it leaves, and its headroom reported
 * (late.lua), one Redis round trip; the HTTP client knows nothing of it.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sr.h"

/* Count one send's lateness (ms after its slot) and return the p99 of those
 * of the last minute, ms: the upper end of its bin, so never less than
 * measured (SR_HR_MAX_MS at most: lateness beyond it is counted there). */
static long
late_p99(struct sr_edge *e, int64_t now, long late)
{
	int64_t slice = now / SR_LATE_SLICE_MS;
	struct sr_late_slice *s;
	unsigned long total = 0, sum = 0, bins[SR_LATE_BINS] = { 0 };
	int b;

	if (!e->late) {
		e->late = sr_malloc(SR_LATE_SLICES * sizeof *e->late);
		memset(e->late, 0, SR_LATE_SLICES * sizeof *e->late);
	}
	s = &e->late[slice % SR_LATE_SLICES];
	if (s->start != slice) {
		memset(s, 0, sizeof *s);
		s->start = slice;
	}
	b = late < 0 ? 0 : late / SR_LATE_BIN_MS;
	s->n[b < SR_LATE_BINS ? b : SR_LATE_BINS - 1]++;
	for (int i = 0; i < SR_LATE_SLICES; i++)
		if (slice - e->late[i].start < SR_LATE_SLICES)
			for (b = 0; b < SR_LATE_BINS; b++) {
				bins[b] += e->late[i].n[b];
				total += e->late[i].n[b];
			}
	for (b = 0; b < SR_LATE_BINS - 1; b++)
		if ((sum += bins[b]) * 100 >= total * 99)
			break;
	return b < SR_LATE_BINS - 1 ? (long)(b + 1) * SR_LATE_BIN_MS : SR_HR_MAX_MS;
}

/* Who reports a headroom (late.lua): host and process. */
static const char *
reporter(void)
{
	static char id[300];

	if (!id[0]) {
		char host[256] = "";

		if (gethostname(host, sizeof host - 1) != 0)
			snprintf(host, sizeof host, "?");
		snprintf(id, sizeof id, "%s:%ld", host, (long)getpid());
	}
	return id;
}

int
sr_edge_late(struct sr_redis *r, const struct sr_config *cfg, struct sr_edge *e, int64_t slot)
{
	int64_t now = sr_mono_ms();
	long sent_late = (long)(now - slot), late = sr_edge_spread(e) + sent_late;
	long floor = e->acct->window_ms - 1000, hr = late_p99(e, now, sent_late);
	char keys[SR_LATE_KEYS][SR_KEY_MAX], ms[24], hrs[24] = "";
	const char *argv[SR_LATE_KEYS + SR_LATE_ARGC], **a = argv + SR_LATE_KEYS;
	redisReply *rep;

	/* Under the configured headroom the pace does not change: reported as
	 * 0, once, to take back a larger report of this process's. Above it,
	 * a change at most once a second, and every 20 s to keep it current
	 * (a report a minute old is not used). */
	if (hr <= floor)
		hr = 0;
	if ((hr != e->hr_sent && now - e->hr_sent_at >= 1000) ||
	    (hr > 0 && now - e->hr_sent_at >= 20000)) {
		snprintf(hrs, sizeof hrs, "%ld", hr);
		e->hr_sent = hr;
		e->hr_sent_at = now;
	}
	/* A few ms are within the headroom: not worth a round trip. */
	if (late < SR_LATE_MS)
		late = 0;
	if (!late && !hrs[0])
		return 0;
	snprintf(ms, sizeof ms, "%ld", late);
	sr_keys_account(keys, argv, cfg->prefix, e->acct->id, sr_lua_late_keys);
	a[SR_LATE_ARGV_LATE] = ms;
	a[SR_LATE_ARGV_HEADROOM] = hrs;
	a[SR_LATE_ARGV_WHO] = reporter();
	sr_redis_append_script(r, SR_LUA_LATE, SR_LATE_KEYS, SR_LATE_KEYS + SR_LATE_ARGC, argv, NULL);
	if (!(rep = sr_redis_reply(r)))
		return -1;
	if (rep->type == REDIS_REPLY_ERROR)
		sr_warn("account '%s': the pace was not moved for a late call: %s", e->acct->id,
		    rep->str);
	freeReplyObject(rep);
	return 0;
}
