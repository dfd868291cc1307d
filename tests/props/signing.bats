#!/usr/bin/env bats
# signing.bats - signed requests as the carrier receives them: what
# {params} holds for each kind of body, in which order, and {sign} wherever
# a profile puts it. srq's requests go to tests/helpers/badcarrier, which
# logs them as they arrived; each signature is checked against a digest
# computed here, with openssl, over a parameter string written out by hand.

bats_require_minimum_version 1.5.0

load ../test_helper

# hmac TEXT: the hex HMAC-SHA256 of TEXT under the key the tests' profiles
# sign with (k3y), as a carrier would compute it.
hmac() {
	printf '%s' "$1" | openssl dgst -sha256 -hmac k3y -r | cut -d' ' -f1
}

# signed NAME ACCOUNT LINE...: a profile NAME for ACCOUNT, srq's default
# contract but for LINEs, signing {params} with HMAC-SHA256 keyed k3y.
signed() {
	local name=$1 account=$2
	shift 2
	PROFILE_NAME=$name profiles 'from = default' "accounts = $account" 'sign = hmac-sha256' \
		'secret.app_key = k3y' 'sign.key = {app_key}' 'sign.input = {params}' "$@"
}

# stop_on CARD ACCOUNT: a stop for CARD of ACCOUNT, due now.
stop_on() {
	printf '{"card":"%s","carrier":"%s","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$1" "$2" "$PAST" | sr-enqueue >/dev/null
}

# sent CARD: the stop request of CARD as the carrier read it (JSON: method,
# path, headers, body).
sent() {
	jq -c --arg card "$1" 'select(.path | test("/cards/" + $card + "/stop"))' "$T/bad-main.log"
}

@test "{params}: sorted by name, then by value, names that begin with another name included; values decoded" {
	# user, user.id and user2: sorted as whole "k=v" strings, user=u1 would
	# come last ('.' < '2' < '='); a carrier sorting by name puts it first.
	signed sorted c1 'set.note = a b/c' 'stop.method = GET' 'stop.body =' \
		'stop.url = {base}/v1/cards/{card}/stop?user2=x&user=u1&tag=b&card={card}&user.id=42&tag=a&note={note}' \
		'header = X-Sign: {sign}'
	bad_start main ok
	stop_on S1 c1
	run -0 drain 10
	# The value went out percent-encoded; it is signed decoded.
	sent S1 | jq -e '.path | endswith("&note=a%20b%2Fc")'
	assert_equal "$(sent S1 | jq -r '.headers["x-sign"]')" \
		"$(hmac 'card=S1&note=a b/c&tag=a&tag=b&user=u1&user.id=42&user2=x')"
	assert_equal "$(rcli HGET t:card:S1:facts st)" stopped
}

@test "{params} for each kind of body: the query string, and a form's fields or a JSON body's strings and integers; never a body not sent" {
	signed form cform 'set.note = a b/c' 'stop.type = form' \
		'stop.url = {base}/v1/cards/{card}/stop?b=2&a=1' 'stop.body = z=26&card={card}&msg={note}' \
		'header = X-Sign: {sign}'
	signed json cjson 'set.note = a b/c' 'stop.url = {base}/v1/cards/{card}/stop?a=1' \
		'stop.body = {"msg":"{note}","card":"{card}","n":7,"ok":true,"r":1.5,"x":{"y":1},"l":[1],"z":null}' \
		'header = X-Sign: {sign}'
	signed text ctext 'stop.type = text' 'stop.url = {base}/v1/cards/{card}/stop?a=1' \
		'stop.body = card={card}&z=1' 'header = X-Sign: {sign}'
	# A GET sends no body: the JSON body it inherits from the default
	# profile reaches no carrier, and is not signed.
	signed get cget 'stop.method = GET' 'stop.url = {base}/v1/cards/{card}/stop?carrier={carrier}' \
		'header = X-Sign: {sign}'
	bad_start main ok
	stop_on F1 cform
	stop_on J1 cjson
	stop_on X1 ctext
	stop_on G1 cget
	run -0 drain 10
	assert_equal "$(sent F1 | jq -r .body)" 'z=26&card=F1&msg=a%20b%2Fc'
	assert_equal "$(sent F1 | jq -r '.headers["x-sign"]')" "$(hmac 'a=1&b=2&card=F1&msg=a b/c&z=26')"
	assert_equal "$(sent J1 | jq -r '.headers["x-sign"]')" "$(hmac 'a=1&card=J1&msg=a b/c&n=7')"
	assert_equal "$(sent X1 | jq -r '.headers["x-sign"]')" "$(hmac 'a=1')"
	assert_equal "$(sent G1 | jq -r '.body')" ''
	assert_equal "$(sent G1 | jq -r '.headers["x-sign"]')" "$(hmac 'carrier=cget')"
}

# param NAME: the decoded value of query parameter NAME of a request's path
# (on stdin, as sent() gives it).
param() {
	jq -r --arg n "$1" '.path | sub("^[^?]*[?]"; "") | split("&")[] | select(startswith($n + "="))
		| sub("^[^=]*="; "") | gsub("%2F"; "/") | gsub("%40"; "@")'
}

@test "{sign} in the query string, a form body or a JSON body: made last, over every other parameter, its own left out" {
	# The old China Telecom CMP's shape: a GET whose query string carries
	# the account, the password and the signature; {ts} is filled before
	# it is signed. The same {sign} in a header.
	signed query cquery 'secret.password = p@ss/w0rd' 'stop.method = GET' \
		'stop.url = {base}/v1/cards/{card}/stop?method=disabledNumber&user_id={carrier}&access_number={card}&passWord={password}&ts={ts}&sign={sign}' \
		'header = X-Sign: {sign}'
	signed form cform 'stop.type = form' 'stop.url = {base}/v1/cards/{card}/stop?a=1' \
		'stop.body = card={card}&sign={sign}&z=26'
	signed json cjson 'stop.url = {base}/v1/cards/{card}/stop' \
		'stop.body = {"card":"{card}","sign":"{sign}","n":7}'
	# The profile checker builds them as they would be sent.
	run -0 --separate-stderr sr-admin profile cquery
	echo "$output" | jq -e '.ok and (.check.requests | to_entries | all(.value == "ok"))'
	run -0 --separate-stderr sr-admin profile cjson
	bad_start main ok
	stop_on Q1 cquery
	stop_on F1 cform
	stop_on J1 cjson
	run -0 drain 10
	ts=$(sent Q1 | param ts)
	[[ $ts =~ ^[0-9]{14}$ ]]
	want=$(hmac "access_number=Q1&method=disabledNumber&passWord=p@ss/w0rd&ts=$ts&user_id=cquery")
	assert_equal "$(sent Q1 | param sign)" "$want"
	assert_equal "$(sent Q1 | jq -r '.headers["x-sign"]')" "$want"
	assert_equal "$(sent F1 | jq -r .body)" "card=F1&sign=$(hmac 'a=1&card=F1&z=26')&z=26"
	assert_equal "$(sent J1 | jq -r .body)" "{\"card\":\"J1\",\"sign\":\"$(hmac 'card=J1&n=7')\",\"n\":7}"
	assert_equal "$(rcli HGET t:card:Q1:facts st) $(rcli HGET t:card:F1:facts st) $(rcli HGET t:card:J1:facts st)" \
		'stopped stopped stopped'
}

# readme_example: the worked example of a signed request in
# docs/carriers.md (the code block that starts "# A signed request, worked
# through"), one line per line.
readme_example() {
	awk '/^```/ { if (inb) exit; next } /^# A signed request, worked through/ { inb = 1 } inb' \
		"$PROJECT_ROOT/docs/carriers.md"
}

@test "the worked example of docs/carriers.md: its {params} and its signature are openssl's, and what srq sends" {
	readme_example >"$T/example"
	# What it says, taken from it: an edit of the example is an edit of this test.
	card=$(sed -n 's/^# the stop of card \([0-9]*\):.*/\1/p' "$T/example")
	params=$(sed -n 's/^# {params} = //p' "$T/example")
	sign=$(sed -n 's/^# {sign}   = //p' "$T/example")
	path=$(sed -n 's/^# sent: GET //p' "$T/example")
	key=$(sed -n 's/^secret.app_key = //p' "$T/example")
	account=$(sed -n 's/^accounts = //p' "$T/example")
	[[ $card =~ ^[0-9]{20}$ && -n $params && $sign =~ ^[0-9a-f]{64}$ && -n $path && -n $key && -n $account ]]
	assert_equal "$(printf '%s' "$params" | openssl dgst -sha256 -hmac "$key" -r | cut -d' ' -f1)" "$sign"
	mkdir -p "$T/profiles"
	grep -v '^#' "$T/example" >"$T/profiles/example.profile"
	export SRQ_PROFILES="$T/profiles"
	bad_start main ok
	stop_on "$card" "$account"
	run -0 drain 10
	assert_equal "$(sent "$card" | jq -r '"\(.method) \(.path)"')" "GET $path"
	assert_equal "$(sent "$card" | param sign)" "$sign"
}
