#!/usr/bin/env bats
# help.bats - every tool answers --help (usage, exit codes, an example) on
# stdout with exit 0, --version, and a usage error with exit 2.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	T="$BATS_TEST_TMPDIR"
}

@test "every tool: --help, --version, and exit 2 on a bad flag" {
	for t in $(make_list tools); do
		run -0 "$t" --help
		[[ $output == *"usage: $t"* ]] || { echo "$t: no usage line"; false; }
		[[ $output == *"Exit:"* ]] || { echo "$t: no exit codes"; false; }
		[[ $output == *"xample"* ]] || { echo "$t: no example"; false; }
		run -0 "$t" --version
		assert_output --regexp "^$t [0-9]+\.[0-9]+\.[0-9]+$"
		run -2 "$t" --no-such-flag
	done
	run -0 sr-gwsim --help
	assert_output --partial 'usage: sr-gwsim'
	# The cron wrappers answer --help too, instead of running.
	for t in srq-drain srq-expiry-scan srq-page; do
		run -0 "$PROJECT_ROOT/cron/$t" --help
		assert_line --index 0 --regexp "^usage: $t( |\$)"
		assert_output --partial 'Exit:'
		run -0 "$PROJECT_ROOT/cron/$t" --version
		assert_output --regexp "^$t [0-9]+\.[0-9]+\.[0-9]+$"
		run -2 "$PROJECT_ROOT/cron/$t" --no-such-flag
	done
}

@test "sr-admin: an unknown command lists the commands; a wrong use prints its usage, before any Redis error" {
	export SRQ_REDIS=redis://127.0.0.1:1 # nothing listens: usage errors come first
	run -2 sr-admin nope
	assert_output --partial "unknown command 'nope'; the commands are: show why list retry"
	run -2 sr-admin
	assert_output --partial 'no command given'
	for cmd in show why list retry freeze drop limits pause resume breaker profile switch audit; do
		run -2 sr-admin "$cmd"
		assert_output --partial "usage: sr-admin $cmd "
	done
	run -2 sr-admin config extra
	assert_output --partial 'usage: sr-admin config'
	run -2 sr-admin sweep # an older crontab's line says where the sweep went
	assert_output --partial 'its own tool now: sr-sweep'
	run -3 sr-admin why X1 # a right use reaches Redis, which is down
	run -3 sr-admin retry --account c1 --reason r # and so does a bare form
	run -3 sr-admin audit --account c1
}

@test "sr-admin --table prints aligned columns for people" {
	redis_start
	printf '{"card":"W1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":1,"status":"active"}}\n' | sr-enqueue >/dev/null
	sr-admin freeze W1 --reason "table test" >/dev/null
	run -0 sr-admin audit W1 --table
	assert_line --index 0 --regexp '^card +ver_before +ver_after +event'
	assert_line --index 2 --partial 'admin:freeze'
	# The sentence an operator reads is whole, and last.
	run -0 sr-admin why W1 --table
	sentence=$(sr-admin why W1 | jq -r .why)
	[ "${#sentence}" -gt 64 ]
	assert_line --index 1 --regexp "  $(sed 's/[][().*^$\/|?+]/\\&/g' <<<"${sentence% (*}")"
	[[ ${lines[1]} == *"to unfreeze it: sr-admin retry W1 --carrier c1 --reason 'cause fixed'" ]]
	[[ ${lines[0]} == *"why" ]]
	# config and profile, which need no Redis, too (config printed nothing).
	run -0 sr-admin config --table
	assert_line --index 0 --regexp '^setting +value +from'
	assert_line --regexp '^SRQ_PREFIX +t +environment'
	[ "${#lines[@]}" -gt 10 ]
	run -0 sr-admin profile c1 --table
	assert_line --index 0 --regexp '^carrier +profile +file'
	assert_line --index 1 --regexp '^c1 +default '
}

@test "a synopsis names every option, and a cron wrapper's example runs as often as the crontab's line" {
	run -0 sr-asset --help
	assert_line --index 0 --partial '[--as-of TIME]'
	for t in srq-drain srq-expiry-scan; do
		when=$(grep -v '^#' "$PROJECT_ROOT/cron/crontab.example" | grep -- "$t" | head -1 | cut -d' ' -f1-5)
		run -0 "$PROJECT_ROOT/cron/$t" --help
		assert_output --partial "$when "
		[[ $(grep -A1 '^Example' <<<"$output" | tail -1) == "  $when "* ]]
	done
}
