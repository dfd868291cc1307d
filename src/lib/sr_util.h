/* sr_util.h - the API of sr_util.c. */
#ifndef SR_UTIL_H
#define SR_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

extern const char *sr_prog;
/* Set by the tools that run unattended (cron, systemd): each diagnostic
 * line on stderr then starts with its ISO UTC time when stderr is not a
 * terminal (a log file), or with its syslog level when it is the journal's
 * stream (JOURNAL_STREAM), which stamps lines itself. */
extern int sr_log_stamp;
enum { SR_LOG_ERR = 3, SR_LOG_WARNING = 4, SR_LOG_NOTICE = 5 };
/* What starts a diagnostic line on stderr (see sr_log_stamp): the journal's
 * level prefix "<N>", the time, or nothing. */
void sr_log_head(int prio);

/* Print "PROG: fatal: MSG" and exit(status). A format ending in ':' gets
 * ": strerror(errno)" appended (sbase's eprintf rule). */
void sr_die(int status, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
/* Print "PROG: LEVEL: MSG" at syslog priority PRIO (same ':' rule):
 * sr_warn, "warning"; sr_note, "note" (how something given was read, news,
 * not a fault). */
void sr_say(int prio, const char *level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define sr_warn(...) sr_say(SR_LOG_WARNING, "warning", __VA_ARGS__)
#define sr_note(...) sr_say(SR_LOG_NOTICE, "note", __VA_ARGS__)
/* A warning an item may share with many (a refusal that fails a whole
 * batch): "subject: msg" for the first (subject may be NULL); the next
 * items with the same msg are counted, and said as "N more like it: msg"
 * when another msg comes, after 5 s, or at exit (sr_finish, sr_die). */
void sr_warn_each(const char *subject, const char *msg);
/* "card 'ID'", for sr_warn_each (a static buffer). */
const char *sr_card_subject(const char *card);
/* Allocation that never returns NULL (dies with exit 2 on out-of-memory). */
void *sr_malloc(size_t n);
void *sr_realloc(void *p, size_t n);
char *sr_strdup(const char *s);
/* Flush and close stdout; a failed write (full disk, closed pipe) turns a
 * zero status into SR_EX_BACKEND. Returns the status to exit with. */
int sr_finish(int status);
/* A view's reader may stop reading when it has seen enough ("| head -1"):
 * then a closed pipe (EPIPE) is no failure, and sr_finish says nothing of
 * it and keeps the status (sr-admin, sr-stat: what they did is done; no
 * "Broken pipe" on stderr). Not for a pipeline's stage, whose lost records
 * are lost work (exit 3). */
void sr_reader_may_leave(void);
/* Flush stdout between a view's parts (a --watch frame): 0, or -1 when the
 * write failed (its reader gone, if EPIPE: then sr_finish knows it). */
int sr_flush_view(void);
/* Flush stdout after a batch; a reader that went away (EPIPE: SIGPIPE is
 * ignored so a Redis socket closing cannot kill us) ends the tool, exit 3. */
void sr_flush(void);
/* Monotonic milliseconds, for timeouts and pacing only; decisions use the
 * Redis server's clock (sr_redis_time_ms). */
int64_t sr_mono_ms(void);
void sr_sleep_ms(int64_t ms);
/* Who runs this, for the audit: SUDO_USER, else the effective user. */
const char *sr_who(void);
/* Worst of two exit statuses: BACKEND > USAGE > REJECTED > OK. */
int sr_worst(int a, int b);

/* For a usage text's list of words: word appended to out (size bytes, len
 * of them used; returns the new len), after a space, or wrapped before
 * column 80 onto a new line that starts with indent; *col is the column
 * out's last line ends at. */
size_t sr_wrap_word(char *out, size_t size, size_t len, int *col, const char *word, const char *indent);

#endif
