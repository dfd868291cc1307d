#!/usr/bin/env bats
# order_poll.bats - order polling: a carrier that accepts a change gives it
# an order id (txn) and answers how the order stands (poll.*). srq asks
# about the order while it has one, believes an answer only about that
# order and card, and falls back to the card's status query when the
# order tells nothing. Checked at the carrier (sr-gwsim's log: "order"
# lines are the polls, "status" lines the card's queries).

bats_require_minimum_version 1.5.0

load ../test_helper

# poll_profile [LINE...]: the default contract, its orders polled at
# sr-gwsim's GET /v1/orders/{txn}, with LINEs added.
# (A LINE's key replaces the line of that key.)
poll_profile() {
	local lines=('from = default' 'accounts = *' 'poll_ms = 300' 'settle_ms = 20000'
		'poll.method = GET' 'poll.url = {base}/v1/orders/{txn}?carrier={carrier}'
		'poll.state = order' 'poll.done = done' 'poll.failed = failed' 'poll.pending = pending'
		'poll.card = card' 'poll.txn = txn') kept=() l a
	for l in "${lines[@]}"; do
		for a in "$@"; do [ "${a%% =*}" = "${l%% =*}" ] && continue 2; done
		kept+=("$l")
	done
	profiles "${kept[@]}" "$@"
}

# cards N: cards C0.. active at the carrier.
cards() {
	for i in $(seq 0 $(($1 - 1))); do printf '{"card":"C%d","status":"active"}\n' "$i"; done >"$T/gw-cards.jsonl"
}

# What every drain here must leave: every card stopped at the carrier, none
# frozen, no command left.
assert_all_stopped() {
	assert_equal "$(gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" | jq -r .status | sort -u)" stopped
	run -0 jq -r 'select(.state == "frozen") | .card' "$T/finals.jsonl"
	assert_output ''
	assert_equal "$(sr-stat | jq -s 'map(select(.carrier == "*"))[0] | .queued + .confirming + .frozen')" 0
}

@test "an accepted stop is settled by its order: polled while pending, done when it lands; no status query, one stop a card" {
	poll_profile
	cards 6
	gwsim_start --cards "$T/gw-cards.jsonl" --async-ms 1500
	stop_requests 6 1 | sr-enqueue >/dev/null
	drain_until_empty
	assert_all_stopped
	assert_equal "$(jq -s '[.[] | select(.kind == "stop")] | length' "$T/gw.log")" 6
	assert_equal "$(jq -s '[.[] | select(.kind == "status")] | length' "$T/gw.log")" 0
	# Each card's order was asked about by its own txn, pending first, done last.
	run -0 jq -s -r 'group_by(.card)[] | [.[] | select(.kind == "order") | .code] | "\(first) \(last)"' "$T/gw.log"
	assert_equal "$(sort -u <<<"$output")" "pending done"
	run -0 jq -s -r '[.[] | select(.kind == "stop")] | map({(.card): .txn}) | add as $t
		| [.[] | select(.kind == "order" and $t[.card] != .txn)] | length' "$T/gw.log"
	assert_output 0
	# The polls' results say so: the task carried the txn, the result the order's word.
	run -0 jq -r 'select(.task == "query") | "\(.txn | test("^T[0-9]+$")) \(.order)"' "$T/results.jsonl"
	assert_equal "$(sort -u <<<"$output")" $'true done\ntrue pending'
	# The card is known stopped, by srq: the poll proved it.
	assert_equal "$(sr-admin show C0 | jq -r '.facts.status + " " + .facts.stopped_by')" "stopped auto"
	run -0 sr-admin alerts
	assert_output ''
}

@test "an order that failed did not land: the stop is called again after the card's interval, and settled by its new order" {
	poll_profile
	cards 3
	gwsim_start --cards "$T/gw-cards.jsonl" --async-ms 500 --fault-order-failed 1
	stop_requests 3 1 | sr-enqueue >/dev/null
	# Every first order fails; the second stops are accepted and land.
	sr-claim --until-empty --for 4 | sr-exec | tee -a "$T/results.jsonl" | sr-confirm >>"$T/finals.jsonl" || true
	run -0 jq -r 'select(.task == "query" and .order == "failed") | .card' "$T/results.jsonl"
	assert_equal "$(sort -u <<<"$output" | wc -l)" 3
	# Not done, not frozen: each card is due again, its stop after the interval.
	run -0 jq -r 'select(.state == "done" or .state == "frozen") | .card' "$T/finals.jsonl"
	assert_output ''
	gw_set order_failed=0
	drain_until_empty
	assert_all_stopped
	# Each card: stops a card interval apart (the carrier's 1000 ms), every
	# order failed but the last, which was done; a stop went after each
	# failed order, none while one was pending.
	run -0 jq -s -r 'group_by(.card)[] | [.[] | select(.kind == "stop")] as $s
		| [range(1; $s | length) as $i | $s[$i].t - $s[$i-1].t >= 1000] | all' "$T/gw.log"
	assert_equal "$(sort -u <<<"$output")" true
	run -0 jq -s -r 'group_by(.card)[] | [.[] | select(.kind == "stop" or (.kind == "order" and .code != "pending"))
		| if .kind == "stop" then "S" elif .code == "failed" then "F" else "D" end] | join("")' "$T/gw.log"
	for seq in "${lines[@]}"; do [[ $seq =~ ^(SF)+SD$ ]] || fail "stops and orders: $seq"; done
	run -0 sr-admin alerts
	assert_output ''
}

@test "a poll answered about another order is not believed: class mismatch, the order no longer asked, the card's status settles it" {
	poll_profile
	cards 4
	gwsim_start --cards "$T/gw-cards.jsonl" --async-ms 1000 --fault-other-order 1
	stop_requests 4 1 | sr-enqueue >/dev/null
	drain_until_empty
	assert_all_stopped
	# Every poll was answered about another order; none settled anything.
	run -0 jq -r 'select(.task == "query" and .order != null) | "\(.outcome) \(.class) \(.order)"' "$T/results.jsonl"
	assert_equal "$(sort -u <<<"$output")" "unknown mismatch "
	run -0 jq -r 'select(.task == "query" and .order != null) | .error' "$T/results.jsonl"
	assert_output --partial 'the answer is about order T'
	# One poll a card, then its status queries: each card asked once at least.
	run -0 jq -s -r 'group_by(.card)[] | "\([.[] | select(.kind == "order")] | length) \([.[] | select(.kind == "status")] | length > 0)"' "$T/gw.log"
	assert_equal "$(sort -u <<<"$output")" "1 true"
	assert_equal "$(jq -s '[.[] | select(.kind == "stop")] | length' "$T/gw.log")" 4
	run -0 bash -c "sr-admin alerts | jq -r .alert | sort -u"
	assert_output carrier_mismatch
}

@test "a poll the carrier refuses (no such order) falls back to the card's status query: nothing frozen, no failure" {
	# The profile asks at a path the carrier does not know: 404, fail.
	poll_profile 'poll.url = {base}/v1/nowhere/{txn}?carrier={carrier}'
	cards 3
	gwsim_start --cards "$T/gw-cards.jsonl" --async-ms 800
	stop_requests 3 1 | sr-enqueue >/dev/null
	drain_until_empty
	assert_all_stopped
	run -0 jq -r 'select(.task == "query" and .order != null) | .outcome' "$T/results.jsonl"
	assert_equal "$(sort -u <<<"$output")" fail
	assert_equal "$(jq -s '[.[] | select(.kind == "status")] | length >= 3' "$T/gw.log")" true
	run -0 sr-admin alerts
	assert_output ''
}

@test "a carrier without order polling: the txn rides on the query task, and the card's status is asked" {
	profiles 'from = default' 'accounts = *' 'poll_ms = 300' 'settle_ms = 20000'
	cards 2
	gwsim_start --cards "$T/gw-cards.jsonl" --async-ms 600
	stop_requests 2 1 | sr-enqueue >/dev/null
	drain_until_empty
	assert_all_stopped
	assert_equal "$(jq -s '[.[] | select(.kind == "order")] | length' "$T/gw.log")" 0
	run -0 jq -r 'select(.task == "query") | "\(.txn | test("^T")) \(has("order"))"' "$T/results.jsonl"
	assert_equal "$(sort -u <<<"$output")" "true false"
}

@test "poll keys: shown resolved; a poll that names no {txn}, {txn} outside a poll, or a code in two lists does not parse" {
	poll_profile
	run -0 sr-admin profile c1
	assert_equal "$(jq -c .orders <<<"$output")" '{"state":"order","done":"done","failed":"failed","pending":"pending"}'
	assert_equal "$(jq -r .check.requests.poll <<<"$output")" ok
	poll_profile 'poll.url = {base}/v1/orders/x?carrier={carrier}'
	run -2 sr-admin profile c1
	assert_output --partial 'names {txn}'
	poll_profile 'stop.url = {base}/v1/cards/{card}/stop?t={txn}'
	run -2 sr-admin profile c1
	assert_output --partial '{txn} is only known to a poll'
	poll_profile 'poll.failed = done,failed'
	run -2 sr-admin profile c1
	assert_output --partial 'share a code'
	profiles 'from = default' 'accounts = *' 'poll.url = {base}/v1/orders/{txn}' 'poll.method = GET'
	run -2 sr-admin profile c1
	assert_output --partial 'poll needs poll.state'
}

@test "a forged task's txn with a control character is refused; a result's order must be a poll's word" {
	run -1 sr-exec <<<'{"task":"query","card":"K1","carrier":"c1","action":"stop","ver":1,"token":"1-x","txn":"T1\nX"}'
	assert_output --partial 'control character'
	run -1 sr-confirm <<<'{"task":"query","card":"K1","carrier":"c1","action":"stop","ver":1,"token":"1-x","outcome":"ok","order":"landed"}'
	assert_output --partial 'bad \"order\"'
}
