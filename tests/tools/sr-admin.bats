#!/usr/bin/env bats
# sr-admin.bats - why a card is (not) moving, alerts per cause, retry, audit.

bats_require_minimum_version 1.5.0

load ../test_helper

# why_state CARD: the state; its sentence must give times as people read
# them (ISO, and how long from now), never bare epoch milliseconds.
why_state() {
	local w
	w=$(sr-admin why "$1")
	if jq -r .why <<<"$w" | grep -E '[0-9]{13}'; then
		echo "epoch ms in: $w" >&2
		return 1
	fi
	jq -r .state <<<"$w"
}

# Each state holds for a while only (an interval, a lease, a backoff): each
# is set up to hold for a minute, longer than a loaded machine takes from
# setting it up to asking (a 1.2 s interval once ran out in between, and
# why rightly said "due").
@test "why: each waiting state, set up for real through the pipeline and the gateway" {
	gwsim_start
	# The judgment says nothing is to be done.
	enqueue N1 polling "$FUTURE"
	assert_equal "$(why_state N1)" no_command
	sr-admin why N1 | jq -e '.why | test("judgment says entitled")'
	# Claimed: a pipeline holds its lease.
	enqueue C1 polling "$PAST"
	assert_equal "$(why_state C1)" due
	SRQ_LEASE_MS=60000 sr-claim >/dev/null
	assert_equal "$(why_state C1)" claimed
	sr-admin drop C1 --reason test >/dev/null
	# Interval: called a moment ago, and now wanted the other way.
	enqueue I1 polling "$PAST"
	drain 10 >/dev/null
	SRQ_MIN_INTERVAL_MS=60000 enqueue I1 polling "$FUTURE" stopped
	assert_equal "$(SRQ_MIN_INTERVAL_MS=60000 why_state I1)" interval
	# Superseded: the facts changed under a queued command before its call.
	enqueue S1 polling "$PAST"
	printf '{"card":"S1","carrier":"c1","pkg_expires_at":%d}\n' "$FUTURE" | sr-asset >/dev/null
	sr-claim --carrier c1 | sr-exec | sr-confirm >/dev/null
	assert_equal "$(why_state S1)" superseded
	# Rate: the account's last second is used up.
	enqueue R1 polling "$PAST" active c2
	sr-admin limits c2 qps=1 --reason test >/dev/null
	export SRQ_RATE_WINDOW_MS=60000
	drain 10 >/dev/null
	enqueue R2 polling "$PAST" active c2
	assert_equal "$(why_state R2)" rate
	unset SRQ_RATE_WINDOW_MS
	# Refused: the carrier refused the call for rate (429), without applying
	# it: not a failure of the card, it goes again after Retry-After.
	gwsim_start --fault-429 1 --retry-after 60
	enqueue B1 polling "$PAST" active c3
	sr-claim --carrier c3 | sr-exec | sr-confirm >/dev/null
	assert_equal "$(why_state B1)" refused
	sr-admin why B1 | jq -e '.why | test("HTTP 429")'
	# Backoff: a failure of the card's call (the carrier unreachable),
	# held a minute (its first backoff is a second at most: a Retry-After
	# put in its result holds it longer).
	enqueue B2 polling "$PAST" active c6
	sr-claim --carrier c6 | SRQ_GATEWAY=http://127.0.0.1:1 sr-exec | jq -c '.retry_after_ms = 60000' |
		sr-confirm >/dev/null
	assert_equal "$(why_state B2)" backoff
	# Confirming: a 5xx after the carrier applied; a status query will decide.
	gwsim_start --fault-5xx-after 1
	export SRQ_CONFIRM_DELAY_MS=60000
	enqueue U1 polling "$PAST" active c4
	sr-claim --carrier c4 | sr-exec | sr-confirm >/dev/null
	assert_equal "$(why_state U1)" confirming
	# Frozen: a permanent rejection.
	gwsim_start --fault-reject 1
	enqueue F1 polling "$PAST" active c5
	sr-claim --carrier c5 | sr-exec | sr-confirm >/dev/null
	assert_equal "$(why_state F1)" frozen
	sr-admin why F1 | jq -e '.why | test("sr-admin retry F1")'
}

@test "audit: every transition and every admin mutation, with versions before and after, who and why" {
	gwsim_start
	# who is the user running it (cron sets no USER), not what USER says.
	export USER=somebody-else
	enqueue D1 polling "$PAST"
	sr-admin freeze D1 --reason "hold on" >/dev/null
	# why names who froze it, when and why.
	sr-admin why D1 | jq -e --arg who "$(id -un)" \
		'.state == "frozen" and (.why | test("^frozen by " + $who + " at [0-9T:-]+Z \\([0-9]+(ms|s) ago\\): hold on"))'
	sr-admin retry D1 --reason "go" >/dev/null
	drain 10 >/dev/null
	enqueue D1 polling "$FUTURE" stopped
	sr-admin drop D1 --reason "not now" >/dev/null
	run -0 sr-admin audit D1
	assert_equal "$(echo "$output" | jq -r '"\(.event) \(.ver_before)>\(.ver_after)"' | tr '\n' ',')" \
		"queued 0>1,admin:freeze 1>1,admin:retry 1>1,call:ok 1>1,queued 1>2,admin:drop 2>3,"
	assert_equal "$(echo "$output" | jq -r 'select(.event | startswith("admin:")) | "\(.who) \(.why)"' | tr '\n' ',')" \
		"$(id -un) hold on,$(id -un) go,$(id -un) not now,"
	run -0 sr-admin audit --account c1
	assert_equal "$(echo "$output" | wc -l)" 6
	# Limits (in the account's audit) and the switch are audited too.
	sr-admin limits c1 qps=7 --reason "carrier asked" >/dev/null
	run rcli XRANGE 't:carrier:{c1}:audit' - +
	assert_line "carrier asked"
	sr-admin switch on --reason "back to the queue" >/dev/null
	run rcli XRANGE 't:{global}:admin_audit' - +
	assert_line "back to the queue"
	run -2 sr-admin bogus
	run -1 sr-admin why nobody-knows-me
}

@test "a card flipped three times in an hour is flapping: counted, and alerted once" {
	gwsim_start
	now=$(date +%s)
	flip() { # flip PKG_EXPIRES_AT: a request, then its execution
		printf '{"card":"FL","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' "$1" | sr-enqueue >/dev/null
		drain 10 >/dev/null
	}
	printf '{"card":"FL","carrier":"c1","pkg_expires_at":%d,"status":"active"}\n' "$now" | sr-asset >/dev/null
	flip $((now - 1))      # stop
	flip $((now + 86400))  # resume: 1 change
	flip $((now - 1))      # stop: 2
	flip $((now + 86400))  # resume: 3
	assert_equal "$(jq -r .kind "$T/gw.log" | tr '\n' ' ')" "stop resume stop resume "
	run -0 sr-stat --carrier c1
	jq -e '.flapping == 1' <<<"$(echo "$output" | head -1)"
	flip $((now - 1))      # and once more: still one alert
	assert_equal "$(sr-admin alerts | jq -r 'select(.alert == "flapping") | .card')" FL
}

@test "alerts --ack: an id open in two accounts (alerts of the same millisecond) is refused without --carrier; with it, only that account's is closed" {
	local a id=1796000000000-0
	for a in acmeA acmeB; do
		rcli SADD t:accounts "$a" >/dev/null
		rcli XADD "t:carrier:{$a}:alerts" "$id" alert permanent card "c$a" >/dev/null
		rcli HSET "t:carrier:{$a}:alerts_open" "permanent:c$a" "$id" >/dev/null
	done
	run -2 --separate-stderr sr-admin alerts --ack "$id" --reason x
	assert_output ''
	[[ $stderr == *"alert '$id' is open in more than one account (acmeA, acmeB)"*"--carrier"* ]]
	for a in acmeA acmeB; do
		assert_equal "$(rcli HGET "t:carrier:{$a}:alerts_open" "permanent:c$a")" "$id"
	done
	run -0 sr-admin alerts --ack "$id" --carrier acmeB --reason x
	assert_equal "$(jq -r '"\(.carrier) \(.cause)"' <<<"$output")" "acmeB permanent:cacmeB"
	assert_equal "$(rcli HGET "t:carrier:{acmeA}:alerts_open" permanent:cacmeA)" "$id"
	assert_equal "$(rcli HEXISTS "t:carrier:{acmeB}:alerts_open" permanent:cacmeB)" 0
	# Now open in one account only: no --carrier needed.
	run -0 sr-admin alerts --ack "$id" --reason x
	assert_equal "$(jq -r .carrier <<<"$output")" acmeA
	run -1 sr-admin alerts --ack "$id" --reason x
}

@test "alerts: one account's alerts Redis cannot read do not hide the others'; the exit says so" {
	local a
	for a in acmeA acmeB acmeC; do
		rcli SADD t:accounts "$a" >/dev/null
		rcli XADD "t:carrier:{$a}:alerts" '*' alert permanent card "c$a" >/dev/null
	done
	rcli DEL 't:carrier:{acmeB}:alerts' >/dev/null
	rcli SET 't:carrier:{acmeB}:alerts' clobbered >/dev/null
	run -3 --separate-stderr sr-admin alerts --all # (closed alerts: none is open)
	assert_equal "$(jq -r .carrier <<<"$output" | sort | paste -sd' ')" "acmeA acmeC"
	[[ $stderr == *"account 'acmeB': alerts not read: WRONGTYPE"* ]]
}

@test "alerts --ack: an account whose open alerts Redis cannot read does not stop the ack of another's" {
	local a id=1796000000000-0
	for a in acmeA acmeB; do
		rcli SADD t:accounts "$a" >/dev/null
	done
	rcli SET 't:carrier:{acmeA}:alerts_open' clobbered >/dev/null
	rcli XADD 't:carrier:{acmeB}:alerts' "$id" alert permanent card cB >/dev/null
	rcli HSET 't:carrier:{acmeB}:alerts_open' permanent:cB "$id" >/dev/null
	run -0 --separate-stderr sr-admin alerts --ack "$id" --reason x
	assert_equal "$(jq -r .carrier <<<"$output")" acmeB
	[[ $stderr == *"account 'acmeA': open alerts not read: WRONGTYPE"* ]]
}

@test "a card id over 64 characters from stdin is refused as from the command line, never cut to another card's" {
	local id64 long
	id64=$(printf 'L%.0s' $(seq 64))
	long="${id64}X"
	enqueue "$id64" polling "$PAST"
	run -1 --separate-stderr sr-admin drop "$long" --reason x
	[[ $stderr == *"'$long' is not a card id"* ]]
	for line in "$long" "{\"card\":\"$long\"}"; do
		run -1 --separate-stderr sr-admin drop - --reason x <<<"$line"
		assert_output ''
		[[ $stderr == *"line 1: '$long' is not a card id"* ]]
	done
	# The 64-character card is untouched: its command still queued.
	run -0 sr-admin list c1
	assert_equal "$(jq -r .card <<<"$output")" "$id64"
}

@test "card lines from stdin: one whose carrier is not the card's account is refused, its card untouched; the right carrier and a bare id still work" {
	for c in W1 R1 B1 W2 R2 B2; do enqueue "$c" polling "$PAST" active acB; done
	enqueue A1 polling "$PAST" active acA
	ver() { sr-admin show "$1" | jq -r '"\(.command.action // "none") \(.ver) \(.command.frozen // 0)"'; }
	# drop: W1's line names acA, where W1 is not.
	run -1 --separate-stderr sr-admin drop - --reason x < <(printf '%s\n' \
		'{"card":"W1","carrier":"acA"}' '{"card":"R1","carrier":"acB"}' 'B1')
	assert_equal "$(jq -c . <<<"$output" | head -1)" \
		'{"line":1,"card":"W1","carrier":"acA","status":"rejected","error":"the line names account '"'acA'"', but card '"'W1'"' is in '"'acB'"': nothing done"}'
	assert_equal "$(jq -r 'select(.done) | "\(.card) \(.carrier) \(.done)"' <<<"$output" | paste -sd,)" \
		"R1 acB drop,B1 acB drop"
	[[ $stderr == *"line 1: the line names account 'acA', but card 'W1' is in 'acB': nothing done"* ]]
	assert_equal "$(ver W1)" "stop 1 0"
	assert_equal "$(ver R1) $(ver B1)" "none 2 0 none 2 0"
	assert_equal "$(ver A1)" "stop 1 0"
	# freeze, then retry: the same.
	run -1 --separate-stderr sr-admin freeze - --reason x < <(printf '%s\n' \
		'{"card":"W2","carrier":"acA"}' '{"card":"R2","carrier":"acB"}' '{"card":"B2"}')
	assert_equal "$(jq -r '"\(.card) \(.status // .done)"' <<<"$output" | paste -sd,)" \
		"W2 rejected,R2 freeze,B2 freeze"
	assert_equal "$(ver W2) $(ver R2) $(ver B2)" "stop 1 0 stop 1 1 stop 1 1"
	run -1 --separate-stderr sr-admin retry - --reason x < <(printf '%s\n' \
		'{"card":"R2","carrier":"acA"}' '{"card":"B2","carrier":"acB"}')
	assert_equal "$(jq -r '"\(.card) \(.status // .done)"' <<<"$output" | paste -sd,)" \
		"R2 rejected,B2 retry"
	assert_equal "$(ver R2) $(ver B2)" "stop 1 1 stop 1 0"
	# --carrier names the account: a line naming another is refused too.
	run -1 --separate-stderr sr-admin drop - --carrier acB --reason x <<<'{"card":"W2","carrier":"acA"}'
	[[ $stderr == *"line 1: the line names account 'acA', but --carrier says 'acB': nothing done"* ]]
	assert_equal "$(ver W2)" "stop 1 0"
	# A carrier that is not an account id is refused; so are why and show.
	run -1 --separate-stderr sr-admin drop - --reason x <<<'{"card":"W2","carrier":7}'
	[[ $stderr == *'line 1: "carrier" is not an account id: nothing done'* ]]
	for c in why show; do
		run -1 --separate-stderr sr-admin "$c" - < <(printf '%s\n' \
			'{"card":"W2","carrier":"acA"}' '{"card":"W2","carrier":"acB"}')
		assert_equal "$(jq -r '"\(.card) \(.carrier) \(.status // "shown")"' <<<"$output" | paste -sd,)" \
			"W2 acA rejected,W2 acB shown"
	done
	assert_equal "$(ver W2)" "stop 1 0"
	# A card the asset mirror does not know is looked for in its line's
	# account, as with --carrier.
	rcli DEL t:card:W2:facts >/dev/null
	run -0 sr-admin drop - --reason x <<<'{"card":"W2","carrier":"acB"}'
	assert_equal "$(jq -r '"\(.card) \(.carrier) \(.done)"' <<<"$output")" "W2 acB drop"
}

@test "why keeps its sentence when a long reason is cut mid-character: cut on a character boundary" {
	local k cjk
	cjk=$(python3 -c 'print("客户争议" * 60)')
	# A paused account's sentence is the same length on every run (no
	# "ago" in it): with 0, 1 and 2 bytes more before the 3-byte
	# characters, the cut lands mid-character in two of the three.
	for k in 0 1 2; do
		enqueue "P$k" polling "$PAST" active "p$k"
		sr-admin pause "p$k" --reason "$(printf '%*s' "$k" '' | tr ' ' x)$cjk" >/dev/null
		run -0 sr-admin why "P$k"
		assert_equal "$(jq -r .state <<<"$output")" paused
		jq -e '.why | test("is paused until resumed by .*: x{'"$k"'}(客户争议)+[客户争议]*$")' <<<"$output"
	done
	# The same for a frozen card's reason (the repro: most of the time).
	enqueue F1 polling "$PAST"
	sr-admin freeze F1 --reason "x$cjk" >/dev/null
	run -0 sr-admin why F1 --carrier c1
	jq -e '.state == "frozen" and (.why | test("客户争议"))' <<<"$output"
}

@test "show and why of a card nobody knows, limits and breaker of an account nobody named: said on stderr, exit 1" {
	enqueue K1 polling "$PAST"
	for c in show why; do
		run -1 --separate-stderr sr-admin "$c" nobody-knows-me --carrier c1
		assert_output ''
		[[ $stderr == *"card 'nobody-knows-me' is not known in account 'c1'"* ]]
		# One unknown among known ones: the known ones are answered.
		run -1 --separate-stderr sr-admin "$c" K1 nobody-knows-me --carrier c1
		assert_equal "$(jq -r .card <<<"$output")" K1
		run -0 sr-admin "$c" K1 --carrier c1
	done
	for c in limits breaker; do
		run -1 --separate-stderr sr-admin "$c" c9
		assert_output ''
		[[ $stderr == *"account 'c9' is unknown: no request ever named it (a typo?)" ]]
		run -0 sr-admin "$c" c1
		assert_equal "$(jq -r .carrier <<<"$output")" c1
	done
}

@test "an account set up with --force before its first request, or with cards loaded for it, is known to limits and sr-stat" {
	# limits --force on an account no request named yet: it is listed from
	# then on (it was "unknown" to limits and missing from sr-stat).
	run -0 sr-admin limits c7 qps=3 --force --reason "new contract"
	run -0 sr-admin limits c7
	assert_equal "$(jq -r '"\(.carrier) \(.qps)"' <<<"$output")" "c7 3"
	run -0 --separate-stderr sr-stat --carrier c7
	assert_equal "$(jq -r 'select(.carrier == "c7") | .qps' <<<"$output")" 3
	[ -z "$stderr" ]
	run -0 sr-stat --table
	assert_line --regexp '^c7 '
	# 1,500 cards loaded for an account no request named: it shows, with
	# its cards, as soon as they are loaded.
	awk 'BEGIN { for (i = 0; i < 1500; i++) printf "{\"card\":\"S%04d\",\"carrier\":\"c8\",\"status\":\"active\"}\n", i }' |
		sr-asset >/dev/null
	run -0 sr-admin limits c8
	assert_equal "$(jq -r .carrier <<<"$output")" c8
	run -0 sr-stat
	assert_equal "$(jq -r .carrier <<<"$output" | paste -sd' ')" "c7 c8 *"
	run -0 sr-admin audit --account c7
	assert_equal "$(jq -r .event <<<"$output")" admin:limits
	# A typo is still a typo: without --force nothing is listed.
	run -1 sr-admin limits c9 qps=3 --reason x
	run -1 sr-admin limits c9
	assert_equal "$(rcli SISMEMBER t:accounts c9)" 0
}

# alerts_of ACCOUNT KIND N: N open alerts of KIND for cards K1..KN of
# ACCOUNT, as confirm.lua raises them (an entry, and its cause open).
alerts_of() {
	local a=$1 kind=$2 n=$3 i
	rcli SADD t:accounts "$a" >/dev/null
	for i in $(seq "$n"); do
		echo "EVAL \"local id = redis.call('XADD', KEYS[1], '*', 'card', ARGV[1], 'alert', ARGV[2], 'http', 500) redis.call('HSET', KEYS[2], ARGV[2] .. ':' .. ARGV[1], id)\" 2 t:carrier:{$a}:alerts t:carrier:{$a}:alerts_open K$i $kind"
	done | rcli >/dev/null
}

@test "alerts in bulk: every open one of an account (of a kind) acknowledged and counted, or those whose ids come on stdin; open ones listed unless --all" {
	alerts_of c1 failures 205
	alerts_of c1 frozen 3
	alerts_of c2 failures 2
	# 205 alerts of one incident: one command, each acknowledged (and
	# audited), the count said.
	run -0 --separate-stderr sr-admin alerts --ack --carrier c1 --type failures --reason "gateway fixed"
	assert_equal "$(wc -l <<<"$output")" 205
	assert_equal "$(jq -r .cause <<<"$output" | sort -u | wc -l)" 205
	[[ $stderr == *"acknowledged 205 failures alerts of account 'c1'"* ]]
	assert_equal "$(sr-admin audit --account c1 | jq -r 'select(.event == "admin:ack") | .why' | sort | uniq -c | awk '{ print $1, $2, $3 }')" "205 gateway fixed"
	# The rest is as it was: c1's frozen ones, c2's failures.
	run -0 sr-admin alerts
	assert_equal "$(jq -r '"\(.carrier) \(.alert)"' <<<"$output" | sort | uniq -c | awk '{ print $1, $2, $3 }' | paste -sd,)" \
		"3 c1 frozen,2 c2 failures"
	# Open ones only, unless --all (each says whether it is open).
	run -0 sr-admin alerts --all --carrier c1
	assert_equal "$(jq -r '"\(.alert) \(.open)"' <<<"$output" | sort | uniq -c | awk '{ print $1, $2, $3 }' | paste -sd,)" \
		"205 failures false,3 frozen true"
	run -0 sr-admin alerts --type frozen
	assert_equal "$(jq -r .card <<<"$output" | paste -sd' ')" "K1 K2 K3"
	# --ack -: ids on stdin, bare or as alerts' lines (with their account);
	# one not open is said, the others acknowledged, exit 1.
	closed=$(sr-admin alerts --all --carrier c1 --type failures | jq -r .id | head -1)
	{
		sr-admin alerts --carrier c1 --type frozen | jq -r .id | head -1
		sr-admin alerts --carrier c1 --type frozen | tail -n +2
		echo "$closed"
	} >"$T/ids"
	run -1 --separate-stderr sr-admin alerts --ack - --reason "seen" <"$T/ids"
	assert_equal "$(jq -r .cause <<<"$output" | paste -sd' ')" "frozen:K1 frozen:K2 frozen:K3"
	[[ $stderr == *"alert '$closed' is not open"* ]]
	[[ $stderr == *"acknowledged 3 alerts (1 not open, 0 refused)"* ]]
	run -0 --separate-stderr sr-admin alerts --ack - --reason "seen" < <(sr-admin alerts --carrier c2)
	[[ $stderr == *"acknowledged 2 alerts"* ]]
	run -0 sr-admin alerts
	assert_output ''
	# Every open alert of every account is no one's intent: --carrier, or
	# refused; so is a kind that is none, and --type or --all with one id.
	run -2 --separate-stderr sr-admin alerts --ack --reason x
	[[ $stderr == *"--ack with no ID acknowledges every open alert of an account: say which with --carrier A"* ]]
	run -2 --separate-stderr sr-admin alerts --ack --carrier c1 --type failure --reason x
	[[ $stderr == *"--type: 'failure' is not a kind of alert"* ]]
	run -2 sr-admin alerts --ack "$closed" --type failures --reason x
	run -2 sr-admin alerts --ack - --all --reason x </dev/null
	run -2 sr-admin alerts --ack bogus --reason x
	run -2 sr-admin why K1 --all
	# Nothing open to acknowledge is no error: none acknowledged, said.
	run -0 --separate-stderr sr-admin alerts --ack --carrier c1 --reason again
	[[ $stderr == *"acknowledged 0 alerts of account 'c1'"* ]]
}

@test "a change to what already is exits 0 with \"changed\":false, and is not audited; a change made says \"changed\":true" {
	enqueue D1 polling "$PAST"
	audit() { rcli XLEN 't:carrier:{c1}:audit'; }
	changed() { jq -r .changed <<<"$output"; }
	n=$(audit)
	# breaker close of a closed breaker, resume of a running account (they
	# were exit 1), and their like: each says it changed nothing.
	for c in "breaker c1 close" "resume c1"; do
		# shellcheck disable=SC2086 # (the words are the command's)
		run -0 --separate-stderr sr-admin $c --reason x
		assert_equal "$(changed)" false
	done
	assert_equal "$(audit)" "$n"
	for c in "breaker c1 open" "pause c1 --until 2099-01-01T00:00Z" "limits c1 qps=7"; do
		# shellcheck disable=SC2086
		run -0 sr-admin $c --reason x
		assert_equal "$(changed)" true
		n=$(audit)
		# shellcheck disable=SC2086
		run -0 sr-admin $c --reason again
		assert_equal "$(changed)" false
		assert_equal "$(audit)" "$n"
	done
	run -0 sr-admin limits c1 qps=7 running=3 --reason x
	assert_equal "$(changed)" true
	# A drop of a card that has no command: nothing to cancel.
	run -0 sr-admin drop D1 --reason x
	assert_equal "$(jq -r '"\(.done) \(.changed)"' <<<"$output")" "drop true"
	n=$(audit)
	run -0 sr-admin drop D1 --reason x
	assert_equal "$(jq -r '"\(.done) \(.changed)"' <<<"$output")" "drop false"
	assert_equal "$(audit)" "$n"
	# A card nobody knows is a typo, not a no-op.
	run -1 sr-admin drop nobody-knows-me --carrier c1 --reason x
}

@test "a reader that stops reading (| head -1) is no failure of sr-admin or sr-stat: no \"Broken pipe\", the exit of what was done" {
	# More than a pipe holds: the writes after head is gone fail (EPIPE).
	rcli SADD t:accounts c1 >/dev/null
	for i in $(seq 5000); do
		printf 'XADD t:carrier:{c1}:audit * card X%d event queued action stop\n' "$i"
	done | rcli >/dev/null
	run -0 bash -c 'set -o pipefail; sr-admin audit --account c1 2>"$1" | head -1' _ "$T/admin.err"
	assert_equal "$(jq -r .card <<<"$output")" X1
	assert_equal "$(cat "$T/admin.err")" ""
	# sr-stat --watch writes a frame a second: the one after head left
	# ends it, quietly.
	run -0 bash -c 'set -o pipefail; timeout 60 sr-stat --watch 1 2>"$1" | head -3' _ "$T/stat.err"
	assert_equal "$(cat "$T/stat.err")" ""
	# A write that fails otherwise (a full disk) is still a failure.
	run -3 bash -c 'sr-admin audit --account c1 >/dev/full'
	assert_output --partial "writing output failed: No space left on device"
}

@test "why: the command a sentence suggests runs as printed (the sentence's, and \"run\"), and moves the card" {
	gwsim_start
	# suggest CARD: why's command, the same in the sentence, run by sh.
	suggest() {
		local w run
		w=$(sr-admin why "$1")
		run=$(jq -r .run <<<"$w")
		[[ $(jq -r .why <<<"$w") == *"$run"* ]] || { echo "not in the sentence: $run"; return 1; }
		echo "$run" >>"$T/ran"
		sh -c "$run" >/dev/null
	}
	# Frozen: 'sr-admin retry CARD' needed --reason; now it runs.
	enqueue F1 polling "$PAST"
	sr-admin freeze F1 --reason "customer dispute" >/dev/null
	suggest F1
	assert_equal "$(why_state F1)" due
	# Due: the pipeline, by hand.
	suggest F1
	assert_equal "$(why_state F1)" no_command
	assert_equal "$(jq -r .card "$T/gw.log")" F1
	# Not queued: a request for it (its command was dropped).
	enqueue N1 polling "$PAST"
	sr-admin drop N1 --reason dup >/dev/null
	assert_equal "$(why_state N1)" not_queued
	suggest N1
	assert_equal "$(why_state N1)" due
	# The breaker opened by hand: closed again.
	sr-admin breaker c1 open --reason incident >/dev/null
	assert_equal "$(why_state N1)" breaker
	suggest N1
	assert_equal "$(why_state N1)" due
	# A limit of 0 written by hand: lifted to the configured one.
	rcli HSET 't:carrier:{c1}:limits' qps 0 >/dev/null
	assert_equal "$(why_state N1)" paused
	suggest N1
	assert_equal "$(why_state N1)" due
	assert_equal "$(sr-admin limits c1 | jq .qps)" 10
	# Every one of them was run (none left untried).
	assert_equal "$(cut -d' ' -f1-2 "$T/ran" | paste -sd,)" \
		"sr-admin retry,sr-claim --carrier,echo '{\"card\":\"N1\",\"carrier\":\"c1\",\"scene\":\"manual_recheck\"}',sr-admin breaker,sr-admin limits"
}

@test "why of a dropped card says who dropped it, when and why (the audit's)" {
	enqueue D1 polling "$PAST"
	enqueue D2 polling "$PAST"
	SUDO_USER=alice sr-admin drop D1 --reason "duplicate of D7" >/dev/null
	run -0 sr-admin why D1
	jq -e '.state == "not_queued" and (.why | test("^no command queued \\(dropped by alice at [0-9-]+T[0-9:]+Z \\([0-9a-z]+ ago\\): duplicate of D7\\), but the judgment wants stop"))' <<<"$output"
	# Behind newer entries of other cards too; and a card whose judgment
	# wants nothing any more says it all the same.
	enqueue D3 polling "$PAST"
	SUDO_USER=bob sr-admin drop D2 --reason "renewed by phone" >/dev/null
	printf '{"card":"D2","carrier":"c1","pkg_expires_at":%d}\n' "$FUTURE" | sr-asset >/dev/null
	enqueue D4 polling "$PAST"
	run -0 sr-admin why D2
	jq -e '.state == "no_command" and (.why | test("^no command \\(dropped by bob at .*: renewed by phone\\): the judgment says entitled"))' <<<"$output"
	# A command finished by a call was not dropped: nothing said of it.
	gwsim_start
	drain 10 >/dev/null
	run -0 sr-admin why D3
	jq -e '.state == "no_command" and (.why | test("dropped") | not)' <<<"$output"
}
