#!/usr/bin/env bats
# pause.bats - an operator pauses an account: nothing is called for it (not
# even by the direct path), its commands stay queued untouched, the other
# accounts go on, and it resumes by itself at --until (or by hand).

bats_require_minimum_version 1.5.0

load ../test_helper

@test "a paused account gets no call while the others drain; it resumes by itself at --until" {
	gwsim_start --qps 50
	stop_backlog 10 c1
	stop_backlog 10 c2
	run -0 sr-admin pause c1 --until 4s --reason "carrier maintenance"
	until=$(echo "$output" | jq -r .paused_until_ms)
	[ "$until" -gt "$(date +%s%3N)" ]
	run -0 sr-admin why c1-3
	echo "$output" | jq -e --arg who "$(id -un)" '.state == "paused" and
		(.why | test("paused until [0-9-]+T[0-9:]+Z \\(in [0-9]+s\\) by " + $who + ": carrier maintenance"))'
	run -0 sr-stat --carrier c1
	echo "$output" | head -1 | jq -e '.paused and .queued == 10'
	run -0 drain 30
	# Nothing reached the carrier for c1 before the pause ended; all done.
	assert_equal "$(jq -s --argjson u "$until" '[.[] | select(.carrier == "c1" and .t < $u)] | length' "$T/gw.log")" 0
	assert_equal "$(jq -s '[.[] | select(.carrier == "c2" and .code == "OK")] | length' "$T/gw.log")" 10
	assert_equal "$(jq -s '[.[] | select(.carrier == "c1" and .code == "OK")] | length' "$T/gw.log")" 10
	# The other account did not wait for the pause.
	jq -s -e --argjson u "$until" '[.[] | select(.carrier == "c2") | .t] | max < $u' "$T/gw.log"
	run -0 sr-admin audit --account c1
	echo "$output" | jq -s -e 'any(.[]; .event == "admin:pause" and .why == "carrier maintenance")'
}

@test "paused, the direct path calls nothing either and queues the request; resume brings it back" {
	gwsim_start
	sr-admin switch off --reason "legacy path" >/dev/null
	# No request named c1 yet: --force says the account is not a typo.
	run -0 sr-admin pause c1 --force --reason "dispute with the carrier"
	echo "$output" | jq -e '.paused_until_ms > 0'
	run -3 --separate-stderr sr-enqueue < <(backlog_requests 1 c1)
	echo "$output" | jq -e '.status == "direct_failed" and .tries == 0 and (.error | test("paused")) and .queued_ver > 0'
	run -0 sr-enqueue < <(backlog_requests 1 c2)
	echo "$output" | jq -e '.status == "direct_ok"'
	assert_equal "$(jq -r .carrier "$T/gw.log" | tr '\n' ' ')" "c2 "
	# Resumed, and the switch back on: the queued request is executed.
	run -0 sr-admin resume c1 --reason "settled"
	echo "$output" | jq -e '.paused_until_ms == null'
	sr-admin switch on --reason "queue again" >/dev/null
	run -0 drain 10
	assert_equal "$(jq -r .carrier "$T/gw.log" | tr '\n' ' ')" "c2 c1 "
}

@test "pause and resume refuse what makes no sense, and say why" {
	stop_backlog 1 c1
	# Resuming an account that is not paused changes nothing, and is no
	# error (it was exit 1): "changed":false, nothing audited.
	run -0 --separate-stderr sr-admin resume c1 --reason "x"
	assert_equal "$(jq -r '"\(.paused_until_ms) \(.changed)"' <<<"$output")" "null false"
	run -1 --separate-stderr sr-admin resume c-1 --reason "x"
	[[ $stderr == *"account 'c-1' is unknown"* ]]
	# An account no request ever named is most likely a typo.
	run -1 --separate-stderr sr-admin pause c-1 --reason "x"
	[[ $stderr == *"account 'c-1' is unknown"*"--force"* ]]
	run -1 --separate-stderr sr-admin limits c-1 qps=3 --reason "x"
	assert_equal "$(rcli EXISTS 't:carrier:{c-1}:limits' 't:carrier:{c-1}:edge')" 0
	run -2 --separate-stderr sr-admin pause c1 --until tomorrowish --reason "x"
	[[ $stderr == *"--until: 'tomorrowish' is not a time"* ]]
	# Epoch seconds would be read as milliseconds in 1970: refused.
	run -2 --separate-stderr sr-admin pause c1 --until "$(date +%s)" --reason "x"
	run -1 --separate-stderr sr-admin pause c1 --until 2020-01-01T00:00Z --reason "x"
	[[ $stderr == *"in the past"* ]]
	# The epoch itself is in the past too, not "until resumed".
	run -1 --separate-stderr sr-admin pause c1 --until 1970-01-01 --reason "x"
	[[ $stderr == *"in the past"* ]]
	run -2 sr-admin pause --reason "no account"
	# An ISO time works, and the pause says until when.
	run -0 sr-admin pause c1 --until 2099-01-01T00:00:00Z --reason "long"
	assert_equal "$(echo "$output" | jq -r .paused_until_ms)" 4070908800000
}
