#!/usr/bin/env bats
# Redis Cluster (redis+cluster://): every command goes to the master serving
# its key's slot, the pipeline spans the masters, and a slot that moves
# (ASK while it moves, MOVED once it has) loses nothing and calls no card
# twice. Each test gets its own 3-master cluster.

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	srq_setup
	redis_stop # the single server srq_setup starts is not used here
	cluster_start 3
	export SRQ_QPS=0 SRQ_MAX_RUNNING=0 SRQ_UNLIMITED=1
}

teardown() {
	srq_teardown
}

# requests N ACCOUNTS: N stop requests for expired packages, cards C0.., over
# ACCOUNTS accounts a0.. (round robin); their starting states in $T/init.jsonl.
requests() {
	awk -v n="$1" -v a="$2" -v past="$PAST" 'BEGIN { for (i = 0; i < n; i++)
		printf "{\"card\":\"C%d\",\"carrier\":\"a%d\",\"scene\":\"package_expired\",\"facts\":{\"pkg_expires_at\":%d,\"status\":\"active\"}}\n", i, i % a, past }'
}

@test "a drain on a 3-master cluster: every account's keys on one master, all masters used, each card called once" {
	gwsim_start
	requests 600 30 >"$T/req.jsonl"
	run -0 --separate-stderr sr-enqueue <"$T/req.jsonl"
	assert_equal "$(echo "$output" | jq -r .status | sort | uniq -c | awk '{ print $1, $2 }')" "600 queued"
	# The accounts spread over the masters; each account on one of them.
	for port in "${CLUSTER_PORTS[@]}"; do
		[ "$(redis-cli -p "$port" DBSIZE)" -gt 0 ]
		redis-cli -p "$port" --scan --pattern 't:carrier:*' | sed 's/.*{\(a[0-9]*\)}.*/\1/' | sort -u >"$T/on.$port"
	done
	assert_equal "$(cat "$T"/on.* | sort | uniq -d)" ""
	assert_equal "$(cat "$T"/on.* | wc -l)" 30

	run -0 --separate-stderr drain 60
	assert_equal "$(echo "$output" | jq -r .state | sort | uniq -c | awk '{ print $1, $2 }')" "600 done"
	# From the gateway's side: each card stopped once, and stopped.
	assert_equal "$(jq -r 'select(.kind == "stop") | .card' "$T/gw.log" | sort | uniq -d)" ""
	assert_equal "$(jq -r 'select(.kind == "stop") | .card' "$T/gw.log" | wc -l)" 600
	run -0 sr-stat
	assert_equal "$(echo "$output" | jq 'select(.carrier == "*") | .finishes')" 600
}

@test "an account's slot moves to another master in the middle of a drain: nothing lost, no card called twice" {
	gwsim_start --latency-ms 100 # 16 calls in flight: 2.5 s of calls, the move lands mid-drain
	requests 400 2 >"$T/req.jsonl"
	sr-enqueue <"$T/req.jsonl" >/dev/null
	slot=$(ccli CLUSTER KEYSLOT a0)
	src=$(redis-cli -p "${CLUSTER_PORTS[0]}" CLUSTER NODES | awk -v s="$slot" '$3 ~ /master/ {
		for (i = 9; i <= NF; i++) { split($i, r, "-"); if (s >= r[1] && s <= (r[2] == "" ? r[1] : r[2])) print $2 } }' |
		sed 's/@.*//; s/.*://')
	for port in "${CLUSTER_PORTS[@]}"; do [ "$port" != "$src" ] && dst=$port && break; done
	src_id=$(redis-cli -p "$src" CLUSTER MYID)
	dst_id=$(redis-cli -p "$dst" CLUSTER MYID)

	sr-claim --until-empty --for 60 | sr-exec --concurrency 16 | sr-confirm >"$T/finals.jsonl" 2>"$T/drain.err" &
	drain_pid=$!
	sleep 0.5
	# The move, as an operator does it: importing, migrating, the keys in one
	# MIGRATE (a script never sees part of an account), then the new owner.
	redis-cli -p "$dst" CLUSTER SETSLOT "$slot" IMPORTING "$src_id" >/dev/null
	redis-cli -p "$src" CLUSTER SETSLOT "$slot" MIGRATING "$dst_id" >/dev/null
	keys=$(redis-cli -p "$src" CLUSTER GETKEYSINSLOT "$slot" 100000)
	# shellcheck disable=SC2086
	redis-cli -p "$src" MIGRATE 127.0.0.1 "$dst" "" 0 10000 KEYS $keys >/dev/null
	sleep 0.3 # commands for the slot meet ASK meanwhile
	for port in "${CLUSTER_PORTS[@]}"; do
		redis-cli -p "$port" CLUSTER SETSLOT "$slot" NODE "$dst_id" >/dev/null
	done
	wait "$drain_pid"

	# The drain met the move (ASK or MOVED from the old master) and followed it.
	redis-cli -p "$src" INFO errorstats | grep -qE '^errorstat_(ASK|MOVED):count=[1-9]'
	assert_equal "$(redis-cli -p "$src" CLUSTER COUNTKEYSINSLOT "$slot")" 0
	[ "$(redis-cli -p "$dst" CLUSTER COUNTKEYSINSLOT "$slot")" -gt 0 ]
	# Every card done. (Calls held up by the move may outlive their 3 s
	# lease: those claims are lost, put back, and claimed again.)
	assert_equal "$(jq -r 'select(.state == "done") | .card' "$T/finals.jsonl" | sort -u | wc -l)" 400
	assert_equal "$(jq -r 'select(.state != "done" and .state != "requeued")' "$T/finals.jsonl")" ""
	assert_equal "$(jq -r 'select(.kind == "stop") | .card' "$T/gw.log" | sort | uniq -d)" ""
	assert_equal "$(jq -r 'select(.kind == "stop") | .card' "$T/gw.log" | wc -l)" 400
	# Nothing left behind on either side.
	assert_equal "$(ccli ZCARD 't:carrier:{a0}:stop_resume')" 0
	assert_equal "$(ccli ZCARD 't:carrier:{a0}:sr_running')" 0
}

@test "sr-sweep walks every master of a cluster" {
	requests 12 6 >"$T/req.jsonl"
	sr-enqueue <"$T/req.jsonl" >/dev/null
	# Six accounts' queue entries lost, on whichever masters they live.
	for a in 0 1 2 3 4 5; do ccli DEL "t:carrier:{a$a}:stop_resume" >/dev/null; done
	run -1 --separate-stderr sr-sweep --grace-normal 0
	assert_equal "$(echo "$output" | jq -r 'select(.finding == "missing_entry") | .card' | sort | tr '\n' ' ')" \
		"C0 C1 C10 C11 C2 C3 C4 C5 C6 C7 C8 C9 "
	run -0 --separate-stderr sr-sweep --grace-normal 0
	assert_output ''
}

@test "the first node named is down: the next one gives the slot map" {
	gwsim_start
	export SRQ_REDIS="redis+cluster://127.0.0.1:1,127.0.0.1:${CLUSTER_PORTS[1]}"
	requests 30 3 | sr-enqueue >/dev/null
	run -0 --separate-stderr drain 30
	assert_equal "$(echo "$output" | jq -r .state | sort | uniq -c | awk '{ print $1, $2 }')" "30 done"
}

@test "a cluster URL with credentials is refused without echoing them; no node reachable is exit 3" {
	SRQ_REDIS="redis+cluster://user:s3cret@127.0.0.1:${CLUSTER_PORTS[0]}" run -2 --separate-stderr sr-stat
	[[ $stderr == *"SRQ_REDIS_PASSWORD"* ]]
	[[ $stderr != *"s3cret"* ]]
	SRQ_REDIS="redis+cluster://127.0.0.1" run -2 --separate-stderr sr-stat
	[[ $stderr == *"redis+cluster://host:port"* ]]
	cluster_stop
	run -3 --separate-stderr sr-stat
	[[ $stderr == *"cannot read the cluster's slot map"* ]]
}
