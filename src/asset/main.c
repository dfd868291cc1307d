/* sr-asset - load card and device facts into the asset mirror the judgment reads.
 *
 * A card row has "card" and "carrier" plus any card fact; a device row has
 * "device" and no "card", plus any device fact. JSONL by default, CSV with a
 * header row with --csv (an empty cell leaves that fact unchanged). Rows are
 * validated like sr-enqueue's requests, and each input row gets one output
 * line, in order.
 *
 * Device membership (the cards of a device, which dev-eval evaluates
 * together) follows the card's "device" fact: a card that moves leaves the
 * old device's member set. A card stays with its account: a row naming
 * another carrier than the mirror has is rejected, since the card's command
 * state lives under its account.
 *
 * An export is a picture taken at some time: every fact is written as of
 * it (a row's "as_of", else --as-of, else when srq receives the row), and a
 * fact stored as of a later time is not written over (facts_write.lua): a
 * status srq learned at the carrier after the export, a renewal sent since.
 * Re-importing a stale export then undoes nothing and costs no call.
 *
 * Batched: each batch is two pipelined round trips (read the cards' current
 * facts; write facts and membership), and a third when a card leaves a
 * device (its device fact, once it has left), so a million rows load in
 * seconds, not hours.
 *
 * This file reads the options and the rows and answers each; batch.c
 * writes a batch of them.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "asset.h"

/* The usage text; %s: the card facts, the device facts (sr_facts.c). */
static const char usage_fmt[] =
"usage: sr-asset [--csv] [--as-of TIME] [--progress | --no-progress] < facts.jsonl > results.jsonl\n"
"\n"
"Load card and device facts into the asset mirror (the facts sr-enqueue, sr-exec\n"
"and dev-eval judge from). One result line per input row, in order. A card's\n"
"account is known from then on (sr-stat, sr-admin limits), before any request.\n"
"\n"
"Rows (JSONL, or CSV with a header row naming the same fields):\n"
"  {\"card\":\"8986...\",\"carrier\":\"c17\",\"device\":\"D42\",\"pkg_expires_at\":1798675200,\"status\":\"active\"}\n"
"  {\"device\":\"D42\",\"pkg_expires_at\":0,\"disabled\":0}\n"
"Card facts: %s.\n"
"Device facts: %s (pkg_expires_at 0: no device package).\n"
"  A row may say when it was true: \"as_of\" (epoch ms, or ISO-8601 with a zone).\n"
"Result: {\"line\":1,\"card\":\"...\",\"carrier\":\"c17\",\"status\":\"loaded\"}; status loaded,\n"
"  rejected (with \"error\"), error (Redis failed); \"stale_facts\": the row's facts not\n"
"  written, the stored ones being as of a later time (a status srq saw at the carrier\n"
"  after the export, a renewal sent since); \"status_kept\":true when status is one.\n"
"\n"
"Options:\n"
"  --csv            the input is CSV with a header row (quotes, CRLF and a BOM are fine;\n"
"                   a flag cell is 0, 1, true, false, t or f, in any case)\n"
"  --progress       rows and rate on stderr every second (default when stderr is a terminal)\n"
"  --as-of TIME     when the export was taken, for rows that do not say (ISO-8601:\n"
"                   2026-12-01T10:00Z, or without a zone the local zone's (TZ), said on\n"
"                   stderr, refused where it skips or repeats the time; epoch ms, or 2h:\n"
"                   that long ago; without it, when srq receives the row): no fact\n"
"                   stored as of a later time is written over\n"
"  --redis URL, --prefix P, -h/--help, --version\n"
"Exit: 0 all loaded, 1 some rows rejected, 2 usage, 3 Redis unavailable.\n"
"Example:\n"
"  psql --csv -c 'select card, carrier, device, pkg_expires_at from cards' | sr-asset --csv | jq -c 'select(.status != \"loaded\")'\n";
static char usage[4096];

struct sr_config cfg;
struct sr_redis rds;
int redis_up;
static int csv;
static long long as_of; /* --as-of, Redis ms; 0: when srq receives each row */

static void
validate(struct row *r)
{
	static const char *const card_own[] = { "card", "carrier", "as_of", NULL };
	static const char *const dev_own[] = { "device", "as_of", NULL };
	json_t *o = r->obj;

	r->st = ST_REJECTED;
	if (!json_is_object(o)) {
		snprintf(r->error, sizeof r->error, "a row must be a JSON object");
		return;
	}
	r->as_of = as_of;
	if (json_object_get(o, "as_of") &&
	    (r->as_of = sr_json_as_of(json_object_get(o, "as_of"), r->error, sizeof r->error)) < 0)
		return;
	r->card = sr_jstr(o, "card");
	r->carrier = sr_jstr(o, "carrier");
	r->device = sr_jstr(o, "device");
	if (csv && (sr_json_flags(o, sr_flag_facts(), r->error, sizeof r->error) < 0 ||
	    sr_json_integers(o, sr_numeric_facts(), r->error, sizeof r->error) < 0))
		return;
	if (json_object_get(o, "card")) {
		if (!sr_valid_id(r->card)) {
			snprintf(r->error, sizeof r->error, "\"card\" must be an id [A-Za-z0-9_.-]{1,64}");
			return;
		}
		if (!sr_valid_id(r->carrier)) {
			snprintf(r->error, sizeof r->error, "a card row needs \"carrier\", an id [A-Za-z0-9_.-]{1,64}");
			return;
		}
		if (sr_check_facts(o, SR_FACTS_CARD, card_own, r->error, sizeof r->error) < 0)
			return;
	} else if (json_object_get(o, "device")) {
		if (!sr_valid_id(r->device)) {
			snprintf(r->error, sizeof r->error, "\"device\" must be an id [A-Za-z0-9_.-]{1,64}");
			return;
		}
		if (sr_check_facts(o, SR_FACTS_DEVICE, dev_own, r->error, sizeof r->error) < 0)
			return;
	} else {
		snprintf(r->error, sizeof r->error, "a row needs \"card\" (a card) or \"device\" (a device)");
		return;
	}
	r->st = ST_PENDING;
}

static int
emit(struct row *rows, int n)
{
	int status = SR_EX_OK;

	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		json_t *o = json_object();

		json_object_set_new(o, "line", json_integer(r->line));
		if (r->card)
			json_object_set_new(o, "card", json_string(r->card));
		else if (r->device)
			json_object_set_new(o, "device", json_string(r->device));
		if (r->card && r->carrier)
			json_object_set_new(o, "carrier", json_string(r->carrier));
		if (r->st == ST_DONE) {
			json_object_set_new(o, "status", json_string("loaded"));
			if (r->stale) {
				json_object_set(o, "stale_facts", r->stale);
				if (sr_jarray_has(r->stale, "status"))
					json_object_set_new(o, "status_kept", json_true());
			}
		}
		else if (r->st == ST_REJECTED)
			status = sr_worst(status, sr_rejected(o, r->line, r->error));
		else {
			json_object_set_new(o, "status", json_string("error"));
			json_object_set_new(o, "error", json_string(r->error[0] ? r->error : "not loaded"));
			status = sr_worst(status, SR_EX_BACKEND);
		}
		sr_emit(o);
		json_decref(r->obj);
		r->obj = NULL;
		json_decref(r->stale);
		r->stale = NULL;
	}
	sr_flush();
	return status;
}

/* Read the next row: 1 a row (maybe already rejected), 0 end, -2 fatal,
 * -1 none available without waiting (only when !block). */
static int
next_row(struct sr_reader *rd, struct sr_csv *c, struct row *r, int block)
{
	memset(r, 0, sizeof *r);
	if (c && !block && !sr_csv_ready(c))
		return -1;
	if (c) {
		int rc = sr_csv_next(c, &r->obj, &r->line, r->error, sizeof r->error);

		if (rc == 0 || rc == -2)
			return rc;
		if (rc == -1)
			r->st = ST_REJECTED;
		else
			validate(r);
		return 1;
	} else {
		char *line;
		int rc = sr_reader_next(rd, &line, block);

		if (rc == SR_READ_EOF)
			return 0;
		if (rc == SR_READ_AGAIN)
			return -1;
		r->line = rd->lineno;
		if (rc == SR_READ_BAD) {
			r->st = ST_REJECTED;
			snprintf(r->error, sizeof r->error, "%s", rd->why);
		} else if (!(r->obj = sr_json_line(line, r->error, sizeof r->error))) {
			r->st = ST_REJECTED;
		} else
			validate(r);
		return 1;
	}
}

int
main(int argc, char *argv[])
{
	enum { O_CSV = 1, O_PROGRESS, O_NO_PROGRESS, O_AS_OF };
	static const struct option longopts[] = {
		SR_COMMON_LONGOPTS,
		{ "csv", no_argument, NULL, O_CSV },
		{ "progress", no_argument, NULL, O_PROGRESS },
		{ "no-progress", no_argument, NULL, O_NO_PROGRESS },
		{ "as-of", required_argument, NULL, O_AS_OF },
		{ NULL, 0, NULL, 0 },
	};
	static struct row rows[BATCH];
	struct sr_reader rd;
	struct sr_csv *c = NULL;
	int opt, rc, n = 0, status = SR_EX_OK, progress = isatty(STDERR_FILENO);
	long total = 0;
	int64_t t0 = sr_mono_ms(), last = t0;
	const char *as_of_opt = NULL;

	sr_prog = "sr-asset";
	snprintf(usage, sizeof usage, usage_fmt, sr_facts_list(SR_FACTS_CARD, "carrier", 12, "  "),
	    sr_facts_list(SR_FACTS_DEVICE, NULL, 14, "  "));
	sr_config_init(&cfg);
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case O_CSV: csv = 1; break;
		case O_PROGRESS: progress = 1; break;
		case O_NO_PROGRESS: progress = 0; break;
		case O_AS_OF: as_of_opt = optarg; break;
		default:
			if (!sr_config_option(&cfg, opt, optarg, usage))
				sr_usage(SR_EX_USAGE, usage);
		}
	}
	sr_no_operands(argc, argv, usage);
	redis_up = sr_redis_open_filter(&rds, &cfg, "row is answered with status \"error\"");
	if (as_of_opt)
		as_of = sr_as_of_option(&rds, redis_up, as_of_opt);
	if (csv)
		c = sr_csv_new(STDIN_FILENO);
	else
		sr_reader_init(&rd, STDIN_FILENO);
	for (;;) {
		/* Block for the first row of a batch, then take what is ready:
		 * rows fed slowly (a pipe, a FIFO) are answered as they come. */
		rc = next_row(&rd, c, &rows[n], n == 0);
		if (rc == -2) {
			fprintf(stderr, "%s: line %ld: %s\n", sr_prog, rows[n].line, rows[n].error);
			status = SR_EX_USAGE;
			break;
		}
		if (rc == 1)
			n++;
		if (n > 0 && (n == BATCH || rc == 0 || rc == -1)) {
			int w = 0;

			if (process(rows, n) < 0 || (w = sr_redis_wait_replicas(&rds, &cfg)) < 0) {
				sr_redis_discard(&rds);
				fail_batch(rows, n);
			} else if (w > 0) {
				/* Loaded on the master only: not acked as loaded. */
				for (int i = 0; i < n; i++)
					if (rows[i].st == ST_DONE) {
						rows[i].st = ST_ERROR;
						snprintf(rows[i].error, sizeof rows[i].error, "%s", rds.errstr);
					}
			}
			status = sr_worst(status, emit(rows, n));
			total += n;
			n = 0;
			if (progress && sr_mono_ms() - last >= 1000) {
				last = sr_mono_ms();
				fprintf(stderr, "%s: %ld rows, %ld rows/s\n", sr_prog, total,
				    (long)(total * 1000 / (last - t0 + 1)));
			}
		}
		if (rc == 0)
			break;
	}
	if (progress)
		fprintf(stderr, "%s: %ld rows in %.1f s\n", sr_prog, total, (sr_mono_ms() - t0) / 1000.0);
	status = sr_worst(status, c ? sr_csv_failed(c) : sr_reader_failed(&rd));
	if (c)
		sr_csv_free(c);
	else
		sr_reader_free(&rd);
	sr_facts_batch_free(&writes);
	sr_redis_close(&rds);
	return sr_finish(status);
}
