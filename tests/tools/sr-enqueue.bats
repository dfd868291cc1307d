#!/usr/bin/env bats
# sr-enqueue.bats - the facade: validation, acks, versions, backend failures.

bats_require_minimum_version 1.5.0

load ../test_helper

@test "bad input: one rejection per bad line with its line number, good lines still queued, exit 1" {
	{
		request G1 package_expired "$PAST"                           # 1 good
		echo '{"card":"B1","carrier":"c1","scene":"order"'          # 2 malformed JSON
		echo '["card","B2"]'                                        # 3 not an object
		echo '{"card":"B 3","carrier":"c1","scene":"order"}'        # 4 bad card id
		echo '{"card":"B4","carrier":"c1/x","scene":"order"}'       # 5 bad carrier id
		echo '{"card":"B5","carrier":"c1","scene":"holiday"}'       # 6 unknown scene
		echo '{"card":"B6","carrier":"c1"}'                         # 7 missing scene
		echo '{"card":"B7","carrier":"c1","scene":"order","x":1}'   # 8 unknown field
		echo '{"card":"B8","carrier":"c1","scene":"order","facts":{"colour":"red"}}' # 9 unknown fact
		echo '{"card":"B9","carrier":"c1","scene":"order","facts":{"pkg_expires_at":"soon"}}' # 10 bad fact
		printf '{"card":"B10","carrier":"c1","scene":"order","source":"%s"}\n' "$(head -c 70000 /dev/zero | tr '\0' x)" # 11 huge line
		echo ''                                                     # 12 empty line
		echo '{"card":"B11","carrier":"c1","scene":"order"}'        # 13 no facts known anywhere
		echo '{"card":"B12","carrier":"c1","card":"B13","scene":"order"}' # 14 duplicate key
		request G2 refund "$PAST" active c2                                    # 15 good
	} >"$T/in.jsonl"
	run -1 --separate-stderr sr-enqueue <"$T/in.jsonl"
	assert_equal "$(echo "$output" | wc -l)" 15
	# Every line answered, in order, with its line number.
	assert_equal "$(echo "$output" | jq -r .line | tr '\n' ' ')" "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 "
	assert_equal "$(echo "$output" | jq -r 'select(.status == "rejected") | .line' | tr '\n' ' ')" \
		"2 3 4 5 6 7 8 9 10 11 12 13 14 "
	assert_equal "$(echo "$output" | jq -r 'select(.status == "queued") | .card' | tr '\n' ' ')" "G1 G2 "
	# Each rejection says why, on stdout and on stderr with the line number.
	echo "$output" | jq -s -e 'map(select(.status == "rejected")) | all(.error | length > 0)' >/dev/null
	[[ $stderr == *"line 5: \"carrier\" must be an id"* ]]
	[[ $stderr == *'line 6: unknown scene "holiday"'* ]]
	[[ $stderr == *'line 8: unknown field "x"'* ]]
	[[ $stderr == *'line 11: line longer than 65536 bytes'* ]]
	# The good lines really are in Redis.
	assert_equal "$(rcli ZCARD t:carrier:{c1}:stop_resume)" 1
	assert_equal "$(rcli ZCARD t:carrier:{c2}:stop_resume)" 1
}

@test "a device nobody knows is answered like an unknown card: rejected, nothing queued" {
	printf '{"card":"K1","carrier":"c1","device":"D1","pkg_expires_at":%d}\n' "$FUTURE" | sr-asset >/dev/null
	run -1 --separate-stderr sr-enqueue < <(
		echo '{"device":"DNONE","scene":"device"}'                          # unknown, no facts
		echo '{"device":"D1","scene":"device"}'                             # its cards are known
		echo '{"device":"D2","scene":"device","facts":{"disabled":1}}'      # brings its facts
	)
	assert_equal "$(jq -r .status <<<"$output" | tr '\n' ' ')" "rejected device_queued device_queued "
	assert_line --index 0 --partial 'no cards or facts known for this device'
	[[ $stderr == *"line 1: no cards or facts known for this device"* ]]
	assert_equal "$(rcli --scan --pattern 't:device_eval:*DNONE*')" ''
}

@test "a request naming a carrier that does not own the card is rejected" {
	run -0 sr-enqueue < <(request C1 package_expired "$PAST")
	run -1 --separate-stderr sr-enqueue < <(request C1 package_expired "$PAST" active c9)
	assert_output --partial '"status":"rejected"'
	assert_output --partial "belongs to carrier 'c1'"
	assert_equal "$(rcli EXISTS t:carrier:{c9}:card:C1)" 0
}

@test "a card's requests in one input are judged in order: the second sees the facts the first wrote" {
	printf '{"card":"R1","carrier":"c1","status":"stopped","stopped_by":"auto","pkg_expires_at":0}\n' | sr-asset >/dev/null
	# The order that renews the package, then a polling request without
	# facts: the renewal holds, the card is to be resumed.
	run -0 sr-enqueue <<-EOF
	{"card":"R1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":$FUTURE}}
	{"card":"R1","carrier":"c1","scene":"polling"}
	EOF
	assert_equal "$(jq -r '"\(.status) \(.action) \(.ver)"' <<<"$output" | paste -sd,)" "queued resume 1,unchanged resume 1"
	assert_equal "$(rcli HGET 't:card:R1:facts' pe)" "$FUTURE"
	assert_equal "$(sr-admin why R1 | jq -r .action)" resume
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:stop_resume:high') $(rcli ZCARD 't:carrier:{c1}:stop_resume')" "1 0"
}

@test "one card under two accounts in one input: the second is rejected, as in two inputs" {
	gwsim_start
	run -1 --separate-stderr sr-enqueue < <(request Z1 package_expired "$PAST"; request Z1 package_expired "$PAST" active c2)
	assert_equal "$(jq -r .status <<<"$output" | paste -sd' ')" "queued rejected"
	assert_output --partial "belongs to carrier 'c1'"
	assert_equal "$(rcli HGET 't:card:Z1:facts' cr)" c1
	run -0 drain 15
	assert_equal "$(jq -s '[.[] | select(.card == "Z1" and .kind == "stop")] | length' "$T/gw.log")" 1
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "an empty facts object is no facts: a card nobody knows is rejected, not stopped" {
	run -1 sr-enqueue <<<'{"card":"NEW1","carrier":"c1","scene":"order","facts":{}}'
	assert_output --partial '"status":"rejected"'
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:stop_resume:high') $(rcli EXISTS 't:card:NEW1:facts')" "0 0"
}

@test "same intent is unchanged, a renewal cancels, versions never repeat after a finish" {
	run -0 sr-enqueue < <(request C1 package_expired "$PAST"; request C1 polling "$PAST")
	assert_line --index 0 --partial '"status":"queued","action":"stop","reason":"package_expired","ver":1'
	assert_line --index 1 --partial '"status":"unchanged"'
	assert_line --index 1 --partial '"ver":1'
	run -0 sr-enqueue < <(request C1 order "$FUTURE")
	assert_output --partial '"status":"cancelled"'
	assert_output --partial '"ver":2'
	assert_equal "$(rcli ZCARD t:carrier:{c1}:stop_resume)" 0
	run -0 sr-enqueue < <(request C1 order "$FUTURE")
	assert_output --partial '"status":"noop"'
	# A new intent after the old one was cancelled gets a fresh version.
	run -0 sr-enqueue < <(request C1 package_expired "$PAST")
	assert_output --partial '"status":"queued"'
	assert_output --partial '"ver":3'
	# The audit stream has every transition with versions before and after.
	run rcli XRANGE t:carrier:{c1}:audit - +
	assert_output --partial 'ver_before'
	assert_equal "$(rcli XLEN t:carrier:{c1}:audit)" 3
}

@test "a manually stopped card is never queued for an automatic resume" {
	printf '{"card":"M1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d,"status":"stopped","stopped_by":"manual"}}\n' "$FUTURE" >"$T/in"
	run -0 sr-enqueue <"$T/in"
	assert_output --partial '"status":"noop"'
	assert_equal "$(rcli EXISTS t:carrier:{c1}:stop_resume)" 0
}

@test "priority: order and activation go to the high queue, reset to the bulk queue" {
	run -0 sr-enqueue < <(request P1 order "$PAST"; request P2 reset "$PAST"; request P3 polling "$PAST")
	assert_equal "$(rcli ZRANGE t:carrier:{c1}:stop_resume:high 0 -1)" P1
	assert_equal "$(rcli ZRANGE t:carrier:{c1}:stop_resume:bulk 0 -1)" P2
	assert_equal "$(rcli ZRANGE t:carrier:{c1}:stop_resume 0 -1)" P3
}

@test "Redis down: exit 3 and an error record for every line" {
	export SRQ_REDIS="unix://$T/no-such.sock"
	run -3 --separate-stderr sr-enqueue < <(request C1 order "$PAST"; echo 'junk'; request C2 order "$PAST")
	assert_equal "$(echo "$output" | wc -l)" 3
	assert_equal "$(echo "$output" | jq -r .status | sort | uniq -c | awk '{print $1 $2}' | tr '\n' ' ')" "2error 1rejected "
	[[ $stderr == *"cannot connect to Redis"* ]]
}

@test "Redis going away mid-stream: the lines after it are errors, none is lost" {
	mkfifo "$T/in"
	sr-enqueue <"$T/in" >"$T/out" 2>"$T/err" &
	pid=$!
	exec 5>"$T/in"
	request C1 order "$PAST" >&5
	for i in $(seq 100); do [ -s "$T/out" ] && break; sleep 0.05; done
	redis_stop
	request C2 order "$PAST" >&5
	request C3 order "$PAST" >&5
	exec 5>&-
	rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 3
	assert_equal "$(jq -r '.line, .status' "$T/out" | paste -sd' ')" "1 queued 2 error 3 error"
}

@test "--help answers on stdout with exit 0; a bad flag is a usage error" {
	run -0 sr-enqueue --help
	assert_output --partial 'usage: sr-enqueue'
	assert_output --partial 'Exit:'
	run -2 sr-enqueue --bogus
	run -2 sr-enqueue stray-arg
	SRQ_REDIS='redis://user:pw@localhost:6379' run -2 --separate-stderr sr-enqueue </dev/null
	[[ $stderr == *'SRQ_REDIS_PASSWORD'* ]]
}

@test "SRQ_GATEWAY from the environment is held to the flag's rule: not a URL is exit 2 before any line" {
	sr-admin switch off --reason "direct path" >/dev/null
	# Before: the flag was refused, the variable was not, and the request
	# ended direct_failed, exit 3.
	SRQ_GATEWAY='not a url' run -2 --separate-stderr sr-enqueue < <(request C1 order "$PAST")
	assert_output ''
	[[ $stderr == *"SRQ_GATEWAY: 'not a url' is not an http(s) URL"* ]]
	run -2 --separate-stderr sr-enqueue --gateway 'not a url' < <(request C1 order "$PAST")
	[[ $stderr == *"--gateway: 'not a url' is not an http(s) URL"* ]]
	SRQ_GATEWAY='ftp://gw' run -2 --separate-stderr sr-exec </dev/null
	[[ $stderr == *"SRQ_GATEWAY: 'ftp://gw' is not an http(s) URL"* ]]
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:card:C1')" 0
}
