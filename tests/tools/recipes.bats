#!/usr/bin/env bats
# recipes.bats - the operator's recipes in sr-admin --help, run as written
# (on one Redis and on a cluster), and the bulk recipes of docs/operations.md's
# Alerts. The blocks of the README and docs/*.md are run by tests/props/readme.bats.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	export SRQ_MIN_INTERVAL_MS=0 SRQ_FREEZE_AFTER=2 SRQ_ALERT_AFTER=1 SRQ_CONFIRM_DELAY_MS=50
	GW_INTERVAL_MS=0
	# Failures here are the cards' own: the breaker is kept out of the way.
	profiles 'from = default' 'accounts = *' 'breaker_failures = 100000'
}

@test "sr-admin --help's recipes: retry every frozen card; the open alerts" {
	gwsim_start --fault-5xx-before 1
	refund_stop c17 F1 F2
	drain 10 >/dev/null
	gwsim_stop
	# The help's lines, with the tests' prefix and Redis socket.
	recipe_help() {
		sr-admin --help | grep -F -- "$1" | sed "s/^  //; s/'polling:/'t:/; s|^redis-cli |$(rcli_line) |"
	}
	line=$(recipe_help "sr-admin alerts --type failures")
	run -0 --separate-stderr sh -c "$line"
	assert_equal "$(jq -r '"\(.alert) \(.card)"' <<<"$output" | sort | tr '\n' ' ')" "failures F1 failures F2 "
	line=$(recipe_help 'sr-admin retry -')
	run -0 --separate-stderr sh -c "$line"
	assert_equal "$(rcli ZCARD 't:carrier:{c17}:frozen')" 0
	run -0 --separate-stderr sh -c "$(recipe_help "sr-admin alerts --type failures")"
	assert_output '' # resolved by the retry
	# Failing again: acknowledged in bulk, counted.
	gwsim_start --fault-5xx-before 1
	drain 10 >/dev/null
	run -0 --separate-stderr sh -c "$(recipe_help "sr-admin alerts --ack --carrier c17 --type failures")"
	assert_equal "$(jq -r .cause <<<"$output" | sort | tr '\n' ' ')" "failures:F1 failures:F2 "
	[[ $stderr == *"acknowledged 2 failures alerts of account 'c17'"* ]]
	run -0 sr-admin alerts --type failures
	assert_output ''
}

# alerts_recipe PATTERN: the line of the Alerts block (docs/operations.md)
# matching PATTERN, with the next when it ends in a pipe (a recipe on two
# lines), comments cut.
alerts_recipe() {
	awk -v p="$1" '
	$0 == "## Alerts" { on = 1; next }
	on && /^```sh/ { inb = 1; next }
	inb && /^```/ { exit }
	inb && (cont || $0 ~ p) { sub(/  *# .*$/, ""); printf "%s ", $0; cont = /\|$/ }
	' "$PROJECT_ROOT/docs/operations.md"
}

@test "Alerts: the bulk recipes do what their comments say" {
	# c17: F1..F4 fail with 5xx answers (failures, then frozen, alerts);
	# c18: G1 too, which no c17 recipe touches.
	gwsim_start --fault-5xx-before 1
	refund_stop c17 F1 F2 F3 F4
	printf '{"card":"G1","carrier":"c18","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' | sr-enqueue >/dev/null
	drain 10 >/dev/null
	gwsim_stop
	assert_equal "$(awk '$0 == "## Alerts" { on = 1 } on && /^```sh/ { b = 1; next } b && /^```/ { exit } b && !/^ / && NF' \
		"$PROJECT_ROOT/docs/operations.md" | wc -l)" 4 # every recipe is tried below
	run -0 --separate-stderr sh -c "$(alerts_recipe 'alerts --carrier c17 --type failures')"
	assert_equal "$(jq -r '"\(.carrier) \(.alert) \(.card) \(.open)"' <<<"$output" | sort | paste -sd,)" \
		"c17 failures F1 true,c17 failures F2 true,c17 failures F3 true,c17 failures F4 true"
	run -0 --separate-stderr sh -c "$(alerts_recipe 'alerts --ack --carrier c17 --type failures')"
	assert_equal "$(jq -r .cause <<<"$output" | sort | paste -sd,)" "failures:F1,failures:F2,failures:F3,failures:F4"
	[[ $stderr == *"acknowledged 4 failures alerts of account 'c17'"* ]]
	# The frozen ones, their lines piped back: each acknowledged, counted.
	run -0 --separate-stderr sh -c "$(alerts_recipe 'alerts --carrier c17 --type frozen')"
	assert_equal "$(jq -r .cause <<<"$output" | sort | paste -sd,)" "frozen:F1,frozen:F2,frozen:F3,frozen:F4"
	[[ $stderr == *"acknowledged 4 alerts"* ]]
	# c17 has none open; c18's is untouched; --all shows the closed ones.
	assert_equal "$(sr-admin alerts | jq -r '"\(.carrier) \(.card)"' | sort -u | paste -sd,)" "c18 G1"
	run -0 --separate-stderr sh -c "$(alerts_recipe 'alerts --all --since 1d')"
	assert_equal "$(jq -r 'select(.carrier == "c17") | .open' <<<"$output" | sort -u)" false
	assert_equal "$(jq -r 'select(.carrier == "c17")' <<<"$output" | jq -s length)" 8
}
