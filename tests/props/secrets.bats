#!/usr/bin/env bats
# secrets.bats - the Redis password and the gateway token never appear in
# argv, stdout or stderr: they come from files or the environment only.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	T="$BATS_TEST_TMPDIR"
	REDIS_PW="redis-pw-$RANDOM-s3cr3t"
	GW_TOKEN="gw-token-$RANDOM-s3cr3t"
	redis_start --requirepass "$REDIS_PW"
	export REDISCLI_AUTH="$REDIS_PW"
	printf '%s\n' "$REDIS_PW" >"$T/redis.pw"
	printf '%s\n' "$GW_TOKEN" >"$T/gw.token"
	export SRQ_REDIS_PASSWORD_FILE="$T/redis.pw" SRQ_GATEWAY_TOKEN_FILE="$T/gw.token"
	gwsim_start --token-file "$T/gw.token" --latency-ms 300
}

@test "no secret in argv, stdout or stderr of a full run" {
	now=$(date +%s)
	for i in 1 2 3 4 5; do
		printf '{"card":"S%d","carrier":"c1","scene":"refund","facts":{"pkg_expires_at":%d,"refunded":1}}\n' "$i" "$now"
	done >"$T/in"
	sr-enqueue <"$T/in" >"$T/out" 2>"$T/err"
	( sr-claim --until-empty --for 20 | sr-exec | sr-confirm ) >>"$T/out" 2>>"$T/err" &
	pid=$!
	# Look at every process's argv while calls are in flight.
	for i in $(seq 10); do ps -eo args >>"$T/ps"; sleep 0.1; done
	wait "$pid"
	grep -q 'sr-exec' "$T/ps"
	# The run worked (the token was accepted)...
	assert_equal "$(jq -r 'select(.code == "OK") | .card' "$T/gw.log" | wc -l)" 5
	# ...and neither secret leaked anywhere we can see.
	run grep -l -e "$REDIS_PW" -e "$GW_TOKEN" "$T/ps" "$T/out" "$T/err"
	assert_output ''
}

@test "a wrong password is a clear error that does not echo it" {
	printf 'wrong-%s\n' "$REDIS_PW" >"$T/bad.pw"
	SRQ_REDIS_PASSWORD_FILE="$T/bad.pw" run -3 --separate-stderr sr-claim
	[[ $stderr == *"AUTH failed"* ]]
	[[ $stderr != *"$REDIS_PW"* ]]
}

@test "a password or token carried in SRQ_GATEWAY's URL is never printed" {
	export SRQ_GATEWAY="https://ops:$GW_TOKEN@gw.example/v1?token=$GW_TOKEN#$GW_TOKEN"
	run -0 --separate-stderr sr-admin config
	assert_equal "$(jq -r 'select(.setting == "SRQ_GATEWAY") | .value' <<<"$output")" \
		"https://ops:redacted@gw.example/v1?redacted"
	[[ $output != *"$GW_TOKEN"* && $stderr != *"$GW_TOKEN"* ]]
	# A token as the URL's user; Redis's password in its URL (refused by
	# every tool, but shown by config).
	SRQ_GATEWAY="https://$GW_TOKEN@gw.example/@v1" SRQ_REDIS="redis://:$GW_TOKEN@localhost:6379" \
		run -0 --separate-stderr sr-admin config
	assert_equal "$(jq -r 'select(.setting | test("SRQ_(GATEWAY|REDIS)$")) | .value' <<<"$output" | sort | paste -sd' ')" \
		"https://redacted@gw.example/@v1 redis://:redacted@localhost:6379/"
	run -2 --separate-stderr sr-exec --gateway "ftp://ops:$GW_TOKEN@gw.example/?k=$GW_TOKEN" </dev/null
	[[ $stderr == *"ftp://ops:redacted@gw.example/?redacted"* && $stderr != *"$GW_TOKEN"* ]]
}

@test "a password in the URL given by --redis is redacted by sr-admin config, as from the environment" {
	run -0 --separate-stderr sr-admin --redis "redis://u:$GW_TOKEN@localhost:6379/0?x=$GW_TOKEN" config
	assert_equal "$(jq -c 'select(.setting == "SRQ_REDIS") | [.value, .from]' <<<"$output")" \
		'["redis://u:redacted@localhost:6379/0?redacted","--redis"]'
	[[ $output != *"$GW_TOKEN"* && $stderr != *"$GW_TOKEN"* ]]
}

@test "profile secrets (a carrier password, an app secret) never appear in argv, output, audit or logs" {
	unset SRQ_GATEWAY_TOKEN_FILE
	gwsim_stop
	PW="carrier-pw-$RANDOM-s3cr3t"
	APP="app-secret-$RANDOM-s3cr3t"
	example_profile onelink "secret.app = env:ONELINK_APP_SECRET" "header = X-App: {app}"
	printf '%s\n' "$PW" >"$T/secrets/cmcc-1.password"
	printf '%s\n' "$PW" >"$T/pw"
	export ONELINK_APP_SECRET="$APP"
	gwsim_start --profile onelink --password-file "$T/pw" --latency-ms 300 --token-ttl-ms 1500
	for i in 1 2 3 4 5 6; do
		printf '{"card":"P%d","carrier":"cmcc-1","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' "$i"
	done | sr-enqueue >"$T/out" 2>"$T/err"
	( sr-claim --until-empty --for 30 | sr-exec | sr-confirm ) >>"$T/out" 2>>"$T/err" &
	pid=$!
	for i in $(seq 15); do ps -eo args >>"$T/ps"; sleep 0.1; done
	wait "$pid"
	sr-admin profile cmcc-1 >>"$T/out" 2>>"$T/err"
	sr-admin audit --account cmcc-1 >>"$T/out" 2>>"$T/err"
	sr-stat >>"$T/out" 2>>"$T/err"
	rcli --scan | while read -r k; do rcli DUMP "$k"; done >"$T/redis-dump" 2>/dev/null
	# It worked: every card stopped, through tokens fetched with the password.
	assert_equal "$(jq -s '[.[] | select(.applied)] | length' "$T/gw.log")" 6
	jq -s -e '[.[] | select(.kind == "token")] | length >= 1' "$T/gw.log"
	run grep -l -a -e "$PW" -e "$APP" "$T/ps" "$T/out" "$T/err" "$T/gw.log" "$T/redis-dump"
	assert_output ''
}

@test "a profile line that does not parse is named by its line and key, never by its value" {
	S="sk_live_$RANDOM"
	check() { # LINE EXPECTED: the profile with LINE on line 2 is refused with EXPECTED, without $S
		PROFILE_NAME=bad profiles 'from = default' "$1"
		run -2 --separate-stderr sr-admin profile any
		[[ $stderr == *"bad.profile: line 2: $2"* ]] || { echo "$stderr"; return 1; }
		[[ $stderr != *"$S"* ]] || { echo "leaked: $stderr"; return 1; }
	}
	check "header = Authorization Bearer $S" "header: the value is not 'Name: value'"
	check "$S" "not 'key = value' (the line is not shown)"
	# A token with base64 padding on a line with no key: its '=' makes it look like one.
	check "Authorization: Bearer $S==" "unknown key (not shown: it is not a key name)"
	check "sign = $S" "sign: the value is not md5, sha256 or hmac-sha256"
	check "secret.api $S = env:X" "secret.NAME: the name is not [a-z0-9_]{1,32} (not shown)"
	check "qps = $S" "qps: the value is not an integer from 1 to 100000"
	check "rule = http=200 $S" "rule: no '=> outcome'"
	check "rule = * => $S" "rule: the outcome is not one of ok already"
	check "stop.method = $S" "stop.method: the value is not GET, POST, PUT or PATCH"
	# A header's name is shown; its value is not.
	check "header = X-Api-Key: {nope} $S" "header: unknown placeholder {nope}"
	# The key is shown when it is a name.
	check "colour = $S" "unknown key 'colour'"
}
