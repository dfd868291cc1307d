#!/usr/bin/env bats
# secret_access.bats - who reads the carrier's secrets, and when: only a
# tool that calls a carrier, when it calls. A read-only tool (sr-admin why,
# sr-stat, sr-admin config) runs for an operator who cannot read the
# gateway's token; sr-admin config says what state each secret is in,
# never its value. Redis's password is read by every tool that talks to
# Redis, and by nothing else.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	test_vars
}

teardown() {
	srq_teardown
	# (the test's own directory for nobody, made by mktemp below)
	[ -z "${PUB:-}" ] || rm -rf "$PUB"
}

# card_queued: one stop for K1 of c1 queued.
card_queued() {
	printf '{"card":"K1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
}

# read_only_tools_work: what an operator looks at runs, exit 0.
read_only_tools_work() {
	run -0 sr-admin why K1
	assert_equal "$(jq -r .card <<<"$output")" K1
	run -0 sr-admin show K1
	run -0 sr-admin list c1
	run -0 sr-stat --table
	assert_output --partial 'queued'
	run -0 sr-admin config
	assert_line --partial '"setting":"SRQ_QPS"'
}

# secret_state NAME: what sr-admin config says of the secret setting NAME.
secret_state() {
	sr-admin config | jq -r --arg s "$1" 'select(.setting == $s) | .secret // "(none)"'
}

@test "a gateway token file that is missing or a directory: read-only tools run, sr-exec names it when it calls" {
	redis_start
	echo "tok-$RANDOM-s3cr3t" >"$T/gw.token.real"
	gwsim_start --token-file "$T/gw.token.real"
	card_queued
	for path in "$T/no/such/dir/gateway.token" "$T"; do
		export SRQ_GATEWAY_TOKEN_FILE="$path"
		read_only_tools_work
		if [ "$path" = "$T" ]; then
			assert_equal "$(secret_state SRQ_GATEWAY_TOKEN_FILE)" 'unreadable: Is a directory'
		else
			assert_equal "$(secret_state SRQ_GATEWAY_TOKEN_FILE)" 'missing: No such file or directory'
		fi
		# sr-exec does need it, and says which file, when it calls: exit 2,
		# the task a retry that was never sent.
		sr-claim >"$T/claimed"
		[ -s "$T/claimed" ]
		run -2 --separate-stderr sr-exec <"$T/claimed"
		[[ $stderr == *"'$path'"* ]] || { echo "$stderr"; false; }
		assert_equal "$(jq -r '[.outcome, .class] | join(" ")' <<<"$output")" 'retry not_sent'
		[ ! -s "$T/gw.log" ] # (nothing reached the carrier)
		sr-confirm <<<"$output" >/dev/null
		run -0 sr-admin retry K1 --reason 'token fixed'
	done
	# The same run with the token readable calls the carrier with it.
	export SRQ_GATEWAY_TOKEN_FILE="$T/gw.token.real"
	assert_equal "$(secret_state SRQ_GATEWAY_TOKEN_FILE)" readable
	drain 10 >/dev/null
	assert_equal "$(jq -r 'select(.card == "K1") | .code' "$T/gw.log" | head -1)" OK
}

@test "sr-admin config with the srq.conf of docs/operations.md and no token file prints every setting, the token marked, exit 0" {
	[ ! -e /etc/srq/gateway.token ] || skip "this machine has /etc/srq/gateway.token"
	sed -n '/^# \/etc\/srq\/srq.conf$/,/^```$/p' "$PROJECT_ROOT/docs/operations.md" | grep -v '^```' >"$BATS_TEST_TMPDIR/srq.conf"
	grep -q '^SRQ_GATEWAY_TOKEN_FILE = /etc/srq/gateway.token$' "$BATS_TEST_TMPDIR/srq.conf"
	export SRQ_CONFIG="$BATS_TEST_TMPDIR/srq.conf"
	unset SRQ_REDIS
	run -0 --separate-stderr sr-admin config
	assert_line '{"setting":"SRQ_GATEWAY_TOKEN_FILE","value":"/etc/srq/gateway.token","from":"'"$SRQ_CONFIG"':4","secret":"missing: No such file or directory"}'
	assert_line '{"setting":"SRQ_REDIS","value":"unix:///run/redis/redis.sock","from":"'"$SRQ_CONFIG"':2"}'
	assert_line '{"setting":"SRQ_REDIS_PASSWORD","value":"","from":"default","secret":"not set"}'
	assert_line --partial '"setting":"SRQ_UNLIMITED"' # (the last)
	[ -z "$stderr" ]
	# A token that is readable is said to be, and never shown.
	TOKEN="tok-$RANDOM-s3cr3t"
	echo "$TOKEN" >"$BATS_TEST_TMPDIR/gw.token"
	SRQ_GATEWAY_TOKEN_FILE="$BATS_TEST_TMPDIR/gw.token" run -0 sr-admin config
	assert_equal "$(jq -r 'select(.setting == "SRQ_GATEWAY_TOKEN_FILE") | .secret' <<<"$output")" readable
	refute_output --partial "$TOKEN"
	SRQ_CONFIG= SRQ_GATEWAY_TOKEN="$TOKEN" run -0 sr-admin config
	assert_line '{"setting":"SRQ_GATEWAY_TOKEN","value":"(set, redacted)","from":"environment","secret":"set"}'
	refute_output --partial "$TOKEN"
	: >"$BATS_TEST_TMPDIR/gw.token"
	SRQ_GATEWAY_TOKEN_FILE="$BATS_TEST_TMPDIR/gw.token" run -0 sr-admin config
	assert_equal "$(jq -r 'select(.setting == "SRQ_GATEWAY_TOKEN_FILE") | .secret' <<<"$output")" empty
}

@test "Redis's password file unreadable: sr-admin config says so and prints the rest; a tool that talks to Redis stops, exit 2" {
	export SRQ_REDIS_PASSWORD_FILE="$BATS_TEST_TMPDIR/no/such/redis.pw"
	run -0 --separate-stderr sr-admin config
	assert_equal "$(jq -r 'select(.setting == "SRQ_REDIS_PASSWORD_FILE") | .secret' <<<"$output")" \
		'missing: No such file or directory'
	assert_line --partial '"setting":"SRQ_QPS"'
	run -2 --separate-stderr sr-stat
	[[ $stderr == *"SRQ_REDIS_PASSWORD_FILE"*"no/such/redis.pw"* ]] || { echo "$stderr"; false; }
	run -2 --separate-stderr sr-claim
	[[ $stderr == *"SRQ_REDIS_PASSWORD_FILE"* ]]
}

# bats test_tags=own-redis
@test "as nobody, with the token file root's and mode 600: why, stat and config run; sr-exec says Permission denied" {
	[ "$(id -u)" = 0 ] || skip "drops to nobody: needs root"
	command -v setpriv >/dev/null || skip "no setpriv"
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	# A Redis nobody can reach (the test's socket is in a directory only
	# root enters), and a token file in a directory nobody may enter but
	# not read: the operator's case exactly.
	tcp_redis "$T/tcp"
	export SRQ_REDIS="redis://127.0.0.1:$PORT"
	echo "tok-$RANDOM-s3cr3t" >"$T/gw.token.real"
	gwsim_start --token-file "$T/gw.token.real"
	PUB=$(mktemp -d)
	chmod 711 "$PUB"
	cp "$T/gw.token.real" "$PUB/gateway.token"
	chmod 600 "$PUB/gateway.token"
	export SRQ_GATEWAY_TOKEN_FILE="$PUB/gateway.token"
	as_nobody() { (cd / && setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups "$@"); }
	as_nobody cat "$PUB/gateway.token" && fail "nobody can read the token: the test proves nothing"
	card_queued
	run -0 as_nobody sr-admin why K1
	assert_equal "$(jq -r .card <<<"$output")" K1
	run -0 as_nobody sr-stat --table
	run -0 --separate-stderr as_nobody sr-admin config
	assert_equal "$(jq -r 'select(.setting == "SRQ_GATEWAY_TOKEN_FILE") | .secret' <<<"$output")" \
		'unreadable: Permission denied'
	sr-claim >"$T/claimed"
	run -2 --separate-stderr as_nobody sr-exec <"$T/claimed"
	[[ $stderr == *"$PUB/gateway.token"*"Permission denied"* ]] || { echo "$stderr"; false; }
	run grep -c . "$T/gw.log"
	assert_output 0
}
