/* sr_csv.c - CSV with a header row into JSON objects, one per row (libcsv).
 *
 * Quoted fields, embedded commas and newlines, CRLF and a UTF-8 BOM are
 * handled; each row is an object keyed by the header's names, with empty
 * cells left out ("an empty cell leaves that fact unchanged"). Rows carry
 * the physical line they start on, so errors name the line a person sees in
 * an editor. Input is fed to libcsv line by line for exactly that reason.
 *
 * A quote opened and never closed would swallow every following row into
 * one field. The lines of a row that spans lines are kept; when its quote
 * is still open at the end of input (or after SR_LINE_MAX bytes), the row
 * is rejected as "unterminated quote" and the lines after its first are
 * read again as rows of their own: a stray quote costs one row, not the
 * rest of the file. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <csv.h>

#include "sr.h"

struct sr_csv {
	struct sr_reader rd;
	struct csv_parser p;
	char **hdr;
	int nhdr;
	char **fields;     /* the row being assembled */
	int nfields, capfields;
	int row_done;      /* a row completed during the last feed */
	int rows_ended;    /* how many rows the last line ended (see next_fields) */
	long row_start;    /* physical line where the current row started */
	int eof;
	/* see the top; replay: next last, and a line that could not be read
	 * (text NULL) is kept there with why, to be answered in its turn */
	struct held { char *text; long no; const char *why; } *held, *replay;
	int nheld, capheld, nreplay, capreplay;
	size_t held_bytes;
};

static void
push(struct held **v, int *n, int *cap, const char *text, long no, const char *why)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		*v = sr_realloc(*v, (size_t)*cap * sizeof **v);
	}
	(*v)[*n].text = text ? sr_strdup(text) : NULL;
	(*v)[*n].no = no;
	(*v)[*n].why = why;
	(*n)++;
}

static void drop_held(struct sr_csv *c);

/* The row that began on held[0] is bad: the lines after its first (and the
 * line in hand, if any) are read again, in order, before anything else. */
static void
give_back(struct sr_csv *c, const char *line, long no)
{
	if (line)
		push(&c->held, &c->nheld, &c->capheld, line, no, NULL);
	c->row_start = c->nheld ? c->held[0].no : no;
	/* replay is a stack, the next line last: these go on top, in order,
	 * ahead of any still waiting from an earlier rejection. */
	for (int i = c->nheld - 1; i >= 1; i--)
		push(&c->replay, &c->nreplay, &c->capreplay, c->held[i].text, c->held[i].no, NULL);
	drop_held(c);
}

static void
drop_held(struct sr_csv *c)
{
	for (int i = 0; i < c->nheld; i++)
		free(c->held[i].text);
	c->nheld = 0;
	c->held_bytes = 0;
}

static void
on_field(void *s, size_t len, void *data)
{
	struct sr_csv *c = data;

	if (c->nfields == c->capfields) {
		c->capfields = c->capfields ? c->capfields * 2 : 16;
		c->fields = sr_realloc(c->fields, (size_t)c->capfields * sizeof *c->fields);
	}
	c->fields[c->nfields] = sr_malloc(len + 1);
	if (s)
		memcpy(c->fields[c->nfields], s, len);
	c->fields[c->nfields][s ? len : 0] = '\0';
	c->nfields++;
}

static void
on_row(int term, void *data)
{
	(void)term;
	((struct sr_csv *)data)->row_done = 1;
	((struct sr_csv *)data)->rows_ended++;
}

static void
clear_fields(struct sr_csv *c)
{
	for (int i = 0; i < c->nfields; i++)
		free(c->fields[i]);
	c->nfields = 0;
}

struct sr_csv *
sr_csv_new(int fd)
{
	struct sr_csv *c = sr_malloc(sizeof *c);

	memset(c, 0, sizeof *c);
	sr_reader_init(&c->rd, fd);
	csv_init(&c->p, CSV_STRICT | CSV_APPEND_NULL);
	return c;
}

int
sr_csv_ready(struct sr_csv *c)
{
	return c->nreplay > 0 || c->eof || sr_reader_wait(&c->rd, 0);
}

int
sr_csv_failed(const struct sr_csv *c)
{
	return sr_reader_failed(&c->rd);
}

void
sr_csv_free(struct sr_csv *c)
{
	if (!c)
		return;
	clear_fields(c);
	free(c->fields);
	for (int i = 0; i < c->nhdr; i++)
		free(c->hdr[i]);
	free(c->hdr);
	csv_free(&c->p);
	sr_reader_free(&c->rd);
	drop_held(c);
	free(c->held);
	for (int i = 0; i < c->nreplay; i++)
		free(c->replay[i].text);
	free(c->replay);
	free(c);
}

/* Feed lines until a row completes. 1: row in c->fields; 0: EOF;
 * -1: error in err (the row is skipped, parsing goes on). */
static int
next_fields(struct sr_csv *c, char *err, size_t errlen)
{
	char *line;
	int rc;

	c->row_done = 0;
	clear_fields(c);
	while (!c->row_done) {
		char *mine = NULL;
		const char *bad = NULL, *why;
		long no;

		if (c->nreplay > 0) {
			/* Lines given back by an unterminated quote, oldest first
			 * (the top of the stack). */
			struct held *h = &c->replay[--c->nreplay];

			line = mine = h->text;
			no = h->no;
			why = h->why;
			rc = mine ? SR_READ_LINE : SR_READ_BAD;
		} else {
			if (c->eof)
				return 0;
			rc = sr_reader_next(&c->rd, &line, 1);
			no = c->rd.lineno;
			why = c->rd.why;
		}
		if (c->p.pstate == 0 && c->nfields == 0)
			c->row_start = no; /* a row begins on this line */
		if (rc == SR_READ_EOF && c->nheld == 0) {
			c->eof = 1;
			csv_fini(&c->p, on_field, on_row, c);
			if (csv_error(&c->p) != CSV_SUCCESS) {
				snprintf(err, errlen, "%s", csv_strerror(csv_error(&c->p)));
				return -1;
			}
			break;
		}
		if (rc == SR_READ_EOF || (rc == SR_READ_LINE && c->held_bytes > SR_LINE_MAX)) {
			/* The quote of the row on held[0] never closed: reject it and
			 * read the lines after it again, as rows of their own. */
			if (rc == SR_READ_EOF)
				c->eof = 1;
			give_back(c, rc == SR_READ_EOF ? NULL : line, no);
			free(mine);
			csv_free(&c->p);
			csv_init(&c->p, CSV_STRICT | CSV_APPEND_NULL);
			clear_fields(c);
			snprintf(err, errlen, "unterminated quote: a field opened with '\"' is never closed");
			return -1;
		}
		if (rc == SR_READ_BAD) {
			/* Drop the row in progress and start afresh on the next line. */
			csv_free(&c->p);
			csv_init(&c->p, CSV_STRICT | CSV_APPEND_NULL);
			clear_fields(c);
			if (c->nheld) {
				/* A quote opened lines ago runs into this line: as for
				 * a quote never closed, its row is rejected and the
				 * lines after its first are read again, then this one
				 * is answered. Dropped, they went unanswered. */
				push(&c->replay, &c->nreplay, &c->capreplay, NULL, no, why);
				give_back(c, NULL, no);
				snprintf(err, errlen, "a quoted field runs into line %ld (%s)", no, why);
				return -1;
			}
			c->row_start = no;
			snprintf(err, errlen, "%s", why);
			return -1;
		}
		/* A BOM (Excel, PowerShell's Export-Csv) is dropped before libcsv
		 * sees it: in front of a quoted name, libcsv would read it as
		 * text before the quote and refuse the header. Line 1 is never
		 * given back, so it is dropped once. */
		if (no == 1 && !strncmp(line, "\xEF\xBB\xBF", 3))
			line += 3;
		c->rows_ended = 0;
		if (csv_parse(&c->p, line, strlen(line), on_field, on_row, c) != strlen(line) ||
		    csv_parse(&c->p, "\n", 1, on_field, on_row, c) != 1)
			bad = csv_error(&c->p) == CSV_EPARSE ?
			    "a quote inside an unquoted field, or text after a closing quote" :
			    csv_strerror(csv_error(&c->p));
		else if (c->rows_ended > 1 || (c->rows_ended == 1 && c->p.pstate != 0))
			/* libcsv ends a row at a bare CR as well: the fields of
			 * the row after it would be added to the row before it,
			 * its values read as that row's other columns. */
			bad = "a carriage return inside a line (CR alone is no line end here)";
		if (bad) {
			snprintf(err, errlen, "malformed CSV: %s", bad);
			csv_free(&c->p);
			csv_init(&c->p, CSV_STRICT | CSV_APPEND_NULL);
			clear_fields(c);
			if (c->nheld)
				give_back(c, line, no); /* a quote opened lines ago went wrong */
			free(mine);
			return -1;
		}
		if (c->row_done)
			drop_held(c);
		else if (c->p.pstate == 0 && c->nfields == 0) {
			/* A blank line outside any row (libcsv skips it): nothing
			 * is in progress, so nothing to keep. Held, a trailing
			 * blank line was rejected as an unterminated quote, and
			 * a run of them was given back and held again line by
			 * line without end. */
		} else {
			/* The row goes on to the next line (inside a quote): keep
			 * this one, in case the quote never closes. */
			push(&c->held, &c->nheld, &c->capheld, line, no, NULL);
			c->held_bytes += strlen(line) + 1;
		}
		free(mine);
	}
	return c->row_done ? 1 : 0;
}

int
sr_csv_next(struct sr_csv *c, json_t **row, long *line, char *err, size_t errlen)
{
	int rc;

	*row = NULL;
	if (!c->hdr) {
		if ((rc = next_fields(c, err, errlen)) <= 0) {
			/* Without a header no row can be read: fatal, said once. */
			*line = c->row_start;
			if (rc == 0)
				return 0;
			if (strncmp(err, "header", 6)) {
				char why[200];

				snprintf(why, sizeof why, "%s", err);
				snprintf(err, errlen, "header: %s", why);
			}
			return -2;
		}
		/* The header (its BOM was dropped before parsing). */
		c->hdr = c->fields;
		c->nhdr = c->nfields;
		c->fields = NULL;
		c->nfields = c->capfields = 0;
		for (int i = 0; i < c->nhdr; i++) {
			json_t *name = json_string(c->hdr[i]); /* NULL: not UTF-8 */
			int text = name != NULL;

			json_decref(name);
			if (!c->hdr[i][0] || !text) {
				*line = c->row_start;
				snprintf(err, errlen, "header: column %d %s", i + 1,
				    text ? "has no name" : "is not UTF-8 text");
				return -2; /* no header, no rows: fatal */
			} else {
				for (int j = 0; j < i; j++)
					if (!strcmp(c->hdr[i], c->hdr[j])) {
						*line = c->row_start;
						snprintf(err, errlen, "header: column '%.64s' appears twice (columns %d and %d)",
						    c->hdr[i], j + 1, i + 1);
						return -2;
					}
			}
		}
	}
	rc = next_fields(c, err, errlen);
	*line = c->row_start;
	if (rc <= 0)
		return rc;
	if (c->nfields != c->nhdr && !(c->nfields == 1 && !c->fields[0][0])) {
		snprintf(err, errlen, "row has %d fields, the header %d", c->nfields, c->nhdr);
		return -1;
	}
	*row = json_object();
	for (int i = 0; i < c->nfields; i++) {
		json_t *v;

		if (!c->fields[i][0])
			continue;
		/* JSON strings are UTF-8: a cell in another encoding would
		 * be dropped by jansson, read as empty ("unchanged"). */
		if (!(v = json_string(c->fields[i]))) {
			snprintf(err, errlen, "column '%.64s' is not UTF-8 text", c->hdr[i]);
			json_decref(*row);
			*row = NULL;
			return -1;
		}
		json_object_set_new(*row, c->hdr[i], v);
	}
	return 1;
}

/* A CSV cell of a flag: what a JSON request may say (0, 1, true, false),
 * and what exports print for a boolean: psql --csv t and f, Excel TRUE
 * and FALSE, PowerShell True and False. */
int
sr_json_flags(json_t *obj, const char *const *names, char *err, size_t errlen)
{
	static const char *const yes[] = { "true", "t", NULL }, *const no[] = { "false", "f", NULL };

	for (const char *const *n = names; *n; n++) {
		json_t *v = json_object_get(obj, *n);
		const char *s;
		json_t *flag = NULL;

		if (!json_is_string(v))
			continue;
		s = json_string_value(v);
		if (!strcmp(s, "0") || !strcmp(s, "1"))
			flag = json_integer(*s - '0');
		for (int i = 0; !flag && yes[i]; i++)
			if (!strcasecmp(s, yes[i]))
				flag = json_true();
		for (int i = 0; !flag && no[i]; i++)
			if (!strcasecmp(s, no[i]))
				flag = json_false();
		if (!flag) {
			snprintf(err, errlen, "\"%s\" must be 0, 1, true, false, t or f", *n);
			return -1;
		}
		json_object_set_new(obj, *n, flag);
	}
	return 0;
}

int
sr_json_integers(json_t *obj, const char *const *names, char *err, size_t errlen)
{
	for (const char *const *n = names; *n; n++) {
		json_t *v = json_object_get(obj, *n);
		const char *s;
		long long x = 0;

		if (!json_is_string(v))
			continue;
		s = json_string_value(v);
		if (!*s || *s == '-' || *s == '+')
			goto bad;
		for (const char *p = s; *p; p++) {
			if (*p < '0' || *p > '9' || x > (1LL << 53))
				goto bad;
			x = x * 10 + (*p - '0');
		}
		json_object_set_new(obj, *n, json_integer(x));
		continue;
bad:
		snprintf(err, errlen, "\"%s\" must be a non-negative integer", *n);
		return -1;
	}
	return 0;
}
