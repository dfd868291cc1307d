#!/usr/bin/env bats
# Redis Sentinel (redis+sentinel://): srq asks the sentinels who the master
# is, and asks again when a failover takes it away. One master, one replica,
# three sentinels, all on loopback ports of their own.

bats_require_minimum_version 1.5.0

load ../test_helper

# The same whatever SRQ_TEST_REDIS says: these tests start the Redis they
# need (or none), so make test-cluster leaves them to make test.
# bats file_tags=own-redis

setup() {
	test_vars
	SERVERS=()
	server "$T/m"
	MPORT=$PORT
	server "$T/r" --replicaof 127.0.0.1 "$MPORT"
	RPORT=$PORT
	for i in 1 2 3; do
		mkdir -p "$T/s$i"
		printf '%s\n' "sentinel monitor srq 127.0.0.1 $MPORT 2" \
			"sentinel down-after-milliseconds srq 1000" "sentinel failover-timeout srq 5000" \
			>"$T/s$i/sentinel.conf"
		server "$T/s$i" --sentinel
	done
	SPORTS=("${SERVERS[@]:2}")
	# The replica in sync, and the sentinels know it and each other, before
	# a test begins.
	for i in $(seq 200); do
		[ "$(redis-cli -p "$MPORT" INFO replication | grep -c 'state=online')" = 1 ] && break
		sleep 0.05
	done
	for i in $(seq 200); do
		[ "$(redis-cli -p "${SPORTS[0]}" SENTINEL replicas srq 2>/dev/null | grep -c "$RPORT")" -gt 0 ] &&
			[ "$(redis-cli -p "${SPORTS[0]}" SENTINEL sentinels srq 2>/dev/null | grep -c '^ip$')" = 2 ] && break
		sleep 0.05
	done
	export SRQ_REDIS="redis+sentinel://127.0.0.1:${SPORTS[0]},127.0.0.1:${SPORTS[1]},127.0.0.1:${SPORTS[2]}/srq"
	export SRQ_QPS=0 SRQ_MAX_RUNNING=0 SRQ_UNLIMITED=1
}

teardown() {
	gwsim_stop
	tcp_redis_stop
}

# server DIR [ARGS...]: tcp_redis, its port added to SERVERS.
server() {
	tcp_redis "$@" && SERVERS+=("$PORT")
}

# The port of the master, by the sentinels.
master_port() {
	redis-cli -p "${SPORTS[0]}" SENTINEL get-master-addr-by-name srq | tail -1
}

@test "srq finds the master through the sentinels; a sentinel that is down is skipped" {
	gwsim_start
	export SRQ_REDIS="redis+sentinel://127.0.0.1:1,127.0.0.1:${SPORTS[1]}/srq"
	stop_requests 40 2 | sr-enqueue >/dev/null
	assert_equal "$(redis-cli -p "$MPORT" HEXISTS 't:carrier:{a0}:wait:' C0)" 1 # (docs/redis.md "Redis layout")
	run -0 --separate-stderr drain 30
	assert_equal "$(echo "$output" | jq -r .state | sort | uniq -c | awk '{ print $1, $2 }')" "40 done"
}

@test "a bad sentinel URL is exit 2 without echoing credentials; an unknown master name is exit 3" {
	SRQ_REDIS="redis+sentinel://u:s3cret@127.0.0.1:${SPORTS[0]}/srq" run -2 --separate-stderr sr-stat
	[[ $stderr == *"SRQ_REDIS_PASSWORD"* ]]
	[[ $stderr != *"s3cret"* ]]
	SRQ_REDIS="redis+sentinel://127.0.0.1:${SPORTS[0]}" run -2 --separate-stderr sr-stat
	[[ $stderr == *"/MASTERNAME"* ]]
	SRQ_REDIS="redis+sentinel://127.0.0.1:${SPORTS[0]}/nosuch" run -3 --separate-stderr sr-stat
	[[ $stderr == *"no master 'nosuch' from the sentinels"* ]]
}

@test "a failover in the middle of a drain: srq follows the new master and the drain converges, no card called twice" {
	export SRQ_WAIT_REPLICAS=1
	# Each account held to its rate, which the failover must not break.
	export SRQ_QPS=50 SRQ_MAX_RUNNING=32
	unset SRQ_UNLIMITED
	gwsim_start --latency-ms 100
	stop_requests 300 3 | sr-enqueue >"$T/acks.jsonl"
	assert_equal "$(jq -r .status "$T/acks.jsonl" | sort -u)" queued

	sr-claim --until-empty --for 20 | sr-exec --concurrency 16 | sr-confirm >"$T/finals.jsonl" 2>"$T/drain.err" &
	drain_pid=$!
	sleep 0.5
	redis-cli -p "${SPORTS[0]}" SENTINEL FAILOVER srq >/dev/null
	wait "$drain_pid" || true
	# Until the sentinels demote the old master (up to ten seconds), both
	# say they are masters and neither has a replica: no pass is confirmed
	# by one, so no call goes out (class unreplicated). What the old master
	# took meanwhile (claims, finishes) is lost with its demotion and ends as
	# a lease expiry, a call already made settled by a status query.
	for i in $(seq 200); do [ "$(master_port)" = "$RPORT" ] && break; sleep 0.05; done
	assert_equal "$(master_port)" "$RPORT"
	# The old master follows the new one: passes are confirmed again.
	for i in $(seq 200); do
		[ "$(redis-cli -p "$RPORT" INFO replication | grep -c 'state=online')" = 1 ] && break
		sleep 0.05
	done

	# Cron runs the drain again: whatever the failover interrupted converges.
	drain_until_empty
	assert_equal "$(jq -r 'select(.state == "done") | .card' "$T/finals.jsonl" | sort -u | wc -l)" 300
	# From the gateway's side: each card stopped once, none inside its interval.
	assert_equal "$(jq -r 'select(.kind == "stop") | .card' "$T/gw.log" | sort | uniq -d)" ""
	assert_equal "$(gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS" | wc -l)" 0
	# ... and no account over its rate.
	assert_equal "$(gwcheck rate "$T/gw.log" "$SRQ_QPS" | wc -l)" 0
	# Everything is on the new master.
	assert_equal "$(redis-cli -p "$RPORT" ZCARD 't:carrier:{a0}:stop_resume')" 0
}
