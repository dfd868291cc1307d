#!/usr/bin/env bats
# pending.bats - a change still in progress, as a status query says it: a
# carrier whose status answers say a card is on its way (updating,
# scheduled), mapped by a profile's state.pending or a query.rule "=>
# in_progress". Such a card is not in another state (never frozen, no
# alert, not the breaker's business): it is queried again a poll later
# until it lands, or until settle_ms since its change was accepted, and then
# called again after its interval. Checked at the carrier (sr-gwsim's log).

bats_require_minimum_version 1.5.0

load ../test_helper

# pending_drain N: N cards C0.. of account a0, active at the carrier, whose
# packages expired, drained to the end against a carrier that accepts each
# stop and lands it 1.5 s later, its status queries answering "updating"
# meanwhile. sr-exec's results in $T/results.jsonl, the finals in
# $T/finals.jsonl.
pending_drain() {
	for i in $(seq 0 $(($1 - 1))); do printf '{"card":"C%d","status":"active"}\n' "$i"; done >"$T/gw-cards.jsonl"
	gwsim_start --cards "$T/gw-cards.jsonl" --async-ms 1500 --pending-state updating
	stop_requests "$1" 1 | sr-enqueue >/dev/null
	drain_until_empty
}

# What a drain through pending states must leave: every card stopped at the
# carrier, each stop called once, queries that saw "updating" on the way, a
# poll apart at least (300 ms, less a little for the arrival's jitter), the
# first a poll after the stop; nothing frozen, alerted or opened.
assert_pending_settled() {
	assert_equal "$(gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" | jq -r .status | sort -u)" stopped
	assert_equal "$(jq -s '[.[] | select(.kind == "stop")] | length' "$T/gw.log")" "$1"
	[ "$(jq -s '[.[] | select(.kind == "status" and .code == "updating")] | length' "$T/gw.log")" -ge "$1" ]
	run -0 jq -s -c '[.[] | select(.kind == "status" or .kind == "stop")] | group_by(.card)[] | sort_by(.t)
		| [range(1; length) as $i | {card: .[$i].card, gap: (.[$i].t - .[$i-1].t)} | select(.gap < 270)] | .[]' \
		"$T/gw.log"
	assert_output ''
	run -0 jq -r 'select(.state == "frozen" or .state == "alerted") | .card' "$T/finals.jsonl"
	assert_output ''
	run -0 sr-admin alerts
	assert_output ''
	run -0 bash -c "sr-admin audit --account a0 | jq -r 'select(.event | startswith(\"breaker:\")) | .event'"
	assert_output ''
	assert_equal "$(sr-stat | jq -s 'map(select(.carrier == "*"))[0] | .frozen')" 0
}

@test "state.pending: a card whose query says 'updating' is queried a poll later until its stop lands; nothing frozen, alerted or counted" {
	profiles 'from = default' 'accounts = *' 'poll_ms = 300' 'settle_ms = 20000' \
		'state.pending = updating,scheduled'
	pending_drain 6
	assert_pending_settled 6
	# The queries that saw it on its way said so, and named what the carrier said.
	run -0 jq -r 'select(.task == "query" and .observed == "pending") | .carrier_state' "$T/results.jsonl"
	refute_output ''
	assert_equal "$(sort -u <<<"$output")" updating
}

@test "query.rule '=> in_progress': the carrier says the change is under way: the same as state.pending" {
	# No state.pending: the query's rules say it, by the body (sr-gwsim's
	# default shape has no code in a status answer).
	profiles 'from = default' 'accounts = *' 'poll_ms = 300' 'settle_ms = 20000' \
		'query.rule = http=200 body~"updating" => in_progress' 'query.rule = http=200 => ok' \
		'query.rule = * => unknown'
	pending_drain 4
	assert_pending_settled 4
}

@test "a stop still pending settle_ms after it was accepted did not land: called again after the card's interval, not frozen" {
	# The carrier lands it only after a minute; srq waits 2 s from the
	# acceptance, then calls again (the carrier answers "already": the stop
	# is what it has on its way).
	profiles 'from = default' 'accounts = *' 'poll_ms = 300' 'settle_ms = 2000' 'state.pending = updating'
	echo '{"card":"K1","status":"active"}' >"$T/gw-cards.jsonl"
	gwsim_start --cards "$T/gw-cards.jsonl" --async-ms 60000 --pending-state updating
	printf '{"card":"K1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
	sr-claim --until-empty --for 10 | sr-exec | tee "$T/results.jsonl" | sr-confirm >"$T/finals.jsonl"
	run -0 jq -r 'select(.card == "K1" and .kind != "status") | .kind' "$T/gw.log"
	assert_output $'stop\nstop'
	first=$(jq -s '[.[] | select(.kind == "stop")][0].t' "$T/gw.log")
	second=$(jq -s '[.[] | select(.kind == "stop")][1].t' "$T/gw.log")
	# settle_ms from the acceptance (and the card's interval, 1200 ms, long past).
	[ $((second - first)) -ge 2000 ]
	# Until then it was queried, and every query said it was on its way.
	run -0 jq -s -r --argjson s "$second" '[.[] | select(.kind == "status" and .t < $s) | .code] | unique | join(" ")' "$T/gw.log"
	assert_output updating
	[ "$(jq -s --argjson s "$second" '[.[] | select(.kind == "status" and .t < $s)] | length' "$T/gw.log")" -ge 3 ]
	assert_equal "$(jq -r 'select(.task == "call") | .outcome' "$T/results.jsonl" | paste -sd' ')" "ok already"
	assert_equal "$(jq -r .state "$T/finals.jsonl" | tail -1)" done
	run -0 jq -r 'select(.state == "frozen" or .state == "alerted") | .card' "$T/finals.jsonl"
	assert_output ''
	run -0 sr-admin alerts
	assert_output ''
	assert_equal "$(sr-admin show K1 | jq -r '.command.action // "none"')" none
}

@test "state.pending: the profile key is shown resolved, and a code it shares with state.active or state.stopped does not parse" {
	profiles 'from = default' 'accounts = *' 'state.pending = updating,scheduled'
	run -0 sr-admin profile c1
	assert_equal "$(jq -r .states.pending <<<"$output")" updating,scheduled
	profiles 'from = default' 'accounts = *' 'state.pending = updating,active'
	run -2 sr-admin profile c1
	assert_output --partial 'state.pending'
}
