#!/usr/bin/env bats
# facts_time.bats - every fact is true as of a moment, and srq believes the
# newest fact, not the last write: a stale export run again, writes from
# several sources in any order and at once, times that cannot be trusted.
# Checked in Redis and at the carrier (sr-gwsim's log).

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	PATH="$PROJECT_ROOT/cron:$PATH"
	export SRQ_EXPIRY_LOCK="$T/scan.lock"
}

# calls_since N: the state changes (stop, resume) the carrier logged after
# its first N lines.
calls_since() {
	tail -n +"$(($1 + 1))" "$T/gw.log" | jq -c 'select(.kind == "stop" or .kind == "resume")'
}

@test "the expiry scan run again on the same export after renewals changes no card at the carrier" {
	# Twenty cards whose packages expired, active at the carrier; the
	# expiry export was written two minutes ago.
	for i in $(seq 20); do
		printf '{"card":"E%d","carrier":"c1","pkg_expires_at":%d,"status":"active"}\n' "$i" "$PAST"
	done >"$T/cards.jsonl"
	sr-asset <"$T/cards.jsonl" >/dev/null
	jq -c '{card, status}' "$T/cards.jsonl" >"$T/gw-cards.jsonl"
	{ echo card,carrier,pkg_expires_at; jq -r '"\(.card),\(.carrier),\(.pkg_expires_at)"' "$T/cards.jsonl"; } >"$T/expired.csv"
	touch -d '-2 min' "$T/expired.csv"
	gwsim_start --cards "$T/gw-cards.jsonl"
	SRQ_EXPIRY_CSV="$T/expired.csv" run -0 --separate-stderr srq-expiry-scan
	assert_equal "$(grep -o 'queued [0-9]*' <<<"$stderr")" "queued 20"
	drain_until_empty
	assert_equal "$(calls_since 0 | jq -r .kind | sort | uniq -c | awk '{print $2, $1}')" "stop 20"
	# Eight customers renew: their cards are resumed.
	for i in $(seq 8); do
		printf '{"card":"E%d","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' "$i" "$FUTURE"
	done | sr-enqueue >"$T/renewals.jsonl"
	assert_equal "$(jq -r .status "$T/renewals.jsonl" | sort | uniq -c | awk '{print $2, $1}')" "queued 8"
	drain_until_empty
	before=$(wc -l <"$T/gw.log")
	# Ten minutes later cron runs the scan again, on the same file: its
	# pkg_expires_at is older than the renewals', and is not written over
	# them; no card is queued.
	SRQ_EXPIRY_CSV="$T/expired.csv" run -0 --separate-stderr srq-expiry-scan
	assert_equal "$(grep -o 'noop [0-9]*' <<<"$stderr")" "noop 20"
	for i in $(seq 8); do
		assert_equal "$(rcli HGET "t:card:E$i:facts" pe)" "$FUTURE"
	done
	drain_until_empty
	assert_equal "$(calls_since "$before" | wc -l)" 0
	# Each renewed card is active at the carrier, each other one stopped.
	assert_equal "$(gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" | jq -r .status | sort | uniq -c |
		awk '{print $2, $1}' | paste -sd' ')" "active 8 stopped 12"
}

@test "the scan's ack says which facts were older than the stored ones: stale_facts" {
	printf '{"card":"E1","carrier":"c1","pkg_expires_at":%d,"status":"stopped"}\n' "$PAST" | sr-asset >/dev/null
	printf 'card,carrier,pkg_expires_at,data_used_kb\nE1,c1,%d,5\n' "$PAST" >"$T/expired.csv"
	touch -d '-1 min' "$T/expired.csv"
	printf '{"card":"E1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' "$FUTURE" | sr-enqueue >/dev/null
	# The export's package is older than the renewal's; its usage is news.
	run -0 sr-enqueue --csv --scene package_expired --as-of "$(date -r "$T/expired.csv" +%s%3N)" <"$T/expired.csv"
	assert_equal "$(jq -c '[.status, .action, .stale_facts]' <<<"$output")" '["unchanged","resume",["pkg_expires_at"]]'
	assert_equal "$(rcli HMGET t:card:E1:facts pe du | paste -sd' ')" "$FUTURE 5"
}

@test "a renewal committed while the export command runs is newer than the export" {
	printf '{"card":"E1","carrier":"c1","pkg_expires_at":%d,"status":"active"}\n' "$PAST" | sr-asset >/dev/null
	printf 'card,carrier,pkg_expires_at\nE1,c1,%d\n' "$PAST" >"$T/old.csv"
	# The export's query starts, then the customer renews, then the rows
	# (read before the renewal) arrive.
	export SRQ_EXPIRY_CMD="touch '$T/started'; while [ ! -e '$T/renewed' ]; do sleep 0.05; done; cat '$T/old.csv'"
	srq-expiry-scan 2>"$T/scan.err" &
	pid=$!
	for i in $(seq 200); do [ -e "$T/started" ] && break; sleep 0.05; done
	printf '{"card":"E1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' "$FUTURE" | sr-enqueue >/dev/null
	touch "$T/renewed"
	wait "$pid"
	assert_equal "$(grep -o 'noop [0-9]*' "$T/scan.err")" "noop 1"
	assert_equal "$(rcli HGET t:card:E1:facts pe)" "$FUTURE"
	assert_equal "$(sr-admin show E1 | jq -r '.command.action // "none"')" none
}

# The judgment, in jq, on a card's facts and its device's (README "The
# judgment"): the state the card must end in.
target_jq='def target($now): if (.rf // 0) == 1 or (.ds // 0) == 1 then "stopped"
	elif (.dpe // 0) > 0 and .dpe < $now then "stopped"
	elif (.pe // 0) < $now then "stopped"
	elif (.dq // 0) > 0 and (.du // 0) >= .dq then "stopped"
	else "active" end;'

@test "facts from several sources, in any order and at once: each card ends where its newest facts want, changed at most once" {
	# 40 cards on 4 devices, loaded an hour ago, active; then 360 facts
	# about them, each true at its own moment since, from five sources:
	# an export (sr-asset rows), renewals, usage reports, refunds and
	# device requests. They reach srq shuffled, through five processes at
	# once.
	local seed=${SRQ_TEST_SEED:-$RANDOM}
	echo "seed $seed (SRQ_TEST_SEED)" >&3
	local t0=$(( $(date +%s%3N) - 3600000 ))
	awk -v t0="$t0" -v past="$PAST" -v future="$FUTURE" 'BEGIN {
		for (i = 1; i <= 40; i++)
			printf "{\"card\":\"P%d\",\"carrier\":\"c%d\",\"device\":\"D%d\",\"pkg_expires_at\":%d,\"data_quota_kb\":1000,\"data_used_kb\":10,\"status\":\"active\",\"as_of\":%.0f}\n", i, i % 2, i % 4, future, t0
		for (d = 0; d < 4; d++)
			printf "{\"device\":\"D%d\",\"pkg_expires_at\":0,\"disabled\":0,\"as_of\":%.0f}\n", d, t0
	}' >"$T/load.jsonl"
	sr-asset <"$T/load.jsonl" >/dev/null
	jq -c 'select(.card) | {card, status}' "$T/load.jsonl" >"$T/gw-cards.jsonl"
	awk -v dir="$T" -v seed="$seed" -v t0="$t0" -v past="$PAST" -v future="$FUTURE" 'BEGIN {
		srand(seed)
		n = 360
		# Unique times, in a random order: the k-th fact is true at t0 + 1 s + 7 ms * perm[k].
		for (k = 1; k <= n; k++) perm[k] = k
		for (k = n; k > 1; k--) { j = int(rand() * k) + 1; x = perm[k]; perm[k] = perm[j]; perm[j] = x }
		for (k = 1; k <= n; k++) {
			at = t0 + 1000 + 7 * perm[k]
			c = "P" (int(rand() * 40) + 1); a = "c" (substr(c, 2) % 2); d = "D" int(rand() * 4)
			kind = int(rand() * 6)
			# Stream: one of three sr-enqueue runs, or one of two sr-asset runs.
			if (kind == 0) {
				pe = rand() < 0.5 ? past : future; du = rand() < 0.5 ? 10 : 2000
				line = sprintf("{\"card\":\"%s\",\"carrier\":\"%s\",\"pkg_expires_at\":%d,\"data_used_kb\":%d,\"as_of\":%.0f}", c, a, pe, du, at)
				f = "asset" int(rand() * 2)
			} else if (kind == 1) {
				line = sprintf("{\"device\":\"%s\",\"pkg_expires_at\":%d,\"as_of\":%.0f}", d, rand() < 0.7 ? 0 : (rand() < 0.5 ? past : future), at)
				f = "asset" int(rand() * 2)
			} else {
				if (kind == 2)
					line = sprintf("{\"card\":\"%s\",\"carrier\":\"%s\",\"scene\":\"order\",\"as_of\":%.0f,\"facts\":{\"pkg_expires_at\":%d}}", c, a, at, rand() < 0.8 ? future : past)
				else if (kind == 3)
					line = sprintf("{\"card\":\"%s\",\"carrier\":\"%s\",\"scene\":\"data_exhausted\",\"as_of\":%.0f,\"facts\":{\"data_used_kb\":%d}}", c, a, at, rand() < 0.5 ? 10 : 2000)
				else if (kind == 4)
					line = sprintf("{\"card\":\"%s\",\"carrier\":\"%s\",\"scene\":\"refund\",\"as_of\":%.0f,\"facts\":{\"refunded\":%d}}", c, a, at, rand() < 0.3)
				else
					line = sprintf("{\"device\":\"%s\",\"scene\":\"device\",\"as_of\":%.0f,\"facts\":{\"disabled\":%d}}", d, at, rand() < 0.3)
				f = "enqueue" int(rand() * 3)
			}
			print line > (dir "/" f ".jsonl")
		}
	}'
	touch "$T"/asset{0,1}.jsonl "$T"/enqueue{0,1,2}.jsonl
	for f in asset0 asset1; do sr-asset <"$T/$f.jsonl" >"$T/$f.out" & done
	for f in enqueue0 enqueue1 enqueue2; do sr-enqueue <"$T/$f.jsonl" >"$T/$f.out" & done
	wait
	# Every line answered, none refused.
	assert_equal "$(cat "$T"/{asset,enqueue}*.out | wc -l)" 360
	assert_equal "$(cat "$T"/{asset,enqueue}*.out | jq -r .status | grep -cvE '^(loaded|queued|unchanged|cancelled|noop|device_queued)$')" 0
	# What the newest facts are: by card and device, the value of the
	# latest-timed line that names each fact.
	cat "$T/load.jsonl" "$T"/asset?.jsonl "$T"/enqueue?.jsonl | jq -sc '
		map(. + (.facts // {}) | if .card then {key: .card} + del(.card, .carrier, .status)
			else {key: .device} + del(.device) end | del(.scene, .facts))
		| group_by(.key)[] | sort_by(.as_of) | reduce .[] as $l ({}; . + $l) | del(.as_of)' >"$T/newest.jsonl"
	# The stored facts are the newest ones.
	while read -r line; do
		key=$(jq -r .key <<<"$line")
		if [[ $key == D* ]]; then
			assert_equal "$(rcli HMGET "t:device:$key:facts" pe ds | paste -sd,)" \
				"$(jq -r '"\(.pkg_expires_at),\(.disabled // "")"' <<<"$line")"
		else
			assert_equal "$(rcli HMGET "t:card:$key:facts" pe du rf dv | paste -sd,)" \
				"$(jq -r '"\(.pkg_expires_at),\(.data_used_kb),\(.refunded // ""),\(.device)"' <<<"$line")"
		fi
	done <"$T/newest.jsonl"
	# Nothing was called yet. Now every card and device is judged on what
	# it holds (the polling pass), and the queue drained.
	gwsim_start --cards "$T/gw-cards.jsonl"
	{ jq -c 'select(.card) | {card, carrier, scene: "polling"}' "$T/load.jsonl"
	  jq -c 'select(.device and (.card | not)) | {device, scene: "device"}' "$T/load.jsonl"; } | sr-enqueue >/dev/null
	dev-eval --until-empty --for 20 >/dev/null
	drain_until_empty
	# Each card is where its newest facts want it, changed at most once
	# (from active, never back and forth).
	jq -sc --argjson now "$NOW" "$target_jq"'
		(map(select(.key | startswith("D")) | {key, value: .}) | from_entries) as $dev
		| .[] | select(.key | startswith("P"))
		| {card: .key, want: ({pe: .pkg_expires_at, du: .data_used_kb, dq: .data_quota_kb, rf: (.refunded // 0),
			ds: ($dev[.device].disabled // 0), dpe: ($dev[.device].pkg_expires_at // 0)} | target($now))}' \
		"$T/newest.jsonl" | sort >"$T/want.jsonl"
	gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" | jq -c '{card, want: .status}' | sort >"$T/got.jsonl"
	run diff "$T/want.jsonl" "$T/got.jsonl"
	assert_success
	assert_equal "$(calls_since 0 | jq -r .card | sort | uniq -d)" ""
	assert_equal "$(calls_since 0 | jq -c 'select(.kind == "resume")')" ""
}

@test "a time in the future, malformed or without a zone is refused with its reason; the other lines go on" {
	printf '{"card":"V%d","carrier":"c1","pkg_expires_at":%d,"status":"active"}\n' 1 "$FUTURE" 2 "$FUTURE" | sr-asset >/dev/null
	ahead=$(date -u -d '+1 hour' +%FT%TZ)
	cat >"$T/in" <<-EOF
	{"card":"V1","carrier":"c1","scene":"refund","as_of":"$ahead","facts":{"refunded":1}}
	{"card":"V1","carrier":"c1","scene":"refund","as_of":"2026-12-03T10:00:00","facts":{"refunded":1}}
	{"card":"V1","carrier":"c1","scene":"refund","as_of":"last tuesday","facts":{"refunded":1}}
	{"card":"V1","carrier":"c1","scene":"refund","as_of":$NOW,"facts":{"refunded":1}}
	{"card":"V1","carrier":"c1","scene":"refund","as_of":{"t":1},"facts":{"refunded":1}}
	{"card":"V2","carrier":"c1","scene":"refund","as_of":"$(date -u -d '-1 min' +%FT%T.250+00:00)","facts":{"refunded":1}}
	EOF
	run -1 --separate-stderr sr-enqueue <"$T/in"
	assert_equal "${#lines[@]}" 6
	assert_equal "$(jq -r .status <<<"$output" | paste -sd' ')" "rejected rejected rejected rejected rejected queued"
	[[ $stderr == *'line 1: "as_of" is '*' s ahead'* ]]
	jq -r 'select(.status == "rejected") | .error' <<<"$output" >"$T/errors"
	run cat "$T/errors"
	assert_line --index 0 --regexp '^"as_of" is [0-9]+ s ahead of Redis.s clock \(at most 5 min is taken\)$'
	assert_line --index 1 "\"as_of\": '2026-12-03T10:00:00' has no zone (Z, +08:00)"
	assert_line --index 2 "\"as_of\": 'last tuesday' is not a time (ISO-8601 with a zone, 2026-12-01T10:00:00Z, or epoch ms)"
	assert_line --index 3 "\"as_of\": '$NOW' is not a time in epoch ms (13 digits)"
	assert_line --index 4 "\"as_of\" must be a time: epoch ms, or ISO-8601 with a zone"
	# Nothing of a refused line was written: V1 is not refunded.
	assert_equal "$(rcli HGET t:card:V1:facts rf)" ""
	assert_equal "$(rcli HGET t:card:V2:facts rf)" 1
	# The same in a CSV column, and in sr-asset rows.
	printf 'card,carrier,refunded,as_of\nV1,c1,1,2026-12-03 10:00\nV1,c1,0,%s\n' "$(date +%s%3N)" >"$T/in.csv"
	run -1 --separate-stderr sr-enqueue --csv --scene refund <"$T/in.csv"
	assert_equal "$(jq -r .status <<<"$output" | paste -sd' ')" "rejected noop"
	printf '{"card":"V1","carrier":"c1","refunded":1,"as_of":"%s"}\n{"card":"V1","carrier":"c1","data_used_kb":7}\n' "$ahead" >"$T/rows"
	run -1 --separate-stderr sr-asset <"$T/rows"
	assert_equal "$(jq -r .status <<<"$output" | paste -sd' ')" "rejected loaded"
	assert_equal "$(rcli HMGET t:card:V1:facts rf du | paste -sd' ')" "0 7"
	# A flag that cannot be trusted ends the tool before it reads a line.
	run -2 sr-enqueue --as-of "$ahead" </dev/null
	assert_output --regexp "--as-of: '$ahead' is [0-9]+ s ahead of Redis's clock"
	# An option's time without a zone is the local zone's, and said
	# (tests/props/times.bats); a record's is refused, above.
	run -0 --separate-stderr sr-asset --as-of 2026-12-03T10:00 </dev/null
	[[ $stderr == *"--as-of '2026-12-03T10:00' has no zone: read in UTC"* ]]
}

@test "sr-admin show gives each fact with its time and who said it" {
	printf '{"card":"S1","carrier":"c1","pkg_expires_at":%d,"status":"active","as_of":"2026-12-01T08:00:00+08:00"}\n' "$FUTURE" |
		sr-asset >/dev/null
	printf '{"card":"S1","carrier":"c1","scene":"data_exhausted","source":"usage-svc","as_of":1796000000000,"facts":{"data_used_kb":9}}\n' |
		sr-enqueue >/dev/null
	run -0 sr-admin show S1
	assert_equal "$(jq -c '.facts_as_of.pkg_expires_at' <<<"$output")" \
		'{"as_of_ms":1796083200000,"source":"sr-asset","as_of_at":"2026-12-01T00:00:00.000Z"}'
	assert_equal "$(jq -c '.facts_as_of.data_used_kb | [.as_of_ms, .source]' <<<"$output")" '[1796000000000,"usage-svc"]'
	assert_equal "$(jq -c '.facts_as_of.status.source' <<<"$output")" '"sr-asset"'
	# A fact stored before facts had times (an older release) has none,
	# and is older than any write.
	rcli HSET t:card:S1:facts dq 100 >/dev/null
	run -0 sr-admin show S1
	assert_equal "$(jq -c '.facts_as_of.data_quota_kb.as_of_ms' <<<"$output")" null
	printf '{"card":"S1","carrier":"c1","data_quota_kb":200,"as_of":1700000000000}\n' | sr-asset >/dev/null
	assert_equal "$(rcli HGET t:card:S1:facts dq)" 200
}
