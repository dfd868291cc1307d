/* clockshift - an LD_PRELOAD shim that steps one process's wall clock.
 *
 * The tests start redis-server with it to make Redis's clock jump (an NTP
 * step) while the tools and sr-gwsim keep the true one. CLOCKSHIFT_FILE
 * names a file holding a whole number of ms (an empty or missing file is
 * 0): CLOCK_REALTIME (and its coarse variant), gettimeofday() and time()
 * return the true time plus that. Redis's TIME, inside scripts too, reads
 * gettimeofday(). Every other clock (CLOCK_MONOTONIC: Redis's timers,
 * srq's monotonic clock) is left alone. The file is read again at most
 * once a millisecond (monotonic), so a test that writes it sees the step
 * taken within a millisecond, and Redis's hot paths pay almost nothing.
 *
 * libfaketime cannot run redis-server; this is the few lines needed.
 * Built by make (build/clockshift.so); tests/props/clock.bats uses it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int clock_gettime_fn(clockid_t, struct timespec *);

static _Atomic long long shift_ms;
static _Atomic long long next_read_ns; /* monotonic */

static clock_gettime_fn *
real_clock_gettime(void)
{
	static clock_gettime_fn *_Atomic fn;
	clock_gettime_fn *f = atomic_load(&fn);

	if (!f) {
		f = (clock_gettime_fn *)dlsym(RTLD_NEXT, "clock_gettime");
		atomic_store(&fn, f);
	}
	return f;
}

/* The shift now, from the file when it is due to be read again. */
static long long
shift(void)
{
	const char *path = getenv("CLOCKSHIFT_FILE");
	struct timespec mono;
	long long now_ns, v = 0;
	char buf[32];
	ssize_t n;
	int fd, neg = 0;

	if (!path || real_clock_gettime()(CLOCK_MONOTONIC, &mono) != 0)
		return atomic_load(&shift_ms);
	now_ns = (long long)mono.tv_sec * 1000000000 + mono.tv_nsec;
	if (now_ns < atomic_load(&next_read_ns))
		return atomic_load(&shift_ms);
	atomic_store(&next_read_ns, now_ns + 1000000);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return atomic_load(&shift_ms);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0)
		return atomic_load(&shift_ms);
	buf[n] = '\0';
	for (char *p = buf; *p; p++) {
		if (*p == '-' && p == buf)
			neg = 1;
		else if (*p >= '0' && *p <= '9')
			v = v * 10 + (*p - '0');
		else
			break;
	}
	atomic_store(&shift_ms, neg ? -v : v);
	return neg ? -v : v;
}

static void
add_ms(struct timespec *ts, long long ms)
{
	long long ns = (long long)ts->tv_nsec + (ms % 1000) * 1000000;

	ts->tv_sec += (time_t)(ms / 1000);
	if (ns < 0) {
		ns += 1000000000;
		ts->tv_sec--;
	} else if (ns >= 1000000000) {
		ns -= 1000000000;
		ts->tv_sec++;
	}
	ts->tv_nsec = (long)ns;
}

int
clock_gettime(clockid_t id, struct timespec *ts)
{
	int rc = real_clock_gettime()(id, ts);

	if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
		add_ms(ts, shift());
	return rc;
}

int
gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	struct timespec ts;

	(void)tz;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	tv->tv_sec = ts.tv_sec; /* glibc declares tv nonnull */
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t
time(time_t *t)
{
	struct timespec ts;
	time_t now = clock_gettime(CLOCK_REALTIME, &ts) == 0 ? ts.tv_sec : (time_t)-1;

	if (t)
		*t = now;
	return now;
}
