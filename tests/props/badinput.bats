#!/usr/bin/env bats
# badinput.bats - every input line is answered with exactly one record, so
# in == out can be reconciled: a line too long, a NUL byte, duplicate keys,
# numbers of the wrong type or sign, a CSV quote never closed. The good
# lines around a bad one are still processed; input that cannot be read at
# all is an error, not an empty success.

bats_require_minimum_version 1.5.0

load ../test_helper

# lines N: how many records the output holds (stderr mixed in is skipped).
records() { grep -c '^{' <<<"$output"; }

# called_three: stops of AA01, BB01, CC01 (account c1) claimed and called,
# the carrier's answers (all ok) in $T/results, not yet confirmed.
called_three() {
	gwsim_start
	for c in AA01 BB01 CC01; do
		printf '{"card":"%s","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$c" "$PAST"
	done | sr-enqueue >/dev/null
	sr-claim --max 3 | sr-exec >"$T/results"
	assert_equal "$(jq -r .outcome "$T/results" | sort -u)" ok
}

@test "sr-exec answers every task line, the bad ones rejected by number, and calls only the good ones" {
	gwsim_start
	printf '{"card":"E1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST" |
		sr-enqueue >/dev/null
	good=$(sr-claim --max 1)
	{
		printf '{"task":"call","card":"E9","pad":"%s"}\n' "$(head -c 70000 /dev/zero | tr '\0' x)"
		printf '{"task":"call","card":"E9"}\0{"x":1}\n'
		printf '{"task":"call","task":"query","card":"E9","carrier":"c1","action":"stop","ver":1,"token":"1-9"}\n'
		printf '{"task":"call","card":"E9","carrier":"c1","action":"stop","ver":1.5,"token":"1-9"}\n'
		printf 'not json\n'
		echo "$good"
	} >"$T/tasks"
	run -1 sr-exec <"$T/tasks"
	assert_equal "$(records)" 6
	for n in 1 2 3 4 5; do
		assert_equal "$(jq -sr --argjson n "$n" '.[] | select(.line == $n) | .status' <<<"$(grep '^{' <<<"$output")")" rejected
	done
	assert_output --partial 'line longer than 65536 bytes'
	assert_output --partial 'line contains a NUL byte'
	assert_output --partial 'duplicate'
	assert_output --partial '"card":"E1"'
	assert_equal "$(jq -r .card "$T/gw.log")" E1
}

@test "sr-confirm rejects duplicate keys, non-integer http and negative retry_after_ms, and changes nothing" {
	gwsim_start
	printf '{"card":"F1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST" |
		sr-enqueue >/dev/null
	result=$(sr-claim --max 1 | sr-exec)
	before=$(rcli HGETALL 't:carrier:{c1}:card:F1')
	base=${result%\}}
	{
		echo "$base,\"outcome\":\"fail\"}" # the result says ok, then fail: which?
		echo "${base/\"http\":200/\"http\":200.5}}"
		echo "${base/\"outcome\":\"ok\"/\"outcome\":\"retry\"},\"retry_after_ms\":-1}"
		printf '%s\0\n' "$result"
	} >"$T/results"
	run -1 sr-confirm <"$T/results"
	assert_equal "$(records)" 4
	assert_equal "$(grep '^{' <<<"$output" | jq -r .status | sort -u)" rejected
	assert_output --partial 'duplicate'
	assert_output --partial 'bad \"http\"'
	assert_output --partial 'bad \"retry_after_ms\"'
	assert_output --partial 'NUL'
	assert_equal "$(rcli HGETALL 't:carrier:{c1}:card:F1')" "$before"
	# The genuine result still finishes it.
	run -0 sr-confirm <<<"$result"
	assert_output --partial '"state":"done"'
}

@test "a NUL byte in JSONL or CSV input rejects its line only" {
	run -1 sr-asset < <(printf '{"card":"A1","carrier":"c1","pkg_expires_at":1}\0junk\n{"card":"A2","carrier":"c1","pkg_expires_at":1}\n')
	assert_line --partial '"line":1,"status":"rejected","error":"line contains a NUL byte"'
	assert_line '{"line":2,"card":"A2","carrier":"c1","status":"loaded"}'
	run -1 sr-asset --csv < <(printf 'card,carrier,pkg_expires_at\nA\0"3,c1,1\nA4,c1,1\nA5,c1,1\n')
	assert_line --partial '"line":2,"status":"rejected","error":"line contains a NUL byte"'
	assert_line '{"line":3,"card":"A4","carrier":"c1","status":"loaded"}'
	assert_line '{"line":4,"card":"A5","carrier":"c1","status":"loaded"}'
	run -1 sr-enqueue < <(printf '{"card":"A4","carrier":"c1","scene":"package_expired"}\0\n{"card":"A5","carrier":"c1","scene":"package_expired"}\n')
	assert_line --partial '"line":1,"status":"rejected","error":"line contains a NUL byte"'
	assert_line --partial '"line":2,"card":"A5","carrier":"c1","status":"queued"'
}

@test "CSV: a quote never closed costs its row, not the rows after it; a bad header is an error" {
	run -1 sr-asset --csv < <(printf 'card,carrier,pkg_expires_at\n"B1,c1,1\nB2,c1,1\nB3,c1,1\n')
	assert_equal "$(records)" 3
	assert_line --partial '"line":2,"status":"rejected","error":"unterminated quote'
	assert_line '{"line":3,"card":"B2","carrier":"c1","status":"loaded"}'
	assert_line '{"line":4,"card":"B3","carrier":"c1","status":"loaded"}'
	run -2 sr-asset --csv < <(printf 'card,"carrier\nB5,c1\n')
	assert_output --partial 'line 1: header: unterminated quote'
	refute_output --partial '"status":"loaded"'
	run -2 sr-asset --csv < <(printf 'card,carrier,carrier\nB6,c1,c2\n')
	assert_output --partial "header: column 'carrier' appears twice"
	run -2 sr-enqueue --csv < <(printf 'card,carrier,carrier\nB6,c1,c2\n')
	assert_output --partial "appears twice"
}

@test "input that cannot be read is an error (exit 2), not an empty success" {
	for tool in sr-enqueue sr-exec sr-confirm sr-asset "sr-asset --csv" "sr-enqueue --csv"; do
		# shellcheck disable=SC2086
		run -2 $tool </
		assert_output --partial 'reading input'
		assert_output --partial 'Is a directory'
	done
	run -2 sr-admin retry - --reason test </
	assert_output --partial 'reading input'
}

@test "a command hash clobbered by hand fails its own card only: the rest of the account's batch is called and finished" {
	gwsim_start
	for c in G1 G2 G3; do
		printf '{"card":"%s","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$c" "$PAST"
	done | sr-enqueue >/dev/null
	sr-claim --max 3 >"$T/tasks"
	# The three are gated in one script call; G2's hash is now a string.
	rcli DEL 't:carrier:{c1}:card:G2' >/dev/null
	rcli SET 't:carrier:{c1}:card:G2' clobbered >/dev/null
	run -3 sr-exec <"$T/tasks"
	assert_equal "$(records)" 3
	assert_equal "$(grep '^{' <<<"$output" | jq -r 'select(.card == "G2") | .status')" error
	assert_output --partial 'WRONGTYPE'
	assert_equal "$(grep '^{' <<<"$output" | jq -r 'select(.outcome == "ok") | .card' | sort | tr '\n' ' ')" "G1 G3 "
	assert_equal "$(jq -r .card "$T/gw.log" | sort | tr '\n' ' ')" "G1 G3 "
	grep '^{' <<<"$output" >"$T/results"
	# Confirmed in one script call too, G3's hash clobbered meanwhile.
	rcli DEL 't:carrier:{c1}:card:G3' >/dev/null
	rcli SET 't:carrier:{c1}:card:G3' clobbered >/dev/null
	run -3 sr-confirm <"$T/results"
	assert_equal "$(records)" 3
	assert_equal "$(grep '^{' <<<"$output" | jq -r 'select(.card == "G1") | .state')" done
	assert_equal "$(grep '^{' <<<"$output" | jq -r 'select(.card == "G3") | .state')" error
	assert_equal "$(rcli HGET 't:carrier:{c1}:card:G1' action)" ''
	# The sweep names the two for a look (their commands cannot be read), and
	# leaves them as they are.
	run -1 --separate-stderr sr-sweep
	assert_equal "$(jq -r '"\(.finding) \(.card) \(.key) \(.type) \(.repaired)"' <<<"$output" | sort | paste -sd,)" \
		"wrong_type G2 t:carrier:{c1}:card:G2 string false,wrong_type G3 t:carrier:{c1}:card:G3 string false"
	[[ $stderr == *"2 damaged keys left for you"* ]]
	assert_equal "$(rcli GET 't:carrier:{c1}:card:G2')" clobbered
}

@test "an idle bucket clobbered by hand fails its own card's finish only: the rest of the batch finishes, and that command stays" {
	called_three
	# BB01 would sleep in bucket BB, now a string: its finish cannot be written.
	rcli SET 't:carrier:{c1}:idle:BB' clobbered >/dev/null
	run -3 sr-confirm <"$T/results"
	assert_equal "$(records)" 3
	assert_equal "$(grep '^{' <<<"$output" | jq -r 'select(.state == "done") | .card' | sort | paste -sd' ')" "AA01 CC01"
	assert_equal "$(grep '^{' <<<"$output" | jq -r 'select(.card == "BB01") | .state')" error
	assert_output --partial 'WRONGTYPE'
	# The two others sleep in their buckets; BB01's command is still there
	# and still queued, to be finished once the bucket is mended.
	assert_equal "$(rcli HGET 't:carrier:{c1}:idle:AA' 01 | cut -d'|' -f1)" 1
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:card:AA01' 't:carrier:{c1}:card:CC01')" 0
	assert_equal "$(rcli HGET 't:carrier:{c1}:card:BB01' action)" stop
	assert [ -n "$(rcli ZSCORE 't:carrier:{c1}:stop_resume' BB01)" ]
	# The sweep moves the bucket aside (what it held is gone already), once.
	run -1 --separate-stderr sr-sweep
	assert_equal "$(jq -r '"\(.finding) \(.key) \(.type) \(.want) \(.moved_to | test("^t:carrier:[{]c1[}]:idle:BB:damaged:[0-9]+$"))"' <<<"$output")" \
		"wrong_type t:carrier:{c1}:idle:BB string hash true"
	run -0 --separate-stderr sr-sweep
	assert_output ''
	# Its result, sent again, now finishes BB01 (its claim is still live);
	# the two finished ones are stale.
	run -0 sr-confirm <"$T/results"
	assert_equal "$(jq -r '"\(.card) \(.state)"' <<<"$output" | paste -sd,)" "AA01 stale,BB01 done,CC01 stale"
	assert_equal "$(rcli HGET 't:carrier:{c1}:idle:BB' 01 | cut -d'|' -f1)" 1
}

@test "a facts key clobbered by hand: the card's change is finished, its line says its status was not learned, exit 3" {
	called_three
	# BB01's stop is applied at the carrier; its facts can no longer be written.
	rcli SET 't:card:BB01:facts' clobbered >/dev/null
	run -3 --separate-stderr sr-confirm <"$T/results"
	assert_equal "$(jq -r '"\(.card) \(.state)"' <<<"$output" | paste -sd,)" "AA01 done,BB01 done,CC01 done"
	assert_equal "$(jq -r 'select(.error) | "\(.card) \(.error)"' <<<"$output")" \
		"BB01 the card's status was not learned: WRONGTYPE Operation against a key holding the wrong kind of value"
	[[ $stderr == *"card 'BB01': the card's status was not learned: WRONGTYPE"* ]]
	# The others learned theirs; nothing is left queued.
	assert_equal "$(rcli HGET 't:card:AA01:facts' st)" stopped
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:stop_resume')" 0
}

@test "an idle bucket or a command hash clobbered by hand fails its own card's request only: the rest of the account's batch is queued" {
	rcli SET 't:carrier:{c1}:idle:BB' clobbered >/dev/null
	rcli SET 't:carrier:{c1}:card:DD01' clobbered >/dev/null
	for c in AA01 BB01 CC01 DD01; do
		printf '{"card":"%s","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$c" "$PAST"
	done >"$T/in"
	run -3 --separate-stderr sr-enqueue <"$T/in"
	assert_equal "$(jq -r '"\(.card) \(.status)"' <<<"$output" | paste -sd,)" \
		"AA01 queued,BB01 error,CC01 queued,DD01 error"
	assert_equal "$(jq -r 'select(.status == "error") | .error' <<<"$output" | grep -c WRONGTYPE)" 2
	[[ $stderr == *"2 requests not queued"* ]]
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:stop_resume' 0 -1 | sort | paste -sd' ')" "AA01 CC01"
}

@test "a facts key clobbered by hand: its request is an error and nothing of it is queued; the rest of the batch is" {
	rcli SET t:card:BB01:facts clobbered >/dev/null
	for c in AA01 BB01 CC01; do
		printf '{"card":"%s","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$c" "$PAST"
	done >"$T/in"
	run -3 --separate-stderr sr-enqueue <"$T/in"
	assert_equal "$(jq -r '"\(.card) \(.status)"' <<<"$output" | paste -sd,)" "AA01 queued,BB01 error,CC01 queued"
	assert_equal "$(jq -r 'select(.card == "BB01") | .error' <<<"$output")" \
		"facts not read: WRONGTYPE Operation against a key holding the wrong kind of value"
	[[ $stderr == *"line 2: not queued: facts not read"* ]]
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:stop_resume' 0 -1 | sort | paste -sd' ')" "AA01 CC01"
	assert_equal "$(rcli GET t:card:BB01:facts)" clobbered
}

@test "a device facts key clobbered by hand: its cards' requests are errors, not judged as a device with no facts" {
	# R2 is known to be on D5 from an earlier request.
	printf '{"card":"R2","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d,"status":"active","device":"D5"}}\n' "$FUTURE" |
		sr-enqueue >/dev/null
	rcli SET t:device:D5:facts clobbered >/dev/null
	{
		# R1 names D5 in its request; R2's device comes from what is stored.
		printf '{"card":"R1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d,"status":"stopped","device":"D5"}}\n' "$FUTURE"
		printf '{"card":"R2","carrier":"c1","scene":"order","facts":{"status":"stopped"}}\n'
		printf '{"card":"R3","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d,"status":"stopped"}}\n' "$FUTURE"
	} >"$T/in"
	run -3 --separate-stderr sr-enqueue <"$T/in"
	assert_equal "$(jq -r '"\(.card) \(.status)"' <<<"$output" | paste -sd,)" "R1 error,R2 error,R3 queued"
	assert_equal "$(jq -r 'select(.status == "error") | .error' <<<"$output" | sort -u)" \
		"device facts not read: WRONGTYPE Operation against a key holding the wrong kind of value"
	assert_equal "$(for q in stop_resume:high stop_resume stop_resume:bulk; do rcli ZRANGE "t:carrier:{c1}:$q" 0 -1; done | grep . | paste -sd' ')" "R3"
}

@test "a device's member set clobbered by hand: the card's request stands, and its ack says the membership was not written" {
	rcli SET t:device:D9:cards clobbered >/dev/null
	{
		printf '{"card":"K1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active","device":"D9"}}\n' "$PAST"
		printf '{"card":"K2","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' "$PAST"
	} >"$T/in"
	run -3 --separate-stderr sr-enqueue <"$T/in"
	assert_equal "$(jq -r '"\(.card) \(.status) \(.warning // "-")"' <<<"$output" | paste -sd,)" \
		"K1 queued device membership not written: WRONGTYPE Operation against a key holding the wrong kind of value,K2 queued -"
	[[ $stderr == *"line 1: device membership not written: WRONGTYPE"* ]]
	# The card's facts were written, and its command is queued, as its ack says.
	assert_equal "$(rcli HGET t:card:K1:facts dv)" D9
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:stop_resume' 0 -1 | sort | paste -sd' ')" "K1 K2"
	# The key repaired, the same request sent again makes the card D9's
	# member, though its facts already name D9.
	rcli DEL t:device:D9:cards >/dev/null
	run -0 sr-enqueue < <(head -1 "$T/in")
	assert_equal "$(rcli SMEMBERS t:device:D9:cards)" K1
}

@test "a command hash that lost its version holds back its own card only: the rest is claimed, and the sweep gives it one above any in flight" {
	gwsim_start
	for c in G1 G2 G3 G4 G5 G6; do
		printf '{"card":"%s","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$c" "$PAST"
	done | sr-enqueue >/dev/null
	# G6 waits packed, its version in its idle entry damaged; the others' hashes are.
	rcli HSET 't:carrier:{c1}:idle:' G6 'x' >/dev/null
	hashed G2 G3 G4 G5
	rcli HDEL 't:carrier:{c1}:card:G2' ver >/dev/null
	# Nor are numbers too long to be exact, wherever they are.
	rcli HSET 't:carrier:{c1}:card:G5' ver 12345678901234567890 counted_ver 12345678901234567890 >/dev/null
	# Versions as enqueue never writes them are no versions either.
	rcli HSET 't:carrier:{c1}:card:G3' ver 1.0 >/dev/null
	rcli HSET 't:carrier:{c1}:card:G4' ver 01 >/dev/null
	# The claim takes the sound command; the others wait a lease.
	run -0 sr-claim --max 5
	assert_equal "$(jq -r .card <<<"$output")" G1
	sr-exec <<<"$output" | sr-confirm >/dev/null
	# The sweep finds them and gives each a version again; they go on.
	run -1 --separate-stderr sr-sweep
	assert_equal "$(jq -r '"\(.finding) \(.card)"' <<<"$output" | sort | paste -sd,)" \
		"no_version G2,no_version G3,no_version G4,no_version G5,no_version G6"
	assert_equal "$(rcli HGET 't:carrier:{c1}:card:G2' ver) $(rcli HGET 't:carrier:{c1}:card:G5' ver)" "1 1"
	assert_equal "$(rcli HMGET 't:carrier:{c1}:card:G6' ver action | paste -sd' ')" "1 stop"
	run -0 --separate-stderr sr-sweep
	assert_output ''
	rcli ZADD 't:carrier:{c1}:stop_resume' 0 G2 0 G3 0 G4 0 G5 0 G6 >/dev/null # due now, not a lease ahead
	run -0 drain 10
	assert_equal "$(jq -r .card "$T/gw.log" | sort | paste -sd' ')" "G1 G2 G3 G4 G5 G6"
}

@test "a version lost while a stop is at the carrier: the renewal takes one above it, and the stop's result does not finish it" {
	gwsim_start
	printf '{"card":"W1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST" | sr-enqueue >/dev/null
	sr-claim | sr-exec >"$T/stop"
	assert_equal "$(jq -r '"\(.ver) \(.outcome)"' "$T/stop")" "1 ok"
	rcli HDEL 't:carrier:{c1}:card:W1' ver >/dev/null
	# The customer renews before any sweep: a resume, above version 1.
	run -0 sr-enqueue < <(printf '{"card":"W1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d,"status":"stopped"}}\n' "$FUTURE")
	assert_equal "$(jq -r '"\(.status) \(.ver)"' <<<"$output")" "queued 3"
	# The stop's result is an older command's: it does not finish the resume.
	run -0 sr-confirm <"$T/stop"
	assert_equal "$(jq -r .state <<<"$output")" stale
	assert_equal "$(rcli HGET 't:carrier:{c1}:card:W1' action)" resume
	# A version lost under sr-admin is found the same way.
	rcli HDEL 't:carrier:{c1}:card:W1' ver >/dev/null
	run -0 sr-admin drop W1 --reason "lost its version"
	[ "$(jq -r .ver <<<"$output")" -gt 1 ]
}

@test "a version lost while its call is in flight: the result is answered, and a status query, not a second call, settles it" {
	gwsim_start
	for c in V1 V2; do
		printf '{"card":"%s","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$c" "$PAST"
	done | sr-enqueue >/dev/null
	sr-claim | sr-exec >"$T/results"
	rcli HDEL 't:carrier:{c1}:card:V1' ver >/dev/null
	run -0 sr-confirm <"$T/results"
	assert_equal "$(jq -r '"\(.card) \(.state)"' <<<"$output" | paste -sd,)" "V1 confirming,V2 done"
	assert_equal "$(rcli HGET 't:carrier:{c1}:card:V1' ver)" 2
	run -0 drain 10
	assert_equal "$(jq -r 'select(.card == "V1") | .kind' "$T/gw.log" | paste -sd' ')" "stop status"
	assert_equal "$(sr-admin show V1 | jq -r '"\(.command.ver) \(.queue // "none")"')" "2 none"
}

@test "a lost version next to an old packed state, or met by the direct path, never takes the version of a claim in flight" {
	gwsim_start
	printf '{"card":"W1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST" | sr-enqueue >/dev/null
	hashed W1
	rcli HSET 't:carrier:{c1}:card:W1' ver 5 >/dev/null
	sr-claim | sr-exec >"$T/stop"
	assert_equal "$(jq -r '"\(.ver) \(.outcome)"' "$T/stop")" "5 ok"
	# The version gone, and a stale packed state of the card in its bucket.
	rcli HDEL 't:carrier:{c1}:card:W1' ver >/dev/null
	rcli HSET 't:carrier:{c1}:idle:' W1 4 >/dev/null
	run -0 sr-enqueue < <(printf '{"card":"W1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d,"status":"stopped"}}\n' "$FUTURE")
	[ "$(jq -r .ver <<<"$output")" -gt 5 ]
	run -0 sr-confirm <"$T/stop"
	assert_equal "$(jq -r .state <<<"$output")" stale
	assert_equal "$(rcli HGET 't:carrier:{c1}:card:W1' action)" resume
	# The direct path (global switch off) on a claimed card that lost its version.
	printf '{"card":"D1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST" | sr-enqueue >/dev/null
	sr-claim >"$T/task"
	rcli HDEL 't:carrier:{c1}:card:D1' ver >/dev/null
	sr-admin switch off --reason test >/dev/null
	run sr-enqueue < <(printf '{"card":"D1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d,"status":"stopped"}}\n' "$FUTURE")
	[ "$(rcli HGET 't:carrier:{c1}:card:D1' ver)" -gt 1 ]
}

@test "an account key clobbered by hand: the batch's cards still finish, and a replay of their results is stale" {
	gwsim_start
	for c in G1 G2 G3; do
		printf '{"card":"%s","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d}}\n' "$c" "$PAST"
	done | sr-enqueue >/dev/null
	sr-claim | sr-exec >"$T/results"
	# G2 confirming (its finish leaves the confirming set), and the set and
	# the open alerts are strings now.
	rcli HSET 't:carrier:{c1}:card:G2' confirming 1 >/dev/null
	rcli SET 't:carrier:{c1}:confirming' clobbered >/dev/null
	rcli SET 't:carrier:{c1}:alerts_open' clobbered >/dev/null
	run sr-confirm <"$T/results"
	assert_equal "$(grep '^{' <<<"$output" | jq -r .state | paste -sd' ')" "done done done"
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:card:G1' 't:carrier:{c1}:card:G2' 't:carrier:{c1}:card:G3')" 0
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:stop_resume')" 0
	audit=$(rcli XLEN 't:carrier:{c1}:audit')
	run -0 sr-confirm <"$T/results"
	assert_equal "$(jq -r .state <<<"$output" | sort -u)" stale
	assert_equal "$(rcli XLEN 't:carrier:{c1}:audit')" "$audit"
}

@test "a packed command left beside a card's hash by hand: the claim takes the hash's, with its version" {
	# K100's command in its hash (a '|' in its source does not pack): stop, version 3.
	for s in package_expired order package_expired; do
		printf '{"card":"K100","carrier":"c1","scene":"%s","source":"a|b","facts":{"pkg_expires_at":%d}}\n' \
			"$s" "$([ "$s" = order ] && echo "$FUTURE" || echo "$PAST")" | sr-enqueue >/dev/null
	done
	assert_equal "$(rcli HMGET 't:carrier:{c1}:card:K100' action ver | paste -sd' ')" "stop 3"
	rcli HSET 't:carrier:{c1}:wait:K1' 00 'resume|entitled|order||0' >/dev/null
	rcli HSET 't:carrier:{c1}:idle:K1' 00 2 >/dev/null
	run -0 sr-claim
	assert_equal "$(jq -r '"\(.action) \(.ver)"' <<<"$output")" "stop 3"
	# The sweep drops the packed one: the hash's command is the card's.
	run -1 --separate-stderr sr-sweep
	assert_equal "$(jq -r '"\(.finding) \(.card)"' <<<"$output")" "packed_and_hash K100"
	assert_equal "$(rcli HGET 't:carrier:{c1}:wait:K1' 00)" ''
}
