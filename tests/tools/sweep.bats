#!/usr/bin/env bats
# sweep.bats - the inspection sweep: nothing after a clean run; each kind of
# damage, made by hand with redis-cli, is found, repaired, and then converges.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	gwsim_start
}

@test "a clean run leaves nothing to find" {
	gen-sample "$T/s" 100 2 "$(date +%s)" "$SRQ_PREFIX"
	rcli <"$T/s/devices.redis" >/dev/null
	sr-enqueue <"$T/s/requests.jsonl" >/dev/null
	sr-enqueue <"$T/s/renew.jsonl" >/dev/null
	printf '{"card":"X1","carrier":"c0","device":"DX"}\n' | sr-asset >/dev/null
	printf '{"device":"DX","scene":"device"}\n' | sr-enqueue >/dev/null
	dev-eval --until-empty --for 10 >/dev/null
	drain 30 >/dev/null
	run -0 --separate-stderr sr-sweep
	assert_output ''
	[[ $stderr == *"0 findings"* ]]
	# Work in flight is not damage either.
	enqueue Q1 polling
	sr-claim >/dev/null
	run -0 --separate-stderr sr-sweep
	assert_output ''
}

@test "each kind of damage is found and repaired, then everything converges" {
	now_ms=$(( $(date +%s) * 1000 ))
	# A command whose queue entry was lost.
	enqueue M1 polling
	rcli ZREM 't:carrier:{c1}:stop_resume' M1 >/dev/null
	# A claim whose lease expired long ago (its pipeline died; its call may have gone out).
	enqueue L1 order
	sr-claim >/dev/null
	# A queue entry with no command behind it (after the claim, which would
	# have cleaned it up itself).
	rcli ZADD 't:carrier:{c1}:stop_resume' 1 GHOST >/dev/null
	rcli HSET 't:carrier:{c1}:card:L1' lease_until $((now_ms - 3600000)) >/dev/null
	rcli ZADD 't:carrier:{c1}:stop_resume:high' $((now_ms + 3600000)) L1 >/dev/null
	# A confirming command overdue for its status query.
	enqueue U1 reset
	hashed U1 # (as once claimed: a command waiting packed is never confirming)
	rcli HSET 't:carrier:{c1}:card:U1' confirming 1 >/dev/null
	rcli ZADD 't:carrier:{c1}:stop_resume:bulk' $((now_ms - 7200000)) U1 >/dev/null
	# A frozen command left in a queue, and one missing from the frozen set.
	enqueue F1 polling
	enqueue F2 polling
	hashed F1 F2
	rcli HSET 't:carrier:{c1}:card:F1' frozen 1 >/dev/null
	rcli HSET 't:carrier:{c1}:card:F2' frozen 1 >/dev/null
	rcli ZREM 't:carrier:{c1}:stop_resume' F2 >/dev/null
	# Frozen- and confirming-set entries with no such command behind them,
	# one of them a live command's (an older release left them).
	enqueue N1 polling
	rcli ZADD 't:carrier:{c1}:frozen' 1 GF1 1 N1 >/dev/null
	rcli SADD 't:carrier:{c1}:confirming' GC1 >/dev/null
	# A device stuck claimed.
	printf '{"card":"D1C","carrier":"c1","device":"D1","pkg_expires_at":%d}\n{"device":"D1","disabled":1}\n' "$PAST" | sr-asset >/dev/null
	printf '{"device":"D1","scene":"device"}\n' | sr-enqueue >/dev/null
	shard=$(rcli --scan --pattern 't:device_eval:*:dev:D1' | sed 's/.*{d\([0-9]*\)}.*/\1/')
	rcli HSET "t:device_eval:{d$shard}:dev:D1" claim gone lease_until 1 >/dev/null
	rcli ZADD "t:device_eval:{d$shard}:queue" $((now_ms + 3600000)) D1 >/dev/null

	# Damage repaired is news: exit 1 (cron mails it).
	run -1 --separate-stderr sr-sweep --grace-high 60000 --grace-normal 60000 --grace-bulk 600000 --grace-device 60000
	assert_equal "$(echo "$output" | jq -r '"\(.finding) \(.card // .device)"' | sort | tr '\n' ',')" \
		"device_stale_claim D1,frozen_in_queue F1,frozen_unlisted F2,missing_entry M1,orphan_confirming GC1,orphan_entry GHOST,orphan_frozen GF1,orphan_frozen N1,stale_claim L1,stuck_confirming U1,"
	# Repaired: a second sweep finds nothing.
	run -0 --separate-stderr sr-sweep --grace-high 60000 --grace-normal 60000 --grace-bulk 600000 --grace-device 60000
	assert_output ''
	assert_equal "$(rcli ZSCORE 't:carrier:{c1}:stop_resume' GHOST)" ''
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:frozen' 0 -1 | sort | tr '\n' ' ')" "F1 F2 "
	# And the repaired work converges: every non-frozen command is executed.
	dev-eval --until-empty --for 10 >/dev/null
	run -0 drain 30
	assert_equal "$(rcli SMEMBERS 't:carrier:{c1}:confirming')" ''
	assert_equal "$(jq -r 'select(.kind == "stop") | .card' "$T/gw.log" | sort -u | tr '\n' ' ')" "D1C L1 M1 N1 U1 "
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "an account key of the wrong type: an index is moved aside and rebuilt, one only it holds is reported and left alone" {
	enqueue K1 polling
	enqueue K2 polling
	enqueue K3 polling
	# K3 was confirming an unknown result.
	hashed K3
	rcli HSET 't:carrier:{c1}:card:K3' confirming 1 >/dev/null
	rcli SADD 't:carrier:{c1}:confirming' K3 >/dev/null
	# Hand edits: strings where the queue, the confirming set and the limits were.
	for k in stop_resume confirming limits; do
		rcli DEL "t:carrier:{c1}:$k" >/dev/null
		rcli SET "t:carrier:{c1}:$k" clobbered >/dev/null
	done
	# The account is stuck: every claim fails.
	run -3 --separate-stderr sr-claim
	[[ $stderr == *WRONGTYPE* ]]

	run -1 --separate-stderr sr-sweep
	assert_equal "$(echo "$output" | jq -r 'select(.finding == "wrong_type") | "\(.key) \(.type) \(.want) \(if has("repaired") then .repaired else "moved" end) \(.moved_to // "" | test(":damaged:[0-9]+$"))"' | sort)" \
"t:carrier:{c1}:confirming string set moved true
t:carrier:{c1}:limits string hash false false
t:carrier:{c1}:stop_resume string zset moved true"
	# The card pass rebuilt the queue and the confirming set.
	assert_equal "$(echo "$output" | jq -r 'select(.card) | "\(.finding) \(.card)"' | sort | paste -sd,)" \
		"missing_entry K1,missing_entry K2,missing_entry K3"
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:stop_resume' 0 -1 | sort | paste -sd' ')" "K1 K2 K3"
	assert_equal "$(rcli SMEMBERS 't:carrier:{c1}:confirming')" K3
	[[ $stderr == *"1 damaged key left for you"* ]]
	# The damaged keys are kept for a look; the limits are left as they are.
	assert_equal "$(rcli --scan --pattern 't:carrier:{c1}:*:damaged:*' | wc -l)" 2
	assert_equal "$(rcli GET 't:carrier:{c1}:limits')" clobbered

	# Still stuck on the limits, reported again until someone looks.
	run -3 sr-claim
	run -1 --separate-stderr sr-sweep
	assert_equal "$(echo "$output" | jq -r '"\(.finding) \(.key) \(.repaired)"')" "wrong_type t:carrier:{c1}:limits false"
	rcli DEL 't:carrier:{c1}:limits' >/dev/null
	run -0 --separate-stderr sr-sweep
	assert_output ''
	# And the account drains: K3's unknown result is asked about first.
	run -0 drain 3
	assert_equal "$(jq -r 'select(.kind == "stop") | .card' "$T/gw.log" | sort | paste -sd' ')" "K1 K2 K3"
	assert_equal "$(jq -r 'select(.kind == "status") | .card' "$T/gw.log")" K3
}

@test "a command frozen while confirming, then retried, is no finding" {
	export SRQ_FREEZE_AFTER=2
	gwsim_start --fault-drop-after 1 # the call applies, its answer is lost: confirming
	enqueue K1 polling
	sr-claim | sr-exec | sr-confirm >/dev/null
	gwsim_start --fail-account c1 # the query fails too: the second failure freezes it
	sleep 0.3 # SRQ_CONFIRM_DELAY_MS
	sr-claim | sr-exec | sr-confirm >/dev/null
	assert_equal "$(rcli HMGET 't:carrier:{c1}:card:K1' frozen confirming | paste -sd' ')" "1 1"
	sr-admin retry K1 --carrier c1 --reason test >/dev/null
	run -0 --separate-stderr sr-sweep
	assert_output ''
	assert_equal "$(rcli SMEMBERS 't:carrier:{c1}:confirming')" K1
}

@test "the global switch and a device shard's queue of the wrong type are reported and left alone" {
	enqueue G1 polling
	rcli HSET 't:{global}:stop_resume_queue_enabled' on 1 >/dev/null
	rcli SET 't:device_eval:{d3}:queue' clobbered >/dev/null
	# Every claim fails on the switch.
	run -3 sr-claim
	run -1 --separate-stderr sr-sweep
	assert_equal "$(echo "$output" | jq -r '"\(.finding) \(.key) \(.type) \(.want) \(.repaired)"' | sort)" \
"wrong_type t:device_eval:{d3}:queue string zset false
wrong_type t:{global}:stop_resume_queue_enabled hash string false"
	[[ $stderr == *"2 damaged keys left for you"* ]]
	assert_equal "$(rcli TYPE 't:{global}:stop_resume_queue_enabled')" hash
	# Set right by hand: nothing to find, and the account drains.
	rcli DEL 't:{global}:stop_resume_queue_enabled' >/dev/null
	rcli DEL 't:device_eval:{d3}:queue' >/dev/null
	run -0 --separate-stderr sr-sweep
	assert_output ''
	run -0 drain 1
	assert_equal "$(jq -r .card "$T/gw.log")" G1
}

@test "an account list of the wrong type is reported and left alone, and the rest of the sweep still runs" {
	enqueue G1 polling
	rcli DEL t:accounts >/dev/null
	rcli SET t:accounts clobbered >/dev/null
	rcli SET 't:device_eval:{d3}:queue' clobbered >/dev/null
	run -1 --separate-stderr sr-sweep
	assert_equal "$(echo "$output" | jq -r '"\(.finding) \(.key) \(.repaired)"' | sort)" \
"wrong_type t:accounts false
wrong_type t:device_eval:{d3}:queue false"
	[[ $stderr == *"2 damaged keys left for you"* ]]
}

@test "a claimed command whose queue entry was lost is queued again at its lease's end: the call in flight still finishes it" {
	enqueue K1 polling
	sr-claim >"$T/tasks"
	rcli ZREM 't:carrier:{c1}:stop_resume' K1 >/dev/null
	run -1 --separate-stderr sr-sweep
	assert_equal "$(jq -r '"\(.finding) \(.card)"' <<<"$output")" "missing_entry K1"
	assert_equal "$(rcli ZSCORE 't:carrier:{c1}:stop_resume' K1)" "$(rcli HGET 't:carrier:{c1}:card:K1' lease_until)"
	# Not claimable again while its lease runs: the claim out there is its only one.
	run -0 sr-claim
	assert_output ''
	run -0 --separate-stderr sr-sweep
	assert_output ''
	sr-exec <"$T/tasks" | sr-confirm >"$T/finals"
	assert_equal "$(jq -r '"\(.card) \(.state)"' "$T/finals")" "K1 done"
	assert_equal "$(jq -r '"\(.kind) \(.card)"' "$T/gw.log")" "stop K1"
}

@test "a command waiting packed whose entries were damaged is repaired in its hash; one beside a hash leaves" {
	enqueue P1 polling
	enqueue P2 polling
	enqueue P3 polling
	enqueue P4 polling
	# P1: its queue entry lost (found only in its wait bucket). P2: its
	# version in its idle entry garbled; P4: that entry gone. P3: a hash
	# written beside it by hand.
	rcli ZREM 't:carrier:{c1}:stop_resume' P1 >/dev/null
	rcli HSET 't:carrier:{c1}:idle:' P2 x >/dev/null
	rcli HDEL 't:carrier:{c1}:idle:' P4 >/dev/null
	rcli HSET 't:carrier:{c1}:card:P3' ver 7 action resume reason manual scene order prio 0 >/dev/null
	# Shown as it is: a command without a version.
	assert_equal "$(sr-admin show P4 | jq -r '"\(.command.action) \(.ver)"')" "stop 0"
	run -1 --separate-stderr sr-sweep
	assert_equal "$(jq -r '"\(.finding) \(.card)"' <<<"$output" | sort | paste -sd,)" \
		"missing_entry P1,no_version P2,no_version P4,packed_and_hash P3"
	run -0 --separate-stderr sr-sweep
	assert_output ''
	assert_equal "$(rcli HGET 't:carrier:{c1}:wait:' P3)" ''
	assert_equal "$(sr-admin show P3 | jq -r '"\(.command.action) \(.command.ver)"')" "resume 7"
	assert_equal "$(sr-admin show P2 | jq -r '"\(.command.action) \(.command.ver)"')" "stop 1"
	rcli ZADD 't:carrier:{c1}:stop_resume' 0 P2 0 P4 >/dev/null # due now, not a lease ahead
	run -0 drain 10
	assert_equal "$(jq -r 'select(.kind == "stop") | .card' "$T/gw.log" | sort | paste -sd' ')" "P1 P2 P4"
}
