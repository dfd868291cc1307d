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
 * An export is a picture of the carrier taken at some time: with --as-of, a
 * card's status older than, and different from, what srq itself saw at the
 * carrier since (the card's 'seen', written by the finish of its last call
 * or query) is not written; the newer one wins. Re-importing a stale export
 * then costs no "already" calls. stopped_by is always written: only the
 * export can say that a card was stopped by hand.
 *
 * Batched: each batch is two pipelined round trips (read the cards' current
 * carrier and device, and what srq saw; write facts and membership), and a
 * third when a card moves (its device fact, once its membership is
 * written), so a million rows load in seconds, not hours.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sr.h"

#define BATCH 2048

/* The usage text; %s: the card facts, the device facts (sr_facts.c). */
static const char usage_fmt[] =
"usage: sr-asset [--csv] [--as-of TIME] [--progress | --no-progress] < facts.jsonl > results.jsonl\n"
"\n"
"Load card and device facts into the asset mirror (the facts sr-enqueue, sr-exec\n"
"and dev-eval judge from). One result line per input row, in order.\n"
"\n"
"Rows (JSONL, or CSV with a header row naming the same fields):\n"
"  {\"card\":\"8986...\",\"carrier\":\"c17\",\"device\":\"D42\",\"pkg_expires_at\":1798675200,\"status\":\"active\"}\n"
"  {\"device\":\"D42\",\"pkg_expires_at\":0,\"disabled\":0}\n"
"Card facts: %s.\n"
"Device facts: %s (pkg_expires_at 0: no device package).\n"
"Result: {\"line\":1,\"card\":\"...\",\"carrier\":\"c17\",\"status\":\"loaded\"}; status loaded,\n"
"  rejected (with \"error\"), error (Redis failed); \"status_kept\":true when --as-of kept\n"
"  the status srq saw at the carrier later than the export.\n"
"\n"
"Options:\n"
"  --csv            the input is CSV with a header row (quotes, CRLF and a BOM are fine;\n"
"                   a flag cell is 0, 1, true, false, t or f, in any case)\n"
"  --progress       rows and rate on stderr every second (default when stderr is a terminal)\n"
"  --as-of TIME     when the export was taken (UTC: 2026-12-01T10:00Z, epoch ms, or 2h:\n"
"                   that long ago): a card's status is not written over a different one\n"
"                   srq saw at the carrier after TIME (without it, the export wins)\n"
"  --redis URL, --prefix P, -h/--help, --version\n"
"Exit: 0 all loaded, 1 some rows rejected, 2 usage, 3 Redis unavailable.\n"
"Example:\n"
"  psql --csv -c 'select card, carrier, device, pkg_expires_at from cards' | sr-asset --csv | jq -c 'select(.status != \"loaded\")'\n";
static char usage[4096];

enum { ST_PENDING, ST_REJECTED, ST_ERROR, ST_DONE };

struct row {
	long line;
	int st;
	char error[200];
	json_t *obj;
	const char *card, *carrier, *device; /* borrowed from obj */
	char old_carrier[65], old_device[65];
	char from_device[65]; /* the card's device in Redis before this batch */
	int moves;       /* membership writes come before the device fact */
	int has_status;  /* the row sets status */
	int keep_status; /* ... but srq saw another one later than --as-of */
	int ncmd; /* writes appended for this row: their replies are its answer */
};

static struct sr_config cfg;
static struct sr_redis rds;
static int redis_up, csv;
static long long as_of; /* --as-of, Redis ms; 0: the export wins */

static void
validate(struct row *r)
{
	static const char *const card_own[] = { "card", "carrier", NULL };
	static const char *const dev_own[] = { "device", NULL };
	json_t *o = r->obj;

	r->st = ST_REJECTED;
	if (!json_is_object(o)) {
		snprintf(r->error, sizeof r->error, "a row must be a JSON object");
		return;
	}
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

static void
fail_batch(struct row *rows, int n)
{
	for (int i = 0; i < n; i++)
		if (rows[i].st == ST_PENDING) {
			rows[i].st = ST_ERROR;
			snprintf(rows[i].error, sizeof rows[i].error, "%s", rds.errstr);
		}
	sr_redis_lost(&rds, &redis_up, "row");
}

/* HSET key with every member of o but those in skip (+ carrier if given).
 * Returns the number of commands appended (0 or 1). */
static int
append_hset(const char *key, json_t *o, const char *const *skip, const char *carrier)
{
	const char *argv[2 + 2 * 12];
	char vals[12][80];
	int argc = 0, k = 0;
	const char *name;
	json_t *v;

	argv[argc++] = "HSET";
	argv[argc++] = key;
	if (carrier) {
		argv[argc++] = sr_fact_field("carrier");
		argv[argc++] = carrier;
	}
	json_object_foreach(o, name, v) {
		int skipped = 0;

		for (const char *const *s = skip; *s; s++)
			skipped |= !strcmp(*s, name);
		if (skipped || k == 12)
			continue;
		sr_fact_value(v, vals[k], sizeof vals[k]);
		argv[argc++] = sr_fact_field(name);
		argv[argc++] = vals[k++];
	}
	if (argc <= 2)
		return 0;
	sr_redis_append(&rds, argc, argv, NULL);
	return 1;
}

#define SEEN (2 * BATCH)

static size_t
hash(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h % SEEN;
}

/* The replies to the writes of every pending row: ST_ERROR if Redis
 * refused one, else ST_DONE, or still ST_PENDING if the row's card moves
 * (its device fact is written next). */
static int
take_replies(struct row *rows, int n)
{
	redisReply *rep;

	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];

		if (r->st != ST_PENDING)
			continue;
		for (int k = 0; k < r->ncmd; k++) {
			if (!(rep = sr_redis_reply(&rds)))
				return -1;
			if (rep->type == REDIS_REPLY_ERROR && r->st == ST_PENDING) {
				r->st = ST_ERROR;
				snprintf(r->error, sizeof r->error, "not loaded: Redis refused the write: %s", rep->str);
				sr_warn("line %ld: %s", r->line, r->error);
			}
			freeReplyObject(rep);
		}
		r->ncmd = 0;
		if (r->st == ST_PENDING && !r->moves)
			r->st = ST_DONE;
	}
	return 0;
}

static int
process(struct row *rows, int n)
{
	static struct row *seen[SEEN]; /* card -> its last row in this batch */
	static const char *const card_skip[] = { "card", "carrier", NULL };
	static const char *const card_skip_status[] = { "card", "carrier", "status", NULL };
	static const char *const dev_skip[] = { "device", NULL };
	char key[SR_KEY_MAX], key2[SR_KEY_MAX];
	redisReply *rep;

	if (!redis_up)
		return -1;
	/* Round 1: where each card is now (account and device). */
	for (int i = 0; i < n; i++)
		if (rows[i].st == ST_PENDING && rows[i].card) {
			const char *argv[] = { "HMGET", sr_key_card_facts(key, cfg.prefix, rows[i].card),
				sr_fact_field("carrier"), sr_fact_field("device"), "carrier", "device" };

			sr_redis_append(&rds, 6, argv, NULL);
			rows[i].has_status = json_is_string(json_object_get(rows[i].obj, "status"));
			if (as_of && rows[i].has_status) {
				const char *seen[] = { "HMGET", sr_key_card(key2, cfg.prefix, rows[i].carrier,
					rows[i].card), "seen", "seen_ms" };
				const char *idle[] = { "HGET", key2, NULL };

				sr_redis_append(&rds, 4, seen, NULL);
				idle[2] = sr_key_idle(key2, cfg.prefix, rows[i].carrier, rows[i].card);
				sr_redis_append(&rds, 3, idle, NULL);
			}
		}
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];

		if (r->st != ST_PENDING || !r->card)
			continue;
		if (!(rep = sr_redis_reply(&rds)))
			return -1;
		/* The short fields, else the legacy ones (before sr-admin migrate). */
		for (int j = 1; rep->type == REDIS_REPLY_ARRAY && rep->elements == 4 && j >= 0; j--) {
			if (rep->element[2 * j]->type == REDIS_REPLY_STRING)
				snprintf(r->old_carrier, sizeof r->old_carrier, "%s", rep->element[2 * j]->str);
			if (rep->element[2 * j + 1]->type == REDIS_REPLY_STRING)
				snprintf(r->old_device, sizeof r->old_device, "%s", rep->element[2 * j + 1]->str);
		}
		freeReplyObject(rep);
		memcpy(r->from_device, r->old_device, sizeof r->from_device);
		if (as_of && r->has_status) {
			redisReply *idle;
			char seen[16] = "";
			long long seen_ms = 0;

			if (!(rep = sr_redis_reply(&rds)))
				return -1;
			if (!(idle = sr_redis_reply(&rds))) {
				freeReplyObject(rep);
				return -1;
			}
			/* What srq last saw: in the card's hash, or packed while it
			 * sleeps (ver|last_call|seen|seen_ms|...). */
			if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
			    rep->element[0]->type == REDIS_REPLY_STRING && rep->element[1]->type == REDIS_REPLY_STRING) {
				snprintf(seen, sizeof seen, "%s", rep->element[0]->str);
				seen_ms = atoll(rep->element[1]->str);
			} else if (idle->type == REDIS_REPLY_STRING && sr_idle_get(idle->str, SR_IDLE_SEEN, seen, sizeof seen)) {
				char ms[24];

				seen_ms = sr_idle_get(idle->str, SR_IDLE_SEEN_MS, ms, sizeof ms) ? atoll(ms) : 0;
			}
			r->keep_status = seen[0] && seen_ms > as_of &&
			    strcmp(seen, json_string_value(json_object_get(r->obj, "status")));
			freeReplyObject(idle);
			freeReplyObject(rep);
		}
	}
	/* Rows of one batch that name the same card see each other's effect, as
	 * if applied one by one: a later row starts from the earlier row's
	 * account and device. */
	memset(seen, 0, sizeof seen);
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i], *prev;
		size_t h;

		if (r->st != ST_PENDING || !r->card)
			continue;
		for (h = hash(r->card); seen[h] && strcmp(seen[h]->card, r->card); h = (h + 1) % SEEN)
			;
		if ((prev = seen[h])) {
			snprintf(r->old_carrier, sizeof r->old_carrier, "%s", prev->carrier);
			snprintf(r->old_device, sizeof r->old_device, "%s",
			    prev->device ? prev->device : prev->old_device);
		}
		if (r->old_carrier[0] && strcmp(r->old_carrier, r->carrier)) {
			r->st = ST_REJECTED;
			snprintf(r->error, sizeof r->error,
			    "card belongs to carrier '%s'; moving a card between accounts is not supported",
			    r->old_carrier);
			continue;
		}
		seen[h] = r;
	}
	/* Round 2: the facts, and membership when a card changes device. Rows
	 * of one batch that name the same card are applied in input order.
	 *
	 * The card's device fact is what the next load compares with to know
	 * whether membership must be written, so a card that moves gets it
	 * only in round 3, once Redis took the membership writes: a refused
	 * SADD or SREM leaves the old device in the facts, and the same row
	 * sent again writes the membership again. A later row of the same
	 * card in the batch cannot know whether an earlier one's membership
	 * was taken: it also leaves the device the card had before the batch
	 * and joins its own even if the earlier row named it already. */
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		const char *skip[8]; /* card_skip_status, "device", NULL */
		int k = 0;

		if (r->st != ST_PENDING)
			continue;
		if (!r->card) {
			r->ncmd = append_hset(sr_key_device_facts(key, cfg.prefix, r->device), r->obj, dev_skip,
			    NULL);
			continue;
		}
		r->moves = r->device && (strcmp(r->device, r->old_device) || strcmp(r->device, r->from_device));
		for (const char *const *s = r->keep_status ? card_skip_status : card_skip; *s; s++)
			skip[k++] = *s;
		if (r->moves)
			skip[k++] = "device";
		skip[k] = NULL;
		r->ncmd = append_hset(sr_key_card_facts(key, cfg.prefix, r->card), r->obj, skip, r->carrier);
		if (r->moves) {
			const char *add[] = { "SADD", sr_key_device_cards(key, cfg.prefix, r->device), r->card };
			const char *from[] = { r->old_device, r->from_device };

			sr_redis_append(&rds, 3, add, NULL);
			r->ncmd++;
			for (int j = 0; j < 2; j++) {
				const char *rem[] = { "SREM", sr_key_device_cards(key2, cfg.prefix, from[j]), r->card };

				if (!from[j][0] || !strcmp(from[j], r->device) || (j == 1 && !strcmp(from[1], from[0])))
					continue;
				sr_redis_append(&rds, 3, rem, NULL);
				r->ncmd++;
			}
		}
	}
	/* A row is loaded only if Redis took every one of its writes (out of
	 * memory, a read-only replica, a key of the wrong type: an error). A
	 * card that moves stays pending for round 3. */
	if (take_replies(rows, n) < 0)
		return -1;
	/* Round 3: the device fact of the cards whose membership was written. */
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];

		if (r->st != ST_PENDING)
			continue;
		const char *argv[] = { "HSET", sr_key_card_facts(key, cfg.prefix, r->card),
			sr_fact_field("device"), r->device };

		sr_redis_append(&rds, 4, argv, NULL);
		r->ncmd = 1;
		r->moves = 0;
	}
	return take_replies(rows, n);
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
			if (r->keep_status)
				json_object_set_new(o, "status_kept", json_true());
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
	if (as_of_opt) {
		/* Parsed on the Redis clock, which every 'seen' time is on. Without
		 * Redis every row is an error anyway: the local clock only checks
		 * the flag. */
		int64_t now = redis_up ? sr_redis_time_ms(&rds) : -1;

		if (now < 0)
			now = (int64_t)time(NULL) * 1000;

		if ((as_of = sr_parse_when(as_of_opt, now, -1)) <= 0)
			sr_die(SR_EX_USAGE, "--as-of: '%s' is not a time (2026-12-01T10:00Z, epoch ms) nor a "
			    "duration ago (10m, 2h, 1d)", as_of_opt);
	}
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
	sr_redis_close(&rds);
	return sr_finish(status);
}
