#!/bin/bash
# bench/rate.sh - the rate at the carrier's wire, under a backlog: how much of
# each account's allowed rate srq uses, and how many sliding seconds at the
# carrier held more arrivals than the limit. The baseline is the carrier's
# own limit (sr-gwsim --qps), in the same run. One line per carrier rate mode
# (sliding second, fixed window, token bucket), without and with arrival
# delays (--conn-delay-ms 40: the first request of a new connection arrives
# late, as after a TLS handshake; --jitter-ms 15: every request up to 15 ms
# late), and once with no headroom (SRQ_RATE_WINDOW_MS=1000) to show why the
# window has some. Two more rows, sliding second: 2% of calls refused for
# rate at random (--fault-429 0.02: the carrier's noise, not its limit; AIMD
# must not take it for the limit: utilisation 0.90 at least), and the
# machine loaded (a busy loop on every core beside the drain: calls leave
# late, and the measured headroom must widen the window: 0 seconds over).
# Usage: [RATE_ROWS=extra] bench/rate.sh [QPS] [COMMANDS_PER_ACCOUNT] [ACCOUNTS]   (defaults 20, 300, 3)
set -euo pipefail
QPS=${1:-20}
N=${2:-300}
A=${3:-3}
. "$(dirname "$0")/lib.sh"
export SRQ_MIN_INTERVAL_MS=0 SRQ_QPS="$QPS"

run() { # run MODE DELAYS WINDOW_MS [EXTRA: noise|load]
	local mode=$1 delays=$2 window=$3 extra=${4:-none} opts=() hogs=() floor=null
	[ "$delays" = yes ] && opts=(--conn-delay-ms 40 --jitter-ms 15)
	[ "$extra" = noise ] && opts+=(--fault-429 0.02 --seed 3) && floor=0.9
	R FLUSHALL >/dev/null
	: >"$T/gw.log"
	bench_gwsim --log "$T/gw.log" --qps "$QPS" --rate-mode "$mode" "${opts[@]}"
	awk -v n="$N" -v a="$A" 'BEGIN { for (i = 0; i < n * a; i++)
		printf "{\"card\":\"R%d\",\"carrier\":\"c%d\",\"scene\":\"refund\",\"facts\":{\"pkg_expires_at\":1,\"refunded\":1}}\n", i, i % a }' |
		"$BIN/sr-enqueue" >/dev/null
	if [ "$extra" = load ]; then
		for _ in $(seq "$(nproc)"); do
			yes >/dev/null &
			hogs+=($!)
		done
	fi
	SRQ_RATE_WINDOW_MS=$window "$BIN/sr-claim" --until-empty --for 300 |
		SRQ_RATE_WINDOW_MS=$window "$BIN/sr-exec" | "$BIN/sr-confirm" >/dev/null
	for p in "${hogs[@]}"; do kill "$p"; done
	# The headroom the drain measured (the largest of the accounts'), ms.
	local hr=0 h
	for ((i = 0; i < A; i++)); do
		h=$(R HGET "bench:carrier:{c$i}:edge" hr)
		[ -n "$h" ] && [ "$h" -gt "$hr" ] && hr=$h
	done
	kill "$(cat "$T/gw.pid")"
	wait "$(cat "$T/gw.pid")" 2>/dev/null || true
	local over
	over=$(tests/helpers/gwcheck rate "$T/gw.log" "$QPS" | wc -l)
	# Utilisation: each account's sustained arrival rate at the carrier (calls
	# after the first, over the time from the first to the last) as a share of
	# its limit; the lowest of the accounts is printed.
	jq -s -c --arg mode "$mode" --arg delays "$delays" --argjson window "$window" \
		--argjson qps "$QPS" --argjson over "$over" --arg extra "$extra" --argjson hr "$hr" \
		--argjson floor "$floor" '
	  [group_by(.carrier)[] | sort_by(.t) | ((length - 1) / ((.[-1].t - .[0].t) / 1000) / $qps)] as $u
	  | { bench: "rate", carrier_mode: $mode, arrival_delays: $delays, window_ms: $window,
	      extra: $extra, qps_allowed: $qps, accounts: ($u | length), calls: length,
	      utilisation: ($u | min * 1000 | round / 1000), utilisation_floor: $floor,
	      seconds_over_limit: $over, seconds_over_allowed: 0,
	      refused_by_carrier: ([.[] | select(.refused)] | length),
	      refused_over_limit: ([.[] | select(.fault == "qps")] | length),
	      headroom_measured_ms: $hr }' "$T/gw.log"
}

# RATE_ROWS=extra: only the two last rows (noise, load).
if [ "${RATE_ROWS:-all}" != extra ]; then
	for mode in sliding fixed bucket; do
		run "$mode" no 1020
		run "$mode" yes 1020
	done
	run sliding yes 1000
fi
run sliding no 1020 noise
run sliding no 1020 load
