#!/usr/bin/env bats
# rate.bats - the account's rate, held at the carrier's wire: calls paced
# evenly (cold connections and late arrivals included), the rate lowered
# when the carrier refuses for rate and raised again when it stops, a
# refused call retried in seconds, and a limit of 0 that never means "none".
# Every check is on the carrier's own log.

bats_require_minimum_version 1.5.0

load ../test_helper

# The cards of the log all ended stopped, each changed once (its refused
# calls aside).
all_stopped() {
	run jq -s -r '[.[] | select(.kind == "stop" and .applied)] | length' "$T/gw.log"
	assert_output "$1"
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "a backlog on 3 accounts, late and cold arrivals: no second over the limit at the carrier" {
	export SRQ_QPS=20
	# The first request of a new connection arrives 40 ms late (a TLS
	# handshake), every request up to 15 ms late.
	gwsim_start --qps 20 --conn-delay-ms 40 --jitter-ms 15
	spread_backlog 240 3
	run -0 drain 60
	run gwcheck rate "$T/gw.log" 20
	assert_output ''
	# Nothing refused, so no call was sent over the limit and retried.
	assert_equal "$(jq -s '[.[] | select(.refused)] | length' "$T/gw.log")" 0
	all_stopped 240
	# Evenly, not a second's calls at once: one call every 51 ms, so no
	# quarter of a second holds more than 5 of an account's arrivals (plus
	# one or two that the network brought closer).
	run jq -s -c 'group_by(.carrier)[] | [.[].t] | sort as $t
	  | [range(0; $t | length) as $i | [$t[] | select(. >= $t[$i] and . < $t[$i] + 250)] | length]
	  | select(max > 7)' "$T/gw.log"
	assert_output ''
}

@test "a carrier whose limit is below the configured one: srq lowers its rate, then raises it again" {
	export SRQ_QPS=20
	profiles 'from = default' 'accounts = *' 'aimd_increase = 2' 'aimd_memory_ms = 8000'
	gwsim_start --qps 10
	spread_backlog 260 1
	drain 90 >"$T/finals" &
	pid=$!
	# Let it find the carrier's limit, then raise the limit mid-run.
	sleep 12
	raised=$(date +%s%3N)
	gw_set qps=20
	wait "$pid"
	first=$(jq -s 'map(.t) | min' "$T/gw.log")
	# The carrier refused calls at first: its limit was found...
	jq -s -e --argjson f "$first" '[.[] | select(.refused and .t < $f + 3000)] | length > 0' "$T/gw.log"
	# ...and then the refusals stopped: under 5% of the calls until the raise.
	jq -s -e --argjson f "$first" --argjson r "$raised" '
	  [.[] | select(.t >= $f + 3000 and .t < $r)] | ([.[] | select(.refused)] | length) < 0.05 * length' "$T/gw.log"
	# The lowering is audited, and visible.
	rcli XRANGE 't:carrier:{c0}:audit' - + | grep -q 'rate:lowered'
	# ...with its rates and status as numbers (sr-admin audit).
	sr-admin audit --account c0 | jq -s -e '[.[] | select(.event == "rate:lowered")] | length > 0 and
	  all(.qps_from, .qps_to, .http | type == "number") and all(.qps_to < .qps_from)'
	# Once the carrier allows more, srq climbs back above the old limit: some
	# two seconds after the raise hold more than 2 x 12 arrivals.
	jq -s -e --argjson r "$raised" '
	  [.[] | select(.t > $r) | .t] | sort as $t
	  | [range(0; $t | length) as $i | [$t[] | select(. >= $t[$i] and . < $t[$i] + 2000)] | length] | max > 24' "$T/gw.log"
	# The drain converged: every card stopped once, nothing frozen.
	all_stopped 260
	assert_equal "$(rcli ZCARD 't:carrier:{c0}:frozen')" 0
	assert_equal "$(jq -r .state "$T/finals" | sort -u | grep -v -e done -e requeued)" ''
}

@test "a card refused for rate is called again within seconds, not after its interval" {
	# A long interval: were a refusal counted as a change, the card would
	# wait a minute. The carrier allows less than srq is configured for, so
	# it refuses calls for rate (429).
	export SRQ_MIN_INTERVAL_MS=60000 SRQ_QPS=20
	GW_INTERVAL_MS=50000
	gwsim_start --qps 10 --retry-after 1 --fault-5xx-after 0.3 --seed 11
	spread_backlog 40 1
	run -0 drain 30
	jq -s -e '[.[] | select(.fault == "qps")] | length > 0' "$T/gw.log"
	jq -s -e '[.[] | select(.fault == "5xx_after")] | length > 0' "$T/gw.log"
	# Each refused card's next call came within seconds (its turn in the
	# backlog at the lowered rate), far inside the minute of its interval.
	run jq -s -c '[.[] | select(.kind == "stop")] | group_by(.card)[] | sort_by(.t)
	  | [range(1; length) as $i | select(.[$i - 1].refused) | .[$i].t - .[$i - 1].t] | select(max > 15000)' "$T/gw.log"
	assert_output ''
	# A call that applied (5xx after applying) was confirmed by a query,
	# never called twice inside the interval.
	jq -s -e '[.[] | select(.kind == "status")] | length > 0' "$T/gw.log"
	all_stopped 40
}

@test "a limit of 0 never means no limit: refused by sr-admin, and stops calls if written by hand" {
	gwsim_start --qps 100
	spread_backlog 10 1
	run -2 --separate-stderr sr-admin limits c0 qps=0 running=0 --reason "pause it"
	[[ $stderr == *"0 would mean no limit"* && $stderr == *"sr-admin pause c0"* ]]
	assert_equal "$(rcli HGETALL 't:carrier:{c0}:limits')" ''
	# The environment's default as well, unless meant for a benchmark.
	SRQ_QPS=0 run -2 --separate-stderr sr-claim
	[[ $stderr == *"SRQ_QPS"*"SRQ_UNLIMITED=1"* ]]
	# Written by hand past sr-admin: no call at all, not a burst.
	rcli HSET 't:carrier:{c0}:limits' qps 0 >/dev/null
	run -0 sr-claim --follow --for 2
	assert_output ''
	assert_equal "$(wc -l <"$T/gw.log")" 0
	run -0 sr-admin why B0
	assert_equal "$(echo "$output" | jq -r .state)" paused
}

@test "random throttles at the limit are noise: 0 seconds over, and the rate is not lowered for them" {
	export SRQ_QPS=20
	# 2% of calls refused for rate at random, the carrier's limit srq's own.
	gwsim_start --qps 20 --fault-429 0.02 --seed 3
	spread_backlog 300 1
	run -0 drain 60
	run gwcheck rate "$T/gw.log" 20
	assert_output ''
	# The carrier refused several calls at random, none for its limit...
	jq -s -e '[.[] | select(.fault == "429")] | length >= 3' "$T/gw.log"
	assert_equal "$(jq -s '[.[] | select(.fault == "qps")] | length' "$T/gw.log")" 0
	# ...and none of those refusals lowered the rate (the observable: no
	# rate:lowered in the audit, the effective rate the configured one).
	run -0 rcli XRANGE 't:carrier:{c0}:audit' - +
	refute_output --partial 'rate:lowered'
	assert_equal "$(sr-admin limits c0 | jq -r .qps_effective)" 20
	all_stopped 300
}

@test "a carrier whose limit drops mid-run: srq lowers its rate, and never goes over the configured limit" {
	export SRQ_QPS=20
	gwsim_start --qps 20
	spread_backlog 240 1
	drain 90 >"$T/finals" &
	pid=$!
	sleep 4
	dropped=$(date +%s%3N)
	gw_set qps=10
	wait "$pid"
	# The lowering is audited, after the drop (an entry's id is its time).
	run -0 rcli --raw XRANGE "t:carrier:{c0}:audit" "$dropped" +
	assert_output --partial 'rate:lowered'
	run gwcheck rate "$T/gw.log" 20
	assert_output ''
	# The carrier refused calls at first, then under a tenth of them: the
	# new limit was found (AIMD probes back near it now and then).
	jq -s -e --argjson d "$dropped" '[.[] | select(.refused and .t >= $d)] | length > 0' "$T/gw.log"
	jq -s -e --argjson d "$dropped" '
	  [.[] | select(.t >= $d + 4000)] | ([.[] | select(.refused)] | length) < 0.1 * length' "$T/gw.log"
	all_stopped 240
}

@test "calls sent late (a loaded machine) widen the account's headroom, kept in its edge" {
	# The production headroom (20 ms), and an executor that sends every call
	# 60 ms after its slot (SRQ_TEST_SEND_DELAY_MS: a machine too loaded to
	# send on time, made deterministic).
	export SRQ_QPS=20 SRQ_RATE_WINDOW_MS=1020
	gwsim_start --qps 20
	spread_backlog 80 1
	SRQ_TEST_SEND_DELAY_MS=60 run -0 drain 60
	# The p99 of the lateness measured (5 ms bins, the upper end): the
	# window widened by it, bounded at 200 ms; sr-admin shows it.
	hr=$(rcli HGET 't:carrier:{c0}:edge' hr)
	[ "$hr" -ge 60 ]
	[ "$hr" -le 200 ]
	assert_equal "$(sr-admin limits c0 | jq -r .headroom_ms)" "$hr"
	# The carrier never saw more than the limit in a second.
	run gwcheck rate "$T/gw.log" 20
	assert_output ''
	all_stopped 80
}
