#!/usr/bin/env bats
# man.bats - the man pages are pages: each renders without a warning, with
# its sections in order and its examples one command a line, and lists every
# option its tool's --help lists.

bats_require_minimum_version 1.5.0

setup() {
	load helpers/common
	T="$BATS_TEST_TMPDIR"
	TOOLS="sr-enqueue sr-claim sr-exec sr-confirm dev-eval sr-asset sr-stat sr-admin sr-sweep sr-rate sr-gwsim"
	SCRIPTS="srq-drain srq-expiry-scan"
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
	assert_output $'--help\n--version'
	run -0 help-options --valued "$(tool_path sr-claim)"
	assert_line -- '--for SECONDS'
	refute_line --partial -- '--follow'
}
