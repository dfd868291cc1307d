#!/usr/bin/env bats
# sr-claim.bats - the dispatcher: priority, leases, limits, accounts.

bats_require_minimum_version 1.5.0

load ../test_helper

# enqueue_cards ACCOUNT SCENE FIRST LAST: requests for cards KFIRST..KLAST
# (K001 ..), queued.
enqueue_cards() {
	local i
	for i in $(seq -f 'K%03g' "$3" "$4"); do
		request "$i" "$2" "$PAST" active "$1"
	done | sr-enqueue >/dev/null
}

@test "paying users first, bulk work last but never starved" {
	# (a rate at which ten in flight leave the rooms kept for urgent work)
	export SRQ_QPS=20
	enqueue_cards c1 reset 1 5
	enqueue_cards c1 polling 6 35
	enqueue_cards c1 order 36 40
	run -0 sr-claim --max 10 --batch 10
	assert_equal "$(echo "$output" | wc -l)" 10
	# The five orders first, then normal work, and one slot kept for bulk.
	assert_equal "$(echo "$output" | head -5 | jq -r .scene | sort -u)" order
	assert_equal "$(echo "$output" | jq -r .scene | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')" \
		"order=5 polling=4 reset=1 "
}

@test "a claimed command is not handed out twice until its lease expires" {
	export SRQ_LEASE_MS=1500 SRQ_GATEWAY_TIMEOUT_MS=500
	enqueue_cards c1 polling 1 3
	run -0 sr-claim
	assert_equal "$(echo "$output" | wc -l)" 3
	first_tokens=$(echo "$output" | jq -r .token | sort)
	run -0 sr-claim
	assert_output ''
	sleep 1.7
	# The pipeline that held them is presumed dead: claimable again, new tokens.
	run -0 sr-claim
	assert_equal "$(echo "$output" | wc -l)" 3
	assert_equal "$(echo "$output" | jq -r .attempt | sort -u)" 2
	[ "$(echo "$output" | jq -r .token | sort)" != "$first_tokens" ]
}

@test "max-running bounds the claims of an account; --carrier picks accounts" {
	export SRQ_MAX_RUNNING=3
	enqueue_cards c1 polling 1 10
	enqueue_cards c2 polling 11 20
	run -0 sr-claim --carrier c2
	assert_equal "$(echo "$output" | jq -r .carrier | sort | uniq -c | awk '{print $2 "=" $1}')" "c2=3"
	run -0 sr-claim
	assert_equal "$(echo "$output" | jq -r .carrier | sort | uniq -c | awk '{print $2 "=" $1}')" "c1=3"
	# Per-account override: sr-admin limits comes later; the hash is the contract.
	rcli HSET 't:carrier:{c1}:limits' running 5 >/dev/null
	run -0 sr-claim --carrier c1
	assert_equal "$(echo "$output" | wc -l)" 2
}

@test "a card just called waits for its interval before its next command is claimed" {
	gwsim_start
	enqueue_cards c1 polling 1 1
	run -0 drain 20
	# Renewed right after the stop: a resume is wanted, but not yet allowed.
	printf '{"card":"K001","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' \
		$(( $(date +%s) + 86400 )) | sr-enqueue >/dev/null
	run -0 sr-claim
	assert_output ''
	run -0 drain 20
	assert_equal "$(jq -r .kind "$T/gw.log" | tr '\n' ' ')" "stop resume "
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "--until-empty returns when nothing is queued; Redis down is exit 3" {
	run -0 sr-claim --until-empty --for 5
	assert_output ''
	SRQ_REDIS="unix://$T/none.sock" run -3 --separate-stderr sr-claim
	[[ $stderr == *"cannot connect to Redis"* ]]
	run -2 sr-claim --max lots
}

@test "a Redis that stops answering is said as such, after SRQ_REDIS_TIMEOUT_MS, exit 3" {
	[ "${SRQ_TEST_REDIS:-}" = cluster ] && skip "stops the one server"
	enqueue_cards c1 polling 1 3
	kill -STOP "$(cat "$T/redis.pid")"
	# (Redis goes on before anything is asserted: a stopped server would
	# outlive a failed test, its SIGTERM pending.)
	SRQ_REDIS_TIMEOUT_MS=300 run --separate-stderr sr-claim
	kill -CONT "$(cat "$T/redis.pid")"
	assert_equal "$status" 3
	[[ $stderr == *"no answer from Redis within 300 ms"* ]]
	[[ $stderr != *"Resource temporarily unavailable"* ]]
	# Nothing was claimed: the commands are there for the next run.
	run -0 sr-claim
	assert_equal "$(echo "$output" | wc -l)" 3
	SRQ_REDIS_TIMEOUT_MS=lots run -2 --separate-stderr sr-claim
	[[ $stderr == *SRQ_REDIS_TIMEOUT_MS* ]]
}

@test "a limited claim is shared fairly between accounts" {
	enqueue_cards c1 polling 1 10
	enqueue_cards c2 polling 11 20
	enqueue_cards c3 polling 21 30
	run -0 sr-claim --max 6
	assert_equal "$(echo "$output" | jq -r .carrier | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')" \
		"c1=2 c2=2 c3=2 "
	run -0 sr-claim --max 4
	assert_equal "$(echo "$output" | wc -l)" 4
	assert_equal "$(echo "$output" | jq -r .carrier | sort -u | wc -l)" 3
}

@test "--max below the number of accounts still claims what is due, wherever it is" {
	# Twenty accounts with nothing due, and work in one more.
	rcli SADD t:accounts $(seq -f 'e%g' 1 20) >/dev/null
	enqueue_cards c1 polling 1 3
	run -0 sr-claim --max 1
	assert_equal "$(jq -r .carrier <<<"$output")" c1
	run -0 sr-claim --max 2
	assert_equal "$(jq -r .carrier <<<"$output" | paste -sd' ')" "c1 c1"
}

@test "--until-empty ends when what is left is held by a pause or an open breaker: exit 4, a line for each" {
	gwsim_start
	enqueue_cards c1 polling 1 3
	enqueue_cards c2 polling 4 5
	enqueue_cards c3 polling 6 7
	sr-admin pause c1 --reason "onboarding" >/dev/null
	sr-admin breaker c2 open --reason "carrier incident" >/dev/null
	# Before: it waited on them until killed. Now the pipeline ends with
	# what is free done, long before --for, and it says who holds the rest.
	start=$(date +%s)
	timeout 30 sr-claim --until-empty --for 25 2>"$T/claim.err" | sr-exec | sr-confirm >"$T/finals"
	assert_equal "${PIPESTATUS[0]}" 4
	[ $(($(date +%s) - start)) -lt 10 ]
	assert_equal "$(jq -r '"\(.carrier) \(.state)"' "$T/finals" | sort | uniq -c | awk '{print $2 $3 "=" $1}' | paste -sd' ')" "c3done=2"
	run cat "$T/claim.err"
	assert_equal "${#lines[@]}" 2
	assert_output --partial "account 'c1': 3 commands held by a pause until resumed"
	assert_output --partial "account 'c2': 2 commands held by its breaker, open until closed"
	# Held until a time: said with it. Without --for, at once.
	sr-admin resume c1 --reason "live" >/dev/null
	sr-admin pause c1 --until 1h --reason "maintenance" >/dev/null
	run -4 --separate-stderr timeout 30 sr-claim --until-empty --carrier c1
	assert_output ''
	[[ $stderr =~ account\ \'c1\':\ 3\ commands\ held\ by\ a\ pause\ until\ [0-9-]{10}T[0-9:]{8}Z\ \(in\ (59m|1h) ]]
	# A pause that ends within --for is waited for: its work is claimed.
	sr-admin resume c1 --reason "live" >/dev/null
	sr-admin pause c1 --until 2s --reason "short" >/dev/null
	run -0 --separate-stderr timeout 30 sr-claim --until-empty --for 25 --carrier c1 --max 3
	assert_equal "$(jq -r .card <<<"$output" | sort | paste -sd' ')" "K001 K002 K003"
	[ -z "$stderr" ]
}

@test "SIGTERM stops sr-claim --follow as --for does: what it printed is claimed, handed on, exit 0" {
	gwsim_start
	enqueue_cards c1 polling 1 5
	sr-claim --follow >"$T/tasks" 2>"$T/claim.err" &
	pid=$!
	for i in $(seq 100); do [ "$(wc -l <"$T/tasks")" -ge 5 ] && break; sleep 0.05; done
	# It is idle, and then told to stop.
	kill -TERM "$pid"
	start=$(date +%s%3N)
	wait "$pid"
	[ $(($(date +%s%3N) - start)) -lt 2000 ]
	# Every task it printed is a live claim, whose result counts.
	assert_equal "$(wc -l <"$T/tasks")" 5
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:sr_running')" 5
	run -0 sr-exec <"$T/tasks"
	run -0 sr-confirm <<<"$output"
	assert_equal "$(jq -r .state <<<"$output" | sort -u)" done
	[ ! -s "$T/claim.err" ]
}
