/* sr_jsonl.c - line-delimited JSON in and out.
 *
 * The reader works on a raw fd so a filter can ask "is another whole line
 * buffered or readable right now?" and batch exactly what is available:
 * a pipeline fed slowly still gets each answer promptly, a file is processed
 * in large batches. Lines over SR_LINE_MAX, or holding a NUL byte, are
 * reported by number and skipped; a read error ends input and is reported. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sr.h"

void
sr_reader_init(struct sr_reader *rd, int fd)
{
	memset(rd, 0, sizeof *rd);
	rd->fd = fd;
	rd->cap = SR_LINE_MAX + 4096;
	rd->buf = sr_malloc(rd->cap + 1);
}

void
sr_reader_free(struct sr_reader *rd)
{
	free(rd->buf);
	rd->buf = NULL;
}

int
sr_reader_wait(struct sr_reader *rd, int timeout_ms)
{
	struct pollfd p = { rd->fd, POLLIN, 0 };

	if (rd->eof || memchr(rd->buf + rd->off, '\n', rd->len - rd->off))
		return 1;
	return poll(&p, 1, timeout_ms) > 0;
}

/* Read more bytes; returns 1 if some were read, 0 if none available, -1 EOF. */
static int
fill(struct sr_reader *rd, int block)
{
	ssize_t n;

	if (rd->off > 0) {
		memmove(rd->buf, rd->buf + rd->off, rd->len - rd->off);
		rd->len -= rd->off;
		rd->off = 0;
	}
	if (rd->len == rd->cap) {
		/* No newline within the buffer: the line is too long. */
		rd->len = 0;
		rd->skipping = 1;
	}
	if (!block) {
		struct pollfd p = { rd->fd, POLLIN, 0 };

		if (poll(&p, 1, 0) <= 0)
			return 0;
	}
	do
		n = read(rd->fd, rd->buf + rd->len, rd->cap - rd->len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		rd->err = errno; /* input ends here; sr_reader_failed says so */
	if (n <= 0)
		return -1;
	rd->len += (size_t)n;
	return 1;
}

/* A line of n bytes at start: text, or BAD if it holds a NUL (whatever
 * follows the NUL would be silently ignored by every parser). */
static int
line_out(struct sr_reader *rd, char *start, size_t n, char **line)
{
	start[n] = '\0';
	rd->linelen = n;
	if (memchr(start, '\0', n)) {
		rd->why = "line contains a NUL byte";
		return SR_READ_BAD;
	}
	*line = start;
	return SR_READ_LINE;
}

int
sr_reader_next(struct sr_reader *rd, char **line, int block)
{
	for (;;) {
		char *start = rd->buf + rd->off;
		char *nl = memchr(start, '\n', rd->len - rd->off);

		if (nl) {
			size_t n = (size_t)(nl - start);

			rd->off += n + 1;
			rd->lineno++;
			if (rd->skipping || n > SR_LINE_MAX) {
				rd->skipping = 0;
				rd->why = "line longer than 65536 bytes";
				return SR_READ_BAD;
			}
			if (n > 0 && start[n - 1] == '\r')
				start[--n] = '\0';
			return line_out(rd, start, n, line);
		}
		if (rd->eof) {
			/* A last line without its newline still counts - also
			 * one over-long whose tail was discarded to the byte
			 * (skipping, nothing buffered). */
			if (rd->len > rd->off || rd->skipping) {
				size_t n = rd->len - rd->off;

				rd->off = rd->len;
				rd->lineno++;
				if (rd->skipping || n > SR_LINE_MAX) {
					rd->skipping = 0;
					rd->why = "line longer than 65536 bytes";
					return SR_READ_BAD;
				}
				return line_out(rd, start, n, line);
			}
			return SR_READ_EOF;
		}
		switch (fill(rd, block)) {
		case 0: return SR_READ_AGAIN;
		case -1: rd->eof = 1; break;
		}
	}
}

int
sr_reader_failed(const struct sr_reader *rd)
{
	if (!rd->err)
		return 0;
	sr_log_head(SR_LOG_ERR);
	fprintf(stderr, "%s: error: reading input after line %ld: %s\n", sr_prog, rd->lineno,
	    strerror(rd->err));
	return SR_EX_USAGE;
}

json_t *
sr_json_line(const char *line, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);

	if (!o)
		snprintf(err, errlen, "malformed JSON: %s", jerr.text);
	else if (!json_is_object(o)) {
		snprintf(err, errlen, "not a JSON object");
		json_decref(o);
		o = NULL;
	}
	return o;
}

void
sr_emit(json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);

	/* Every line is answered: a record that cannot be written is fatal,
	 * never silently missing. */
	if (!s)
		sr_die(SR_EX_BACKEND, "out of memory writing a record");
	fputs(s, stdout);
	fputc('\n', stdout);
	free(s);
	json_decref(obj);
}

/* The length of the well-formed UTF-8 sequence at p (at most left bytes),
 * or 0: overlong forms, surrogates and code points past U+10FFFF are not. */
static size_t
utf8_seq(const unsigned char *p, size_t left)
{
	size_t n;
	unsigned cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

int
sr_utf8_valid(const char *s)
{
	size_t left = strlen(s), n;

	for (const unsigned char *p = (const unsigned char *)s; left > 0; p += n, left -= n)
		if (!(n = utf8_seq(p, left)))
			return 0;
	return 1;
}

/* jansson refuses text that is not UTF-8, and json_object_set_new then
 * drops the member without a word (a rejection would lose its reason, an
 * audit entry its who or why): each byte that is not part of a UTF-8
 * sequence is shown as U+FFFD instead. */
json_t *
sr_json_text(const char *s)
{
	json_t *j = json_string(s);
	size_t left = strlen(s), n, k = 0;
	const unsigned char *p = (const unsigned char *)s;
	char *out;

	if (j)
		return j;
	out = sr_malloc(3 * left + 1);
	for (; left > 0; p += n, left -= n)
		if ((n = utf8_seq(p, left))) {
			memcpy(out + k, p, n);
			k += n;
		} else {
			memcpy(out + k, "\xef\xbf\xbd", 3);
			k += 3;
			n = 1;
		}
	j = json_stringn(out, k);
	free(out);
	return j ? j : json_string("(not UTF-8)");
}

int
sr_rejected(json_t *o, long line, const char *error)
{
	sr_log_head(SR_LOG_WARNING);
	fprintf(stderr, "%s: line %ld: %s\n", sr_prog, line, error);
	json_object_set_new(o, "status", json_string("rejected"));
	json_object_set_new(o, "error", sr_json_text(error));
	return SR_EX_REJECTED;
}

int
sr_jarray_has(json_t *array, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach(array, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), s))
			return 1;
	return 0;
}

const char *
sr_jstr(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

long long
sr_jint(json_t *obj, const char *key, long long dflt)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* --table: records kept until the end, then printed as aligned columns. */
static json_t *table_rows;

void
sr_table_mode(void)
{
	table_rows = json_array();
}

static int
is_epoch_ms(json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 100000000000LL &&
	    json_integer_value(v) < 100000000000000LL;
}

void
sr_add_times(json_t *obj, int people)
{
	const char *k;
	json_t *v, *add, *drop;
	size_t i;
	char name[128], iso[40];
	char *(*when)(char *, size_t, int64_t);

	if (json_is_array(obj)) {
		json_array_foreach(obj, i, v)
			sr_add_times(v, people);
		return;
	}
	if (!json_is_object(obj))
		return;
	/* Records say UTC; people (--table) read it, or with --local their
	 * zone's time. */
	when = people ? sr_iso_people : sr_iso_ms;
	/* Members are added and dropped after the walk: an object is not
	 * changed while it is iterated. */
	add = json_object();
	drop = json_array();
	json_object_foreach(obj, k, v) {
		size_t n = strlen(k);
		long long ms;

		if (json_is_object(v) || json_is_array(v)) {
			sr_add_times(v, people);
			continue;
		}
		if (!strcmp(k, "id") && json_is_string(v) &&
		    sscanf(json_string_value(v), "%lld-%*d", &ms) == 1 && ms >= 100000000000LL) {
			json_object_set_new(add, "at", json_string(when(iso, sizeof iso, ms)));
			continue;
		}
		if (!is_epoch_ms(v) || n >= sizeof name - 4 || (n > 3 && !strcmp(k + n - 3, "_at")))
			continue;
		if (n > 3 && !strcmp(k + n - 3, "_ms"))
			n -= 3;
		snprintf(name, sizeof name, "%.*s_at", (int)n, k);
		if (!json_object_get(obj, name))
			json_object_set_new(add, name, json_string(when(iso, sizeof iso, json_integer_value(v))));
		if (people)
			json_array_append_new(drop, json_string(k));
	}
	json_array_foreach(drop, i, v)
		json_object_del(obj, json_string_value(v));
	json_object_update(obj, add);
	json_decref(add);
	json_decref(drop);
}

void
sr_out(json_t *obj)
{
	sr_add_times(obj, table_rows != NULL);
	if (table_rows)
		json_array_append_new(table_rows, obj);
	else
		sr_emit(obj);
}

static void
cell(char *buf, size_t n, json_t *v)
{
	if (json_is_string(v))
		snprintf(buf, n, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, n, "%.3g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, n, "%s", json_is_true(v) ? "yes" : "no");
	else
		snprintf(buf, n, "%s", v ? "…" : "");
}

void
sr_table_flush(void)
{
	json_t *cols, *r;
	size_t i, k, ncols;
	int *width;
	char buf[1024]; /* whole cells: a sentence is never cut */

	if (!table_rows)
		return;
	cols = json_array();
	/* Columns: every scalar member, in the order first seen. */
	json_array_foreach(table_rows, i, r) {
		const char *key;
		json_t *v;

		json_object_foreach(r, key, v) {
			int seen = 0;
			json_t *c;

			if (json_is_object(v) || json_is_array(v))
				continue;
			json_array_foreach(cols, k, c)
				seen |= !strcmp(json_string_value(c), key);
			if (!seen)
				json_array_append_new(cols, json_string(key));
		}
	}
	/* The sentence an operator reads (why) goes last, so that its length
	 * does not push the other columns apart. */
	json_array_foreach(cols, k, r)
		if (!strcmp(json_string_value(r), "why")) {
			json_array_append(cols, r);
			json_array_remove(cols, k);
			break;
		}
	ncols = json_array_size(cols);
	width = sr_malloc((ncols + 1) * sizeof *width);
	for (k = 0; k < ncols; k++) {
		width[k] = (int)strlen(json_string_value(json_array_get(cols, k)));
		json_array_foreach(table_rows, i, r) {
			int w;

			cell(buf, sizeof buf, json_object_get(r, json_string_value(json_array_get(cols, k))));
			if ((w = (int)strlen(buf)) > width[k])
				width[k] = w;
		}
	}
	for (k = 0; k < ncols; k++)
		printf("%-*s%s", k + 1 < ncols ? width[k] : 0, json_string_value(json_array_get(cols, k)),
		    k + 1 < ncols ? "  " : "\n");
	json_array_foreach(table_rows, i, r)
		for (k = 0; k < ncols; k++) {
			cell(buf, sizeof buf, json_object_get(r, json_string_value(json_array_get(cols, k))));
			if (k + 1 < ncols)
				printf("%-*s  ", width[k], buf);
			else
				printf("%s\n", buf); /* no trailing blanks */
		}
	free(width);
	json_decref(cols);
	json_decref(table_rows);
	table_rows = NULL;
}
