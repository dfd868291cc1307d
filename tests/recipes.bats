#!/usr/bin/env bats
# recipes.bats - the operator's recipes in sr-admin --help, run as written
# (on one Redis and on a cluster). The README's recipes are run by
# tests/readme.bats.

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	srq_setup
	export SRQ_MIN_INTERVAL_MS=0 SRQ_FREEZE_AFTER=2 SRQ_ALERT_AFTER=1 SRQ_CONFIRM_DELAY_MS=50
	GW_INTERVAL_MS=0
	# Failures here are the cards' own: the breaker is kept out of the way.
	profiles 'from = default' 'accounts = *' 'breaker_failures = 100000'
}

teardown() {
	srq_teardown
}

stop() { # stop CARD...: queue a stop of each card on account c17
	local c
	for c in "$@"; do
		printf '{"card":"%s","carrier":"c17","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' "$c"
	done | sr-enqueue >/dev/null
}

@test "sr-admin --help's recipes: retry every frozen card; the open alerts" {
	gwsim_start --fault-5xx-before 1
	stop F1 F2
	drain 10 >/dev/null
	gwsim_stop
	# The help's lines, with the tests' prefix and Redis socket.
	recipe_help() {
		sr-admin --help | grep -F -- "$1" | sed "s/^  //; s/'polling:/'t:/; s|^redis-cli |$(rcli_line) |"
	}
	line=$(recipe_help "sr-admin alerts | jq")
	run -0 --separate-stderr sh -c "$line"
	assert_equal "$(jq -r '"\(.alert) \(.card)"' <<<"$output" | sort | tr '\n' ' ')" "failures F1 failures F2 frozen F1 frozen F2 "
	line=$(recipe_help 'sr-admin retry -')
	run -0 --separate-stderr sh -c "$line"
	assert_equal "$(rcli ZCARD 't:carrier:{c17}:frozen')" 0
	run -0 --separate-stderr sh -c "$(recipe_help "sr-admin alerts | jq")"
	assert_output '' # resolved by the retry
}
