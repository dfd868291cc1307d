#!/usr/bin/env bats
# settings.bats - every number an operator gives (environment, flags, the
# Redis URL, account limits) is bounded: 0 where it means nothing, -1, 2^31,
# 2^32+1 (wraps to 1 in 32 bits), 2^63 (overflows 64) and trailing garbage
# are a usage error (exit 2) that names the setting, at once, before any
# work is done.

bats_require_minimum_version 1.5.0

load ../test_helper

BAD=(-1 2147483648 4294967297 9223372036854775808 12x '')

# refused NAME CMD...: CMD exits 2 at once and its message names NAME.
refused() {
	local name=$1
	shift
	run -2 timeout 10 "$@" </dev/null
	assert_output --partial "$name"
}

@test "each numeric environment setting out of range or malformed is exit 2 naming it" {
	local zero_ok=" SRQ_MIN_INTERVAL_MS SRQ_CONFIRM_DELAY_MS SRQ_UNLIMITED SRQ_WAIT_REPLICAS "
	for var in SRQ_MIN_INTERVAL_MS SRQ_QPS SRQ_MAX_RUNNING SRQ_LEASE_MS SRQ_RATE_WINDOW_MS \
		SRQ_GATEWAY_TIMEOUT_MS SRQ_GATEWAY_CONNECT_TIMEOUT_MS SRQ_ALERT_AFTER SRQ_FREEZE_AFTER \
		SRQ_CONCURRENCY SRQ_AUDIT_MAXLEN SRQ_AUDIT_DAYS SRQ_RATE_BURST SRQ_CONFIRM_DELAY_MS SRQ_UNLIMITED \
		SRQ_WAIT_REPLICAS SRQ_WAIT_TIMEOUT_MS SRQ_REDIS_TIMEOUT_MS; do
		values=("${BAD[@]}")
		[[ $zero_ok == *" $var "* ]] || values+=(0)
		for v in "${values[@]}"; do
			[ -n "$v" ] || continue # empty: the default
			refused "$var" env "$var=$v" sr-enqueue
		done
	done
}

@test "each numeric flag out of range or malformed is exit 2 naming it" {
	for v in "${BAD[@]}"; do
		refused --max sr-claim --max "$v"
		refused --batch sr-claim --batch "$v"
		refused --for sr-claim --for "$v"
		refused --for dev-eval --for "$v"
		refused --max dev-eval --max "$v"
		refused --concurrency sr-exec --concurrency "$v"
		refused --window sr-stat --window "$v"
		for g in high normal bulk device; do
			refused "--grace-$g" sr-sweep "--grace-$g" "$v"
		done
	done
	# 0 means nothing for these.
	refused --batch sr-claim --batch 0
	refused --concurrency sr-exec --concurrency 0
	refused --window sr-stat --window 0
}

@test "the Redis URL: a port or db out of range or malformed is exit 2 naming the setting" {
	for v in 0 -1 65536 4294967297 9223372036854775808 12x; do
		refused SRQ_REDIS env SRQ_REDIS="redis://127.0.0.1:$v/0" sr-enqueue
		refused --redis sr-enqueue --redis "redis://127.0.0.1:$v"
	done
	for v in -1 2147483648 4294967297 9223372036854775808 12x; do
		refused SRQ_REDIS env SRQ_REDIS="redis://127.0.0.1:6379/$v" sr-enqueue
		refused SRQ_REDIS env SRQ_REDIS="unix://$T/redis.sock?db=$v" sr-enqueue
	done
}

@test "the Redis URL: an IPv6 address in brackets is reached, and its db is the one used" {
	grep -q '^0\{31\}1 ' /proc/net/if_inet6 2>/dev/null || skip "no IPv6 loopback (::1) here"
	tcp_redis "$T/v6" --bind ::1
	export SRQ_REDIS="redis://[::1]:$PORT/2"
	run -0 sr-enqueue <<<"{\"card\":\"V1\",\"carrier\":\"c1\",\"scene\":\"package_expired\",\"facts\":{\"pkg_expires_at\":$PAST}}"
	assert_equal "$(echo "$output" | jq -r .status)" queued
	assert_equal "$(redis-cli -h ::1 -p "$PORT" -n 2 HEXISTS 't:carrier:{c1}:wait:' V1)" 1
	assert_equal "$(redis-cli -h ::1 -p "$PORT" -n 0 DBSIZE)" 0
}

@test "account limits out of range or malformed are refused naming the limit, and change nothing" {
	printf '{"card":"C1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST" |
		sr-enqueue >/dev/null
	for l in qps running burst; do
		for v in 0 "${BAD[@]}" 1.5; do
			refused "$l" sr-admin limits c1 "$l=$v" --reason test
		done
	done
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:limits')" 0
}

@test "a lease a call may outlive is exit 2 naming both settings (sr-claim, sr-exec, sr-admin); a sane one runs" {
	gwsim_start
	printf '{"card":"C1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
	# Calls of up to 3 s (the suite's SRQ_GATEWAY_TIMEOUT_MS) need a lease
	# of 4 s at least.
	for lease in 1000 3000 3999; do
		for t in sr-claim sr-exec; do
			SRQ_LEASE_MS=$lease run -2 --separate-stderr "$t" </dev/null
			assert_output ''
			[[ $stderr == *"SRQ_LEASE_MS '$lease' must exceed SRQ_GATEWAY_TIMEOUT_MS '3000' by at least 1000 ms: a call that outlives its claim's lease lets another pipeline claim the card and ask the carrier again"* ]]
		done
	done
	# sr-admin config shows the settings, and says what is wrong with them.
	SRQ_LEASE_MS=3000 run -2 --separate-stderr sr-admin config
	assert_line '{"setting":"SRQ_LEASE_MS","value":"3000","from":"environment"}'
	[[ $stderr == *"SRQ_LEASE_MS '3000' must exceed SRQ_GATEWAY_TIMEOUT_MS '3000' by at least 1000 ms"* ]]
	# Nothing was claimed.
	assert_equal "$(sr-admin list c1 | jq -r .state)" due
	# A profile's own timeout counts, and is named with its file.
	PROFILE_NAME=slow profiles 'from = default' 'accounts = slow-*' 'timeout_ms = 3500'
	for t in sr-claim sr-exec; do
		run -2 --separate-stderr "$t" </dev/null
		[[ $stderr == *"SRQ_LEASE_MS '4000' must exceed timeout_ms '3500' of profile 'slow' ($T/profiles/slow.profile) by at least 1000 ms"* ]]
	done
	run -2 --separate-stderr sr-admin profile slow-1
	jq -e '(.check.lease | test("timeout_ms .3500. of profile .slow.")) and (.ok | not)' <<<"$output"
	[[ $stderr == *"SRQ_LEASE_MS '4000' must exceed timeout_ms '3500' of profile 'slow'"* ]]
	run -2 sr-admin config >/dev/null
	run -0 sr-admin profile c1
	jq -e '.check.lease == "ok" and .ok' <<<"$output"
	# A lease a second longer than every call's timeout: the pipeline runs.
	export SRQ_LEASE_MS=4500
	run -0 sr-admin profile slow-1
	run -0 sr-admin config
	run -0 drain 10
	assert_equal "$(jq -r '"\(.card) \(.state)"' <<<"$output")" "C1 done"
	assert_equal "$(jq -r '"\(.kind) \(.card)"' "$T/gw.log")" "stop C1"
}
