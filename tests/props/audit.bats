#!/usr/bin/env bats
# audit.bats - an audit to rely on: who is the effective user even under
# cron's empty environment, every change says why, every entry carries its
# time, a card's history is found however many newer entries other cards
# have, and old entries go by age as well as by count.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	printf '{"card":"C1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
}

# bare CMD...: as cron runs it: no USER, LOGNAME, HOME, nothing but PATH and
# what srq is told.
bare() {
	env -i PATH="$PATH" SRQ_REDIS="$SRQ_REDIS" SRQ_PREFIX=t SRQ_CONFIG= "$@"
}

@test "who is the effective user under an empty environment, and why says who froze the card, when and why" {
	run -0 bare sr-admin freeze C1 --reason 'customer dispute'
	run -0 sr-admin audit C1
	assert_equal "$(jq -r 'select(.event == "admin:freeze") | .who' <<<"$output")" "$(id -un)"
	run -0 bare sr-admin why C1
	jq -e --arg who "$(id -un)" '.state == "frozen" and
		(.why | test("^frozen by " + $who + " at [0-9-]+T[0-9:.]+Z \\([0-9a-z]+ ago\\): customer dispute"))' <<<"$output"
	# Every change says why: without --reason nothing changes.
	run -2 bare sr-admin retry C1
	assert_output --partial 'say why with --reason'
	assert_equal "$(rcli HGET 't:carrier:{c1}:card:C1' frozen)" 1
	run -0 bare sr-admin retry C1 --reason 'dispute settled'
	run -0 sr-admin why C1
	assert_equal "$(jq -r .state <<<"$output")" due
}

@test "a reason that is not UTF-8 is refused; a who or why stored so is shown, not dropped" {
	run -2 --separate-stderr sr-admin freeze C1 --reason "$(printf 'caf\xe9 dispute')"
	[[ $stderr == *"--reason: not UTF-8 text"* ]]
	assert_equal "$(rcli HGET 't:carrier:{c1}:card:C1' frozen)$(rcli EXISTS 't:carrier:{c1}:frozen')" 0
	# A SUDO_USER that is not UTF-8 is not who: the effective user is.
	SUDO_USER=$'ev\xffil' run -0 sr-admin freeze C1 --reason 'customer dispute'
	assert_equal "$(sr-admin audit C1 | jq -r 'select(.event == "admin:freeze") | .who')" "$(id -un)"
	# An entry written so by hand (or by an older release) keeps its fields.
	rcli XADD 't:carrier:{c1}:audit' '*' card C1 event admin:retry who "$(printf 'ev\xffil')" \
		why "$(printf 'caf\xe9')" >/dev/null
	run -0 sr-admin audit C1
	assert_equal "$(jq -r 'select(.event == "admin:retry") | "\(.who) \(.why)"' <<<"$output")" "ev�il caf�"
	sr-admin show C1 | jq -e '.audit[-1].why == "caf�"'
}

@test "show finds a card's history behind 30,000 newer entries of other cards; why reads no audit at all" {
	sr-admin freeze C1 --reason 'customer dispute' >/dev/null
	for i in $(seq 30000); do
		printf 'XADD t:carrier:{c1}:audit * card X%d event queued action stop\n' "$i"
	done | rcli >/dev/null
	run -0 sr-admin show C1
	assert_equal "$(jq -r '[.audit[].event] | join(" ")' <<<"$output")" "queued admin:freeze"
	# Each entry carries its time.
	jq -e '.audit | all(.at | test("^[0-9-]+T[0-9:.]+Z$"))' <<<"$output"
	run -0 sr-admin audit C1
	assert_equal "$(jq -r .event <<<"$output" | tr '\n' ' ')" "queued admin:freeze "
	# why: the command hash says who froze it; the audit is not read.
	rcli CONFIG RESETSTAT >/dev/null
	run -0 sr-admin why C1
	jq -e '.why | test("frozen by .*: customer dispute")' <<<"$output"
	run -0 rcli INFO commandstats
	refute_output --partial 'cmdstat_xrevrange'
	refute_output --partial 'cmdstat_xrange'
}

@test "sr-sweep trims audit entries older than SRQ_AUDIT_DAYS, keeps the rest, and keeps every alert" {
	# Account c2: two entries from 40 and 20 days ago (a stream id is its
	# time), then today's.
	now_ms=$(( $(date +%s) * 1000 ))
	rcli XADD 't:carrier:{c2}:audit' "$((now_ms - 40 * 86400000))-0" card K0 event queued >/dev/null
	rcli XADD 't:carrier:{c2}:audit' "$((now_ms - 20 * 86400000))-0" card K1 event queued >/dev/null
	rcli XADD 't:carrier:{c2}:alerts' "$((now_ms - 40 * 86400000))-0" card K0 alert failures >/dev/null
	printf '{"card":"K2","carrier":"c2","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
	run -0 sr-sweep
	assert_equal "$(sr-admin audit --account c2 | jq -r .card | tr '\n' ' ')" "K1 K2 "
	# An alert 40 days old may still be open (a card frozen for weeks): kept.
	assert_equal "$(rcli XLEN 't:carrier:{c2}:alerts')" 1
	SRQ_AUDIT_DAYS=7 run -0 sr-sweep
	assert_equal "$(sr-admin audit --account c2 | jq -r .card | tr '\n' ' ')" "K2 "
	# Account c1 lost nothing.
	assert_equal "$(sr-admin audit C1 | jq -r .event)" queued
}

@test "audit CARD --account A: that card's entries in A only, not the whole account's trail" {
	printf '{"card":"C2","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
	sr-admin freeze C2 --reason hold >/dev/null
	run -0 sr-admin audit C1 --account c1
	assert_equal "$(jq -r '"\(.card) \(.event)"' <<<"$output" | tr '\n' ',')" "C1 queued,"
	run -0 sr-admin audit C2 --account c1
	assert_equal "$(jq -r '"\(.card) \(.event)"' <<<"$output" | tr '\n' ',')" "C2 queued,C2 admin:freeze,"
	run -0 sr-admin audit --account c1
	assert_equal "$(echo "$output" | wc -l)" 3
	run -2 sr-admin audit 'no such card!' --account c1
	run -1 sr-admin audit C1 --account c9
}

@test "audit --account that stops at its newest 10,000 entries says so" {
	for i in $(seq 10005); do
		printf 'XADD t:carrier:{c1}:audit * card X%d event queued action stop\n' "$i"
	done | rcli >/dev/null
	run -0 --separate-stderr sr-admin audit --account c1
	assert_equal "$(wc -l <<<"$output")" 10000
	[[ $stderr == *"only the newest 10000 entries of account 'c1' are printed; narrow with --since"* ]]
	# A shorter trail is printed whole, and nothing is said.
	run -0 --separate-stderr sr-admin audit --account c1 --since "$(($(date +%s) + 60))000"
	assert_equal "$stderr" ""
}

@test "audit entries give numbers as numbers, and a number with no value as null: never \"\" nor \"10.00\"" {
	# A claim refused at its gate (the card frozen meanwhile): no call, so
	# no HTTP status ("http":"" it was).
	sr-claim >"$T/tasks"
	sr-admin freeze C1 --reason hold >/dev/null
	sr-exec <"$T/tasks" | sr-confirm >/dev/null
	run -0 sr-admin audit C1
	assert_equal "$(jq -c 'select(.event == "gate:frozen") | [.http, .ver_before, .ver_after]' <<<"$output")" '[null,1,1]'
	# The rate lowered by the carrier's refusals, as confirm.lua writes it
	# ("qps_from":"10.00" it was): numbers.
	rcli XADD 't:carrier:{c1}:audit' '*' card '' event rate:lowered qps_from 10.00 qps_to 7.00 http 429 \
		error 'HTTP 429' >/dev/null
	run -0 sr-admin audit --account c1
	assert_equal "$(jq -c 'select(.event == "rate:lowered") | [.qps_from, .qps_to, .http]' <<<"$output")" '[10,7,429]'
	# No field of any entry is a number written as a string, nor "".
	assert_equal "$(jq -c 'to_entries[] | select((.value | type) == "string" and (.value | test("^[0-9.]+$")) and .key != "id")' <<<"$output")" ''
	assert_equal "$(jq -c 'to_entries[] | select(.key | test("http|ver|qps")) | select(.value == "")' <<<"$output")" ''
}
