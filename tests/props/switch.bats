#!/usr/bin/env bats
# switch.bats - the global switch: the direct path when off, nothing claimed,
# the queue kept and re-judged when on again, and the device lock shared.

bats_require_minimum_version 1.5.0

load ../test_helper

@test "switch off: requests run directly, the dispatchers claim nothing, the queue keeps its commands" {
	gwsim_start
	run -0 sr-enqueue < <(request Q1 order "$PAST")
	assert_output --partial '"status":"queued"'
	run -0 sr-admin switch off --reason "test"
	assert_output '{"switch":"off"}'
	run -0 --separate-stderr sr-claim
	assert_output ''
	[[ $stderr == *"switch is off"* ]]
	run -0 --separate-stderr dev-eval
	[[ $stderr == *"switch is off"* ]]
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:stop_resume:high' 0 -1)" Q1
	# A request is executed on the spot, and the facts follow.
	run -0 sr-enqueue < <(request P1 order "$PAST")
	assert_output --partial '"status":"direct_ok","action":"stop","reason":"package_expired"'
	assert_output --partial '"tries":1'
	assert_equal "$(rcli HGET t:card:P1:facts st)" stopped
	assert_equal "$(jq -r '"\(.card) \(.kind) \(.code)"' "$T/gw.log")" "P1 stop OK"
	# Renewed right away: the resume would be inside the card's interval, so
	# it is not called; it fails and stays queued for when the switch is on.
	run -3 --separate-stderr sr-enqueue < <(request P1 order "$FUTURE" stopped)
	assert_output --partial '"status":"direct_failed","action":"resume"'
	assert_output --partial 'too recently'
	assert_output --partial '"queued_ver"'
	# Its exit 3 is said.
	[[ $stderr == *"direct call failed: queued for when the switch is on"* ]]
	assert_equal "$(wc -l <"$T/gw.log")" 1
	# The audit has who changed the switch and why.
	run rcli XRANGE 't:{global}:admin_audit' - +
	assert_line test
}

@test "switch off: a card whose command an operator froze is not called; its request goes to the queue" {
	gwsim_start
	sr-enqueue < <(request Z1 order "$FUTURE" stopped) >/dev/null
	sr-admin freeze Z1 --reason "customer dispute" >/dev/null
	sr-admin switch off --reason incident >/dev/null
	# The same intent: answered as the queue answers it, the freeze kept.
	run -0 sr-enqueue < <(request Z1 order "$FUTURE" stopped)
	assert_equal "$(jq -r '"\(.status) \(.ver)"' <<<"$output")" "unchanged 1"
	assert_equal "$(rcli HGET 't:carrier:{c1}:card:Z1' frozen) $(rcli ZRANGE 't:carrier:{c1}:frozen' 0 -1)" "1 Z1"
	assert_equal "$(jq -s length "$T/gw.log")" 0
	# Another card is still called on the spot.
	run -0 sr-enqueue < <(request P1 order "$PAST")
	assert_output --partial '"status":"direct_ok"'
	assert_equal "$(jq -r .card "$T/gw.log")" P1
}

@test "switch off: a request whose facts key is damaged is an error, not a call; the next card is still called" {
	gwsim_start
	sr-admin switch off --reason incident >/dev/null
	rcli SET t:card:F1:facts clobbered >/dev/null
	run -3 --separate-stderr sr-enqueue < <(request F1 order "$PAST"; request F2 order "$PAST")
	assert_equal "$(jq -r '"\(.card) \(.status)"' <<<"$output" | paste -sd,)" "F1 error,F2 direct_ok"
	assert_equal "$(jq -r 'select(.card == "F1") | .error' <<<"$output")" \
		"facts not read: WRONGTYPE Operation against a key holding the wrong kind of value"
	[[ $stderr == *"line 1: not queued: facts not read: WRONGTYPE"* ]]
	# Only F2 reached the carrier; F1's damaged key is left for an operator.
	assert_equal "$(jq -r .card "$T/gw.log" | paste -sd,)" F2
	assert_equal "$(rcli GET t:card:F1:facts)" clobbered
}

@test "switch off: Redis refusing writes (out of memory) means no call at all, and every line says error" {
	gwsim_start
	sr-admin switch off --reason incident >/dev/null
	rcli CONFIG SET maxmemory 1 >/dev/null
	run -3 --separate-stderr sr-enqueue < <(request M1 order "$PAST"; request M2 order "$PAST")
	assert_equal "$(jq -r '"\(.card) \(.status)"' <<<"$output" | paste -sd,)" "M1 error,M2 error"
	assert_equal "$(jq -r .error <<<"$output" | grep -c '^facts not written: OOM')" 2
	assert_equal "$(jq -s length "$T/gw.log")" 0
}

@test "switch off: an account only the direct path has served is an account: audited, counted, swept" {
	gwsim_start
	sr-admin switch off --reason incident >/dev/null
	run -0 sr-enqueue < <(printf '{"card":"P7","carrier":"c7","scene":"order","facts":{"pkg_expires_at":%d}}\n' "$PAST")
	assert_output --partial '"status":"direct_ok"'
	run -0 sr-admin audit --account c7
	assert_equal "$(jq -r '"\(.card) \(.event)"' <<<"$output")" "P7 direct:ok"
	assert_equal "$(sr-stat | jq -r 'select(.carrier == "c7") | .carrier')" c7
	assert_equal "$(rcli SMEMBERS t:accounts)" c7
}

@test "switch off: at most 3 tries, 2 s apart, each outside the card's interval" {
	gwsim_start --fault-429 1 --retry-after 0
	sr-admin switch off --reason test >/dev/null
	run -3 sr-enqueue < <(request R1 order "$PAST")
	assert_output --partial '"status":"direct_failed"'
	assert_output --partial '"tries":3'
	assert_equal "$(jq -r .kind "$T/gw.log" | tr '\n' ' ')" "stop stop stop "
	# 2 s apart (a little scheduling slack below, none above the interval).
	jq -s -e 'map(.t) | [range(1; length) as $i | .[$i] - .[$i-1]] | all(. >= 1990)' "$T/gw.log"
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "switch off: a renewal while the queue's stop of the card is unresolved is queued as its resume, as with the switch on" {
	# The stop was applied, but its answer lost (5xx after applying): the
	# command is confirming, the card stopped at the carrier.
	gwsim_start --fault-5xx-after 1
	sr-enqueue < <(request C1 order "$PAST") >/dev/null
	assert_equal "$(sr-claim | sr-exec | sr-confirm | jq -r .state)" confirming
	sr-admin switch off --reason test >/dev/null
	# The facts say nothing to do; the queue knows a stop may have gone.
	run -0 sr-enqueue < <(request C1 order "$FUTURE")
	assert_equal "$(jq -r '"\(.status) \(.action) \(.reason)"' <<<"$output")" "queued resume entitled"
	sr-admin switch on --reason test >/dev/null
	# A healthy carrier, where the stop landed.
	echo '{"card":"C1","status":"stopped"}' >"$T/cards.jsonl"
	gwsim_start --cards "$T/cards.jsonl"
	sleep 1.3 # the card's interval
	drain_until_empty
	assert_equal "$(jq -r 'select(.card == "C1") | .kind' "$T/gw.log" | tail -1)" resume
}

# oom_during_call: P1's request run on the spot, Redis out of memory while
# its call is at the carrier (1.5 s late); its line in $T/out, exit in $T/rc.
oom_during_call() {
	sr-admin switch off --reason test >/dev/null
	(
		rc=0
		sr-enqueue < <(request P1 order "$PAST") >"$T/out" 2>"$T/err" || rc=$?
		echo "$rc" >"$T/rc"
	) &
	local pid=$!
	sleep 0.7
	rcli CONFIG SET maxmemory 1 >/dev/null
	wait "$pid"
	rcli CONFIG SET maxmemory 0 >/dev/null
}

@test "switch off: a request that failed at the carrier and that Redis then refused to queue says error, not direct_failed" {
	gwsim_start --latency-ms 1500 --fault-5xx-before 1
	oom_during_call
	assert_equal "$(cat "$T/rc")" 3
	assert_equal "$(jq -r .status "$T/out")" error
	[[ $(jq -r .error "$T/out") == *"not queued after the direct call failed"*OOM* ]]
}

@test "switch off: a call that went, whose record Redis then refused, says so in its line" {
	gwsim_start --latency-ms 1500
	oom_during_call
	assert_equal "$(cat "$T/rc")" 3
	assert_equal "$(jq -r '"\(.status) \(.warning)"' "$T/out" | cut -c1-31)" "direct_ok outcome not recorded:"
	[[ $(jq -r .warning "$T/out") == *OOM* ]]
	assert_equal "$(jq -r '"\(.card) \(.kind) \(.code)"' "$T/gw.log")" "P1 stop OK"
}

@test "switch off: an account Redis refused to register is said as such, and registered with its next request" {
	gwsim_start
	sr-admin switch off --reason test >/dev/null
	rcli SET t:accounts clobbered >/dev/null
	run -3 --separate-stderr sr-enqueue < <(request B1 order "$PAST")
	assert_equal "$(jq -r '"\(.status) \(.warning | split(":")[0])"' <<<"$output")" "direct_ok account not registered"
	# The outcome itself was recorded.
	assert_equal "$(rcli HGET t:card:B1:facts st)" stopped
	rcli DEL t:accounts >/dev/null
	run -0 sr-enqueue < <(request B2 order "$PAST")
	assert_equal "$(rcli SMEMBERS t:accounts)" c1
}

@test "switch off: Redis lost during the direct calls: a card the carrier already stopped says so, not error" {
	gwsim_start --fail-account c2
	sr-admin switch off --reason test >/dev/null
	{
		printf '{"card":"A1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d,"status":"active"}}\n' "$PAST"
		printf '{"card":"B1","carrier":"c2","scene":"order","facts":{"pkg_expires_at":%d,"status":"active"}}\n' "$PAST"
	} >"$T/in"
	rc=0
	sr-enqueue <"$T/in" >"$T/out" 2>"$T/err" &
	pid=$!
	# A1 is stopped at once; B1's account fails, and it waits to try again.
	for _ in $(seq 100); do grep -q '"A1"' "$T/gw.log" && break; sleep 0.02; done
	sleep 0.5
	redis_stop
	wait "$pid" || rc=$?
	assert_equal "$rc" 3
	assert_equal "$(jq -r '"\(.card) \(.status) \(.warning // "-" | split(":")[0])"' "$T/out" | paste -sd,)" \
		"A1 direct_ok outcome not recorded,B1 error -"
	assert_equal "$(jq -r 'select(.card == "A1") | "\(.kind) \(.code)"' "$T/gw.log")" "stop OK"
}

@test "switch on again: queued commands whose facts changed meanwhile are superseded, not executed" {
	gwsim_start
	run -0 sr-enqueue < <(request Q1 order "$PAST"; request Q2 order "$PAST")
	sr-admin switch off --reason test >/dev/null
	# While off, Q1 is renewed in the asset mirror.
	printf '{"card":"Q1","carrier":"c1","pkg_expires_at":%d}\n' "$FUTURE" | sr-asset >/dev/null
	sr-admin switch on --reason test >/dev/null
	run -0 bash -c 'sr-claim --until-empty --for 20 | sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r '"\(.card) \(.outcome)"' "$T/results" | sort | tr '\n' ',')" "Q1 superseded,Q2 ok,"
	assert_equal "$(jq -r .card "$T/gw.log")" Q2
}

@test "the direct path and dev-eval never hold the same device at once" {
	export SRQ_LOCK_TRACE="$T/locks"
	# A disabled device: each of its cards is stopped for a device-level
	# reason, so the direct path takes the device lock for the call.
	for k in 1 2 3 4 5 6; do
		printf '{"card":"L%d","carrier":"c1","device":"D1","pkg_expires_at":%d,"status":"active"}\n' "$k" "$FUTURE"
	done | sr-asset >/dev/null
	printf '{"device":"D1","disabled":1}\n' | sr-asset >/dev/null
	gwsim_start --latency-ms 300
	# Race them, several rounds: the switch flips while both are at work.
	for k in 1 2 3; do
		sr-admin switch off --reason test >/dev/null
		printf '{"card":"L%d","carrier":"c1","scene":"device"}\n{"card":"L%d","carrier":"c1","scene":"device"}\n' \
			"$k" $((k + 3)) | sr-enqueue >>"$T/direct" &
		direct=$!
		sleep 0.1
		sr-admin switch on --reason test >/dev/null
		printf '{"device":"D1","scene":"device"}\n' | sr-enqueue >/dev/null
		dev-eval --until-empty --for 10 >>"$T/deveval"
		wait "$direct" || true
	done
	# Both really took the lock, more than once each...
	[ "$(grep -c '^acquire D1 sr-enqueue' "$T/locks")" -ge 3 ]
	[ "$(grep -c '^acquire D1 dev-eval' "$T/locks")" -ge 3 ]
	# ...and no two holds overlap: sorted by time, acquire and release alternate.
	run bash -c "sort -k5,5n '$T/locks' | awk '{print \$1}' | uniq -d"
	assert_output ''
	assert_equal "$(sort -k5,5n "$T/locks" | head -1 | cut -d' ' -f1)" acquire
	# dev-eval waited for the lock instead of giving up or overlapping.
	assert_equal "$(jq -r .state "$T/deveval" | sort -u)" done
}

@test "switch off: the direct path records the card's new status before it lets the device go" {
	# dev-eval takes the device the moment the direct path lets it go, and
	# judges its cards on their facts: a status written after that still
	# says active, and dev-eval queues a stop of a card just stopped. Redis's
	# own order (MONITOR) says which came first; on a cluster the device is
	# one whose lock lives on the card's facts' server, for one MONITOR to
	# see both.
	local device k
	for k in $(seq 64); do
		[ "$(server_of "t:device:D$k:lock")" = "$(server_of t:card:L1:facts)" ] && break
	done
	device=D$k
	printf '{"card":"L1","carrier":"c1","device":"%s","pkg_expires_at":%d,"status":"active"}\n' \
		"$device" "$FUTURE" | sr-asset >/dev/null
	printf '{"device":"%s","disabled":1}\n' "$device" | sr-asset >/dev/null
	gwsim_start
	sr-admin switch off --reason test >/dev/null
	# shellcheck disable=SC2046 # (its address: an option and its value)
	redis-cli $(server_of t:card:L1:facts) MONITOR >"$T/mon" 3>&- &
	mon=$!
	for _ in $(seq 100); do [ -s "$T/mon" ] && break; sleep 0.02; done # MONITOR is on
	run -0 sr-enqueue <<<'{"card":"L1","carrier":"c1","scene":"device"}'
	assert_equal "$(echo "$output" | jq -r .status)" direct_ok
	for _ in $(seq 100); do grep -q "\"DEL\" \"t:device:$device:lock\"" "$T/mon" && break; sleep 0.02; done
	kill "$mon"
	written=$(grep -n '"HSET" "t:card:L1:facts".*"stopped"' "$T/mon" | head -1 | cut -d: -f1)
	released=$(grep -n "\"DEL\" \"t:device:$device:lock\"" "$T/mon" | head -1 | cut -d: -f1)
	[ -n "$written" ] && [ -n "$released" ]
	[ "$written" -lt "$released" ] || { echo "the lock was let go (MONITOR line $released) before the status was written (line $written)"; false; }
	assert_equal "$(sr-admin show L1 | jq -r .facts.status)" stopped
}

@test "switch off: a stop the carrier accepted but has not applied is not written as the card's status" {
	# An asynchronous carrier: the change lands 3 s after it is accepted.
	gwsim_start --async-ms 3000
	sr-admin switch off --reason test >/dev/null
	run -0 sr-enqueue < <(request A1 order "$PAST")
	assert_equal "$(echo "$output" | jq -r .status)" direct_ok
	assert_equal "$(sr-admin show A1 | jq -r .facts.status)" active
	# Once it has landed, the next request finds it there, and says so.
	for _ in $(seq 100); do grep -q '"kind":"apply"' "$T/gw.log" && break; sleep 0.1; done
	run -0 sr-enqueue < <(request A1 order "$PAST")
	assert_equal "$(sr-admin show A1 | jq -r .facts.status)" stopped
	assert_equal "$(jq -r .code "$T/gw.log" | paste -sd,)" ACCEPTED,APPLIED,ALREADY
}

@test "switch off: a call refused for rate gives the card's interval back and is tried again" {
	# The carrier allows one call a second; srq's pace allows more, so the
	# second card's first call is refused (429), not applied.
	gwsim_start --qps 1
	sr-admin switch off --reason "legacy path" >/dev/null
	run -0 sr-enqueue < <(request A1 order "$PAST"; request A2 order "$PAST")
	assert_equal "$(echo "$output" | jq -r '"\(.card) \(.status) \(.tries)"' | tr '\n' ',')" \
		"A1 direct_ok 1,A2 direct_ok 2,"
	assert_equal "$(jq -r '"\(.card) \(.http)"' "$T/gw.log" | tr '\n' ',')" "A1 200,A2 429,A2 200,"
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "a switch set off in the key of older releases stays off until the switch is set" {
	rcli SET t:config:stop_resume_queue_enabled 0 >/dev/null
	run -0 sr-admin switch show
	assert_output '{"switch":"off"}'
	run -0 sr-admin switch on --reason "upgraded"
	assert_output '{"switch":"on"}'
	assert_equal "$(rcli GET 't:{global}:stop_resume_queue_enabled')" 1
}

# device_cards N: cards L1..LN of device D1, disabled: each of them is
# stopped for a device-level reason, so the direct path takes the device lock.
device_cards() { # device_cards N
	local k
	for k in $(seq "$1"); do
		printf '{"card":"L%d","carrier":"c1","device":"D1","pkg_expires_at":%d,"status":"active"}\n' "$k" "$FUTURE"
	done | sr-asset >/dev/null
	printf '{"device":"D1","disabled":1}\n' | sr-asset >/dev/null
}

# wait_lock: until the direct path holds D1's lock (up to 3 s).
wait_lock() {
	local i
	for i in $(seq 150); do
		[ "$(rcli EXISTS t:device:D1:lock)" = 1 ] && return 0
		sleep 0.02
	done
	return 1
}

# direct_under_lock: L1 of the disabled device D1 run on the spot (switch
# off) in the background, its pid in $direct, its line in $T/direct, once
# it holds D1's lock. Every stop is refused for rate: 3 tries over 4 s, all
# under the lock.
direct_under_lock() {
	device_cards 1
	gwsim_start --fault-429 1 --retry-after 0
	sr-admin switch off --reason test >/dev/null
	printf '{"card":"L1","carrier":"c1","scene":"device"}\n' | sr-enqueue >"$T/direct" 2>"$T/direct.err" &
	direct=$!
	wait_lock
}

@test "switch off: a direct run longer than the lock's hold keeps the device lock; dev-eval waits" {
	export SRQ_LOCK_TRACE="$T/locks"
	direct_under_lock
	# As if most of the hold had gone by (3 calls and 3 queries at a 10 s
	# gateway timeout outlast any fixed hold): 1.5 s left, the run needs 4.
	rcli PEXPIRE t:device:D1:lock 1500 >/dev/null
	sr-admin switch on --reason test >/dev/null
	printf '{"device":"D1","scene":"device"}\n' | sr-enqueue >/dev/null
	dev-eval --until-empty --for 15 >"$T/deveval"
	wait "$direct" || true
	assert_equal "$(jq -r '"\(.status) \(.tries)"' "$T/direct")" "direct_failed 3"
	assert_equal "$(jq -r .kind "$T/gw.log" | tr '\n' ' ')" "stop stop stop "
	# The lock was kept: only the call's failure is said, no lost lock.
	assert_equal "$(cat "$T/direct.err")" "sr-enqueue: warning: direct call failed: queued for when the switch is on"
	# Both took the lock, and never at once: sorted by time, acquire and
	# release alternate.
	assert_equal "$(cut -d' ' -f1,3 "$T/locks" | sort | uniq -c | awk '{print $1, $2, $3}' | paste -sd,)" \
		"1 acquire dev-eval,1 acquire sr-enqueue,1 release dev-eval,1 release sr-enqueue"
	run bash -c "sort -k5,5n '$T/locks' | awk '{print \$1}' | uniq -d"
	assert_output ''
	# (dev-eval tried again while the direct run held the device)
	assert_equal "$(jq -r .state "$T/deveval" | tail -1)" done
}

@test "switch off: a device lock lost under a direct run is said, and the card is not called again" {
	direct_under_lock
	# Another holder has it now (its hold ran out and it was taken).
	rcli SET t:device:D1:lock someone-else PX 20000 >/dev/null
	rc=0
	wait "$direct" || rc=$?
	assert_equal "$rc" 3
	assert_equal "$(jq -r '"\(.status) \(.error)"' "$T/direct")" "direct_failed device lock lost"
	jq -e .queued_ver "$T/direct" >/dev/null
	assert_equal "$(jq -s length "$T/gw.log")" 1
	grep -q "device lock 'D1' lost" "$T/direct.err"
	assert_equal "$(rcli GET t:device:D1:lock)" someone-else
}

@test "switch off: the next try waits for the carrier's Retry-After" {
	gwsim_start --fault-429 1 --retry-after 3
	sr-admin switch off --reason test >/dev/null
	run -3 --separate-stderr sr-enqueue < <(request R1 order "$PAST")
	assert_equal "$(jq -r '"\(.status) \(.tries)"' <<<"$output")" "direct_failed 3"
	assert_equal "$(jq -r .kind "$T/gw.log" | tr '\n' ' ')" "stop stop stop "
	# 3 s apart, not the usual 2 s.
	jq -s -e 'map(.t) | [range(1; length) as $i | .[$i] - .[$i-1]] | all(. >= 2990)' "$T/gw.log"
}

@test "switch off: a Retry-After longer than the direct path waits fails the request to the queue" {
	gwsim_start --fault-429 1 --retry-after 60
	sr-admin switch off --reason test >/dev/null
	SECONDS=0
	run -3 --separate-stderr sr-enqueue < <(request R1 order "$PAST")
	assert_equal "$(jq -r '"\(.status) \(.tries)"' <<<"$output")" "direct_failed 1"
	[ "$SECONDS" -lt 3 ] # failed at once, not after minutes
	assert_output --partial 'retry after 60 s'
	jq -e .queued_ver <<<"$output" >/dev/null
	assert_equal "$(jq -s length "$T/gw.log")" 1
}

# half_open: until c1's breaker is half-open (its cool-down over; 5 s at most).
half_open() {
	local i
	for i in $(seq 80); do
		[ "$(sr-admin breaker c1 | jq -r .breaker)" = half_open ] && return 0
		sleep 0.1
	done
	return 1
}

@test "switch off: an open breaker sends its probe after the cool-down; it reopens, then closes on a healthy carrier" {
	# A cool-down longer than the 2 s between a request's tries: one probe
	# per request.
	profiles 'from = default' 'accounts = *' 'breaker_failures = 1' \
		'breaker_cooldown_ms = 5000' 'breaker_cooldown_max_ms = 5000'
	gwsim_start --fail-account c1
	sr-admin switch off --reason test >/dev/null
	# A call fails: the breaker opens.
	run -3 sr-enqueue < <(request B1 order "$PAST")
	assert_output --partial '"status":"direct_failed"'
	[ "$(sr-admin breaker c1 | jq -r .breaker)" != closed ]
	# After the cool-down one request's call is the probe; still failing,
	# it reopens the breaker.
	half_open
	run -3 sr-enqueue < <(request B2 order "$PAST")
	assert_equal "$(jq -s '[.[] | select(.card == "B2")] | length' "$T/gw.log")" 1
	assert_equal "$(sr-admin audit --account c1 | jq -r .event | grep -c breaker:reopened)" 1
	gw_set fail_account=
	run -3 sr-enqueue < <(request B3 order "$PAST")
	assert_output --partial 'breaker is open'
	# The carrier is back: after the cool-down the probe succeeds and closes it.
	half_open
	run -0 sr-enqueue < <(request B4 order "$PAST")
	assert_output --partial '"status":"direct_ok"'
	assert_equal "$(sr-admin breaker c1 | jq -r .breaker)" closed
	assert_equal "$(sr-admin audit --account c1 | jq -r 'select(.event | startswith("breaker")) | .event' | uniq | paste -sd,)" \
		"breaker:opened,breaker:reopened,breaker:closed"
	assert_equal "$(sr-admin alerts | jq -r 'select(.open) | .alert')" ''
	# Calls go again without waiting for anything.
	run -0 sr-enqueue < <(request B5 order "$PAST")
	assert_output --partial '"status":"direct_ok"'
}

@test "switch off: the cards of one device in one input share the run's device lock" {
	export SRQ_LOCK_TRACE="$T/locks"
	device_cards 4
	# A slow carrier: one card at a time under the lock would take 7 s, past
	# the 5 s the direct path waits for a lock another holds.
	gwsim_start --latency-ms 1800
	sr-admin switch off --reason test >/dev/null
	SECONDS=0
	run -0 sr-enqueue < <(for k in 1 2 3 4; do
		printf '{"card":"L%d","carrier":"c1","scene":"device"}\n' "$k"; done)
	assert_equal "$(jq -r '"\(.card) \(.status)"' <<<"$output" | paste -sd,)" \
		"L1 direct_ok,L2 direct_ok,L3 direct_ok,L4 direct_ok"
	[ "$SECONDS" -lt 5 ] # together, not one after the other
	# Taken once, released once, after the last of them was done.
	assert_equal "$(cut -d' ' -f1-3 "$T/locks" | paste -sd,)" "acquire D1 sr-enqueue,release D1 sr-enqueue"
	assert_equal "$(rcli EXISTS t:device:D1:lock)" 0
}

@test "switch off: a device lock another holds is waited for, then taken" {
	device_cards 1
	gwsim_start
	sr-admin switch off --reason test >/dev/null
	rcli SET t:device:D1:lock someone-else PX 1500 >/dev/null
	run -0 sr-enqueue < <(printf '{"card":"L1","carrier":"c1","scene":"device"}\n')
	assert_output --partial '"status":"direct_ok"'
	assert_equal "$(rcli EXISTS t:device:D1:lock)" 0
}
