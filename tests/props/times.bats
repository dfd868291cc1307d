#!/usr/bin/env bats
# times.bats - human times: every operator record keeps its epoch-ms fields
# and adds their ISO-8601 time in UTC (X_ms -> X_at; an audit entry's id ->
# at); --since takes yesterday, durations and ISO dates, and refuses a number
# that is not epoch milliseconds (epoch seconds would silently select
# everything).

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	gwsim_start
	printf '{"card":"C1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
	drain 10 >/dev/null
	printf '{"card":"C2","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
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
	# (A time without a zone, here UTC's, is said on stderr: the next test.)
	for since in yesterday today 1h 10m 1d "$(date -u +%Y-%m-%d)" "$(date -u -d '1 hour ago' +%Y-%m-%dT%H:%MZ)"; do
		run -0 --separate-stderr sr-admin audit --account c2 --since "$since"
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

@test "a time without a zone is read in TZ and said; one the zone skips or has twice, or a TZ that is no zone, is refused" {
	# The issue's case: 18:00 in Shanghai is 10:00Z (it was read as 18:00Z,
	# eight hours late, and nothing said so).
	TZ=Asia/Shanghai run -0 --separate-stderr sr-admin pause c1 --until "2027-12-03 18:00" --reason maintenance
	assert_equal "$(jq -r .paused_until_at <<<"$output")" 2027-12-03T10:00:00.000Z
	[[ $stderr == *"note: --until '2027-12-03 18:00' has no zone: read in Asia/Shanghai (CST, +08:00), that is 2027-12-03T10:00:00.000Z"* ]]
	# A time with its zone is that time, whatever TZ says, and nothing is said.
	TZ=Asia/Shanghai run -0 --separate-stderr sr-admin pause c1 --until 2027-12-03T18:00+08:00 --reason maintenance
	assert_equal "$(jq -r .paused_until_at <<<"$output")" 2027-12-03T10:00:00.000Z
	assert_equal "$stderr" ""
	TZ=Asia/Shanghai run -0 --separate-stderr sr-admin pause c1 --until 2027-12-03T18:00Z --reason maintenance
	assert_equal "$(jq -r .paused_until_at <<<"$output")" 2027-12-03T18:00:00.000Z
	# In New York 01:30 on 2027-11-07 happens twice and 02:30 on 2027-03-14
	# never: refused (exit 2), the pause left as it was.
	TZ=America/New_York run -2 --separate-stderr sr-admin pause c1 --until "2027-11-07 01:30" --reason x
	[[ $stderr == *"--until: '2027-11-07 01:30' is ambiguous in America/New_York: it happens twice, at -04:00 and at -05:00"* ]]
	TZ=America/New_York run -2 --separate-stderr sr-admin pause c1 --until 2027-03-14T02:30 --reason x
	[[ $stderr == *"--until: '2027-03-14T02:30' does not exist in America/New_York: its clocks skip it"* ]]
	# A TZ that names no zone (a typo) would be read as UTC: refused.
	TZ=Asia/Shangai run -2 --separate-stderr sr-admin pause c1 --until "2027-12-03 18:00" --reason x
	[[ $stderr == *"TZ='Asia/Shangai' names no zone"* ]]
	# So is one with a digit that is no rule, or a file that is no zone's
	# (before: each read as UTC, exit 0).
	for tz in Etc/GMT+13 Asia/Shangai8 /etc/passwd ../../../../etc/passwd; do
		TZ=$tz run -2 --separate-stderr sr-admin pause c1 --until "2027-12-03 18:00" --reason x
		[[ $stderr == *"TZ='$tz' names no zone"* ]]
	done
	assert_equal "$(sr-admin limits c1 | jq -r .paused_until_at)" 2027-12-03T18:00:00.000Z
	# A POSIX rule is a zone: CST-8 is +08:00.
	TZ=CST-8 run -0 --separate-stderr sr-admin pause c1 --until "2027-12-04 18:00" --reason x
	[[ $stderr == *"read in CST-8 (CST, +08:00), that is 2027-12-04T10:00:00.000Z"* ]]
	# --since: Shanghai's clock two hours ago selects the entries since then
	# (read as UTC it would be six hours ahead: none).
	rcli XADD 't:carrier:{c1}:audit' "$(( ($(date +%s) - 3 * 3600) * 1000 ))-0" card K0 event queued >/dev/null
	since=$(TZ=Asia/Shanghai date -d '2 hours ago' '+%F %H:%M')
	TZ=Asia/Shanghai run -0 --separate-stderr sr-admin audit --account c1 --since "$since"
	assert_equal "$(jq -r 'select(.card != "") | .card' <<<"$output" | sort -u | paste -sd' ')" "C1 C2"
	[[ $stderr == *"--since '$since' has no zone: read in Asia/Shanghai (CST, +08:00)"* ]]
	# --as-of: an export taken an hour ago on Shanghai's clock.
	taken=$(TZ=Asia/Shanghai date -d '1 hour ago' '+%F %H:%M')
	TZ=Asia/Shanghai run -0 --separate-stderr sr-asset --as-of "$taken" <<<'{"card":"C3","carrier":"c1","data_used_kb":5}'
	[[ $stderr == *"--as-of '$taken' has no zone: read in Asia/Shanghai (CST, +08:00)"* ]]
	assert_equal "$(sr-admin show C3 | jq -r .facts_as_of.data_used_kb.as_of_ms)" \
		"$(TZ=Asia/Shanghai date -d "$taken" +%s)000"
}

@test "--table --local gives its times in the local zone, with its offset; --utc and JSON give UTC" {
	ms=$(sr-admin list c1 | jq -r .due_ms)
	local_t=$(TZ=Asia/Shanghai date -d "@$((ms / 1000))" +%Y-%m-%dT%H:%M:%S).$(printf %03d $((ms % 1000)))+08:00
	TZ=Asia/Shanghai run -0 sr-admin list c1 --table --local
	assert_line --index 1 --partial "$local_t"
	for utc in --utc ''; do
		TZ=Asia/Shanghai run -0 sr-admin list c1 --table $utc
		assert_line --index 1 --partial "$(iso "$ms")"
	done
	TZ=Asia/Shanghai run -0 sr-admin list c1
	assert_equal "$(jq -r .due_at <<<"$output")" "$(iso "$ms")"
	# why's sentence too, in a table.
	TZ=Asia/Shanghai run -0 sr-admin why C2 --table --local
	assert_line --index 1 --regexp 'due now \(since [0-9-]+T[0-9:]+\+08:00 \('
	TZ=Asia/Shanghai run -0 sr-admin why C2
	jq -e '.why | test("since [0-9-]+T[0-9:]+Z \\(")' <<<"$output"
	# JSON is UTC whoever reads it: --local without --table is refused.
	run -2 --separate-stderr sr-admin list c1 --local
	[[ $stderr == *"--local: only for --table"* ]]
	run -2 sr-admin list c1 --table --utc --local
	TZ=Asia/Shangai run -2 --separate-stderr sr-admin list c1 --table --local
	[[ $stderr == *"TZ='Asia/Shangai' names no zone"* ]]
}
