#!/usr/bin/env bats
# integrity.bats - a result changes state only if it is the live claim's own
# call or query that went through the gate; forged, foreign, replayed and
# stale results and tasks change nothing: not the queue, not the card's
# facts, not the account's rate or breaker, not the carrier (its log).

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	gwsim_start
	K='t:carrier:{c1}:card:X1'
}

# snapshot: every key srq keeps for the account and the card, as it stands.
snapshot() {
	{
		rcli HGETALL "$K"
		rcli HGETALL t:card:X1:facts
		rcli HGETALL 't:carrier:{c1}:edge'
		for q in stop_resume stop_resume:high stop_resume:bulk sr_running frozen; do
			rcli ZRANGE "t:carrier:{c1}:$q" 0 -1 WITHSCORES
		done
		rcli SMEMBERS 't:carrier:{c1}:confirming'
		rcli HGETALL 't:carrier:{c1}:alerts_open'
	} | grep -v -e '^lease_until$' -e '^[0-9]\{13\}$'
}

line() { # line TASK TOKEN OUTCOME [EXTRA-JSON]
	printf '{"task":"%s","card":"X1","carrier":"c1","action":"stop","ver":1,"token":"%s","outcome":"%s"%s}\n' \
		"$1" "$2" "$3" "${4:-}"
}

@test "a result with a forged token finishes nothing" {
	enqueue X1
	before=$(snapshot)
	run -0 sr-confirm <<<"$(line call forged ok)"
	assert_output --partial '"state":"stale"'
	assert_equal "$(snapshot)" "$before"
	assert_equal "$(rcli HGET t:card:X1:facts st)" active
	assert_equal "$(wc -l <"$T/gw.log")" 0
}

# forged CARD...: results nobody's call made for CARD, each outcome that
# would release a claim, count for the breaker or finish the command, under
# tokens guessed as the version and a small number (what the claim's tokens
# were: 1-1, 1-2, ...) and as the version and 16 random hex digits.
forged() {
	local card tok
	for card in "$@"; do
		for tok in $(seq -f '1-%g' 1 24) $(for _ in 1 2 3; do echo "1-$(openssl rand -hex 8)"; done); do
			for out in '"retry","class":"auth","http":401' '"retry","class":"not_sent"' \
				'"unknown","http":500' '"ok","http":200' '"fail","http":400'; do
				printf '{"task":"call","card":"%s","carrier":"c1","action":"stop","ver":1,"token":"%s","outcome":%s}\n' \
					"$card" "$tok" "$out"
			done
			printf '{"task":"query","card":"%s","carrier":"c1","action":"stop","ver":1,"token":"%s","outcome":"ok","observed":"stopped"}\n' \
				"$card" "$tok"
		done
	done
}

@test "results forged with guessed tokens for cards with live claims change nothing; the genuine ones still apply" {
	gwsim_start --latency-ms 2000
	for i in 1 2 3 4 5 6; do enqueue "G$i"; done
	sr-claim >"$T/tasks"
	assert_equal "$(wc -l <"$T/tasks")" 6
	# G1..G3 are at the carrier (their gate passed), G4..G6 claimed and waiting.
	head -3 "$T/tasks" | sr-exec >"$T/r1" &
	pid=$!
	for i in $(seq 100); do
		[ -n "$(rcli HGET 't:carrier:{c1}:card:G3' called)" ] && break
		sleep 0.05
	done
	for i in 1 2 3; do [ -n "$(rcli HGET "t:carrier:{c1}:card:G$i" called)" ]; done
	running=$(rcli ZRANGE 't:carrier:{c1}:sr_running' 0 -1 | sort)
	claims=$(for i in 1 2 3 4 5 6; do rcli HGET "t:carrier:{c1}:card:G$i" claim; done)
	assert_equal "$running" "$(jq -r .token "$T/tasks" | sort)"
	assert_equal "$claims" "$(jq -r .token "$T/tasks")"
	run -0 sr-confirm < <(forged G1 G2 G3 G4 G5 G6)
	assert_equal "$(jq -r .state <<<"$output" | sort | uniq -c | awk '{print $2 "=" $1}')" "stale=$((6 * 27 * 6))"
	# Every claim is still live, in the account's running set and on its card.
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:sr_running' 0 -1 | sort)" "$running"
	assert_equal "$(for i in 1 2 3 4 5 6; do rcli HGET "t:carrier:{c1}:card:G$i" claim; done)" "$claims"
	# The breaker counted nothing and stays closed; no alert.
	assert_equal "$(sr-admin breaker c1 | jq -r .breaker)" closed
	assert_equal "$(rcli HMGET 't:carrier:{c1}:edge' win_n win_fail | tr -d '\n')" ""
	assert_equal "$(rcli XLEN 't:carrier:{c1}:alerts')" 0
	# The genuine results still apply: every card stopped, once.
	wait "$pid"
	tail -3 "$T/tasks" | sr-exec >>"$T/r1"
	run -0 sr-confirm <"$T/r1"
	assert_equal "$(jq -r .state <<<"$output" | paste -sd' ')" "done done done done done done"
	assert_equal "$(jq -r 'select(.kind == "stop") | .card' "$T/gw.log" | sort | paste -sd' ')" "G1 G2 G3 G4 G5 G6"
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:sr_running')" 0
	# A token is its version and 16 hex digits: nothing to count up to.
	assert_equal "$(jq -r .token "$T/tasks" | grep -cE '^1-[0-9a-f]{16}$')" 6
}

@test "the live claim's token, for a task that never went through the gate, finishes nothing" {
	enqueue X1
	sr-claim >"$T/task"
	token=$(jq -r .token "$T/task")
	before=$(snapshot)
	run -0 sr-confirm <<<"$(line call "$token" ok)"
	assert_output --partial '"state":"stale"'
	run -0 sr-confirm <<<"$(line query "$token" ok ',"observed":"stopped"')"
	assert_output --partial '"state":"stale"'
	run -0 sr-confirm <<<"$(line call "$token" superseded)"
	run -0 sr-confirm <<<"$(line call "$token" blocked ',"gate":"paused"')"
	assert_equal "$(snapshot)" "$before"
	assert_equal "$(rcli HGET t:card:X1:facts st)" active
	# The real task still goes through and finishes it, once.
	run -0 bash -c "sr-exec <'$T/task' | sr-confirm"
	assert_output --partial '"state":"done"'
	assert_equal "$(jq -r .kind "$T/gw.log")" stop
}

@test "a task whose action was edited neither calls nor finishes the command; the real task still does" {
	enqueue X1
	sr-claim >"$T/task"
	before=$(snapshot)
	# A stop turned into a resume: judged against the facts, a resume of a
	# card with an expired package is not wanted, and would finish the stop.
	jq -c '.action = "resume"' "$T/task" | sr-exec >"$T/r"
	assert_equal "$(jq -r '"\(.outcome) \(.gate)"' "$T/r")" "blocked lost"
	run -0 sr-confirm <"$T/r"
	assert_equal "$(jq -r .state <<<"$output")" stale
	assert_equal "$(snapshot)" "$before"
	assert_equal "$(jq -s length "$T/gw.log")" 0
	run -0 bash -c "sr-exec <'$T/task' | sr-confirm"
	assert_equal "$(jq -r .state <<<"$output")" done
	assert_equal "$(jq -r .kind "$T/gw.log")" stop
}

@test "a replayed task does not call the carrier twice" {
	enqueue X1
	sr-claim >"$T/task"
	sr-exec <"$T/task" >"$T/r1"
	sleep 1.5 # past the card's interval (1.2 s), as in the replay seen
	sr-exec <"$T/task" >"$T/r2"
	sr-exec <"$T/task" >"$T/r3"
	assert_equal "$(jq -r .outcome "$T/r1")" ok
	assert_equal "$(jq -r '"\(.outcome) \(.gate)"' "$T/r2" "$T/r3" | sort -u)" "blocked replayed"
	assert_equal "$(wc -l <"$T/gw.log")" 1
	run -0 sr-confirm <"$T/r1"
	assert_output --partial '"state":"done"'
}

@test "replayed results change nothing: not the queue, the facts, the account's rate or breaker" {
	for i in 1 2 3 4 5 6; do enqueue "R$i"; done
	gwsim_start --fault-429 0.5 --seed 2
	sr-claim | sr-exec >"$T/results"
	sr-confirm <"$T/results" >/dev/null
	jq -e -s 'any(.[]; .class == "throttled")' "$T/results"
	edge=$(rcli HGETALL 't:carrier:{c1}:edge' | grep -v -e '^tat$' -e '^[0-9.]*$' | sort | tr '\n' ' ')
	audit=$(rcli XLEN 't:carrier:{c1}:audit')
	# The same results, three more times (the README's tee, run again).
	for i in 1 2 3; do
		run -0 sr-confirm <"$T/results"
		assert_equal "$(echo "$output" | jq -r .state | sort -u)" stale
	done
	assert_equal "$(rcli HGETALL 't:carrier:{c1}:edge' | grep -v -e '^tat$' -e '^[0-9.]*$' | sort | tr '\n' ' ')" "$edge"
	assert_equal "$(rcli XLEN 't:carrier:{c1}:audit')" "$audit"
	assert_equal "$(sr-admin breaker c1 | jq -r .breaker)" closed
	# Made-up failures for cards nobody claimed cannot open the breaker.
	for i in 1 2 3 4 5 6 7 8; do
		printf '{"task":"call","card":"N%d","carrier":"c1","action":"stop","ver":1,"token":"1-%d","outcome":"unknown","http":500}\n' "$i" "$i"
	done | sr-confirm >/dev/null
	assert_equal "$(sr-admin breaker c1 | jq -r .breaker)" closed
}

@test "a result repeated within one batch is applied once" {
	for i in 1 2 3 4; do enqueue "R$i"; done
	sr-claim | sr-exec >"$T/results"
	assert_equal "$(jq -r .outcome "$T/results" | sort -u)" ok
	audit=$(rcli XLEN 't:carrier:{c1}:audit')
	# Each line twice in a row, all in one input: one script call applies
	# them, and the copy must see what the first one did.
	run -0 sr-confirm < <(sed p "$T/results")
	assert_equal "$(echo "$output" | jq -r .state | paste -sd' ')" \
		"done stale done stale done stale done stale"
	assert_equal "$(rcli XLEN 't:carrier:{c1}:audit')" $((audit + 4))
	assert_equal "$(sr-admin show c1 R1 | jq -r .ver)" 1
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:sr_running')" 0
}

@test "a stale result does not rewrite the card's facts" {
	enqueue X1
	sr-claim | sr-exec >"$T/v1" # version 1 stopped the card...
	assert_equal "$(jq -r .outcome "$T/v1")" ok
	sr-confirm <"$T/v1" >/dev/null
	assert_equal "$(rcli HGET t:card:X1:facts st)" stopped
	# ...the customer renewed (v2 resumes it, after the interval)...
	enqueue X1 order "$FUTURE"
	run -0 drain 10
	assert_equal "$(rcli HGET t:card:X1:facts st)" active
	# ...and an old v1 result replayed now must not say "stopped" again: the
	# next expiry would be judged a no-op and the card never stopped.
	run -0 sr-confirm <"$T/v1"
	assert_output --partial '"state":"stale"'
	assert_equal "$(rcli HGET t:card:X1:facts st)" active
	enqueue X1
	assert_equal "$(sr-admin show X1 | jq -r .command.action)" stop
}
