#!/usr/bin/env bats
# profile_test.bats - the checks an operator runs before an account goes
# live on a profile: sr-admin profile ACCOUNT --test FILE replays recorded
# answers through the account's profile (every shipped profile's own file
# passes; a profile with one rule wrong fails, naming the line), and
# --probe CARD sends one live status query, never a change.

bats_require_minimum_version 1.5.0

load ../test_helper

CARD=89860012345678901234

# account_for PROFILE_FILE: an account the profile serves (its first
# accounts glob with '*' as 1; the default profile serves any).
account_for() {
	local g
	g=$(sed -n 's/^accounts = \([^ ]*\).*/\1/p' "$1" | head -1)
	g=${g:-c1}
	echo "${g//\*/1}"
}

# lines_where FILE JQ_FILTER: the line numbers of FILE's cases the filter holds for.
lines_where() {
	jq -c "$2" "$1" | grep -n '^true$' | cut -d: -f1 | tr '\n' ' '
}

@test "--test: every shipped profile passes its recorded answers, which cover its rules, each state, each order word and another card" {
	local n=0 f name acct t
	for f in "$PROJECT_ROOT"/share/profiles/*.profile; do
		name=$(basename "$f" .profile)
		t=${f%.profile}.test.jsonl
		[ -f "$t" ] || { echo "no recorded answers for $name: $t" >&2; return 1; }
		example_profile "$name"
		acct=$(account_for "$f")
		run -0 --separate-stderr sr-admin profile "$acct" --test "$t"
		# One record per case, each passed, then the summary.
		assert_equal "$(echo "$output" | jq -s '[.[] | select(.line)] | length')" "$(grep -c . "$t")"
		echo "$output" | jq -s -e '[.[] | select(.line)] | all(.pass)'
		echo "$output" | tail -1 | jq -e --arg p "$name" '.summary and .profile == $p and .failed == 0 and .cases > 0'
		# Every outcome the profile's rules name is a recorded change's.
		for o in $(sr-admin profile "$acct" | jq -r '.rules[].outcome' | sort -u); do
			# (async = yes: an ok is read as accepted, in_progress)
			jq -s -e --arg o "$o" 'any(.[]; .kind == "change" and (.outcome == $o or
				($o == "ok" and .outcome == "in_progress")))' "$t" >/dev/null ||
				{ echo "$name: no recorded change read as $o" >&2; return 1; }
		done
		# A query per state.
		for s in active stopped other; do
			jq -s -e --arg s "$s" 'any(.[]; .kind == "query" and .observed == $s)' "$t" >/dev/null ||
				{ echo "$name: no recorded query read as $s" >&2; return 1; }
		done
		# An answer about another card where the profile says where answers name theirs.
		if grep -q '^card = ' "$f"; then
			jq -s -e 'any(.[]; .mismatch == true and (.answer_card // "") != "")' "$t" >/dev/null ||
				{ echo "$name: no recorded answer about another card" >&2; return 1; }
		fi
		# Orders: each word of a profile that polls them, and an answer
		# about another order.
		if grep -q '^poll.url = ' "$f"; then
			for w in done failed pending; do
				jq -s -e --arg w "$w" 'any(.[]; .kind == "poll" and .order == $w)' "$t" >/dev/null ||
					{ echo "$name: no recorded poll read as $w" >&2; return 1; }
			done
			jq -s -e 'any(.[]; .kind == "poll" and .mismatch == true and (.answer_card // "") == "")' "$t" >/dev/null ||
				{ echo "$name: no recorded poll about another order" >&2; return 1; }
		fi
		n=$((n + 1))
	done
	[ "$n" -ge 5 ]
}

@test "--test: a profile with one rule wrong fails its recorded answers, exit 1, naming each line" {
	local t=$PROJECT_ROOT/share/profiles/default.test.jsonl want
	# The carrier's "too frequent" read as a throttle: the card's window
	# would be given back and it would be called again at once.
	example_profile default
	sed -i 's/^rule = http=409 code=TOO_FREQUENT => too_frequent$/rule = http=409 code=TOO_FREQUENT => throttle/' \
		"$T/profiles/default.profile"
	grep -q 'TOO_FREQUENT => throttle' "$T/profiles/default.profile"
	want=$(lines_where "$t" '.outcome == "too_frequent"')
	[ -n "$want" ]
	run -1 --separate-stderr sr-admin profile c1 --test "$t"
	assert_equal "$(echo "$output" | jq -r 'select(.line and (.pass | not)) | .line' | tr '\n' ' ')" "$want"
	for l in $want; do
		echo "$output" | jq -s -e --argjson l "$l" '.[] | select(.line == $l) |
			.expected.outcome == "too_frequent" and .read.outcome == "throttle"'
		[[ $stderr == *"line $l:"* ]]
	done
	echo "$output" | tail -1 | jq -e --argjson n "$(echo $want | wc -w)" '.summary and .failed == $n'
	# Every shipped profile, its first ok rule made a failure: exit 1.
	for f in "$PROJECT_ROOT"/share/profiles/*.profile; do
		name=$(basename "$f" .profile)
		rm -f "$T/profiles/"*.profile
		example_profile "$name"
		sed -i '0,/^rule = \(.*\) => ok$/s//rule = \1 => fail/' "$T/profiles/$name.profile"
		run -1 --separate-stderr sr-admin profile "$(account_for "$f")" --test "${f%.profile}.test.jsonl"
		[[ $stderr == *"line "* ]]
	done
}

@test "--test: a change on its way is recorded as pending (state.pending), and a rule read wrong fails it" {
	profiles 'from = default' 'accounts = *' 'state.pending = updating'
	printf '%s\n' \
		'{"kind":"query","http":200,"body":"{\"card\":\"K1\",\"status\":\"updating\"}","card":"K1","outcome":"ok","observed":"pending"}' \
		'{"kind":"query","http":200,"body":"{\"card\":\"K1\",\"status\":\"stopped\"}","card":"K1","outcome":"ok","observed":"stopped"}' \
		>"$T/pending.jsonl"
	run -0 --separate-stderr sr-admin profile c1 --test "$T/pending.jsonl"
	# Without state.pending, "updating" is a state srq never changes: other.
	profiles 'from = default' 'accounts = *'
	run -1 --separate-stderr sr-admin profile c1 --test "$T/pending.jsonl"
}

@test "--test: a bad line is named by its number, exit 2, nothing replayed" {
	profiles 'from = default' 'accounts = c1'
	good='{"kind":"change","http":200,"body":"{\"code\":\"OK\"}","card":"C1","outcome":"ok"}'
	printf '%s\n' "$good" '{"kind":"change",' "$good" >"$T/bad-json.jsonl"
	run -2 --separate-stderr sr-admin profile c1 --test "$T/bad-json.jsonl"
	[[ $stderr == *"line 2:"* ]]
	assert_output ''
	printf '%s\n' "$good" "$good" '{"kind":"stop","http":200,"body":"","card":"C1","outcome":"ok"}' >"$T/bad-kind.jsonl"
	run -2 --separate-stderr sr-admin profile c1 --test "$T/bad-kind.jsonl"
	[[ $stderr == *"line 3:"*kind* ]]
	printf '%s\n' '{"kind":"change","http":200,"body":"","card":"C1","outcome":"fine"}' >"$T/bad-outcome.jsonl"
	run -2 --separate-stderr sr-admin profile c1 --test "$T/bad-outcome.jsonl"
	[[ $stderr == *"line 1:"*outcome* ]]
	# A query read as a state must say which state.
	printf '%s\n' '{"kind":"query","http":200,"body":"","card":"C1","outcome":"ok"}' >"$T/no-observed.jsonl"
	run -2 --separate-stderr sr-admin profile c1 --test "$T/no-observed.jsonl"
	[[ $stderr == *"line 1:"*observed* ]]
	# A misspelt key would check nothing: refused.
	printf '%s\n' '{"kind":"query","http":200,"body":"","card":"C1","outcome":"ok","obsreved":"active"}' >"$T/typo.jsonl"
	run -2 --separate-stderr sr-admin profile c1 --test "$T/typo.jsonl"
	[[ $stderr == *"line 1:"*obsreved* ]]
	# A token answer for a profile that fetches none.
	printf '%s\n' '{"kind":"token","http":200,"body":"{}","outcome":"ok"}' >"$T/token.jsonl"
	run -2 --separate-stderr sr-admin profile c1 --test "$T/token.jsonl"
	[[ $stderr == *"line 1:"*token* ]]
	run -2 --separate-stderr sr-admin profile c1 --test "$T/none.jsonl"
	: >"$T/empty.jsonl"
	run -2 --separate-stderr sr-admin profile c1 --test "$T/empty.jsonl"
	# The options: one at a time, and only for profile.
	run -2 --separate-stderr sr-admin profile c1 --test "$T/typo.jsonl" --probe C1
	run -2 --separate-stderr sr-admin show C1 --test "$T/typo.jsonl"
	run -2 --separate-stderr sr-admin limits c1 --probe C1
}

@test "--probe: one status query through the default profile (bearer token), how srq read it, no change" {
	printf 'gw-t0ken-%s\n' "$RANDOM" >"$T/gwtoken"
	gwsim_start --token-file "$T/gwtoken"
	export SRQ_GATEWAY_TOKEN_FILE="$T/gwtoken"
	run -0 --separate-stderr sr-admin profile c1 --probe "$CARD"
	echo "$output" | jq -e --arg c "$CARD" '.carrier == "c1" and .card == $c and .http == 200 and
		.verdict == "ok" and .observed == "active" and .carrier_state == "active" and .answer_card == $c'
	[[ $output != *"$(cat "$T/gwtoken")"* && $stderr != *"$(cat "$T/gwtoken")"* ]]
	assert_equal "$(jq -s -c 'map(.kind)' "$T/gw.log")" '["status"]'
	assert_equal "$(jq -r .card "$T/gw.log")" "$CARD"
	# Redis is never asked: the account's queues are untouched.
	run rcli --scan --pattern "$SRQ_PREFIX:*"
	assert_output ''
	# A carrier that fails the query: read as no state, exit 1.
	: >"$T/gw.log"
	gwsim_start --token-file "$T/gwtoken" --fail-account c1
	run -1 --separate-stderr sr-admin profile c1 --probe "$CARD"
	echo "$output" | jq -e '.http == 500 and .verdict == "unknown" and .observed == null'
	assert_equal "$(jq -s -c 'map(.kind)' "$T/gw.log")" '["status"]'
}

@test "--probe: onelink-like: the token fetched, then one status query; a stopped card read as stopped, the password never shown" {
	printf 'app-s3cret-%s\n' "$RANDOM" >"$T/pw"
	example_profile onelink
	cp "$T/pw" "$T/secrets/cmcc-1.password"
	printf '{"card":"%s","status":"stopped"}\n' "$CARD" >"$T/cards"
	gwsim_start --profile onelink --password-file "$T/pw" --cards "$T/cards"
	run -0 --separate-stderr sr-admin profile cmcc-1 --probe "$CARD"
	echo "$output" | jq -e '.http == 200 and .verdict == "ok" and .observed == "stopped" and .carrier_state == "4"'
	[[ $output != *"$(cat "$T/pw")"* && $stderr != *"$(cat "$T/pw")"* ]]
	assert_equal "$(jq -s -c 'map(.kind)' "$T/gw.log")" '["token","status"]'
	# A wrong password: the token refused, no query sent, exit 1.
	echo wrong >"$T/secrets/cmcc-1.password"
	: >"$T/gw.log"
	run -1 --separate-stderr sr-admin profile cmcc-1 --probe "$CARD"
	[[ $output$stderr == *"token"* ]]
	assert_equal "$(jq -s -c 'map(.kind)' "$T/gw.log")" '["token"]'
}

@test "--probe: cisco-like: an answer about another card is not read as a state, and names the card" {
	printf 'api-key-%s\n' "$RANDOM" >"$T/key"
	example_profile cisco
	cp "$T/key" "$T/secrets/cucc-1.apikey"
	gwsim_start --profile cisco --password-file "$T/key" --fault-other-card 1 --other-card 89860000000000000042
	run -1 --separate-stderr sr-admin profile cucc-1 --probe "$CARD"
	echo "$output" | jq -e '.http == 200 and .verdict == "unknown" and .class == "mismatch" and
		.answer_card == "89860000000000000042" and .observed == null'
	[[ $output != *"$(cat "$T/key")"* ]]
	assert_equal "$(jq -s -c 'map(.kind)' "$T/gw.log")" '["status"]'
}
