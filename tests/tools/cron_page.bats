#!/usr/bin/env bats
# cron_page.bats - what pages: every shipped crontab line prints nothing
# when all is well and what failed when it fails (cron mails stdout), and
# srq-page says a failure only when it is news.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	export SRQ_LOCK="$T/drain.lock" SRQ_DRAIN_FOR=1 SRQ_STATE_DIR="$T/state" SRQ_LOG_DIR="$T/log"
	mkdir -p "$T/log"
	PATH="$PROJECT_ROOT/cron:$PATH"
}

# page: srq-drain through srq-page, as the crontab's line runs it; its
# stdout (the page, what cron mails) in $output.
page() {
	run --separate-stderr srq-page drain srq-drain
}

# The crontab's entries, each its command as cron runs it (the schedule
# cut), made quick: claiming for a second, the metrics file in $T.
crontab_lines() {
	grep -E '^[*0-9]' "$PROJECT_ROOT/cron/crontab.example" | cut -d' ' -f6- |
		sed -e 's/--for 55/--for 1/' -e "s|/var/lib/node_exporter/textfile/srq.prom|$T/srq.prom|"
}

# run_crontab: every crontab line once; each one's stdout in $T/mail.N
# (N its line), and its exit status in $T/rc.N.
run_crontab() {
	local n=0 cmd rc
	rm -f "$T"/mail.* "$T"/rc.*
	while IFS= read -r cmd; do
		n=$((n + 1))
		rc=0
		sh -c "$cmd" >"$T/mail.$n" </dev/null || rc=$?
		echo "$rc" >"$T/rc.$n"
	done < <(crontab_lines)
	[ "$n" = 5 ]
}

@test "srq-page: a failure pages once, a new one and its end page, the same one again after SRQ_PAGE_EVERY" {
	gwsim_start
	stop_backlog 2 c1
	page
	assert_output ''
	assert_equal "$status" 0
	# Redis down: a page, what failed first.
	redis_stop
	page
	assert_equal "$status" 3
	assert_line --index 0 "srq drain: exit 3: srq-drain: failed stages: claim 3"
	assert_line --partial "it was fine before"
	# The same again, a minute later: no news, no mail.
	page
	assert_equal "$status" 3
	assert_output ''
	# Redis back, an account paused with work: a change, paged.
	redis_start
	stop_backlog 2 c2
	sr-admin pause c2 --reason "onboarding" >/dev/null
	page
	assert_equal "$status" 4
	assert_line --index 0 "srq drain: exit 4: srq-drain: work held: c2 paused: see sr-admin why"
	assert_line --regexp 'failing since .*; last: exit 3: srq-drain: failed stages: claim 3\)$'
	page
	assert_output ''
	# Still so after SRQ_PAGE_EVERY: said again.
	sleep 2
	SRQ_PAGE_EVERY=1 page
	assert_line --index 0 "srq drain: still exit 4: srq-drain: work held: c2 paused: see sr-admin why"
	# The pause over: back to normal is news too; then silence.
	sr-admin resume c2 --reason "live" >/dev/null
	page
	assert_equal "$status" 0
	assert_line --index 0 "srq drain: back to normal"
	page
	assert_output ''
}

@test "srq-page: failures in turn page once each until it is ok again; a time in the headline is no news" {
	# A gateway down and its breaker open, in turn: each said once.
	for rc in 3 4 3 4 3; do
		run --separate-stderr srq-page job sh -c "echo 'failed at $(date -u +%FT%T.%NZ) ($rc)'; exit $rc"
		assert_equal "$status" "$rc"
		case $rc in 3) echo "$output" >>"$T/pages3" ;; 4) echo "$output" >>"$T/pages4" ;; esac
	done
	assert_equal "$(grep -c '^srq job: exit 3: failed at ' "$T/pages3")" 1
	assert_equal "$(grep -c '^srq job: exit 4: failed at ' "$T/pages4")" 1
	run --separate-stderr srq-page job true
	assert_line --index 0 "srq job: back to normal"
	run --separate-stderr srq-page job sh -c 'echo "failed at 2026-01-01T00:00:00Z (3)"; exit 3'
	assert_line --index 0 "srq job: exit 3: failed at 2026-01-01T00:00:00Z (3)"
}

@test "srq-page: a tool's fatal line is its headline; --records keeps records out of the page; --status reads a unit's text" {
	# A tool whose stdout is records: they go to the file, the page is
	# what it said on stderr (its last line, the headline).
	run --separate-stderr srq-page --records "$T/records" job sh -c 'echo "{\"r\":1}"; echo "x: fatal: Redis gone" >&2; exit 3'
	assert_equal "$status" 3
	assert_line --index 0 "srq job: exit 3: x: fatal: Redis gone"
	assert_line "(its records: $T/records)"
	refute_output --partial '"r"'
	assert_equal "$(cat "$T/records")" '{"r":1}'
	[[ $stderr == *"x: fatal: Redis gone"* ]] # (its stderr passes on to the log)
	# What srq-notify@.service gives it: the status, the unit's last error.
	run -0 --separate-stderr srq-page --status 3 srq-stat.service <<<"sr-stat: fatal: cannot connect to Redis"
	assert_line --index 0 "srq srq-stat.service: exit 3: sr-stat: fatal: cannot connect to Redis"
	run -0 --separate-stderr srq-page --status 3 srq-stat.service <<<"sr-stat: fatal: cannot connect to Redis"
	assert_output ''
	run -0 --separate-stderr srq-page --status 0 srq-stat.service </dev/null
	assert_line --index 0 "srq srq-stat.service: back to normal"
	# SRQ_NOTIFY_CMD takes the page instead of stdout; if it fails, stdout.
	SRQ_NOTIFY_CMD='{ echo "$SRQ_PAGE_NAME | $SRQ_PAGE_SUBJECT"; cat; } >"$T/notified"' T=$T \
		run --separate-stderr srq-page other sh -c 'echo "it broke"; exit 1'
	assert_output ''
	assert_equal "$(head -1 "$T/notified")" "other | srq other: exit 1: it broke"
	SRQ_NOTIFY_CMD='exit 7' run --separate-stderr srq-page third sh -c 'echo "it broke"; exit 1'
	assert_line --index 0 'srq-page: SRQ_NOTIFY_CMD failed (exit 7): the page is here instead'
	assert_line "srq third: exit 1: it broke"
	# No state to compare with: the job runs, and all it says is mailed.
	SRQ_STATE_DIR=/proc/no/such run --separate-stderr srq-page job sh -c 'echo "it broke"; exit 1'
	assert_equal "$status" 1
	assert_output --partial "cannot write in SRQ_STATE_DIR '/proc/no/such'"
	assert_line "it broke"
	# One run of a job at a time: the next one, while it goes, is skipped.
	srq-page slow sleep 3 2>/dev/null &
	sleep 0.5
	run -0 --separate-stderr srq-page slow sh -c 'echo "never run"; exit 1'
	assert_output ''
	[[ $stderr == *"slow: its last run still goes: this one skipped"* ]]
	wait
}

@test "every crontab line prints nothing when all is well, and what failed when a gateway is down, a breaker open, Redis gone" {
	gwsim_start
	printf 'card,carrier,pkg_expires_at\nE1,c1,1\n' >"$T/expired.csv"
	export SRQ_EXPIRY_CSV="$T/expired.csv" SRQ_EXPIRY_LOCK="$T/scan.lock"
	unset SRQ_EXPIRY_CMD
	run_crontab
	for n in 1 2 3 4 5; do
		[ ! -s "$T/mail.$n" ] || { echo "line $n mailed: $(cat "$T/mail.$n")"; false; }
		assert_equal "$(cat "$T/rc.$n")" 0
	done
	# The logs have what went on, stamped.
	grep -q 'srq-expiry-scan: queued 1' "$T/log/expiry-scan.log"
	grep -Eq '^[0-9-]{10}T[0-9:]{8}Z srq-drain: claimed=1 ' "$T/log/drain.log"
	grep -Eq '^[0-9-]{10}T[0-9:]{8}Z sr-sweep: sweep: 0 findings repaired' "$T/log/sweep.log"
	# The gateway down: the drain's line says so; the others stay silent.
	stop_backlog 3 c1
	SRQ_GATEWAY=http://127.0.0.1:1 run_crontab
	assert_equal "$(cat "$T/rc.3")" 3
	assert_equal "$(sed -n 1p "$T/mail.3")" "srq drain: exit 3: srq-drain: failed stages: exec 3"
	grep -q '^claimed=.* | c1: claimed=' "$T/mail.3"
	for n in 1 2 4 5; do [ ! -s "$T/mail.$n" ] || { echo "line $n mailed: $(cat "$T/mail.$n")"; false; }; done
	# Its breaker open: the drain's line says what holds the work.
	sr-admin breaker c1 open --reason "carrier incident" >/dev/null
	run_crontab
	assert_equal "$(cat "$T/rc.3")" 4
	assert_equal "$(sed -n 1p "$T/mail.3")" "srq drain: exit 4: srq-drain: work held: c1 breaker: see sr-admin why"
	# Redis gone: every line says it failed, and how.
	redis_stop
	run_crontab
	for n in 1 2 3 4 5; do
		[ -s "$T/mail.$n" ] || { echo "line $n: nothing mailed"; false; }
		assert_equal "$(cat "$T/rc.$n")" 3
	done
	grep -q '^srq scan: exit 3: srq-expiry-scan: sr-enqueue exit 3' "$T/mail.1"
	grep -q '^srq dev-eval: exit 3: .*dev-eval: fatal: .*Redis' "$T/mail.2"
	grep -q '^srq stat: exit 3: .*sr-stat: fatal: .*Redis' "$T/mail.4"
	grep -q '^srq sweep: exit 3: .*sr-sweep: fatal: .*Redis' "$T/mail.5"
	# ...once: the next minute is silent.
	run_crontab
	for n in 1 2 3 4 5; do [ ! -s "$T/mail.$n" ] || { echo "line $n mailed again: $(cat "$T/mail.$n")"; false; }; done
}

@test "srq-page: a bad SRQ_PAGE_EVERY or NAME is said on stdout (cron mails it); the job still runs and pages" {
	# Before: exit 2 before the job ran, said only in the log: no job, no mail.
	SRQ_PAGE_EVERY=1h run --separate-stderr srq-page j sh -c 'touch "$0/ran"; echo bad; exit 1' "$T"
	assert_equal "$status" 1
	[ -e "$T/ran" ]
	assert_line --index 0 "srq-page: SRQ_PAGE_EVERY must be whole seconds (not '1h'): 3600 used"
	assert_line --index 1 'srq j: exit 1: bad'
	run -2 --separate-stderr srq-page 'bad name' true
	assert_output "srq-page: NAME must be letters, digits and _.@- (not 'bad name')"
}

@test "srq-page: a child the job leaves running does not hold the next run back" {
	run -1 --separate-stderr srq-page j sh -c 'sleep 30 >/dev/null 2>&1 & echo bad; exit 1'
	assert_line --index 0 'srq j: exit 1: bad'
	# Before: skipped ("its last run still goes") while the sleep lived.
	run -1 --separate-stderr srq-page j sh -c 'touch "$0/ran"; echo worse; exit 1' "$T"
	[ -e "$T/ran" ]
	assert_line --index 0 'srq j: exit 1: worse'
	pkill -f 'sleep 30' || true
}

@test "srq-page: times with an offset, ages and epoch ms in a headline are no news; a mangled state file is mended" {
	export TZ=UTC
	run -1 --separate-stderr srq-page j sh -c 'echo "breaker until 2026-12-07T04:19:54+08:00 (95s ago) 1796119200000"; exit 1'
	assert_line --index 0 --partial 'srq j: exit 1: breaker until'
	run -1 --separate-stderr srq-page j sh -c 'echo "breaker until 2026-12-07T04:20:54+08:00 (in 5m) 1796119260000"; exit 1'
	assert_output ''
	# A state file not as written (before: an arithmetic error after the
	# job ran, no page, and the file never rewritten).
	printf 'exit 1: x\n17966\n12 34\nexit 1: x\n' >"$SRQ_STATE_DIR/k.state"
	run -1 --separate-stderr srq-page k sh -c 'echo x; exit 1'
	[[ $stderr != *arithmetic* ]]
	# When it last paged is not known: it is said again, and the file mended.
	assert_line --index 0 'srq k: still exit 1: x'
	[[ $(sed -n 3p "$SRQ_STATE_DIR/k.state") =~ ^[0-9]+$ ]]
}

@test "srq-drain in the journal: a run's first problem is its error, the others warnings (srq-notify@ pages the last error)" {
	gwsim_start
	stop_backlog 2 c1 c2
	sr-admin pause c2 --until 1h --reason "onboarding" >/dev/null
	# The journal as srq-drain sees it: its stderr is JOURNAL_STREAM.
	: >"$T/journal"
	SRQ_GATEWAY=http://127.0.0.1:1 JOURNAL_STREAM=$(stat -L -c %d:%i "$T/journal") \
		run -3 sh -c '"$0" 2>>"$1"' "$PROJECT_ROOT/cron/srq-drain" "$T/journal"
	# Before: both at <3>, "work held" last: the page's headline under
	# systemd, where cron's says the stage that failed.
	assert_equal "$(grep -c '^<3>' "$T/journal")" 1
	grep -q '^<3>srq-drain: failed stages: exec 3' "$T/journal"
	grep -q '^<4>srq-drain: work held: c2 paused' "$T/journal"
}

@test "srq-drain --follow: a stop asked for while srq-page runs starts no new run" {
	export SRQ_PAGE_NAME=drain.service SRQ_DRAIN_FOR=1
	gwsim_start
	stop_backlog 1 c2
	sr-admin pause c2 --until 1h --reason "onboarding" >/dev/null
	mkdir -p "$SRQ_STATE_DIR"
	# srq-page --status waits for its lock (srq-notify@ holds it, or a
	# slow SRQ_NOTIFY_CMD runs): held here for 8 s.
	flock "$SRQ_STATE_DIR/drain.service.lock" sleep 8 &
	holder=$!
	"$PROJECT_ROOT/cron/srq-drain" --follow >"$T/out" 2>"$T/drain.log" &
	pid=$!
	# The first run ends (held: exit 4), and srq-page waits.
	for i in $(seq 100); do grep -q 'srq-drain: claimed=' "$T/drain.log" && break; sleep 0.1; done
	grep -q 'srq-drain: claimed=' "$T/drain.log"
	kill -TERM "$pid"
	sleep 1
	stop_backlog 1 c1 # due now: a new run would claim it
	wait "$holder"
	wait "$pid"
	# Before: a whole new run after the stop, c1's card claimed and called.
	assert_equal "$(grep -c 'srq-drain: claimed=' "$T/drain.log")" 1
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:sr_running')" 0
	assert_equal "$(jq -s '[.[] | select(.card | startswith("c1"))] | length' "$T/gw.log")" 0
}
