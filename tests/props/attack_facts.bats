#!/usr/bin/env bats
# attack_facts.bats - defects found by attacking facts with times: odd
# times, writers at once, facts stored by older releases.

bats_require_minimum_version 1.5.0

load ../test_helper

# blocked N: wait until N clients wait on a paused write (CLIENT PAUSE WRITE).
blocked() {
	local i
	for i in $(seq 200); do
		[ "$(rcli CLIENT LIST | grep -c 'flags=b.* cmd=evalsha')" -ge "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

@test "a card's device stays its member when an older row moving it elsewhere loses to a newer write naming the same device" {
	# M1 is on DX as of ten minutes ago. At once: a request saying (as of
	# now) M1 is on DX, and an export row taken five minutes ago moving
	# it to DY. The export read M1 on DX (old) before the request wrote;
	# its device fact is older than the request's and is not written: M1
	# stays on DX, and must stay DX's member (a DX request evaluates it).
	[ "${SRQ_TEST_REDIS:-}" != cluster ] || skip "CLIENT PAUSE orders the two writers on one server"
	t0=$(( $(date +%s%3N) - 600000 ))
	printf '{"card":"M1","carrier":"c1","device":"DX","pkg_expires_at":%d,"status":"active","as_of":%d}\n' \
		"$FUTURE" "$t0" | sr-asset >/dev/null
	rcli CLIENT PAUSE 10000 WRITE >/dev/null
	printf '{"card":"M1","carrier":"c1","scene":"polling","as_of":%d,"facts":{"device":"DX"}}\n' \
		$((t0 + 600000)) | sr-enqueue >"$T/request.out" &
	blocked 1
	printf '{"card":"M1","carrier":"c1","device":"DY","as_of":%d}\n' $((t0 + 300000)) | sr-asset >"$T/row.out" &
	blocked 2
	rcli CLIENT UNPAUSE >/dev/null
	wait
	assert_equal "$(jq -c .stale_facts "$T/row.out")" '["device"]'
	assert_equal "$(rcli HGET t:card:M1:facts dv)" DX
	# DX is disabled: its cards are stopped, M1 among them.
	run -0 sr-enqueue <<<'{"device":"DX","scene":"device","facts":{"disabled":1}}'
	assert_equal "$(jq -r .status <<<"$output")" device_queued
	dev-eval --until-empty --for 10 >/dev/null
	assert_equal "$(sr-admin show M1 | jq -r '.command.action // "none"')" stop
}

@test "a time at or before 1970 is refused with its reason, not taken for now" {
	# A null timestamp exported as the epoch (1970-01-01T00:00:00Z) is the
	# oldest time there is: it must not be read as "now" and win over the
	# renewal sent a minute ago; and one before the epoch says why it is
	# refused.
	printf '{"card":"Z1","carrier":"c1","pkg_expires_at":%d,"status":"active"}\n' "$FUTURE" | sr-asset >/dev/null
	cat >"$T/in" <<-EOF
	{"card":"Z1","carrier":"c1","scene":"package_expired","as_of":"1970-01-01T00:00:00Z","facts":{"pkg_expires_at":$PAST}}
	{"card":"Z1","carrier":"c1","scene":"package_expired","as_of":"1970-01-01T00:30:00+01:00","facts":{"pkg_expires_at":$PAST}}
	EOF
	run --separate-stderr sr-enqueue <"$T/in"
	assert_equal "$(rcli HGET t:card:Z1:facts pe)" "$FUTURE"
	assert_equal "$(jq -r .status <<<"$output" | paste -sd' ')" "rejected rejected"
	jq -r .error <<<"$output" >"$T/errors"
	run cat "$T/errors"
	assert_line --index 0 --partial "'1970-01-01T00:00:00Z'"
	assert_line --index 1 --partial "'1970-01-01T00:30:00+01:00'"
	# The same from the flag: 60000 days ago is before the epoch.
	run -2 sr-asset --as-of 60000d </dev/null
	assert_output --partial "--as-of"
}

@test "a resume clears stopped_by of a card whose facts 0.1 wrote: the old field does not come back" {
	# L1 was stopped by hand under 0.1 (its facts in the long fields, not
	# migrated). The stop by hand is handed back to srq (stopped_by auto),
	# the customer renews, srq resumes the card: it is no one's stop now.
	rcli HSET t:card:L1:facts carrier c1 status stopped stopped_by manual pkg_expires_at "$PAST" >/dev/null
	echo '{"card":"L1","status":"stopped"}' >"$T/gw-cards.jsonl"
	gwsim_start --cards "$T/gw-cards.jsonl"
	echo '{"card":"L1","carrier":"c1","stopped_by":"auto"}' | sr-asset >/dev/null
	run -0 sr-enqueue <<<"{\"card\":\"L1\",\"carrier\":\"c1\",\"scene\":\"order\",\"facts\":{\"pkg_expires_at\":$FUTURE}}"
	assert_equal "$(jq -r '"\(.status) \(.action)"' <<<"$output")" "queued resume"
	drain_until_empty
	assert_equal "$(gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" | jq -r .status)" active
	assert_equal "$(sr-admin show L1 | jq -c '[.facts.status, .facts.stopped_by]')" '["active",null]'
	# The carrier suspends it (an export taken since says so), then the
	# customer renews again: srq resumes it; it was not stopped by hand.
	echo '{"card":"L1","carrier":"c1","status":"stopped"}' | sr-asset >/dev/null
	run -0 sr-enqueue <<<"{\"card\":\"L1\",\"carrier\":\"c1\",\"scene\":\"order\",\"facts\":{\"pkg_expires_at\":$FUTURE}}"
	assert_equal "$(jq -r '"\(.status) \(.action)"' <<<"$output")" "queued resume"
}

@test "after Redis's clock steps back, a renewal is news: it is written and the card resumed" {
	# Redis runs under the clock shim (tests/props/clock.bats): its clock steps
	# back ten minutes (NTP) after the expiry was written. The renewal
	# that follows is the newest fact there is; the README says a
	# backward step only makes waits longer.
	[ "${SRQ_TEST_REDIS:-}" != cluster ] || skip "the clock shim runs one server"
	SHIM="$PROJECT_ROOT/build/clockshift.so"
	redis_stop # (setup's, not under the shim)
	echo 0 >"$T/shift"
	CLOCKSHIFT_FILE="$T/shift" LD_PRELOAD="$SHIM" redis_start
	printf '{"card":"R1","carrier":"c1","pkg_expires_at":%d,"status":"active"}\n' "$FUTURE" | sr-asset >/dev/null
	run -0 sr-enqueue <<<"{\"card\":\"R1\",\"carrier\":\"c1\",\"scene\":\"package_expired\",\"facts\":{\"pkg_expires_at\":$PAST}}"
	assert_equal "$(jq -r '"\(.status) \(.action)"' <<<"$output")" "queued stop"
	echo -600000 >"$T/shift.new" && mv "$T/shift.new" "$T/shift"
	sleep 0.05
	run -0 sr-enqueue <<<"{\"card\":\"R1\",\"carrier\":\"c1\",\"scene\":\"order\",\"facts\":{\"pkg_expires_at\":$FUTURE}}"
	assert_equal "$(jq -c '.stale_facts' <<<"$output")" null
	assert_equal "$(jq -r '"\(.status) \(.action)"' <<<"$output")" "cancelled none"
	assert_equal "$(rcli HGET t:card:R1:facts pe)" "$FUTURE"
}

@test "an as_of that is not a calendar time is refused, not read as another time" {
	# An hour of -1, a minute of -5, the 31st of February, a zone of +-1:
	# each refused; only the last, a real leap day, is written.
	printf '{"card":"Q1","carrier":"c1","pkg_expires_at":%d,"status":"active"}\n' "$FUTURE" | sr-asset >/dev/null
	{
		echo card,carrier,refunded,as_of
		for t in 2026-12-03T-1:00Z 2026-12-03T10:-5Z 2026-02-31T00:00:00Z 2025-02-29T00:00:00Z \
			2026-12-03T10:00+-1:00 '2026-12-03T 1:00Z'; do
			echo "Q1,c1,1,$t"
		done
		echo "Q1,c1,0,2024-02-29T00:00:00Z"
	} >"$T/in.csv"
	run -1 --separate-stderr sr-enqueue --csv --scene refund <"$T/in.csv"
	assert_equal "$(jq -r .status <<<"$output" | paste -sd' ')" "rejected rejected rejected rejected rejected rejected noop"
	assert_equal "$(rcli HGET t:card:Q1:facts rf)" 0
}
