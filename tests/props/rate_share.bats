#!/usr/bin/env bats
# rate_share.bats - the account's rate shared with its other callers: a
# status poller takes its slots with sr-rate beside srq's own drain, and the
# carrier never sees more than the account's limit; srq keeps its reserve
# while it has work and lends it when it has none. Every check is on the
# carrier's own log (srq's cards are B*, the poller's P*).

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	export SRQ_QPS=10
	# One window is 1100 ms here (SRQ_RATE_WINDOW_MS): the pace holds 10
	# slots a window, srq keeps 6 of them while it has work.
	profiles 'from = default' 'accounts = *' 'reserve_qps = 6'
	gwsim_start --qps 10
}

# poller ID: as fast as it can, a slot, then a status query of its own card
# at the carrier, until $T/stop exists; every take's record in $T/poll.ID.
poller() {
	local i=0
	while [ ! -e "$T/stop" ]; do
		sr-rate take c0 --class status --wait 5000 --late 100 >>"$T/poll.$1" || continue
		curl -s -o /dev/null "$SRQ_GATEWAY/v1/cards/P$1x$((i++))/status?carrier=c0"
	done
}

# most CARDS MS [SPAN]: the most arrivals of the cards matching CARDS (a
# regex) in any MS at the carrier; with SPAN ([from, to], JSON), in the
# windows that lie within it.
most() {
	jq -s --arg re "$1" --argjson ms "$2" --argjson span "${3:-[0, 1e15]}" '
	  [.[] | select(.card | test($re)) | .t] | sort as $t
	  | [range(0; $t | length) as $i | select($t[$i] >= $span[0] and $t[$i] + $ms <= $span[1])
	     | [$t[] | select(. >= $t[$i] and . < $t[$i] + $ms)] | length] | max // 0' "$T/gw.log"
}

@test "a poller beside a backlog drain: no second over the limit at the carrier, srq keeps its reserve" {
	spread_backlog 150 1
	poller 1 &
	p1=$!
	poller 2 &
	p2=$!
	run -0 drain 60
	touch "$T/stop"
	wait "$p1" "$p2"
	# Both called the account, and no second held more than its limit.
	jq -s -e '[.[] | select(.card | startswith("P"))] | length > 5' "$T/gw.log"
	run gwcheck rate "$T/gw.log" 10
	assert_output ''
	assert_equal "$(jq -s '[.[] | select(.refused)] | length' "$T/gw.log")" 0
	# The drain finished: every card stopped once.
	assert_equal "$(jq -s '[.[] | select(.kind == "stop" and .applied)] | length' "$T/gw.log")" 150
	# While srq had work the pollers never held more than what its reserve
	# leaves them: 4 slots a window, each of theirs weighing 1 + 100/110
	# for its lateness: 2 slots in any window... "While srq had work" is
	# the windows from one after srq's first call (what was lent before is
	# spent within a window of srq's first ask) to its last call: before and
	# after, the reserve is lent, and the pollers may take it.
	span=$(jq -s -c '[.[] | select(.card | startswith("B")) | .t] | [min + 1100, max]' "$T/gw.log")
	run jq -s --argjson span "$span" '[.[].slots[]] | sort as $t
	  | [range(0; $t | length) as $i | select($t[$i] >= $span[0] and $t[$i] + 1100 <= $span[1])
	     | [$t[] | select(. >= $t[$i] and . < $t[$i] + 1100)] | length] | max // 0' \
		"$T/poll.1" "$T/poll.2"
	[ "$output" -le 2 ] || { echo "the pollers had $output slots in a window"; false; }
	# ...and at the carrier, late as they were, never more than 4 calls.
	run most '^P' 1100 "$span"
	[ "$output" -le 4 ] || { echo "the pollers took $output calls in a window"; false; }
	# So srq had its reserve: 6 slots a window (5.45 a second), in the
	# whole seconds of the drain (not its first nor its last) at least 5 a
	# second on average, and at least 4 in each (one less where the windows
	# and the seconds do not line up, one for a call of its own sent late).
	run jq -s -c '[.[] | select(.card | startswith("B")) | .t / 1000 | floor] | min as $a | max as $b
	  | map(select(. > $a and . < $b)) | group_by(.) | map(length)
	  | {avg: (add / length), min: min} | select(.avg < 5 or .min < 4)' "$T/gw.log"
	assert_output ''
}

@test "srq with no work lends its reserve: a poller alone takes the whole rate, and no more" {
	spread_backlog 1 1 # the account is known; its one card is not drained
	for i in $(seq 30); do
		run -0 sr-rate take c0 --class usage --wait 5000 --late 20
		curl -s -o /dev/null "$SRQ_GATEWAY/v1/cards/P$i/status?carrier=c0"
	done
	# More than the 4 a window srq's reserve would leave it...
	run most '^P' 1100
	[ "$output" -gt 4 ] || { echo "lent: only $output calls in a window"; false; }
	run gwcheck rate "$T/gw.log" 10
	assert_output ''
	run -0 sr-rate show c0
	assert_equal "$(jq -c '[.srq_active, .reserve_qps, .classes.usage.slots]' <<<"$output")" '[false,6,30]'
}

@test "srq asking for slots takes its reserve back: the others are held to the rest" {
	spread_backlog 1 1
	# srq's gate is asking (what gate.lua records, refusals too): its last
	# ask put a few seconds ahead, so that it is recent all through the test.
	now=$(rcli TIME | head -1)
	rcli HSET 't:carrier:{c0}:edge' srq_at "$((now + 5))000" >/dev/null
	# 10 slots a window, 6 kept for srq: 4 for the others, the next refused.
	run -0 sr-rate take c0 --class usage --n 4 --late 0
	run -1 --separate-stderr sr-rate take c0 --class usage --late 0
	assert_equal "$(jq -r '[.status, .why] | join(" ")' <<<"$output")" 'refused reserve'
	[[ $stderr == *"srq's reserve"* ]]
	jq -e '.retry_at > 0' <<<"$output"
	run -0 sr-rate show c0
	assert_equal "$(jq -c '[.srq_active, .others_cap, .classes.usage.slots]' <<<"$output")" '[true,4,4]'
}

@test "a class's max_share, and the account's pause, hold the other callers" {
	profiles 'from = default' 'accounts = *' 'max_share = 0.5' 'max_share.usage = 0.2'
	spread_backlog 1 1
	# A fifth of 10 for usage, a half for every class not named.
	run -1 --separate-stderr sr-rate take c0 --class usage --n 3 --late 0
	assert_equal "$(jq -r '[.why, .cap] | join(" ")' <<<"$output")" 'over 2'
	run -0 sr-rate take c0 --class usage --n 2 --late 0
	run -1 --separate-stderr sr-rate take c0 --class usage --late 0
	assert_equal "$(jq -r .why <<<"$output")" share
	run -0 sr-rate take c0 --class status --n 5 --late 0
	run -1 --separate-stderr sr-rate take c0 --class status --late 0
	assert_equal "$(jq -r .why <<<"$output")" share
	sr-admin pause c0 --until 1h --reason "carrier maintenance" >/dev/null
	run -1 --separate-stderr sr-rate take c0 --class billing --wait 200
	assert_equal "$(jq -r .why <<<"$output")" paused
	[[ $stderr == *"paused"*"no slot within --wait 200 ms"* ]]
}

@test "bad input: an unknown account, a bad --n, a wait exceeded, each with a record and its exit" {
	spread_backlog 1 1
	run -1 --separate-stderr sr-rate take c9
	assert_equal "$(jq -r '[.status, .why] | join(" ")' <<<"$output")" 'refused unknown_account'
	[[ $stderr == *"account 'c9' has never had a request"* ]]
	run -2 --separate-stderr sr-rate take c0 --n 0
	assert_equal "$(jq -r .status <<<"$output")" error
	[[ $stderr == *"--n: '0' is not a whole number from 1 to 1000"* ]]
	run -2 --separate-stderr sr-rate take c0 --class srq
	[[ $stderr == *"--class"* ]]
	run -2 sr-rate take
	# The pace's next slot a second away: a wait of 100 ms is not enough.
	sr-admin limits c0 qps=1 --reason test >/dev/null
	run -0 sr-rate take c0 --class usage --late 0
	run -1 --separate-stderr sr-rate take c0 --class status --late 0 --wait 100
	assert_equal "$(jq -r '[.status, .why] | join(" ")' <<<"$output")" 'refused wait'
	jq -e '.at - .retry_at > 0' <<<"$output"
	[[ $stderr == *"no slot within --wait 100 ms"* ]]
	# More than the class may ever hold in a window.
	run -1 --separate-stderr sr-rate take c0 --class usage --n 3 --late 0
	assert_equal "$(jq -r '[.why, .cap] | join(" ")' <<<"$output")" 'over 1'
	# Redis down: exit 3, and a record.
	redis_stop
	run -3 --separate-stderr sr-rate take c0
	assert_equal "$(jq -r .status <<<"$output")" error
}

@test "the script contract: a poller in another language calls rate_take itself" {
	spread_backlog 1 1
	run -0 sr-rate contract c0
	contract=$output
	keys=($(jq -r '.keys[]' <<<"$contract"))
	assert_equal "${keys[*]}" 't:carrier:{c0}:edge t:carrier:{c0}:limits t:carrier:{c0}:rate:slots'
	sr-rate script >"$T/rate_take.lua"
	assert_equal "$(sha1sum <"$T/rate_take.lua" | cut -d' ' -f1)" "$(jq -r .sha1 <<<"$contract")"
	run -0 rcli EVAL "$(cat "$T/rate_take.lua")" 3 "${keys[@]}" "$(jq -r .settings <<<"$contract")" poller 2 1000 0
	assert_line --index 0 ok
	# Its slots are the account's: sr-rate sees them.
	run -0 sr-rate show c0
	assert_equal "$(jq -c '.classes.poller.slots' <<<"$output")" 2
}

@test "--help answers: what it does, the records, the limits, exit codes" {
	run -0 sr-rate --help
	assert_output --partial 'usage: sr-rate take ACCOUNT'
	assert_output --partial 'reserve_qps'
	assert_output --partial 'max_share'
	assert_output --partial '"status":"refused"'
	assert_output --partial 'Exit: 0'
}
