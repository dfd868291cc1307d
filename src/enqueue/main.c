/* sr-enqueue - the request-evaluation facade: every stop/resume request enters here.
 *
 * Reads request lines, validates them, upserts the facts they carry, judges
 * each card (sr_judge) and writes the result to the card's account queue with
 * enqueue.lua: a versioned command, a cancellation, or nothing. Prints exactly
 * one ack per input line, in input order, and only after Redis confirmed the
 * write: an ack of "queued" means the command is durable in Redis.
 *
 * Work is batched: a batch is whatever input is available (up to BATCH
 * lines), handled in three pipelined round trips (read the cards' facts;
 * read their devices' facts, when they have one; write the facts and make
 * one enqueue script call per account, together), so throughput does not
 * depend on the round-trip time.
 *
 * If Redis becomes unavailable, every line not yet acknowledged gets a
 * status "error" record and the tool exits 3: nothing is silently dropped.
 *
 * This file: the options, and the batch loop (requests read into a batch,
 * its rounds run, its acks printed); what the other files do, enqueue.h.
 */
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "enqueue.h"

/* The usage text; its %s: the scenes (sr_valid.c), the card facts (sr_facts.c). */
static const char usage_fmt[] =
"usage: sr-enqueue [--csv] [--scene S] [--source S] [--as-of TIME] [--redis URL]\n"
"                  [--prefix P] [--gateway URL] < requests.jsonl > acks.jsonl\n"
"\n"
"Judge stop/resume requests and queue the resulting commands. One request per\n"
"input line, one ack per output line, in the same order.\n"
"\n"
"Request:\n"
"  {\"card\":\"8986...\",\"carrier\":\"c17\",\"scene\":\"package_expired\",\"source\":\"cron:expiry\",\n"
"   \"facts\":{\"pkg_expires_at\":1798675200},\"as_of\":\"2026-12-01T10:00:00+08:00\"}\n"
"  scene: %s\n"
"  facts (optional, upserted before judging): %s\n"
"  as_of (optional): when the facts were true, epoch ms or ISO-8601 with a zone\n"
"         (default --as-of, else when srq receives them); a fact stored as of a\n"
"         later time is not written over, and the ack names it in \"stale_facts\"\n"
"Device request (evaluate all cards of a device with dev-eval):\n"
"  {\"device\":\"D42\",\"scene\":\"device_package_expired\",\"facts\":{\"pkg_expires_at\":0}}\n"
"Ack status: queued unchanged cancelled noop device_queued rejected error;\n"
"  with the global switch off (sr-admin switch off): direct_ok direct_failed (the\n"
"  request was executed on the spot, the lines read together called at once, so\n"
"  sr-enqueue then needs the gateway: SRQ_GATEWAY, SRQ_GATEWAY_TOKEN(_FILE) or\n"
"  SRQ_PROFILES; a failed one stays queued for later). \"followup\": the card's facts\n"
"  changed while it was judged (another request, or its direct call) and want\n"
"  something else, now queued (\"followup_status\", \"followup_ver\"); a card whose\n"
"  facts kept changing while it was judged again carries \"warning\" (exit 3): send\n"
"  it again.\n"
"  \"device_requeued\": an evaluation of the card's device ran while it was judged;\n"
"  the device is asked for again (\"device_ver\").\n"
"\n"
"Options:\n"
"  --redis URL    redis://host:port[/db], unix:///path,\n"
"                 redis+cluster://host:port[,...] or\n"
"                 redis+sentinel://host:port[,...]/MASTER (env SRQ_REDIS)\n"
"  --prefix P     key prefix (env SRQ_PREFIX, default polling)\n"
"  --gateway URL  gateway base URL for the direct path, switch off (env SRQ_GATEWAY,\n"
"                 default http://127.0.0.1:8080)\n"
"  --csv          the input is CSV with a header row: card, carrier (or device),\n"
"                 scene, source, and any fact as a column; empty cells are left out;\n"
"                 a flag cell is 0, 1, true, false, t or f, in any case\n"
"  --scene S      scene of the requests that name none   --source S   likewise\n"
"  --as-of TIME   when the facts of requests that name no as_of were true (an\n"
"                 export's time: epoch ms, ISO-8601, or 2h: that long ago); a time\n"
"                 without a zone (2026-12-01 18:00) is the local zone's (TZ), said\n"
"                 on stderr; one it skips or has twice (daylight saving) is refused\n"
"  -h, --help     this help        --version   print the version\n"
"\n"
"Environment: SRQ_REDIS_PASSWORD(_FILE), SRQ_MIN_INTERVAL_MS, SRQ_AUDIT_MAXLEN, TZ; with the\n"
"  switch off, SRQ_GATEWAY and the carrier settings (as for sr-exec).\n"
"Exit: 0 all queued, 1 some lines rejected, 2 usage, 3 Redis unavailable or refusing\n"
"a write (those lines say \"status\":\"error\"; an ack whose facts or device membership\n"
"Redis refused, its command queued all the same, keeps its status and carries \"warning\"),\n"
"or, with the switch off, a direct call failed (direct_failed: queued, see queued_ver).\n"
"Example:\n"
"  jq -c '{card, carrier, scene:\"package_expired\"}' expired.json | sr-enqueue | jq -r .status | sort | uniq -c\n";
static char usage[4096];

struct sr_config cfg;
struct sr_redis rds;
int redis_up;
static int was_up;     /* Redis was reachable at the start */
const char *default_scene, *default_source;
long long default_as_of; /* --as-of, ms; 0: when srq receives it */

/* Mark every pending line of the batch as a backend error. */
static void
fail_batch(struct req *reqs, int n)
{
	for (int i = 0; i < n; i++)
		if (reqs[i].st == ST_PENDING) {
			reqs[i].st = ST_ERROR;
			snprintf(reqs[i].error, sizeof reqs[i].error, "%s", rds.errstr);
		}
	redis_up = 0;
}

static int finish(struct batch *b);

/* Rounds 1 and 2 of batch b, then its enqueue scripts are sent; the replies
 * of the previous batch's scripts (prev, may be NULL) are collected on the
 * way, in pipeline order, and prev is answered. */
static int
process(struct batch *b, struct batch *prev)
{
	long long now;
	int status = SR_EX_OK;

	b->calls = NULL;
	/* prev is answered before b is read: its cards are judged again once
	 * its writes are answered (judge_again), and with SRQ_WAIT_REPLICAS
	 * its WAIT covers exactly its own writes. */
	if (prev)
		status = finish(prev);
	if (redis_up)
		append_read_facts(b->reqs, b->n);
	if (!redis_up) {
		sr_redis_discard(&rds);
		fail_batch(b->reqs, b->n);
		return status;
	}
	if ((now = read_facts(b)) < 0 || read_devices(b->reqs, b->n) < 0 ||
	    (!b->switch_on && run_direct(b, now) < 0) ||
	    append_commands(b, now) < 0) { /* only what is still pending: all, or device requests */
		sr_redis_discard(&rds);
		fail_batch(b->reqs, b->n);
		return status;
	}
	return status;
}

/* Answer a batch: collect its scripts' replies and print its acks (after
 * WAIT for the replicas, with SRQ_WAIT_REPLICAS). */
static int
finish(struct batch *b)
{
	int w;

	if (redis_up && (collect_commands(b) < 0 || restore_memberships(b) < 0 || judge_again(b) < 0)) {
		sr_redis_discard(&rds);
		redis_up = 0;
	}
	if (redis_up && (w = sr_redis_wait_replicas(&rds, &cfg)) != 0) {
		if (w < 0)
			redis_up = 0;
		for (int i = 0; i < b->n; i++)
			if (b->reqs[i].st == ST_DONE && !b->reqs[i].direct) {
				b->reqs[i].st = ST_ERROR;
				snprintf(b->reqs[i].error, sizeof b->reqs[i].error, "%s", rds.errstr);
			}
	}
	if (!redis_up)
		fail_batch(b->reqs, b->n);
	return emit_batch(b->reqs, b->n);
}

/* Whether batch b must end before r, which is to be its next request:
 * requests are judged in input order, but a batch reads every card's (and
 * device's) facts once, before any of its own are written. So a card's
 * second request in one batch, or a card request after a device request
 * (whose facts the card's judgment may read: they are written after the
 * batch's card scripts), waits for the next batch, which reads what this
 * one wrote; as does a device request after a card request that moves a
 * card between devices (the device's members are read before they are
 * written). Otherwise r's card is noted in b. */
static int
batch_ends_before(struct batch *b, const struct req *r)
{
	unsigned h = 2166136261u; /* FNV-1a */

	if (r->st != ST_PENDING)
		return 0;
	if (r->is_device) {
		if (b->moves_card)
			return 1; /* it reads the device's members, which a card request writes */
		b->has_device = 1;
		return 0;
	}
	if (b->has_device)
		return 1;
	if (sr_jstr(r->facts, "device"))
		b->moves_card = 1;
	for (const char *p = r->card; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (unsigned i = h & (SEEN_SLOTS - 1);; i = (i + 1) & (SEEN_SLOTS - 1)) {
		if (!b->seen[i]) {
			b->seen[i] = (unsigned short)(b->n + 1);
			return 0;
		}
		if (!strcmp(b->reqs[b->seen[i] - 1].card, r->card))
			return 1;
	}
}

static void
batch_reset(struct batch *b)
{
	sr_facts_batch_reset(&b->facts);
	sr_facts_batch_reset(&b->dev_facts);
	b->n = 0;
	b->has_device = b->moves_card = 0;
	memset(b->seen, 0, sizeof b->seen);
}

/* Read the next request into r: 1 a line (maybe rejected), SR_READ_AGAIN,
 * SR_READ_EOF, or -2 for a CSV whose header is unusable. */
static int
next_request(struct sr_reader *rd, struct sr_csv *c, struct req *r, int block)
{
	char *line;
	int rc;

	memset(r, 0, sizeof *r);
	if (c) {
		json_t *row;

		rc = sr_csv_next(c, &row, &r->line, r->error, sizeof r->error);
		if (rc == 0)
			return SR_READ_EOF;
		if (rc == -2)
			return -2;
		if (rc == -1)
			r->st = ST_REJECTED;
		else
			parse_csv_row(r, row);
		return SR_READ_LINE;
	}
	rc = sr_reader_next(rd, &line, block);
	if (rc == SR_READ_AGAIN || rc == SR_READ_EOF)
		return rc;
	r->line = rd->lineno;
	if (rc == SR_READ_BAD)
		reject(r, "%s", rd->why);
	else
		parse_line(r, line);
	return SR_READ_LINE;
}

int
main(int argc, char *argv[])
{
	enum { O_CSV = 1, O_SCENE, O_SOURCE, O_AS_OF };
	static const struct option longopts[] = {
		SR_COMMON_LONGOPTS,
		{ "csv", no_argument, NULL, O_CSV },
		{ "scene", required_argument, NULL, O_SCENE },
		{ "source", required_argument, NULL, O_SOURCE },
		{ "as-of", required_argument, NULL, O_AS_OF },
		/* The common flag: with the switch off the direct path calls it. */
		{ "gateway", required_argument, NULL, SR_OPT_GATEWAY },
		{ NULL, 0, NULL, 0 },
	};
	static struct batch bufs[2];
	static struct req again; /* a request held for the next batch */
	struct batch *cur = &bufs[0], *prev = NULL;
	struct sr_reader rd;
	struct sr_csv *csv = NULL;
	int c, status = SR_EX_OK, rc, use_csv = 0, held;
	const char *as_of_opt = NULL;

	sr_prog = "sr-enqueue";
	snprintf(usage, sizeof usage, usage_fmt, sr_scene_list(9, "         "),
	    sr_facts_list(SR_FACTS_CARD, "carrier", 45, "         "));
	sr_config_init(&cfg);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_CSV: use_csv = 1; break;
		case O_SCENE:
			if (sr_scene_prio(optarg) < 0)
				sr_die(SR_EX_USAGE, "--scene: unknown scene '%s'", optarg);
			default_scene = optarg;
			break;
		case O_SOURCE:
			if (strlen(optarg) > 128)
				sr_die(SR_EX_USAGE, "--source: at most 128 bytes");
			default_source = optarg;
			break;
		case O_AS_OF: as_of_opt = optarg; break;
		default:
			if (!sr_config_option(&cfg, c, optarg, usage))
				sr_usage(SR_EX_USAGE, usage);
		}
	}
	sr_no_operands(argc, argv, usage);
	/* Checked before any line is read: the direct path (the switch off)
	 * would otherwise meet it only at its first call. */
	sr_gateway_url_check(&cfg);
	redis_up = sr_redis_open_filter(&rds, &cfg, "line is answered with status \"error\"");
	was_up = redis_up;
	if (as_of_opt)
		default_as_of = sr_as_of_option(&rds, redis_up, as_of_opt);

	if (use_csv)
		csv = sr_csv_new(STDIN_FILENO);
	else
		sr_reader_init(&rd, STDIN_FILENO);
	for (;;) {
		/* Block for the first line of a batch, then take what is ready;
		 * with a batch in flight, never block: answer it first. (A CSV
		 * is read whole rows at a time, blocking.) */
		rc = next_request(&rd, csv, &cur->reqs[cur->n], cur->n == 0 && !prev);
		if (rc == -2) {
			fprintf(stderr, "%s: line %ld: %s\n", sr_prog, cur->reqs[cur->n].line,
			    cur->reqs[cur->n].error);
			status = sr_worst(status, SR_EX_USAGE);
			rc = SR_READ_EOF;
		}
		/* A request the batch must end before waits for the next batch,
		 * which reads the facts this one writes. */
		held = rc == SR_READ_LINE && batch_ends_before(cur, &cur->reqs[cur->n]);
		if (held)
			again = cur->reqs[cur->n];
		else if (rc == SR_READ_LINE)
			cur->n++;
		if (cur->n > 0 && (held || cur->n == BATCH || rc == SR_READ_AGAIN || rc == SR_READ_EOF)) {
			status = sr_worst(status, process(cur, prev));
			prev = cur;
			cur = cur == &bufs[0] ? &bufs[1] : &bufs[0];
			batch_reset(cur);
			if (held) {
				cur->reqs[0] = again;
				batch_ends_before(cur, &cur->reqs[0]);
				cur->n = 1;
			}
		} else if (prev && (rc == SR_READ_AGAIN || rc == SR_READ_EOF)) {
			/* Input is idle: answer the batch in flight now. */
			status = sr_worst(status, finish(prev));
			prev = NULL;
		}
		if (rc == SR_READ_EOF && !prev)
			break;
	}
	status = sr_worst(status, csv ? sr_csv_failed(csv) : sr_reader_failed(&rd));
	if (csv)
		sr_csv_free(csv);
	else
		sr_reader_free(&rd);
	if (was_up && !redis_up && rds.errstr[0]) /* lost mid-run (if down at start: said then) */
		fprintf(stderr, "%s: error: %s\n", sr_prog, rds.errstr);
	if (n_errors > 1)
		sr_warn("%ld requests not queued (answered \"status\":\"error\")", n_errors);
	for (int i = 0; i < 2; i++) {
		sr_facts_batch_free(&bufs[i].facts);
		sr_facts_batch_free(&bufs[i].dev_facts);
	}
	direct_free();
	sr_redis_close(&rds);
	return sr_finish(status);
}
