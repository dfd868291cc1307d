#!/usr/bin/env bats
# demo.bats - the newcomer's command works end to end (on a smaller sample).

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
}

@test "the demo runs, checks itself, and stops what it started" {
	run -0 "$PROJECT_ROOT/scripts/demo.sh" 300 2
	assert_line --partial '0 interval violations, 0 rate violations, 300 of 300 cards in their judged state'
	assert_line --regexp '^  \* +0 +0 '
	# Nothing left running from the demo.
	[ ! -S "$PROJECT_ROOT/demo/redis.sock" ] || ! redis-cli -s "$PROJECT_ROOT/demo/redis.sock" PING
}
