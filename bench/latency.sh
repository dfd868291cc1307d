#!/bin/bash
# bench/latency.sh - the urgent work inside a reset day's backlog: how long a
# paying user's stop waits from its ack to the carrier, how long an accepted
# change waits for its first status query, how long a throttled call waits
# for its retry, and how much of the rate the backlog still uses. Each delay
# is printed next to its floor, measured in the same run from the same
# configuration: one rate slot (1000 / QPS ms) plus the call (the gateway's
# latency) for the stop; poll_ms plus a slot for the query; the carrier's
# Retry-After plus a slot for the retry. Goals: high priority p99 within 3
# slots plus the call, first query within poll_ms plus a slot at p99,
# utilisation 0.95 or more.
# Usage: bench/latency.sh [BACKLOG] [ACCOUNTS] [QPS] [SECONDS]
#        (defaults 20000, 5, 20, 40: the backlog outlasts the measurement)
set -euo pipefail
N=${1:-20000}
A=${2:-5}
QPS=${3:-20}
SECS=${4:-40}
LAT_MS=30
POLL_MS=2000
. "$(dirname "$0")/lib.sh"
export SRQ_MIN_INTERVAL_MS=0 SRQ_QPS="$QPS" SRQ_MAX_RUNNING=1000
mkdir -p "$T/profiles"
printf 'from = default\naccounts = *\npoll_ms = %d\nsettle_ms = 600000\n' "$POLL_MS" >"$T/profiles/bench.profile"
export SRQ_PROFILES="$T/profiles"
SLOT=$((1000 / QPS))

# backlog: N bulk stops over A accounts a0.., due now.
backlog() {
	awk -v n="$N" -v a="$A" 'BEGIN { for (i = 0; i < n; i++)
		printf "{\"card\":\"B%d\",\"carrier\":\"a%d\",\"scene\":\"reset\",\"facts\":{\"pkg_expires_at\":1,\"status\":\"active\"}}\n", i, i % a }' |
		"$BIN/sr-enqueue" >/dev/null
}

# drain GWSIM_OPTS...: a fresh Redis and carrier, the backlog, and the
# pipeline for SECS seconds in the background ($pipeline).
drain() {
	R FLUSHALL >/dev/null
	: >"$T/gw.log"
	bench_gwsim --log "$T/gw.log" --qps "$QPS" --latency-ms "$LAT_MS" "$@"
	backlog
	"$BIN/sr-claim" --follow --for "$SECS" | "$BIN/sr-exec" | "$BIN/sr-confirm" >/dev/null &
	pipeline=$!
}

# Percentiles of the numbers on stdin: p50 p99 max, as JSON fields.
pct() {
	sort -n | awk '{ v[NR] = $1 }
		END {
			if (!NR) { print "\"n\":0"; exit }
			i50 = int((NR + 1) / 2); i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
			printf "\"n\":%d,\"p50\":%d,\"p99\":%d,\"max\":%d", NR, v[i50], v[i99], v[NR]
		}'
}

# Utilisation of the backlog: each account's sustained rate at the carrier
# over the measurement, as a share of its limit; the lowest account.
utilisation() {
	jq -s --argjson qps "$QPS" '[.[] | select(.kind != "apply")] | [group_by(.carrier)[] | sort_by(.t)
		| ((length - 1) / ((.[-1].t - .[0].t) / 1000) / $qps)] | min * 1000 | round / 1000' "$T/gw.log"
}

# 1. A paying user's stop every 250 ms, accounts in turn: ack -> carrier.
drain
sleep 2
i=0
end=$(( $(now_ms) + (SECS - 6) * 1000 ))
while [ "$(now_ms)" -lt "$end" ]; do
	printf '{"card":"H%d","carrier":"a%d","scene":"order","facts":{"pkg_expires_at":1,"status":"active"}}\n' \
		"$i" $((i % A)) | "$BIN/sr-enqueue" >/dev/null
	echo "H$i $(now_ms)"
	i=$((i + 1))
	sleep 0.25
done >"$T/acks"
wait "$pipeline"
jq -r 'select(.card | startswith("H")) | "\(.card) \(.t)"' "$T/gw.log" | sort -k1,1 >"$T/arrived"
sort -k1,1 "$T/acks" | join - "$T/arrived" | awk '{ print $3 - $2 }' >"$T/high"
printf '{"bench":"latency","what":"high priority stop, ack to carrier","backlog":%d,"accounts":%d,"qps":%d,"gateway_ms":%d,%s,"floor_ms":%d,"goal_p99_ms":%d,"utilisation":%s}\n' \
	"$N" "$A" "$QPS" "$LAT_MS" "$(pct <"$T/high")" $((SLOT + LAT_MS)) $((3 * SLOT + LAT_MS)) "$(utilisation)"

# 2. An asynchronous carrier (every change accepted, applied 5 s later):
# accepted -> the card's first status query.
drain --async-ms 5000
wait "$pipeline"
jq -s -r 'group_by(.card)[] | ([.[] | select(.http == 202)][0].t) as $a
	| ([.[] | select(.kind == "status" and $a != null and .t > $a)][0].t) as $q
	| select($a != null and $q != null) | $q - $a' "$T/gw.log" >"$T/query"
printf '{"bench":"latency","what":"accepted change, first status query","backlog":%d,"accounts":%d,"qps":%d,"poll_ms":%d,%s,"floor_ms":%d,"utilisation":%s}\n' \
	"$N" "$A" "$QPS" "$POLL_MS" "$(pct <"$T/query")" $((POLL_MS + SLOT)) "$(utilisation)"

# 3. A carrier refusing 5% of calls for rate (Retry-After 1 s): the
# refusal -> the card's next call.
drain --fault-429 0.05 --retry-after 1
wait "$pipeline"
jq -s -r 'group_by(.card)[] | ([.[] | select(.http == 429)][0].t) as $r
	| ([.[] | select($r != null and .t > $r and .kind != "apply")][0].t) as $n
	| select($r != null and $n != null) | $n - $r' "$T/gw.log" >"$T/retry"
printf '{"bench":"latency","what":"throttled call, its retry","backlog":%d,"accounts":%d,"qps":%d,"retry_after_ms":1000,%s,"floor_ms":%d,"utilisation":%s}\n' \
	"$N" "$A" "$QPS" "$(pct <"$T/retry")" $((1000 + SLOT)) "$(utilisation)"
