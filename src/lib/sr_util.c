/* sr_util.c - messages, allocation, the final stdout check, clocks, who. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sr.h"

const char *sr_prog = "srq";
int sr_log_stamp;

/* Whether stderr is the journal's stream: systemd names it in
 * JOURNAL_STREAM ("device:inode") for the service it started; a tool that
 * service started again with stderr elsewhere inherits the variable, so
 * the stream itself is compared. */
static int
stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	return js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
	    (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void
sr_log_head(int prio)
{
	static int journal = -1;

	if (journal < 0)
		journal = stderr_is_journal();
	if (journal) {
		/* The journal stamps each line itself, and reads its level
		 * from this prefix (sd-daemon(3)). */
		fprintf(stderr, "<%d>", prio);
	} else if (sr_log_stamp && !isatty(STDERR_FILENO)) {
		time_t t = time(NULL);
		struct tm tm;
		char iso[32];

		gmtime_r(&t, &tm);
		strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
		fprintf(stderr, "%s ", iso);
	}
}

static void
vmsg(int prio, const char *level, const char *fmt, va_list ap)
{
	int saved = errno;
	size_t n = strlen(fmt);

	sr_log_head(prio);
	if (level)
		fprintf(stderr, "%s: %s: ", sr_prog, level);
	else
		fprintf(stderr, "%s: ", sr_prog);
	vfprintf(stderr, fmt, ap);
	if (n > 0 && fmt[n - 1] == ':')
		fprintf(stderr, " %s", strerror(saved));
	fputc('\n', stderr);
}

static void same_said(void);

void
sr_die(int status, const char *fmt, ...)
{
	va_list ap;

	same_said();
	va_start(ap, fmt);
	vmsg(SR_LOG_ERR, "fatal", fmt, ap);
	va_end(ap);
	fflush(stdout);
	exit(status);
}

void
sr_say(int prio, const char *level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(prio, level, fmt, ap);
	va_end(ap);
}

/* sr_warn_each: the warning of the item before, and how many items since
 * repeated it without being said. */
static char same_msg[512];
static long same_more;
static int64_t same_since;

static void
same_said(void)
{
	if (same_more > 0)
		sr_warn("%ld more like it: %s", same_more, same_msg);
	same_more = 0;
}

const char *
sr_card_subject(const char *card)
{
	static char s[96];

	snprintf(s, sizeof s, "card '%s'", card);
	return s;
}

void
sr_warn_each(const char *subject, const char *msg)
{
	if (same_msg[0] && !strcmp(msg, same_msg) && sr_mono_ms() - same_since < 5000) {
		same_more++;
		return;
	}
	same_said();
	snprintf(same_msg, sizeof same_msg, "%s", msg);
	same_since = sr_mono_ms();
	if (subject)
		sr_warn("%s: %s", subject, msg);
	else
		sr_warn("%s", msg);
}

void *
sr_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		sr_die(SR_EX_USAGE, "out of memory");
	return p;
}

void *
sr_realloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		sr_die(SR_EX_USAGE, "out of memory");
	return p;
}

char *
sr_strdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(sr_malloc(n), s, n);
}

static int reader_may_leave; /* sr_reader_may_leave */
static int reader_left;      /* a flush found stdout's reader gone (EPIPE) */

void
sr_reader_may_leave(void)
{
	reader_may_leave = 1;
}

int
sr_flush_view(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	reader_left |= errno == EPIPE;
	return -1;
}

int
sr_finish(int status)
{
	same_said();
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
		/* (One that left before: nothing was left to write, and errno
		 * says nothing; it was said when it failed.) */
		if (reader_may_leave && (errno == EPIPE || reader_left))
			return status;
		sr_warn("writing output failed:");
		return sr_worst(status, SR_EX_BACKEND);
	}
	return status;
}

void
sr_flush(void)
{
	if (fflush(stdout) != 0 || ferror(stdout))
		sr_die(SR_EX_BACKEND, "writing output failed:");
}

int
sr_worst(int a, int b)
{
	/* Rank: OK < HELD < REJECTED < USAGE < BACKEND. The codes happen to
	 * be ordered, but for HELD (work waiting, nothing wrong with it). */
	int ra = a == SR_EX_HELD ? 0 : a, rb = b == SR_EX_HELD ? 0 : b;

	if (ra == rb)
		return a > b ? a : b;
	return ra > rb ? a : b;
}

int64_t
sr_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
sr_sleep_ms(int64_t ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

const char *
sr_who(void)
{
	const char *u = getenv("SUDO_USER");
	struct passwd *pw;

	if (u && *u && sr_utf8_valid(u))
		return u;
	/* The effective user, not $USER: cron sets no USER. */
	if ((pw = getpwuid(geteuid())) && pw->pw_name && *pw->pw_name)
		return pw->pw_name;
	return (u = getenv("USER")) && *u && sr_utf8_valid(u) ? u : "unknown";
}

size_t
sr_wrap_word(char *out, size_t size, size_t len, int *col, const char *word, const char *indent)
{
	int w = (int)strlen(word);

	if (len >= size)
		return len;
	/* Words wrap before column 80, onto a line that starts with indent. */
	if (len > 0 && *col + 1 + w >= 80) {
		len += (size_t)snprintf(out + len, size - len, "\n%s", indent);
		*col = (int)strlen(indent);
	} else if (len > 0) {
		len += (size_t)snprintf(out + len, size - len, " ");
		++*col;
	}
	if (len < size)
		len += (size_t)snprintf(out + len, size - len, "%s", word);
	*col += w;
	return len < size ? len : size - 1;
}
