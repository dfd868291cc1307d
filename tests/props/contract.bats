#!/usr/bin/env bats
# contract.bats - the outside contracts users script against: the common
# flags, the records on stdout and the exit codes every tool shares.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	gwsim_start
}

# A port nothing listens on: the gateway is down.
dead_gateway() {
	echo "http://127.0.0.1:1"
}

@test "sr-enqueue takes --gateway, the common flag: the direct path calls that gateway" {
	sr-admin switch off --reason test >/dev/null
	local gw=$SRQ_GATEWAY
	SRQ_GATEWAY=$(dead_gateway) run -0 --separate-stderr sr-enqueue --gateway "$gw" < <(request G1)
	assert_equal "$(jq -r .status <<<"$output")" direct_ok
	assert_equal "$(jq -r .kind "$T/gw.log")" stop
}

@test "sr-enqueue --gateway that is not an http(s) URL is a usage error, the URL's secrets not shown" {
	run -2 --separate-stderr sr-enqueue --gateway "ftp://ops:s3cret@gw.example/" < <(request G2)
	assert_output ''
	[[ $stderr == *"--gateway"* ]]
	[[ $stderr != *s3cret* ]]
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:stop_resume')" 0
}

@test "sr-exec with the gateway unreachable: every task answered retry/not_sent, exit 3" {
	request X1 | sr-enqueue >/dev/null
	request X2 | sr-enqueue >/dev/null
	sr-claim >"$T/tasks"
	SRQ_GATEWAY=$(dead_gateway) run -3 --separate-stderr sr-exec <"$T/tasks"
	assert_equal "$(echo "$output" | wc -l)" 2
	assert_equal "$(jq -r '.outcome + " " + .class' <<<"$output" | sort -u)" "retry not_sent"
	[[ $stderr == *gateway* ]]
	# Nothing was lost: the results finish as requeued.
	run -0 sr-confirm <<<"$output"
	assert_equal "$(jq -r .state <<<"$output" | sort -u)" requeued
}

@test "sr-exec: one account's gateway unreachable is exit 3 naming that account; the others' calls go" {
	PROFILE_NAME=dead profiles 'from = default' 'accounts = c2' "base = $(dead_gateway)"
	request X4 | sr-enqueue >/dev/null
	request X5 | sed 's/"c1"/"c2"/' | sr-enqueue >/dev/null
	sr-claim >"$T/tasks"
	run -3 --separate-stderr sr-exec <"$T/tasks"
	assert_equal "$(jq -r 'select(.carrier == "c1") | .outcome' <<<"$output")" ok
	assert_equal "$(jq -r 'select(.carrier == "c2") | .outcome + " " + .class' <<<"$output")" "retry not_sent"
	[[ $stderr == *"account c2: its gateway is unavailable"* ]]
	[[ $stderr != *"account c1"* ]]
}

@test "sr-exec: calls whose request cannot be built (a secret file missing) are a configuration error, exit 2, not the gateway" {
	PROFILE_NAME=nokey profiles 'from = default' 'accounts = c2' "secret.key = file:$T/no-such-key" \
		'header = X-Key: {key}'
	request X7 | sed 's/"c1"/"c2"/' | sr-enqueue >/dev/null
	sr-claim >"$T/tasks"
	run -2 --separate-stderr sr-exec <"$T/tasks"
	assert_equal "$(jq -r '.outcome + " " + .class' <<<"$output")" "retry not_sent"
	[[ $stderr == *"account c2: a configuration error"*"sr-admin profile c2"* ]]
	[[ $stderr != *"gateway is unavailable"* ]]
	# Nothing reached the carrier, and nothing was lost.
	[ ! -s "$T/gw.log" ] || assert_equal "$(jq -r .card "$T/gw.log" | grep -c X7)" 0
	run -0 sr-confirm <<<"$output"
	assert_equal "$(jq -r .state <<<"$output")" requeued
}

@test "sr-admin audit: every entry names its account, as every record does" {
	request X6 | sr-enqueue >/dev/null
	run -0 sr-admin audit X6
	assert_equal "$(jq -r .carrier <<<"$output" | sort -u)" c1
	run -0 sr-admin audit --account c1
	assert_equal "$(jq -r .carrier <<<"$output" | sort -u)" c1
}

@test "sr-exec with the gateway up: exit 0" {
	request X3 | sr-enqueue >/dev/null
	sr-claim >"$T/tasks"
	run -0 --separate-stderr sr-exec <"$T/tasks"
	assert_equal "$(jq -r .outcome <<<"$output")" ok
}

@test "sr-confirm with Redis down: every result answered with \"status\":\"error\" (and its state), exit 3" {
	request Y1 | sr-enqueue >/dev/null
	request Y2 | sr-enqueue >/dev/null
	sr-claim | sr-exec >"$T/results"
	SRQ_REDIS="unix://$T/none.sock" run -3 --separate-stderr sr-confirm <"$T/results"
	assert_equal "$(echo "$output" | wc -l)" 2
	assert_equal "$(jq -r '.status + " " + .state' <<<"$output" | sort -u)" "error error"
	assert_equal "$(jq -r .card <<<"$output" | sort | tr '\n' ' ')" "Y1 Y2 "
}

@test "srq-drain with the gateway unreachable exits 3 (a backend down), its commands still queued" {
	request Z1 | sr-enqueue >/dev/null
	SRQ_GATEWAY=$(dead_gateway) SRQ_DRAIN_FOR=1 SRQ_LOCK="$T/drain.lock" \
		run -3 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	[[ $stderr == *"failed stages: exec 3"* ]]
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:stop_resume')" 1
}
