#!/usr/bin/env bats
# cron.bats - the cron wrappers: srq-drain runs the pipeline once at a time,
# bounded, says what needs a human (and only that) on stdout, and finds its
# tools beside it; the expiry scan.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	gwsim_start
	export SRQ_LOCK="$T/drain.lock" SRQ_DRAIN_FOR=2 SRQ_STATE_DIR="$T/state"
}

@test "srq-drain runs the pipeline under a lock and reports failed stages" {
	printf '{"card":"R1","carrier":"c1","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' | sr-enqueue >/dev/null
	# A second run while the first holds the lock leaves at once.
	"$PROJECT_ROOT/cron/srq-drain" 2>"$T/first.log" &
	first=$!
	sleep 0.5
	run -0 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	[[ $stderr == *"another run holds"* ]]
	wait "$first"
	assert_equal "$(jq -r .code "$T/gw.log")" OK
	# One timestamped summary line, per account too.
	run cat "$T/first.log"
	assert_output --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z srq-drain: claimed=1 cards=1 done=1 requeued=0 confirming=0 alerted=0 frozen=0 failed=0 errors=0 accepted=0 \| c1: claimed=1 cards=1 done=1'
	# Redis gone: the failure is reported, not swallowed.
	redis_stop
	run -3 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	[[ $stderr == *"failed stages: claim 3"* ]]
}

@test "srq-drain exits 3 when Redis fails a later stage, 1 when a later stage dies" {
	printf '{"card":"R%d","carrier":"c1","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' 1 2 |
		sr-enqueue >/dev/null
	# Redis goes away after the claim stage finished: sr-confirm meets it.
	mkdir "$T/wrap"
	printf '#!/bin/sh\ncat >"%s/results"\nSRQ_REDIS=unix://%s/none.sock exec "%s/sr-confirm" <"%s/results"\n' \
		"$T" "$T" "$SRQ_BIN" "$T" >"$T/wrap/sr-confirm"
	chmod +x "$T/wrap/sr-confirm"
	PATH="$T/wrap:$PATH" run -3 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	[[ $stderr == *"failed stages: confirm 3"* ]]
	# sr-exec dies at once: sr-claim, whose reader is gone, exits 3, but
	# Redis is fine: the last stage that failed says so. (sr-claim starts
	# late, so that it writes after its reader died.)
	rm "$T/wrap/sr-confirm"
	printf '{"card":"R%d","carrier":"c1","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' 3 4 |
		sr-enqueue >/dev/null
	printf '#!/bin/sh\nkill -9 $PPID\n' >"$T/wrap/sr-exec"
	printf '#!/bin/sh\nsleep 0.5\nexec "%s/sr-claim" "$@"\n' "$SRQ_BIN" >"$T/wrap/sr-claim"
	chmod +x "$T/wrap/sr-exec" "$T/wrap/sr-claim"
	PATH="$T/wrap:$PATH" run -1 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	[[ $stderr == *"failed stages: claim 3, exec (no status)"* ]]
}

@test "srq-drain refuses an SRQ_DRAIN_FOR that is not whole seconds, and a stage that left no status fails the run" {
	printf '{"card":"F1","carrier":"c1","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' | sr-enqueue >/dev/null
	for v in 1m 55s abc -5 1.5 ' 5' 99999999999999999999; do
		SRQ_DRAIN_FOR=$v run -2 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
		[[ $stderr == *"SRQ_DRAIN_FOR must be whole seconds"*"'$v'"* ]]
	done
	# Nothing was claimed or called.
	assert_equal "$(wc -l <"$T/gw.log")" 0
	# A stage whose shell died leaves no status: that is a failure, not success.
	mkdir "$T/wrap"
	printf '#!/bin/sh\ncat >/dev/null\nkill -9 $PPID\n' >"$T/wrap/sr-exec"
	chmod +x "$T/wrap/sr-exec"
	PATH="$T/wrap:$PATH" run -1 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	[[ $stderr == *"failed stages: exec (no status)"* ]]
	assert_equal "$(wc -l <"$T/gw.log")" 0
}

@test "srq-drain with the carrier failing every call exits non-zero and names the account" {
	export SRQ_MIN_INTERVAL_MS=0 SRQ_FREEZE_AFTER=100 SRQ_ALERT_AFTER=100
	GW_INTERVAL_MS=0
	# (a breaker that does not open: then the account is held, exit 4)
	profiles 'from = default' 'accounts = *' 'breaker_failures = 1000'
	gwsim_start --fail-account c2
	for c in c1 c2; do
		for i in 1 2 3; do
			printf '{"card":"%s-%d","carrier":"%s","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' "$c" "$i" "$c"
		done
	done | sr-enqueue >/dev/null
	run -1 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	[[ $stderr == *"c1: claimed=3 cards=3 done=3"* ]]
	[[ $stderr == *"c2: claimed="*" cards=3 done=0 "* ]]
	[[ $stderr == *"no progress for: c2"* ]]
	# Said on stdout too, for a human: the problem first, then the summary.
	assert_line --index 0 "srq-drain: no progress for: c2 (every call failed; see sr-admin why, sr-admin alerts)"
	assert_line --index 1 --partial "c2: claimed="
	# Nothing was left leased: every claim ended (requeued for later).
	assert_equal "$(rcli ZCARD 't:carrier:{c2}:sr_running')" 0
}

@test "srq-drain does not page for a run whose calls the carrier accepted, throttled ones beside them" {
	# An asynchronous carrier: every change accepted, applied long after
	# the run; a third of the calls refused for rate first.
	gwsim_start --async-ms 600000 --fault-429 0.3 --retry-after 1 --seed 7
	for i in 1 2 3 4 5 6; do
		printf '{"card":"A%d","carrier":"c1","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' "$i"
	done | sr-enqueue >/dev/null
	run -0 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	[[ $stderr == *"c1: claimed="*" done=0 "* ]]
	[[ $stderr =~ c1:\ .*accepted=[1-6] ]]
	[[ $stderr != *"no progress"* ]]
}

# The command of a crontab.example entry, as cron would run it.
crontab_command() {
	grep -v '^#' "$PROJECT_ROOT/cron/crontab.example" | grep -- "$1" | head -1 | cut -d' ' -f6-
}

@test "the expiry scan from its crontab line stops expired cards, paused polling included; a second run is harmless" {
	now=$(date +%s)
	# The export: expired cards, one with polling paused, quoted like psql --csv.
	printf 'card,carrier,pkg_expires_at,polling_paused\n' >"$T/expired.csv"
	for i in 1 2 3 4 5; do printf 'E%d,c%d,%d,%d\n' "$i" $((i % 2)) $((now - 600)) $((i == 3)) >>"$T/expired.csv"; done
	printf '"E6","c1","%d","1"\n' $((now - 600)) >>"$T/expired.csv"
	export SRQ_EXPIRY_CSV="$T/expired.csv" SRQ_EXPIRY_LOCK="$T/scan.lock" SRQ_LOG_DIR="$T"
	unset SRQ_EXPIRY_CMD
	PATH="$PROJECT_ROOT/cron:$PATH"
	cmd=$(crontab_command srq-expiry-scan)
	[ -n "$cmd" ]
	run -0 sh -c "$cmd"
	grep -q 'queued 6' "$T/expiry-scan.log"
	run -0 drain 20
	assert_equal "$(jq -r 'select(.kind == "stop" and .code == "OK") | .card' "$T/gw.log" | sort | tr '\n' ' ')" \
		"E1 E2 E3 E4 E5 E6 "
	# Again, with the same export: nothing new is queued or called.
	run -0 sh -c "$cmd"
	grep -q 'noop 6' "$T/expiry-scan.log"
	run -0 drain 20
	assert_equal "$(wc -l <"$T/gw.log")" 6
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "the expiry scan reports a bad line and exits non-zero; unconfigured is exit 2" {
	printf 'card,carrier,pkg_expires_at\nE1,c1,1\nE 2,c1,1\n' >"$T/bad.csv"
	SRQ_EXPIRY_CSV="$T/bad.csv" SRQ_EXPIRY_LOCK="$T/scan.lock" \
		run -1 --separate-stderr "$PROJECT_ROOT/cron/srq-expiry-scan"
	[[ $stderr == *'failed: {"line":3'* ]]
	[[ $stderr == *'queued 1, rejected 1'* ]]
	run -2 env -u SRQ_EXPIRY_CSV -u SRQ_EXPIRY_CMD "$PROJECT_ROOT/cron/srq-expiry-scan"
	# Any file name works, quotes included; a lock that cannot be opened is
	# said plainly (exit 2: configuration).
	cp "$T/bad.csv" "$T/it's bad.csv"
	SRQ_EXPIRY_CSV="$T/it's bad.csv" SRQ_EXPIRY_LOCK="$T/scan.lock" \
		run -1 --separate-stderr "$PROJECT_ROOT/cron/srq-expiry-scan"
	[[ $stderr == *'rejected 1, unchanged 1'* ]] # (E1 was queued by the first run)
	SRQ_EXPIRY_CSV="$T/bad.csv" SRQ_EXPIRY_LOCK="$T/no/such/dir/scan.lock" \
		run -2 --separate-stderr "$PROJECT_ROOT/cron/srq-expiry-scan"
	[[ $stderr == *"cannot open the lock file '$T/no/such/dir/scan.lock' (SRQ_EXPIRY_LOCK)"* ]]
	SRQ_LOCK="$T/no/such/dir/drain.lock" run -2 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	[[ $stderr == *"cannot open the lock file '$T/no/such/dir/drain.lock' (SRQ_LOCK)"* ]]
}

@test "the README's cron one-liner stops claiming at --for and leaves no lease behind, even with slow calls" {
	gwsim_start --slow-ms 1500
	for i in $(seq 10); do
		printf '{"card":"L%d","carrier":"c1","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' "$i"
	done | sr-enqueue >/dev/null
	flock -n "$T/drain.lock" sr-claim --follow --for 1 | sr-exec | sr-confirm >"$T/finals"
	# Whatever was claimed was called and confirmed; nothing is still leased.
	assert [ "$(wc -l <"$T/finals")" -gt 0 ]
	assert_equal "$(jq -r .state "$T/finals" | sort -u)" done
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:sr_running')" 0
	assert_equal "$(wc -l <"$T/gw.log")" "$(wc -l <"$T/finals")"
}

@test "srq-drain says an open breaker or a pause in its summary and on stdout, exit 4; a good run says nothing on stdout" {
	export SRQ_MIN_INTERVAL_MS=0
	GW_INTERVAL_MS=0
	gwsim_start
	stop_backlog 2 c1
	run -0 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	assert_output ''
	[[ $stderr == *"c1: claimed=2 cards=2 done=2"* ]]
	# c2's carrier fails every call: its breaker opens; c3 is paused.
	profiles 'from = default' 'accounts = *' 'breaker_cooldown_ms = 600000'
	gw_set fail_account=c2
	stop_backlog 6 c2
	stop_backlog 2 c3 c4
	sr-admin pause c3 --reason "onboarding" >/dev/null
	# Before: exit 0, run after run, while the breaker held c2's work.
	run -4 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	[[ $stderr =~ \|\ held:\ c2\ breaker\ until\ [0-9-]{10}T[0-9:]{8}Z,\ c3\ paused\ until\ resumed ]]
	[[ $stderr == *"c4: claimed=2 cards=2 done=2"* ]]
	[[ $stderr != *"no progress"* ]]
	assert_line --index 0 "srq-drain: work held: c2 breaker, c3 paused: see sr-admin why"
	assert_line --index 1 --regexp '^claimed=.* \| held: c2 breaker until .*, c3 paused until resumed$'
	assert_equal "${#lines[@]}" 2
	# A pause alone, with an end: the same exit, its time said.
	sr-admin breaker c2 close --reason "carrier back" >/dev/null
	gw_set fail_account=
	sr-admin resume c3 --reason "live" >/dev/null
	sr-admin pause c3 --until 1h --reason "maintenance" >/dev/null
	run -4 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	assert_line --index 0 "srq-drain: work held: c3 paused: see sr-admin why"
	[[ $stderr =~ \|\ held:\ c3\ paused\ until\ [0-9-]{10}T[0-9:]{8}Z$'\n' ]]
}

@test "srq-drain: an account named like a word of the held summary (until) is not taken for held" {
	profiles 'from = default' 'accounts = *' 'breaker_failures = 100000'
	gwsim_start
	gw_set fail_account=until
	stop_backlog 2 until
	stop_backlog 1 c3
	sr-admin pause c3 --reason "onboarding" >/dev/null
	# Before: "c3 paused until resumed" held the word, and the failing
	# account's run was exit 4, not "no progress".
	run -1 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	assert_line --index 0 --partial "srq-drain: no progress for: until"
}

@test "srq-drain --follow runs run after run; SIGTERM ends the run under way, nothing leased, exit 0" {
	export SRQ_DRAIN_FOR=1
	gwsim_start --slow-ms 1500
	stop_backlog 20 c1
	"$PROJECT_ROOT/cron/srq-drain" --follow >"$T/out" 2>"$T/drain.log" &
	pid=$!
	# Two runs at least: two summaries.
	for i in $(seq 200); do [ "$(grep -c 'srq-drain: claimed=' "$T/drain.log")" -ge 2 ] && break; sleep 0.1; done
	assert [ "$(grep -c 'srq-drain: claimed=' "$T/drain.log")" -ge 2 ]
	# Stopped as systemd does (KillMode=mixed: srq-drain alone), calls in flight.
	for i in $(seq 100); do [ "$(rcli ZCARD 't:carrier:{c1}:sr_running')" -gt 0 ] && break; sleep 0.05; done
	kill -TERM "$pid"
	wait "$pid"
	# The run ended as at SRQ_DRAIN_FOR: what was claimed was called and
	# confirmed, nothing is left leased, and the stop is no failure.
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:sr_running')" 0
	assert_equal "$(jq -s '[.[] | select(.code == "OK")] | length' "$T/gw.log")" \
		"$(grep -o ' | c1: claimed=[0-9]* cards=[0-9]* done=[0-9]*' "$T/drain.log" | awk -F= '{ n += $NF } END { print n }')"
	assert_equal "$(cat "$T/out")" ''
	! grep -q 'failed stages' "$T/drain.log"
	# A run that fails ends it, with its status (systemd starts it again).
	SRQ_REDIS="unix://$T/none.sock" run -3 --separate-stderr "$PROJECT_ROOT/cron/srq-drain" --follow
}

@test "srq-drain --follow goes on while work is held, and pages it once, when it is news (SRQ_PAGE_NAME)" {
	export SRQ_DRAIN_FOR=1 SRQ_STATE_DIR="$T/state" SRQ_PAGE_NAME=srq-drain.service
	gwsim_start
	stop_backlog 2 c1
	stop_backlog 2 c3
	sr-admin pause c3 --until 1h --reason "onboarding" >/dev/null
	"$PROJECT_ROOT/cron/srq-drain" --follow >"$T/out" 2>"$T/drain.log" &
	pid=$!
	# Three runs, each with c3 held (before: the first ended it, exit 4,
	# and systemd started it again 5 s later, run after run).
	for i in $(seq 200); do [ "$(grep -c 'srq-drain: claimed=.*| held: c3 paused' "$T/drain.log")" -ge 3 ] && break; sleep 0.1; done
	assert [ "$(grep -c 'srq-drain: claimed=.*| held: c3 paused' "$T/drain.log")" -ge 3 ]
	kill -0 "$pid"
	# c1's work went on; the hold was paged once, not at every run.
	assert_equal "$(jq -s '[.[] | select(.code == "OK" and (.card | startswith("c1")))] | length' "$T/gw.log")" 2
	assert_equal "$(grep -c '^srq srq-drain.service: exit 4: srq-drain: work held: c3 paused' "$T/out")" 1
	# The pause ends: back to normal is said, once.
	sr-admin resume c3 --reason "live" >/dev/null
	for i in $(seq 200); do grep -q 'back to normal' "$T/out" && break; sleep 0.1; done
	kill -TERM "$pid"
	wait "$pid"
	assert_equal "$(grep -c '^srq srq-drain.service: back to normal' "$T/out")" 1
}

@test "the wrappers find their tools beside them under env -i PATH=/usr/bin:/bin, --version too" {
	gwsim_start
	stop_backlog 2 c1
	# As installed: the wrappers, what they share and the tools in one directory.
	mkdir "$T/bin"
	cp "$PROJECT_ROOT"/cron/srq-drain "$PROJECT_ROOT"/cron/srq-expiry-scan "$PROJECT_ROOT"/cron/srq-page \
		"$PROJECT_ROOT"/cron/srq-lib.sh "$T/bin/"
	for t in sr-claim sr-exec sr-confirm sr-enqueue sr-stat; do ln -s "$SRQ_BIN/$t" "$T/bin/$t"; done
	# (Before: every stage "not found", and --version failed the same way.)
	for t in srq-drain srq-expiry-scan srq-page; do
		run -0 env -i PATH=/usr/bin:/bin "$T/bin/$t" --version
		assert_output --regexp "^$t [0-9]+\.[0-9]+\.[0-9]+$"
	done
	env="SRQ_REDIS=$SRQ_REDIS SRQ_PREFIX=t SRQ_CONFIG= SRQ_GATEWAY=$SRQ_GATEWAY SRQ_LEASE_MS=$SRQ_LEASE_MS
		SRQ_GATEWAY_TIMEOUT_MS=$SRQ_GATEWAY_TIMEOUT_MS SRQ_LOCK=$T/drain.lock SRQ_DRAIN_FOR=1 SRQ_STATE_DIR=$T/state"
	run -0 --separate-stderr env -i PATH=/usr/bin:/bin $env "$T/bin/srq-page" drain "$T/bin/srq-drain"
	assert_output ''
	[[ $stderr == *"c1: claimed=2 cards=2 done=2"* ]]
	[[ $stderr != *"not found"* ]]
	printf 'card,carrier,pkg_expires_at\nX1,c1,1\n' >"$T/expired.csv"
	run -0 --separate-stderr env -i PATH=/usr/bin:/bin $env SRQ_EXPIRY_CSV="$T/expired.csv" \
		SRQ_EXPIRY_LOCK="$T/scan.lock" "$T/bin/srq-expiry-scan"
	[[ $stderr == *"queued 1"* ]]
}
