#!/bin/bash
# bench/rate.sh - rate precision under a backlog: how much of an account's
# allowed rate srq uses at the carrier, and how many sliding seconds went
# over it. The baseline is the carrier's own limit (sr-gwsim --qps), in the
# same run. SPEC: use at least 97% of it, never exceed it at the wire.
# Usage: bench/rate.sh [QPS] [COMMANDS]     (defaults 20, 400)
set -euo pipefail
cd "$(dirname "$0")/.."
QPS=${1:-20}
N=${2:-400}
BIN=${SRQ_BIN:-$PWD/bin}
T=$(mktemp -d)
cleanup() {
	[ -f "$T/gw.pid" ] && kill "$(cat "$T/gw.pid")" 2>/dev/null
	[ -f "$T/redis.pid" ] && kill "$(cat "$T/redis.pid")" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
redis-server --port 0 --unixsocket "$T/redis.sock" --save '' --appendonly no \
	--daemonize yes --pidfile "$T/redis.pid" --dir "$T" --logfile "$T/redis.log"
for _ in $(seq 100); do [ -S "$T/redis.sock" ] && break; sleep 0.05; done
"$BIN/sr-gwsim" --port 0 --port-file "$T/gw.port" --log "$T/gw.log" --qps "$QPS" &
echo $! >"$T/gw.pid"
for _ in $(seq 100); do [ -s "$T/gw.port" ] && break; sleep 0.05; done
export SRQ_REDIS="unix://$T/redis.sock" SRQ_GATEWAY="http://127.0.0.1:$(cat "$T/gw.port")"
export SRQ_PREFIX=bench SRQ_MIN_INTERVAL_MS=0 SRQ_QPS="$QPS"
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
