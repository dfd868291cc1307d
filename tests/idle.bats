#!/usr/bin/env bats
# idle.bats - a card with no command sleeps packed in its account's idle
# bucket (README "Redis layout"), and keeps there what outlives its
# commands: its version, its last call and what srq saw at the carrier.

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	srq_setup
}

teardown() {
	srq_teardown
}

req() { # req CARD SCENE PKG_EXPIRES_AT
	printf '{"card":"%s","carrier":"c1","scene":"%s","facts":{"pkg_expires_at":%d}}\n' "$1" "$2" "$3"
}

# packed CARD: the card's packed state, from its bucket.
packed() {
	rcli HGET "t:carrier:{c1}:idle:${1:0:${#1}-2}" "${1: -2}"
}

@test "a finished card sleeps in its bucket; its next command wakes it with its version, and its interval holds" {
	gwsim_start
	run -0 sr-enqueue < <(req 8986001 package_expired "$PAST"; req 8986002 package_expired "$PAST")
	run -0 drain 10
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:card:8986001' 't:carrier:{c1}:card:8986002')" 0
	# Both in one bucket (their ids differ in the last two digits).
	assert_equal "$(rcli HKEYS 't:carrier:{c1}:idle:89860' | sort | paste -sd' ')" "01 02"
	IFS='|' read -r ver last_call seen _ last_dir <<<"$(packed 8986001)"
	assert_equal "$ver $seen $last_dir" "1 stopped stop"
	# The renewal wakes it: version 2, due no earlier than the interval allows.
	run -0 sr-enqueue < <(req 8986001 order "$FUTURE")
	assert_output --partial '"status":"queued","action":"resume","reason":"entitled","ver":2'
	assert_equal "$(packed 8986001)" ''
	due=$(rcli ZSCORE 't:carrier:{c1}:stop_resume:high' 8986001)
	[ "$due" -ge $((last_call + SRQ_MIN_INTERVAL_MS)) ]
	assert_equal "$(rcli HMGET 't:carrier:{c1}:card:8986001' ver last_call seen | paste -sd' ')" "2 $last_call stopped"
	# The other card still sleeps.
	assert_equal "$(packed 8986002 | cut -d'|' -f1)" 1
}

@test "switch off: a direct call wakes the sleeping card with its next version and puts it back to sleep" {
	GW_INTERVAL_MS=0 gwsim_start # the resume may follow the stop at once
	export SRQ_MIN_INTERVAL_MS=0
	run -0 sr-enqueue < <(req 8986003 package_expired "$PAST")
	run -0 drain 10
	assert_equal "$(packed 8986003 | cut -d'|' -f1-3)" "1|$(packed 8986003 | cut -d'|' -f2)|stopped"
	sr-admin switch off --reason test >/dev/null
	run -0 sr-enqueue < <(req 8986003 order "$FUTURE")
	assert_output --partial '"status":"direct_ok","action":"resume"'
	assert_output --partial '"ver":2'
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:card:8986003')" 0
	assert_equal "$(packed 8986003 | cut -d'|' -f1,3)" "2|active"
	assert_equal "$(jq -r '"\(.card) \(.kind) \(.key)"' "$T/gw.log" | paste -sd,)" \
		"8986003 stop 8986003-1-stop,8986003 resume 8986003-2-resume"
}
