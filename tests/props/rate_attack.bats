#!/usr/bin/env bats
# rate_attack.bats - the account's rate and login under attack: a carrier
# that refuses most calls for rate, a token fetch refused, unreachable or
# hanging, and two pipelines draining one account at once. Every check is on
# outcomes: the carrier's own log (no second over the account's rate, no card
# changed twice within its interval), Redis (nothing lost, frozen or counted
# as failed for the account's rate or login alone), and the tools' lines and
# exit codes.

bats_require_minimum_version 1.5.0

load ../test_helper

teardown() {
	[ -f "$T/hang.pid" ] && kill "$(cat "$T/hang.pid")" 2>/dev/null
	srq_teardown
}

# converged N QPS: N cards stopped, each by one applied change, with no
# interval and no rate violation at the carrier, nothing left queued.
converged() {
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
	run gwcheck rate "$T/gw.log" "$2"
	assert_output ''
	assert_equal "$(jq -s '[.[] | select(.applied and .kind == "stop")] | length' "$T/gw.log")" "$1"
	assert_equal "$(jq -s '[.[] | select(.applied and .kind == "stop") | .card] | unique | length' "$T/gw.log")" "$1"
	assert_equal "$(sr-stat | jq -s 'map(select(.carrier == "*"))[0] | .queued + .confirming + .frozen')" 0
}

# no_card_failed: no card's command counts a failure, and no card alert.
no_card_failed() {
	local k
	for k in $(rcli --scan --pattern "$SRQ_PREFIX:carrier:*:card:*"); do
		assert_equal "$k: $(rcli HGET "$k" fails)" "$k: "
	done
	assert_equal "$(sr-admin alerts | jq -r 'select(.card != "") | .alert')" ''
}

# onelink_setup PASSWORD_FILE_CONTENT: the OneLink example for cmcc-1, its
# password file holding what is given; the carrier wants $T/pw.
onelink_setup() {
	printf 'pw-s3cret-%s\n' "$RANDOM" >"$T/pw"
	example_profile onelink "$@"
}

# no_secret WORD: WORD in no output, no Redis value, no log.
no_secret() {
	local k
	! grep -r -F -q "$1" "$T"/results "$T"/finals "$T"/*.err 2>/dev/null
	for k in $(rcli --scan); do
		! rcli DUMP "$k" | grep -a -F -q "$1"
	done
}

@test "a 429 storm: the rate at the carrier holds, srq slows down, and no throttled card fails, alerts or freezes" {
	export SRQ_QPS=10
	# Three calls in four refused for rate, whatever the rate.
	gwsim_start --qps 10 --fault-429 0.75 --retry-after 1 --seed 5
	stop_backlog 8 c0
	run -0 drain 60
	jq -s -e '[.[] | select(.fault == "429")] | length > 8' "$T/gw.log"
	rcli XRANGE "$SRQ_PREFIX:carrier:{c0}:audit" - + | grep -q 'rate:lowered'
	converged 8 10
	no_card_failed
	assert_equal "$(sr-stat | jq -r 'select(.carrier == "c0") | .breaker')" closed
}

@test "a token fetch refused (wrong password): the breaker opens with an alert, the cards go back to the queue unharmed" {
	onelink_setup 'breaker_cooldown_ms = 1000'
	printf 'wrong-s3cret\n' >"$T/secrets/cmcc-1.password"
	gwsim_start --profile onelink --password-file "$T/pw" --qps 5
	stop_backlog 6 cmcc-1
	sr-claim --until-empty --for 3 | sr-exec >"$T/results" 2>"$T/exec.err"
	# Nothing called: the login was refused, and each task says so.
	assert_equal "$(jq -s '[.[] | select(.kind != "token")] | length' "$T/gw.log")" 0
	jq -s -e 'length > 0 and all(.[]; .outcome == "retry" and .class == "auth"
	  and (.error | test("token fetch refused")))' "$T/results"
	# Each task's claim held until sr-confirm gives it back.
	assert_equal "$(rcli ZCARD "$SRQ_PREFIX:carrier:{cmcc-1}:sr_running")" "$(jq -s length "$T/results")"
	run -0 --separate-stderr sr-confirm <"$T/results"
	echo "$output" >"$T/finals"
	# Each one requeued, its claim given back: not "stale", not left to its
	# lease.
	jq -s -e 'length > 0 and all(.[]; .state == "requeued")' "$T/finals"
	assert_equal "$(rcli ZCARD "$SRQ_PREFIX:carrier:{cmcc-1}:sr_running")" 0
	# The account's breaker is open, with one alert; no card counts it.
	assert_equal "$(sr-stat | jq -r 'select(.carrier == "cmcc-1") | .breaker')" open
	assert_equal "$(sr-admin alerts | jq -r 'select(.open) | .alert')" breaker
	no_card_failed
	no_secret wrong-s3cret
	# Its cool-down over, the login still refused: that is the probe's
	# answer, and the breaker opens again (not half-open claim after claim).
	sleep 1.2
	sr-claim --until-empty --for 1 | sr-exec 2>>"$T/exec.err" | sr-confirm >>"$T/finals"
	rcli XRANGE "$SRQ_PREFIX:carrier:{cmcc-1}:audit" - + | grep -q 'breaker:reopened'
	assert_equal "$(sr-stat | jq -r 'select(.carrier == "cmcc-1") | .breaker')" open
	no_card_failed
	# The password put right: the probe logs in, and the drain converges.
	cp "$T/pw" "$T/secrets/cmcc-1.password"
	run -0 drain 30
	converged 6 5
	no_secret "$(cat "$T/pw")"
}

# fetch_unreached JQ_COUNT_TEST: cmcc-1's backlog drained while its token
# fetch cannot reach the carrier: sr-exec exits 3 naming the account, every
# task (JQ_COUNT_TEST on their number) is retry/not_sent, sr-confirm requeues
# them all, no claim is left held, and nothing reached the carrier.
fetch_unreached() {
	run -3 --separate-stderr sh -c 'sr-claim --until-empty --for 1 | sr-exec'
	echo "$output" >"$T/results"
	[[ $stderr == *"account cmcc-1: its gateway is unavailable"* ]]
	jq -s -e "$1"' and all(.[]; .outcome == "retry" and .class == "not_sent")' "$T/results"
	# (each task's claim held until sr-confirm gives it back)
	assert_equal "$(rcli ZCARD "$SRQ_PREFIX:carrier:{cmcc-1}:sr_running")" "$(jq -s length "$T/results")"
	run -0 sr-confirm <"$T/results"
	echo "$output" | jq -s -e 'all(.[]; .state == "requeued")'
	assert_equal "$(rcli ZCARD "$SRQ_PREFIX:carrier:{cmcc-1}:sr_running")" 0
	assert_equal "$(jq -s 'length' "$T/gw.log")" 0
}

@test "a token endpoint that cannot be reached: sr-exec exits 3 naming the account, its cards requeued" {
	onelink_setup
	cp "$T/pw" "$T/secrets/cmcc-1.password"
	sed -i 's|^token.url = {base}|token.url = http://127.0.0.1:1/v5/ec|' "$T/profiles/onelink.profile"
	gwsim_start --profile onelink --password-file "$T/pw" --qps 5
	stop_backlog 3 cmcc-1
	fetch_unreached 'length > 0'
}

@test "a token fetch that hangs: it times out, nothing is called, the cards go back to the queue" {
	onelink_setup
	cp "$T/pw" "$T/secrets/cmcc-1.password"
	# A server that takes connections and never answers.
	python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(50)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
held = []
while True:
    held.append(s.accept()[0])
' "$T/hang.port" &
	echo $! >"$T/hang.pid"
	for i in $(seq 100); do [ -s "$T/hang.port" ] && break; sleep 0.05; done
	sed -i "s|^token.url = {base}|token.url = http://127.0.0.1:$(cat "$T/hang.port")/v5/ec|" "$T/profiles/onelink.profile"
	gwsim_start --profile onelink --password-file "$T/pw" --qps 5
	stop_backlog 3 cmcc-1
	export SRQ_LEASE_MS=10000
	fetch_unreached 'length == 3'
}

@test "two pipelines draining one account at once (two locks by mistake): its rate holds, no card is changed twice" {
	export SRQ_QPS=10
	gwsim_start --qps 10 --conn-delay-ms 40 --jitter-ms 15 --fault-429 0.3 --fault-5xx-after 0.1 \
		--latency-ms 300 --seed 4
	stop_backlog 40 c0
	drain 40 >"$T/f1" &
	p1=$!
	sr-claim --until-empty --for 40 | sr-exec --concurrency 4 | sr-confirm >"$T/f2" &
	p2=$!
	wait "$p1" "$p2"
	# Both pipelines called.
	[ -s "$T/f1" ] && [ -s "$T/f2" ]
	converged 40 10
	no_card_failed
}
