#!/usr/bin/env bats
# cron.bats - the cron wrapper: runs the pipeline once at a time, bounded.

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	srq_setup
	gwsim_start
	export SRQ_LOCK="$T/drain.lock" SRQ_DRAIN_FOR=2
}

teardown() {
	srq_teardown
}

@test "srq-drain runs the pipeline under a lock and reports failed stages" {
	printf '{"card":"R1","carrier":"c1","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' | sr-enqueue >/dev/null
	# A second run while the first holds the lock leaves at once.
	"$PROJECT_ROOT/cron/srq-drain" &
	first=$!
	sleep 0.5
	run -0 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	[[ $stderr == *"another run holds"* ]]
	wait "$first"
	assert_equal "$(jq -r .code "$T/gw.log")" OK
	# Redis gone: the failure is reported, not swallowed.
	redis_stop
	run -1 --separate-stderr "$PROJECT_ROOT/cron/srq-drain"
	[[ $stderr == *"failed stages: claim 3"* ]]
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
}
