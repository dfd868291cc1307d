#!/usr/bin/env bats
# request_attack.bats - two requests for one card, each bringing facts the
# other lacks, judged at the same time: the one that writes last judged on
# facts from before the other's write. Each race is provoked at a known
# point (helpers/race.bash): one sr-enqueue is stopped just before it writes
# its command, the other runs to its end, then the first goes on. Outcomes
# are checked in Redis and at the carrier (sr-gwsim's log), never timings.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	load ../helpers/race
	srq_setup
	race_setup
}

@test "a stop acked while a renewal of the same card is judged is not cancelled by the renewal's write" {
	# K1 is active, its package valid, its data not used up.
	echo "{\"card\":\"K1\",\"carrier\":\"c1\",\"pkg_expires_at\":$FUTURE,\"status\":\"active\",\"data_quota_kb\":1000,\"data_used_kb\":10}" |
		sr-asset >/dev/null
	echo '{"card":"K1","status":"active"}' >"$T/gw-cards.jsonl"
	# The renewal read K1's facts (entitled: nothing to do); before it
	# writes, a usage report says the data is used up, and its stop is acked.
	printf '{"card":"K1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' $((FUTURE + 86400)) >"$T/in"
	cat >"$T/race.sh" <<-'EOF'
	echo '{"card":"K1","carrier":"c1","scene":"data_exhausted","facts":{"data_used_kb":2000}}' | sr-enqueue
	EOF
	run at_write sr-enqueue "$T/race.sh"
	assert_equal "$status" 0
	assert_equal "$(jq -r '"\(.status) \(.action)"' "$T/script.out")" "queued stop"
	# The renewal's judgment (nothing to do) cancelled that stop; judged
	# again on the facts as they now are, it queues the stop once more and
	# its line says so.
	assert_equal "$(jq -r '"\(.status) \(.followup) \(.followup_status)"' "$T/out")" "cancelled stop queued"
	assert_equal "$(sr-admin show K1 | jq -r .command.action)" stop
	gwsim_start --cards "$T/gw-cards.jsonl"
	drain_until_empty
	assert_equal "$(final_state K1)" stopped
	assert_equal "$(jq -r .kind "$T/gw.log" | paste -sd,)" stop
}

@test "a resume acked while a data report of the same card is judged is not cancelled by the report's write" {
	# K1 was stopped for its expired package.
	echo "{\"card\":\"K1\",\"carrier\":\"c1\",\"pkg_expires_at\":$PAST,\"status\":\"stopped\",\"data_quota_kb\":1000,\"data_used_kb\":10}" |
		sr-asset >/dev/null
	echo '{"card":"K1","status":"stopped"}' >"$T/gw-cards.jsonl"
	# A usage report read K1's facts (expired, stopped: nothing to do);
	# before it writes, the customer renews, and the resume is acked.
	echo '{"card":"K1","carrier":"c1","scene":"data_exhausted","facts":{"data_used_kb":20}}' >"$T/in"
	cat >"$T/race.sh" <<-EOF
	printf '{"card":"K1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' $FUTURE | sr-enqueue
	EOF
	run at_write sr-enqueue "$T/race.sh"
	assert_equal "$status" 0
	assert_equal "$(jq -r '"\(.status) \(.action)"' "$T/script.out")" "queued resume"
	assert_equal "$(jq -r '"\(.status) \(.followup) \(.followup_status)"' "$T/out")" "cancelled resume queued"
	assert_equal "$(sr-admin show K1 | jq -r .command.action)" resume
	gwsim_start --cards "$T/gw-cards.jsonl"
	drain_until_empty
	assert_equal "$(final_state K1)" active
	assert_equal "$(jq -r .kind "$T/gw.log" | paste -sd,)" resume
}

@test "two requests that agree are not queued twice: no followup, one call" {
	echo "{\"card\":\"K1\",\"carrier\":\"c1\",\"pkg_expires_at\":$FUTURE,\"status\":\"active\",\"data_quota_kb\":1000,\"data_used_kb\":10}" |
		sr-asset >/dev/null
	echo '{"card":"K1","status":"active"}' >"$T/gw-cards.jsonl"
	# Both say the data is used up: the second writes the same stop.
	echo '{"card":"K1","carrier":"c1","scene":"data_exhausted","facts":{"data_used_kb":2000}}' >"$T/in"
	cat >"$T/race.sh" <<-'EOF'
	echo '{"card":"K1","carrier":"c1","scene":"data_exhausted","facts":{"data_used_kb":3000}}' | sr-enqueue
	EOF
	run at_write sr-enqueue "$T/race.sh"
	assert_equal "$status" 0
	assert_equal "$(jq -r '"\(.status) \(.action)"' "$T/script.out")" "queued stop"
	assert_equal "$(jq -r '"\(.status) \(.followup)"' "$T/out")" "unchanged null"
	gwsim_start --cards "$T/gw-cards.jsonl"
	drain_until_empty
	assert_equal "$(final_state K1)" stopped
	assert_equal "$(jq -r .kind "$T/gw.log" | paste -sd,)" stop
}

# pause_redis: the commands (for bash) that make Redis stop answering for
# 2 s: every master, on a cluster.
pause_redis() {
	if [ "${SRQ_TEST_REDIS:-}" = cluster ]; then
		for port in $(cluster_masters); do echo "redis-cli -p $port CLIENT PAUSE 2000 ALL"; done
	else
		echo "redis-cli -s $T/redis.sock CLIENT PAUSE 2000 ALL"
	fi
}

@test "Redis silent when the card is to be judged again: the acked line stands, says so, and the exit is 3" {
	echo "{\"card\":\"K1\",\"carrier\":\"c1\",\"pkg_expires_at\":$FUTURE,\"status\":\"active\"}" | sr-asset >/dev/null
	echo '{"card":"K1","carrier":"c1","scene":"data_exhausted","facts":{"data_used_kb":2000,"data_quota_kb":1000}}' >"$T/in"
	# Stopped once its write is answered, before it reads the facts again;
	# there Redis stops answering for 2 s (every master, on a cluster).
	pause_redis >"$T/race.sh"
	SRQ_REDIS_TIMEOUT_MS=300 run at_break judge_again sr-enqueue "$T/race.sh"
	assert_equal "$status" 3
	# The stop was queued: its line says so, and that it was not checked.
	assert_equal "$(jq -r '"\(.status) \(.action)"' "$T/out")" "queued stop"
	run jq -r .warning "$T/out"
	assert_output --partial "not judged again after its write: Redis connection failed: no answer from Redis within 300 ms"
	run cat "$T/err"
	assert_output --partial "not judged again after its write"
	# (Redis holds a paused client's commands until the pause ends.)
	assert_equal "$(sr-admin show K1 | jq -r .command.action)" stop
}

@test "a card moved to another device while it was judged: device_requeued names the device asked for again, not the new one" {
	sr-asset >/dev/null <<-EOF2
	{"card":"K1","carrier":"c1","device":"D1","pkg_expires_at":$FUTURE,"status":"active"}
	{"device":"D1","pkg_expires_at":$FUTURE}
	EOF2
	# sr-enqueue read K1's facts and D1's evaluation state; before it
	# writes, D1 is evaluated, and K1 is moved to D2.
	echo '{"card":"K1","carrier":"c1","scene":"polling"}' >"$T/in"
	cat >"$T/race.sh" <<-'EOF2'
	echo '{"device":"D1","scene":"device"}' | sr-enqueue
	dev-eval
	echo '{"card":"K1","carrier":"c1","device":"D2"}' | sr-asset
	EOF2
	run at_write sr-enqueue "$T/race.sh"
	assert_equal "$status" 0
	# D1's evaluation ran while K1 was judged on D1's facts: D1 is asked
	# for again, and the ack says so (judged again on its facts as they
	# now are, which name D2, K1 wants nothing either way).
	assert_equal "$(jq -r '"\(.status) \(.device_requeued) \(.followup // "-")"' "$T/out")" "noop D1 -"
	# And it is D1 that is evaluated again.
	run -0 dev-eval --until-empty --for 5
	assert_equal "$(jq -r .device <<<"$output" | paste -sd,)" D1
}

@test "switch off: a direct call that failed is queued, and judged again like any write: a request judged meanwhile is not overwritten" {
	# K1 active, its package valid, 10 of its 1000 kB used; its account is
	# paused, so a direct call fails and is queued for later.
	echo "{\"card\":\"K1\",\"carrier\":\"c1\",\"pkg_expires_at\":$FUTURE,\"status\":\"active\",\"data_quota_kb\":1000,\"data_used_kb\":10}" |
		sr-asset >/dev/null
	gwsim_start
	sr-admin switch off --reason test >/dev/null
	sr-admin pause c1 --force --reason test >/dev/null
	# A usage report read K1's facts (2000 kB of 1000: stop); before it
	# writes, the quota is raised to 5000 kB, judged on the old usage
	# (nothing to do).
	echo '{"card":"K1","carrier":"c1","scene":"data_exhausted","facts":{"data_used_kb":2000}}' >"$T/in"
	cat >"$T/race.sh" <<-'EOF2'
	echo '{"card":"K1","carrier":"c1","scene":"order","facts":{"data_quota_kb":5000}}' | sr-enqueue
	EOF2
	run at_break run_direct sr-enqueue "$T/race.sh"
	assert_equal "$status" 3
	assert_equal "$(jq -r .status "$T/script.out")" noop
	# The stop, judged on the old quota, failed and was queued; judged
	# again on the facts as they now are (2000 of 5000 kB), it is cancelled.
	assert_equal "$(jq -r '"\(.status) \(.action) \(.followup) \(.followup_status)"' "$T/out")" \
		"direct_failed stop none cancelled"
	assert_equal "$(sr-admin show K1 | jq -r '.command.action // "none"')" none
	assert_equal "$(wc -l <"$T/gw.log")" 0
}

@test "three requests: the followup of one, judged before the third wrote, is judged again and undone" {
	echo "{\"card\":\"K1\",\"carrier\":\"c1\",\"pkg_expires_at\":$FUTURE,\"status\":\"active\",\"data_quota_kb\":1000,\"data_used_kb\":10}" |
		sr-asset >/dev/null
	# A renewal is stopped before its write; a usage report queues a stop.
	# The renewal's write cancels it, and judged again it queues the stop
	# once more; stopped before that followup's write, the quota is raised
	# (nothing to do: the stop is cancelled). The followup, judged without
	# the quota, is written last: judged again, the renewal undoes it.
	printf '{"card":"K1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' $((FUTURE + 86400)) >"$T/in"
	echo '{"card":"K1","carrier":"c1","scene":"data_exhausted","facts":{"data_used_kb":2000}}' >"$T/b.in"
	echo "sr-enqueue <'$T/b.in'" >"$T/b.sh"
	echo '{"card":"K1","carrier":"c1","scene":"order","facts":{"data_quota_kb":5000}}' >"$T/c.in"
	echo "sr-enqueue <'$T/c.in'" >"$T/c.sh"
	run at_breaks sr_cmds_append sr-enqueue "$T/b.sh" "$T/c.sh"
	assert_equal "$status" 0
	assert_equal "$(jq -r '"\(.status) \(.action)"' "$T/b.sh.out")" "queued stop"
	assert_equal "$(jq -r .status "$T/c.sh.out")" noop
	# The renewal's line says where it ended: nothing wanted, nothing queued.
	assert_equal "$(jq -r '"\(.status) \(.followup) \(.followup_status) \(.warning // "-")"' "$T/out")" \
		"cancelled none cancelled -"
	assert_equal "$(sr-admin show K1 | jq -r '.command.action // "none"')" none
}

@test "a card whose facts change under each of its passes: the last followup stands, the line says to send it again, exit 3" {
	echo "{\"card\":\"K1\",\"carrier\":\"c1\",\"pkg_expires_at\":$FUTURE,\"status\":\"active\",\"data_quota_kb\":1000,\"data_used_kb\":10}" |
		sr-asset >/dev/null
	# A renewal is stopped before its write and before each followup's;
	# there, in turn, the usage and the quota go up, so that each followup
	# is judged on facts one write behind.
	printf '{"card":"K1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' $((FUTURE + 86400)) >"$T/in"
	local i=0 f
	for f in data_used_kb:2000 data_quota_kb:5000 data_used_kb:6000 data_quota_kb:10000; do
		i=$((i + 1))
		printf '{"card":"K1","carrier":"c1","scene":"polling","facts":{"%s":%s}}\n' "${f%:*}" "${f#*:}" >"$T/$i.in"
		echo "sr-enqueue <'$T/$i.in'" >"$T/$i.sh"
	done
	run at_breaks sr_cmds_append sr-enqueue "$T/1.sh" "$T/2.sh" "$T/3.sh" "$T/4.sh"
	assert_equal "$status" 3
	jq -e . "$T/out" >/dev/null
	assert_equal "$(jq -r '"\(.status) \(.followup) \(.followup_status)"' "$T/out")" "cancelled stop queued"
	run jq -r .warning "$T/out"
	assert_output "its card's facts kept changing while it was judged: send it again to be sure of the last word"
	# Sent again, it reads the facts as they now are (6000 of 10000 kB):
	# nothing wanted, and the stop its last followup queued is cancelled.
	run -0 sr-enqueue <"$T/in"
	assert_equal "$(jq -r '"\(.status) \(.followup // "-")"' <<<"$output")" "cancelled -"
}

@test "a followup judged 'nothing to do' that the queue turns towards the target of a confirming command says what it queued" {
	# K1's expired package: its stop went to the carrier, which applied it
	# and dropped the connection: the result is unknown, the stop confirming,
	# the facts still say active.
	echo "{\"card\":\"K1\",\"carrier\":\"c1\",\"pkg_expires_at\":$PAST,\"status\":\"active\"}" | sr-asset >/dev/null
	echo '{"card":"K1","status":"active"}' >"$T/gw-cards.jsonl"
	gwsim_start --cards "$T/gw-cards.jsonl" --fault-drop-after 1
	echo '{"card":"K1","carrier":"c1","scene":"polling"}' | sr-enqueue >/dev/null
	run -0 bash -c 'sr-claim | sr-exec | sr-confirm'
	assert_output --partial '"state":"confirming"'
	# A poll read K1's facts (expired: stop); before it writes, the customer
	# renews (nothing to do, but the stop may have gone: the queue turns it
	# into a resume).
	echo '{"card":"K1","carrier":"c1","scene":"polling"}' >"$T/in"
	cat >"$T/race.sh" <<-EOF2
	printf '{"card":"K1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' $FUTURE | sr-enqueue
	EOF2
	run at_write sr-enqueue "$T/race.sh"
	assert_equal "$status" 0
	assert_equal "$(jq -r '"\(.status) \(.action)"' "$T/script.out")" "queued resume"
	# The poll's stop replaced it; judged again (renewed: nothing to do),
	# the queue turned that into a resume again, and the line says resume.
	assert_equal "$(sr-admin show K1 | jq -r .command.action)" resume
	assert_equal "$(jq -r '"\(.status) \(.action) \(.followup) \(.followup_status)"' "$T/out")" "queued stop resume queued"
}

@test "a stop acked unchanged while sr-exec judges its claim on older facts is called, not finished as no longer wanted" {
	# K1's stop is queued (its package expired); then the mirror renews the
	# package (sr-asset judges nothing: the claim's re-judgment will).
	echo "{\"card\":\"K1\",\"carrier\":\"c1\",\"pkg_expires_at\":$PAST,\"status\":\"active\",\"data_quota_kb\":1000,\"data_used_kb\":10}" |
		sr-asset >/dev/null
	echo '{"card":"K1","carrier":"c1","scene":"package_expired"}' | sr-enqueue >/dev/null
	echo "{\"card\":\"K1\",\"carrier\":\"c1\",\"pkg_expires_at\":$FUTURE}" | sr-asset >/dev/null
	echo '{"card":"K1","status":"active"}' >"$T/gw-cards.jsonl"
	gwsim_start --cards "$T/gw-cards.jsonl"
	sr-claim >"$T/in"
	# sr-exec judged its claim again (renewed: no longer wanted) and is about
	# to ask the gate to finish it without a call; meanwhile a usage report
	# says the data is used up, and its stop is acked.
	cat >"$T/race.sh" <<-'EOF2'
	echo '{"card":"K1","carrier":"c1","scene":"data_exhausted","facts":{"data_used_kb":2000}}' | sr-enqueue
	EOF2
	run at_break gate_append sr-exec "$T/race.sh"
	assert_equal "$(jq -r '"\(.status) \(.action)"' "$T/script.out")" "queued stop"
	# The claim judged on the older facts does not finish the command.
	assert_equal "$(jq -r '"\(.outcome) \(.error)"' "$T/out")" "superseded version 1 replaced by 2"
	sr-confirm <"$T/out" >/dev/null
	drain_until_empty
	assert_equal "$(final_state K1)" stopped
	assert_equal "$(jq -r .kind "$T/gw.log" | paste -sd,)" stop
}

@test "Redis silent while a followup is written: the line says the facts were judged again and what they want was not answered" {
	echo "{\"card\":\"K1\",\"carrier\":\"c1\",\"pkg_expires_at\":$FUTURE,\"status\":\"active\",\"data_quota_kb\":1000,\"data_used_kb\":10}" |
		sr-asset >/dev/null
	printf '{"card":"K1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' $((FUTURE + 86400)) >"$T/in"
	# The renewal is stopped before its write (a usage report then queues a
	# stop), and again before its followup's write (Redis then goes silent).
	cat >"$T/race1.sh" <<-'EOF'
	echo '{"card":"K1","carrier":"c1","scene":"data_exhausted","facts":{"data_used_kb":2000}}' | sr-enqueue
	EOF
	pause_redis >"$T/race2.sh"
	SRQ_REDIS_TIMEOUT_MS=300 run at_breaks sr_cmds_append sr-enqueue "$T/race1.sh" "$T/race2.sh"
	assert_equal "$status" 3
	assert_equal "$(jq -r '"\(.status) \(.action)"' "$T/race1.sh.out")" "queued stop"
	run jq -r .warning "$T/out"
	assert_output --partial "judged again after its write, the facts want stop, and that was not answered (send it again)"
	# Sent again, the renewal leaves the stop queued (whether or not Redis
	# ran the unanswered followup), once the pause is over.
	run -0 sr-enqueue <"$T/in"
	assert_equal "$(jq -r .action <<<"$output") $(sr-admin show K1 | jq -r .command.action)" "stop stop"
}
