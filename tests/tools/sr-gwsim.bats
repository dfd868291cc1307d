#!/usr/bin/env bats
# sr-gwsim.bats - the simulator's own contract, spoken to with curl: what a
# demanding carrier answers, and what it logs, in each API shape.

bats_require_minimum_version 1.5.0

load ../test_helper

# The same whatever SRQ_TEST_REDIS says: these tests start the Redis they
# need (or none), so make test-cluster leaves them to make test.
# bats file_tags=own-redis

# The simulator needs no Redis: only the per-test directory (as help.bats),
# which keeps this suite fast.
setup() {
	T="$BATS_TEST_TMPDIR"
}

# The simulator stopped by SIGTERM with nothing leaked or undefined: the
# sanitizers report on its stderr.
teardown() {
	srq_teardown
	if [ -f "$T/gw.err" ] && grep -q 'Sanitizer' "$T/gw.err"; then
		cat "$T/gw.err" >&2
		return 1
	fi
}

# req CURL-ARGS...: one request; the status in $http, the body in $body,
# the headers in $T/headers.
req() {
	http=$(curl -sS -D "$T/headers" -o "$T/body" -w '%{http_code}' "$@")
	body=$(cat "$T/body")
}

# change CARD stop|resume [ACCOUNT [CURL-ARGS...]]: a default-shape call.
change() {
	req -X POST -H "Idempotency-Key: $1-$2" -H 'Content-Type: application/json' \
		-d "{\"carrier\":\"${3:-c1}\",\"request_id\":\"$1-$2\"}" "${@:4}" \
		"$SRQ_GATEWAY/v1/cards/$1/$2"
}

# query CARD [ACCOUNT [CURL-ARGS...]]: a default-shape status query.
query() {
	req "${@:3}" "$SRQ_GATEWAY/v1/cards/$1/status?carrier=${2:-c1}"
}

# logged N: the N-th line of the log (1 = first, -1 = last), compact.
logged() {
	if [ "$1" -lt 0 ]; then tail -n "${1#-}" "$T/gw.log" | head -1; else sed -n "${1}p" "$T/gw.log"; fi
}

# field N KEY: one member of the N-th log line.
field() {
	logged "$1" | jq -r ".$2"
}

# cards LINE...: an initial state file for --cards.
cards() {
	printf '%s\n' "$@" >"$T/cards.jsonl"
}

@test "default: ok, already, too frequent and the query, with what each logs" {
	cards '{"card":"S1","status":"stopped"}'
	gwsim_start --cards "$T/cards.jsonl"
	change K1 stop
	assert_equal "$http $body" '200 {"code":"OK","card":"K1"}'
	logged -1 | jq -e '.kind == "stop" and .card == "K1" and .carrier == "c1" and .http == 200
		and .code == "OK" and .applied and .state == "stopped" and .fault == ""
		and .key == "K1-stop" and (.refused | not)'
	query K1
	assert_equal "$http $body" '200 {"card":"K1","status":"stopped"}'
	logged -1 | jq -e '.kind == "status" and .code == "stopped" and (.applied | not) and (.refused | not)'
	# Inside the card's interval, resume as well as stop.
	change K1 resume
	assert_equal "$http $body" '409 {"code":"TOO_FREQUENT"}'
	logged -1 | jq -e '.code == "TOO_FREQUENT" and (.applied | not) and .state == "stopped" and (.refused | not)'
	change S1 stop
	assert_equal "$http $body" '200 {"code":"ALREADY","card":"S1"}'
	logged -1 | jq -e '.code == "ALREADY" and (.applied | not) and .state == "stopped"'
	query S2
	assert_equal "$http $body" '200 {"card":"S2","status":"active"}'
	# An account id too long is refused, not cut down to another account.
	change K3 stop "c$(printf '%070d' 0)"
	assert_equal "$http $body" '400 {"code":"BAD_CARRIER"}'
}

@test "default: over the rate 429 with Retry-After, queries counted, the refusal flagged" {
	gwsim_start --qps 2 --retry-after 7
	change K1 stop
	query K1
	query K1
	assert_equal "$http $body" '429 {"code":"RATE_LIMITED"}'
	grep -qi '^Retry-After: 7' "$T/headers"
	logged -1 | jq -e '.http == 429 and .fault == "qps" and .refused and (.applied | not)'
	# Another account has its own rate.
	query K2 c2
	assert_equal "$http" 200
	assert_equal "$(jq -c '.refused' "$T/gw.log" | tr '\n' ' ')" "false false true false "
}

@test "default: --throttle-in-body refuses with 200 THROTTLED and no Retry-After" {
	gwsim_start --qps 1 --throttle-in-body
	change K1 stop
	change K2 stop
	assert_equal "$http $body" '200 {"code":"THROTTLED"}'
	run ! grep -qi '^Retry-After' "$T/headers"
	logged -1 | jq -e '.http == 200 and .code == "THROTTLED" and .refused and (.applied | not)'
}

@test "default: a missing or wrong bearer is 401, logged as refused" {
	printf 'sekrit\n' >"$T/tok"
	gwsim_start --token-file "$T/tok"
	change K1 stop c1 -H 'Authorization: Bearer wrong'
	assert_equal "$http $body" '401 {"code":"UNAUTHORIZED"}'
	query K1
	assert_equal "$http" 401
	change K1 stop c1 -H 'Authorization: Bearer sekrit'
	assert_equal "$http $body" '200 {"code":"OK","card":"K1"}'
	assert_equal "$(jq -c '[.http, .refused, .applied]' "$T/gw.log" | tr '\n' ' ')" \
		"[401,true,false] [401,true,false] [200,false,true] "
}

@test "default: --fault-reject and a retired card are 422 NOT_ALLOWED, not refused" {
	cards '{"card":"R1","status":"retired"}'
	gwsim_start --cards "$T/cards.jsonl"
	change R1 resume
	assert_equal "$http $body" '422 {"code":"NOT_ALLOWED"}'
	logged -1 | jq -e '.state == "retired" and (.applied | not) and (.refused | not)'
	query R1
	assert_equal "$body" '{"card":"R1","status":"retired"}'
	gwsim_start --fault-reject 1
	change K1 stop
	assert_equal "$http $body" '422 {"code":"NOT_ALLOWED"}'
	logged -1 | jq -e '.fault == "reject" and .state == "active" and (.refused | not)'
}

@test "--fail-account fails every call of that account, queries too; others are served" {
	gwsim_start --fail-account c9
	change K1 stop c9
	assert_equal "$http $body" '500 {"code":"INTERNAL"}'
	query K1 c9
	assert_equal "$http" 500
	change K2 stop c2
	assert_equal "$http" 200
	assert_equal "$(jq -c '[.kind, .http, .fault, .applied, .refused]' "$T/gw.log" | tr '\n' ' ')" \
		'["stop",500,"account_down",false,false] ["status",500,"account_down",false,false] ["stop",200,"",true,false] '
}

@test "bad options and bad --cards lines are usage errors" {
	cards '{"card":"K1","status":"asleep"}'
	run -2 sr-gwsim --port 0 --cards "$T/cards.jsonl"
	assert_output --partial 'unknown "status"'
	run -2 sr-gwsim --fail-account 'a b'
	run -2 sr-gwsim --qps -1
	run -2 sr-gwsim --profile nope
	run -2 sr-gwsim --rate-mode nope
	run -2 sr-gwsim --burst 0
	printf 'x\n' >"$T/x"
	run -2 sr-gwsim --port 0 --profile cisco --token-file "$T/x" --password-file "$T/x"
	assert_output --partial 'not both'
	run -2 sr-gwsim --password-file "$T/nonexistent"
	run -0 sr-gwsim --help
	assert_output --partial 'Exit:'
	assert_output --partial 'Example:'
}

# now_ms: the wall clock, as the simulator reads it.
now_ms() {
	date +%s%3N
}

# burst N: N status queries of account c1 on one kept-alive connection.
burst() {
	local urls=() i
	for i in $(seq "$1"); do urls+=(-o /dev/null "$SRQ_GATEWAY/v1/cards/B$i/status?carrier=c1"); done
	curl -sS "${urls[@]}"
}

# across_second MODE: a burst of 3 late in one calendar second, then a
# burst of 3 early in the next, all inside 1000 ms (on a machine too busy to
# place them so, the arrivals land where they land). Prints how many were
# refused, how many the mode's rule refuses for the arrivals as logged, and
# whether they were placed across the boundary: the simulator must agree
# with its rule in any case, and the placed case is the one that tells the
# modes apart.
across_second() {
	local s
	until [ $(( $(now_ms) % 1000 )) -ge 600 ] && [ $(( $(now_ms) % 1000 )) -lt 750 ]; do sleep 0.01; done
	s=$(( $(now_ms) / 1000 ))
	burst 3
	until [ $(( $(now_ms) / 1000 )) -gt "$s" ]; do sleep 0.005; done
	burst 3
	jq -rs --arg mode "$1" '
		sort_by(.t) as $a
		| ($a | map(.t / 1000 | floor)) as $s
		| (if $mode == "fixed" then
			[$a | group_by(.t / 1000 | floor)[] | length - 3 | select(. > 0)] | add // 0
		   else
			reduce $a[] as $x ({ok: [], refused: 0};
				($x.t) as $t | (.ok | map(select(. > $t - 1000)) | length) as $n
				| if $n >= 3 then .refused += 1 else .ok += [$t] end) | .refused
		   end) as $expected
		| ([.[] | select(.refused)] | length) as $refused
		| (length == 6 and ($s[0:3] | unique) == [$s[0]] and ($s[3:6] | unique) == [$s[0] + 1]
			and $a[5].t - $a[0].t < 1000) as $placed
		| "\($refused) \($expected) \($placed)"' "$T/gw.log"
}

@test "rate modes: fixed admits a burst across a calendar second, sliding refuses it" {
	gwsim_start --qps 3 --rate-mode fixed
	run -0 across_second fixed
	read -r refused expected placed <<<"$output"
	assert_equal "$refused" "$expected"
	[ "$placed" = false ] || assert_equal "$refused" 0
	gwsim_start --qps 3
	: >"$T/gw.log"
	run -0 across_second sliding
	read -r refused expected placed <<<"$output"
	assert_equal "$refused" "$expected"
	[ "$placed" = false ] || assert_equal "$refused" 3
	[ "$refused" = 0 ] || assert_equal "$(jq -s -c '[.[] | select(.refused) | .fault] | unique' "$T/gw.log")" '["qps"]'
}

@test "rate modes: a token bucket takes a burst of --burst, then refills at --qps" {
	gwsim_start --qps 2 --burst 4 --rate-mode bucket
	burst 6
	assert_equal "$(jq -c .refused "$T/gw.log" | tr '\n' ' ')" "false false false false true true "
	# Half a second refills one token: one more admitted, the next refused.
	sleep 0.6
	burst 2
	assert_equal "$(jq -c .refused "$T/gw.log" | tail -2 | tr '\n' ' ')" "false true "
	# Without --burst the bucket holds --qps.
	gwsim_start --qps 3 --rate-mode bucket
	: >"$T/gw.log"
	burst 5
	assert_equal "$(jq -c .refused "$T/gw.log" | tr '\n' ' ')" "false false false true true "
}

@test "--max-inflight refuses an account's calls beyond M at once, like the rate does" {
	gwsim_start --max-inflight 1 --latency-ms 400
	# (wait for the three calls by pid: the simulator is a child too)
	change K1 stop & p1=$!
	change K2 stop & p2=$!
	query K3 c2 & p3=$!
	wait "$p1" "$p2" "$p3"
	assert_equal "$(wc -l <"$T/gw.log")" 3
	# c1: one handled, one refused while the other was in flight; c2 untouched.
	assert_equal "$(jq -s -c '[.[] | select(.carrier == "c1") | [.http, .refused, .fault]] | sort' "$T/gw.log")" \
		'[[200,false,""],[429,true,"inflight"]]'
	assert_equal "$(jq -s -c '[.[] | select(.carrier == "c2") | .refused]' "$T/gw.log")" '[false]'
	# Once it is done, the next one is handled.
	query K1
	assert_equal "$http" 200
}

@test "/_sim/set changes the rate and the failing account mid-run, unlogged" {
	gwsim_start --qps 1
	query K1
	query K1
	assert_equal "$http" 429
	req -X POST "$SRQ_GATEWAY/_sim/set?qps=3"
	assert_equal "$http $body" '200 {"ok":true}'
	query K1
	query K1
	assert_equal "$http" 200
	query K1
	assert_equal "$http" 429
	req -X POST "$SRQ_GATEWAY/_sim/set?qps=0&fail_account=c1"
	assert_equal "$http" 200
	change K1 stop
	assert_equal "$http $body" '500 {"code":"INTERNAL"}'
	change K2 stop c2
	assert_equal "$http" 200
	req -X POST "$SRQ_GATEWAY/_sim/set?fail_account="
	change K1 stop
	assert_equal "$http" 200
	# Bad requests change nothing.
	for q in 'qps=x' 'qps=-1' 'fail_account=a%20b' 'nope=1' ''; do
		req -X POST "$SRQ_GATEWAY/_sim/set?$q"
		assert_equal "$q: $http" "$q: 400"
	done
	req -X POST "$SRQ_GATEWAY/_sim/set?qps=1&nope=1"
	assert_equal "$http" 400
	req "$SRQ_GATEWAY/_sim/set?qps=1"
	assert_equal "$http" 404
	change K3 stop
	assert_equal "$http" 200
	# Only the calls are logged.
	assert_equal "$(jq -r .kind "$T/gw.log" | sort | uniq -c | tr -s ' ' | tr '\n' ,)" " 5 status, 4 stop,"
}

@test "--conn-delay-ms: the first request of a connection arrives late, the next on it does not" {
	gwsim_start --conn-delay-ms 300
	t0=$(now_ms)
	# Two requests on one kept-alive connection; curl reports each one's time.
	run -0 curl -sS -w '%{num_connects} %{time_total}\n' -o /dev/null -o /dev/null \
		"$SRQ_GATEWAY/v1/cards/K1/status?carrier=c1" "$SRQ_GATEWAY/v1/cards/K2/status?carrier=c1"
	assert_equal "$(echo "$output" | awk '{print $1}' | tr '\n' ' ')" "1 0 "
	awk 'NR == 1 && $2 < 0.3 { exit 1 } NR == 2 && $2 >= 0.2 { exit 1 }' <<<"$output"
	t1=$(field 1 t) t2=$(field 2 t)
	[ $((t1 - t0)) -ge 300 ] || { echo "arrived $((t1 - t0)) ms after the connect"; false; }
	[ $((t2 - t1)) -lt 200 ] || { echo "the second arrived $((t2 - t1)) ms later"; false; }
	# A new connection pays again.
	run -0 curl -sS -w '%{time_total}' -o /dev/null "$SRQ_GATEWAY/v1/cards/K3/status?carrier=c1"
	awk '$1 < 0.3 { exit 1 }' <<<"$output"
}

@test "--jitter-ms: every request arrives up to N ms late" {
	gwsim_start --jitter-ms 100
	urls=()
	for i in $(seq 8); do urls+=(-o /dev/null "$SRQ_GATEWAY/v1/cards/J$i/status?carrier=c1"); done
	run -0 curl -sS -w '%{time_total}\n' "${urls[@]}"
	# Each at most 100 ms late (plus the handling); together clearly late.
	awk '$1 > 0.18 { exit 1 } { sum += $1 } END { if (sum < 0.1) exit 1 }' <<<"$output"
	assert_equal "$(wc -l <"$T/gw.log")" 8
}

# wait_for CMD...: until CMD succeeds, for at most 5 s.
wait_for() {
	local i
	for i in $(seq 250); do "$@" && return 0; sleep 0.02; done
	"$@"
}

# landed N: N changes have landed (--async-ms), by the log.
landed() {
	[ "$(jq -s '[.[] | select(.kind == "apply")] | length' "$T/gw.log")" -eq "$1" ]
}

@test "default --async-ms: accepted with a txn, the old state until the change lands, then an apply line" {
	# (long enough for the checks before the query on a loaded machine)
	gwsim_start --async-ms 2000
	change K1 stop
	assert_equal "$http $body" '202 {"code":"ACCEPTED","card":"K1","txn":"T1"}'
	logged -1 | jq -e '.http == 202 and .code == "ACCEPTED" and (.applied | not) and .state == "active"
		and .txn == "T1" and (.refused | not)'
	t_call=$(field -1 t)
	query K1
	assert_equal "$body" '{"card":"K1","status":"active"}'
	# The interval runs from the accepted call.
	change K1 resume
	assert_equal "$http" 409
	wait_for landed 1
	jq -c 'select(.kind == "apply")' "$T/gw.log" | jq -e --argjson t "$t_call" '.card == "K1"
		and .carrier == "c1" and .applied and .state == "stopped" and .fault == "async"
		and .txn == "T1" and .key == "K1-stop" and .t >= $t + 2000'
	query K1
	assert_equal "$body" '{"card":"K1","status":"stopped"}'
}

@test "--async-ms: already is judged on the state to come; a card's changes land in order" {
	gwsim_start --async-ms 300 --interval-ms 0
	change K1 stop
	assert_equal "$http" 202
	change K1 stop
	assert_equal "$http $body" '200 {"code":"ALREADY","card":"K1"}'
	change K1 resume
	assert_equal "$http $body" '202 {"code":"ACCEPTED","card":"K1","txn":"T2"}'
	query K1
	assert_equal "$body" '{"card":"K1","status":"active"}'
	# No request needed for them to land.
	wait_for landed 2
	assert_equal "$(jq -r 'select(.kind == "apply") | "\(.txn):\(.state)"' "$T/gw.log" | tr '\n' ' ')" \
		"T1:stopped T2:active "
	query K1
	assert_equal "$body" '{"card":"K1","status":"active"}'
}

# ol_token APPID [PASSWORD]: fetch a OneLink token into $tok.
ol_token() {
	req "$SRQ_GATEWAY/v5/ec/get/token?appid=$1&password=${2:-pw}&transid=tk$RANDOM"
	tok=$(jq -r '.result[0].token // ""' <<<"$body")
}

# ol_change CARD 0|1 TOKEN [CURL-ARGS...]: a OneLink change, as a GET.
ol_change() {
	req "${@:4}" "$SRQ_GATEWAY/v5/ec/change/sim-status?msisdn=$1&operType=$2&token=$3&transid=$1-$2"
}

# ol_query CARD TOKEN: a OneLink status query.
ol_query() {
	req "$SRQ_GATEWAY/v5/ec/query/sim-status?msisdn=$1&token=$2&transid=q$1"
}

@test "onelink: token, ok, already, too frequent, query, retired; GET, JSON and form bodies" {
	printf 'pw\n' >"$T/pw"
	cards '{"card":"S1","status":"stopped"}' '{"card":"R1","status":"retired"}'
	gwsim_start --profile onelink --password-file "$T/pw" --cards "$T/cards.jsonl"
	ol_token a1 wrong
	assert_equal "$http $body" '200 {"status":"12001","message":"APPID或密码错误"}'
	logged -1 | jq -e '.kind == "token" and .carrier == "a1" and .code == "12001" and .refused'
	ol_token a1
	[[ $tok =~ ^[0-9a-f]{32}$ ]]
	assert_equal "$(jq -c '[.status, .message, .result[0].ttl]' <<<"$body")" '["0","正确","3600"]'
	logged -1 | jq -e '.kind == "token" and .carrier == "a1" and .code == "0" and (.refused | not)'
	ol_change K1 0 "$tok"
	assert_equal "$http $body" '200 {"status":"0","message":"正确","result":[{"msisdn":"K1"}]}'
	logged -1 | jq -e '.kind == "stop" and .carrier == "a1" and .code == "0" and .applied
		and .state == "stopped" and .key == "K1-0"'
	ol_query K1 "$tok"
	assert_equal "$body" '{"status":"0","message":"正确","result":[{"cardStatus":"4"}]}'
	logged -1 | jq -e '.kind == "status" and .code == "stopped"'
	# A POST with a JSON body, inside the card's interval.
	req -X POST -H 'Content-Type: application/json' \
		-d "{\"msisdn\":\"K1\",\"operType\":\"1\",\"token\":\"$tok\",\"transid\":\"j1\"}" \
		"$SRQ_GATEWAY/v5/ec/change/sim-status"
	assert_equal "$http $body" '200 {"status":"12039","message":"同一卡号3分钟内不能重复办理"}'
	logged -1 | jq -e '.kind == "resume" and .key == "j1" and (.applied | not) and (.refused | not)'
	# A POST with a form body.
	req -X POST -d msisdn=S1 -d operType=0 -d "token=$tok" -d transid=f1 "$SRQ_GATEWAY/v5/ec/change/sim-status"
	assert_equal "$http $body" '200 {"status":"12058","message":"卡状态已是目标状态"}'
	logged -1 | jq -e '.kind == "stop" and .card == "S1" and .key == "f1" and .code == "12058"'
	ol_change R1 1 "$tok"
	assert_equal "$body" '{"status":"12087","message":"号码状态不允许办理"}'
	ol_query R1 "$tok"
	assert_equal "$body" '{"status":"0","message":"正确","result":[{"cardStatus":"9"}]}'
	ol_query K2 "$tok"
	assert_equal "$(jq -r '.result[0].cardStatus' <<<"$body")" 2
	# Bad parameters are answered, not logged; unknown paths are 404.
	n=$(wc -l <"$T/gw.log")
	ol_change K1 7 "$tok"
	assert_equal "$body" '{"status":"12002","message":"参数错误"}'
	ol_change "K$(printf '%070d' 0)" 0 "$tok"
	assert_equal "$body" '{"status":"12002","message":"参数错误"}'
	req "$SRQ_GATEWAY/v5/ec/nope"
	assert_equal "$http" 404
	req "$SRQ_GATEWAY/v1/cards/K1/status?carrier=a1"
	assert_equal "$http" 404
	assert_equal "$(wc -l <"$T/gw.log")" "$n"
}

@test "onelink: the rate refusal is always in the body; token fetches are not counted" {
	gwsim_start --profile onelink --qps 2
	ol_token a1
	ol_token a1
	ol_token a1
	ol_query K1 "$tok"
	ol_change K1 0 "$tok"
	assert_equal "$http" 200
	ol_change K2 0 "$tok"
	assert_equal "$http $body" '200 {"status":"12040","message":"调用频繁，请稍后再试"}'
	run ! grep -qi '^Retry-After' "$T/headers"
	logged -1 | jq -e '.code == "12040" and .fault == "qps" and .refused and (.applied | not)'
	ol_token a2
	ol_query K3 "$tok"
	assert_equal "$(jq -r '.result[0].cardStatus' <<<"$body")" 2
	assert_equal "$(jq -c .refused "$T/gw.log" | tr '\n' ' ')" \
		"false false false false false true false false "
}

@test "onelink: a token expires --token-ttl-ms after its issue; older ones live on; unknown ones are refused" {
	gwsim_start --profile onelink --token-ttl-ms 600
	ol_token a1
	t1=$tok
	ol_query K1 "$t1"
	assert_equal "$(jq -r .status <<<"$body")" 0
	# A newer token does not end the older one.
	ol_token a1
	t2=$tok
	ol_query K1 "$t1"
	assert_equal "$(jq -r .status <<<"$body")" 0
	# Used until it stops working: no earlier than 600 ms after its issue.
	expired() { ol_query K1 "$t1"; [ "$(jq -r .status <<<"$body")" = 12021 ]; }
	wait_for expired
	assert_equal "$body" '{"status":"12021","message":"TOKEN不存在或已过期，请重新获取"}'
	issued=$(jq -s '[.[] | select(.kind == "token")][0].t' "$T/gw.log")
	logged -1 | jq -e --argjson i "$issued" '.t - $i >= 600 and .refused and .carrier == "a1"'
	jq -s -e --argjson i "$issued" '[.[] | select(.kind == "status" and .code == "active")] | all(.t - $i < 600)' "$T/gw.log"
	ol_token a1
	ol_change K1 0 "$tok"
	assert_equal "$(jq -r .status <<<"$body")" 0
	# An unknown token: refused, no account known.
	ol_change K1 1 nosuchtoken
	assert_equal "$(jq -r .status <<<"$body")" 12021
	logged -1 | jq -e '.refused and .carrier == "" and (.applied | not)'
	# The carrier shortens the TTL: every token issued so far is gone.
	req -X POST "$SRQ_GATEWAY/_sim/set?token_ttl_ms=1"
	assert_equal "$http" 200
	ol_query K1 "$tok"
	assert_equal "$(jq -r .status <<<"$body")" 12021
}

@test "onelink: faults, a failing account and the bearer, in OneLink's words" {
	gwsim_start --profile onelink --fault-5xx-before 1 --fail-account a9
	ol_token a1
	ol_change K1 0 "$tok"
	assert_equal "$http $body" '500 Internal Server Error'
	grep -qi '^Content-Type: text/plain' "$T/headers"
	logged -1 | jq -e '.http == 500 and .fault == "5xx_before" and (.refused | not) and (.applied | not)'
	ol_token a9
	ol_query K1 "$tok"
	assert_equal "$http" 500
	logged -1 | jq -e '.kind == "status" and .fault == "account_down"'
	gwsim_start --profile onelink --fault-429 1
	ol_token a1
	ol_change K1 0 "$tok"
	assert_equal "$http $body" '200 {"status":"12040","message":"调用频繁，请稍后再试"}'
	logged -1 | jq -e '.fault == "429" and .refused'
	gwsim_start --profile onelink --fault-reject 1
	ol_token a1
	ol_change K1 0 "$tok"
	assert_equal "$body" '{"status":"12087","message":"号码状态不允许办理"}'
	printf 'sekrit\n' >"$T/tok"
	gwsim_start --profile onelink --token-file "$T/tok"
	ol_token a1
	assert_equal "$http" 401
	logged -1 | jq -e '.kind == "token" and .refused'
	req -H 'Authorization: Bearer sekrit' "$SRQ_GATEWAY/v5/ec/get/token?appid=a1&password=x&transid=t"
	tok=$(jq -r '.result[0].token' <<<"$body")
	ol_change K1 0 "$tok" -H 'Authorization: Bearer sekrit'
	assert_equal "$(jq -r .status <<<"$body")" 0
}

@test "onelink --async-ms: a jobId, the old cardStatus until the change lands" {
	gwsim_start --profile onelink --async-ms 300
	ol_token a1
	ol_change K1 0 "$tok"
	assert_equal "$body" '{"status":"0","message":"正确","result":[{"msisdn":"K1","jobId":"J1"}]}'
	logged -1 | jq -e '.code == "0" and .txn == "J1" and (.applied | not) and .state == "active"'
	ol_query K1 "$tok"
	assert_equal "$(jq -r '.result[0].cardStatus' <<<"$body")" 2
	wait_for landed 1
	jq -c 'select(.kind == "apply")' "$T/gw.log" | jq -e '.txn == "J1" and .key == "K1-0"
		and .state == "stopped" and .carrier == "a1"'
	ol_query K1 "$tok"
	assert_equal "$(jq -r '.result[0].cardStatus' <<<"$body")" 4
}

# cs_change CARD DEACTIVATED|ACTIVATED [USER:PASSWORD]: a Cisco change.
cs_change() {
	req -X PUT -u "${3:-c1:key}" -H 'Content-Type: application/json' -H "Idempotency-Key: $1-$2" \
		-d "{\"status\":\"$2\"}" "$SRQ_GATEWAY/rws/api/v1/devices/$1"
}

# cs_query CARD [USER:PASSWORD]: a Cisco status query.
cs_query() {
	req -u "${2:-c1:key}" "$SRQ_GATEWAY/rws/api/v1/devices/$1"
}

@test "cisco: ok, already, too frequent, query, retired and Basic auth" {
	printf 'key\n' >"$T/pw"
	cards '{"card":"S1","status":"stopped"}' '{"card":"R1","status":"retired"}'
	gwsim_start --profile cisco --password-file "$T/pw" --cards "$T/cards.jsonl"
	cs_change K1 DEACTIVATED
	assert_equal "$http $body" '200 {"iccid":"K1"}'
	logged -1 | jq -e '.kind == "stop" and .carrier == "c1" and .code == "OK" and .applied
		and .state == "stopped" and .key == "K1-DEACTIVATED"'
	cs_query K1
	assert_equal "$http $body" '200 {"iccid":"K1","status":"DEACTIVATED"}'
	logged -1 | jq -e '.kind == "status" and .code == "stopped"'
	cs_change K1 ACTIVATED
	assert_equal "$http $body" '400 {"errorCode":"30000009","errorMessage":"Too many status changes"}'
	logged -1 | jq -e '.code == "30000009" and (.refused | not) and (.applied | not)'
	# Already: the same answer as a change, told apart in the log only.
	cs_change S1 DEACTIVATED c2:key
	assert_equal "$http $body" '200 {"iccid":"S1"}'
	logged -1 | jq -e '.code == "ALREADY" and (.applied | not) and .carrier == "c2"'
	cs_change R1 ACTIVATED
	assert_equal "$http $body" '404 {"errorCode":"20000001","errorMessage":"Invalid ICCID"}'
	logged -1 | jq -e '.state == "retired" and (.refused | not)'
	cs_query R1
	assert_equal "$body" '{"iccid":"R1","status":"RETIRED"}'
	# Credentials: wrong, missing.
	cs_change K2 DEACTIVATED c1:nope
	assert_equal "$http $body" '401 {"errorCode":"10000001","errorMessage":"Invalid credentials or IP"}'
	logged -1 | jq -e '.refused and .carrier == "c1" and (.applied | not)'
	req "$SRQ_GATEWAY/rws/api/v1/devices/K2"
	assert_equal "$http" 401
	logged -1 | jq -e '.refused and .carrier == ""'
	# Malformed requests and unknown paths are answered, not logged.
	n=$(wc -l <"$T/gw.log")
	cs_change K2 SUSPENDED
	assert_equal "$http" 400
	req -u c1:key "$SRQ_GATEWAY/rws/api/v1/devices/bad%20id"
	assert_equal "$http" 404
	req -u c1:key -X POST "$SRQ_GATEWAY/rws/api/v1/devices/K2"
	assert_equal "$http" 404
	req -u c1:key "$SRQ_GATEWAY/v1/cards/K2/status?carrier=c1"
	assert_equal "$http" 404
	assert_equal "$(wc -l <"$T/gw.log")" "$n"
}

@test "cisco: rate and in-flight refusals are 429 with Retry-After; faults; a failing account" {
	gwsim_start --profile cisco --qps 1 --retry-after 3
	cs_query K1
	cs_change K1 DEACTIVATED
	assert_equal "$http $body" '429 {"errorCode":"40000029","errorMessage":"Rate limit exceeded"}'
	grep -qi '^Retry-After: 3' "$T/headers"
	logged -1 | jq -e '.refused and .fault == "qps" and .code == "40000029"'
	gwsim_start --profile cisco --max-inflight 1 --latency-ms 400
	: >"$T/gw.log"
	cs_query K1 & p1=$!
	cs_query K2 & p2=$!
	wait "$p1" "$p2"
	assert_equal "$(jq -s -c '[.[] | [.http, .fault, .refused]] | sort' "$T/gw.log")" \
		'[[200,"",false],[429,"inflight",true]]'
	gwsim_start --profile cisco --fault-5xx-after 1 --fail-account c9
	cs_change K1 DEACTIVATED
	assert_equal "$http $body" '500 {"errorCode":"30000001","errorMessage":"Unknown server error"}'
	logged -1 | jq -e '.applied and .fault == "5xx_after" and (.refused | not)'
	cs_query K1 c9:x
	assert_equal "$http" 500
	logged -1 | jq -e '.fault == "account_down"'
	gwsim_start --profile cisco --fault-429 1
	cs_change K1 DEACTIVATED
	assert_equal "$http" 429
	logged -1 | jq -e '.fault == "429" and .refused'
}

@test "cisco --async-ms: 202 PENDING, the old status until the change lands; --token-file as the key" {
	printf 'sekrit\n' >"$T/tok"
	gwsim_start --profile cisco --async-ms 300 --token-file "$T/tok"
	cs_change K1 DEACTIVATED
	assert_equal "$http" 401
	cs_change K1 DEACTIVATED c1:sekrit
	assert_equal "$http $body" '202 {"iccid":"K1","status":"PENDING"}'
	logged -1 | jq -e '.code == "ACCEPTED" and .txn == "T1" and (.applied | not)'
	cs_query K1 c1:sekrit
	assert_equal "$body" '{"iccid":"K1","status":"ACTIVATED"}'
	wait_for landed 1
	cs_query K1 c1:sekrit
	assert_equal "$body" '{"iccid":"K1","status":"DEACTIVATED"}'
	jq -c 'select(.kind == "apply")' "$T/gw.log" | jq -e '.txn == "T1" and .state == "stopped" and .key == "K1-DEACTIVATED"'
}

@test "--fault-other-card: the answer names another card, a query's with that card's state; logged with named" {
	cards '{"card":"Y1","status":"stopped"}'
	gwsim_start --cards "$T/cards.jsonl" --fault-other-card 1 --other-card Y1
	change K1 stop
	assert_equal "$http $body" '200 {"code":"OK","card":"Y1"}'
	logged -1 | jq -e '.card == "K1" and .named == "Y1" and .fault == "other_card" and .applied'
	change K2 resume
	query K2
	# K2 is active; the answer is Y1's.
	assert_equal "$body" '{"card":"Y1","status":"stopped"}'
	logged -1 | jq -e '.card == "K2" and .state == "active" and .named == "Y1"'
	# Refusals name no card: they are left as they are.
	change K1 resume
	assert_equal "$http $body" '409 {"code":"TOO_FREQUENT"}'
}

# result_code: the resultCode of the XML answer in $body.
result_code() {
	sed -n 's|.*<resultCode>\(.*\)</resultCode>.*|\1|p' <<<"$body"
}

# ct_req KEY QUERY SIGNED: a ctcmp request with QUERY, signed with the hex
# HMAC-SHA256 keyed KEY of SIGNED, computed here.
ct_req() {
	req "$SRQ_GATEWAY/m2m_ec/query.do?$2&sign=$(printf '%s' "$3" | openssl dgst -sha256 -hmac "$1" -r | cut -d' ' -f1)"
}

# ct_call KEY METHOD CARD [ORDER_TYPE]: a call of account ct1 (password pw),
# signed with KEY over its parameters sorted by name.
ct_call() {
	local order=${4:+&orderTypeId=$4}
	ct_req "$1" "user_id=ct1&method=$2&passWord=pw&access_number=$3$order" \
		"access_number=$3&method=$2$order&passWord=pw&user_id=ct1"
}

@test "ctcmp: a query string signed with the account's key is applied; signed with another key, over other parameters, or not at all, refused unapplied" {
	printf 'k3y\n' >"$T/key"
	printf 'pw\n' >"$T/pw"
	cards '{"card":"S1","status":"stopped"}'
	gwsim_start --profile ctcmp --sign-key-file "$T/key" --password-file "$T/pw" --cards "$T/cards.jsonl"
	# Signed over the parameters but sign, decoded, sorted by name, then by
	# value, byte by byte (orderTypeId before passWord).
	ct_req k3y 'user_id=ct1&tag=b&note=a%2Fb&method=disabledNumber&passWord=pw&tag=a&orderTypeId=19&access_number=K1' \
		'access_number=K1&method=disabledNumber&note=a/b&orderTypeId=19&passWord=pw&tag=a&tag=b&user_id=ct1'
	assert_equal "$http $body" '200 <?xml version="1.0" encoding="UTF-8"?><businessServiceResponse><resultCode>0</resultCode><resultMsg>处理成功</resultMsg><access_number>K1</access_number></businessServiceResponse>'
	logged -1 | jq -e '.kind == "stop" and .card == "K1" and .carrier == "ct1" and .code == "0"
		and .applied and .state == "stopped" and (.refused | not)'
	ct_call k3y queryCardMainStatus K1
	assert_equal "$http $body" '200 <?xml version="1.0" encoding="UTF-8"?><businessServiceResponse><resultCode>0</resultCode><resultMsg>处理成功</resultMsg><access_number>K1</access_number><productMainStatusCd>5</productMainStatusCd></businessServiceResponse>'
	logged -1 | jq -e '.kind == "status" and .code == "stopped"'
	ct_call k3y disabledNumber K1 20
	assert_equal "$body" '<?xml version="1.0" encoding="UTF-8"?><businessServiceResponse><resultCode>-4</resultCode><resultMsg>操作过于频繁</resultMsg></businessServiceResponse>'
	ct_call k3y disabledNumber S1 19
	assert_equal "$body" '<?xml version="1.0" encoding="UTF-8"?><businessServiceResponse><resultCode>-3</resultCode><resultMsg>号码已是该状态</resultMsg><access_number>S1</access_number></businessServiceResponse>'
	# Signed with another key: refused, not applied, all else right.
	ct_call wrong disabledNumber K2 19
	assert_equal "$http $body" '200 <?xml version="1.0" encoding="UTF-8"?><businessServiceResponse><resultCode>-5</resultCode><resultMsg>签名或密码错误</resultMsg></businessServiceResponse>'
	logged -1 | jq -e '.kind == "stop" and .card == "K2" and .code == "-5" and .refused
		and (.applied | not) and .state == "active"'
	# Signed over other parameters, over its own sorted as whole "k=v"
	# strings (user.id= before user=), or not at all.
	ct_req k3y 'user_id=ct1&method=disabledNumber&passWord=pw&orderTypeId=19&access_number=K2' \
		'access_number=K2&method=disabledNumber&orderTypeId=20&passWord=pw&user_id=ct1'
	assert_equal "$(result_code)" -5
	ct_req k3y 'user_id=ct1&user=u1&user.id=42&method=disabledNumber&passWord=pw&orderTypeId=19&access_number=K2' \
		'access_number=K2&method=disabledNumber&orderTypeId=19&passWord=pw&user.id=42&user=u1&user_id=ct1'
	assert_equal "$(result_code)" -5
	ct_req k3y 'user_id=ct1&user=u1&user.id=42&method=disabledNumber&passWord=pw&orderTypeId=19&access_number=K2' \
		'access_number=K2&method=disabledNumber&orderTypeId=19&passWord=pw&user=u1&user.id=42&user_id=ct1'
	assert_equal "$(result_code)" 0
	req "$SRQ_GATEWAY/m2m_ec/query.do?user_id=ct1&method=disabledNumber&passWord=pw&orderTypeId=19&access_number=K4"
	assert_equal "$(result_code)" -5
	logged -1 | jq -e '.refused and (.applied | not)'
	# The right signature with the wrong password.
	printf 'other\n' >"$T/pw"
	gwsim_start --profile ctcmp --sign-key-file "$T/key" --password-file "$T/pw"
	ct_call k3y disabledNumber K3 19
	assert_equal "$(result_code)" -5
	logged -1 | jq -e '.refused and (.applied | not)'
	# Malformed requests are answered, not logged; other paths are 404.
	n=$(wc -l <"$T/gw.log")
	ct_call k3y disabledNumber K3 7
	assert_equal "$body" '<?xml version="1.0" encoding="UTF-8"?><businessServiceResponse><resultCode>-1</resultCode><resultMsg>参数错误</resultMsg></businessServiceResponse>'
	ct_call k3y nosuchMethod K3
	assert_equal "$body" '<?xml version="1.0" encoding="UTF-8"?><businessServiceResponse><resultCode>-1</resultCode><resultMsg>参数错误</resultMsg></businessServiceResponse>'
	req "$SRQ_GATEWAY/m2m_ec/other.do"
	assert_equal "$http" 404
	assert_equal "$(wc -l <"$T/gw.log")" "$n"
	# The shape checks every signature: it needs the key.
	run -2 sr-gwsim --profile ctcmp --port 0
	assert_output --partial '--profile ctcmp needs --sign-key-file'
}
