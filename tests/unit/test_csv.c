/* test_csv.c - CSV rows into objects: BOM, quotes, embedded commas and
 * newlines, CRLF, empty cells, bad rows with the line they start on. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sr.h"
#include "unit.h"

static const char input[] =
	"\xEF\xBB\xBF" "card,carrier,device,note\r\n"
	"C1,c17,D1,plain\r\n"
	"C2,c17,,\"a, b\"\r\n"
	"\"C3\",c17,D2,\"two\r\nlines\"\r\n"
	"C4,c17\r\n"
	"\r\n"
	"C5,\"c\"\"17\",D3,x\r\n";

int
main(void)
{
	int fds[2];
	struct sr_csv *c;
	json_t *row;
	long line;
	char err[128];

	if (pipe(fds) < 0 || write(fds[1], input, sizeof input - 1) < 0)
		return 2;
	close(fds[1]);
	c = sr_csv_new(fds[0]);

	CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 1, "row 1");
	CHECK(line == 2, "row 1 starts on line 2, got %ld", line);
	CHECK(row && !strcmp(sr_jstr(row, "card"), "C1"), "BOM dropped from the first header name");
	CHECK(row && !strcmp(sr_jstr(row, "note"), "plain"), "CRLF dropped");
	json_decref(row);

	CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 1 && line == 3, "row 2 on line 3");
	CHECK(row && !strcmp(sr_jstr(row, "note"), "a, b"), "embedded comma");
	CHECK(row && !json_object_get(row, "device"), "empty cell left out");
	json_decref(row);

	CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 1 && line == 4, "row 3 on line 4");
	CHECK(row && !strcmp(sr_jstr(row, "card"), "C3"), "quoted id");
	CHECK(row && !strcmp(sr_jstr(row, "note"), "two\nlines"), "embedded newline");
	json_decref(row);

	CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == -1 && line == 6, "short row on line 6 rejected, got %ld", line);
	CHECK(strstr(err, "2 fields") != NULL, "says how many fields: %s", err);

	CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 1 && line == 8, "blank line skipped; row on line 8, got %ld", line);
	CHECK(row && !strcmp(sr_jstr(row, "carrier"), "c\"17"), "doubled quote");
	json_decref(row);

	CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 0, "end");
	sr_csv_free(c);

	/* A quote never closed costs its row, not the rows after it. */
	{
		static const char bad[] = "card,carrier\n\"X1,c1\nX2,c1\nX3,\"c1\nX4,c1\n";

		if (pipe(fds) < 0 || write(fds[1], bad, sizeof bad - 1) < 0)
			return 2;
		close(fds[1]);
		c = sr_csv_new(fds[0]);
		CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == -1 && line == 2, "line 2 rejected, got %ld", line);
		CHECK(strstr(err, "quote") != NULL, "says why: %s", err);
		CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 1 && line == 3, "line 3 read again, got %ld", line);
		CHECK(row && !strcmp(sr_jstr(row, "card"), "X2"), "as a row of its own");
		json_decref(row);
		CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == -1 && line == 4, "line 4 rejected, got %ld", line);
		CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 1 && line == 5, "line 5 read, got %ld", line);
		CHECK(row && !strcmp(sr_jstr(row, "card"), "X4"), "X4 kept");
		json_decref(row);
		CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 0, "end");
		sr_csv_free(c);
	}
	/* Blank lines after the last row, even many, are no row: not an
	 * unterminated quote, and read once. */
	{
		static const char head[] = "card,carrier\r\nX1,c1\r\n";
		int n = 0;

		if (pipe(fds) < 0)
			return 2;
		if (fork() == 0) {
			close(fds[0]);
			if (write(fds[1], head, sizeof head - 1) < 0)
				_exit(1);
			for (int i = 0; i < 40000; i++)
				if (write(fds[1], "\r\n", 2) < 0)
					_exit(1);
			_exit(0);
		}
		close(fds[1]);
		c = sr_csv_new(fds[0]);
		CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 1 && line == 2, "the row");
		json_decref(row);
		while (sr_csv_next(c, &row, &line, err, sizeof err) != 0 && n < 10)
			n++;
		CHECK(n == 0, "trailing blank lines read as %d bad rows, the first: %s", n, err);
		sr_csv_free(c);
		close(fds[0]);
		wait(NULL);
	}
	/* A quote open when a line cannot be read (a NUL): its row is
	 * rejected, the lines after it read again, the bad line answered. */
	{
		static const char nul[] = "card,carrier\n\"X1,c1\nX2,c1\nX3\0,c1\nX4,c1\n";
		static const long want[] = { -1, 2, 1, 3, -1, 4, 1, 5 };

		if (pipe(fds) < 0 || write(fds[1], nul, sizeof nul - 1) < 0)
			return 2;
		close(fds[1]);
		c = sr_csv_new(fds[0]);
		for (int i = 0; i < 8; i += 2) {
			int rc = sr_csv_next(c, &row, &line, err, sizeof err);

			CHECK(rc == want[i] && line == want[i + 1], "answer %d: %d on line %ld, want %ld on %ld",
			    i / 2, rc, line, want[i], want[i + 1]);
			if (i == 0)
				CHECK(strstr(err, "runs into line 4") != NULL, "says why: %s", err);
			json_decref(row);
		}
		CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 0, "end");
		sr_csv_free(c);
	}
	/* A cell in another encoding (Latin-1 here) is no JSON string: the
	 * row is rejected, not read with that cell empty. */
	{
		static const char latin[] = "card,carrier,note\nX1,c1,caf\xe9\nX2,c1,ok\n";

		if (pipe(fds) < 0 || write(fds[1], latin, sizeof latin - 1) < 0)
			return 2;
		close(fds[1]);
		c = sr_csv_new(fds[0]);
		CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == -1 && line == 2 && !row,
		    "a Latin-1 cell rejects its row");
		CHECK(strstr(err, "'note' is not UTF-8") != NULL, "says which column: %s", err);
		CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 1 && line == 3, "line 3 read");
		json_decref(row);
		sr_csv_free(c);
	}
	/* A CR alone, unquoted, would end a row in the middle of a line and
	 * give the next row's values to this one's other columns. */
	{
		static const char cr[] = "card,carrier,x,y\nX1,c1\rX2,c2\nX3,c3,\"a\rb\",d\n";

		if (pipe(fds) < 0 || write(fds[1], cr, sizeof cr - 1) < 0)
			return 2;
		close(fds[1]);
		c = sr_csv_new(fds[0]);
		CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == -1 && line == 2,
		    "a CR inside line 2 rejects it, got line %ld", line);
		CHECK(strstr(err, "carriage return") != NULL, "says why: %s", err);
		CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 1 && line == 3, "line 3 read");
		CHECK(row && !strcmp(sr_jstr(row, "x"), "a\rb"), "a quoted CR is text");
		json_decref(row);
		CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == 0, "end");
		sr_csv_free(c);
	}
	/* A header that cannot be read is fatal: no row could be trusted. */
	{
		static const char *const bad[] = { "card,\"carrier\nX1,c1\n", "card,carrier,card\nX1,c1,X2\n",
			"card,carrier,note\xcf\nX1,c1,a\n" };

		for (int i = 0; i < 3; i++) {
			if (pipe(fds) < 0 || write(fds[1], bad[i], strlen(bad[i])) < 0)
				return 2;
			close(fds[1]);
			c = sr_csv_new(fds[0]);
			CHECK(sr_csv_next(c, &row, &line, err, sizeof err) == -2 && line == 1, "bad header %d is fatal", i);
			CHECK(!strncmp(err, "header: ", 8), "says header: %s", err);
			sr_csv_free(c);
		}
	}

	{
		static const char *const ints[] = { "n", "m", NULL };
		json_t *o = json_pack("{ss ss}", "n", "42", "m", "4x");

		CHECK(sr_json_integers(o, ints, err, sizeof err) == -1, "4x is not an integer");
		CHECK(json_integer_value(json_object_get(o, "n")) == 42, "42 converted");
		json_decref(o);
	}
	{
		static const char *const flags[] = { "a", "b", "c", "d", "e", NULL };
		json_t *o = json_pack("{ss ss ss ss ss}", "a", "t", "b", "FALSE", "c", "1", "d", "True", "e", "0");

		CHECK(sr_json_flags(o, flags, err, sizeof err) == 0, "t, FALSE, 1, True, 0 are flags: %s", err);
		CHECK(json_is_true(json_object_get(o, "a")) && json_is_false(json_object_get(o, "b")) &&
		    json_integer_value(json_object_get(o, "c")) == 1 && json_is_true(json_object_get(o, "d")) &&
		    json_integer_value(json_object_get(o, "e")) == 0 && json_is_integer(json_object_get(o, "e")),
		    "flags converted");
		json_object_set_new(o, "e", json_string("yes"));
		CHECK(sr_json_flags(o, flags, err, sizeof err) == -1 && strstr(err, "\"e\" must be 0, 1, true"),
		    "yes is no flag: %s", err);
		json_decref(o);
	}
	return unit_done("test_csv");
}
