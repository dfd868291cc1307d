#!/usr/bin/env bats
# clock.bats - a forward step of Redis's clock (NTP) opens no card's interval
# early and puts no second over the account's rate at the carrier: sr-exec
# finds it against its monotonic clock (or against what an earlier run on
# the host saved) and records it (clock_step.lua), and what its gate passed
# on the stepped clock before that is not sent. Redis
# runs under tests/helpers/clockshift.c (build/clockshift.so), which adds the
# ms in a file to its wall clock; the tools and sr-gwsim keep the true clock,
# and every check is on the carrier's own log.

bats_require_minimum_version 1.5.0

load ../test_helper

# Redis is started here, under the shim, whatever SRQ_TEST_REDIS says: make
# test-cluster leaves this file to make test.
# bats file_tags=own-redis

setup() {
	test_vars
	SRQ_TEST_REDIS=
	SHIM="$PROJECT_ROOT/build/clockshift.so"
	[ -f "$SHIM" ] || { echo "$SHIM is missing: make builds it" >&2; return 1; }
}

# redis_shifted: the test's Redis under the shim, its clock shifted by the
# ms in $T/shift.
redis_shifted() {
	echo 0 >"$T/shift"
	CLOCKSHIFT_FILE="$T/shift" LD_PRELOAD="$SHIM" redis_start
}

# step MS [FILE]: the clock of the Redis reading FILE ($T/shift) jumps MS ms
# forward. The file is replaced whole, never read half written, and the
# shim reads it again within a millisecond.
step() {
	local f=${2:-$T/shift}
	echo $(($(cat "$f") + $1)) >"$f.new"
	mv "$f.new" "$f"
	sleep 0.01
}

# arrivals N: wait until the carrier has logged N calls (at most 30 s).
arrivals() {
	local i
	for i in $(seq 600); do
		[ "$(wc -l <"$T/gw.log")" -ge "$1" ] && return 0
		sleep 0.05
	done
	echo "only $(wc -l <"$T/gw.log") arrivals, not $1" >&2
	return 1
}

# recorded ACCOUNT: the steps recorded for ACCOUNT, their sizes added up
# (its audit's clock:step entries), through $RCLI (rcli).
recorded() {
	${RCLI:-rcli} XRANGE "t:carrier:{$1}:audit" - + | awk 'p == "event" && $0 == "clock:step" { s = 1 }
		s && p == "ms" { n += $0; s = 0 } { p = $0 } END { print n + 0 }'
}

@test "a forward step of Redis's clock just after a card's stop does not let its resume in early" {
	redis_shifted
	gwsim_start
	sr-claim --follow --for 6 | sr-exec 2>"$T/exec.err" | sr-confirm >"$T/finals" &
	pid=$!
	printf '{"card":"X1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
	arrivals 1
	# Most of the card's interval (1200 ms) at once: on Redis's clock the
	# stop is now over a second old.
	step 1000
	printf '{"card":"X1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' \
		"$FUTURE" | sr-enqueue >/dev/null
	wait "$pid"
	# The stop, then the resume, never inside the carrier's interval: the
	# carrier refused nothing for frequency.
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
	assert_equal "$(jq -s -c 'map("\(.kind) \(.http)")' "$T/gw.log")" '["stop 200","resume 200"]'
	assert_equal "$(sr-admin show X1 | jq -r .facts.status)" active
	# Found, recorded at its size or more, said once.
	[ "$(recorded c1)" -ge 1000 ]
	assert_equal "$(sr-admin alerts | jq -r 'select(.alert == "clock_step") | .carrier')" c1
	grep -q "clock stepped forward by up to" "$T/exec.err"
}

@test "a step between two runs of the pipeline: the second finds it from what the first saved" {
	redis_shifted
	gwsim_start
	printf '{"card":"X1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
	sr-claim --until-empty --for 10 | sr-exec | sr-confirm >"$T/finals"
	# Between two cron runs: the second sr-exec has not seen the first's
	# readings, but the first saved them in the account's edge.
	step 1000
	printf '{"card":"X1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' \
		"$FUTURE" | sr-enqueue >/dev/null
	sr-claim --until-empty --for 10 | sr-exec | tee "$T/results" | sr-confirm >>"$T/finals"
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
	assert_equal "$(jq -s -c 'map("\(.kind) \(.http)")' "$T/gw.log")" '["stop 200","resume 200"]'
	# Its gate passed the resume on the stepped clock: not sent, and sent
	# once the step was recorded.
	assert_equal "$(jq -r 'select(.class == "clock_step") | .card' "$T/results")" X1
	[ "$(recorded c1)" -ge 1000 ]
}

@test "an account first gated after its master's step was seen is held for it too" {
	redis_shifted
	gwsim_start
	req() {
		printf '{"card":"%s","carrier":"%s","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
			"$1" "$2" "$PAST" | sr-enqueue >/dev/null
	}
	req X2 c2
	sr-claim --until-empty --for 10 | sr-exec | sr-confirm >"$T/finals"
	# Nothing saved to compare c2's first reading with (a run on another
	# host): only what the next run sees of the master before it.
	rcli HDEL 't:carrier:{c2}:edge' "clk:$(hostname)" >/dev/null
	sr-claim --follow --for 6 | sr-exec | tee "$T/results" | sr-confirm >>"$T/finals" &
	pid=$!
	req Y1 c1
	arrivals 2
	step 1000
	# c1's next task sees the step; c2 has had no gate in this run yet.
	req Y2 c1
	printf '{"card":"X2","carrier":"c2","scene":"order","facts":{"pkg_expires_at":%d}}\n' \
		"$FUTURE" | sr-enqueue >/dev/null
	wait "$pid"
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
	assert_equal "$(jq -s -c '[.[] | select(.card == "X2") | "\(.kind) \(.http)"]' "$T/gw.log")" '["stop 200","resume 200"]'
	[ "$(recorded c1)" -ge 1000 ] && [ "$(recorded c2)" -ge 1000 ]
}

@test "forward steps of Redis's clock in the middle of a drain by two pipelines: no second over the rate at the carrier" {
	redis_shifted
	export SRQ_QPS=5 SRQ_MAX_RUNNING=6 # each pipeline gets a share of each backlog
	gwsim_start --qps 5
	stop_backlog 20 a b
	for p in 1 2; do
		sr-claim --until-empty --for 30 | sr-exec 2>>"$T/exec.err" | sr-confirm >>"$T/finals" &
		pids+=($!)
	done
	# Steps smaller and larger than how far ahead the gate grants slots
	# (200 ms), and one under the rate's headroom (100 ms here), which the
	# headroom absorbs: not a step to act on.
	arrivals 6
	step 180
	arrivals 14
	step 500
	arrivals 22
	step 1300
	arrivals 30
	step 60
	wait "${pids[@]}"
	run gwcheck rate "$T/gw.log" 5
	assert_output ''
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
	# Every card stopped, once.
	assert_equal "$(jq -s '[.[] | select(.kind == "stop" and .applied)] | map(.card) | unique | length' "$T/gw.log")" 40
	assert_equal "$(jq -s '[.[] | select(.kind == "stop" and .applied)] | length' "$T/gw.log")" 40
	# Each step over the headroom recorded for both accounts, at its size
	# or more (two pipelines may both record one: waits only get longer);
	# one alert per account.
	[ "$(recorded a)" -ge 1980 ] && [ "$(recorded b)" -ge 1980 ]
	assert_equal "$(sr-admin alerts | jq -r 'select(.alert == "clock_step") | .carrier' | sort | xargs)" 'a b'
}

# serves DIR SLOT: the cluster node in DIR is the master of SLOT.
serves() {
	redis-cli -p "$(cat "$1/port")" CLUSTER NODES | awk -v s="$2" '/myself/ && /master/ {
		for (i = 9; i <= NF; i++) { split($i, r, "-"); if (s >= r[1] && s <= r[2]) f = 1 } }
		END { exit !f }'
}

@test "a step of one cluster master's clock is found from its gates' answers, and held for its accounts only" {
	# Three masters, each reading its own shift file (the shim's path is
	# relative, and each node runs in its own directory).
	CLOCKSHIFT_FILE=shift LD_PRELOAD="$SHIM" cluster_start 3
	# Account a's slot (15495) is on the third master, whose clock steps;
	# b's (3300) on the first, where the tools read TIME: a's step can
	# only be found from a's gates.
	local d
	for d in "$T"/cl/*/; do
		d=${d%/}
		echo 0 >"$d/shift"
		serves "$d" "$(ccli CLUSTER KEYSLOT '{a}')" && shifted=$d
	done
	! serves "$shifted" 0 && ! serves "$shifted" "$(ccli CLUSTER KEYSLOT '{b}')"
	shifted=$shifted/shift
	export SRQ_QPS=5
	gwsim_start --qps 5
	stop_backlog 20 a b
	sr-claim --until-empty --for 30 | sr-exec 2>"$T/exec.err" | tee "$T/results" | sr-confirm >"$T/finals" &
	pid=$!
	arrivals 8
	step 700 "$shifted"
	arrivals 20
	step 300 "$shifted"
	wait "$pid"
	run gwcheck rate "$T/gw.log" 5
	assert_output ''
	assert_equal "$(jq -s '[.[] | select(.kind == "stop" and .applied)] | length' "$T/gw.log")" 40
	# What a's gate passed on the stepped clock went again once the step
	# was recorded; nothing of b's was held.
	assert_equal "$(jq -s -r '[.[] | select(.class == "clock_step") | .carrier] | unique | join(" ")' "$T/results")" a
	RCLI=ccli
	[ "$(recorded a)" -ge 1000 ]
	assert_equal "$(recorded b)" 0
	assert_equal "$(sr-admin alerts | jq -r 'select(.alert == "clock_step") | .carrier')" a
}
