#!/usr/bin/env bats
# install.bats - what an operator installs: `make install` putting the
# production tools, the cron wrappers, the man pages, the completion, the
# docs, the Prometheus rules and Grafana dashboard and the example carrier
# profiles where a packager expects them, with sr-gwsim apart and nothing
# the tools do not read. (The
# pages and the completion themselves: tests/tools/man.bats.)

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	T="$BATS_TEST_TMPDIR"
	TOOLS=$(make_list prod-tools)
	SCRIPTS=$(make_list scripts)
}

@test "make install: production tools and cron wrappers in bin, sr-gwsim apart, pages, completion, docs, rules, dashboard and example profiles, no Lua" {
	make -s -C "$PROJECT_ROOT" install DESTDIR="$T/root" PREFIX=/usr >/dev/null
	cd "$T/root/usr"
	for t in $TOOLS $SCRIPTS; do
		[ -x "bin/$t" ] || { echo "bin/$t missing"; false; }
		[ -s "share/man/man1/$t.1" ] || { echo "man page of $t missing"; false; }
		[ "$(readlink "share/bash-completion/completions/$t")" = srq ] || { echo "completion of $t"; false; }
	done
	[ ! -e bin/sr-gwsim ]
	[ -x lib/srq/sr-gwsim ]
	# What the wrappers share, apart, and each told where it will be.
	[ -s lib/srq/srq-lib.sh ]
	for t in $SCRIPTS; do grep -q '^\[ -r "$lib" \] || lib=/usr/lib/srq/srq-lib.sh$' "bin/$t"; done
	[ -s share/doc/srq/README.md ]
	# The docs beside it, where its links point.
	for f in "$PROJECT_ROOT"/docs/*.md; do
		cmp "$f" "share/doc/srq/docs/${f##*/}" || { echo "doc ${f##*/} not installed"; false; }
	done
	[ -s share/doc/srq/crontab.example ]
	# The monitoring's files, and the rules' tests run where they landed.
	[ -s share/srq/prometheus/srq.rules.yml ]
	[ -s share/srq/grafana/srq.json ]
	# The example carrier profiles and their recorded answers.
	for f in "$PROJECT_ROOT"/share/profiles/*.profile "$PROJECT_ROOT"/share/profiles/*.test.jsonl; do
		cmp "$f" "share/srq/profiles/${f##*/}" || { echo "profile ${f##*/} not installed"; false; }
	done
	if command -v promtool >/dev/null; then
		(cd share/srq/prometheus && promtool test rules srq.rules.test.yml)
	fi
	run find . -name '*.lua'
	assert_output ''
	# What is installed runs from there, man page and all.
	run -0 bin/sr-claim --version
	# A profile of the operator's starts from an installed example: the
	# installed tools find it beside themselves, with no copy in SRQ_PROFILES.
	mkdir "$T/profiles"
	printf '%s\n' 'from = cisco' 'accounts = cu-*' 'qps = 2' >"$T/profiles/cu.profile"
	SRQ_PROFILES="$T/profiles" run --separate-stderr bin/sr-admin profile cu-1
	assert_equal "$(jq -c '[.profile, .limits.qps, .limits.max_inflight, .requests.stop.method]' <<<"$output")" \
		'["cu",2,1,"PUT"]'
	printf '%s\n' 'from = nosuch' 'accounts = x-*' >"$T/profiles/x.profile"
	SRQ_PROFILES="$T/profiles" run -2 bin/sr-admin profile x-1
	assert_output --partial "from: no profile 'nosuch' in $T/profiles, nor in the installed examples ($(pwd -P)/bin/../share/srq/profiles)"
	MANWIDTH=80 run -0 man -l share/man/man1/srq-drain.1
	assert_line --regexp '^ +srq-drain (—|-+) the claim, exec and confirm pipeline'
}
