#!/usr/bin/env bats
# redis_layout.bats - every Redis key a test names is one the documented
# layout names (the table "Redis layout (for operators with `redis-cli`)",
# in README.md or docs/*.md): a test that reads a key srq never writes
# checks nothing (an empty key is 0 for ZCARD, nil for HGET), and passes
# whatever srq does. tests/helpers/layoutkeys does the check.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	T="$BATS_TEST_TMPDIR"
}

# layout_section FILE: the layout's section of FILE, heading and table.
layout_section() {
	awk '/^#+ Redis layout \(for operators with `redis-cli`\)/ { p = 1; print; next }
		p && /^#+ / { exit } p' "$1"
}

@test "every Redis key the suites and test_helper name is in the documented layout" {
	# (the keys it lists first: the exit status says less)
	run layoutkeys "$PROJECT_ROOT"
	assert_output ''
	assert_success
}

@test "the check fails on a key the layout does not name, listing it: a claim's set is sr_running, not running" {
	printf '%s\n' \
		'	assert_equal "$(rcli ZCARD "$SRQ_PREFIX:carrier:{cmcc-1}:running")" 0' \
		"	assert_equal \"\$(rcli ZCARD 't:carrier:{c1}:sr_running')\" 0" \
		"	rcli HGET 't:carrier:{c1}:idle:' G6" \
		"	rcli HGETALL \"t:carrier:{\$a}:card:\$c\"" \
		"	rcli ZCARD 't:carrier:{c1}:stop_resume:bulk'" \
		"	rcli HGETALL t:card:X1:fact" >"$T/suite.bats"
	run -1 layoutkeys "$PROJECT_ROOT" "$T/suite.bats"
	assert_line --partial 'suite.bats:1: $SRQ_PREFIX:carrier:{cmcc-1}:running is not in the Redis layout'
	assert_line --partial 'suite.bats:6: t:card:X1:fact is not in the Redis layout'
	assert_equal "${#lines[@]}" 2
}

@test "the layout is read where it is: README.md, or a page of docs/ once it moves there" {
	mkdir -p "$T/root/docs"
	layout_section "$PROJECT_ROOT/README.md" >"$T/layout.md"
	# (README.md may have lost it already: then it is in docs/)
	[ -s "$T/layout.md" ] || cat "$PROJECT_ROOT"/docs/*.md | layout_section /dev/stdin >"$T/layout.md"
	grep -q '`P:carrier:{c}:sr_running`' "$T/layout.md"
	printf '%s\n' "	rcli ZCARD 't:carrier:{c1}:sr_running'" >"$T/good.bats"
	printf '%s\n' "	rcli ZCARD 't:carrier:{c1}:after_only'" >"$T/after.bats"
	# In docs/redis.md, README.md without it; a row under the next heading
	# is not the layout's.
	printf '# srq\n\nSee docs/redis.md.\n' >"$T/root/README.md"
	{ echo '# Redis'; cat "$T/layout.md"; echo '## After'; echo '| `P:carrier:{c}:after_only` | x | y |'; } \
		>"$T/root/docs/redis.md"
	run -0 layoutkeys "$T/root" "$T/good.bats"
	run -1 layoutkeys "$T/root" "$T/after.bats"
	assert_output --partial "after.bats:1: t:carrier:{c1}:after_only is not in the Redis layout (docs/redis.md)"
	# A heading of another level is the same heading.
	sed -i 's/^## Redis layout/# Redis layout/' "$T/root/docs/redis.md"
	run -0 layoutkeys "$T/root" "$T/good.bats"
	# No file holds the table: the check fails, saying so.
	rm "$T/root/docs/redis.md"
	run -1 layoutkeys "$T/root" "$T/good.bats"
	assert_output --partial 'no "Redis layout (for operators with `redis-cli`)" table'
}
