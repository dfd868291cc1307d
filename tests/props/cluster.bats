#!/usr/bin/env bats
# Redis Cluster (redis+cluster://): every command goes to the master serving
# its key's slot, the pipeline spans the masters, and a slot that moves
# (ASK while it moves, MOVED once it has) loses nothing and calls no card
# twice. Each test gets its own 3-master cluster.

bats_require_minimum_version 1.5.0

load ../test_helper

# The same whatever SRQ_TEST_REDIS says: these tests start the Redis they
# need (or none), so make test-cluster leaves them to make test.
# bats file_tags=own-redis

setup() {
	test_vars
	cluster_start 3
	export SRQ_QPS=0 SRQ_MAX_RUNNING=0 SRQ_UNLIMITED=1
}

@test "a drain on a 3-master cluster: every account's keys on one master, all masters used, each card called once" {
	gwsim_start
	stop_requests 600 30 >"$T/req.jsonl"
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
	stop_requests 400 2 >"$T/req.jsonl"
	sr-enqueue <"$T/req.jsonl" >/dev/null
	slot=$(ccli CLUSTER KEYSLOT a0)
	src=$(master_of a0)
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

@test "a half-moved account (some cards already on the new master): the claim takes what it can, and the rest waits a lease" {
	stop_requests 20 1 | sr-enqueue >/dev/null
	# An account in steady use has every key the claim names (Redis answers
	# TRYAGAIN to a script some of whose keys have moved, until all have).
	far=9999999999999
	ccli ZADD 't:carrier:{a0}:stop_resume:high' $far X1 >/dev/null
	ccli ZADD 't:carrier:{a0}:stop_resume:bulk' $far X2 >/dev/null
	ccli ZADD 't:carrier:{a0}:sr_running' $far 1-1 >/dev/null
	ccli HSET 't:carrier:{a0}:limits' burst 5 >/dev/null
	ccli SET 't:carrier:{a0}:seq' 100 >/dev/null
	ccli SADD 't:carrier:{a0}:confirming' X3 >/dev/null
	ccli HSET 't:carrier:{a0}:edge' tat 0 >/dev/null
	RCLI=ccli ACCOUNT=a0 hashed C0 C1 C2 # as claimed once
	slot=$(ccli CLUSTER KEYSLOT a0)
	src=$(master_of a0)
	for port in "${CLUSTER_PORTS[@]}"; do [ "$port" != "$src" ] && dst=$port && break; done
	redis-cli -p "$dst" CLUSTER SETSLOT "$slot" IMPORTING "$(redis-cli -p "$src" CLUSTER MYID)" >/dev/null
	redis-cli -p "$src" CLUSTER SETSLOT "$slot" MIGRATING "$(redis-cli -p "$dst" CLUSTER MYID)" >/dev/null
	# A move in batches of keys (redis-cli --cluster reshard's pipeline)
	# has taken two claimed cards' hashes, and the buckets where C10-C19 wait
	# packed (docs/redis.md "Redis layout"), not yet the queue.
	redis-cli -p "$src" MIGRATE 127.0.0.1 "$dst" "" 0 10000 KEYS 't:carrier:{a0}:card:C0' 't:carrier:{a0}:card:C1' \
		't:carrier:{a0}:idle:C' 't:carrier:{a0}:wait:C' >/dev/null
	run -0 --separate-stderr sr-claim --max 20
	# C2's hash is still here: claimed. C3-C9 wait packed here, but their
	# claim would make their hashes, and a key the slot does not hold yet is
	# refused while it moves.
	assert_equal "$(echo "$output" | jq -r .card | paste -sd' ')" C2
	# The others stay queued, a lease ahead: they move with the queue.
	now=$(redis-cli -p "$src" TIME | head -1)
	for c in C0 C1 C3 C9 C10 C19; do
		[ "$(redis-cli -p "$src" ZSCORE 't:carrier:{a0}:stop_resume' "$c" | cut -d. -f1)" -gt $((now * 1000 + 1000)) ]
	done
}

@test "two masters that name each other for a slot (MOVED both ways): the tools wait for them to agree, within their retries" {
	slot=$(ccli CLUSTER KEYSLOT a0)
	src=$(master_of a0)
	for port in "${CLUSTER_PORTS[@]}"; do [ "$port" != "$src" ] && other=$port && break; done
	src_id=$(redis-cli -p "$src" CLUSTER MYID)
	other_id=$(redis-cli -p "$other" CLUSTER MYID)
	# A view gone stale, as a failover or a move can leave one for a moment:
	# the owner names the other master, and the other names the owner.
	redis-cli -p "$src" CLUSTER SETSLOT "$slot" NODE "$other_id" >/dev/null
	redis-cli -p "$other" CLUSTER SETSLOT "$slot" NODE "$src_id" >/dev/null
	run redis-cli -p "$src" SET '{a0}x' 1
	assert_output --partial MOVED
	# Half a second later the owner takes its slot back.
	(sleep 0.5 && redis-cli -p "$src" CLUSTER SETSLOT "$slot" NODE "$src_id" >/dev/null) &
	run -0 --separate-stderr sr-enqueue < <(stop_requests 5 1)
	wait
	assert_equal "$(echo "$output" | jq -r .status | sort | uniq -c | awk '{ print $1, $2 }')" "5 queued"
	assert_equal "$(redis-cli -p "$src" ZCARD 't:carrier:{a0}:stop_resume')" 5
}

@test "sr-sweep walks every master of a cluster" {
	stop_requests 12 6 >"$T/req.jsonl"
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
	stop_requests 30 3 | sr-enqueue >/dev/null
	run -0 --separate-stderr drain 30
	assert_equal "$(echo "$output" | jq -r .state | sort | uniq -c | awk '{ print $1, $2 }')" "30 done"
}

@test "a cluster URL with credentials is refused without echoing them; no node reachable is exit 3, a connection failed" {
	SRQ_REDIS="redis+cluster://user:s3cret@127.0.0.1:${CLUSTER_PORTS[0]}" run -2 --separate-stderr sr-stat
	[[ $stderr == *"SRQ_REDIS_PASSWORD"* ]]
	[[ $stderr != *"s3cret"* ]]
	SRQ_REDIS="redis+cluster://127.0.0.1" run -2 --separate-stderr sr-stat
	[[ $stderr == *"redis+cluster://host:port"* ]]
	# Reached but refused (a wrong password) is not a lost connection.
	SRQ_REDIS_PASSWORD=wrong run -3 --separate-stderr sr-stat
	[[ $stderr == *"cannot read the cluster's slot map: Redis AUTH failed"* ]]
	[[ $stderr != *"Redis connection failed"* ]]
	cluster_stop
	run -3 --separate-stderr sr-stat
	# (said as a lost connection, as on one server: a tool that loses
	# every node mid-run meets it either here or on an open connection)
	[[ $stderr == *"Redis connection failed: cannot read the cluster's slot map"* ]]
}

# The port of the master serving an account's slot, and of its replica.
master_of() {
	local slot port ask
	for port in "${CLUSTER_PORTS[@]}"; do
		redis-cli -p "$port" PING >/dev/null 2>&1 && ask=$port && break
	done
	slot=$(redis-cli -p "$ask" CLUSTER KEYSLOT "$1")
	redis-cli -p "$ask" CLUSTER NODES | awk -v s="$slot" '$3 ~ /master/ && $3 !~ /fail/ {
		for (i = 9; i <= NF; i++) { split($i, r, "-"); if (s >= r[1] && s <= (r[2] == "" ? r[1] : r[2])) print $2 } }' |
		sed 's/@.*//; s/.*://'
}
replica_of() {
	local id
	id=$(redis-cli -p "$1" CLUSTER MYID)
	redis-cli -p "$1" CLUSTER NODES | awk -v m="$id" '$4 == m { print $2 }' | sed 's/@.*//; s/.*://' | head -1
}

# The cluster answers again (a failover done), seen from a live node.
cluster_ok() {
	local i
	for i in $(seq 200); do
		redis-cli -p "$1" CLUSTER INFO | grep -q '^cluster_state:ok' && return 0
		sleep 0.05
	done
	return 1
}

@test "a master fails over by hand (CLUSTER FAILOVER) in the middle of a drain: every card done, none called twice" {
	cluster_stop
	cluster_start 3 1
	# Each account held to its rate, which the failover must not break.
	export SRQ_QPS=50 SRQ_MAX_RUNNING=32
	unset SRQ_UNLIMITED
	gwsim_start --latency-ms 100
	stop_requests 400 4 >"$T/req.jsonl"
	sr-enqueue <"$T/req.jsonl" >/dev/null
	old=$(master_of a0)
	new=$(replica_of "$old")
	[ -n "$new" ]

	sr-claim --until-empty --for 60 | sr-exec --concurrency 16 | sr-confirm >"$T/finals.jsonl" 2>"$T/drain.err" &
	drain_pid=$!
	sleep 0.5
	redis-cli -p "$new" CLUSTER FAILOVER >/dev/null
	wait "$drain_pid"

	# The replica took over, and the drain followed it. (While the old
	# master held its clients for the hand-over, calls in flight could
	# outlive their timeout or their lease: settled by status queries.)
	assert_equal "$(master_of a0)" "$new"
	assert_equal "$(jq -r 'select(.state == "done") | .card' "$T/finals.jsonl" | sort -u | wc -l)" 400
	assert_equal "$(jq -r 'select(.kind == "stop") | .card' "$T/gw.log" | sort | uniq -d)" ""
	assert_equal "$(gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS" | wc -l)" 0
	# ... and no account over its rate.
	assert_equal "$(gwcheck rate "$T/gw.log" "$SRQ_QPS" | wc -l)" 0
}

@test "kill -9 of a master in the middle of a drain and of enqueues: its replica takes over, the drain converges, and with SRQ_WAIT_REPLICAS=1 no acked request is lost" {
	cluster_stop
	cluster_start 3 1
	export SRQ_WAIT_REPLICAS=1
	# Each account held to its rate, which the failover must not break.
	export SRQ_QPS=50 SRQ_MAX_RUNNING=32
	unset SRQ_UNLIMITED
	gwsim_start --latency-ms 50
	stop_requests 600 6 >"$T/req.jsonl"
	head -n 300 "$T/req.jsonl" | sr-enqueue >"$T/acks1.jsonl"
	assert_equal "$(jq -r .status "$T/acks1.jsonl" | sort | uniq -c | awk '{ print $1, $2 }')" "300 queued"
	victim=$(master_of a0)
	heir=$(replica_of "$victim")
	[ -n "$heir" ]
	for port in "${CLUSTER_PORTS[@]}"; do [ "$port" != "$victim" ] && [ "$port" != "$heir" ] && live=$port && break; done

	sr-claim --until-empty --for 20 | sr-exec --concurrency 16 | sr-confirm >"$T/finals.jsonl" 2>"$T/drain.err" &
	drain_pid=$!
	# More requests while the master dies, a few at a time.
	tail -n 300 "$T/req.jsonl" | while read -r line; do printf '%s\n' "$line"; sleep 0.005; done |
		sr-enqueue >"$T/acks2.jsonl" 2>"$T/enqueue.err" &
	enqueue_pid=$!
	sleep 0.5
	cluster_kill "$victim"
	wait "$drain_pid" || true
	wait "$enqueue_pid" || true
	# The failure is noticed (2 s of node timeout) and the replica promoted.
	for _ in $(seq 300); do [ "$(master_of a0)" = "$heir" ] && break; sleep 0.05; done
	assert_equal "$(master_of a0)" "$heir"
	cluster_ok "$live"
	# Until the heir has a replica of its own, its accounts' passes are not
	# confirmed by one: nothing of theirs is called (class unreplicated).
	# The operator brings the dead node back; it rejoins as the heir's replica.
	cluster_restart "$victim"
	for _ in $(seq 300); do
		[ "$(redis-cli -p "$heir" INFO replication | grep -c 'state=online')" = 1 ] && break
		sleep 0.05
	done

	drain_until_empty
	# Every request acked "queued" was carried out: the card is stopped at
	# the carrier. A request not acked may or may not have been queued.
	cat "$T/acks1.jsonl" "$T/acks2.jsonl" | jq -r 'select(.status == "queued") | .card' | sort >"$T/acked"
	[ "$(wc -l <"$T/acked")" -gt 300 ]
	jq -r 'select(.kind == "stop" and .applied) | .card' "$T/gw.log" | sort -u >"$T/stopped"
	assert_equal "$(comm -23 "$T/acked" "$T/stopped")" ""
	# From the gateway's side: no card changed twice inside its interval.
	assert_equal "$(gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS" | wc -l)" 0
	# ... and no account over its rate.
	assert_equal "$(gwcheck rate "$T/gw.log" "$SRQ_QPS" | wc -l)" 0
	assert_equal "$(jq -r 'select(.kind == "stop") | .card' "$T/gw.log" | sort | uniq -d)" ""
}
