#!/usr/bin/env bats
# recipes.bats - the operator's recipes in the README, run as written.
#
# Each test reads its recipe lines out of README.md (so an edit of the
# README is an edit of the test), puts a real card id, account and alert id
# where the README has placeholders (8986…, c17, 1795985000123-0), runs each
# line with sh, and checks that it did what its comment says.

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

# block HEADING: the lines of the first ```sh block after "### HEADING" in the
# README, comments and blank lines dropped, one per line.
block() {
	awk -v h="### $1" '
	$0 == h { on = 1; next }
	on && /^```sh/ { inb = 1; next }
	inb && /^```/ { exit }
	inb && !/^#/ && NF { print }' "$PROJECT_ROOT/README.md"
}

# recipe PATTERN: the one line of the Repairs block matching PATTERN (an
# extended regexp), its trailing comment cut, with the card CARD (default
# $CARD) for the README's 8986… and the alert $ALERT for its example id.
recipe() {
	local line
	line=$(block Repairs | grep -E -- "$1")
	[ "$(wc -l <<<"$line")" -eq 1 ] && [ -n "$line" ] || { echo "README Repairs: '$1' matches: $line" >&2; return 1; }
	sed -e 's/  *# .*$//' -e "s/8986…/${CARD:-}/g" -e "s/1795985000123-0/${ALERT:-}/g" <<<"$line"
}

stop() { # stop CARD...: queue a stop of each card on account c17
	local c
	for c in "$@"; do
		printf '{"card":"%s","carrier":"c17","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' "$c"
	done | sr-enqueue >/dev/null
}

@test "Repairs: every recipe does what its comment says" {
	# c17: F1 and F2 frozen after 5xx answers, R1 frozen by a rejection (4xx).
	gwsim_start --fault-5xx-before 1
	stop F1 F2
	drain 10 >/dev/null
	gwsim_stop
	gwsim_start --fault-reject 1
	stop R1
	drain 10 >/dev/null
	gwsim_stop
	assert_equal "$(rcli ZRANGE 't:carrier:{c17}:frozen' 0 -1 | sort | tr '\n' ' ')" "F1 F2 R1 "
	# Every recipe line is tried below: none is left untested.
	assert_equal "$(block Repairs | wc -l)" 11

	run -0 --separate-stderr sh -c "$(CARD=R1 recipe '^sr-admin retry 8986')"
	assert_equal "$(rcli ZRANGE 't:carrier:{c17}:frozen' 0 -1 | sort | tr '\n' ' ')" "F1 F2 "

	run -0 --separate-stderr sh -c "$(recipe 'list c17 --state frozen')"
	assert_line --index 0 --regexp '^card +carrier +state'
	assert_equal "$(tail -n +2 <<<"$output" | awk '{ print $1 }' | sort | tr '\n' ' ')" "F1 F2 "

	run -0 --separate-stderr sh -c "$(recipe 'error-class 5xx --dry-run')"
	assert_equal "$(jq -r .card <<<"$output" | sort | tr '\n' ' ')" "F1 F2 "
	assert_equal "$(rcli ZCARD 't:carrier:{c17}:frozen')" 2 # a dry run changes nothing

	run -0 --separate-stderr sh -c "$(recipe 'error-class 5xx --reason')"
	assert_equal "$(rcli ZCARD 't:carrier:{c17}:frozen')" 0

	run -0 --separate-stderr sh -c "$(recipe 'list c17 --state due')"
	assert_equal "$(jq -r .card <<<"$output" | sort | tr '\n' ' ')" "R1 "
	# F1 and F2 froze on unknown results (a 500 may have applied): retried,
	# they ask the carrier first, confirming.
	run -0 sr-admin list c17 --state confirming
	assert_equal "$(jq -r .card <<<"$output" | sort | tr '\n' ' ')" "F1 F2 "
	run -0 sr-admin list c17 --state claimed # looking took no lease
	assert_output ''

	run -0 --separate-stderr sh -c "$(CARD=F1 recipe '^sr-admin freeze')"
	run -0 sr-admin why F1
	jq -e --arg who "$(id -un)" '.why | test("^frozen by " + $who + " at .*: customer dispute")' <<<"$output"

	run -0 --separate-stderr sh -c "$(CARD=F2 recipe '^sr-admin drop')"
	assert_equal "$(rcli HGET 't:carrier:{c17}:card:F2' action)" ''

	run -0 --separate-stderr sh -c "$(recipe '^sr-admin limits')"
	jq -e '.qps == 5 and .running == 10' <<<"$output"

	# An open alert to acknowledge: G1 fails at the carrier.
	gwsim_start --fault-5xx-before 1
	stop G1
	drain 10 >/dev/null
	gwsim_stop
	ALERT=$(sr-admin alerts | jq -r 'select(.open) | .id' | head -1)
	[ -n "$ALERT" ]
	run -0 --separate-stderr sh -c "$(recipe 'alerts --ack')"
	assert_equal "$(sr-admin alerts --all | jq -r --arg id "$ALERT" 'select(.id == $id) | .open')" false

	# Paused, c17's commands wait for the pause to end (the frozen ones, for
	# an operator).
	stop P1
	sr-admin pause c17 --reason maintenance >/dev/null
	run -0 --separate-stderr sh -c "$(recipe 'list c17 --state paused')"
	assert_equal "$(jq -r .card <<<"$output" | sort | tr '\n' ' ')" "P1 "
	sr-admin resume c17 --reason over >/dev/null

	run -0 --separate-stderr sh -c "$(recipe '^sr-sweep')" # nothing to repair
}

@test "Why was card X not resumed?: the recipe answers with a state and a sentence in people's times" {
	gwsim_start
	printf '{"card":"89860012345678901234","carrier":"c17","scene":"package_expired","facts":{"pkg_expires_at":1,"status":"active"}}\n' |
		sr-enqueue >/dev/null
	drain 10 >/dev/null
	export SRQ_MIN_INTERVAL_MS=600000
	printf '{"card":"89860012345678901234","carrier":"c17","scene":"order","facts":{"pkg_expires_at":%d}}\n' "$FUTURE" |
		sr-enqueue >/dev/null
	line=$(block 'Why was card X not resumed?')
	run -0 --separate-stderr sh -c "$line"
	jq -e '.state == "interval" and .action == "resume"' <<<"$output"
	# As the README's example says it: ISO times, and how far.
	jq -e '.why | test("^waiting for the card.s interval: last call at [0-9-]+T[0-9:]+Z \\(.* ago\\), next allowed at [0-9-]+T[0-9:]+Z \\(in .*\\)$")' <<<"$output"
	grep -F "$(jq -r .why <<<"$output" | sed 's/ at .*//')" "$PROJECT_ROOT/README.md" >/dev/null
}

@test "sr-admin --help's recipes: retry every frozen card; the failures of an account, acknowledged in bulk" {
	gwsim_start --fault-5xx-before 1
	stop F1 F2
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

# alerts_block PATTERN: the line of the Alerts block matching PATTERN, with
# the next when it ends in a pipe (a recipe on two lines), comments cut.
alerts_recipe() {
	awk -v p="$1" '
	$0 == "### Alerts" { on = 1; next }
	on && /^```sh/ { inb = 1; next }
	inb && /^```/ { exit }
	inb && (cont || $0 ~ p) { sub(/  *# .*$/, ""); printf "%s ", $0; cont = /\|$/ }
	' "$PROJECT_ROOT/README.md"
}

@test "Alerts: the bulk recipes do what their comments say" {
	# c17: F1..F4 fail with 5xx answers (failures, then frozen, alerts);
	# c18: G1 too, which no c17 recipe touches.
	gwsim_start --fault-5xx-before 1
	stop F1 F2 F3 F4
	printf '{"card":"G1","carrier":"c18","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' | sr-enqueue >/dev/null
	drain 10 >/dev/null
	gwsim_stop
	assert_equal "$(awk '$0 == "### Alerts" { on = 1 } on && /^```sh/ { b = 1; next } b && /^```/ { exit } b && !/^ / && NF' \
		"$PROJECT_ROOT/README.md" | wc -l)" 4 # every recipe is tried below
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
