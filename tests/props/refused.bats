#!/usr/bin/env bats
# refused.bats - Redis up but refusing writes (out of memory under
# noeviction, or a read-only replica): every tool that writes answers with
# "error" records or an error on stderr and exit 3, never "queued" or
# "loaded"; nothing is half written and the carrier is not called.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	gwsim_start
	# Three queued cards; C1 called and its result kept; C2 claimed.
	for i in 1 2 3; do
		printf '{"card":"C%d","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$i" "$PAST"
	done | sr-enqueue >/dev/null
	sr-claim --max 1 | sr-exec >"$T/results"
	sr-claim --max 1 >"$T/tasks"
	assert_equal "$(jq -r .card "$T/tasks")" C2
	calls=$(wc -l <"$T/gw.log")
}

# snapshot: every key, with its type and contents (the audit stream by length);
# each key once (SCAN may return a key twice while a dict is being resized).
snapshot() {
	local k
	for k in $(rcli --scan | sort -u); do
		case $(rcli TYPE "$k") in
		hash) echo "$k $(rcli HGETALL "$k" | tr '\n' ' ')" ;;
		zset) echo "$k $(rcli ZRANGE "$k" 0 -1 WITHSCORES | tr '\n' ' ')" ;;
		set) echo "$k $(rcli SMEMBERS "$k" | sort | tr '\n' ' ')" ;;
		stream) echo "$k $(rcli XLEN "$k")" ;;
		*) echo "$k $(rcli GET "$k")" ;;
		esac
	done
}

# every_writer: each tool that writes, against a Redis that refuses writes.
every_writer() {
	local before
	before=$(snapshot)

	run -3 sr-enqueue <<<'{"card":"C9","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":1}}'
	assert_output --partial '"status":"error"'
	refute_output --partial '"status":"queued"'
	assert_output --partial "$1"

	run -3 sr-asset --csv < <(printf 'card,carrier,pkg_expires_at\nA1,c1,1\n')
	assert_output --partial '"status":"error"'
	refute_output --partial '"status":"loaded"'

	run -3 sr-claim --max 5
	refute_output --partial '"task"'
	assert_output --partial "$1"

	# The claimed task is answered error, and never called.
	run -3 sr-exec <"$T/tasks"
	assert_output --partial '"status":"error"'
	assert_equal "$(wc -l <"$T/gw.log")" "$calls"

	run -3 sr-confirm <"$T/results"
	assert_output --partial '"state":"error"'
	refute_output --partial '"state":"done"'

	run -3 dev-eval --max 5
	assert_output --partial "$1"

	for a in "limits c1 qps=5" "pause c1" "breaker c1 open" "retry C3" "freeze C3" "drop C3" "switch off"; do
		# shellcheck disable=SC2086
		run -3 sr-admin $a --reason test
		assert_output --partial "$1"
	done
	run -3 sr-sweep
	assert_output --partial "not swept"

	# Nothing was half written.
	assert_equal "$(snapshot)" "$before"
}

@test "out of memory (noeviction): every writing tool answers error and exits 3" {
	rcli CONFIG SET maxmemory 1 >/dev/null
	every_writer OOM
	# Reading still works.
	run -0 sr-stat --carrier c1
	run -0 sr-admin why C3
}

@test "a read-only replica: every writing tool answers error and exits 3" {
	# A cluster's nodes cannot be made replicas by hand (its replicas answer
	# MOVED, which srq follows: tests/props/cluster.bats).
	[ "${SRQ_TEST_REDIS:-}" != cluster ] || skip "one server's REPLICAOF; a cluster has its own"
	# A replica of a master that is not there keeps its data and refuses writes.
	rcli REPLICAOF 127.0.0.1 1 >/dev/null
	every_writer READONLY
	run -0 sr-stat --carrier c1
}

@test "a card's facts refused but its command queued (their keys on different masters, or an ACL): the ack says queued, with a warning" {
	# Facts keys have no account hash tag: on a cluster they live on
	# another master than the account's, which can be full while the
	# account's is not. An ACL that lets srq write account keys only makes
	# the same split on one server.
	rcli ACL SETUSER default resetkeys '%R~*' '~t:carrier:*' '~t:accounts' >/dev/null
	printf '{"card":"C8","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST" >"$T/in"
	run -3 --separate-stderr sr-enqueue <"$T/in"
	rcli ACL SETUSER default resetkeys allkeys >/dev/null
	assert_equal "$(jq -r '"\(.card) \(.status) \(.warning // "-" | split(" this user")[0])"' <<<"$output")" \
		"C8 queued facts not written: NOPERM"
	[[ $stderr == *"line 1: facts not written: NOPERM"* ]]
	[[ $stderr != *"not queued"* ]]
	# Queued, as the ack says; the facts are the old ones.
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:stop_resume' 0 -1 | grep C8)" C8
	assert_equal "$(rcli HGET t:card:C8:facts pe)" ""
}

@test "a known card's facts refused but its command queued: judged again on the old facts, it is not undone" {
	# C7's stored facts say nothing to do; its request says the package
	# expired, and Redis refuses to store that (as above). Judged again on
	# the facts Redis holds (the old ones), the stop would be cancelled at
	# once: the command the ack says is queued, judged on the request's
	# facts, would not be.
	echo "{\"card\":\"C7\",\"carrier\":\"c1\",\"pkg_expires_at\":$FUTURE,\"status\":\"active\"}" | sr-asset >/dev/null
	rcli ACL SETUSER default resetkeys '%R~*' '~t:carrier:*' '~t:accounts' >/dev/null
	printf '{"card":"C7","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST" >"$T/in"
	run -3 --separate-stderr sr-enqueue <"$T/in"
	rcli ACL SETUSER default resetkeys allkeys >/dev/null
	assert_equal "$(jq -r '"\(.status) \(.action) \(.followup // "-") \(.warning // "-" | split(" this user")[0])"' <<<"$output")" \
		"queued stop - facts not written: NOPERM"
	assert_equal "$(sr-admin show C7 | jq -r .command.action)" stop
}

@test "a device's facts refused but its evaluation queued: the ack says device_queued, with a warning" {
	rcli ACL SETUSER default resetkeys '%R~*' '~t:carrier:*' '~t:accounts' '~t:device_eval:*' >/dev/null
	run -3 --separate-stderr sr-enqueue <<<'{"device":"D4","scene":"device_package_expired","facts":{"pkg_expires_at":1}}'
	rcli ACL SETUSER default resetkeys allkeys >/dev/null
	assert_equal "$(jq -r '"\(.status) \(.warning // "-" | split(" this user")[0])"' <<<"$output")" \
		"device_queued device facts not written: NOPERM"
	[[ $stderr == *"line 1: device facts not written: NOPERM"* ]]
	assert_equal "$(rcli EXISTS t:device:D4:facts)" 0
	# Queued, as the ack says.
	run -0 dev-eval --until-empty --for 3
	assert_equal "$(jq -r '"\(.device) \(.state)"' <<<"$output")" "D4 done"
}

# feed_then_lose TOOL LINE1 LINE2: LINE1 answered, Redis killed, LINE2 sent.
feed_then_lose() {
	local tool=$1
	rm -f "$T/in"
	mkfifo "$T/in"
	$tool <"$T/in" >"$T/out" 2>"$T/err" &
	local pid=$!
	exec 5>"$T/in"
	echo "$2" >&5
	for i in $(seq 100); do [ -s "$T/out" ] && break; sleep 0.05; done
	redis_stop
	echo "$3" >&5
	exec 5>&-
	local rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 3
	assert_equal "$(wc -l <"$T/out")" 2
	assert_equal "$(tail -1 "$T/out" | jq -r '.status // .state')" error
	run cat "$T/err"
	assert_output --partial "error: Redis connection failed"
}

@test "Redis lost mid-run: each filter says so on stderr as well as in its records" {
	feed_then_lose sr-exec "$(sr-claim --max 1)" "$(cat "$T/tasks")"
	redis_start
	feed_then_lose sr-asset '{"card":"A1","carrier":"c1","pkg_expires_at":1}' '{"card":"A2","carrier":"c1","pkg_expires_at":1}'
	redis_start
	r=$(cat "$T/results")
	feed_then_lose sr-confirm "$r" "$r"
	redis_start
	feed_then_lose sr-enqueue '{"card":"E1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":1}}' \
		'{"card":"E2","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":1}}'
}

# deny_writes PATTERN...: Redis lets srq write only keys of these patterns
# (and read every key), as a master of a cluster that is out of memory
# refuses the writes of the keys it holds while the others take theirs.
deny_writes() {
	local p allow=()
	for p in "$@"; do allow+=("~$p"); done
	rcli ACL SETUSER default resetkeys '%R~*' "${allow[@]}" >/dev/null
}
allow_writes() {
	rcli ACL SETUSER default resetkeys allkeys >/dev/null
}

# A disabled device D0 with two cards of c1, its request queued.
device_d0() {
	printf '%s\n' '{"device":"D0","disabled":0}' \
		"{\"card\":\"K1\",\"carrier\":\"c1\",\"device\":\"D0\",\"pkg_expires_at\":$FUTURE,\"status\":\"active\"}" \
		"{\"card\":\"K2\",\"carrier\":\"c1\",\"device\":\"D0\",\"pkg_expires_at\":$FUTURE,\"status\":\"active\"}" |
		sr-asset >/dev/null
	echo '{"device":"D0","scene":"device","facts":{"disabled":1}}' | sr-enqueue >/dev/null
}

@test "a device whose cards' commands Redis refused is evaluated again, not finished done" {
	device_d0
	deny_writes 't:device*' 't:accounts'
	run -3 --separate-stderr dev-eval --max 16
	allow_writes
	assert_equal "$(jq -r '"\(.state) \([.cards[].status] | join(","))"' <<<"$output")" "retry error,error"
	[[ $stderr == *"device 'D0': 2 of 2 cards: enqueue script failed: NOPERM"* ]]
	# Once Redis takes the writes, the next pass stops both cards.
	sleep 1.1
	run -0 dev-eval --until-empty --for 5
	assert_equal "$(jq -r '"\(.state) \([.cards[] | "\(.card) \(.status) \(.action)"] | sort | join(","))"' <<<"$output")" \
		"done K1 queued stop,K2 queued stop"
}

@test "a device lock Redis refused is said as such, not waited on as a busy lock" {
	device_d0
	deny_writes 't:device_eval*' 't:carrier:*' 't:accounts'
	SECONDS=0
	run -3 --separate-stderr dev-eval --max 16
	allow_writes
	[ "$SECONDS" -lt 2 ]
	assert_equal "$(jq -r '"\(.state) \(.error | split(" this user")[0])"' <<<"$output")" "retry device lock not taken: NOPERM"
	[[ $stderr == *"device 'D0': device lock not taken: NOPERM"* ]]
}

@test "an account Redis refused to register: its ack says so, the next request registers it, and so does sr-sweep" {
	# Every key of c9 writable but the account list: its commands are
	# queued, and no sr-claim would find them.
	deny_writes 't:carrier:*' 't:card:*'
	mkfifo "$T/in"
	sr-enqueue <"$T/in" >"$T/out" 2>"$T/err" &
	local pid=$! rc=0
	exec 5>"$T/in"
	printf '{"card":"N1","carrier":"c9","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST" >&5
	for _ in $(seq 100); do [ -s "$T/out" ] && break; sleep 0.05; done
	allow_writes
	# The same process registers it with its next request of that account.
	printf '{"card":"N2","carrier":"c9","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST" >&5
	exec 5>&-
	wait "$pid" || rc=$?
	assert_equal "$rc" 3
	assert_equal "$(jq -r '"\(.card) \(.status) \(.warning // "-" | split(" this user")[0])"' "$T/out" | paste -sd,)" \
		"N1 queued account not registered: NOPERM,N2 queued -"
	run cat "$T/err"
	assert_output --partial "line 1: account not registered: NOPERM"
	assert_equal "$(rcli SISMEMBER t:accounts c9)" 1
	# An account with commands that the list lost: the sweep lists it again.
	rcli SREM t:accounts c9 >/dev/null
	run -1 sr-sweep
	assert_output --partial '{"finding":"unlisted_account","carrier":"c9","repaired":true}'
	assert_equal "$(rcli SISMEMBER t:accounts c9)" 1
	run -0 sr-claim --max 5 --carrier c9
	assert_equal "$(jq -r .card <<<"$output" | sort | paste -sd' ')" "N1 N2"
}

@test "a refusal that fails a whole batch is said once on stderr, with how many it failed, not once per card" {
	for i in 1 2 3 4 5; do
		printf '{"card":"B%d","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$i" "$PAST"
	done | sr-enqueue >/dev/null
	sr-claim --max 10 --carrier c1 | grep '"B' >"$T/b-tasks"
	assert_equal "$(wc -l <"$T/b-tasks")" 5
	rcli CONFIG SET maxmemory 1 >/dev/null
	run -3 --separate-stderr sr-exec <"$T/b-tasks"
	assert_equal "$(jq -r .status <<<"$output" | sort | uniq -c | awk '{ print $2 "=" $1 }')" "error=5"
	assert_equal "$(wc -l <<<"$stderr")" 2
	[[ $(head -1 <<<"$stderr") == *"card 'B"*"': gate script failed: OOM"* ]]
	[[ $stderr == *"4 more like it: gate script failed: OOM"* ]]
}

@test "Redis refusing TIME (an ACL): nothing is judged or loaded without Redis's clock, and each line says why" {
	rcli ACL SETUSER default -time >/dev/null
	run -3 --separate-stderr sr-enqueue < <(printf '{"card":"T1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST")
	assert_equal "$(jq -r .status <<<"$output")" error
	[[ $(jq -r .error <<<"$output") == "Redis's clock not read: NOPERM"* ]]
	[[ $stderr == *"Redis's clock not read: NOPERM"* ]]
	run -3 --separate-stderr sr-asset < <(printf '{"card":"T2","carrier":"c1","pkg_expires_at":%d}\n' "$PAST")
	assert_equal "$(jq -r .status <<<"$output")" error
	[[ $(jq -r .error <<<"$output") == "Redis's clock not read: NOPERM"* ]]
	rcli ACL SETUSER default +time >/dev/null
	# Neither was written, nor queued: sent again, each is.
	assert_equal "$(rcli EXISTS t:card:T1:facts)$(rcli EXISTS t:card:T2:facts)" 00
	assert_equal "$(rcli ZSCORE 't:carrier:{c1}:stop_resume' T1)" ''
	run -0 sr-enqueue < <(printf '{"card":"T1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}
' "$PAST")
	run -0 sr-asset < <(printf '{"card":"T2","carrier":"c1","pkg_expires_at":%d}
' "$PAST")
	assert_equal "$(rcli EXISTS t:card:T1:facts)$(rcli EXISTS t:card:T2:facts)" 11
	[ -n "$(rcli ZSCORE 't:carrier:{c1}:stop_resume' T1)" ]
}
