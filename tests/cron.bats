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
