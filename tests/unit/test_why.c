/* test_why.c - sr-admin why as a table: every state sr_why can answer, the
 * order in which the reasons hold a card back, and sentences in people's
 * times (ISO and how far from now, never bare epoch ms). */
#include <regex.h>
#include <string.h>

#include "sr.h"
#include "unit.h"

#define NOW 1800000000000LL /* Redis ms */
#define SEC 1000LL
#define MIN (60 * SEC)

static const struct sr_judgment stop_wanted = { 1, SR_WANT_STOP, "package_expired", 0 };
static const struct sr_judgment nothing = { 0, SR_WANT_NONE, "entitled", 0 };
static const struct sr_judgment manual = { 0, SR_WANT_NONE, "entitled", 1 };

struct row {
	const char *name;
	struct sr_why_card c;
	struct sr_why_account a;
	const char *state;
	const char *sentence; /* a regular expression the sentence must match */
};

#define CMD .card = "K1", .action = "stop", .interval_ms = 10 * MIN
#define ACCT .name = "c17"

static const struct row rows[] = {
	{ "no command, nothing to do", { .card = "K1", .judged = &nothing, .status = "active" }, { ACCT },
	  "no_command", "^no command: the judgment says entitled \\(target active, last known status active\\)$" },
	{ "no command, stopped by hand", { .card = "K1", .judged = &manual, .status = "stopped" }, { ACCT },
	  "no_command", "stopped by hand: never auto-resumed\\)$" },
	{ "no command, unknown status", { .card = "K1", .judged = &nothing }, { ACCT },
	  "no_command", "last known status unknown" },
	{ "no command, the judgment wants one", { .card = "K1", .judged = &stop_wanted, .status = "active" },
	  { ACCT }, "not_queued", "^no command queued, but the judgment wants stop \\(package_expired\\); to queue "
	  "it: echo '\\{\"card\":\"K1\",\"carrier\":\"c17\",\"scene\":\"manual_recheck\"\\}' \\| sr-enqueue$" },
	{ "its command dropped by hand: who, when, why", { .card = "K1", .judged = &stop_wanted, .dropped_who = "oncall",
	  .dropped_why = "duplicate", .dropped_at = NOW - 5 * MIN }, { ACCT }, "not_queued",
	  "^no command queued \\(dropped by oncall at 2027-01-15T07:55:00Z \\(5m00s ago\\): duplicate\\), but the "
	  "judgment wants stop" },
	{ "dropped, and nothing to do", { .card = "K1", .judged = &nothing, .superseded = 3, .dropped_who = "oncall",
	  .dropped_why = "renewed", .dropped_at = NOW - MIN }, { ACCT }, "no_command",
	  "^no command \\(dropped by oncall at .* \\(1m00s ago\\): renewed\\): the judgment says entitled" },
	{ "superseded before its call", { .card = "K1", .judged = &nothing, .superseded = 4 }, { ACCT },
	  "superseded", "^no command: version 4 was superseded before its call \\(the judgment now says entitled\\)$" },
	{ "frozen by hand: who, when, why",
	  { CMD, .frozen = 1, .frozen_who = "oncall", .frozen_why = "customer dispute", .frozen_at = NOW - 90 * SEC },
	  { ACCT }, "frozen",
	  "^frozen by oncall at 2027-01-15T07:58:30Z \\(1m30s ago\\): customer dispute; to unfreeze it: sr-admin "
	  "retry K1 --carrier c17 --reason 'cause fixed'$" },
	{ "frozen after failures",
	  { CMD, .frozen = 1, .fails = 10, .first_fail = NOW - 5 * MIN, .last_error = "HTTP 503" }, { ACCT },
	  "frozen", "^frozen after 10 failures \\(the first at .* \\(5m00s ago\\)\\); last error: HTTP 503;" },
	{ "frozen by hand before who was recorded", { CMD, .frozen = 1 }, { ACCT }, "frozen",
	  "^frozen by hand \\(sr-admin audit K1 --carrier c17 says who and why\\); to unfreeze it: sr-admin retry "
	  "K1 --carrier c17 --reason 'cause fixed'$" },
	{ "frozen wins over a paused account", { CMD, .frozen = 1, .fails = 3 }, { ACCT, .pause_until = NOW + MIN },
	  "frozen", "^frozen after 3" },
	{ "claimed, call in flight", { CMD, .claim = "7-42", .lease_until = NOW + 30 * SEC, .called = 1 }, { ACCT },
	  "claimed", "^claimed by a live lease until .* \\(in 30s\\) \\(token 7-42\\): its call is in flight$" },
	{ "an expired lease is not a claim", { CMD, .claim = "7-42", .lease_until = NOW - SEC, .due = NOW - SEC },
	  { ACCT }, "due", "^due now" },
	{ "a limit below 1", { CMD, .due = NOW }, { ACCT, .limit_below_1 = "qps", .limit_configured = 10 },
	  "paused", "^a per-account limit below 1 \\(qps\\) stops every call to the account c17 .*; to lift it: "
	  "sr-admin limits c17 qps=10 --reason 'limit restored'$" },
	{ "paused until a time", { CMD, .due = NOW }, { ACCT, .pause_until = NOW + 2 * 3600 * SEC, .pause_who = "oncall",
	  .pause_why = "maintenance" }, "paused", "^the account c17 is paused until .* \\(in 2h00m\\) by oncall: maintenance$" },
	{ "paused until resumed", { CMD, .due = NOW }, { ACCT, .pause_until = 253402300799000LL, .pause_who = "oncall",
	  .pause_why = "x" }, "paused", "^the account c17 is paused until resumed by oncall: x$" },
	{ "a pause that ended holds nothing", { CMD, .due = NOW - SEC }, { ACCT, .pause_until = NOW - SEC },
	  "due", "^due now" },
	{ "breaker open", { CMD, .due = NOW }, { ACCT, .brk_until = NOW + 20 * SEC, .brk_since = NOW - 10 * SEC,
	  .brk_why = "HTTP 500" }, "breaker", "^account breaker open since .* \\(10s ago\\): HTTP 500; a probe call goes at .* \\(in 20s\\)$" },
	{ "breaker half-open", { CMD, .due = NOW }, { ACCT, .brk_until = NOW - 5 * SEC, .brk_since = NOW - MIN,
	  .brk_why = "HTTP 500" }, "breaker", "^account breaker half-open since .* \\(5s ago\\): one probe call decides" },
	{ "breaker opened by hand", { CMD, .due = NOW }, { ACCT, .brk_until = NOW + 3600 * SEC, .brk_since = NOW - MIN,
	  .brk_manual = 1, .brk_why = "carrier incident" }, "breaker",
	  "\\(carrier incident\\): no call until it is closed: sr-admin breaker c17 close --reason 'carrier back'$" },
	{ "confirming, query due soon", { CMD, .confirming = 1, .due = NOW + 2 * SEC }, { ACCT },
	  "confirming", "^confirming an unknown result: a status query is due at .* \\(in 2s\\)$" },
	{ "confirming, query overdue", { CMD, .confirming = 1, .due = NOW - 2 * SEC }, { ACCT },
	  "confirming", "a status query is due since .* \\(2s ago\\)$" },
	{ "the card's interval", { CMD, .last_call = NOW - 4 * MIN, .due = NOW + 6 * MIN }, { ACCT },
	  "interval", "^waiting for the card's interval: last call at .* \\(4m00s ago\\), next allowed at .* \\(in 6m00s\\)$" },
	{ "backoff after failures", { CMD, .fails = 2, .last_call = NOW - 20 * MIN, .due = NOW + 3 * SEC,
	  .last_error = "HTTP 502" }, { ACCT }, "backoff",
	  "^backing off after 2 consecutive failures until .* \\(in 3s\\); last error: HTTP 502$" },
	{ "refused without applying (rate)", { CMD, .due = NOW + SEC, .last_error = "HTTP 429" }, { ACCT },
	  "refused", "^the carrier refused its last call without applying it \\(HTTP 429\\): not a failure of the card" },
	{ "scheduled later", { CMD, .due = NOW + 10 * SEC }, { ACCT }, "scheduled", "^due at .* \\(in 10s\\)$" },
	{ "due, the account's pace ahead", { CMD, .due = NOW - SEC }, { ACCT, .next_slot = NOW + 500, .qps_effective = 2.5,
	  .qps = 5 }, "rate", "^due, waiting for the account's pace: its next call may leave at .* \\(2.50 calls/s now, limit 5\\)$" },
	{ "the pace does not hold a command that is not due", { CMD, .due = NOW + 10 * SEC },
	  { ACCT, .next_slot = NOW + 500 }, "scheduled", "^due at" },
	{ "due now", { CMD, .due = NOW - 3 * SEC }, { ACCT },
	  "due", "^due now \\(since .* \\(3s ago\\)\\): waiting for a dispatcher \\(srq-drain, from cron; by "
	  "hand: sr-claim --carrier c17 \\| sr-exec \\| sr-confirm\\)$" },
};

int
main(void)
{
	regex_t epoch_ms;

	regcomp(&epoch_ms, "[0-9]{13}", REG_EXTENDED | REG_NOSUB);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		char buf[400], run[200];
		const char *state = sr_why(&r->c, &r->a, NOW, buf, sizeof buf);
		regex_t re;

		CHECK(!strcmp(state, r->state), "%s: state %s, want %s (%s)", r->name, state, r->state, buf);
		CHECK(regcomp(&re, r->sentence, REG_EXTENDED | REG_NOSUB) == 0, "%s: bad pattern", r->name);
		CHECK(regexec(&re, buf, 0, NULL, 0) == 0, "%s: sentence\n  %s\ndoes not match\n  %s", r->name, buf,
		    r->sentence);
		CHECK(regexec(&epoch_ms, buf, 0, NULL, 0) != 0, "%s: epoch ms in: %s", r->name, buf);
		/* The command a sentence asks for is the one sr-admin gives to
		 * run, whole. */
		if (*sr_why_run(&r->c, &r->a, state, run, sizeof run))
			CHECK(strstr(buf, run) != NULL, "%s: '%s' not in: %s", r->name, run, buf);
		regfree(&re);
	}
	regfree(&epoch_ms);
	/* A sentence too long for its buffer is cut on a character boundary,
	 * wherever the cut falls: it stays UTF-8 (sr-admin prints it as JSON). */
	for (size_t cut = 380; cut <= 400; cut++) {
		struct sr_why_card c = { CMD, .due = NOW };
		struct sr_why_account a = { ACCT, .pause_until = 253402300799000LL, .pause_who = "oncall" };
		char why[1024] = "x", buf[400];

		for (int i = 0; i < 60; i++)
			strcat(why, "\xe5\xae\xa2\xe6\x88\xb7"); /* 客户 */
		a.pause_why = why;
		sr_why(&c, &a, NOW, buf, cut);
		CHECK(sr_utf8_valid(buf) && strlen(buf) + 3 >= cut - 1, "cut at %zu: %zu bytes, %s UTF-8", cut,
		    strlen(buf), sr_utf8_valid(buf) ? "" : "not");
	}
	return unit_done("test_why");
}
