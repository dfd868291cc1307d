#!/usr/bin/env bats
# pipeline.bats - end to end: sr-enqueue | Redis | sr-claim | sr-exec | sr-confirm
# against sr-gwsim. Every invariant is checked on the gateway's own log:
# no card changed twice inside its interval, no account over its rate, every
# card in its judged state, no call for an obsolete command, nothing left.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	S="$T/sample"
	QPS=15
	export SRQ_QPS=$QPS
}

# sample N: generate N cards over 3 accounts, load device facts, start the
# carrier with the cards' real states.
sample() {
	gen-sample "$S" "$1" 3 "$(date +%s)" "$SRQ_PREFIX"
	rcli <"$S/devices.redis" >/dev/null
	gwsim_start --qps "$QPS" --cards "$S/gw-cards.jsonl" "${@:2}"
}

# The invariants, from the gateway's log.
assert_gateway_invariants() {
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
	run gwcheck rate "$T/gw.log" "$QPS"
	assert_output ''
	# Every card in the state the judgment asked for.
	gwcheck states "$T/gw.log" "$S/gw-cards.jsonl" | sort >"$T/final.jsonl"
	jq -c '{card, status}' "$S/expected.jsonl" | sort >"$T/want.jsonl"
	run diff "$T/want.jsonl" "$T/final.jsonl"
	assert_success
	# Nothing left behind: no queued, claimed or frozen command.
	run rcli --scan --pattern "$SRQ_PREFIX:carrier:*:stop_resume*"
	assert_output ''
	run rcli --scan --pattern "$SRQ_PREFIX:carrier:*:frozen"
	assert_output ''
}

# The renewed cards (case 8) were queued for a stop, then renewed: the
# gateway must never have seen a stop for them.
assert_no_obsolete_calls() {
	jq -r 'select(.case == 8) | .card' "$S/expected.jsonl" | sort >"$T/renewed"
	[ -s "$T/renewed" ]
	jq -r 'select(.kind == "stop") | .card' "$T/gw.log" | sort -u >"$T/stopped"
	run comm -12 "$T/renewed" "$T/stopped"
	assert_output ''
}

@test "a mixed sample over several accounts converges with no interval or rate violation" {
	sample 300
	run -0 sr-enqueue <"$S/requests.jsonl"
	assert_equal "$(echo "$output" | wc -l)" 300
	# The renewals cancel the stops that were queued for them.
	run -0 sr-enqueue <"$S/renew.jsonl"
	assert_equal "$(echo "$output" | jq -r .status | sort -u)" cancelled

	run -0 drain 90
	# One stop per card to be stopped, one resume per card stopped by us,
	# nothing else: the gateway saw exactly the necessary calls.
	assert_equal "$(jq -c 'select(.kind == "stop")' "$T/gw.log" | wc -l)" 150
	assert_equal "$(jq -c 'select(.kind == "resume")' "$T/gw.log" | wc -l)" 30
	assert_gateway_invariants
	assert_no_obsolete_calls
}

@test "with faults (drops after apply, 5xx before and after, 429) two racing pipelines converge" {
	sample 300 --fault-drop-after 0.1 --fault-5xx-before 0.1 --fault-5xx-after 0.1 \
		--fault-429 0.1 --seed 7
	export SRQ_FREEZE_AFTER=100 SRQ_ALERT_AFTER=100
	run -0 sr-enqueue <"$S/requests.jsonl"
	run -0 sr-enqueue <"$S/renew.jsonl"

	drain 120 >"$T/a.out" &
	a=$!
	drain 120 >"$T/b.out" &
	b=$!
	wait "$a" "$b"
	# Both pipelines did work, and the faults really happened.
	[ -s "$T/a.out" ] && [ -s "$T/b.out" ]
	for f in drop_after 5xx_before 5xx_after 429; do
		jq -s -e --arg f $f "any(.[]; .fault == \$f)" "$T/gw.log" >/dev/null || { jq -r .fault "$T/gw.log" | sort | uniq -c; false; }
	done
	# Unknown results were confirmed by a status query, not by a blind re-call.
	jq -s -e 'any(.[]; .kind == "status")' "$T/gw.log" >/dev/null
	assert_gateway_invariants
	assert_no_obsolete_calls
}

@test "kill -9 of sr-exec with calls in flight: a fresh pipeline finishes with no double change" {
	sample 60 --latency-ms 1500
	run -0 sr-enqueue <"$S/requests.jsonl"
	run -0 sr-enqueue <"$S/renew.jsonl"

	mkfifo "$T/tasks"
	sr-claim --follow --for 30 >"$T/tasks" &
	claim=$!
	sr-exec <"$T/tasks" >"$T/results" &
	exec_pid=$!
	# Wait until calls are in flight at the carrier, then kill the executor.
	for i in $(seq 100); do
		[ "$(wc -l <"$T/gw.log")" -ge 5 ] && break
		sleep 0.05
	done
	kill -9 "$exec_pid"
	kill "$claim" 2>/dev/null || true
	wait "$exec_pid" "$claim" 2>/dev/null || true
	[ "$(wc -l <"$T/gw.log")" -ge 5 ]
	# The results of the killed executor never reached sr-confirm: the calls
	# it made are unknown to the queue. A fresh pipeline takes over once the
	# leases expire, queries those cards, and finishes the rest.
	run -0 drain 90
	# The cards whose calls were in flight were settled by a status query.
	jq -s -e 'any(.[]; .kind == "status")' "$T/gw.log" >/dev/null
	assert_gateway_invariants
	assert_no_obsolete_calls
}

@test "a finish for an old version after a newer request keeps the newer command" {
	gwsim_start --qps 100
	now=$(date +%s)
	req() { printf '{"card":"C1","carrier":"c1","scene":"%s","facts":{"pkg_expires_at":%d,"status":"active"}}\n' "$1" "$2"; }
	run -0 sr-enqueue < <(req package_expired $((now - 60)))
	assert_line --partial '"status":"queued"'
	assert_line --partial '"ver":1'
	# Claim and execute version 1, but hold its result back.
	sr-claim | sr-exec >"$T/old-result"
	assert_equal "$(jq -r .outcome "$T/old-result")" ok
	# Meanwhile: renewed (v1's call went, so it is turned into a resume, v2),
	# then expired again (stop, v3).
	run -0 sr-enqueue < <(req order $((now + 86400)))
	assert_line --partial '"status":"queued","action":"resume"'
	run -0 sr-enqueue < <(req package_expired $((now - 1)))
	assert_line --partial '"ver":3'
	# The late finish of v1 is stale and leaves v3 queued.
	run -0 sr-confirm <"$T/old-result"
	assert_line --partial '"state":"stale"'
	assert_line --partial '"ver_now":3'
	assert_equal "$(rcli HGET "$SRQ_PREFIX:carrier:{c1}:card:C1" action)" stop
	assert_equal "$(rcli HGET "$SRQ_PREFIX:carrier:{c1}:card:C1" ver)" 3
	# And v3 is executed, after the card's interval, with its own request id.
	run -0 drain 30
	assert_line --partial '"state":"done"'
	assert_equal "$(jq -r .key "$T/gw.log" | tr '\n' ' ')" "C1-1-stop C1-3-stop "
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}
