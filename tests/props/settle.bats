#!/usr/bin/env bats
# settle.bats - a change on its way is not the card's state. A change the
# carrier accepted (202) lands later; while it is outstanding, a status
# query settles that change first, and only then is the card's next target
# called. Checked at the carrier (sr-gwsim's log, its "apply" lines say when
# a change landed), never by timings.

bats_require_minimum_version 1.5.0

load ../test_helper

# accepted_stop: K1, active at the carrier, its package expired: its stop is
# called once and accepted (202), confirming; then the customer renews.
accepted_stop() {
	echo '{"card":"K1","status":"active"}' >"$T/gw-cards.jsonl"
	gwsim_start --cards "$T/gw-cards.jsonl" "$@"
	printf '{"card":"K1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
	run -0 bash -c 'sr-claim --max 1 | sr-exec | sr-confirm'
	assert_equal "$(jq -r '"\(.outcome) \(.state)"' <<<"$output")" "ok confirming"
	run -0 sr-enqueue <<<"{\"card\":\"K1\",\"carrier\":\"c1\",\"scene\":\"order\",\"facts\":{\"pkg_expires_at\":$FUTURE}}"
	assert_equal "$(jq -r '"\(.status) \(.action)"' <<<"$output")" "queued resume"
}

@test "a stop accepted, then a renewal: queries that still show the old state wait for the stop, then the resume is called" {
	# The stop lands 1.5 s after it was accepted; queries every 200 ms see
	# the card active until then. That is not the resume having landed: it
	# was never sent.
	profiles 'from = default' 'accounts = *' 'poll_ms = 200' 'settle_ms = 8000'
	accepted_stop --async-ms 1500
	run -0 bash -c 'sr-claim --follow --for 8 | sr-exec | sr-confirm'
	assert_equal "$(k1_story)" "stop apply:stopped resume apply:active"
	assert_equal "$(gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" | jq -r .status)" active
	assert_equal "$(sr-admin show K1 | jq -r '.command.action // "none"')" none
	run -0 gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "a stop accepted and landed before the first query, then a renewal: the resume is called at once, not after settle_ms" {
	# The stop lands 200 ms after it was accepted, before the first query:
	# the query shows it landed, and the resume goes (after the card's
	# interval), not a minute of "still landing" later.
	profiles 'from = default' 'accounts = *' 'poll_ms = 700' 'settle_ms = 60000'
	accepted_stop --async-ms 200
	run -0 bash -c 'sr-claim --follow --for 8 | sr-exec | sr-confirm'
	assert_equal "$(k1_story)" "stop apply:stopped resume apply:active"
	assert_equal "$(gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" | jq -r .status)" active
	assert_equal "$(sr-admin show K1 | jq -r '.command.action // "none"')" none
}

@test "a stop accepted, a renewal, then an expiry again: the stop that landed is the card's state, nothing more is called" {
	profiles 'from = default' 'accounts = *' 'poll_ms = 200' 'settle_ms = 8000'
	accepted_stop --async-ms 1000
	# Turned back before anything settled: the stop is what is wanted.
	run -0 sr-enqueue <<<"{\"card\":\"K1\",\"carrier\":\"c1\",\"scene\":\"package_expired\",\"facts\":{\"pkg_expires_at\":$PAST}}"
	assert_equal "$(jq -r '"\(.status) \(.action)"' <<<"$output")" "queued stop"
	run -0 bash -c 'sr-claim --follow --for 6 | sr-exec | sr-confirm'
	assert_equal "$(k1_story)" "stop apply:stopped"
	assert_equal "$(sr-admin show K1 | jq -r '.command.action // "none"')" none
}

@test "a stop at the carrier when the renewal turns its command: the call's result, accepted, is settled before the resume" {
	# The renewal arrives while the stop call is at the carrier (its gate
	# passed, its answer not yet confirmed): the result is the old
	# version's, and its acceptance still has to be settled.
	profiles 'from = default' 'accounts = *' 'poll_ms = 200' 'settle_ms = 8000'
	echo '{"card":"K1","status":"active"}' >"$T/gw-cards.jsonl"
	gwsim_start --cards "$T/gw-cards.jsonl" --async-ms 1500
	printf '{"card":"K1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
	sr-claim --max 1 | sr-exec >"$T/results"
	run -0 sr-enqueue <<<"{\"card\":\"K1\",\"carrier\":\"c1\",\"scene\":\"order\",\"facts\":{\"pkg_expires_at\":$FUTURE}}"
	assert_equal "$(jq -r '"\(.status) \(.action)"' <<<"$output")" "queued resume"
	run -0 sr-confirm <"$T/results"
	assert_equal "$(jq -r .state <<<"$output")" stale
	run -0 bash -c 'sr-claim --follow --for 8 | sr-exec | sr-confirm'
	assert_equal "$(k1_story)" "stop apply:stopped resume apply:active"
	assert_equal "$(sr-admin show K1 | jq -r '.command.action // "none"')" none
}

@test "a storm against an asynchronous carrier: 8 pipelines, flip-flops and faults end with every card right, a query per card per poll at most" {
	# 40 cards, active; their packages flip between expired and renewed
	# five times, a fifth of a second apart, while 8 pipelines drain at
	# once against a carrier that accepts changes and lands them 300 ms
	# later, and fails some calls (429, 5xx before and after applying).
	profiles 'from = default' 'accounts = *' 'poll_ms = 500' 'settle_ms = 5000'
	for i in $(seq 40); do printf '{"card":"S%d","status":"active"}\n' "$i"; done >"$T/gw-cards.jsonl"
	gwsim_start --cards "$T/gw-cards.jsonl" --async-ms 300 --fault-429 0.05 --fault-5xx-before 0.03 \
		--fault-5xx-after 0.03 --seed 27
	for i in $(seq 40); do
		printf '{"card":"S%d","carrier":"c%d","pkg_expires_at":%d,"status":"active"}\n' "$i" $((i % 2)) "$FUTURE"
	done | sr-asset >/dev/null
	pids=()
	for p in $(seq 8); do
		(sr-claim --follow --for 6 | sr-exec | sr-confirm >"$T/storm.$p.jsonl" 2>"$T/storm.$p.err") &
		pids+=($!)
	done
	for round in 1 2 3 4 5; do
		pe=$PAST scene=package_expired
		[ $((round % 2)) = 0 ] && pe=$FUTURE scene=order
		# Round 5 leaves every third card renewed after all.
		for i in $(seq 40); do
			p=$pe s=$scene
			[ "$round" = 5 ] && [ $((i % 3)) = 0 ] && p=$FUTURE s=order
			printf '{"card":"S%d","carrier":"c%d","scene":"%s","facts":{"pkg_expires_at":%d}}\n' \
				"$i" $((i % 2)) "$s" "$p"
		done | sr-enqueue >>"$T/acks.jsonl"
		sleep 0.2
	done
	wait "${pids[@]}"
	drain_until_empty
	# Every card where its last facts want it: renewed ones active, the
	# others stopped; and srq holds nothing for any of them.
	assert_equal "$(gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" |
		jq -r 'select((.card[1:] | tonumber) % 3 == 0) | .status' | sort -u)" active
	assert_equal "$(gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" |
		jq -r 'select((.card[1:] | tonumber) % 3 != 0) | .status' | sort -u)" stopped
	run rcli --scan --pattern "$SRQ_PREFIX:carrier:*:stop_resume*"
	assert_output ''
	run -0 gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
	# A card's status queries come a poll apart at least (500 ms; the
	# carrier's clock is the machine's, as Redis's).
	run jq -s -c '[.[] | select(.kind == "status")] | group_by(.card)[] | sort_by(.t)
		| [range(1; length) as $i | {card: .[$i].card, gap: (.[$i].t - .[$i-1].t)} | select(.gap < 450)] | .[]' "$T/gw.log"
	assert_output ''
}

@test "a resume held by the card's interval behind its landed stop: one query a poll at most, none while it waits, the resume at the interval's end" {
	# The carrier's window is 5 s (srq waits 6); the stop lands 1 s after
	# it is accepted, the renewal comes meanwhile; polls every 500 ms.
	GW_INTERVAL_MS=5000
	export SRQ_MIN_INTERVAL_MS=6000
	profiles 'from = default' 'accounts = *' 'poll_ms = 500'
	accepted_stop --async-ms 1000
	sr-claim --until-empty --for 15 | sr-exec | sr-confirm >/dev/null
	assert_equal "$(k1_story)" "stop apply:stopped resume apply:active"
	# Its queries: a poll apart at least, and none after the stop was
	# found landed (the resume then only waits for its interval).
	run -0 jq -s -r '[.[] | select(.card == "K1" and .kind == "status") | .t] |
		[range(1; length) as $i | .[$i] - .[$i - 1] | select(. < 450)] | length' "$T/gw.log"
	assert_output 0
	landed=$(jq -s '[.[] | select(.card == "K1" and .kind == "status" and .state == "stopped")][0].t' "$T/gw.log")
	resumed=$(jq -s '[.[] | select(.card == "K1" and .kind == "resume")][0].t' "$T/gw.log")
	assert_equal "$(jq -s --argjson l "$landed" --argjson r "$resumed" \
		'[.[] | select(.card == "K1" and .kind == "status" and .t > $l and .t < $r)] | length' "$T/gw.log")" 0
	stopped=$(jq -s '[.[] | select(.card == "K1" and .kind == "stop")][0].t' "$T/gw.log")
	[ $((resumed - stopped)) -ge 5000 ]
	run gwcheck interval "$T/gw.log" 5000
	assert_output ''
}
