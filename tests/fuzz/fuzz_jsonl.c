/* fuzz_jsonl.c - the JSONL reader (sr_reader_next) and sr_json_line.
 *
 * Feeds: byte 0 picks how the input arrives (write sizes from 1 byte to
 * 32 KiB); the rest, expanded (fuzz.h: 0xFF H L is a run, so lines over
 * 64 KiB are reachable), is written into a pipe piece by piece, the reader
 * taking what is there without blocking (SR_READ_AGAIN between pieces, as
 * sr-exec reads a slow pipe), then the write end is closed and the rest is
 * read blocking.
 *
 * Checks, against a plain model of the documented contract (lines split at
 * '\n', a CR before it dropped, a last line without newline still a line,
 * one of over SR_LINE_MAX bytes or holding a NUL reported as bad, by
 * number): every result is the model's next, with the same text; line
 * numbers go up by one per line, bad lines included; a returned line has no
 * NUL and at most SR_LINE_MAX bytes; AGAIN only once every complete line
 * written was answered; EOF only once everything was, and then again on
 * every call. sr_json_line (on the first 256 lines) gives an object or NULL
 * with "malformed JSON"/"not a JSON object", and an object it gives
 * survives a dump and a second parse unchanged. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "sr.h"
#include "fuzz.h"

/* Lines of an input parsed as JSON: the first few hundred. */
#define JSON_LINES 256

/* The model: the next thing the reader must return from s[*pos..n). */
struct want {
	int rc;
	const char *text;
	size_t len;
};

static struct want
model_next(const char *s, size_t n, size_t *pos)
{
	struct want w = { SR_READ_EOF, NULL, 0 };
	const char *start = s + *pos, *nl;
	size_t len;
	int terminated;

	if (*pos >= n)
		return w;
	nl = memchr(start, '\n', n - *pos);
	terminated = nl != NULL;
	len = terminated ? (size_t)(nl - start) : n - *pos;
	*pos += len + terminated;
	if (len > SR_LINE_MAX) {
		w.rc = SR_READ_BAD;
		return w;
	}
	if (terminated && len > 0 && start[len - 1] == '\r')
		len--;
	if (memchr(start, '\0', len)) {
		w.rc = SR_READ_BAD;
		return w;
	}
	w.rc = SR_READ_LINE;
	w.text = start;
	w.len = len;
	return w;
}

static void
check_json(const char *line)
{
	char err[256];
	json_t *o, *again;
	char *dump;

	memset(err, 0x55, sizeof err);
	o = sr_json_line(line, err, sizeof err);
	if (!o) {
		FUZZ_CHECK(fuzz_terminated(err, sizeof err), "err not terminated");
		FUZZ_CHECK(!strncmp(err, "malformed JSON", 14) || !strcmp(err, "not a JSON object"),
		    "unexpected error text '%s'", err);
		return;
	}
	FUZZ_CHECK(json_is_object(o), "sr_json_line gave a non-object");
	dump = json_dumps(o, JSON_COMPACT);
	FUZZ_CHECK(dump != NULL, "an object it parsed cannot be dumped");
	again = sr_json_line(dump, err, sizeof err);
	FUZZ_CHECK(again && json_equal(o, again), "'%s' does not parse back: %s", dump,
	    again ? "not equal" : err);
	json_decref(again);
	free(dump);
	json_decref(o);
}

/* Take everything the reader returns now; stop at AGAIN (block = 0) or EOF. */
static int
drain(struct sr_reader *rd, int block, const char *s, size_t n, size_t *pos, size_t written)
{
	for (;;) {
		char *line = NULL;
		long before = rd->lineno;
		int rc = sr_reader_next(rd, &line, block);
		struct want w;

		if (rc == SR_READ_AGAIN) {
			FUZZ_CHECK(!block, "AGAIN from a blocking read");
			FUZZ_CHECK(rd->lineno == before, "AGAIN moved the line number");
			/* Nothing whole is buffered: every complete line written
			 * so far has been answered. */
			FUZZ_CHECK(!memchr(s + *pos, '\n', written - *pos),
			    "AGAIN with a complete line written (line %ld)", rd->lineno + 1);
			return rc;
		}
		w = model_next(s, n, pos);
		FUZZ_CHECK(*pos <= written, "a line returned before all of it was written");
		FUZZ_CHECK(rc == w.rc, "line %ld: got %d, want %d", before + 1, rc, w.rc);
		if (rc == SR_READ_EOF) {
			FUZZ_CHECK(rd->lineno == before, "EOF moved the line number");
			FUZZ_CHECK(sr_reader_next(rd, &line, block) == SR_READ_EOF, "EOF is not final");
			return rc;
		}
		FUZZ_CHECK(rd->lineno == before + 1, "line number went from %ld to %ld", before,
		    rd->lineno);
		if (rc == SR_READ_BAD) {
			FUZZ_CHECK(rd->why && *rd->why, "a bad line without a reason");
			continue;
		}
		FUZZ_CHECK(line != NULL, "no line");
		FUZZ_CHECK(strlen(line) == rd->linelen, "line holds a NUL or linelen is wrong");
		FUZZ_CHECK(rd->linelen <= SR_LINE_MAX, "line of %zu bytes", rd->linelen);
		FUZZ_CHECK(rd->linelen == w.len && !memcmp(line, w.text, w.len),
		    "line %ld: text differs from the input", rd->lineno);
		/* A run of newlines is many thousand lines: parsing each as
		 * JSON would cost more than the reading being fuzzed. */
		if (rd->lineno <= JSON_LINES)
			check_json(line);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sr_reader rd;
	int fds[2];
	size_t n, pos = 0, written = 0, piece;
	char *s;

	if (size < 1)
		return 0;
	s = fuzz_expand(data + 1, size - 1, &n);
	/* Pieces of 2^k bytes, but never more than 256 of them: a byte at a
	 * time over a quarter megabyte would be slow, not more thorough. */
	piece = (size_t)1 << (data[0] % 16);
	if (piece < n / 256 + 1)
		piece = n / 256 + 1;
	if (pipe(fds) < 0)
		abort();
	/* Non-blocking writes: a full pipe means "let the reader drain it". */
	if (fcntl(fds[1], F_SETFL, O_NONBLOCK) < 0)
		abort();
	sr_reader_init(&rd, fds[0]);
	while (written < n) {
		size_t k = n - written < piece ? n - written : piece;
		ssize_t w = write(fds[1], s + written, k);

		if (w < 0 && errno != EAGAIN)
			abort();
		if (w > 0)
			written += (size_t)w;
		drain(&rd, 0, s, n, &pos, written);
	}
	close(fds[1]);
	drain(&rd, 1, s, n, &pos, written);
	FUZZ_CHECK(pos == n, "EOF with %zu bytes unanswered", n - pos);
	FUZZ_CHECK(rd.err == 0, "read error %d", rd.err);
	sr_reader_free(&rd);
	close(fds[0]);
	return 0;
}
