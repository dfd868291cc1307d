/* sr_jsonl.h - the API of sr_jsonl.c. */
#ifndef SR_JSONL_H
#define SR_JSONL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#define SR_LINE_MAX (64 * 1024)

/* A line reader over a file descriptor that can tell "no complete line yet"
 * from end of input, so filters can batch what is available without waiting. */
struct sr_reader {
	int fd;
	char *buf;
	size_t len, off, cap;
	long lineno;  /* number of the last line returned, from 1 */
	int eof;
	int err;      /* errno of a failed read (input ends there): see sr_reader_failed */
	int skipping; /* inside an over-long line: discard up to its newline */
	size_t linelen; /* length of the last line returned (it may hold a NUL) */
	const char *why; /* why the last SR_READ_BAD line is not a line */
};
enum { SR_READ_LINE = 1, SR_READ_AGAIN = 0, SR_READ_EOF = -1, SR_READ_BAD = 2 };
void sr_reader_init(struct sr_reader *rd, int fd);
void sr_reader_free(struct sr_reader *rd);
/* Next line (NUL-terminated, without its newline) into *line, valid until the
 * next call. block=0 returns SR_READ_AGAIN when no whole line is buffered and
 * none can be read without waiting. SR_READ_BAD reports a line that cannot be
 * read as text, rd->why says why (over SR_LINE_MAX, or holding a NUL byte);
 * it is skipped and lineno counts it, so the caller answers it by number. */
int sr_reader_next(struct sr_reader *rd, char **line, int block);
/* After EOF: 0, or an exit status (SR_EX_USAGE) after saying on stderr that
 * the input could not be read (a directory, an I/O error). */
int sr_reader_failed(const struct sr_reader *rd);
/* Parse one input line as a JSON object; NULL with "malformed JSON: ..." in
 * err. Duplicate keys are refused: the last would silently win. */
json_t *sr_json_line(const char *line, char *err, size_t errlen);
/* Wait up to timeout_ms for input (or EOF); 1 if readable. */
int sr_reader_wait(struct sr_reader *rd, int timeout_ms);

/* Mark a record rejected: "status":"rejected" and "error" set in o, and
 * "PROG: line N: ERROR" on stderr. Returns SR_EX_REJECTED (for sr_worst). */
int sr_rejected(json_t *o, long line, const char *error);
/* Text as a JSON string, never NULL: a byte that is not UTF-8 (a message
 * cut inside a character, an operator's reason in Latin-1) is shown as
 * U+FFFD, and the member is not lost. */
json_t *sr_json_text(const char *s);
/* Whether s is well-formed UTF-8. */
int sr_utf8_valid(const char *s);
/* Print obj as one compact JSON line on stdout and release it. */
void sr_emit(json_t *obj);
/* --table: sr_out keeps records (instead of printing JSONL) until
 * sr_table_flush prints their scalar members as aligned columns. */
void sr_table_mode(void);
void sr_out(json_t *obj);
/* Human times next to machine ones, in obj and the objects inside it: an
 * epoch-ms field X_ms (or X) gets X_at, its ISO-8601 time in UTC, and an
 * audit entry's stream id gets "at". Durations are left alone (an epoch
 * ms is at least 10^11). people: the epoch-ms fields are dropped, and the
 * times are sr_iso_people's (--table, in the local zone with --local). */
void sr_add_times(json_t *obj, int people);
void sr_table_flush(void);
/* Field accessors that tolerate absence; return NULL / dflt. */
const char *sr_jstr(json_t *obj, const char *key);
/* Whether a JSON array holds the string s. */
int sr_jarray_has(json_t *array, const char *s);
long long sr_jint(json_t *obj, const char *key, long long dflt);

#endif
