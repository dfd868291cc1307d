/* fuzz_csv.c - the CSV reader (sr_csv_next), sr_json_flags and sr_json_integers, as
 * sr-enqueue and sr-asset use them on --csv input.
 *
 * Feeds: the input, expanded (fuzz.h: 0xFF H L is a run, so the 64 KiB
 * limits on a line and on a row held open by a quote are reachable), from a
 * file.
 *
 * Checks: every call returns 1, 0, -1 or -2; -2 (a bad header) comes only
 * from the first call, with an error saying "header: "; an error is a
 * non-empty string inside err; rows and bad rows come in order, each on a
 * line after the last one reported, within the input and not blank (a row
 * is never reported twice, a quote given back never loops). Every line is
 * answered: between the lines a row spans (its first, and one more per
 * newline in its values; a rejected row, its first only: the others are
 * read again) and the next row reported, every line is blank (spaces, tabs,
 * a CR), unless the span is unknown (a row read whole and rejected: wrong
 * number of fields, not UTF-8). A row is a JSON object of non-empty
 * strings; end of input is final; sr_json_flags then sr_json_integers leave
 * each numeric fact an integer from 0 (a flag: or a boolean), or name it. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sr.h"
#include "fuzz.h"

static FILE *tmp;
/* Where each line starts: line i (from 1) is at start[i], up to the '\n'
 * before start[i + 1]. */
static size_t start[FUZZ_EXPAND_MAX + 3];

/* Line i is blank (spaces, tabs, a CR: libcsv skips it; a BOM at the start
 * of the input is dropped before libcsv sees it). */
static int
blank(const char *s, long i)
{
	size_t k = start[i];

	if (i == 1 && start[2] - k > 3 && !strncmp(s + k, "\xEF\xBB\xBF", 3))
		k += 3;
	for (; k + 1 < start[i + 1]; k++)
		if (s[k] != ' ' && s[k] != '\t' && s[k] != '\r')
			return 0;
	return 1;
}

/* Lines from+1 .. to-1 are blank: no answer is due for them. */
static void
check_blank(const char *s, long from, long to)
{
	for (long i = from + 1; i < to; i++)
		FUZZ_CHECK(blank(s, i), "line %ld holds text but got no answer (lines %ld to %ld)", i,
		    from, to);
}

/* The last line of a header that was read: blank lines skipped, then lines
 * until its quotes are balanced (a strict CSV quote opens or closes a
 * field, or comes doubled). */
static long
header_end(const char *s, long lines)
{
	long i = 1, quotes = 0;

	while (i < lines && blank(s, i))
		i++;
	for (; i < lines; i++) {
		for (size_t k = start[i]; k + 1 < start[i + 1]; k++)
			quotes += s[k] == '"';
		if (quotes % 2 == 0)
			break;
	}
	return i;
}

/* How many lines a row spans: one, and one for each newline (inside
 * quotes) in its values. */
static long
span(json_t *row)
{
	const char *key;
	json_t *v;
	long n = 1;

	json_object_foreach(row, key, v)
		for (const char *p = json_string_value(v); p && *p; p++)
			n += *p == '\n';
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_row(json_t *row)
{
	const char *key;
	json_t *v;
	char err[160];
	int rc;

	FUZZ_CHECK(json_is_object(row), "a row is not an object");
	json_object_foreach(row, key, v) {
		FUZZ_CHECK(*key, "a member without a name");
		FUZZ_CHECK(json_is_string(v) && *json_string_value(v), "'%s' is not a non-empty string",
		    key);
	}
	memset(err, 0x55, sizeof err);
	rc = sr_json_flags(row, sr_flag_facts(), err, sizeof err);
	FUZZ_CHECK(rc == 0 || rc == -1, "sr_json_flags returned %d", rc);
	if (rc == 0) {
		rc = sr_json_integers(row, sr_numeric_facts(), err, sizeof err);
		FUZZ_CHECK(rc == 0 || rc == -1, "sr_json_integers returned %d", rc);
	}
	if (rc < 0) {
		FUZZ_CHECK(fuzz_terminated(err, sizeof err) && (strstr(err, "non-negative integer") ||
		    strstr(err, "must be 0, 1, true, false, t or f")), "error not said");
		return;
	}
	for (const char *const *n = sr_numeric_facts(); *n; n++) {
		v = json_object_get(row, *n);
		FUZZ_CHECK(!v || json_is_boolean(v) || (json_is_integer(v) && json_integer_value(v) >= 0),
		    "'%s' left as %s", *n, json_is_string(v) ? json_string_value(v) : "?");
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sr_csv *c;
	char err[256];
	size_t n;
	long lines = 0, last = 0, done = 0;
	char *s = fuzz_expand(data, size, &n);
	int fd, unknown = 0;

	if (!tmp && !(tmp = tmpfile()))
		abort();
	fd = fileno(tmp);
	if (ftruncate(fd, 0) < 0 || pwrite(fd, s, n, 0) != (ssize_t)n || lseek(fd, 0, SEEK_SET) < 0)
		abort();
	/* Physical lines, as an editor numbers them. */
	start[1] = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '\n')
			start[++lines + 1] = i + 1;
	if (n && s[n - 1] != '\n')
		start[++lines + 1] = n + 1;

	c = sr_csv_new(fd);
	for (int call = 0;; call++) {
		json_t *row = (json_t *)1;
		long line = -1;
		int rc;

		memset(err, 0x55, sizeof err);
		rc = sr_csv_next(c, &row, &line, err, sizeof err);
		FUZZ_CHECK(rc >= -2 && rc <= 1, "returned %d", rc);
		FUZZ_CHECK(rc == 1 ? row != NULL : row == NULL, "rc %d with row %p", rc, (void *)row);
		if (rc == 0) {
			FUZZ_CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 0 && !row,
			    "end of input is not final");
			if (!unknown && call > 0)
				check_blank(s, done, lines + 1);
			break;
		}
		FUZZ_CHECK(line >= 1 && line <= lines, "line %ld of %ld", line, lines);
		if (rc == -2) {
			FUZZ_CHECK(call == 0, "a bad header after %d rows", call);
			FUZZ_CHECK(fuzz_terminated(err, sizeof err) && !strncmp(err, "header: ", 8),
			    "header error '%.40s'", err);
			break;
		}
		if (call == 0)
			done = header_end(s, lines);
		FUZZ_CHECK(line > last, "line %ld reported after line %ld", line, last);
		last = line;
		if (!unknown)
			check_blank(s, done, line);
		/* No row starts on a blank line (one too long to read is
		 * answered, whatever it holds). */
		FUZZ_CHECK(!blank(s, line) || start[line + 1] - start[line] > SR_LINE_MAX + 1,
		    "blank line %ld answered: %s", line, rc == 1 ? "a row" : err);
		if (rc == -1) {
			FUZZ_CHECK(fuzz_terminated(err, sizeof err) && *err, "bad row without an error");
			/* Rejected, a row's other lines are read again - but
			 * one with the wrong number of fields, or a cell not
			 * UTF-8, was read whole. */
			done = line;
			unknown = strstr(err, "fields, the header") || strstr(err, "not UTF-8");
			continue;
		}
		done = line + span(row) - 1;
		unknown = 0;
		FUZZ_CHECK(done <= lines, "a row of line %ld spans past the end", line);
		check_row(row);
		json_decref(row);
	}
	FUZZ_CHECK(sr_csv_failed(c) == 0, "a read error on a file");
	sr_csv_free(c);
	return 0;
}
