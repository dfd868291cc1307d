#!/usr/bin/env bats
# valgrind.bats - no leaks and no memory errors on the main paths, on the
# release build (the sanitizer build is what the other suites run).

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	V="valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=9"
	B="$PROJECT_ROOT/bin"
	export SRQ_MIN_INTERVAL_MS=0
	gwsim_start --fault-drop-after 0.2 --fault-5xx-after 0.1 --fault-429 0.1
}

@test "enqueue, claim, exec and confirm run clean under valgrind, faults included" {
	gen-sample "$T/s" 60 3 "$(date +%s)" "$SRQ_PREFIX"
	rcli <"$T/s/devices.redis" >/dev/null
	run -0 $V "$B/sr-enqueue" <"$T/s/requests.jsonl"
	run -1 $V "$B/sr-enqueue" <<<'{"card":"x y"}'
	run -0 bash -c "set -o pipefail; $V $B/sr-claim --until-empty --for 60 |
		$V $B/sr-exec | $V $B/sr-confirm >$T/finals"
	# It really did the work: calls, unknown results confirmed by queries.
	jq -s -e 'any(.[]; .kind == "status")' "$T/gw.log" >/dev/null
}
