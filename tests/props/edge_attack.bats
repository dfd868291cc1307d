#!/usr/bin/env bats
# edge_attack.bats - the HTTP edge against a badly behaved carrier: answers
# cut short, connections dying after the request, redirects, echoed secrets,
# refused certificates, odd but valid bodies. Each test has its own Redis and
# its own carrier: sr-gwsim, or tests/helpers/badcarrier (python3) for what
# the simulator cannot do.

bats_require_minimum_version 1.5.0

load ../test_helper

# calls CARD: how many change calls for CARD reached badcarrier NAME (main).
calls() {
	jq -r 'select(.path? // "" | test("/cards/'"$1"'/(stop|resume)")) | .n' "$T/bad-${2:-main}.log" | wc -l
}

@test "a change with no body to rewind (GET) on a connection that dies after the request is sent once, unknown, and settled by a query" {
	profiles 'from = default' 'accounts = c1' 'stop.method = GET' \
		'stop.url = {base}/v1/cards/{card}/stop?carrier={carrier}&request_id={reqid}' 'stop.body ='
	bad_start main close-after-first
	enqueue G1
	enqueue G2
	# One at a time: G2 goes out on G1's kept-alive connection, which the
	# carrier closes after reading it.
	run -0 bash -c 'sr-claim | sr-exec --concurrency 1 | tee '"$T/results"' | sr-confirm'
	assert_equal "$(calls G1) $(calls G2)" "1 1"
	assert_equal "$(jq -r '"\(.card) \(.outcome)"' "$T/results" | sort | paste -sd,)" "G1 ok,G2 unknown"
	assert_equal "$(jq -r 'select(.card == "G2") | .error' "$T/results")" \
		"the connection closed with no answer after the request was sent (not sent again)"
	assert_output --partial '"card":"G2","carrier":"c1","ver":1,"task":"call","outcome":"unknown","state":"confirming"'
	run -0 drain 10
	assert_equal "$(calls G2)" 1
	assert_equal "$(rcli HGET t:card:G2:facts st)" stopped
}

@test "an empty POST on a connection that dies after the request is not sent again either" {
	profiles 'from = default' 'accounts = c1' \
		'stop.url = {base}/v1/cards/{card}/stop?carrier={carrier}&request_id={reqid}' 'stop.body ='
	bad_start main close-after-first
	enqueue P1
	enqueue P2
	run -0 bash -c 'sr-claim | sr-exec --concurrency 1 | tee '"$T/results"' | sr-confirm'
	assert_equal "$(calls P1) $(calls P2)" "1 1"
	assert_equal "$(jq -r '"\(.card) \(.outcome)"' "$T/results" | sort | paste -sd,)" "P1 ok,P2 unknown"
}

@test "a change sent once, whose connection died and whose reconnect is refused, is unknown, never not_sent" {
	# libcurl retries a request whose kept-alive connection died with no
	# answer on a new connection; refused there, it fails to connect. The
	# request went all the same: not_sent would call the card again.
	for method in POST GET; do
		profiles 'from = default' 'accounts = c1' "stop.method = $method" \
			'stop.url = {base}/v1/cards/{card}/stop?carrier={carrier}&request_id={reqid}'
		bad_start main die-after-first
		enqueue "D$method"1
		enqueue "D$method"2
		run -0 bash -c 'sr-claim | sr-exec --concurrency 1 >'"$T/results"
		assert_equal "$(calls "D$method"1) $(calls "D$method"2)" "1 1"
		assert_equal "$(jq -r '"\(.card) \(.outcome) \(.class)"' "$T/results" | sort | paste -sd,)" \
			"D${method}1 ok null,D${method}2 unknown null"
		bad_stop main
	done
}

@test "a carrier that echoes the token in its error: the token reaches no output, no Redis, no audit" {
	profiles 'from = default' 'accounts = c1' 'message = message'
	export SRQ_GATEWAY_TOKEN=tok-3f9c1e77aa
	bad_start main echo-token
	enqueue S1
	run -0 --separate-stderr bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	# It was sent, and echoed.
	assert_equal "$(jq -r .auth "$T/bad-main.log")" "Bearer tok-3f9c1e77aa"
	assert_equal "$(jq -r '"\(.outcome) \(.error)"' "$T/results")" "fail HTTP 422 NOT_ALLOWED bad token: [secret]"
	assert_output --partial '"state":"frozen"'
	sr-admin show S1 >"$T/show"
	sr-admin audit S1 >"$T/audit"
	sr-admin alerts --all >"$T/alerts" || true
	rcli --scan | while read -r k; do rcli DUMP "$k"; done >"$T/dump" 2>&1
	run grep -l tok-3f9c1e77aa "$T/results" "$T/show" "$T/audit" "$T/alerts" "$T/dump"
	assert_output ''
	[[ $stderr != *tok-3f9c1e77aa* ]]
	grep -q '\[secret\]' "$T/show"
}

# echoed_error CARD: one change call against badcarrier echo-token; its
# result's error in $output.
echoed_error() {
	bad_start main echo-token
	enqueue "$1"
	sr-claim | sr-exec >"$T/results" || true
	output=$(jq -r .error "$T/results")
}

@test "an echoed token that holds another secret (sent first) is redacted whole, not its rest left" {
	profiles 'from = default' 'accounts = c1' 'message = message' 'secret.key_id = env:SRQ_TEST_KEY_ID' \
		'stop.url = {base}/v1/cards/{card}/stop?key={key_id}'
	export SRQ_GATEWAY_TOKEN=tok-3f9c1e77aa SRQ_TEST_KEY_ID=tok-3f9c
	echoed_error E1
	assert_output "HTTP 422 NOT_ALLOWED bad token: [secret]"
}

@test "an echoed token cut short by the message's length is redacted all the same (a JWT is long)" {
	profiles 'from = default' 'accounts = c1' 'message = message'
	SRQ_GATEWAY_TOKEN=eyJ$(printf 'a1b2c3d4e5%.0s' $(seq 30))
	export SRQ_GATEWAY_TOKEN
	echoed_error E2
	[[ $output != *eyJa1b2c3d4* ]]
	assert_output --regexp '^HTTP 422 NOT_ALLOWED bad token: \[secret\]$'
}

@test "echoed Basic credentials (base64 of user:password, as sent) are redacted" {
	profiles 'from = default' 'accounts = c1' 'message = message' 'secret.user = env:SRQ_TEST_USER' \
		'secret.pass = env:SRQ_TEST_PASS' 'basic = {user}:{pass}'
	export SRQ_TEST_USER=acme SRQ_TEST_PASS=pw-77aa3f9c1e
	echoed_error E3
	[[ $(jq -r .auth "$T/bad-main.log") == "Basic $(printf acme:pw-77aa3f9c1e | base64)" ]]
	assert_output "HTTP 422 NOT_ALLOWED bad token: Basic [secret]"
}

# redis_values: every value in Redis, as text (a DUMP may compress a string
# and hide what it holds).
redis_values() {
	local k
	rcli --scan | while read -r k; do
		case $(rcli TYPE "$k") in
		string) rcli GET "$k" ;;
		hash) rcli HGETALL "$k" ;;
		set) rcli SMEMBERS "$k" ;;
		zset) rcli ZRANGE "$k" 0 -1 ;;
		list) rcli LRANGE "$k" 0 -1 ;;
		stream) rcli XRANGE "$k" - + ;;
		esac
	done
}

@test "a secret echoed in any encoding srq sends it in is redacted: result, show, audit, alerts, Redis" {
	# A password sent percent-encoded in the URL and inside Basic's base64,
	# echoed back as it came, with lower-case hex, form-encoded (+ for its
	# space), decoded, JSON-escaped (\/ for its slash), and as Basic.
	pw='Sekr3t/+p w=='
	b64=$(printf 'acme:%s' "$pw" | base64)
	export SRQ_TEST_PW=$pw
	profiles 'from = default' 'accounts = c1' 'message = message' 'secret.pw = env:SRQ_TEST_PW' \
		'stop.url = {base}/v1/cards/{card}/stop?pw={pw}' 'basic = acme:{pw}'
	for how in sent lower form decoded json auth; do
		bad_start main echo-params "$how"
		enqueue "E-$how"
		sr-claim | sr-exec | tee -a "$T/results" | sr-confirm >>"$T/finals"
	done
	# As it went: %2F upper-case, and base64 of user:password.
	assert_equal "$(jq -r '"\(.path) \(.auth)"' "$T/bad-main.log" | head -1)" \
		"/v1/cards/E-sent/stop?pw=Sekr3t%2F%2Bp%20w%3D%3D Basic $b64"
	assert_equal "$(jq -r '"\(.card) \(.error)"' "$T/results")" \
"E-sent HTTP 422 NOT_ALLOWED you sent: pw=[secret]
E-lower HTTP 422 NOT_ALLOWED you sent: pw=[secret]
E-form HTTP 422 NOT_ALLOWED you sent: pw=[secret]
E-decoded HTTP 422 NOT_ALLOWED you sent: pw=[secret]
E-json HTTP 422 NOT_ALLOWED you sent: {\"pw\": \"[secret]\"}
E-auth HTTP 422 NOT_ALLOWED you sent: Basic [secret]"
	# Each card frozen with its alert, the error kept where an operator reads it.
	assert_equal "$(jq -r .state "$T/finals" | sort | uniq -c | awk '{ print $1, $2 }')" "6 frozen"
	sr-admin show E-sent E-lower E-form E-decoded E-json E-auth >"$T/show"
	sr-admin audit --account c1 >"$T/audit"
	sr-admin alerts --all >"$T/alerts" || true
	redis_values >"$T/redis" 2>&1
	assert_equal "$(jq -r '.alert' "$T/alerts" | sort | uniq -c | awk '{ print $1, $2 }')" "6 permanent"
	grep -q 'you sent: pw=\[secret\]' "$T/redis"
	grep -q 'you sent: Basic \[secret\]' "$T/show"
	# No form of the password, nor the credentials' base64, anywhere.
	run grep -l -e Sekr3t -e "$b64" "$T/results" "$T/finals" "$T/show" "$T/audit" "$T/alerts" "$T/redis"
	assert_output ''
}

@test "a secret of under 4 characters is not looked for in what the carrier says: the message is left whole" {
	profiles 'from = default' 'accounts = c1' 'message = message' 'secret.pin = env:SRQ_TEST_PIN' \
		'stop.url = {base}/v1/cards/{card}/stop?pin={pin}'
	export SRQ_GATEWAY_TOKEN=tok-3f9c1e77aa SRQ_TEST_PIN=42
	echoed_error E4
	assert_output "HTTP 422 NOT_ALLOWED bad token: [secret]"
}

@test "a carrier's certificate refused: not sent, retried, the card's interval given back" {
	command -v openssl >/dev/null || skip "no openssl"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/key.pem" -out "$T/cert.pem" -days 1 \
		-subj /CN=not-this-host 2>/dev/null
	bad_start main tls-ok "$T/cert.pem,$T/key.pem"
	export SRQ_GATEWAY="https://127.0.0.1:$(cat "$T/bad-main.port")"
	enqueue C1
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r '"\(.outcome) \(.class)"' "$T/results")" "retry not_sent"
	assert_output --partial '"state":"requeued"'
	assert_equal "$(calls C1)" 0
	assert_equal "$(sr-admin show C1 | jq .interval_left_ms)" 0
}

@test "JSON after white space or a byte order mark is read: an ok is ok, a query's state is seen" {
	bad_start main raw 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 19\r\n\r\n\xef\xbb\xbf\r\n {"code":"OK"}\n'
	enqueue B1
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r .outcome "$T/results")" ok
	assert_output --partial '"state":"done"'
	# A query answered so reads its state.
	bad_start main bom-query
	enqueue B2
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results2"' | sr-confirm'
	assert_equal "$(jq -r .outcome "$T/results2")" unknown
	run -0 bash -c 'sr-claim --until-empty --for 5 | sr-exec | tee '"$T/results3"' | sr-confirm'
	assert_equal "$(jq -r '"\(.task) \(.outcome) \(.observed)"' "$T/results3")" "query ok stopped"
	assert_output --partial '"task":"query","outcome":"ok","state":"done"'
}

@test "a token fetch answered with a byte order mark before its JSON: the token is read, the change goes" {
	# Every request, the token fetch too, answered with a BOM and the JSON:
	# a token, and an ok for the change.
	body='\xef\xbb\xbf{"status":"0","result":[{"token":"t-bom-1","ttl":"3600"}]}'
	bad_start main raw "HTTP/1.1 200 OK\\r\\nConnection: close\\r\\nContent-Length: 61\\r\\n\\r\\n$body"
	example_profile onelink
	echo pw >"$T/secrets/cmcc-1.password"
	printf '{"card":"%s","carrier":"cmcc-1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		B3 $((NOW - 60)) | sr-enqueue >/dev/null
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r .outcome "$T/results")" ok
	# The change carried the token the fetch answered.
	assert_equal "$(jq -r 'select(.method == "POST") | .body | fromjson | .token' "$T/bad-main.log")" t-bom-1
}

@test "a redirect is not followed: nothing reaches the other host, the token least of all; unknown, not ok" {
	export SRQ_GATEWAY_TOKEN=tok-77aa3f9c1e
	bad_start other ok
	bad_start main redirect "http://127.0.0.1:$(cat "$T/bad-other.port")"
	enqueue R1
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r '"\(.outcome) \(.http)"' "$T/results")" "unknown 307"
	assert_output --partial '"state":"confirming"'
	assert_equal "$(wc -l <"$T/bad-other.log")" 0
}

@test "an answer that trickles in byte by byte is bounded by the timeout and unknown, not ok" {
	export SRQ_GATEWAY_TIMEOUT_MS=1000
	bad_start main slowloris
	enqueue L1
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r '"\(.outcome) \(.error)"' "$T/results")" "unknown Timeout was reached"
	assert_output --partial '"state":"confirming"'
}

@test "a connection reset after the request is unknown; a connection refused is not_sent" {
	bad_start main reset
	enqueue X1
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r .outcome "$T/results")" unknown
	assert_equal "$(calls X1)" 1
	assert_output --partial '"state":"confirming"'
	enqueue X2
	run -0 bash -c 'sr-claim | SRQ_GATEWAY=http://127.0.0.1:1 sr-exec | tee '"$T/results2"' | sr-confirm'
	# (X1's status query may be due by now: it is not sent either)
	assert_equal "$(jq -r 'select(.card == "X2") | "\(.outcome) \(.class)"' "$T/results2")" "retry not_sent"
}

@test "Retry-After as an HTTP date is honoured" {
	when=$(date -u -d '+30 seconds' '+%a, %d %b %Y %H:%M:%S GMT')
	bad_start main raw "HTTP/1.1 429 Too Many Requests\r\nRetry-After: $when\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
	enqueue A1
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	ra=$(jq -r .retry_after_ms "$T/results")
	[ "$ra" -ge 20000 ] && [ "$ra" -le 31000 ]
	due=$(rcli ZSCORE 't:carrier:{c1}:stop_resume' A1)
	last=$(rcli HGET 't:carrier:{c1}:card:A1' last_call)
	[ "$due" -ge $((last + ra)) ]
}

@test "a change answered with a NUL byte in its body is unknown (the answer is not read), never ok" {
	# An ok, a NUL, and what the NUL would hide from a reader of C strings.
	bad_start main raw 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 33\r\n\r\n{"code":"OK"}\x00{"code":"INTERNAL"}'
	enqueue N1
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r '"\(.outcome) \(.error)"' "$T/results")" \
		"unknown carrier answered HTTP 200 with a NUL byte in its body: not read"
	assert_output --partial '"state":"confirming"'
}

@test "a change answered with a body over 64 KiB is unknown (the answer is not read whole), never ok" {
	# An ok, 70,000 spaces, and what srq would not have read past its cap.
	body='{"code":"OK"}'"$(head -c 70000 /dev/zero | tr '\0' ' ')"'{"code":"INTERNAL"}'
	bad_start main raw "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: ${#body}\r\n\r\n$body"
	enqueue N3
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r '"\(.outcome) \(.error)"' "$T/results")" \
		"unknown carrier answered HTTP 200 with a body over 65536 bytes: not read"
	assert_output --partial '"state":"confirming"'
}

@test "a status query answered with a NUL byte in its body observes nothing: the card stays confirming" {
	bad_start main raw 'HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Length: 19\r\n\r\n{"code":"INTERNAL"}'
	enqueue N2
	sr-claim | sr-exec | sr-confirm >/dev/null
	bad_start main raw 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 40\r\n\r\n{"status":"stopped"}\x00{"status":"active"}'
	sleep 0.5 # its query is due (SRQ_CONFIRM_DELAY_MS)
	run -0 bash -c 'sr-claim | sr-exec | tee '"$T/results"' | sr-confirm'
	assert_equal "$(jq -r '"\(.task) \(.outcome) \(.observed) \(.error)"' "$T/results")" \
		"query unknown null carrier answered HTTP 200 with a NUL byte in its body: not read"
	assert_equal "$(sr-admin why N2 | jq -r .state)" confirming
	# Nothing learned of the card: it is still as its request said.
	assert_equal "$(rcli HGET t:card:N2:facts st)" active
}

@test "an answer libcurl cannot take says what happened: a header over its limit, a status that is not final" {
	# Rules that would take any {"code":"OK"} for ok, whatever the status.
	profiles 'from = default' 'accounts = c1' 'rule = code=OK => ok' 'rule = * => unknown'
	export SRQ_CONFIRM_DELAY_MS=60000 # no status query meanwhile: each card's last error is its call's
	pad=$(head -c 110000 /dev/zero | tr '\0' a)
	ok='Connection: close\r\nContent-Length: 13\r\n\r\n{"code":"OK"}'
	i=0
	for answer in "HTTP/1.1 200 OK\r\nX-Padding: $pad\r\n$ok" "HTTP/1.1 999 Odd\r\n$ok" \
		"HTTP/1.1 100 Continue\r\n$ok"; do
		i=$((i + 1))
		bad_start main raw "$answer"
		enqueue "H$i"
		sr-claim | sr-exec | sr-confirm >>"$T/finals"
	done
	assert_equal "$(jq -r '"\(.card) \(.state)"' "$T/finals" | paste -sd,)" \
		"H1 confirming,H2 confirming,H3 confirming"
	run -0 sr-admin show H1 H2 H3
	assert_equal "$(jq -r '"\(.card) \(.command.last_error)"' <<<"$output")" \
"H1 response header too long (over libcurl's limit): the answer was not read
H2 carrier answered with HTTP status 999 (not a final status)
H3 carrier answered with HTTP status 100 (not a final status), then no answer libcurl could read"
}
