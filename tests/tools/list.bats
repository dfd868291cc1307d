#!/usr/bin/env bats
# list.bats - looking without taking, and bulk actions per account: an
# operator finds every frozen command of one account, only those with the
# chosen error class, and retries them in one go (after a dry run).

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	export SRQ_MIN_INTERVAL_MS=0 SRQ_FREEZE_AFTER=2 SRQ_ALERT_AFTER=1 SRQ_CONFIRM_DELAY_MS=50
	GW_INTERVAL_MS=0
	# Failures here are the cards' own: the breaker is kept out of the way.
	profiles 'from = default' 'accounts = *' 'breaker_failures = 100000'
}

# frozen_by KIND CARD...: the cards frozen by sr-gwsim fault KIND (c1).
frozen_by() {
	local kind=$1
	shift
	gwsim_start "$kind" 1
	refund_stop c1 "$@"
	drain 10 >/dev/null
}

@test "list and bulk retry find every frozen command of one account, and only those of the error class" {
	frozen_by --fault-5xx-before X1 X2 X3 X4 X5
	frozen_by --fault-reject Y1 Y2
	# Another account's frozen command is not c1's.
	gwsim_start --fault-reject 1
	refund_stop c2 Z1
	drain 10 >/dev/null
	gwsim_start
	# Records carry numbers as numbers, and the account as "carrier";
	# --carrier keeps one account's alerts.
	run -0 sr-admin alerts --carrier c2
	assert_equal "$(jq -r .carrier <<<"$output" | sort -u)" c2
	assert_equal "$(jq -r '.http | type' <<<"$output" | sort -u)" number
	run -0 sr-admin audit X1
	assert_equal "$(jq -r '.ver_before | type' <<<"$output" | sort -u)" number
	run -0 sr-admin show X1
	assert_equal "$(jq -r '.command.fails | type' <<<"$output")" number
	run -0 sr-admin list c1 --state frozen
	assert_equal "$(jq -r .card <<<"$output" | sort | tr '\n' ' ')" "X1 X2 X3 X4 X5 Y1 Y2 "
	assert_equal "$(jq -r .http <<<"$output" | sort -u | tr '\n' ' ')" "422 500 "
	run -0 sr-admin list c1 --state frozen --error-class 5xx
	assert_equal "$(jq -r .card <<<"$output" | sort | tr '\n' ' ')" "X1 X2 X3 X4 X5 "
	run -0 sr-admin list c1 --state frozen --error-class 422 --table
	assert_line --regexp '^card +carrier +state'
	assert_equal "$(grep -c frozen <<<"$output")" 2

	# A dry run counts and lists, and changes nothing.
	before=$(rcli ZRANGE 't:carrier:{c1}:frozen' 0 -1 | sort)
	run -0 --separate-stderr sr-admin retry --account c1 --error-class 5xx --dry-run
	assert_equal "$(jq -r .card <<<"$output" | sort | tr '\n' ' ')" "X1 X2 X3 X4 X5 "
	[[ $stderr == *"would retry 5 frozen commands of account 'c1' with last error class 5xx"* ]]
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:frozen' 0 -1 | sort)" "$before"

	run -0 --separate-stderr sr-admin retry --account c1 --error-class 5xx --reason "carrier fixed"
	[[ $stderr == *"retrying 5 frozen commands"* ]]
	assert_equal "$(jq -r .done <<<"$output" | sort -u)" retry
	# The 4xx ones stay frozen; the retried ones are due, each audited.
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:frozen' 0 -1 | sort | tr '\n' ' ')" "Y1 Y2 "
	assert_equal "$(rcli ZRANGE 't:carrier:{c2}:frozen' 0 -1)" Z1
	# (due; or confirming first: their last calls' fate is still unknown)
	run -0 sr-admin list c1
	assert_equal "$(jq -r 'select(.state != "frozen") | .card' <<<"$output" | sort | tr '\n' ' ')" "X1 X2 X3 X4 X5 "
	assert_equal "$(jq -r 'select(.card | startswith("X")) | .state' <<<"$output" | sort -u | grep -cv -e due -e confirming)" 0
	run -0 sr-admin audit X3
	assert_output --partial '"event":"admin:retry"'
	assert_output --partial 'carrier fixed'
	drain 10 >/dev/null
	run -0 sr-admin list c1
	assert_equal "$(jq -r .card <<<"$output" | sort | tr '\n' ' ')" "Y1 Y2 "
}

@test "list takes no lease: what it shows as due is still claimed by the next sr-claim" {
	gwsim_start
	refund_stop c1 D1 D2 D3
	run -0 --separate-stderr sr-admin list c1 --state due --limit 2
	assert_equal "$(echo "$output" | wc -l)" 2
	[[ $stderr == *"stopped at --limit 2"* ]]
	assert_equal "$(jq -r .due_at <<<"$output" | grep -c 'T.*Z$')" 2
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:sr_running')" 0
	run -0 sr-claim --max 10
	assert_equal "$(echo "$output" | wc -l)" 3
	run -0 sr-admin list c1 --state claimed
	assert_equal "$(echo "$output" | wc -l)" 3
	run -2 sr-admin list c1 --state bogus
	assert_output --partial 'is not one of'
	run -2 sr-admin list c1 --error-class 9xx
}

@test "a list taken while a claim runs shows every command once, waiting or claimed" {
	# (one claim of all of them: a rate that lets 10,000 be in flight)
	export SRQ_MAX_RUNNING=100000 SRQ_QPS=100000
	awk -v p="$PAST" 'BEGIN { for (i = 0; i < 10000; i++)
		printf "{\"card\":\"89860%05d\",\"carrier\":\"c1\",\"scene\":\"package_expired\",\"facts\":{\"pkg_expires_at\":%d}}\n", i, p }' |
		sr-enqueue >/dev/null
	# The claim moves each command from where it waits packed into its hash.
	( sleep 0.1; sr-claim --max 10000 --batch 10000 >/dev/null ) &
	sr-admin list c1 --limit 100000 >"$T/list"
	wait
	assert_equal "$(jq -r .card "$T/list" | sort -u | wc -l)" 10000
	assert_equal "$(wc -l <"$T/list")" 10000
}

@test "an account no request ever named (a typo) is said to be unknown by list, retry --account and audit, exit 1" {
	refund_stop c1 K1
	for a in "list c9" "retry --account c9 --reason typo" "retry --account c9 --dry-run" "audit --account c9"; do
		# shellcheck disable=SC2086 # (the words are the command's)
		run -1 --separate-stderr sr-admin $a
		assert_output ''
		[[ $stderr == *"account 'c9' is unknown: no request ever named it (a typo?)" ]]
	done
	run -0 sr-admin list c1
	assert_equal "$(jq -r .card <<<"$output")" K1
	run -0 sr-admin audit --account c1
	assert_equal "$(jq -r .event <<<"$output")" queued
}

@test "retry --account retries every command in the state, however many (not only the first 1000 a list shows)" {
	# (no gateway: the commands stay frozen until retried, then due)
	# shellcheck disable=SC2046 # (one word per card)
	refund_stop c1 $(seq -f 'F%04g' 1005)
	seq -f 'F%04g' 1005 | sr-admin freeze - --reason hold >/dev/null
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:frozen')" 1005
	run -0 --separate-stderr sr-admin retry --account c1 --dry-run
	assert_equal "$(jq -r .card <<<"$output" | sort -u | wc -l)" 1005
	[[ $stderr == *"would retry 1005 frozen commands of account 'c1'"* ]]
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:frozen')" 1005
	run -0 --separate-stderr sr-admin retry --account c1 --reason "all of them"
	[[ $stderr == *"retrying 1005 frozen commands"* ]]
	assert_equal "$(jq -r 'select(.done == "retry") | .card' <<<"$output" | sort -u | wc -l)" 1005
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:frozen')" 0
}

@test "retry, freeze and drop of cards refuse the options of retry --account (--dry-run, --account, --state, --error-class): nothing is changed" {
	frozen_by --fault-reject K2
	refund_stop c1 K1
	audit=$(rcli XLEN 't:carrier:{c1}:audit')
	for c in "retry K2" "freeze K1" "drop K1" "retry -" "drop -"; do
		for o in --dry-run "--account c1" "--state frozen" "--error-class 4xx"; do
			# shellcheck disable=SC2086 # (the words are the command's)
			run -2 --separate-stderr sr-admin $c $o --reason x <<<K1
			assert_output ''
			[[ $stderr == *"${o%% *}"*"retry --account"* ]]
		done
	done
	# Each form once: audit takes --account with a card too, so not "(no cards)".
	run -2 --separate-stderr sr-admin freeze K1 --account c1 --reason x
	[[ $stderr == *"(only of retry --account A (no cards) and audit)"* ]]
	# --limit is a list's: a bulk retry retries every one.
	run -2 --separate-stderr sr-admin retry --account c1 --limit 1 --reason x
	[[ $stderr == *--limit* ]]
	assert_equal "$(rcli XLEN 't:carrier:{c1}:audit')" "$audit"
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:frozen' 0 -1)" K2
	run -0 sr-admin list c1 --state due
	assert_equal "$(jq -r .card <<<"$output")" K1
}

@test "list --state paused: the commands waiting because their account is paused, and only those" {
	frozen_by --fault-reject K0
	refund_stop c1 K1 K2
	refund_stop c2 L1
	sr-admin pause c1 --reason maintenance >/dev/null
	run -0 sr-admin list c1 --state paused
	assert_equal "$(jq -r '"\(.card) \(.state)"' <<<"$output" | sort | paste -sd,)" "K1 paused,K2 paused"
	# A frozen command waits for an operator, paused or not; another
	# account's commands are due.
	assert_equal "$(sr-admin list c1 --state frozen | jq -r .card)" K0
	run -0 sr-admin list c2 --state paused
	assert_output ''
	assert_equal "$(sr-admin list c2 --state due | jq -r .card)" L1
	# why says the same of each.
	assert_equal "$(sr-admin why K1 | jq -r .state)" paused
	# Resumed, they are due again.
	sr-admin resume c1 --reason over >/dev/null
	run -0 sr-admin list c1 --state paused
	assert_output ''
	assert_equal "$(sr-admin list c1 --state due | jq -r .card | sort | paste -sd,)" "K1,K2"
}
