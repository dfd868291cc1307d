/* sr_lock.c - the device lock, shared by dev-eval and the direct path.
 *
 * A plain Redis key (SET NX PX) holding a random token, released by
 * compare-and-delete (unlock.lua). dev-eval holds it only while it reads
 * facts and writes commands (milliseconds); the direct path holds it while
 * it acts on a card for a device-level reason, which takes as long as its
 * calls, tries and queries do: it extends the hold while it works
 * (compare-and-extend, lock_extend.lua), so the hold cannot run out under
 * it. The two never hold one device at once.
 *
 * SRQ_LOCK_TRACE=FILE appends "acquire|release DEVICE TOOL PID NS" lines, taken
 * right after acquiring and right before releasing (so each traced interval
 * lies inside the real one): tests check that no two intervals overlap. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sr.h"

static void
trace(const char *what, const char *device)
{
	const char *path = getenv("SRQ_LOCK_TRACE");
	struct timespec ts;
	char line[160];
	int fd, n;

	if (!path || !*path)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(line, sizeof line, "%s %s %s %ld %lld\n", what, device, sr_prog, (long)getpid(),
	    (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	/* O_APPEND: one write per line, whole lines from concurrent writers. */
	if ((fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644)) >= 0) {
		if (write(fd, line, (size_t)n) < 0)
			sr_warn("SRQ_LOCK_TRACE: write failed:");
		close(fd);
	}
}

int
sr_device_lock(struct sr_redis *r, const struct sr_config *cfg, const char *device, char *token,
    long hold_ms, long wait_ms)
{
	char key[SR_KEY_MAX], px[24];
	int64_t deadline = sr_mono_ms() + wait_ms;

	snprintf(token, SR_TOKEN_MAX, "%ld-%lld-%d", (long)getpid(), (long long)sr_mono_ms(), rand());
	snprintf(px, sizeof px, "%ld", hold_ms);
	sr_key_device_lock(key, cfg->prefix, device);
	for (;;) {
		const char *argv[] = { "SET", key, token, "NX", "PX", px };
		redisReply *rep = sr_redis_cmd(r, 6, argv);
		int got;

		if (!rep)
			return -1;
		if (rep->type == REDIS_REPLY_ERROR) {
			/* Refused (out of memory, read only): not a busy lock. */
			snprintf(r->errstr, sizeof r->errstr, "device lock not taken: %s", rep->str);
			freeReplyObject(rep);
			return -2;
		}
		got = rep->type == REDIS_REPLY_STATUS;
		freeReplyObject(rep);
		if (got) {
			trace("acquire", device);
			return 1;
		}
		if (sr_mono_ms() >= deadline)
			return 0;
		sr_sleep_ms(10);
	}
}

/* A compare-and-act script on the lock (unlock.lua, lock_extend.lua): 1
 * when it found the lock ours and acted, 0 when it was not ours, -1 when
 * Redis failed, -2 when Redis refused it ("device lock not WHAT: ..." in
 * r->errstr). */
static int
if_ours(struct sr_redis *r, enum sr_script script, int nkeys, int argc, const char **argv,
    const char *what)
{
	redisReply *rep;
	int ours;

	sr_redis_append_script(r, script, nkeys, argc, argv, NULL);
	if (!(rep = sr_redis_reply(r)))
		return -1;
	if (rep->type == REDIS_REPLY_ERROR) {
		snprintf(r->errstr, sizeof r->errstr, "device lock not %s: %s", what, rep->str);
		freeReplyObject(rep);
		return -2;
	}
	ours = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
	freeReplyObject(rep);
	return ours;
}

int
sr_device_unlock(struct sr_redis *r, const struct sr_config *cfg, const char *device,
    const char *token)
{
	char key[SR_UNLOCK_KEYS][SR_KEY_MAX];
	/* unlock.lua's keys and arguments, as its header declares them */
	const char *argv[SR_UNLOCK_KEYS + SR_UNLOCK_ARGC], **a = argv + SR_UNLOCK_KEYS;
	int ours;

	sr_keys_script(key, argv, cfg->prefix, NULL, device, sr_lua_unlock_keys);
	a[SR_UNLOCK_ARGV_TOKEN] = token;
	trace("release", device);
	/* Refused: still held, until its hold runs out. */
	if ((ours = if_ours(r, SR_LUA_UNLOCK, SR_UNLOCK_KEYS, SR_UNLOCK_KEYS + SR_UNLOCK_ARGC, argv,
	    "released")) < 0)
		return ours;
	if (!ours) {
		/* Its hold ran out while we still acted under it, and perhaps
		 * another took it: the caller must say so. */
		snprintf(r->errstr, sizeof r->errstr,
		    "device lock '%s' was no longer ours at release (its hold ran out, or another took it)",
		    device);
		return -3;
	}
	return 0;
}

int
sr_device_lock_extend(struct sr_redis *r, const struct sr_config *cfg, const char *device,
    const char *token, long hold_ms)
{
	char key[SR_LOCK_EXTEND_KEYS][SR_KEY_MAX], px[24];
	/* lock_extend.lua's keys and arguments, as its header declares them */
	const char *argv[SR_LOCK_EXTEND_KEYS + SR_LOCK_EXTEND_ARGC], **a = argv + SR_LOCK_EXTEND_KEYS;

	sr_keys_script(key, argv, cfg->prefix, NULL, device, sr_lua_lock_extend_keys);
	snprintf(px, sizeof px, "%ld", hold_ms);
	a[SR_LOCK_EXTEND_ARGV_TOKEN] = token;
	a[SR_LOCK_EXTEND_ARGV_PX] = px;
	return if_ours(r, SR_LUA_LOCK_EXTEND, SR_LOCK_EXTEND_KEYS,
	    SR_LOCK_EXTEND_KEYS + SR_LOCK_EXTEND_ARGC, argv, "extended");
}
