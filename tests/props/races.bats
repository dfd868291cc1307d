#!/usr/bin/env bats
# races.bats - a request judged while the card's previous change is still
# under way (its call at the carrier, or its result being confirmed) ends
# with the card in the newly judged state at the carrier.
#
# Both were found by tests/props/chaos.bats: a renewal arriving at the wrong moment
# was acknowledged and the card stayed stopped.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	K='t:carrier:{c1}:card:C1'
}

teardown() {
	[ -n "${mon_pid:-}" ] && kill "$mon_pid" 2>/dev/null
	srq_teardown
}

expire() { # expire CARD: the card's package ran out; the carrier shows it active
	printf '{"card":"%s","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$1" "$PAST"
}

renew() { # renew CARD: the customer bought a package; the request carries no status
	printf '{"card":"%s","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' "$1" "$FUTURE"
}

# stop_in_flight: C1's queued stop goes through the pipeline in the
# background (pid in $pid) and returns once the gate has passed it (its
# token is recorded as called): the call is then at the carrier, which
# answers after its --latency-ms.
stop_in_flight() {
	{ sr-claim --until-empty --for 20 | sr-exec | sr-confirm >"$T/finals"; } 3>&- &
	pid=$!
	for _ in $(seq 100); do
		[ -n "$(rcli HGET "$K" called)" ] && return 0
		sleep 0.02
	done
	echo "C1's stop never passed the gate" >&2
	return 1
}

last_state() { # last_state CARD: the card's state after the carrier's last change
	jq -r --arg c "$1" 'select(.card == $c) | .state' "$T/gw.log" | tail -1
}

@test "a renewal while the stop's call is at the carrier: the card is resumed after the stop lands" {
	gwsim_start --latency-ms 1000
	expire C1 | sr-enqueue >/dev/null
	stop_in_flight
	run -0 sr-enqueue < <(renew C1)
	# The stop may land: the renewal replaces it (it is not dropped).
	assert_equal "$(jq -r '.status + " " + .action' <<<"$output")" "queued resume"
	wait "$pid"
	run -0 drain 10
	assert_equal "$(jq -r 'select(.card == "C1") | .kind' "$T/gw.log" | tr '\n' ' ')" "stop resume "
	assert_equal "$(last_state C1)" active
	run -0 gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''

}

@test "a renewal between a stop's finish and the card's learned status: the card is resumed" {
	gwsim_start
	export SRQ_QPS=0 SRQ_UNLIMITED=1 SRQ_MAX_RUNNING=5000
	for i in $(seq 2000); do expire "C$i"; done | sr-enqueue >/dev/null
	sr-claim --max 2000 --batch 2000 | sr-exec >"$T/results" # the carrier stopped them all
	assert_equal "$(jq -r .outcome "$T/results" | sort -u)" ok
	card=$(jq -r .card "$T/results" | head -1)
	mkfifo "$T/mon" "$T/results.fifo" "$T/requests.fifo"
	sr-confirm <"$T/results.fifo" >"$T/finals" 3>&- &
	confirm_pid=$!
	sr-enqueue <"$T/requests.fifo" >"$T/ack" 3>&- & # connected, waiting for the renewal
	enqueue_pid=$!
	exec 6>"$T/requests.fifo"
	rcli_at "t:carrier:{c1}:card:$card" MONITOR >"$T/mon" 3>&- 6>&- &
	mon_pid=$!
	# The renewal is sent the moment Redis runs the first card's finish,
	# while the rest of sr-confirm's batch (and whatever it writes after its
	# scripts) is still to come.
	awk -v c="$card" -v f="$T/requests.fifo" -v line="$(renew "$card")" '
	$0 ~ "\"DEL\" \"[^\"]*:card:" c "\"" { print line > f; close(f); exit }' \
		<"$T/mon" 6>&- &
	awk_pid=$!
	for _ in $(seq 100); do [ -s "$T/mon" ] && break; sleep 0.02; done # MONITOR is on
	cat "$T/results" >"$T/results.fifo"
	wait "$confirm_pid" "$awk_pid"
	exec 6>&-
	wait "$enqueue_pid"
	assert_equal "$(jq -r '.status + " " + .action' "$T/ack")" "queued resume"
	run -0 drain 10
	assert_equal "$(last_state "$card")" active
	run -0 gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''

}

@test "a renewal of a card srq stopped, whose facts still say active: the card is resumed" {
	gwsim_start
	expire C1 | sr-enqueue >/dev/null
	run -0 drain 10
	assert_equal "$(last_state C1)" stopped
	# The card's facts were rolled back by a stale feed: they say active.
	rcli HSET t:card:C1:facts st active >/dev/null
	run -0 sr-enqueue < <(renew C1)
	assert_equal "$(jq -r '.status + " " + .action' <<<"$output")" "queued resume"
	run -0 drain 10
	assert_equal "$(last_state C1)" active
}

@test "a card stopped by hand while srq's stop is at the carrier is not resumed by a renewal" {
	gwsim_start --latency-ms 1000
	expire C1 | sr-enqueue >/dev/null
	stop_in_flight
	# Meanwhile an operator stops it by hand at the carrier; the mirror says so.
	rcli HSET t:card:C1:facts st stopped sb manual >/dev/null
	run -0 sr-enqueue < <(renew C1)
	refute_output --partial '"action":"resume"'
	wait "$pid"
	run -0 drain 10
	# No resume ever went, and the hand's stopped_by survived srq's stop.
	assert_equal "$(jq -r 'select(.card == "C1") | .kind' "$T/gw.log" | tr '\n' ' ')" "stop "
	assert_equal "$(rcli HGET t:card:C1:facts sb)" manual
	run -0 sr-enqueue < <(renew C1)
	assert_equal "$(jq -r .status <<<"$output")" noop
}

@test "a card stopped by hand is never resumed, whatever srq's last change was" {
	gwsim_start
	expire C1 | sr-enqueue >/dev/null
	run -0 drain 10
	assert_equal "$(last_state C1)" stopped
	# An operator marks the stop as theirs (a customer dispute).
	rcli HSET t:card:C1:facts sb manual >/dev/null
	run -0 sr-enqueue < <(renew C1)
	assert_equal "$(jq -r .status <<<"$output")" noop
	run -0 sr-claim --max 10
	assert_output ''
}

@test "a command the carrier refused for good is not queued again on the strength of what srq saw before" {
	gwsim_start
	# srq resumed C1 (it saw it active); then the facts say stopped (stale).
	printf '{"card":"C1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d,"status":"stopped"}}\n' \
		"$FUTURE" | sr-enqueue >/dev/null
	run -0 drain 10
	assert_equal "$(last_state C1)" active
	rcli HSET t:card:C1:facts st stopped >/dev/null
	gwsim_stop
	# Its package expires: srq's own view (active) queues the stop, and the
	# carrier refuses it for good: frozen, with an alert.
	gwsim_start --fault-reject 1
	run -0 sr-enqueue < <(expire C1 | jq -c 'del(.facts.status)')
	assert_equal "$(jq -r '.status + " " + .action' <<<"$output")" "queued stop"
	run -0 drain 10
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:frozen' 0 -1)" C1
	# The operator drops it; the next expiry scan does not queue it again
	# (what srq saw before the refusal is in doubt): no call every 10 minutes.
	sr-admin drop C1 --reason 'carrier says no' >/dev/null
	run -0 sr-enqueue < <(expire C1 | jq -c 'del(.facts.status)')
	assert_equal "$(jq -r .status <<<"$output")" noop
}
