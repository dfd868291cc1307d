/* test_jsonl.c - the line reader: line numbers, CRLF, a last line without
 * newline, and an over-long line that is skipped without losing the next. */
#include <stdlib.h>
#include <string.h>
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
		    write(fds[1], "\nlast", 5) < 0)
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	sr_reader_init(&rd, fds[0]);
	CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_LINE && !strcmp(line, "one"), "CRLF stripped");
	CHECK(rd.lineno == 1, "line 1");
	CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_LINE && !strcmp(line, "two"), "second line");
	CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_TOOLONG && rd.lineno == 3, "long line reported as line 3");
	CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_LINE && !strcmp(line, "") && rd.lineno == 4, "empty line 4");
	CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_LINE && !strcmp(line, "last") && rd.lineno == 5,
	    "last line without newline");
	CHECK(sr_reader_next(&rd, &line, 1) == SR_READ_EOF, "then EOF");
	sr_reader_free(&rd);
	return unit_done("test_jsonl");
}
