#!/usr/bin/env bats
# readme.bats - every shell block of the README and of docs/*.md runs as
# written, as a reader runs it: on srq as `make install` puts it (into a
# temporary prefix, once for the file), under `env -i` with HOME,
# PATH=PREFIX/bin:/usr/bin:/bin, SRQ_CONFIG= (no machine's
# /etc/srq/srq.conf) and what the block's statement names, in a directory
# of its own, against a Redis and an sr-gwsim of its own (the installed
# one). Every command of it must succeed (bash -e, pipefail).
#
# The statement is the HTML comment just before the block (the Markdown
# source only), which the reader reads too:
#   <!-- test NAME: needs ITEM, ITEM (why), ... . What else holds. -->
#   <!-- test NAME: skipped: REASON -->
# ITEM is redis (SRQ_REDIS), gwsim (SRQ_GATEWAY), PREFIX (the install
# prefix), VAR=VALUE, a file the set-up writes in the block's directory
# (cards.txt), "stand-in CMD" (a stand-in for a command the reader has, as
# psql, first on PATH), "interrupted after N s" (a block that runs until
# the reader presses Ctrl-C: SIGINT to its session after N seconds; its
# status is then what the block exits with), or "nothing". What else the block needs (cards in
# the asset mirror, a frozen command) is said in words after the items, and
# done by setup_NAME below; the test of NAME then checks what the text
# beside the block says happens. A shell block without a statement fails
# the first test: a new block is run, or skipped with its reason, never
# left out. A block that is not shell may have a statement too (a profile:
# the test of its name uses it).
#
# It uses one Redis server (redis-cli -s in the blocks), so it runs once,
# not again on the Redis Cluster pass.
# bats file_tags=own-redis

bats_require_minimum_version 1.5.0

load ../test_helper

setup_file() {
	export RB_PREFIX="$BATS_FILE_TMPDIR/prefix" RB_BLOCKS="$BATS_FILE_TMPDIR/blocks"
	make -s -C "$PROJECT_ROOT" install PREFIX="$RB_PREFIX" >/dev/null
	mkdir -p "$RB_BLOCKS"
	# Named as the reader finds them: README.md, docs/NAME.md.
	(cd "$PROJECT_ROOT" && shopt -s nullglob && awk -v out="$RB_BLOCKS" -f tests/helpers/readme-blocks README.md docs/*.md)
}

setup() {
	test_vars
	# The installed simulator serves the blocks that need one.
	PATH="$RB_PREFIX/lib/srq:$PATH"
	W="$T/work"
	mkdir -p "$W" "$T/home"
	CARD=89860012345678901234
	SETUP_ENV=()
}

teardown() {
	# What a block left running (a simulator started with &) ends with it.
	[ -s "$W/.session" ] && kill -- "-$(cat "$W/.session")" 2>/dev/null
	srq_teardown
}

# meta N KEY: the values of KEY in block N's statement, a line each.
meta() {
	sed -n "s/^$2=//p" "$RB_BLOCKS/$1.meta"
}

# block_of NAME: the number of the block whose statement is NAME.
block_of() {
	grep -lx "name=$1" "$RB_BLOCKS"/*.meta | sed 's|.*/||; s|\.meta$||'
}

# where N: block N's file and line, as a message names it (docs/operations.md line 40).
where() {
	echo "$(meta "$1" file) line $(meta "$1" line)"
}

# srq 'COMMANDS': the installed tools, in the block's environment and
# directory (what set-up does before the block).
srq() {
	(cd "$W" && env -i "${BLOCK_ENV[@]}" "${SETUP_ENV[@]}" bash -eo pipefail -c "$1")
}

# block NAME: run the block NAME (of the README or a doc), as its statement
# says, its stdout in $output, its stderr in $stderr, its status in $status
# (skipped with the statement's reason).
block() {
	local name=$1 n need reason path="$RB_PREFIX/bin:/usr/bin:/bin" f interrupt=
	n=$(block_of "$name")
	[ -n "$n" ] || { echo "no block of README.md or docs/*.md is '$name'" >&2; return 1; }
	reason=$(meta "$n" skipped)
	[ -z "$reason" ] || skip "$reason"
	BLOCK_ENV=(HOME="$T/home" SRQ_CONFIG=)
	BLOCK_FILES=()
	while read -r need; do
		case $need in
		nothing) ;;
		redis)
			SRQ_TEST_REDIS='' redis_start
			BLOCK_ENV+=(SRQ_REDIS="$SRQ_REDIS") ;;
		gwsim)
			gwsim_start
			BLOCK_ENV+=(SRQ_GATEWAY="$SRQ_GATEWAY") ;;
		PREFIX) BLOCK_ENV+=(PREFIX="$RB_PREFIX") ;;
		[A-Z]*=*) BLOCK_ENV+=("$need") ;;
		"interrupted after "*" s") interrupt=${need#interrupted after }
			interrupt=${interrupt% s} ;;
		"stand-in "*)
			path="$W/stand-in:$path"
			BLOCK_FILES+=("stand-in/${need#stand-in }") ;;
		*.*) BLOCK_FILES+=("$need") ;;
		*) echo "block '$name' ($(where "$n")) needs '$need': not an item this test knows" >&2
			return 1 ;;
		esac
	done < <(meta "$n" need)
	BLOCK_ENV+=(PATH="$path")
	if declare -F "setup_${name//-/_}" >/dev/null; then
		"setup_${name//-/_}"
	fi
	for f in "${BLOCK_FILES[@]}"; do
		[ -e "$W/$f" ] || { echo "block '$name' ($(where "$n")) needs $f: its set-up did not make it" >&2; return 1; }
	done
	BLOCK_BODY="$RB_BLOCKS/$n.body"
	case $(meta "$n" lang) in
	sh | bash | shell | console) ;;
	*) return 0 ;; # not commands: the test reads it
	esac
	# In a session of its own, so that what it leaves running (a simulator
	# started with &) is found, and into files, which it may keep open.
	status=0
	if [ -n "$interrupt" ]; then
		# Ctrl-C: SIGINT to the block's whole session, as a terminal sends it.
		# A block that does not end on it is killed 5 s later, and fails.
		(sleep "$interrupt"
			kill -INT -- "-$(cat "$W/.session")" 2>/dev/null
			sleep 5
			kill -KILL -- "-$(cat "$W/.session")" 2>/dev/null) &
	fi
	# shellcheck disable=SC2016 # ($$ is the session's shell's)
	(cd "$W" && env -i "${BLOCK_ENV[@]}" setsid -w \
		bash -c 'echo $$ >.session; exec bash -eo pipefail "$0"' "$BLOCK_BODY" \
		>"$T/block.out" 2>"$T/block.err") || status=$?
	output=$(cat "$T/block.out")
	stderr=$(cat "$T/block.err")
	mapfile -t lines <"$T/block.out"
}

@test "every shell block of the README and docs/*.md has its statement, and each name its test here" {
	local f n lang name names=() tested
	for f in "$RB_BLOCKS"/*.meta; do
		n=${f##*/}
		n=${n%.meta}
		lang=$(meta "$n" lang)
		name=$(meta "$n" name)
		if [ -n "$(meta "$n" bad)" ]; then
			echo "$(where "$n"): the statement before the block is bad: $(meta "$n" bad)"
			return 1
		fi
		case $lang in
		sh | bash | shell | console)
			[ -n "$name" ] || {
				echo "$(where "$n"): a $lang block with no <!-- test NAME: ... --> before it"
				return 1
			} ;;
		esac
		[ -n "$name" ] && names+=("$name")
	done
	# Each name once, and each the subject of a test below (a skipped one
	# too: it is listed skipped, with its reason); no test of a block gone.
	assert_equal "$(printf '%s\n' "${names[@]}" | sort | uniq -d)" ''
	tested=$(sed -n 's/^[[:space:]]*block \([a-z0-9-]*\)$/\1/p' "$BATS_TEST_FILENAME" | sort)
	assert_equal "$tested" "$(printf '%s\n' "${names[@]}" | sort)"
}

@test "the release the README and docs/operations.md name is the tools' --version" {
	local v
	v=$("$RB_PREFIX/bin/sr-claim" --version)
	v=${v#sr-claim }
	grep -q "^This release is $v " "$PROJECT_ROOT/README.md"
	grep -q "^This release is $v " "$PROJECT_ROOT/docs/operations.md"
	grep -q "^## Upgrading from [0-9.]* to ${v%.0}\$" "$PROJECT_ROOT/docs/operations.md"
}

@test "README: make demo, make test (skipped)" {
	block two-commands
}

# Two cards whose package expired, active in the asset mirror, and the
# export of them.
setup_pipeline() {
	srq "printf '%s\n' '{\"card\":\"${CARD}\",\"carrier\":\"c17\",\"status\":\"active\",\"pkg_expires_at\":$PAST}' \
		'{\"card\":\"89860012345678901235\",\"carrier\":\"c17\",\"status\":\"active\",\"pkg_expires_at\":$PAST}' |
		sr-asset >/dev/null"
	printf '%s\n' "{\"card\":\"$CARD\",\"carrier\":\"c17\"}" '{"card":"89860012345678901235","carrier":"c17"}' \
		>"$W/expired.json"
}

@test "README: the pipeline, by hand and by srq-drain" {
	block pipeline
	assert_success
	# Each request acked, both stops done (uniq -c), srq-drain's summary.
	assert_equal "$(grep -c '"status":"queued","action":"stop"' <<<"$output")" 2
	assert_line --regexp '^ +2 done$'
	assert_regex "$stderr" 'srq-drain: claimed=0 cards=0 done=0'
	assert_equal "$(jq -r 'select(.kind == "stop" and .applied) | .card' "$T/gw.log" | sort | tr '\n' ' ')" \
		"$CARD 89860012345678901235 "
}

# The card stopped by srq (its package had expired); account c18 with a
# stop queued.
setup_examples() {
	srq "printf '%s\n' '{\"card\":\"$CARD\",\"carrier\":\"c17\",\"status\":\"stopped\",\"stopped_by\":\"auto\"}' | sr-asset >/dev/null
		printf '%s\n' '{\"card\":\"C18-1\",\"carrier\":\"c18\",\"scene\":\"refund\",\"facts\":{\"status\":\"active\",\"refunded\":1}}' |
		sr-enqueue >/dev/null"
}

@test "README: the examples of the Tools" {
	block examples
	assert_success
	assert_line --index 0 --regexp '"card":"89860012345678901234","carrier":"c17","status":"queued","action":"resume","reason":"entitled"'
	# The one pass called the card and finished it: no lease left behind.
	assert_line --index 1 --regexp '"card":"89860012345678901234","carrier":"c17",.*"state":"done"'
	# The pass of every account: c18's stop, in finals.jsonl; none frozen.
	assert_equal "$(jq -c '[.card, .state]' "$W/finals.jsonl")" '["C18-1","done"]'
	assert_equal "${#lines[@]}" 3
	assert_equal "$(srq "sr-admin list c17; sr-admin list c18")" ''
	# The simulator, from where the README says it is, answers.
	for _ in $(seq 50); do [ -s "$W/gw.port" ] && break; sleep 0.1; done
	run -0 curl -fsS "http://127.0.0.1:$(cat "$W/gw.port")/v1/cards/K1/status?carrier=c17"
	assert_output '{"card":"K1","status":"active"}'
}

# stopped_renewed SCENE: the card stopped by srq a moment ago (its package
# had expired), then renewed by a request of SCENE: its resume queued, not
# claimed, waiting for the card's interval.
stopped_renewed() {
	srq "printf '%s\n' '{\"card\":\"$CARD\",\"carrier\":\"c17\",\"scene\":\"package_expired\",\"facts\":{\"status\":\"active\",\"pkg_expires_at\":$PAST}}' | sr-enqueue >/dev/null
		sr-claim --until-empty --for 10 | sr-exec | sr-confirm >/dev/null
		printf '%s\n' '{\"card\":\"$CARD\",\"carrier\":\"c17\",\"scene\":\"$1\",\"facts\":{\"pkg_expires_at\":$FUTURE}}' | sr-enqueue >/dev/null"
}

setup_why() { stopped_renewed order; }

@test "docs/operations.md: why was card X not resumed" {
	block why
	assert_success
	assert_equal "$(jq -r '[.card, .carrier, .action, .state] | join(" ")' <<<"$output")" "$CARD c17 resume interval"
	# As the example beside the block says it: ISO times, and how far.
	assert_regex "$(jq -r .why <<<"$output")" \
		"^waiting for the card's interval: last call at [0-9-]+T[0-9:]+Z \(.* ago\), next allowed at [0-9-]+T[0-9:]+Z \(in .*\)$"
	grep -qF "$(jq -r .why <<<"$output" | sed 's/ at .*//')" "$PROJECT_ROOT/$(meta "$(block_of why)" file)"
}

# frozen FAULT CARD...: each card of c17, active with an expired package,
# frozen after its one call, which a simulator answers with FAULT only
# (--fault-5xx-before: HTTP 500; --fault-reject: 422), with its alert.
frozen() {
	local c fault=$1
	shift
	gwsim_start "$fault" 1
	for c in "$@"; do
		echo "{\"card\":\"$c\",\"carrier\":\"c17\",\"scene\":\"package_expired\",\"facts\":{\"status\":\"active\",\"pkg_expires_at\":$PAST}}"
	done >"$T/frozen.jsonl"
	SETUP_ENV=(SRQ_GATEWAY="$SRQ_GATEWAY" SRQ_FREEZE_AFTER=1 SRQ_ALERT_AFTER=1)
	srq "sr-enqueue <'$T/frozen.jsonl' >/dev/null; sr-claim --until-empty --for 10 | sr-exec | sr-confirm >/dev/null"
	SETUP_ENV=()
	gwsim_stop
}

setup_repairs() {
	frozen --fault-reject "$CARD" 89860012345678901236
	frozen --fault-5xx-before 89860012345678901235
}

@test "docs/operations.md: repairs" {
	block repairs
	assert_success
	# The table: the two still frozen after the first retry, with their errors.
	assert_line --regexp '^card +carrier +state +action +ver +.* http +last_error$'
	assert_line --regexp '^89860012345678901235 +c17 +frozen .* 500 +HTTP 500 INTERNAL$'
	assert_line --regexp '^89860012345678901236 +c17 +frozen .* 422 +HTTP 422 NOT_ALLOWED$'
	# The rest, line by line: the retry (due now), the 5xx one alone listed
	# and retried, the card due, frozen, dropped; the limits; the ack.
	assert_equal "$(grep '^{' <<<"$output" | jq -r 'if .acked then "acked \(.cause)"
		elif .qps then "limits qps=\(.qps) running=\(.running)" else "\(.card) \(.done // .state)" end')" \
		"$CARD retry
89860012345678901235 frozen
89860012345678901235 retry
$CARD due
$CARD freeze
$CARD drop
limits qps=5 running=10
acked permanent:89860012345678901236"
	assert_regex "$stderr" "would retry 1 frozen command of account 'c17' with last error class 5xx"
	assert_regex "$stderr" 'sweep: 0 findings repaired'
	# What is left: the 5xx one confirming (a status query first), the
	# refused one frozen, its alert acknowledged; the dropped card's command gone.
	assert_equal "$(srq "sr-admin list c17" | jq -r '"\(.card) \(.state)"')" \
		"89860012345678901235 confirming
89860012345678901236 frozen"
	assert_equal "$(srq "sr-admin alerts --carrier c17" | jq -r 'select(.open) | .card')" ''
	# Each change to the card audited, with who and why (the version bumped
	# by the drop).
	assert_equal "$(srq "sr-admin audit $CARD" | jq -r 'select(.event | startswith("admin:")) |
		"\(.event) \(.who) \(.why) \(.ver_after)"')" "admin:retry $(id -un) gateway fixed 1
admin:freeze $(id -un) customer dispute 1
admin:drop $(id -un) duplicate 2"
}

setup_retry_stdin() {
	frozen --fault-5xx-before "$CARD" 89860012345678901235
}

# Two cards of c17 that failed with HTTP 500 until frozen: a failures and
# a frozen alert each.
setup_alerts() {
	local c
	gwsim_start --fault-5xx-before 1
	for c in 89860012345678901235 89860012345678901236; do
		echo "{\"card\":\"$c\",\"carrier\":\"c17\",\"scene\":\"package_expired\",\"facts\":{\"status\":\"active\",\"pkg_expires_at\":$PAST}}"
	done >"$T/failing.jsonl"
	# A failures alert after the first failure, frozen after the second.
	SETUP_ENV=(SRQ_GATEWAY="$SRQ_GATEWAY" SRQ_FREEZE_AFTER=2 SRQ_ALERT_AFTER=1 SRQ_MIN_INTERVAL_MS=0)
	srq "sr-enqueue <'$T/failing.jsonl' >/dev/null; sr-claim --until-empty --for 20 | sr-exec | sr-confirm >/dev/null"
	SETUP_ENV=()
	gwsim_stop
	srq "sr-admin alerts" >"$T/alerts.before"
}

@test "docs/operations.md: alerts acknowledged in bulk" {
	block alerts
	assert_success
	# What the set-up left open: both kinds, both cards.
	assert_equal "$(jq -r '"\(.alert) \(.card) \(.open)"' "$T/alerts.before" | sort | paste -sd,)" \
		"failures 89860012345678901235 true,failures 89860012345678901236 true,frozen 89860012345678901235 true,frozen 89860012345678901236 true"
	# Each bulk ack counted on stderr; nothing of c17 open after the block,
	# and its last line (--all) shows them closed.
	assert_regex "$stderr" "acknowledged 2 failures alerts of account 'c17'"
	assert_regex "$stderr" 'acknowledged 2 alerts'
	assert_equal "$(srq "sr-admin alerts")" ''
	assert_equal "$(grep '^{' <<<"$output" | jq -r 'select(.open == false) | "\(.alert):\(.card)"' | sort -u | paste -sd,)" \
		"failures:89860012345678901235,failures:89860012345678901236,frozen:89860012345678901235,frozen:89860012345678901236"
}

# Account c17 has a command queued (its card's stop).
setup_live_view() {
	known_account
}

# Account c17 has had a request.
setup_times() {
	known_account
}

@test "docs/operations.md: a time without a zone, read in TZ" {
	block times
	assert_success
	assert_regex "$stderr" "read in Asia/Shanghai \(CST, \+08:00\), that is 2027-12-03T10:00:00.000Z"
	assert_equal "$(srq "sr-admin limits c17" | jq -r .paused_until_ms)" "$(date -d 2027-12-03T10:00:00Z +%s)000"
}

@test "docs/operations.md: the frozen ones retried through a pipe" {
	block retry-stdin
	assert_success
	assert_equal "$(jq -r '"\(.card) \(.done)"' <<<"$output")" "$CARD retry
89860012345678901235 retry"
	assert_equal "$(srq "sr-admin list c17 --state frozen")" ''
}

# Device D42, with no package, and two active cards of c17.
setup_device() {
	srq "printf '%s\n' '{\"device\":\"D42\",\"pkg_expires_at\":0}' \
		'{\"card\":\"$CARD\",\"carrier\":\"c17\",\"device\":\"D42\",\"status\":\"active\"}' \
		'{\"card\":\"89860012345678901235\",\"carrier\":\"c17\",\"device\":\"D42\",\"status\":\"active\"}' |
		sr-asset >/dev/null"
}

@test "docs/operations.md: a device request, evaluated by dev-eval" {
	block device
	assert_success
	assert_line --index 0 --regexp '^\{"line":1,"device":"D42","status":"device_queued","scene":"device_package_expired","ver":1\}$'
	assert_line --index 1 '{"device":"D42","state":"done","cards":["stop","stop"]}'
	assert_equal "${#lines[@]}" 2
}

# A psql that prints the cards table as psql --csv would.
setup_asset_csv() {
	mkdir -p "$W/stand-in"
	cat >"$W/stand-in/psql" <<-EOF
		#!/bin/sh
		printf '%s\r\n' card,carrier,device,pkg_expires_at,data_used_kb,data_quota_kb \
			$CARD,c17,D42,$FUTURE,10,100 89860012345678901235,c17,,$PAST,,
	EOF
	chmod +x "$W/stand-in/psql"
}

@test "docs/operations.md: the asset mirror loaded from psql --csv" {
	block asset-csv
	assert_success
	# Every row loaded: nothing selected.
	assert_output ''
	assert_regex "$stderr" 'sr-asset: 2 rows'
	run -0 srq "sr-admin show $CARD 89860012345678901235"
	assert_equal "$(jq -c '[.card, .facts.device, .facts.pkg_expires_at]' <<<"$output")" \
		"$(printf '%s\n' "[\"$CARD\",\"D42\",$FUTURE]" "[\"89860012345678901235\",null,$PAST]")"
}

# Account c17 has had a request.
known_account() {
	srq "printf '%s\n' '{\"card\":\"$CARD\",\"carrier\":\"c17\",\"scene\":\"refund\",\"facts\":{\"status\":\"active\",\"refunded\":1}}' | sr-enqueue >/dev/null"
}

# ... and its breaker open.
setup_limits() {
	known_account
	srq "sr-admin breaker c17 open --reason 'gateway down' >/dev/null"
}

@test "docs/carriers.md: an account's limits, pause and breaker" {
	block limits
	assert_success
	assert_equal "$(head -n 4 <<<"$output" | jq -r '"\(.qps) \(.burst) \(.breaker) \(.paused_until_ms != null)"')" \
		"10 1 open false
5 2 open false
5 2 open true
5 2 closed true"
	# Two hours (the Redis clock is this machine's).
	assert_equal "$(sed -n 3p <<<"$output" | jq --arg now "$(date +%s%3N)" '(.paused_until_ms - ($now | tonumber)) / 60000 | round')" 120
	# The audit, filtered: what the lines above changed, and the breaker
	# the set-up opened.
	assert_equal "$(tail -n +5 <<<"$output" | jq -r .event | tr '\n' ' ')" 'admin:open admin:limits admin:pause admin:close '
}

# Three cards of c17 to poll (the account has had a request).
setup_rate() {
	known_account
	printf '%s\n' "$CARD" 89860012345678901235 89860012345678901236 >"$W/cards.txt"
}

@test "docs/carriers.md: sharing the account's rate with a poller" {
	block rate
	assert_success
	# The poller's three calls, each after its slot.
	assert_equal "$(jq -r .status "$W/status.jsonl" | tr '\n' ' ')" 'active active active '
	assert_equal "$(jq -r 'select(.kind == "status") | .card' "$T/gw.log" | wc -l)" 3
	# Three slots of usage, spaced by the pace; show counts both classes.
	assert_equal "$(head -n 1 <<<"$output" | jq -c '[.status, .n, (.slots | length), .slots[2] - .slots[0] >= 190]')" \
		'["ok",3,3,true]'
	assert_equal "$(tail -n 1 <<<"$output" | jq -c '[.account, .classes.status.slots, .classes.usage.slots]')" '["c17",3,3]'
}

setup_contract() { known_account; }

@test "docs/carriers.md: the script contract, called with redis-cli" {
	block contract
	assert_success
	assert_equal "$(head -n 1 <<<"$output" | jq -c '[.script, .keys]')" \
		'["rate_take",["polling:carrier:{c17}:edge","polling:carrier:{c17}:limits","polling:carrier:{c17}:rate:slots"]]'
	# The script loaded is the one the contract names, and grants a slot.
	[ -s "$W/rate_take.lua" ]
	assert_equal "$(sha1sum <"$W/rate_take.lua" | cut -d' ' -f1)" "$(head -n 1 <<<"$output" | jq -r .sha1)"
	assert_equal "${#lines[@]}" 4
	assert_line --index 1 ok
	assert_line --index 2 --regexp '^[0-9]{13}$'
	assert_line --index 3 --regexp '^[0-9]{13}$'
}

# (A manual recheck: the resume in the normal queue.)
setup_layout() { stopped_renewed manual_recheck; }

@test "docs/redis.md: the Redis layout, read with redis-cli" {
	block layout
	assert_success
	# No claimed command: no card hash; the idle entry (version 2, the
	# stop) and the command waiting packed; show has both.
	assert_line --index 0 ''
	assert_line --index 1 --regexp '^2\|[0-9]{13}\|stopped\|[0-9]{13}\|stop$'
	assert_line --index 2 'resume|entitled|manual_recheck||1'
	assert_equal "$(sed -n 4p <<<"$output" | jq -c '[.ver, .command.action, .command.last_dir]')" '[2,"resume","stop"]'
	# The queue: the card, due after its interval; the audit, newest first;
	# the edge, with its pace.
	assert_line --index 4 "$CARD"
	assert_line --index 5 --regexp '^[0-9]{13}$'
	assert_equal "$(grep -cEx '[0-9]{13}-[0-9]+' <<<"$output")" 3
	assert_equal "$(grep -x -A1 event <<<"$output" | grep -v -e event -e -- | tr '\n' ' ')" 'queued call:ok queued '
	assert_line tat
}

@test "docs/operations.md: the live view, until Ctrl-C" {
	block live-view
	# sr-stat ends on SIGINT, exit 0; to a file, the frames follow each
	# other (5 s apart: two in 7 s), each a heading and the table, no
	# escape codes.
	assert_success
	assert_equal "$(grep -c '^sr-stat --watch 5   .*[+-][0-9][0-9]:[0-9][0-9] (Redis clock)$' <<<"$output")" 2
	assert_line --regexp '^account +queued +due .* qps_eff +qps +breaker +paused$'
	assert_line --regexp '^c17 +1 '
	! grep -q $'\e' <<<"$output"
	assert_equal "$stderr" ''
}

@test "docs/operations.md: systemd (skipped)" {
	block systemd
}

@test "docs/internals.md: fuzzing (skipped)" {
	block fuzz
}

@test "docs/carriers.md: a profile starting from an installed example (from = onelink)" {
	block cmcc-profile
	mkdir -p "$T/profiles"
	cp "$BLOCK_BODY" "$T/profiles/cmcc-beijing.profile"
	run --separate-stderr env -i SRQ_CONFIG= SRQ_PROFILES="$T/profiles" "$RB_PREFIX/bin/sr-admin" profile cmcc-bj-01
	# Resolved: its own base and rate, OneLink's requests, token and rules;
	# only the secret it names (under /etc/srq/secrets) is not there.
	assert_equal "$(jq -c '[.profile, .base, .limits.qps, .limits.max_inflight, .limits.interval_ms,
		.requests.token.url, (.rules | length), .check.requests.stop]' <<<"$output")" \
		'["cmcc-beijing","https://api.iot.10086.cn/v5/ec",8,4,1800000,"{base}/get/token?appid={appid}&password={password}&transid={reqid}",9,"ok"]'
	assert_equal "$(jq -r '.check.secrets | keys | join(" ")' <<<"$output")" password
	assert_failure 1
}
