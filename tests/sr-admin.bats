#!/usr/bin/env bats
# sr-admin.bats - why a card is (not) moving, alerts per cause, retry, audit.

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	srq_setup
}

teardown() {
	srq_teardown
}

req() { # req CARD PKG_EXPIRES_AT [STATUS [CARRIER]]
	printf '{"card":"%s","carrier":"%s","scene":"polling","facts":{"pkg_expires_at":%d,"status":"%s"}}\n' \
		"$1" "${4:-c1}" "$2" "${3:-active}" | sr-enqueue >/dev/null
}

why_state() {
	sr-admin why "$1" | jq -r .state
}

@test "why: each waiting state, set up for real through the pipeline and the gateway" {
	gwsim_start
	# The judgment says nothing is to be done.
	req N1 "$FUTURE"
	assert_equal "$(why_state N1)" no_command
	sr-admin why N1 | jq -e '.why | test("judgment says entitled")'
	# Claimed: a pipeline holds its lease.
	req C1 "$PAST"
	assert_equal "$(why_state C1)" due
	sr-claim >/dev/null
	assert_equal "$(why_state C1)" claimed
	sr-admin drop C1 >/dev/null
	# Interval: called a moment ago, and now wanted the other way.
	req I1 "$PAST"
	drain 10 >/dev/null
	req I1 "$FUTURE" stopped
	assert_equal "$(why_state I1)" interval
	# Superseded: the facts changed under a queued command before its call.
	req S1 "$PAST"
	printf '{"card":"S1","carrier":"c1","pkg_expires_at":%d}\n' "$FUTURE" | sr-asset >/dev/null
	sr-claim --carrier c1 | sr-exec | sr-confirm >/dev/null
	assert_equal "$(why_state S1)" superseded
	# Rate: the account's last second is used up.
	sr-admin limits c2 qps=1 >/dev/null
	export SRQ_RATE_WINDOW_MS=5000
	req R1 "$PAST" active c2
	drain 10 >/dev/null
	req R2 "$PAST" active c2
	assert_equal "$(why_state R2)" rate
	unset SRQ_RATE_WINDOW_MS
	# Backoff: the carrier refused (429), the command waits to retry.
	gwsim_start --fault-429 1 --retry-after 0
	req B1 "$PAST" active c3
	sr-claim --carrier c3 | sr-exec | sr-confirm >/dev/null
	assert_equal "$(why_state B1)" backoff
	# Confirming: a 5xx after the carrier applied; a status query will decide.
	gwsim_start --fault-5xx-after 1
	export SRQ_CONFIRM_DELAY_MS=60000
	req U1 "$PAST" active c4
	sr-claim --carrier c4 | sr-exec | sr-confirm >/dev/null
	assert_equal "$(why_state U1)" confirming
	# Frozen: a permanent rejection.
	gwsim_start --fault-reject 1
	req F1 "$PAST" active c5
	sr-claim --carrier c5 | sr-exec | sr-confirm >/dev/null
	assert_equal "$(why_state F1)" frozen
	sr-admin why F1 | jq -e '.why | test("sr-admin retry F1")'
}

@test "a gateway failing one account: one alert per cause, frozen at the threshold, retry brings them back" {
	export SRQ_ALERT_AFTER=2 SRQ_FREEZE_AFTER=3 SRQ_CONFIRM_DELAY_MS=100
	gwsim_start --fail-account c1
	for i in 1 2 3; do req "A$i" "$PAST" active c1; req "G$i" "$PAST" active c2; done
	run -0 drain 30
	# The healthy account is done; the failing one is frozen, card by card.
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:frozen' 0 -1 | sort | tr '\n' ' ')" "A1 A2 A3 "
	assert_equal "$(jq -r 'select(.code == "OK") | .card' "$T/gw.log" | sort | tr '\n' ' ')" "G1 G2 G3 "
	# Exactly one alert per cause: failures and frozen, per card; none for c2.
	run -0 sr-admin alerts
	assert_equal "$(echo "$output" | jq -r '"\(.alert):\(.card)"' | sort | tr '\n' ' ')" \
		"failures:A1 failures:A2 failures:A3 frozen:A1 frozen:A2 frozen:A3 "
	assert_equal "$(echo "$output" | jq -r 'select(.open) | .card' | wc -l)" 6
	# Draining again does not raise them again.
	run -0 drain 5
	assert_equal "$(sr-admin alerts | wc -l)" 6
	# The gateway is fixed; the operator retries every frozen card of c1.
	gwsim_start
	rcli ZRANGE 't:carrier:{c1}:frozen' 0 -1 | sr-admin retry - --reason "gateway fixed" >"$T/retried"
	assert_equal "$(jq -r .done "$T/retried" | sort -u)" retry
	run -0 drain 30
	assert_equal "$(jq -r 'select(.code == "OK") | .card' "$T/gw.log" | sort | tr '\n' ' ')" "A1 A2 A3 G1 G2 G3 "
	# Resolved: nothing open any more, nothing frozen.
	assert_equal "$(sr-admin alerts | jq -r 'select(.open) | .card')" ''
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:frozen')" 0
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "audit: every transition and every admin mutation, with versions before and after, who and why" {
	gwsim_start
	export USER=oncall
	req D1 "$PAST"
	sr-admin freeze D1 --reason "hold on" >/dev/null
	sr-admin retry D1 --reason "go" >/dev/null
	drain 10 >/dev/null
	req D1 "$FUTURE" stopped
	sr-admin drop D1 --reason "not now" >/dev/null
	run -0 sr-admin audit D1
	assert_equal "$(echo "$output" | jq -r '"\(.event) \(.ver_before)>\(.ver_after)"' | tr '\n' ',')" \
		"queued 0>1,admin:freeze 1>1,admin:retry 1>1,call:ok 1>1,queued 1>2,admin:drop 2>3,"
	assert_equal "$(echo "$output" | jq -r 'select(.event | startswith("admin:")) | "\(.who) \(.why)"' | tr '\n' ',')" \
		"oncall hold on,oncall go,oncall not now,"
	run -0 sr-admin audit --account c1
	assert_equal "$(echo "$output" | wc -l)" 6
	# Limits and the switch are audited too.
	sr-admin limits c1 qps=7 --reason "carrier asked" >/dev/null
	run rcli XRANGE t:admin_audit - +
	assert_line "carrier asked"
	run -2 sr-admin bogus
	run -1 sr-admin why nobody-knows-me
}

@test "a card flipped three times in an hour is flapping: counted, and alerted once" {
	gwsim_start
	now=$(date +%s)
	flip() { # flip PKG_EXPIRES_AT: a request, then its execution
		printf '{"card":"FL","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' "$1" | sr-enqueue >/dev/null
		drain 10 >/dev/null
	}
	printf '{"card":"FL","carrier":"c1","pkg_expires_at":%d,"status":"active"}\n' "$now" | sr-asset >/dev/null
	flip $((now - 1))      # stop
	flip $((now + 86400))  # resume: 1 change
	flip $((now - 1))      # stop: 2
	flip $((now + 86400))  # resume: 3
	assert_equal "$(jq -r .kind "$T/gw.log" | tr '\n' ' ')" "stop resume stop resume "
	run -0 sr-stat --carrier c1
	jq -e '.flapping == 1' <<<"$(echo "$output" | head -1)"
	flip $((now - 1))      # and once more: still one alert
	assert_equal "$(sr-admin alerts | jq -r 'select(.alert == "flapping") | .card')" FL
}
