/* stat/table.c - sr-stat --table: the records as aligned columns for
 * people (also each frame of --watch). */
#include <stdlib.h>
#include <string.h>

#include "stat.h"

/* A table cell of r's field k: an integer, a ratio, or text. */
static void
cell(char *buf, size_t n, json_t *r, const char *k, int ratio)
{
	json_t *v = json_object_get(r, k);

	if (json_is_real(v))
		snprintf(buf, n, ratio ? "%.2f" : "%.1f", json_real_value(v));
	else if (json_is_integer(v))
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v))
		snprintf(buf, n, "%s", json_string_value(v));
	else
		snprintf(buf, n, ratio ? "0.00" : "");
}

/* The table for people: an account that is paused or behind its breaker,
 * or called below its rate, says so beside its queue (it is held, not
 * stuck). Times in UTC, or with --local in the local zone. */
void
write_table(FILE *f, json_t *records, long long now_ms)
{
	static const struct {
		const char *head, *field;
		int ratio, text; /* a ratio: two decimals; text: left-aligned */
	} cols[] = {
		{ "account", "carrier", 0, 1 }, { "queued", "queued", 0, 0 }, { "due", "due", 0, 0 },
		{ "claimed", "claimed", 0, 0 }, { "confirm", "confirming", 0, 0 }, { "frozen", "frozen", 0, 0 },
		{ "oldest_s", "oldest_due_s", 0, 0 }, { "calls", "calls", 0, 0 },
		{ "success", "success_rate", 1, 0 }, { "amplif", "retry_amplification", 1, 0 },
		{ "confl", "version_conflict_rate", 1, 0 }, { "alerts", "alerts_open", 0, 0 },
		{ "qps_eff", "qps_effective", 0, 0 }, { "qps", "qps", 0, 0 }, { "breaker", "breaker", 0, 1 },
		{ "paused", NULL, 0, 1 },
	};
	enum { NCOLS = sizeof cols / sizeof cols[0], W = 80 };
	size_t nrows = json_array_size(records), i;
	char (*cells)[NCOLS][W] = sr_malloc((nrows + 1) * sizeof *cells); /* the header, then each row */
	int width[NCOLS];
	json_t *r;

	for (int c = 0; c < NCOLS; c++) {
		snprintf(cells[0][c], W, "%s", cols[c].head);
		width[c] = (int)strlen(cols[c].head);
	}
	json_array_foreach(records, i, r) {
		long long until = sr_jint(r, "paused_until_ms", 0);

		for (int c = 0; c < NCOLS; c++) {
			char *b = cells[i + 1][c];

			if (cols[c].field)
				cell(b, W, r, cols[c].field, cols[c].ratio);
			else if (!strcmp(sr_jstr(r, "carrier"), "*")) /* the total: no account's state */
				b[0] = '\0';
			else if (!json_is_true(json_object_get(r, "paused")))
				snprintf(b, W, "no");
			else if (until >= SR_FOREVER_MS)
				snprintf(b, W, "until resumed");
			else
				snprintf(b, W, "until %s", sr_when(until, now_ms));
			if ((int)strlen(b) > width[c])
				width[c] = (int)strlen(b);
		}
	}
	for (size_t row = 0; row <= nrows; row++) {
		char line[NCOLS * (W + 1) + 1];
		size_t len = 0;

		for (int c = 0; c < NCOLS; c++)
			len += (size_t)snprintf(line + len, sizeof line - len, cols[c].text ? "%-*s " : "%*s ",
			    width[c], cells[row][c]);
		while (len > 0 && line[len - 1] == ' ') /* no trailing blanks */
			len--;
		fprintf(f, "%.*s\n", (int)len, line);
	}
	free(cells);
}
