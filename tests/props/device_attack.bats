#!/usr/bin/env bats
# device_attack.bats - device flows under concurrency and bad timing: a card
# request and a device evaluation, each judging a card on facts the other
# changes between its read and its write. Each race is provoked at a known
# point: the process is stopped at a breakpoint (gdb) just before it writes
# the cards' commands (sr_cmds_append), the other party runs to its end, and
# the stopped process then goes on. Outcomes are checked at the carrier
# (sr-gwsim's log) and in Redis, never timings.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	load ../helpers/race
	srq_setup
	race_setup
}

@test "a renewal written while dev-eval judges the card on its old facts: the card is resumed (the renewal is not cancelled)" {
	# K1 was stopped for its expired package; its device is fine.
	sr-asset >/dev/null <<-EOF
	{"card":"K1","carrier":"c1","device":"D1","pkg_expires_at":$PAST,"status":"stopped"}
	{"device":"D1","pkg_expires_at":$FUTURE}
	EOF
	echo '{"card":"K1","status":"stopped"}' >"$T/gw-cards.jsonl"
	gwsim_start --cards "$T/gw-cards.jsonl"
	echo '{"device":"D1","scene":"device"}' | sr-enqueue >/dev/null
	# dev-eval read K1's facts (expired, stopped: nothing to do); before it
	# writes, the customer renews and the renewal is acknowledged.
	cat >"$T/race.sh" <<-EOF
	printf '{"card":"K1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' $FUTURE | sr-enqueue
	EOF
	run at_write dev-eval "$T/race.sh" --until-empty --for 10
	assert_equal "$status" 0
	assert_equal "$(jq -r '"\(.status) \(.action)"' "$T/script.out")" "queued resume"
	# dev-eval says it judged on facts that changed, and judges again.
	assert_equal "$(jq -r '"\(.state) \(.changed // [] | join(","))"' "$T/out" | paste -sd' ')" "retry K1 done "
	assert_equal "$(sr-admin show K1 | jq -r .command.action)" resume
	run -0 drain 20
	assert_equal "$(final_state K1)" active
	run -0 gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "a card request judged before its device was disabled does not cancel dev-eval's stop of the card" {
	sr-asset >/dev/null <<-EOF
	{"card":"K1","carrier":"c1","device":"D1","pkg_expires_at":$FUTURE,"status":"active"}
	{"card":"K2","carrier":"c2","device":"D1","pkg_expires_at":$FUTURE,"status":"active"}
	{"device":"D1","pkg_expires_at":$FUTURE}
	EOF
	printf '{"card":"%s","status":"active"}\n' K1 K2 >"$T/gw-cards.jsonl"
	gwsim_start --cards "$T/gw-cards.jsonl"
	# sr-enqueue read K1's facts and its device's (enabled: nothing to do);
	# before it writes, the device is disabled and evaluated.
	echo '{"card":"K1","carrier":"c1","scene":"polling"}' >"$T/in"
	cat >"$T/race.sh" <<-EOF
	echo '{"device":"D1","disabled":1}' | sr-asset
	echo '{"device":"D1","scene":"device"}' | sr-enqueue
	dev-eval
	EOF
	run at_write sr-enqueue "$T/race.sh"
	assert_equal "$status" 0
	assert_equal "$(jq -r 'select(.device and .cards) | .cards[] | "\(.card) \(.action)"' "$T/script.out" | sort | paste -sd,)" \
		"K1 stop,K2 stop"
	# Its ack says what it did, and that the device is judged again.
	assert_equal "$(jq -r '"\(.status) \(.device_requeued)"' "$T/out")" "cancelled D1"
	run -0 dev-eval --until-empty --for 10
	assert_equal "$(jq -r '.cards[] | "\(.card) \(.action)"' <<<"$output" | sort | paste -sd,)" "K1 stop,K2 stop"
	run -0 drain 20
	# A card of a disabled device ends stopped.
	assert_equal "$(final_state K1) $(final_state K2)" "stopped stopped"
	run -0 gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "dev-eval: a card's facts that changed under it do not hide another card Redis could not read: error said, exit 3" {
	sr-asset >/dev/null <<-EOF
	{"card":"K1","carrier":"c1","device":"D1","pkg_expires_at":$PAST,"status":"stopped"}
	{"card":"K2","carrier":"c1","device":"D1","pkg_expires_at":$FUTURE,"status":"active"}
	{"device":"D1","pkg_expires_at":$FUTURE}
	EOF
	# K2's facts damaged by hand: not read, its command not written.
	rcli DEL t:card:K2:facts >/dev/null
	rcli SET t:card:K2:facts damaged >/dev/null
	echo '{"device":"D1","scene":"device"}' | sr-enqueue >/dev/null
	cat >"$T/race.sh" <<-EOF
	printf '{"card":"K1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' $FUTURE | sr-enqueue
	EOF
	run at_write dev-eval "$T/race.sh"
	assert_equal "$status" 3
	run jq -r '"\(.state) \(.changed // [] | join(",")) \(.error // "")"' "$T/out"
	assert_output --regexp '^retry K1 1 of 2 cards: facts not read: '
}
