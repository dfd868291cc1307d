#!/usr/bin/env bats
# man.bats - the man pages are pages: each renders without a warning, with
# its sections in order and its examples one command a line, and lists every
# option its tool's --help lists; bash completion offers each tool's options
# and nothing the tool does not take.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	T="$BATS_TEST_TMPDIR"
	TOOLS=$(make_list tools)
	SCRIPTS=$(make_list scripts)
}

# tool_path NAME: the tool under test (a cron wrapper is run from cron/).
tool_path() {
	case $1 in
	srq-*) echo "$PROJECT_ROOT/cron/$1" ;;
	*) command -v "$1" ;;
	esac
}

# section NAME: the lines of the section NAME of the page rendered in $output.
section() {
	awk -v s="$1" '/^[A-Z]/ { on = ($0 == s); next } on' <<<"$output"
}

@test "every page renders without a warning, its sections in order, its examples one command a line" {
	make -s -C "$PROJECT_ROOT" man >/dev/null
	for t in $TOOLS $SCRIPTS; do
		page="$PROJECT_ROOT/build/man/$t.1"
		[ -s "$page" ] || { echo "no page for $t"; false; }
		# Any warning fails: troff's (man-db, groff), and mandoc's lint
		# where mandoc is installed (scripts/deps.sh installs it).
		MANWIDTH=80 run -0 --separate-stderr man --warnings=all -l "$page"
		[ -z "$stderr" ] || { echo "$t: $stderr"; false; }
		run -0 groff -mandoc -Tutf8 -ww -z "$page"
		[ -z "$output" ] || { echo "$t: $output"; false; }
		if command -v mandoc >/dev/null; then
			run mandoc -T lint -W warning "$page"
			[ -z "$output" ] || { echo "$t: $output"; false; }
		fi
		MANWIDTH=80 run -0 man -l "$page"
		# The sections, and no other: a line of text taken for a heading
		# (as in a page made by help2man) would be one more.
		assert_equal "$(grep -E '^[A-Z][A-Z ]+$' <<<"$output" | paste -sd,)" \
			"NAME,SYNOPSIS,DESCRIPTION,OPTIONS,ENVIRONMENT,EXIT STATUS,EXAMPLES,SEE ALSO"
		assert_equal "$(section NAME | head -1 | sed 's/^ *//; s/ .*//')" "$t"
		section SYNOPSIS | grep -q "^ *$t" || { echo "$t: no synopsis"; false; }
		# Nothing cut short ("SRQ_QPS...").
		refute_output --regexp 'SRQ_[A-Z_]*\.\.\.'
		# An example is a command a line, never filled into a paragraph
		# (two commands of the tool on one line, a word hyphenated).
		examples=$(section EXAMPLES)
		[ -n "$examples" ]
		run awk -v t="$t" '{ l = $0; gsub("\\| *" t, "", l); if (gsub(t " ", "", l) > 1) print }' <<<"$examples"
		[ -z "$output" ] || { echo "$t: examples run together: $output"; false; }
		run grep -E '[‐-]$' <<<"$examples"
		[ -z "$output" ] || { echo "$t: an example hyphenated: $output"; false; }
		# No path broken by hyphenation, at any width.
		for w in 60 80; do
			MANWIDTH=$w run -0 man -l "$page"
			run grep -E '/[^ ]*[‐-]$' <<<"$output"
			[ -z "$output" ] || { echo "$t ($w columns): a path hyphenated: $output"; false; }
		done
	done
}

@test "every option a tool's --help lists is in its page's OPTIONS, and the page lists no other" {
	make -s -C "$PROJECT_ROOT" man >/dev/null
	for t in $TOOLS $SCRIPTS; do
		MANWIDTH=1000 run -0 man -l "$PROJECT_ROOT/build/man/$t.1"
		in_page=$(section OPTIONS | grep -E '^ {5}-' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
		in_help=$(help-options "$(tool_path "$t")")
		[ -n "$in_help" ]
		assert_equal "$t: $(paste -sd' ' <<<"$in_page")" "$t: $(paste -sd' ' <<<"$in_help")"
	done
	# (what help-options reads: a prose mention of another tool's options,
	# srq-drain's "sr-claim --follow --for", is not one of its own)
	run -0 help-options "$PROJECT_ROOT/cron/srq-drain"
	assert_output $'--follow\n--help\n--version'
	run -0 help-options --valued "$(tool_path sr-claim)"
	assert_line -- '--for SECONDS'
	refute_line --partial -- '--follow'
}

# complete_words WORD...: what TAB offers for the last word.
complete_words() {
	bash -c '. "$1/share/bash-completion/srq"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _srq "$1"; echo "${COMPREPLY[*]}"' _ "$PROJECT_ROOT" "$@"
}

@test "completion offers each tool's options, and each one offered is taken by the tool" {
	run -0 --separate-stderr bash -c ". '$PROJECT_ROOT/share/bash-completion/srq' && complete -p $TOOLS $SCRIPTS"
	[ -z "$stderr" ]
	for t in $TOOLS $SCRIPTS; do
		assert_line --partial "_srq $t"
	done
	cd "$T" # (a file an option names, made by mistake, lands here)
	export SRQ_REDIS=redis://127.0.0.1:1 SRQ_GATEWAY=http://127.0.0.1:1 # nothing listens
	# (as installed: the cron wrappers on PATH too)
	PATH="$PROJECT_ROOT/cron:$PATH"
	for t in $TOOLS $SCRIPTS; do
		offered=$(complete_words "$t" -- | tr ' ' '\n' | sort)
		# What its page lists (the test above: what its --help lists).
		MANWIDTH=1000 run -0 man -l "$PROJECT_ROOT/build/man/$t.1"
		assert_equal "$t: $(paste -sd' ' <<<"$offered")" \
			"$t: $(section OPTIONS | grep -E '^ {5}-' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u | paste -sd' ')"
		# Each is taken: given it (with a value, for one that takes
		# one), the tool goes on to the next argument, an option nobody
		# takes, and stops there (exit 2) without running; or it refuses
		# the value, naming the option. --help and --version:
		# tests/tools/help.bats.
		valued=" $(help-options --valued "$(tool_path "$t")" | cut -d' ' -f1 | paste -sd' ') "
		for o in $offered; do
			case $o in --help | --version) continue ;; esac
			arg=$o
			[[ $valued == *" $o "* ]] && arg="$o=1"
			run -2 --separate-stderr timeout 10 "$(tool_path "$t")" "$arg" --no-such-option-x </dev/null
			[[ $stderr != *"unrecognized option '$arg'"* && $stderr != *"('$arg')"* ]] ||
				{ echo "$t does not take $o: $stderr"; false; }
			[[ $stderr == *no-such-option-x* || $stderr == *"$o"* ]] ||
				{ echo "$t $arg: $stderr"; false; }
		done
	done
}

@test "completion: sr-admin's commands and their words, scenes, an option's listed values, files" {
	assert_equal "$(complete_words sr-admin re)" "resume retry"
	assert_equal "$(complete_words sr-admin --reason 'gateway fixed' sw)" "switch"
	assert_equal "$(complete_words sr-admin switch o)" "on off"
	assert_equal "$(complete_words sr-admin breaker c17 c)" "close"
	assert_equal "$(complete_words sr-admin list c1 --state fr)" "frozen"
	assert_equal "$(complete_words sr-claim --until)" "--until-empty"
	assert_equal "$(complete_words sr-enqueue --scene device_)" "device_package_expired"
	assert_equal "$(complete_words sr-sweep --grace-h)" "--grace-high"
	assert_equal "$(complete_words sr-gwsim --profile c)" "cisco ctcmp ct5gcmp"
	assert_equal "$(complete_words sr-gwsim --rate-mode b)" "bucket"
	# An option that takes a file completes files.
	touch "$T/gw.token"
	assert_equal "$(complete_words sr-gwsim --token-file "$T/gw.t")" "$T/gw.token"
	# The operator's case: srq-drain takes no option of sr-claim's but
	# --follow, its own (completion offered --for too, which it refused).
	assert_equal "$(complete_words srq-drain --)" "--follow --help --version"
}

@test "completion is made from the tools' --help: an option added to a --help is offered, with no edit" {
	# A copy of the project with sr-sweep's --help given one more option.
	mkdir -p "$T/p/share/bash-completion" "$T/p/bin" "$T/p/cron"
	cp "$PROJECT_ROOT/share/bash-completion/srq.in" "$T/p/share/bash-completion/"
	for t in $TOOLS; do ln -s "$(command -v "$t")" "$T/p/bin/$t"; done
	cp "$PROJECT_ROOT"/cron/srq-* "$T/p/cron/"
	rm "$T/p/bin/sr-sweep"
	printf '#!/bin/sh\n"%s" "$@" | sed "s/^  --grace-high MS /  --grace-new MS  new\\n&/"\n' \
		"$(command -v sr-sweep)" >"$T/p/bin/sr-sweep"
	chmod +x "$T/p/bin/sr-sweep"
	"$T/p/bin/sr-sweep" --help | grep -q -- '--grace-new MS'
	mkdir -p "$T/p/scripts"
	cp "$PROJECT_ROOT/scripts/completion-gen" "$PROJECT_ROOT/scripts/help-options" "$T/p/scripts/"
	"$T/p/scripts/completion-gen" $(printf "$T/p/bin/%s " $TOOLS) "$T/p/cron/srq-drain" "$T/p/cron/srq-expiry-scan" \
		>"$T/p/share/bash-completion/srq"
	run -0 bash -c '. "$1"; COMP_WORDS=(sr-sweep --grace-n); COMP_CWORD=1; _srq sr-sweep; echo "${COMPREPLY[*]}"' \
		_ "$T/p/share/bash-completion/srq"
	assert_output "--grace-new --grace-normal"
}
