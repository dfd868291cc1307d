#!/usr/bin/env bats
# migrate.bats - data written by 0.1 (long facts field names, a hash for
# every card that ever had a command) is read as it is, and `sr-admin
# migrate` moves it to this release's layout.

bats_require_minimum_version 1.5.0

load ../test_helper

# old_facts: facts as 0.1 wrote them. L1 was stopped by hand; L2's package
# expired; device D1 is disabled; L3 has both layouts, its short field
# written since.
old_facts() {
	rcli HSET t:card:L1:facts carrier c1 status stopped stopped_by manual pkg_expires_at "$FUTURE" >/dev/null
	rcli HSET t:card:L2:facts carrier c1 status active pkg_expires_at "$PAST" >/dev/null
	rcli HSET t:device:D1:facts disabled 1 >/dev/null
	rcli HSET t:card:L3:facts carrier c1 status stopped st active device D1 >/dev/null
}

@test "facts written by 0.1 are judged by as they are: a card stopped by hand stays stopped, an expired package stops" {
	old_facts
	run -0 sr-enqueue < <(printf '{"card":"%s","carrier":"c1","scene":"order"}\n' L1 L2)
	assert_equal "$(echo "$output" | jq -r '"\(.card) \(.status)"' | tr '\n' ,)" "L1 noop,L2 queued,"
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:stop_resume:high' 0 -1)" L2
	# What the tools write is in the short fields, and wins over the old.
	run -0 sr-admin show L3
	assert_equal "$(echo "$output" | jq -Sc .facts)" '{"carrier":"c1","device":"D1","status":"active"}'
}

@test "migrate: every facts hash in short fields, values kept, a newer short field wins; again, nothing to do" {
	old_facts
	run -0 sr-admin migrate
	assert_equal "$(echo "$output" | jq -c 'select(.migrated == "facts")')" '{"migrated":"facts","keys":4,"changed":4,"refused":0}'
	assert_equal "$(rcli HGETALL t:card:L1:facts | paste -sd' ')" "cr c1 st stopped sb manual pe $FUTURE"
	assert_equal "$(rcli HGETALL t:device:D1:facts | paste -sd' ')" "ds 1"
	assert_equal "$(rcli HGETALL t:card:L3:facts | paste -sd' ' | tr ' ' '\n' | paste -d= - - | sort | paste -sd' ')" \
		"cr=c1 dv=D1 st=active"
	# Read back under the facts' names, and judged the same.
	run -0 sr-admin show L1
	assert_equal "$(echo "$output" | jq -c .facts)" "{\"carrier\":\"c1\",\"status\":\"stopped\",\"stopped_by\":\"manual\",\"pkg_expires_at\":$FUTURE}"
	run -0 sr-enqueue < <(printf '{"card":"L1","carrier":"c1","scene":"order"}\n')
	assert_output --partial '"status":"noop"'
	run -0 sr-admin migrate
	assert_equal "$(echo "$output" | jq -c 'select(.migrated == "facts")')" '{"migrated":"facts","keys":4,"changed":0,"refused":0}'
}

@test "a card hash 0.1 left after its command: read as it is, then put to sleep by migrate; versions never repeat" {
	# I1 finished a stop (version 4); Q1 has a command queued (packed: no
	# hash to migrate); I2 flapped
	# (its direction changes would pack past 64 bytes: it keeps its hash).
	rcli HSET 't:carrier:{c1}:card:I1' ver 4 last_call $((NOW * 1000 - 5000)) seen stopped seen_ms $((NOW * 1000 - 4990)) last_dir stop >/dev/null
	rcli HSET 't:carrier:{c1}:card:I2' ver 9 last_call $((NOW * 1000)) last_dir stop \
		dir_changes "$((NOW * 1000 - 3)) $((NOW * 1000 - 2)) $((NOW * 1000 - 1)) $((NOW * 1000))" >/dev/null
	run -0 sr-enqueue < <(printf '{"card":"Q1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST")
	# A 0.1 hash is judged as it is: its seen state says stopped, so a stop is nothing to do.
	run -0 sr-enqueue < <(printf '{"card":"I1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"stopped"}}\n' "$PAST")
	assert_output --partial '"status":"noop","action":"none","reason":"package_expired","ver":4'
	run -0 sr-admin migrate
	assert_equal "$(echo "$output" | jq -c 'select(.migrated == "idle_cards") | [.keys, .changed]')" '[2,1]'
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:card:I1')" 0
	assert_equal "$(rcli HGET 't:carrier:{c1}:card:I2' ver)" 9
	assert_equal "$(rcli HGET 't:carrier:{c1}:idle:' I1)" "4|$((NOW * 1000 - 5000))|stopped|$((NOW * 1000 - 4990))|stop"
	assert_equal "$(sr-admin show Q1 | jq -r .command.action)" stop
	run -0 sr-admin show I1
	assert_equal "$(echo "$output" | jq -c '[.ver, .command.seen]')" '[4,"stopped"]'
	# Asleep, the card wakes with its version: the next command is 5.
	run -0 sr-enqueue < <(printf '{"card":"I1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' "$FUTURE")
	assert_output --partial '"status":"queued","action":"resume","reason":"entitled","ver":5'
	assert_equal "$(sr-admin show I1 | jq -r '.command | "\(.ver) \(.last_dir) \(.action)"')" '5 stop resume'
}

@test "migrate: a key shaped like a facts hash that is not one is reported, the rest migrated, exit 1" {
	old_facts
	rcli SET t:card:odd:facts x >/dev/null
	run -1 --separate-stderr sr-admin migrate
	assert_equal "$(echo "$output" | jq -c 'select(.migrated == "facts") | [.keys, .changed, .refused]')" '[5,4,1]'
	[[ $stderr == *"t:card:odd:facts: not migrated: WRONGTYPE"* ]]
	assert_equal "$(rcli GET t:card:odd:facts)" x
}

@test "migrate: a key under a card's pattern but not of a card's shape is reported, the rest migrated, exit 1" {
	# A key the scan (carrier:*:card:*) finds whose account has no hash
	# tag: no card of srq's (nor of its layout), and no script may touch it.
	local untagged=c1
	rcli HSET 't:carrier:{c1}:card:I1' ver 4 last_call $((NOW * 1000 - 5000)) seen stopped last_dir stop >/dev/null
	rcli HSET "t:carrier:$untagged:card:X1" ver 2 >/dev/null
	run -1 --separate-stderr sr-admin migrate
	assert_equal "$(echo "$output" | jq -c 'select(.migrated == "idle_cards") | [.keys, .changed, .refused]')" '[2,1,1]'
	[[ $stderr == *"t:carrier:$untagged:card:X1: not migrated: "* ]]
	assert_equal "$(rcli HGET "t:carrier:$untagged:card:X1" ver)" 2
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:card:I1')" 0
}

@test "migrate: Redis down is exit 3 with a message, nothing claimed done" {
	redis_stop
	run -3 --separate-stderr sr-admin migrate
	assert_output ''
	[ -n "$stderr" ]
}
