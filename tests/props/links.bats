#!/usr/bin/env bats
# links.bats - every relative link of the README and docs/*.md resolves: to
# a file (or directory) of the repository, and a #anchor to a heading of the
# Markdown file it points into, under GitHub's rules for a heading's anchor
# (tests/helpers/md-links). A link with a scheme (https:, mailto:) is not
# followed; a link out of the repository (../elsewhere/x.md) or to an absolute
# path fails: the reader of a checkout, or of the installed docs, has
# neither. It needs no Redis and no build.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	: # no Redis, no simulator: files only
}

# bad_links ROOT: each link of ROOT/README.md and ROOT/docs/*.md that does
# not resolve, a line each (FILE:LINE: TARGET: why); none, nothing.
bad_links() {
	local root file line target path anchor dest rel
	root=$(cd "$1" && pwd -P)
	(cd "$root" && shopt -s nullglob && awk -f "$PROJECT_ROOT/tests/helpers/md-links" README.md docs/*.md) >"$BATS_TEST_TMPDIR/md"
	while IFS=$'\t' read -r _ file line target; do
		case $target in
		[A-Za-z]*:*) continue ;; # a scheme: not ours to follow
		/*) echo "$file:$line: $target: an absolute path"; continue ;;
		esac
		path=${target%%#*}
		anchor=
		[[ $target == *#* ]] && anchor=${target#*#}
		if [ -z "$path" ]; then
			dest="$root/$file"
		else
			dest=$(realpath -m "$root/$(dirname "$file")/$path")
		fi
		case $dest in
		"$root" | "$root"/*) ;;
		*) echo "$file:$line: $target: outside the repository"; continue ;;
		esac
		[ -e "$dest" ] || { echo "$file:$line: $target: no such file"; continue; }
		[ -n "$anchor" ] || continue
		rel=${dest#"$root"/}
		case $rel in
		*.md) ;;
		*) echo "$file:$line: $target: an anchor into $rel, which is not Markdown"; continue ;;
		esac
		if ! grep -qxF "H	$rel	$anchor" "$BATS_TEST_TMPDIR/md"; then
			# A file the awk did not read (a Markdown file elsewhere): its headings now.
			grep -qxF "H	$rel	$anchor" <(cd "$root" && awk -f "$PROJECT_ROOT/tests/helpers/md-links" "$rel") ||
				echo "$file:$line: $target: no heading of $rel has the anchor #$anchor"
		fi
	done < <(grep '^L	' "$BATS_TEST_TMPDIR/md")
}

@test "every relative link of the README and docs/*.md resolves, anchors included" {
	run bad_links "$PROJECT_ROOT"
	assert_success
	assert_output ''
}

@test "the README links each doc" {
	local f n=0
	for f in "$PROJECT_ROOT"/docs/*.md; do
		grep -qF "](docs/${f##*/}" "$PROJECT_ROOT/README.md" || { echo "README.md does not link docs/${f##*/}"; false; }
		n=$((n + 1))
	done
	[ "$n" -gt 0 ]
}

@test "the check finds a missing file, a link out of the repository, an absolute path and an anchor no heading has" {
	local r="$BATS_TEST_TMPDIR/repo"
	mkdir -p "$r/docs"
	cat >"$r/README.md" <<-'EOF'
		# srq — the toolkit

		## Why was card X not resumed?

		[ok](docs/a.md#the-edge-its-rate) [ok](#why-was-card-x-not-resumed) [ok](#srq--the-toolkit)
		[ok](https://example.com/x#y) `[not a link](nowhere.md)` and ```[nor](this.md)```
		[gone](docs/b.md) [out](../elsewhere/x.md) [abs](/etc/passwd)
		[bad anchor](docs/a.md#the-edge) [dup](docs/a.md#notes-1) [no dup](docs/a.md#notes-2)
		```
		[in a block](nowhere.md)
		```
	EOF
	cat >"$r/docs/a.md" <<-'EOF'
		# The edge: its `rate`

		## Notes

		## Notes

		[back](../README.md#why-was-card-x-not-resumed)
	EOF
	run bad_links "$r"
	assert_success
	assert_equal "$output" "README.md:7: docs/b.md: no such file
README.md:7: ../elsewhere/x.md: outside the repository
README.md:7: /etc/passwd: an absolute path
README.md:8: docs/a.md#the-edge: no heading of docs/a.md has the anchor #the-edge
README.md:8: docs/a.md#notes-2: no heading of docs/a.md has the anchor #notes-2"
}
