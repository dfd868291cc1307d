#!/usr/bin/env bats
# sr-asset.bats - the asset mirror: JSONL and CSV rows, validation, device membership.

bats_require_minimum_version 1.5.0

load ../test_helper

@test "CSV with a BOM, CRLF, quoted fields, embedded commas and newlines; bad rows rejected with their line numbers" {
	printf '\xEF\xBB\xBFcard,carrier,device,pkg_expires_at,status,stopped_by\r\n' >"$T/in.csv"
	printf 'A1,c1,D1,1800000000,active,\r\n' >>"$T/in.csv"                      # line 2
	printf '"A2","c1","D1","1800000000","stopped","manual"\r\n' >>"$T/in.csv"   # line 3
	printf 'A3,c1,"D,2",1,active,\r\n' >>"$T/in.csv"                            # line 4: bad device id
	printf '"A4",c1,D2,"1800\r\n000",active,\r\n' >>"$T/in.csv"                 # lines 5-6: bad number across lines
	printf 'A5,c1,D2,soon,active,\r\n' >>"$T/in.csv"                            # line 7: bad number
	printf 'A6,c1,D2,,,\r\n' >>"$T/in.csv"                                      # line 8: empty cells
	printf 'A7,"c1",D2\r\n' >>"$T/in.csv"                                       # line 9: short row
	printf '{"card":"A6","carrier":"c1","status":"active"}\n' >"$T/pre.jsonl"
	run -0 sr-asset <"$T/pre.jsonl"
	run -1 --separate-stderr sr-asset --csv <"$T/in.csv"
	assert_equal "$(echo "$output" | jq -r '"\(.line) \(.status)"' | tr '\n' ',')" \
		"2 loaded,3 loaded,4 rejected,5 rejected,7 rejected,8 loaded,9 rejected,"
	[[ $stderr == *'line 4: fact "device" must be an id'* ]]
	[[ $stderr == *'line 5: "pkg_expires_at" must be a non-negative integer'* ]]
	[[ $stderr == *'line 9: row has 3 fields, the header 6'* ]]
	assert_equal "$(rcli HGET t:card:A2:facts sb)" manual
	# An empty cell leaves the fact as it was.
	assert_equal "$(rcli HGET t:card:A6:facts st)" active
	assert_equal "$(rcli SMEMBERS t:device:D1:cards | sort | tr '\n' ' ')" "A1 A2 "
}

@test "a quoted header after a BOM (PowerShell's Export-Csv) is read, by sr-asset and sr-enqueue" {
	printf '\xEF\xBB\xBF"card","carrier","pkg_expires_at"\r\n"B1","c20","1"\r\n' >"$T/ps.csv"
	run -0 sr-asset --csv <"$T/ps.csv"
	assert_equal "$(jq -r '"\(.line) \(.card) \(.status)"' <<<"$output")" "2 B1 loaded"
	assert_equal "$(rcli HGET t:card:B1:facts pe)" 1
	printf '\xEF\xBB\xBF"card","carrier"\r\n"B1","c20"\r\n' >"$T/ps2.csv"
	run -0 sr-enqueue --csv --scene package_expired <"$T/ps2.csv"
	assert_equal "$(jq -r '"\(.card) \(.status)"' <<<"$output")" "B1 queued"
	# A BOM is dropped from the start of the input only.
	printf 'card,carrier\n\xEF\xBB\xBF"B2",c20\n' >"$T/mid.csv"
	run -1 --separate-stderr sr-asset --csv <"$T/mid.csv"
	[[ $stderr == *"line 2: malformed CSV"* ]]
}

@test "CSV flag cells take 0, 1, true, false, t or f (what psql --csv prints for a boolean)" {
	printf 'card,carrier,refunded,polling_paused\n' >"$T/flags.csv"
	printf 'F1,c1,t,f\nF2,c1,true,false\nF3,c1,TRUE,False\nF4,c1,1,0\nF5,c1,yes,0\nF6,c1,2,0\n' >>"$T/flags.csv"
	run -1 --separate-stderr sr-asset --csv <"$T/flags.csv"
	assert_equal "$(jq -r '"\(.line) \(.status)"' <<<"$output" | tr '\n' ',')" \
		"2 loaded,3 loaded,4 loaded,5 loaded,6 rejected,7 rejected,"
	[[ $stderr == *'line 6: "refunded" must be 0, 1, true, false, t or f'* ]]
	[[ $stderr == *'line 7: "refunded" must be 0, 1, true, false, t or f'* ]]
	for c in F1 F2 F3 F4; do
		assert_equal "$(rcli HMGET "t:card:$c:facts" rf pp | tr '\n' ' ')" "1 0 "
	done
	# sr-enqueue --csv reads them the same way.
	printf 'card,carrier,pkg_expires_at,refunded\nF1,c1,1,f\n' >"$T/req.csv"
	run -0 sr-enqueue --csv --scene refund <"$T/req.csv"
	assert_equal "$(rcli HGET t:card:F1:facts rf)" 0
}

@test "a card that moves to another device leaves the old device's member set" {
	printf '{"card":"M1","carrier":"c1","device":"D1"}\n{"card":"M2","carrier":"c1","device":"D1"}\n' |
		sr-asset >/dev/null
	assert_equal "$(rcli SMEMBERS t:device:D1:cards | sort | tr '\n' ' ')" "M1 M2 "
	printf 'card,carrier,device\nM1,c1,D2\n' | sr-asset --csv >/dev/null
	assert_equal "$(rcli SMEMBERS t:device:D1:cards)" M2
	assert_equal "$(rcli SMEMBERS t:device:D2:cards)" M1
	# Within one batch too: the last row wins and no stale membership is left.
	printf '{"card":"M2","carrier":"c1","device":"D3"}\n{"card":"M2","carrier":"c1","device":"D4"}\n' | sr-asset >/dev/null
	assert_equal "$(rcli EXISTS t:device:D1:cards)$(rcli EXISTS t:device:D3:cards)" 00
	assert_equal "$(rcli SMEMBERS t:device:D4:cards)" M2
}

@test "a membership Redis refused is written again when the row is sent again" {
	# The new device's set is damaged: the row is an error; sent again (once
	# the key is repaired) it writes the membership again, as every row
	# naming a device does.
	rcli SET t:device:DX:cards junk >/dev/null
	run -3 --separate-stderr sr-asset <<<'{"card":"X2","carrier":"c1","device":"DX"}'
	assert_equal "$(jq -r .status <<<"$output")" error
	rcli DEL t:device:DX:cards >/dev/null
	run -0 sr-asset <<<'{"card":"X2","carrier":"c1","device":"DX"}'
	assert_equal "$(jq -r .status <<<"$output")" loaded
	assert_equal "$(rcli SMEMBERS t:device:DX:cards)" X2
	assert_equal "$(rcli HGET t:card:X2:facts dv)" DX
	# The old device's set refuses the card's removal: sent again once it
	# is back (here: restored as it was), the card leaves it.
	rcli SET t:device:DX:cards junk >/dev/null
	run -3 --separate-stderr sr-asset <<<'{"card":"X2","carrier":"c1","device":"DY"}'
	assert_equal "$(jq -r .status <<<"$output")" error
	rcli DEL t:device:DX:cards >/dev/null
	rcli SADD t:device:DX:cards X2 >/dev/null
	run -0 sr-asset <<<'{"card":"X2","carrier":"c1","device":"DY"}'
	assert_equal "$(jq -r .status <<<"$output")" loaded
	assert_equal "$(rcli EXISTS t:device:DX:cards)" 0
	assert_equal "$(rcli SMEMBERS t:device:DY:cards)" X2
	assert_equal "$(rcli HGET t:card:X2:facts dv)" DY
	# Two rows of one card in one batch, the first refused: the second
	# cannot know, so it leaves the device the card had before the batch
	# too, and is refused as well; the two sent again end where they say.
	rcli SET t:device:DY:cards junk >/dev/null
	printf '{"card":"X2","carrier":"c1","device":"%s"}\n' DZ DW >"$T/two.jsonl"
	run -3 --separate-stderr sr-asset <"$T/two.jsonl"
	assert_equal "$(jq -r .status <<<"$output" | tr '\n' ' ')" "error error "
	assert_equal "$(rcli HGET t:card:X2:facts dv)" DY
	rcli DEL t:device:DY:cards >/dev/null
	rcli SADD t:device:DY:cards X2 >/dev/null
	run -0 sr-asset <"$T/two.jsonl"
	assert_equal "$(rcli EXISTS t:device:DY:cards)$(rcli EXISTS t:device:DZ:cards)" 00
	assert_equal "$(rcli SMEMBERS t:device:DW:cards)" X2
	assert_equal "$(rcli HGET t:card:X2:facts dv)" DW
}

@test "device rows, unknown fields, a card changing account, Redis down" {
	run -1 --separate-stderr sr-asset <<-'EOF'
	{"device":"D9","pkg_expires_at":1800000000,"disabled":1}
	{"device":"D9","colour":"red"}
	{"card":"X1","carrier":"c1"}
	{"card":"X1","carrier":"c2"}
	{"status":"active"}
	EOF
	assert_equal "$(echo "$output" | jq -r .status | tr '\n' ' ')" "loaded rejected loaded rejected rejected "
	[[ $stderr == *'line 2: unknown device fact "colour"'* ]]
	[[ $stderr == *"line 4: card belongs to carrier 'c1'"* ]]
	assert_equal "$(rcli HGET t:device:D9:facts ds)" 1
	SRQ_REDIS="unix://$T/none.sock" run -3 sr-asset <<<'{"card":"X2","carrier":"c1"}'
	assert_output --partial '"status":"error"'
}

@test "a row fed through a pipe that stays open is answered at once, JSONL and CSV" {
	for mode in "" --csv; do
		rm -f "$T/in" "$T/out"
		mkfifo "$T/in"
		# shellcheck disable=SC2086
		sr-asset $mode <"$T/in" >"$T/out" &
		pid=$!
		exec 5>"$T/in"
		if [ -n "$mode" ]; then
			printf 'card,carrier,pkg_expires_at\nP1,c1,1\n' >&5
		else
			echo '{"card":"P1","carrier":"c1","pkg_expires_at":1}' >&5
		fi
		# The writer is still there: the answer must not wait for the end.
		for i in $(seq 100); do [ -s "$T/out" ] && break; sleep 0.05; done
		run cat "$T/out"
		exec 5>&-
		wait "$pid"
		assert_output --partial '"card":"P1","carrier":"c1","status":"loaded"'
	done
}

@test "--as-of: a stale export does not overwrite the status srq saw later; a newer one does" {
	gwsim_start
	# The carrier's export, taken now: every card active.
	taken=$(( $(date +%s%N) / 1000000 ))
	printf '{"card":"K%d","carrier":"c1","pkg_expires_at":1,"status":"active"}\n' 1 2 3 >"$T/export.jsonl"
	sr-asset <"$T/export.jsonl" >/dev/null
	# srq stops them (their packages expired): it saw them stopped after the export.
	printf '{"card":"K%d","carrier":"c1","scene":"package_expired"}\n' 1 2 3 | sr-enqueue >/dev/null
	run -0 drain 10
	assert_equal "$(jq -c 'select(.kind == "stop") | .card' "$T/gw.log" | wc -l)" 3
	# The same export imported again, saying when it was taken: the status
	# srq learned later is kept, and the expiry scan costs no call.
	run -0 sr-asset --as-of "$taken" <"$T/export.jsonl"
	assert_equal "$(jq -c '[.status, .status_kept, .stale_facts]' <<<"$output" | sort -u)" '["loaded",true,["pkg_expires_at","status"]]'
	assert_equal "$(rcli HGET t:card:K1:facts st)" stopped
	run -0 sr-enqueue < <(printf '{"card":"K%d","carrier":"c1","scene":"package_expired"}\n' 1 2 3)
	assert_equal "$(jq -r .status <<<"$output" | sort -u)" noop
	# stopped_by follows the same rule: an export taken before srq's stop
	# cannot say who stopped the card; one taken after it can (a person
	# stopped it by hand since), and a renewal then leaves the card alone.
	printf '{"card":"K2","carrier":"c1","stopped_by":"manual"}\n' | sr-asset --as-of "$taken" >/dev/null
	assert_equal "$(rcli HMGET t:card:K2:facts st sb | tr '\n' ' ')" "stopped auto "
	printf '{"card":"K2","carrier":"c1","stopped_by":"manual"}\n' | sr-asset --as-of now >/dev/null
	assert_equal "$(rcli HMGET t:card:K2:facts st sb | tr '\n' ' ')" "stopped manual "
	run -0 sr-enqueue < <(printf '{"card":"K2","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' "$FUTURE")
	assert_equal "$(jq -r .status <<<"$output")" noop
	# An export taken after srq's change is news (the card was resumed at
	# the carrier by someone else): it wins, and the stop is queued again.
	run -0 sr-asset --as-of now <"$T/export.jsonl"
	assert_equal "$(jq -r '.status_kept // false' <<<"$output" | sort -u)" false
	assert_equal "$(rcli HGET t:card:K1:facts st)" active
	run -0 sr-enqueue < <(printf '{"card":"K1","carrier":"c1","scene":"package_expired"}\n')
	assert_equal "$(jq -r .status <<<"$output")" queued
	# Without --as-of a row is as of when srq receives it: the newest.
	run -2 sr-asset --as-of soon </dev/null
	assert_output --partial "--as-of: 'soon' is not a time"
}
