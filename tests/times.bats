#!/usr/bin/env bats
# times.bats - human times: every operator record keeps its epoch-ms fields
# and adds their ISO-8601 time in UTC (X_ms -> X_at; an audit entry's id ->
# at); --since takes yesterday, durations and ISO dates, and refuses a number
# that is not epoch milliseconds (epoch seconds would silently select
# everything).

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	srq_setup
	gwsim_start
	printf '{"card":"C1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
	drain 10 >/dev/null
	printf '{"card":"C2","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
}

teardown() {
	srq_teardown
}

iso() { # iso MS: what the records must say for MS
	date -u -d "@$(($1 / 1000))" +%Y-%m-%dT%H:%M:%S.$(printf %03d $(($1 % 1000)))Z
}

@test "show, list, audit, pause and sr-stat give every epoch-ms time as ISO-8601 too" {
	run -0 sr-admin show C1
	ms=$(jq -r .last_call_ms <<<"$output")
	assert_equal "$(jq -r .last_call_at <<<"$output")" "$(iso "$ms")"
	# Inside the command hash too, and on every audit entry (from its id).
	assert_equal "$(jq -r .command.last_call_at <<<"$output")" "$(iso "$ms")"
	jq -e '.audit | length >= 2 and all(.at == (.id | split("-")[0] | tonumber / 1000 | strftime("%Y-%m-%dT%H:%M:%S")) + "." + (.id | split("-")[0][-3:]) + "Z")' <<<"$output"
	run -0 sr-admin list c1
	assert_equal "$(jq -r .due_at <<<"$output")" "$(iso "$(jq -r .due_ms <<<"$output")")"
	run -0 sr-admin pause c1 --until 2h --reason 'carrier maintenance'
	assert_equal "$(jq -r .paused_until_at <<<"$output")" "$(iso "$(jq -r .paused_until_ms <<<"$output")")"
	run -0 sr-stat --carrier c1
	assert_equal "$(jq -r 'select(.carrier == "c1") | .paused_until_at' <<<"$output")" \
		"$(iso "$(jq -r 'select(.carrier == "c1") | .paused_until_ms' <<<"$output")")"
	# Durations stay durations: no "interval_left_at" (with an interval
	# long enough to be still running).
	SRQ_MIN_INTERVAL_MS=600000 run -0 sr-admin show C1
	jq -e '.interval_left_ms > 0 and (has("interval_left_at") | not)' <<<"$output"
	# For people (--table): the ISO time instead of the epoch ms.
	run -0 sr-admin list c1 --table
	assert_line --index 0 --regexp 'due_at'
	refute_line --index 0 --regexp 'due_ms'
}

@test "--since takes yesterday, durations and ISO dates, and refuses epoch seconds" {
	# Account c2's audit: an entry from two days ago (a stream id is its
	# time), then today's.
	old=$(( ($(date +%s) - 2 * 86400) * 1000 ))
	rcli XADD 't:carrier:{c2}:audit' "$old-0" card K0 event queued action stop >/dev/null
	printf '{"card":"K1","carrier":"c2","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
	run -0 sr-admin audit --account c2
	assert_equal "$(jq -r .card <<<"$output" | tr '\n' ' ')" "K0 K1 "
	for since in yesterday today 1h 10m 1d "$(date -u +%Y-%m-%d)" "$(date -u -d '1 hour ago' +%Y-%m-%dT%H:%MZ)"; do
		run -0 sr-admin audit --account c2 --since "$since"
		assert_equal "$(jq -r .card <<<"$output" | tr '\n' ' ')" "K1 "
	done
	run -0 sr-admin audit --account c2 --since 3d
	assert_equal "$(jq -r .card <<<"$output" | tr '\n' ' ')" "K0 K1 "
	run -0 sr-admin audit --account c2 --since "$old"
	assert_equal "$(jq -r .card <<<"$output" | tr '\n' ' ')" "K0 K1 "
	# Epoch seconds (and anything else that is not a time) are refused, with
	# the accepted forms named.
	for bad in "$(date +%s)" 2h30 soon -1h 2026-13-01; do
		run -2 sr-admin audit --account c2 --since "$bad"
		assert_output --partial "--since: '$bad' is not a time"
		assert_output --partial yesterday
	done
	run -2 sr-admin alerts --since "$(date +%s)"
}
