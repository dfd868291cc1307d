#!/usr/bin/env bats
# sr-exec.bats - the executor: re-judgment, gateway outcomes, backends down.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	gwsim_start
}

@test "a call no longer wanted by fresh facts is superseded without touching the gateway" {
	enqueue E1
	# The package was renewed in the asset mirror, not through sr-enqueue.
	rcli HSET t:card:E1:facts pe $((NOW + 86400)) >/dev/null
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r .outcome "$T/results")" superseded
	assert_output --partial '"state":"done"'
	assert_equal "$(wc -l <"$T/gw.log")" 0
	assert_equal "$(rcli HGET 't:carrier:{c1}:card:E1' action)" ''
}

@test "facts damaged by hand after the claim (the card's, or its device's): the task is an error and nothing is called" {
	enqueue F1
	enqueue F2
	enqueue F3
	rcli HSET t:card:F2:facts dv D7 >/dev/null
	sr-claim >"$T/tasks"
	rcli SET t:card:F1:facts clobbered >/dev/null
	rcli SET t:device:D7:facts clobbered >/dev/null
	run -3 --separate-stderr sr-exec <"$T/tasks"
	assert_equal "$(jq -r '"\(.card) \(.status // .outcome)"' <<<"$output" | sort | paste -sd,)" "F1 error,F2 error,F3 ok"
	assert_equal "$(jq -r 'select(.card == "F1") | .error' <<<"$output")" \
		"facts not read: WRONGTYPE Operation against a key holding the wrong kind of value"
	assert_equal "$(jq -r 'select(.card == "F2") | .error' <<<"$output")" \
		"device facts not read: WRONGTYPE Operation against a key holding the wrong kind of value"
	assert_equal "$(jq -r .card "$T/gw.log" | paste -sd,)" F3
	# Their commands wait, claimed, for their lease: nothing was finished.
	assert_equal "$(rcli HGET 't:carrier:{c1}:card:F1' action) $(rcli HGET 't:carrier:{c1}:card:F2' action)" "stop stop"
}

@test "a task that waited for a slot is judged again before its gate: a renewal meanwhile supersedes it" {
	gwsim_start --latency-ms 1500
	enqueue W1
	enqueue W2
	sr-claim >"$T/tasks"
	# One call at a time: W2 waits for W1's slot, and is renewed while W1 is
	# at the carrier (its gate pass recorded).
	sr-exec --concurrency 1 <"$T/tasks" >"$T/results" &
	pid=$!
	for i in $(seq 100); do
		[ -n "$(rcli HGET 't:carrier:{c1}:card:W1' called)" ] && break
		sleep 0.05
	done
	rcli HSET t:card:W2:facts pe $((NOW + 86400)) >/dev/null
	wait "$pid"
	assert_equal "$(jq -r '"\(.card) \(.outcome) \(.error)"' "$T/results" | sort | paste -sd,)" \
		"W1 ok ,W2 superseded re-judged: entitled"
	assert_equal "$(jq -r .card "$T/gw.log")" W1
}

@test "the request carries an idempotency key made of card, version and action" {
	enqueue E2
	run -0 drain 10
	assert_equal "$(jq -r .key "$T/gw.log")" E2-1-stop
	assert_equal "$(rcli HGET t:card:E2:facts st)" stopped
	assert_equal "$(rcli HGET t:card:E2:facts sb)" auto
}

@test "gateway unreachable: outcome retry, requeued after the interval, nothing lost" {
	enqueue E3
	run -0 bash -c 'sr-claim | SRQ_GATEWAY=http://127.0.0.1:1 sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r .outcome "$T/results")" retry
	assert_output --partial '"state":"requeued"'
	due=$(rcli ZSCORE 't:carrier:{c1}:stop_resume' E3)
	last=$(rcli HGET 't:carrier:{c1}:card:E3' last_call)
	[ "$due" -ge $((last + SRQ_MIN_INTERVAL_MS)) ]
	run -0 drain 20
	assert_equal "$(jq -r .code "$T/gw.log")" OK
}

@test "a bad task line is rejected with its line number; Redis down answers error, exit 3" {
	run -1 --separate-stderr sr-exec <<<'{"task":"call","card":"x"}'
	assert_output --partial '"status":"rejected"'
	[[ $stderr == *"line 1:"* ]]
	enqueue E4
	sr-claim >"$T/tasks"
	SRQ_REDIS="unix://$T/none.sock" run -3 --separate-stderr sr-exec <"$T/tasks"
	assert_output --partial '"status":"error"'
	assert_equal "$(wc -l <"$T/gw.log")" 0
}

@test "a timeout after the carrier applied is unknown and settled by a status query, not a re-call" {
	gwsim_stop
	gwsim_start --fault-timeout-after 1 --slow-ms 3000
	export SRQ_GATEWAY_TIMEOUT_MS=500
	enqueue E5
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r .outcome "$T/results")" unknown
	assert_output --partial '"state":"confirming"'
	run -0 drain 20
	assert_equal "$(jq -r .kind "$T/gw.log" | tr '\n' ' ')" "stop status "
	assert_equal "$(rcli HGET t:card:E5:facts st)" stopped
}

@test "Retry-After from the carrier is honoured" {
	gwsim_stop
	# Longer than the card's interval and than the first backoff.
	gwsim_start --fault-429 1 --retry-after 5
	enqueue E6
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r .outcome,.retry_after_ms "$T/results" | tr '\n' ' ')" "retry 5000 "
	due=$(rcli ZSCORE 't:carrier:{c1}:stop_resume' E6)
	last=$(rcli HGET 't:carrier:{c1}:card:E6' last_call)
	[ "$due" -ge $((last + 5000)) ]
}

@test "its diagnostics start with their UTC time in a log, with their level in the journal, bare on a terminal" {
	# A log file (cron's 2>>): each line stamped, as the wrappers' are.
	sr-exec <<<'{"task":"call","card":"x"}' >/dev/null 2>"$T/exec.log" || true
	run cat "$T/exec.log"
	assert_output --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z sr-exec: line 1: '
	# The journal (systemd names its stream in JOURNAL_STREAM): it stamps
	# lines itself, and reads each one's level from its "<N>".
	JOURNAL_STREAM=$(stat -c '%d:%i' "$T/exec.log") sr-exec <<<'{"task":"call","card":"x"}' >/dev/null 2>"$T/exec.log" || true
	run cat "$T/exec.log"
	assert_output --regexp '^<4>sr-exec: line 1: '
	# The variable inherited by a tool whose stderr is elsewhere: a log.
	JOURNAL_STREAM=1:1 sr-exec <<<'{"task":"call","card":"x"}' >/dev/null 2>"$T/exec.log" || true
	run cat "$T/exec.log"
	assert_output --regexp '^[0-9-]{10}T[0-9:]{8}Z sr-exec: line 1: '
	# On a terminal (script(1) gives it one), for a person: bare.
	run -1 script -qec "echo '{}' | sr-exec >/dev/null" /dev/null
	assert_output --regexp '^sr-exec: line 1: '
}
