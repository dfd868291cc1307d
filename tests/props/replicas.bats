#!/usr/bin/env bats
# replicas.bats - SRQ_WAIT_REPLICAS=N: an ack ("queued", "loaded") means the
# write reached N replicas (Redis WAIT), so a failover to one of them cannot
# lose it. When the replicas do not confirm in time, the request is answered
# "error" (send it again) and the exit is 3, never a false ack.

bats_require_minimum_version 1.5.0

load ../test_helper

# The same whatever SRQ_TEST_REDIS says: these tests start the Redis they
# need (or none), so make test-cluster leaves them to make test.
# bats file_tags=own-redis

setup() {
	test_vars
	# The master listens on TCP too: a replica can only follow host:port.
	tcp_redis "$T/m" --unixsocket "$T/m/redis.sock"
	MPORT=$PORT
	export SRQ_REDIS="unix://$T/m/redis.sock"
}

teardown() {
	gwsim_stop
	tcp_redis_stop
}

@test "with SRQ_WAIT_REPLICAS=1 an ack means the replica has the write; without a replica it is an error" {
	export SRQ_WAIT_REPLICAS=1 SRQ_WAIT_TIMEOUT_MS=300
	tcp_redis "$T/r" --unixsocket "$T/r/redis.sock" --replicaof 127.0.0.1 "$MPORT"
	for i in $(seq 100); do
		[ "$(redis-cli -s "$T/r/redis.sock" INFO replication | tr -d '\r' | sed -n 's/^master_link_status://p')" = up ] && break
		sleep 0.05
	done
	run -0 sr-enqueue < <(request R1 package_expired "$PAST" -; request R2 package_expired "$PAST" -)
	assert_equal "$(grep -c '"status":"queued"' <<<"$output")" 2
	# Acked, so the replica has it: what a failover would promote.
	assert_equal "$(redis-cli -s "$T/r/redis.sock" HGET 't:carrier:{c1}:wait:' R1 | cut -d'|' -f1)" stop
	run -0 sr-asset <<<'{"card":"R3","carrier":"c1","pkg_expires_at":1}'
	assert_output --partial '"status":"loaded"'

	# The replica gone: nothing is acked that only the master has.
	kill "$(cat "$T/r/redis.pid")"
	for i in $(seq 100); do
		[ "$(redis-cli -s "$T/m/redis.sock" INFO replication | tr -d '\r' | sed -n 's/^connected_slaves://p')" = 0 ] && break
		sleep 0.05
	done
	run -3 sr-enqueue < <(request R4 package_expired "$PAST" -)
	assert_output --partial '"status":"error"'
	assert_output --partial 'only 0 of 1 replicas confirmed it within 300 ms'
	refute_output --partial '"status":"queued"'
	run -3 sr-asset <<<'{"card":"R5","carrier":"c1","pkg_expires_at":1}'
	refute_output --partial '"status":"loaded"'

	# Without the setting, the master's word is the ack (the default).
	unset SRQ_WAIT_REPLICAS
	run -0 sr-enqueue < <(request R6 package_expired "$PAST" -)
	assert_output --partial '"status":"queued"'
}

@test "with SRQ_WAIT_REPLICAS=1 no call goes out before its gate pass is on a replica: unreplicated, then called once one follows" {
	gwsim_start
	request R1 package_expired "$PAST" - | sr-enqueue >/dev/null # written before the setting: no replica needed
	export SRQ_WAIT_REPLICAS=1 SRQ_WAIT_TIMEOUT_MS=200
	run -0 --separate-stderr sh -c 'sr-claim | sr-exec'
	assert_equal "$(echo "$output" | jq -r '"\(.outcome) \(.class)"')" "retry unreplicated"
	assert_output --partial 'only 0 of 1 replicas confirmed it'
	# The carrier saw nothing.
	assert_equal "$(jq -s length "$T/gw.log")" 0
	# The result gives the card its interval back and costs it no failure.
	echo "$output" | sr-confirm >/dev/null
	assert_equal "$(redis-cli -s "$T/m/redis.sock" HGET 't:carrier:{c1}:card:R1' last_call)" ""
	assert_equal "$(redis-cli -s "$T/m/redis.sock" HGET 't:carrier:{c1}:card:R1' fails)" ""

	tcp_redis "$T/r" --unixsocket "$T/r/redis.sock" --replicaof 127.0.0.1 "$MPORT"
	for i in $(seq 100); do
		[ "$(redis-cli -s "$T/m/redis.sock" INFO replication | grep -c 'state=online')" = 1 ] && break
		sleep 0.05
	done
	run -0 --separate-stderr sh -c 'sr-claim --until-empty --for 10 | sr-exec | sr-confirm'
	assert_output --partial '"state":"done"'
	assert_equal "$(jq -r 'select(.kind == "stop") | .card' "$T/gw.log")" R1
}
