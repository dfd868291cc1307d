#!/usr/bin/env bats
# demo.bats - the newcomer's command works end to end (on a smaller sample).

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	T="$BATS_TEST_TMPDIR"
}

# checkout_files: the files of the checkout as git sees them, untracked and
# ignored ones too, but make's (build/, bin/); outside git, every file.
checkout_files() {
	if git -C "$PROJECT_ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$PROJECT_ROOT" status --porcelain --ignored --untracked-files=all |
			grep -v -e '^!! build/' -e '^!! bin/' || true
	else
		(cd "$PROJECT_ROOT" && find . \( -path ./build -o -path ./bin \) -prune -o -print | sort)
	fi
}

@test "the demo runs, checks itself, and stops what it started" {
	checkout_files >"$T/before"
	# Everything it writes under SRQ_DEMO_DIR, nothing in the checkout.
	SRQ_DEMO_DIR="$T/demo" run -0 "$PROJECT_ROOT/scripts/demo.sh" 300 2
	assert_line --partial '0 interval violations, 0 rate violations, 300 of 300 cards in their judged state'
	assert_line --regexp '^  \* +0 +0 '
	assert_line --partial "logs and records in $T/demo/"
	# Nothing left running from the demo.
	[ ! -S "$T/demo/redis.sock" ] || ! redis-cli -s "$T/demo/redis.sock" PING
	# The checkout as it was: no file added (a socket, a sample, a log).
	checkout_files >"$T/after"
	run diff "$T/before" "$T/after"
	assert_output ''
}
