/* stat/watch.c - sr-stat --watch: the table again every few seconds, the
 * live view, until interrupted. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stat.h"

static volatile sig_atomic_t stopped; /* --watch: SIGINT or SIGTERM came */

static void
on_stop(int sig)
{
	(void)sig;
	stopped = 1;
}

/* --watch: the table again every interval_s, until SIGINT or SIGTERM (exit
 * 0), or until its reader goes away. On a terminal each frame replaces the
 * last (the screen cleared and the cursor homed, as watch(1) does); to a
 * pipe or a file the frames follow each other, a blank line apart, with no
 * escape code in them. */
void
watch(const char **carriers, int ncarriers, long window_s, long interval_s)
{
	struct sigaction sa;
	int tty = isatty(STDOUT_FILENO);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop; /* no SA_RESTART: the wait between frames ends at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (long frame = 0; !stopped; frame++) {
		long long now_ms;
		json_t *records = snapshot(carriers, ncarriers, window_s, 0, &now_ms);
		char t[48];
		struct timespec wait = { interval_s, 0 };

		if (tty)
			fputs("\033[H\033[2J", stdout);
		else if (frame)
			putchar('\n');
		printf("sr-stat --watch %ld   %s (Redis clock)\n\n", interval_s, sr_iso_people(t, sizeof t, now_ms));
		write_table(stdout, records, now_ms);
		json_decref(records);
		if (sr_flush_view() < 0)
			return; /* sr_finish says why, unless the reader just left */
		while (!stopped && nanosleep(&wait, &wait) == -1 && errno == EINTR)
			;
	}
}
