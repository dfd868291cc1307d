#!/usr/bin/env bats
# install.bats - what an operator installs: bash completion, and `make
# install` putting the production tools, the cron wrappers, the man pages,
# the completion, the docs and the Prometheus rules and Grafana dashboard
# where a packager expects them, with sr-gwsim apart and nothing the tools do
# not read. (The man pages themselves: tests/man.bats.)

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	T="$BATS_TEST_TMPDIR"
	TOOLS="sr-enqueue sr-claim sr-exec sr-confirm dev-eval sr-asset sr-stat sr-admin sr-sweep sr-rate"
	SCRIPTS="srq-drain srq-expiry-scan"
}

@test "bash completion loads without errors and completes tools, sr-admin's commands and flags" {
	run -0 --separate-stderr bash -c ". '$PROJECT_ROOT/share/bash-completion/srq' && complete -p sr-admin srq-drain"
	[ -z "$stderr" ]
	assert_line --partial '_srq sr-admin'
	complete_words() { # complete_words WORD...: what TAB offers for the last word
		bash -c '. "$1/share/bash-completion/srq"; shift
			COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _srq "$1"; echo "${COMPREPLY[*]}"' _ "$PROJECT_ROOT" "$@"
	}
	assert_equal "$(complete_words sr-admin re)" "resume retry"
	assert_equal "$(complete_words sr-admin --reason 'gateway fixed' sw)" "switch"
	assert_equal "$(complete_words sr-admin switch o)" "on off"
	assert_equal "$(complete_words sr-admin list c1 --state fr)" "frozen"
	assert_equal "$(complete_words sr-claim --until)" "--until-empty"
	assert_equal "$(complete_words sr-enqueue --scene device_)" "device_package_expired"
	assert_equal "$(complete_words sr-sweep --grace-h)" "--grace-high"
	assert_equal "$(complete_words sr-gwsim --profile c)" "cisco ctcmp"
}

@test "make install: production tools and cron wrappers in bin, sr-gwsim apart, pages, completion, docs, rules and dashboard, no Lua" {
	make -s -C "$PROJECT_ROOT" install DESTDIR="$T/root" PREFIX=/usr >/dev/null
	cd "$T/root/usr"
	for t in $TOOLS $SCRIPTS; do
		[ -x "bin/$t" ] || { echo "bin/$t missing"; false; }
		[ -s "share/man/man1/$t.1" ] || { echo "man page of $t missing"; false; }
		[ "$(readlink "share/bash-completion/completions/$t")" = srq ] || { echo "completion of $t"; false; }
	done
	[ ! -e bin/sr-gwsim ]
	[ -x lib/srq/sr-gwsim ]
	[ -s share/doc/srq/README.md ]
	[ -s share/doc/srq/crontab.example ]
	# The monitoring's files, and the rules' tests run where they landed.
	[ -s share/srq/prometheus/srq.rules.yml ]
	[ -s share/srq/grafana/srq.json ]
	if command -v promtool >/dev/null; then
		(cd share/srq/prometheus && promtool test rules srq.rules.test.yml)
	fi
	run find . -name '*.lua'
	assert_output ''
	# What is installed runs from there, man page and all.
	run -0 bin/sr-claim --version
	MANWIDTH=80 run -0 man -l share/man/man1/srq-drain.1
	assert_line --regexp '^ +srq-drain (—|-+) the claim, exec and confirm pipeline'
}
