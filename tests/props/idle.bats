#!/usr/bin/env bats
# idle.bats - a card with no command sleeps packed in its account's idle
# bucket (docs/redis.md "Redis layout"), and keeps there what outlives its
# commands: its version, its last call and what srq saw at the carrier.

bats_require_minimum_version 1.5.0

load ../test_helper

# packed CARD: the card's packed state, from its bucket.
packed() {
	rcli HGET "t:carrier:{c1}:idle:${1:0:${#1}-2}" "${1: -2}"
}

# waiting CARD: the card's command waiting packed for its claim.
waiting() {
	rcli HGET "t:carrier:{c1}:wait:${1:0:${#1}-2}" "${1: -2}"
}

@test "a finished card sleeps in its bucket; its next command wakes it with its version, and its interval holds" {
	gwsim_start
	run -0 sr-enqueue < <(request 8986001 package_expired "$PAST" -; request 8986002 package_expired "$PAST" -)
	run -0 drain 10
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:card:8986001' 't:carrier:{c1}:card:8986002')" 0
	# Both in one bucket (their ids differ in the last two digits).
	assert_equal "$(rcli HKEYS 't:carrier:{c1}:idle:89860' | sort | paste -sd' ')" "01 02"
	IFS='|' read -r ver last_call seen _ last_dir <<<"$(packed 8986001)"
	assert_equal "$ver $seen $last_dir" "1 stopped stop"
	# The renewal: version 2, due no earlier than the interval allows; it
	# waits packed, the card still asleep.
	run -0 sr-enqueue < <(request 8986001 order "$FUTURE" -)
	assert_output --partial '"status":"queued","action":"resume","reason":"entitled","ver":2'
	assert_equal "$(packed 8986001 | cut -d'|' -f1-3)" "2|$last_call|stopped"
	assert_equal "$(waiting 8986001)" "resume|entitled|order||0"
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:card:8986001')" 0
	due=$(rcli ZSCORE 't:carrier:{c1}:stop_resume:high' 8986001)
	[ "$due" -ge $((last_call + SRQ_MIN_INTERVAL_MS)) ]
	assert_equal "$(sr-admin show 8986001 | jq -r '.command | "\(.ver) \(.last_call) \(.seen) \(.action) \(.scene)"')" \
		"2 $last_call stopped resume order"
	# The other card still sleeps.
	assert_equal "$(packed 8986002 | cut -d'|' -f1)" 1
}

@test "switch off: a direct call wakes the sleeping card with its next version and puts it back to sleep" {
	GW_INTERVAL_MS=0 gwsim_start # the resume may follow the stop at once
	export SRQ_MIN_INTERVAL_MS=0
	run -0 sr-enqueue < <(request 8986003 package_expired "$PAST" -)
	run -0 drain 10
	assert_equal "$(packed 8986003 | cut -d'|' -f1-3)" "1|$(packed 8986003 | cut -d'|' -f2)|stopped"
	sr-admin switch off --reason test >/dev/null
	run -0 sr-enqueue < <(request 8986003 order "$FUTURE" -)
	assert_output --partial '"status":"direct_ok","action":"resume"'
	assert_output --partial '"ver":2'
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:card:8986003')" 0
	assert_equal "$(packed 8986003 | cut -d'|' -f1,3)" "2|active"
	assert_equal "$(jq -r '"\(.card) \(.kind) \(.key)"' "$T/gw.log" | paste -sd,)" \
		"8986003 stop 8986003-1-stop,8986003 resume 8986003-2-resume"
}

@test "a new command waits packed until its claim: replaced, cancelled, listed, claimed and finished as a hash would be" {
	gwsim_start
	export SRQ_MIN_INTERVAL_MS=0
	run -0 sr-enqueue < <(request 8986011 package_expired "$PAST" -; request 8986012 package_expired "$PAST" -; request 8986013 package_expired "$PAST" -)
	assert_equal "$(rcli --scan --pattern 't:carrier:{c1}:card:*' | wc -l)" 0
	assert_equal "$(waiting 8986011)" "stop|package_expired|||1"
	assert_equal "$(packed 8986011)" 1
	# Asked again: unchanged, nothing written.
	run -0 sr-enqueue < <(request 8986011 package_expired "$PAST" -)
	assert_output --partial '"status":"unchanged"'
	# A renewal before the claim cancels one (version 2, asleep again).
	run -0 sr-enqueue < <(printf '{"card":"8986012","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d,"status":"active"}}\n' "$FUTURE")
	assert_output --partial '"status":"cancelled"'
	assert_equal "$(waiting 8986012)$(rcli EXISTS 't:carrier:{c1}:card:8986012')" 0
	assert_equal "$(packed 8986012)" 2
	# An operator sees it, and freezes another: changed in its hash.
	assert_equal "$(sr-admin list c1 | jq -r '"\(.card) \(.state) \(.ver) \(.reason)"' | paste -sd,)" \
		"8986011 due 1 package_expired,8986013 due 1 package_expired"
	sr-admin freeze 8986013 --carrier c1 --reason test >/dev/null
	assert_equal "$(waiting 8986013)" ''
	assert_equal "$(rcli HMGET 't:carrier:{c1}:card:8986013' action frozen ver | paste -sd' ')" "stop 1 1"
	run -0 --separate-stderr sr-sweep
	assert_output ''
	# The claim takes it into the card's hash; the finish puts the card to sleep.
	sr-claim >"$T/tasks"
	assert_equal "$(jq -r '"\(.card) \(.ver) \(.reason) \(.scene)"' "$T/tasks")" "8986011 1 package_expired package_expired"
	assert_equal "$(waiting 8986011)$(packed 8986011)" ''
	assert_equal "$(rcli HMGET 't:carrier:{c1}:card:8986011' action ver claim | paste -sd' ' | cut -d' ' -f1,2)" "stop 1"
	sr-exec <"$T/tasks" | sr-confirm >/dev/null
	assert_equal "$(packed 8986011 | cut -d'|' -f1,3)" "1|stopped"
	assert_equal "$(rcli --scan --pattern 't:carrier:{c1}:wait:*' | wc -l)" 0
	assert_equal "$(jq -r '"\(.kind) \(.card)"' "$T/gw.log")" "stop 8986011"
}

@test "a waiting command shows the same before and after its claim, packed or in its hash" {
	run -0 sr-enqueue < <(request 8986021 package_expired "$PAST" -)
	before=$(sr-admin show 8986021 | jq -c '.command | {action, ver, reason, scene, source, prio}')
	sr-claim >/dev/null
	after=$(sr-admin show 8986021 | jq -c '.command | {action, ver, reason, scene, source, prio}')
	assert_equal "$before" "$after"
	assert_equal "$before" '{"action":"stop","ver":1,"reason":"package_expired","scene":"package_expired","source":"","prio":1}'
}
