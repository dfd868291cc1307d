#!/bin/bash
# bench/cluster.sh - the same drain on one Redis and on a 3-master Redis
# Cluster, on this machine. Two cores cannot show a cluster's scaling itself;
# this shows its preconditions: each master takes its share of the work
# (within 15% of a third), and a command costs the cluster's Redis no more
# CPU than the single server's (within 1.2x). One JSON line per figure:
#   {"figure":..., "value":..., "unit":..., "ratio":..., "to":..., "goal":...}
# Usage: bench/cluster.sh [N_COMMANDS] [ACCOUNTS]   (15000 30)
set -euo pipefail
N=${1:-15000}
A=${2:-30}
. "$(dirname "$0")/lib.sh"

fig() {
	printf '{"figure":"%s","value":%s,"unit":"%s","ratio":%s,"to":"%s","goal":"%s"%s}\n' \
		"$1" "$2" "$3" "$4" "$5" "$6" "${7:+,$7}"
}
# Redis CPU (µs) and commands run so far, of the server on port $1 (or the socket).
cpu_of() { redis-cli "$@" INFO cpu | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.0f", s * 1e6 }'; }
calls_of() { redis-cli "$@" INFO commandstats | tr -d '\r' | awk -F'[:,=]' '/^cmdstat_/ { n += $3 } END { print n + 0 }'; }

awk -v n="$N" -v a="$A" -v past="$(($(date +%s) - 60))" 'BEGIN { for (i = 0; i < n; i++)
	printf "{\"card\":\"8986%016d\",\"carrier\":\"c%d\",\"scene\":\"package_expired\",\"source\":\"bench\",\"facts\":{\"pkg_expires_at\":%d,\"status\":\"active\"}}\n", i, i % a, past }' >"$T/req.jsonl"
bench_gwsim --log /dev/null
export SRQ_QPS=0 SRQ_MAX_RUNNING=0 SRQ_UNLIMITED=1 SRQ_MIN_INTERVAL_MS=0
drain() { "$BIN/sr-claim" --until-empty --for 300 --batch 256 | "$BIN/sr-exec" | "$BIN/sr-confirm"; }

# --- one server -----------------------------------------------------------------
"$BIN/sr-enqueue" <"$T/req.jsonl" >/dev/null
c0=$(cpu_of -s "$T/redis.sock")
done1=$(drain | grep -c '"state":"done"' || true)
single_us=$(awk -v a="$(($(cpu_of -s "$T/redis.sock") - c0))" -v n="$done1" 'BEGIN { printf "%.1f", a / n }')
fig cluster_single "$single_us" "µs Redis CPU/command" 1 single "" "\"n\":$N,\"done\":$done1,\"accounts\":$A"

# --- three masters ----------------------------------------------------------------
ports=()
for i in 1 2 3; do
	mkdir -p "$T/cl$i"
	for _ in $(seq 20); do
		p=$((20000 + RANDOM % 30000))
		redis-server --bind 127.0.0.1 --port "$p" --cluster-enabled yes --cluster-config-file "$T/cl$i/nodes.conf" \
			--save '' --appendonly no --daemonize yes --pidfile "$T/cl$i/redis.pid" --dir "$T/cl$i" \
			--logfile "$T/cl$i/redis.log" || continue
		for _ in $(seq 40); do redis-cli -p "$p" PING 2>/dev/null | grep -q PONG && break 2; sleep 0.05; done
	done
	ports+=("$p")
done
cluster_cleanup() {
	for i in 1 2 3; do bench_stop "$T/cl$i/redis.pid"; done
	bench_cleanup
}
trap cluster_cleanup EXIT
redis-cli --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-yes >/dev/null 2>&1
for p in "${ports[@]}"; do
	for _ in $(seq 200); do redis-cli -p "$p" CLUSTER INFO | grep -q '^cluster_state:ok' && break; sleep 0.05; done
done
# Accounts land on masters by the CRC16 of their name: with 30 of them the
# split is uneven by chance. As an operator would (README, Resharding), the
# empty slots of the accounts are given out in turn, account i to master i % 3.
ids=()
for p in "${ports[@]}"; do ids+=("$(redis-cli -p "$p" CLUSTER MYID)"); done
for i in $(seq 0 $((A - 1))); do
	slot=$(redis-cli -p "${ports[0]}" CLUSTER KEYSLOT "c$i")
	for p in "${ports[@]}"; do redis-cli -p "$p" CLUSTER SETSLOT "$slot" NODE "${ids[i % 3]}" >/dev/null; done
done
for p in "${ports[@]}"; do
	for _ in $(seq 200); do redis-cli -p "$p" CLUSTER INFO | grep -q '^cluster_state:ok' && break; sleep 0.05; done
done
export SRQ_REDIS="redis+cluster://127.0.0.1:${ports[0]}"
"$BIN/sr-enqueue" <"$T/req.jsonl" >/dev/null
c=() k=()
for p in "${ports[@]}"; do
	redis-cli -p "$p" CONFIG RESETSTAT >/dev/null
	c+=("$(cpu_of -p "$p")")
done
done3=$(drain | grep -c '"state":"done"' || true)
total_us=0 total_calls=0
for i in 0 1 2; do
	k[i]=$(calls_of -p "${ports[i]}")
	total_calls=$((total_calls + k[i]))
	total_us=$((total_us + $(cpu_of -p "${ports[i]}") - c[i]))
done
for i in 0 1 2; do
	share=$(awk -v a="${k[i]}" -v t="$total_calls" 'BEGIN { printf "%.3f", a / t }')
	fig cluster_share "$share" "of the commands" "$(ratio "$share" 0.3333)" third "0.85-1.15" "\"master\":$((i + 1))"
done
cluster_us=$(awk -v a="$total_us" -v n="$done3" 'BEGIN { printf "%.1f", a / n }')
fig cluster_cpu "$cluster_us" "µs Redis CPU/command" "$(ratio "$cluster_us" "$single_us")" single "<= 1.2" \
	"\"n\":$N,\"done\":$done3,\"masters\":3"
