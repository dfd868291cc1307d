#!/usr/bin/env bats
# breaker.bats - an account whose carrier fails is held, not its cards: calls
# to it stop once failures pass the threshold, its commands stay queued (no
# card frozen, no card alert), one alert for the account, a probe after a
# cool-down, and the drain completes once the carrier is back; other
# accounts are not slowed. An authentication failure re-authenticates once,
# then holds the account the same way.

bats_require_minimum_version 1.5.0

load ../test_helper

@test "an account failing every call for 30 s: held after the threshold, no card frozen, one alert, done after recovery" {
	export SRQ_QPS=20 SRQ_CONFIRM_DELAY_MS=200
	profiles 'from = default' 'accounts = *' 'breaker_cooldown_ms = 3000' 'breaker_cooldown_max_ms = 3000'
	gwsim_start --qps 20 --fail-account down
	stop_backlog 40 down
	stop_backlog 120 up
	start=$(date +%s%3N)
	drain 120 >"$T/finals" &
	pid=$!
	# While the account is down: the breaker opens, and says so.
	for i in $(seq 100); do
		[ "$(sr-admin breaker down | jq -r .breaker)" != closed ] && break
		sleep 0.1
	done
	run -0 sr-admin why down-39
	assert_equal "$(echo "$output" | jq -r .state)" breaker
	echo "$output" | jq -e '.why | test("account breaker (open|half-open) since")'
	run -0 sr-stat --carrier down
	echo "$output" | head -1 | jq -e '.breaker != "closed"'
	# Thirty seconds of outage, then the carrier is back.
	sleep $(( (start + 30000 - $(date +%s%3N)) / 1000 ))
	gw_set fail_account=
	back=$(date +%s%3N)
	wait "$pid"

	# Calls to the failing account stopped after the threshold: a handful
	# before the breaker opened, then only a probe each cool-down.
	opened=$(sr-admin audit --account down | jq -r 'select(.event == "breaker:opened") | .id' | head -1)
	opened=${opened%-*}
	failed=$(jq -s '[.[] | select(.carrier == "down" and .fault == "account_down")] | length' "$T/gw.log")
	[ "$failed" -le 20 ] || { echo "$failed calls to the account while it was down"; false; }
	after=$(jq -s --argjson o "$opened" --argjson b "$back" \
		'[.[] | select(.carrier == "down" and .t > $o + 1000 and .t < $b)] | length' "$T/gw.log")
	# (a probe every 3 s for 30 s)
	[ "$after" -le 11 ] || { echo "$after calls after the breaker opened"; false; }
	# No card frozen, no card alert: exactly one alert, the account's. (A
	# step of the machine's own clock during these 35 s, a virtual machine
	# paused and its clock set again, is detected and alerted as such,
	# rightly: clock_step is not this test's subject.)
	assert_equal "$(rcli ZCARD 't:carrier:{down}:frozen')" 0
	run -0 sr-admin alerts --all # (resolved since: closed)
	assert_equal "$(echo "$output" | jq -r 'select(.alert != "clock_step") | "\(.alert) \(.carrier // .card)"')" "breaker down"
	# The other account was not slowed: its 120 calls went at its pace.
	jq -s -e '[.[] | select(.carrier == "up") | .t] | (max - min) < 120 / 20 * 1000 * 1.5' "$T/gw.log"
	# After the recovery, the drain completed: every card stopped, once.
	assert_equal "$(jq -s '[.[] | select(.kind == "stop" and .applied)] | length' "$T/gw.log")" 160
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
	run gwcheck rate "$T/gw.log" 20
	assert_output ''
	# The breaker closed on a probe, and says so; the alert is resolved.
	assert_equal "$(sr-admin breaker down | jq -r .breaker)" closed
	rcli XRANGE 't:carrier:{down}:audit' - + | grep -q 'breaker:closed'
	assert_equal "$(sr-admin alerts | jq -r 'select(.open) | .alert')" ''
}

@test "a wrong token: one re-authentication, then the breaker; no card frozen; fixed and closed by hand, it drains" {
	printf 'right-token\n' >"$T/carrier.token"
	printf 'wrong-token\n' >"$T/srq.token"
	export SRQ_GATEWAY_TOKEN_FILE="$T/srq.token"
	gwsim_start --token-file "$T/carrier.token" --latency-ms 200
	stop_backlog 10 c1
	run -0 drain 6
	# Every call refused for authentication; each sent at most twice (the
	# second after reading the token again), and then no more calls.
	jq -s -e 'length > 0 and all(.[]; .http == 401)' "$T/gw.log"
	jq -s -e 'group_by(.card) | all(.[]; length <= 2)' "$T/gw.log"
	jq -s -e 'group_by(.card) | any(.[]; length == 2)' "$T/gw.log"
	assert_equal "$(sr-admin breaker c1 | jq -r .breaker)" open
	# Nothing frozen, nothing lost: the commands wait in their queue.
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:frozen')" 0
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:stop_resume')" 10
	assert_equal "$(sr-admin alerts | jq -r .alert)" breaker
	# The token file is fixed (read again when it changes); the operator
	# closes the breaker instead of waiting for the probe.
	printf 'right-token\n' >"$T/srq.token"
	run -0 sr-admin breaker c1 close --reason "token renewed"
	run -0 drain 30
	assert_equal "$(jq -s '[.[] | select(.code == "OK")] | length' "$T/gw.log")" 10
	rcli XRANGE 't:carrier:{c1}:audit' - + | grep -q 'token renewed'
}

@test "a result that says the carrier refused authentication opens the breaker with its reason, whatever its outcome" {
	gwsim_start
	stop_backlog 2 c1
	sr-claim --max 1 | sr-exec >"$T/results"
	# A result line edited by hand (sr-exec pairs auth with retry only).
	jq -c '.outcome = "fail" | .class = "auth" | .http = 401 | .error = "HTTP 401 bad token"' "$T/results" |
		sr-confirm >/dev/null || true
	assert_equal "$(rcli HGET 't:carrier:{c1}:edge' brk_why)" "HTTP 401 bad token"
	run -0 sr-admin why c1-1
	echo "$output" | jq -e '.why | test("HTTP 401 bad token")'
}

@test "the breaker by hand: opened, nothing is called and no probe goes; closed, the drain goes on" {
	gwsim_start
	stop_backlog 5 c1
	run -0 sr-admin breaker c1 open --reason "carrier incident"
	assert_equal "$(echo "$output" | jq -r .breaker)" open
	run -0 drain 3
	assert_equal "$(wc -l <"$T/gw.log")" 0
	run -0 sr-admin why c1-0
	echo "$output" | jq -e '.state == "breaker" and (.why | test("carrier incident"))'
	# Closing a closed breaker changes nothing, and is no error (it was
	# exit 1): "changed":false; a typo is still an unknown account.
	rcli SADD t:accounts c2 >/dev/null
	run -0 --separate-stderr sr-admin breaker c2 close --reason "nothing to close"
	assert_equal "$(jq -r '"\(.breaker) \(.changed)"' <<<"$output")" "closed false"
	run -1 --separate-stderr sr-admin breaker c22 close --reason "a typo"
	[[ $stderr == *"account 'c22' is unknown"* ]]
	run -0 sr-admin breaker c1 close --reason "incident over"
	assert_equal "$(jq -r '"\(.breaker) \(.changed)"' <<<"$output")" "closed true"
	run -0 drain 20
	assert_equal "$(jq -s '[.[] | select(.code == "OK")] | length' "$T/gw.log")" 5
	run -0 sr-admin audit --account c1
	assert_equal "$(echo "$output" | jq -r 'select(.event | startswith("admin:")) | "\(.event) \(.why)"' | tr '\n' ',')" \
		"admin:open carrier incident,admin:close incident over,"
}

@test "opened by hand or paused while calls are in flight: nothing is parked, the drain completes once closed" {
	export SRQ_QPS=5
	gwsim_start --qps 5
	stop_backlog 20 c1
	# --follow, not --until-empty: that ends (exit 4) as soon as all that is
	# left is held by a breaker opened by hand, with no end.
	sr-claim --follow --for 15 | sr-exec | sr-confirm >/dev/null &
	pid=$!
	for i in $(seq 100); do [ "$(wc -l <"$T/gw.log")" -ge 3 ] && break; sleep 0.05; done
	run -0 sr-admin breaker c1 open --reason "incident"
	sleep 1
	run -0 sr-admin breaker c1 close --reason "over"
	for i in $(seq 100); do [ "$(wc -l <"$T/gw.log")" -ge 8 ] && break; sleep 0.05; done
	run -0 sr-admin pause c1 --reason "maintenance"
	sleep 1
	run -0 sr-admin resume c1 --reason "done"
	wait "$pid"
	# Every card was called and stopped: none left behind its blocked gate.
	assert_equal "$(jq -s '[.[] | select(.code == "OK")] | length' "$T/gw.log")" 20
	run rcli --scan --pattern 't:carrier:*:stop_resume*'
	assert_output ''
}

@test "a secret file that disappears: no request goes out without its credentials" {
	printf 'right-token\n' >"$T/carrier.token"
	cp "$T/carrier.token" "$T/srq.token"
	export SRQ_GATEWAY_TOKEN_FILE="$T/srq.token"
	gwsim_start --token-file "$T/carrier.token"
	stop_backlog 30 c1
	sr-claim --follow --for 8 | sr-exec | sr-confirm >/dev/null &
	pid=$!
	for i in $(seq 100); do [ "$(wc -l <"$T/gw.log")" -ge 5 ] && break; sleep 0.05; done
	mv "$T/srq.token" "$T/srq.token.away"
	sleep 2
	mv "$T/srq.token.away" "$T/srq.token"
	wait "$pid" || true
	# The carrier never saw a request without the token (no 401)...
	assert_equal "$(jq -s '[.[] | select(.http == 401)] | length' "$T/gw.log")" 0
	# ...and once the file was back, the calls went on.
	run -0 drain 30
	assert_equal "$(jq -s '[.[] | select(.code == "OK")] | length' "$T/gw.log")" 30
}
