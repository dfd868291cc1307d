#!/usr/bin/env bats
# profiles.bats - srq calling carriers that do not speak its own contract,
# through the shipped example profiles, end to end against sr-gwsim in each
# shape: every card ends in its judged state with no interval and no rate
# violation at the carrier, through throttle codes inside HTTP 200, a token
# that expires mid-run, asynchronous changes confirmed by status queries,
# and signatures the carrier checks.

bats_require_minimum_version 1.5.0

load ../test_helper

# converged N QPS: N cards stopped, each by one applied change, with no
# interval and no rate violation at the carrier.
converged() {
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
	run gwcheck rate "$T/gw.log" "$2"
	assert_output ''
	assert_equal "$(jq -s '[.[] | select(.applied and .state == "stopped")] | length' "$T/gw.log")" "$1"
	assert_equal "$(gwcheck states "$T/gw.log" /dev/null | jq -r .status | sort | uniq -c | awk '{print $1, $2}')" "$1 stopped"
	run rcli --scan --pattern "$SRQ_PREFIX:carrier:*:stop_resume*"
	assert_output ''
}

@test "onelink-like: codes in HTTP 200, a throttle code, a token fetched once and refreshed once for all calls in flight" {
	printf 'app-s3cret-%s\n' "$RANDOM" >"$T/pw"
	example_profile onelink
	cp "$T/pw" "$T/secrets/cmcc-1.password"
	cp "$T/pw" "$T/secrets/cmcc-2.password"
	# The carrier throttles some calls inside HTTP 200 (12040), answers
	# slowly (so calls are in flight together), and limits each account to
	# 5 calls a second, as the profile says.
	gwsim_start --profile onelink --password-file "$T/pw" --qps 5 --latency-ms 400 \
		--fault-429 0.1 --seed 3
	stop_backlog 20 cmcc-1 cmcc-2
	drain 60 >"$T/finals" &
	pid=$!
	# Let the first tokens live 2.5 s, then expire them (the carrier ends
	# tokens before their advertised ttl); the new ones live long enough.
	for i in $(seq 100); do [ "$(jq -s '[.[] | select(.kind == "token")] | length' "$T/gw.log")" -ge 2 ] && break; sleep 0.1; done
	issued=$(jq -s '[.[] | select(.kind == "token") | .t] | max' "$T/gw.log")
	sleep 2.5
	gw_set token_ttl_ms=$(( $(date +%s%3N) - issued - 300 ))
	for i in $(seq 100); do [ "$(jq -s '[.[] | select(.kind == "token")] | length' "$T/gw.log")" -ge 4 ] && break; sleep 0.1; done
	gw_set token_ttl_ms=0
	wait "$pid"
	# Expired tokens were refused (12021), and each account fetched exactly
	# one new token however many of its calls were refused.
	jq -s -e '[.[] | select(.code == "12021")] | length >= 2' "$T/gw.log"
	assert_equal "$(jq -s -c '[.[] | select(.kind == "token")] | group_by(.carrier) | map(length)' "$T/gw.log")" '[2,2]'
	# Throttled inside HTTP 200, and called again.
	jq -s -e '[.[] | select(.code == "12040")] | length > 0' "$T/gw.log"
	converged 40 5
}

@test "onelink-like: two pipelines at once, every request's transid still unique" {
	printf 'pw\n' >"$T/pw"
	example_profile onelink
	cp "$T/pw" "$T/secrets/cmcc-1.password"
	gwsim_start --profile onelink --password-file "$T/pw" --qps 5 --latency-ms 100
	stop_backlog 20 cmcc-1
	drain 60 >/dev/null &
	pid=$!
	drain 60 >/dev/null &
	pid2=$!
	wait "$pid" "$pid2"
	assert_equal "$(jq -r .key "$T/gw.log" | sort | uniq -d)" ''
	converged 20 5
}

@test "cisco-like: HTTP Basic, 5 calls a second and one in flight, asynchronous changes confirmed by status queries" {
	printf 'api-key-%s\n' "$RANDOM" >"$T/key"
	example_profile cisco 'poll_ms = 300'
	cp "$T/key" "$T/secrets/cucc-1.apikey"
	cp "$T/key" "$T/secrets/cucc-2.apikey"
	# Each change lands 2.5 s after it was accepted (202): a status query
	# before that still sees the old state.
	gwsim_start --profile cisco --password-file "$T/key" --qps 5 --max-inflight 1 --async-ms 2500
	stop_backlog 8 cucc-1 cucc-2
	run -0 drain 60
	# Never over the carrier's limits: nothing refused for rate or in flight.
	assert_equal "$(jq -s '[.[] | select(.refused)] | length' "$T/gw.log")" 0
	# Accepted, then confirmed by queries, never called twice.
	jq -s -e '[.[] | select(.kind == "apply")] | length == 16' "$T/gw.log"
	jq -s -e '[.[] | select(.kind == "status" and .code == "active")] | length > 0' "$T/gw.log"
	jq -s -e '[.[] | select(.kind == "stop")] | group_by(.card) | all(.[]; length == 1)' "$T/gw.log"
	converged 16 5
}

# ctcmp_setup [LINE...]: the ctcmp example for ctcc-1 and ctcc-2, their
# password and signing key in $T/pw and $T/key (what sr-gwsim checks).
ctcmp_setup() {
	printf 'pw-s3cret-%s\n' "$RANDOM" >"$T/pw"
	printf 'sign-key-%s\n' "$RANDOM" >"$T/key"
	example_profile ctcmp "$@"
	for a in ctcc-1 ctcc-2; do
		cp "$T/pw" "$T/secrets/$a.password"
		cp "$T/key" "$T/secrets/$a.signkey"
	done
}

@test "ctcmp-like: the signature in the query string, over every other parameter: every call and query taken, none refused" {
	ctcmp_setup 'async = yes' 'poll_ms = 300'
	run -0 --separate-stderr sr-admin profile ctcc-1
	echo "$output" | jq -e '.ok and (.check.requests | to_entries | all(.value == "ok"))'
	# The carrier checks each request's signature (and password), answers
	# 5 calls a second, and applies a change 0.5 s after accepting it: status
	# queries, signed too, see it land.
	gwsim_start --profile ctcmp --password-file "$T/pw" --sign-key-file "$T/key" --qps 5 \
		--latency-ms 100 --async-ms 500
	stop_backlog 8 ctcc-1 ctcc-2
	run -0 drain 60
	assert_equal "$(jq -s '[.[] | select(.refused)] | length' "$T/gw.log")" 0
	jq -s -e '[.[] | select(.kind == "status" and .code == "active")] | length > 0' "$T/gw.log"
	converged 16 5
}

@test "ctcmp-like: throttle codes inside HTTP 200, a card not yet activated left alone, the signing key rotated mid-run" {
	ctcmp_setup 'async = yes' 'poll_ms = 300'
	echo '{"card":"P1","status":"retired"}' >"$T/gw-cards.jsonl"
	gwsim_start --profile ctcmp --password-file "$T/pw" --sign-key-file "$T/key" --qps 5 \
		--async-ms 500 --fault-429 0.15 --seed 3 --cards "$T/gw-cards.jsonl"
	stop_backlog 6 ctcc-1 ctcc-2
	printf '{"card":"P1","carrier":"ctcc-1","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' | sr-enqueue >/dev/null
	sr-claim --until-empty --for 2 | sr-exec | tee -a "$T/results.jsonl" | sr-confirm >>"$T/finals.jsonl" || true
	# The carrier and srq's files get a new key: a request signed with the
	# old one meanwhile is refused (-5), its secrets read again, signed again.
	cp "$T/key" "$T/key.old"
	printf 'sign-n3w-%s\n' "$RANDOM" >"$T/key"
	for a in ctcc-1 ctcc-2; do cp "$T/key" "$T/secrets/$a.signkey"; done
	drain_until_empty
	jq -s -e '[.[] | select(.code == "-6")] | length > 0' "$T/gw.log"
	# P1 (the carrier's 1, not yet activated) refused for good: frozen, never changed.
	assert_equal "$(jq -s '[.[] | select(.card == "P1" and .applied)] | length' "$T/gw.log")" 0
	assert_equal "$(sr-admin show P1 | jq -r .command.frozen)" 1
	for a in ctcc-1 ctcc-2; do for i in $(seq 0 5); do
		assert_equal "$(sr-admin show "$a-$i" | jq -r .facts.status)" stopped
	done; done
	! grep -r -F -q -e "$(cat "$T/key.old")" -e "$(cat "$T/key")" -e "$(cat "$T/pw")" \
		"$T/results.jsonl" "$T/finals.jsonl" "$T/gw.log" "$T/drain.err"
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
	run gwcheck rate "$T/gw.log" 5
	assert_output ''
}

@test "ctcmp-like: signed with another key, every call refused unapplied and taken as an authentication refusal; the key put right, they go in" {
	ctcmp_setup
	printf 'wrong-key-%s\n' "$RANDOM" >"$T/secrets/ctcc-1.signkey"
	gwsim_start --profile ctcmp --password-file "$T/pw" --sign-key-file "$T/key" --qps 5
	stop_backlog 3 ctcc-1
	sr-claim --until-empty --for 3 | sr-exec >"$T/results" 2>"$T/exec.err" || true
	# Each call refused (-5), none applied; sent again once, after the
	# secret files were read again, and refused again: class auth.
	jq -s -e 'length == 6 and all(.[]; .kind == "stop" and .code == "-5" and .refused and (.applied | not))' "$T/gw.log"
	assert_equal "$(jq -s -c '[.[] | .card] | group_by(.) | map(length)' "$T/gw.log")" '[2,2,2]'
	jq -s -e 'length == 3 and all(.[]; .outcome == "retry" and .class == "auth")' "$T/results"
	run -0 --separate-stderr sr-confirm <"$T/results"
	echo "$output" | jq -s -e 'length == 3 and all(.[]; .state == "requeued")'
	! grep -r -F -q "$(cat "$T/pw")" "$T/results" "$T/exec.err"
	# The key put right, the same cards go in.
	cp "$T/key" "$T/secrets/ctcc-1.signkey"
	run -0 drain 30
	converged 3 5
}

# ct5gcmp_setup [LINE...]: the ct5gcmp example for ct5g-1 and ct5g-2, their
# app secret in $T/key (what sr-gwsim checks).
ct5gcmp_setup() {
	printf 'app-s3cret-%s\n' "$RANDOM" >"$T/key"
	example_profile ct5gcmp "$@"
	# Orders polled every 300 ms, not the example's 5 s.
	sed -i -e 's/^poll_ms = .*/poll_ms = 300/' -e 's/^settle_ms = .*/settle_ms = 20000/' \
		"$T/profiles/ct5gcmp.profile"
	for a in ct5g-1 ct5g-2; do cp "$T/key" "$T/secrets/$a.appsecret"; done
}

@test "ct5gcmp-like: headers signed, XML answers, every change an order polled to its end: throttles, a pre-activation card, orders failed, the secret rotated mid-run" {
	ct5gcmp_setup
	run -0 --separate-stderr sr-admin profile ct5g-1
	echo "$output" | jq -e '.ok and (.check.requests | to_entries | all(.value == "ok"))'
	# 12 cards on two accounts; P1 not yet activated (the carrier's 1).
	{
		for a in ct5g-1 ct5g-2; do for i in $(seq 0 5); do printf '{"card":"%s-%d","status":"active"}\n' "$a" "$i"; done; done
		echo '{"card":"P1","status":"retired"}'
	} >"$T/gw-cards.jsonl"
	# 5 calls a second; orders land 0.8 s after they are accepted; one in
	# ten refused for rate inside HTTP 200 (1010), one in five orders
	# fails at the carrier (then called again).
	gwsim_start --profile ct5gcmp --sign-key-file "$T/key" --qps 5 --async-ms 800 \
		--fault-429 0.1 --fault-order-failed 0.2 --seed 5 --cards "$T/gw-cards.jsonl"
	stop_backlog 6 ct5g-1 ct5g-2
	printf '{"card":"P1","carrier":"ct5g-1","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' | sr-enqueue >/dev/null
	# Mid-run, the carrier and srq's file both get a new app secret: what
	# was signed with the old one is refused (1003) and signed again.
	sr-claim --until-empty --for 3 | sr-exec | tee -a "$T/results.jsonl" | sr-confirm >>"$T/finals.jsonl" || true
	cp "$T/key" "$T/key.old"
	printf 'app-n3w-%s\n' "$RANDOM" >"$T/key.new"
	cp "$T/key.new" "$T/key"
	for a in ct5g-1 ct5g-2; do cp "$T/key.new" "$T/secrets/$a.appsecret"; done
	drain_until_empty
	# P1 never changed.
	run -0 jq -s -r '[.[] | select(.kind == "stop" and .card == "P1" and .applied)] | length' "$T/gw.log"
	assert_output 0
	# (refused as not allowed in its state, 1002: frozen with an alert)
	run -0 bash -c "sr-admin alerts | jq -r 'select(.card == \"P1\") | .alert'"
	assert_output permanent
	assert_equal "$(sr-admin show P1 | jq -r .command.frozen)" 1
	# Orders were polled (pending, done and failed seen), throttles met.
	run -0 jq -r 'select(.task == "query" and .order != null) | .order' "$T/results.jsonl"
	for w in pending done failed; do assert_line "$w"; done
	jq -s -e '[.[] | select(.code == "1010")] | length > 0' "$T/gw.log"
	# No call left: every card of the backlog ended stopped by srq.
	for a in ct5g-1 ct5g-2; do for i in $(seq 0 5); do
		assert_equal "$(sr-admin show "$a-$i" | jq -r '.facts.status')" stopped
	done; done
	# The secrets never reached a result, a final or a log.
	! grep -r -F -q -e "$(cat "$T/key.old")" -e "$(cat "$T/key.new")" "$T/results.jsonl" "$T/finals.jsonl" "$T/gw.log" "$T/drain.err"
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
	run gwcheck rate "$T/gw.log" 5
	assert_output ''
}

@test "the default contract: asynchronous changes (202) and a throttle inside HTTP 200" {
	profiles 'from = default' 'accounts = *' 'poll_ms = 200'
	gwsim_start --qps 20 --async-ms 500 --throttle-in-body --fault-429 0.15 --seed 9
	stop_backlog 15 c1 c2
	run -0 drain 60
	jq -s -e '[.[] | select(.code == "THROTTLED")] | length > 0' "$T/gw.log"
	jq -s -e '[.[] | select(.kind == "apply")] | length == 30' "$T/gw.log"
	converged 30 20
}

@test "a card the carrier retired is frozen with an alert, never changed automatically" {
	cards='{"card":"R1","carrier":"c1","status":"retired"}'
	echo "$cards" >"$T/cards.jsonl"
	gwsim_start --cards "$T/cards.jsonl"
	stop_backlog 0 c1
	printf '{"card":"R1","carrier":"c1","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' | sr-enqueue >/dev/null
	# Its call was made and its result lost (a crash after the gate): the
	# next claim asks the carrier, which says the card is retired.
	sr-claim | sr-exec >/dev/null
	run -0 drain 10
	assert_output --partial '"task":"query","outcome":"ok","state":"frozen"'
	run -0 sr-admin alerts
	echo "$output" | jq -e 'select(.alert == "state") | .card == "R1" and (.detail | test("other"))'
	assert_equal "$(jq -s '[.[] | select(.applied)] | length' "$T/gw.log")" 0
}

@test "sr-admin profile: the resolved profile, secrets redacted, and checked" {
	printf 'app-s3cret-42\n' >"$T/pw"
	example_profile onelink 'secret.literal = env:NOT_SET_HERE hunter2-literal' \
		'header = X-Api-Key: literal-key-77'
	cp "$T/pw" "$T/secrets/cmcc-1.password"
	run -0 --separate-stderr sr-admin profile cmcc-1
	echo "$output" | jq -e '.profile == "onelink" and .limits.qps == 5 and .limits.max_inflight == 4
		and .vars.password.secret and (.vars.password.value | startswith("file:"))
		and .vars.literal.value == "env:NOT_SET_HERE (redacted)"
		and (.headers | index("X-Api-Key: (redacted)"))
		and .check.secrets.password == "set" and .check.ok == null and .ok
		and (.check.requests | to_entries | all(.value == "ok"))'
	[[ $output != *app-s3cret-42* && $output != *hunter2-literal* && $output != *literal-key-77* ]]
	# A signed request (HMAC-SHA256 over the sorted parameters and a
	# timestamp, in a header) builds too.
	PROFILE_NAME=signed profiles 'from = default' 'accounts = signed-*' 'secret.app = env:APP_SECRET' \
		'sign = hmac-sha256' 'sign.key = {app}' 'sign.input = {params}{ts}' 'header = X-Sign: {sign}' \
		'header = X-Ts: {ts}'
	APP_SECRET=s3 run -0 sr-admin profile signed-1
	echo "$output" | jq -e '.ok and .check.requests.stop == "ok"'
	run -1 --separate-stderr sr-admin profile signed-1
	echo "$output" | jq -e '.check.secrets.app == "not set" and (.check.requests.stop | test("secret.app is not set"))'
	# A secret file missing for another account: the check says which, exit 1.
	run -1 --separate-stderr sr-admin profile cmcc-9
	echo "$output" | jq -e '(.check.secrets.password | test("cannot read the secret file")) and (.ok | not)'
	[[ $stderr == *"does not check out"* ]]
	# An account no profile names is served by the built-in default...
	run -0 sr-admin profile other
	echo "$output" | jq -e '.profile == "default" and .file == "(built-in default)"
		and .requests.stop.url == "{base}/v1/cards/{card}/stop"'
	# ...or by default.profile, when the directory has one.
	printf 'from = default\nqps = 3\n' >"$T/profiles/default.profile"
	run -0 sr-admin profile other
	echo "$output" | jq -e '.profile == "default" and .limits.qps == 3'
	# A broken profile is a configuration error, named with its line.
	cp "$T/profiles/onelink.profile" "$T/onelink.good"
	echo 'burst = lots' >>"$T/profiles/onelink.profile"
	run -2 --separate-stderr sr-admin profile cmcc-1
	[[ $stderr == *"onelink.profile: line"*"burst: the value is not an integer from 1 to"* ]]
	# So is a misspelt placeholder, and a rule whose list is empty (it would
	# match every answer).
	sed 's/{card}/{crad}/' "$T/onelink.good" >"$T/profiles/onelink.profile"
	run -2 --separate-stderr sr-admin profile cmcc-1
	[[ $stderr == *"onelink.profile: line"*"unknown placeholder {crad}"* ]]
	{ cat "$T/onelink.good"; echo 'rule = code= => ok'; } >"$T/profiles/onelink.profile"
	run -2 --separate-stderr sr-admin profile cmcc-1
	[[ $stderr == *"'code=' names nothing"* ]]
	# And a request that does not name the card: the carrier would answer
	# about another card (or none), and its answer would be believed.
	sed 's/^query.url = .*/query.url = {base}\/query\/sim-status?token={token}\&transid={reqid}/' \
		"$T/onelink.good" >"$T/profiles/onelink.profile"
	run -2 --separate-stderr sr-admin profile cmcc-1
	[[ $stderr == *"onelink.profile"*"query: neither query.url, query.body nor a header names {card}"* ]]
	# Named through a variable, it does.
	sed -e 's/^query.url = .*/query.url = {base}\/query\/sim-status?msisdn={who}\&token={token}/' \
		-e '$a set.who = {card}' "$T/onelink.good" >"$T/profiles/onelink.profile"
	run -0 sr-admin profile cmcc-1
	cp "$T/onelink.good" "$T/profiles/onelink.profile"
}

@test "SRQ_PROFILES naming an empty directory: every account is served by the default profile" {
	# (a directory made for profiles not yet written: as if SRQ_PROFILES were unset)
	mkdir "$T/empty"
	export SRQ_PROFILES="$T/empty"
	gwsim_start
	stop_backlog 3 c1
	run -0 sr-admin profile c1
	echo "$output" | jq -e '.profile == "default" and .ok'
	run -0 drain 20
	converged 3 10
}
