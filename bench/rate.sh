#!/bin/bash
# bench/rate.sh - rate precision under a backlog: how much of an account's
# allowed rate srq uses at the carrier, and how many sliding seconds went
# over it. The baseline is the carrier's own limit (sr-gwsim --qps), in the
# same run. SPEC: use at least 97% of it, never exceed it at the wire.
# Usage: bench/rate.sh [QPS] [COMMANDS]     (defaults 20, 400)
set -euo pipefail
QPS=${1:-20}
N=${2:-400}
. "$(dirname "$0")/lib.sh"
bench_gwsim --log "$T/gw.log" --qps "$QPS"
export SRQ_MIN_INTERVAL_MS=0 SRQ_QPS="$QPS"
awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++)
	printf "{\"card\":\"R%d\",\"carrier\":\"c1\",\"scene\":\"refund\",\"facts\":{\"pkg_expires_at\":1,\"refunded\":1}}\n", i }' |
	"$BIN/sr-enqueue" >/dev/null
"$BIN/sr-claim" --until-empty --for 300 | "$BIN/sr-exec" | "$BIN/sr-confirm" >/dev/null
over=$(tests/helpers/gwcheck rate "$T/gw.log" "$QPS" | wc -l)
refused=$(jq -s '[.[] | select(.fault == "qps")] | length' "$T/gw.log")
# The carrier admits QPS calls in any sliding second, so N calls need at
# least (N - QPS) / QPS seconds from the first to the last: the ratio is
# that floor over the time srq took (1.0 = every second used to the full).
jq -s -c --argjson qps "$QPS" --argjson over "$over" --argjson refused "$refused" '
  (map(.t) | (max - min) / 1000) as $s
  | { bench: "rate", window_ms: (env.SRQ_RATE_WINDOW_MS // "1020" | tonumber), qps_allowed: $qps,
      calls: length, seconds: $s,
      ratio: (((length - $qps) / $qps) / $s * 1000 | round / 1000),
      seconds_over_limit: $over, refused_by_carrier: $refused }' "$T/gw.log"
