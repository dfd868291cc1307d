#!/usr/bin/env bats
# switch_attack.bats - the global switch, the direct path and the asset
# mirror under concurrency and bad timing: a direct call in flight while
# another request judges the same card, a card moved while its command is
# claimed, a device flipped while it is evaluated. Each race is provoked at
# a known point (a slow carrier, or a breakpoint) and checked at the carrier
# (sr-gwsim's log) and in Redis, never by timings alone.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	load ../helpers/race
	srq_setup
	race_setup
}

@test "switch off: a renewal judged while the direct stop of the card is at the carrier is not lost" {
	# K1 active, its package valid; an expiry runs on the spot, slowly.
	printf '{"card":"K1","carrier":"c1","pkg_expires_at":%d,"status":"active"}\n' "$FUTURE" | sr-asset >/dev/null
	echo '{"card":"K1","status":"active"}' >"$T/gw-cards.jsonl"
	gwsim_start --cards "$T/gw-cards.jsonl" --latency-ms 1500
	sr-admin switch off --reason test >/dev/null
	printf '{"card":"K1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST" |
		sr-enqueue >"$T/expiry" 2>&1 &
	local pid=$!
	for _ in $(seq 100); do rcli HEXISTS 't:carrier:{c1}:card:K1' last_call | grep -q 1 && break; sleep 0.02; done
	# The stop is at the carrier; the facts still say active: the renewal
	# judges "nothing to do".
	run -0 sr-enqueue < <(printf '{"card":"K1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' "$FUTURE")
	assert_equal "$(jq -r .status <<<"$output")" noop
	wait "$pid"
	# The stop went; its line says that the facts changed during its call,
	# and that what they now want (the renewal's resume) is queued.
	assert_equal "$(jq -r '"\(.status) \(.action) \(.followup) \(.followup_status)"' "$T/expiry")" \
		"direct_ok stop resume queued"
	assert_equal "$(sr-admin show K1 | jq -r '"\(.command.action) \(.facts.status)"')" "resume stopped"
	# The switch on again, the queue resumes the card (after its interval).
	sr-admin switch on --reason test >/dev/null
	sleep 1.3
	drain_until_empty
	assert_equal "$(final_state K1)" active
	assert_equal "$(jq -r .kind "$T/gw.log" | paste -sd,)" stop,resume
	run -0 gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "a new card loaded for one account while a request queues it at another is called by one account only" {
	# sr-asset read K1's account (none yet: a new card) and is about to
	# write it (c2); meanwhile a request with facts queues K1's stop at c1.
	printf '{"card":"K1","carrier":"c2","pkg_expires_at":%d,"status":"active"}\n' "$PAST" >"$T/in"
	cat >"$T/race.sh" <<-EOF
	printf '{"card":"K1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' $PAST | sr-enqueue
	EOF
	run at_break add_facts sr-asset "$T/race.sh"
	assert_equal "$status" 1
	assert_equal "$(jq -r '"\(.status) \(.action)"' "$T/script.out")" "queued stop"
	# The write checks the card's account itself: the request wrote it
	# first, and the row naming another is refused, nothing of it written.
	assert_equal "$(jq -r '"\(.status) \(.error)"' "$T/out")" "rejected card belongs to carrier 'c1' in the asset mirror"
	assert_equal "$(sr-admin show K1 | jq -r .facts.carrier)" c1
	run -1 --separate-stderr sr-enqueue < <(echo '{"card":"K1","carrier":"c2","scene":"package_expired"}')
	assert_equal "$(jq -r .status <<<"$output")" rejected
	gwsim_start
	run -0 bash -c "sr-claim --until-empty --for 20 | sr-exec | tee $T/results | sr-confirm"
	# The card is called once, by its account.
	assert_equal "$(jq -r '"\(.carrier) \(.card) \(.kind)"' "$T/gw.log")" "c1 K1 stop"
	run -0 gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "a request that queued a new card at one account while a load gave it another: only the mirror's account calls it" {
	# sr-enqueue read K1's facts (none: a new card, its facts in the
	# request) and is about to write them and queue the stop at c1;
	# meanwhile sr-asset loads K1 for c2.
	printf '{"card":"K1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' "$PAST" >"$T/in"
	cat >"$T/race.sh" <<-EOF
	printf '{"card":"K1","carrier":"c2","pkg_expires_at":%d,"status":"active"}\n' $PAST | sr-asset
	EOF
	run at_break add_facts_write sr-enqueue "$T/race.sh"
	assert_equal "$status" 3
	assert_equal "$(jq -r .status "$T/script.out")" loaded
	# Its facts are refused (the card is c2's now), its command was queued
	# in the same step: the line says both.
	assert_equal "$(jq -r '"\(.status) \(.action) \(.warning)"' "$T/out")" \
		"queued stop card belongs to carrier 'c2' in the asset mirror"
	run -0 sr-enqueue < <(echo '{"card":"K1","carrier":"c2","scene":"package_expired"}')
	assert_equal "$(jq -r .status <<<"$output")" queued
	gwsim_start
	run -0 bash -c "sr-claim --until-empty --for 20 | sr-exec | tee $T/results | sr-confirm"
	# Only the account the mirror names calls the card; c1's command ends
	# re-judged, without a call: the card changed once.
	assert_equal "$(jq -r '"\(.carrier) \(.card) \(.kind)"' "$T/gw.log")" "c2 K1 stop"
	assert_equal "$(jq -r 'select(.carrier == "c1") | "\(.outcome) \(.error)"' "$T/results")" \
		"superseded re-judged: account_moved"
	run -0 gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}
