/* test_jsonl.c - the line reader: line numbers, CRLF, a last line without
 * newline, an over-long line and a line holding a NUL that are reported
 * without losing the next, a read error, and duplicate JSON keys. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sr.h"
#include "unit.h"

int
main(void)
{
	struct sr_reader rd;
	int fds[2];
	char *line, *big;
	size_t bign = SR_LINE_MAX + 10;

	if (pipe(fds) < 0)
		return 2;
	if (fork() == 0) {
		close(fds[0]);
		big = malloc(bign + 1);
		memset(big, 'x', bign);
		big[bign] = '\n';
		if (write(fds[1], "one\r\ntwo\n", 9) < 0 || write(fds[1], big, bign + 1) < 0 ||
		    write(fds[1], "\n{\"a\":1}\0{\"a\":2}\nlast", 21) < 0)
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	sr_reader_init(&rd, fds[0]);
	CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_LINE && !strcmp(line, "one"), "CRLF stripped");
	CHECK(rd.lineno == 1, "line 1");
	CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_LINE && !strcmp(line, "two"), "second line");
	CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_BAD && rd.lineno == 3, "long line reported as line 3");
	CHECK(strstr(rd.why, "longer") != NULL, "says why: %s", rd.why);
	CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_LINE && !strcmp(line, "") && rd.lineno == 4, "empty line 4");
	CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_BAD && rd.lineno == 5, "a NUL makes line 5 bad");
	CHECK(strstr(rd.why, "NUL") != NULL, "says why: %s", rd.why);
	CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_LINE && !strcmp(line, "last") && rd.lineno == 6,
	    "last line without newline");
	CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_EOF, "then EOF");
	CHECK(rd.err == 0, "no read error");
	sr_reader_free(&rd);

	/* An over-long last line without newline is answered whatever its
	 * length: also when it ends exactly where the reader's buffer does. */
	{
		size_t cap = SR_LINE_MAX + 4096; /* the buffer of sr_reader_init */

		if (pipe(fds) < 0)
			return 2;
		if (fork() == 0) {
			close(fds[0]);
			big = malloc(cap);
			memset(big, 'y', cap);
			if (write(fds[1], "{}\n", 3) < 0 || write(fds[1], big, cap) < 0)
				_exit(1);
			_exit(0);
		}
		close(fds[1]);
		sr_reader_init(&rd, fds[0]);
		CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_LINE && rd.lineno == 1, "line 1");
		CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_BAD && rd.lineno == 2,
		    "a last line of %zu bytes is reported as line 2", cap);
		CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_EOF, "then EOF");
		sr_reader_free(&rd);
		close(fds[0]);
		wait(NULL);
	}

	/* A directory cannot be read: input ends, and the error is kept. */
	{
		int fd = open("/", O_RDONLY);

		sr_reader_init(&rd, fd);
		CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_EOF, "EOF on a read error");
		CHECK(rd.err == EISDIR, "the read error is kept: %d", rd.err);
		sr_reader_free(&rd);
		close(fd);
	}
	{
		char err[160];
		json_t *o;

		CHECK(!sr_json_line("{\"outcome\":\"ok\",\"outcome\":\"fail\"}", err, sizeof err),
		    "duplicate keys refused");
		CHECK(strstr(err, "duplicate") != NULL, "says so: %s", err);
		CHECK(!sr_json_line("[1]", err, sizeof err) && strstr(err, "object"), "an array is no record");
		CHECK((o = sr_json_line("{\"a\":1}", err, sizeof err)) != NULL, "an object is");
		json_decref(o);
	}
	/* A message quoting the input, cut inside a character by its buffer,
	 * keeps what it has: a rejection always says why. So does text with a
	 * byte that is not UTF-8 inside it (an operator's Latin-1): U+FFFD. */
	{
		json_t *o = json_object(), *t;

		sr_rejected(o, 1, "unknown card fact \"caf\xc3");
		CHECK(sr_jstr(o, "error") && !strcmp(sr_jstr(o, "error"), "unknown card fact \"caf\xef\xbf\xbd"),
		    "the cut character shown as U+FFFD, the message kept: %s", sr_jstr(o, "error"));
		json_decref(o);
		t = sr_json_text("caf\xe9 dispute \xc3\xa9");
		CHECK(!strcmp(json_string_value(t), "caf\xef\xbf\xbd dispute \xc3\xa9"), "Latin-1 inside: %s",
		    json_string_value(t));
		json_decref(t);
	}
	CHECK(sr_utf8_valid("") && sr_utf8_valid("plain") && sr_utf8_valid("caf\xc3\xa9 \xf0\x9f\x98\x80"),
	    "UTF-8 is valid");
	CHECK(!sr_utf8_valid("caf\xe9") && !sr_utf8_valid("\xc0\xaf") && !sr_utf8_valid("\xed\xa0\x80") &&
	    !sr_utf8_valid("\xf4\x90\x80\x80") && !sr_utf8_valid("\xe2\x82"),
	    "Latin-1, overlong, a surrogate, past U+10FFFF and a cut sequence are not");
	return unit_done("test_jsonl");
}
