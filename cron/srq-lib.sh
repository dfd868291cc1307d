# srq-lib.sh - what the srq wrappers (srq-drain, srq-expiry-scan, srq-page)
# share; sourced, not run. The wrapper sets srq_prog (its name) and here (its
# own directory, links resolved) first.

# The sibling tools are called from the wrapper's own directory first: cron
# and systemd run it with a PATH of their own (often /usr/bin:/bin), where an
# install under /usr/local or /opt is not found.
PATH=$here:$PATH
export PATH

# srq_stream FD: what file descriptor FD of this shell is (device:inode).
srq_stream() { stat -L -c %d:%i "/proc/$$/fd/$1" 2>/dev/null; }
# The journal (systemd names its stream in JOURNAL_STREAM) stamps each line
# itself and reads "<N>" at its start as the line's level; a log file gets
# the time, ISO UTC.
srq_journal=
[ -n "${JOURNAL_STREAM:-}" ] && [ "$(srq_stream 2)" = "$JOURNAL_STREAM" ] && srq_journal=1
# What needs a human is said on stdout (cron mails it; srq-page reads it)
# when stdout goes elsewhere than the log; where both go to one place (a
# terminal, the journal) the log's line says it once.
srq_apart=
[ "$(srq_stream 1)" != "$(srq_stream 2)" ] && srq_apart=1

# srq_log LEVEL MESSAGE: a line of the log, on stderr. LEVEL is syslog's:
# 3 an error, 4 a warning, 5 a notice.
srq_log() {
	if [ -n "$srq_journal" ]; then
		printf '<%s>%s: %s\n' "$1" "$srq_prog" "$2" >&2
	else
		printf '%s %s: %s\n' "$(date -u +%FT%TZ)" "$srq_prog" "$2" >&2
	fi
}

# srq_problem MESSAGE: something that needs a human: a line of the log, and
# a line of the page (srq_page_out). The first one said is the page's
# first line, which srq-page compares from run to run: it says what is
# wrong in words that stay the same while it stays the same. Only that one
# is logged as an error, the others as warnings: in the journal, the last
# error of a unit is the headline srq-notify@ gives srq-page, and it must
# be the same line cron's page starts with (not "work held" after "failed
# stages").
srq_page=
srq_problem() {
	if [ -z "$srq_page" ]; then srq_log 3 "$1"; else srq_log 4 "$1"; fi
	srq_page="$srq_page$srq_prog: $1
"
}

# srq_page_out [DETAIL...]: the page on stdout, its lines and then each
# DETAIL, when there is one and stdout is not the log.
srq_page_out() {
	[ -n "$srq_page" ] && [ -n "$srq_apart" ] || return 0
	printf '%s' "$srq_page"
	[ $# -eq 0 ] || printf '%s\n' "$@"
}

# srq_seconds NAME VALUE MAX: VALUE as whole seconds, 0 to MAX, or a
# configuration error naming NAME (exit 2). expr reads leading zeros as
# decimal, where the shell would read octal.
srq_seconds() {
	case $2 in
	'' | *[!0-9]*) ;;
	*) [ ${#2} -le 9 ] && [ "$(expr "$2" + 0)" -le "$3" ] && { echo "$(expr "$2" + 0)"; return 0; } ;;
	esac
	srq_log 3 "$1 must be whole seconds, 0 to $3 (not '$2')"
	exit 2
}
