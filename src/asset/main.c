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

enum { ST_PENDING, ST_REJECTED, ST_ERROR, ST_DONE };

struct row {
	long line;
	int st;
	char error[200];
	json_t *obj;
	const char *card, *carrier, *device; /* borrowed from obj */
	char old_carrier[65], old_device[65];
	char from_device[65]; /* the card's device in Redis before this batch */
	int moves;       /* it leaves another device: its device fact is written last */
	int stale_device; /* its device fact is older than the stored one: no move */
	int joined;      /* its card was added to its device's members */
	long long as_of; /* when its facts were true, ms ("as_of", else --as-of); 0: now */
	long long device_as_of; /* the stored device fact's time */
	json_t *stale;   /* its facts not written: the stored ones are newer */
	int fw;   /* its facts' write in writes (append_facts), + 1; 0: none */
	int ncmd; /* membership writes appended for this row: their replies are its answer too */
};

static struct sr_config cfg;
static struct sr_redis rds;
static int redis_up, csv;
static long long as_of; /* --as-of, Redis ms; 0: when srq receives each row */
static struct sr_facts_batch writes; /* the batch's facts writes (facts_write.lua), in flight */

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

static void
fail_batch(struct row *rows, int n)
{
	sr_facts_batch_reset(&writes);
	for (int i = 0; i < n; i++)
		if (rows[i].st == ST_PENDING) {
			rows[i].st = ST_ERROR;
			snprintf(rows[i].error, sizeof rows[i].error, "%s", rds.errstr);
		}
	sr_redis_lost(&rds, &redis_up, "row");
}

/* The row's facts (but those in skip), as of the row's time, a card's
 * with its account, into writes. */
static void
add_facts(struct row *r, const char *key, const char *const *skip)
{
	struct sr_facts_write w;

	sr_facts_write_init(&w, key, r->as_of, sr_prog, r->card ? r->carrier : NULL);
	sr_facts_write_json(&w, r->obj, skip);
	sr_facts_batch_add(&writes, &w);
	r->fw = writes.n;
}

/* The time facts_write.lua writes a row's facts as of: its own, never
 * past now (the batch's clock), else now. */
static long long
written_as_of(const struct row *r, long long now)
{
	return r->as_of && r->as_of < now ? r->as_of : now;
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
 * refused one, ST_REJECTED if the card is another account's (taken since
 * it was read), else ST_DONE, or still ST_PENDING if the row's card leaves
 * a device (its device fact is written next). Its facts first
 * (facts_write.lua): those it did not write, the stored ones being newer,
 * are kept for its line (a second round's added). */
static int
take_replies(struct row *rows, int n)
{
	redisReply *rep;

	if (writes.calls && sr_facts_batch_read(&rds, &writes) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];

		if (r->st != ST_PENDING)
			continue;
		if (r->fw) {
			json_t *stale = NULL;
			int rc = sr_facts_written(sr_facts_batch_reply(&writes, r->fw - 1),
			    r->card ? SR_FACTS_CARD : SR_FACTS_DEVICE, &stale, r->error, sizeof r->error);

			if (stale && r->stale) {
				json_array_extend(r->stale, stale);
				json_decref(stale);
			} else if (stale)
				r->stale = stale;
			if (rc == -2)
				r->st = ST_REJECTED;
			else if (rc < 0) {
				r->st = ST_ERROR;
				sr_warn("line %ld: %s", r->line, r->error);
			}
			r->fw = 0;
		}
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
	sr_facts_batch_reset(&writes);
	return 0;
}

/* The accounts of the cards loaded are known from now on (sr-stat,
 * sr-admin limits, alerts), before any request names them: an account set
 * up for a carrier's SIMs shows, with its cards. Once per account per run
 * (sr_account_register), sent after the batch's writes (their order is
 * the rows'); the accounts sent, in sent, *ns of them. */
static void
register_accounts(struct row *rows, int n, const char **sent, int *ns)
{
	*ns = 0;
	for (int i = 0; i < n; i++)
		if (rows[i].st == ST_PENDING && rows[i].card && sr_account_register(&rds, &cfg, rows[i].carrier))
			sent[(*ns)++] = rows[i].carrier;
}

/* Their replies: one Redis refused is said, and sent again with the next
 * batch; its cards are loaded all the same. */
static int
registered(const char **sent, int ns)
{
	redisReply *rep;

	for (int k = 0; k < ns; k++) {
		if (!(rep = sr_redis_reply(&rds)))
			return -1;
		if (rep->type == REDIS_REPLY_ERROR) {
			sr_warn("account '%s': not registered: %s", sent[k], rep->str);
			sr_account_forget(sent[k]);
		}
		freeReplyObject(rep);
	}
	return 0;
}

static int
process(struct row *rows, int n)
{
	static struct row *seen[SEEN]; /* card -> its last row in this batch */
	static const char *sent[BATCH]; /* the accounts registered with this batch */
	int ns;
	static const char *const card_skip[] = { "card", "carrier", "as_of", NULL };
	static const char *const card_skip_device[] = { "card", "carrier", "as_of", "device", NULL };
	static const char *const dev_skip[] = { "device", "as_of", NULL };
	const char *time_argv[] = { "TIME" };
	struct sr_card_facts cf;
	char key[SR_KEY_MAX];
	long long now = 0;
	redisReply *rep;

	if (!redis_up)
		return -1;
	/* Round 1: the clock, and where each card is now (account and device,
	 * and as of when its device fact was true). */
	sr_redis_append(&rds, 1, time_argv, NULL);
	for (int i = 0; i < n; i++)
		if (rows[i].st == ST_PENDING && rows[i].card) {
			const char *argv[] = { "HGETALL", sr_key_card_facts(key, cfg.prefix, rows[i].card) };

			sr_redis_append(&rds, 2, argv, NULL);
		}
	if (!(rep = sr_redis_reply(&rds)))
		return -1;
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
		now = atoll(rep->element[0]->str) * 1000 + atoll(rep->element[1]->str) / 1000;
	freeReplyObject(rep);
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];

		if (r->st != ST_PENDING || !r->card)
			continue;
		if (!(rep = sr_redis_reply(&rds)))
			return -1;
		/* (A key damaged by hand reads as nothing: its write fails.) */
		sr_card_facts_load(&cf, rep);
		snprintf(r->old_carrier, sizeof r->old_carrier, "%s", cf.carrier);
		snprintf(r->old_device, sizeof r->old_device, "%s", cf.device);
		r->device_as_of = sr_fact_as_of(&cf, "device");
		freeReplyObject(rep);
		memcpy(r->from_device, r->old_device, sizeof r->from_device);
	}
	/* A time ahead of the Redis clock by more than the skew is not trusted:
	 * its facts would outlive every newer one. */
	for (int i = 0; i < n; i++) {
		if (rows[i].st == ST_PENDING &&
		    sr_as_of_ahead("\"as_of\"", rows[i].as_of, now, rows[i].error, sizeof rows[i].error))
			rows[i].st = ST_REJECTED;
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
			if (prev->device && !prev->stale_device) {
				snprintf(r->old_device, sizeof r->old_device, "%s", prev->device);
				r->device_as_of = written_as_of(prev, now);
			} else {
				snprintf(r->old_device, sizeof r->old_device, "%s", prev->old_device);
				r->device_as_of = prev->device_as_of;
			}
		}
		if (r->old_carrier[0] && strcmp(r->old_carrier, r->carrier)) {
			r->st = ST_REJECTED;
			snprintf(r->error, sizeof r->error,
			    "card belongs to carrier '%s'; moving a card between accounts is not supported",
			    r->old_carrier);
			continue;
		}
		/* A device fact older than the stored one moves nothing. */
		r->stale_device = r->device && r->as_of && written_as_of(r, now) < r->device_as_of;
		seen[h] = r;
	}
	/* Round 2: the facts, and the card's device membership. Rows of one
	 * batch that name the same card are applied in input order. A device
	 * fact older than the stored one moves nothing.
	 *
	 * A card is added to its device's members whenever a row names the
	 * device, new or not: the facts and the membership are written side by
	 * side (their keys are in different slots), and when Redis refuses the
	 * membership of a new card, its facts already name the device; the
	 * same row sent again writes it again.
	 *
	 * A card that leaves a device is what the next load compares with to
	 * know the card must leave it, so it gets its device fact only in round
	 * 3, once Redis took the membership writes: a refused SREM leaves the
	 * old device in the facts, and the same row sent again leaves it again.
	 * A later row of the same card in the batch cannot know whether an
	 * earlier one's membership was taken: it also leaves the device the
	 * card had before the batch. */
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];

		if (r->st != ST_PENDING)
			continue;
		if (!r->card) {
			add_facts(r, sr_key_device_facts(key, cfg.prefix, r->device), dev_skip);
			continue;
		}
		r->moves = r->device && !r->stale_device && ((r->old_device[0] && strcmp(r->device, r->old_device)) ||
		    (r->from_device[0] && strcmp(r->device, r->from_device)));
		add_facts(r, sr_key_card_facts(key, cfg.prefix, r->card), r->moves ? card_skip_device : card_skip);
	}
	sr_facts_batch_append(&rds, &writes);
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		char key2[SR_KEY_MAX];
		const char *from[] = { r->old_device, r->from_device };

		if (r->st != ST_PENDING || !r->card || !r->device || r->stale_device)
			continue;
		if (r->device[0]) {
			const char *add[] = { "SADD", sr_key_device_cards(key, cfg.prefix, r->device), r->card };

			sr_redis_append(&rds, 3, add, NULL);
			r->ncmd++;
			r->joined = 1;
		}
		for (int j = 0; r->moves && j < 2; j++) {
			const char *rem[] = { "SREM", sr_key_device_cards(key2, cfg.prefix, from[j]), r->card };

			if (!from[j][0] || !strcmp(from[j], r->device) || (j == 1 && !strcmp(from[1], from[0])))
				continue;
			sr_redis_append(&rds, 3, rem, NULL);
			r->ncmd++;
		}
	}
	register_accounts(rows, n, sent, &ns);
	/* A row is loaded only if Redis took every one of its writes (out of
	 * memory, a read-only replica, a key of the wrong type: an error). A
	 * card that leaves a device stays pending for round 3. */
	if (take_replies(rows, n) < 0 || registered(sent, ns) < 0)
		return -1;
	/* Round 3: the device fact of the cards that left their device. */
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		struct sr_facts_write w;

		if (r->st != ST_PENDING)
			continue;
		sr_facts_write_init(&w, sr_key_card_facts(key, cfg.prefix, r->card), r->as_of, sr_prog, r->carrier);
		sr_facts_write_add(&w, "device", r->device);
		sr_facts_batch_add(&writes, &w);
		r->fw = writes.n;
		r->moves = 0;
	}
	sr_facts_batch_append(&rds, &writes);
	if (take_replies(rows, n) < 0)
		return -1;
	/* A device fact that proved older than the stored one (a newer write
	 * named another device since this batch read it): the membership this
	 * row wrote follows the stored fact again. */
	for (int i = 0; i < n; i++)
		if (rows[i].joined && rows[i].stale && sr_jarray_has(rows[i].stale, "device") &&
		    sr_device_membership_restore(&rds, cfg.prefix, rows[i].card, rows[i].device) < 0)
			return -1;
	return 0;
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
