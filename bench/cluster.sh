#!/bin/bash
# bench/cluster.sh - the same drain on one Redis and on a 3-master Redis
# Cluster, on this machine. Two cores cannot show a cluster's scaling itself;
# this shows its preconditions: each master takes its share of the work
# (within 15% of a third), and a command costs the cluster's Redis no more
# than the single server's (within 1.2x). One JSON line per figure:
#   {"figure":..., "value":..., "unit":..., "ratio":..., "to":..., "goal":...}
# Usage: bench/cluster.sh [N_COMMANDS] [ACCOUNTS] [ROUNDS]   (15000 30 5)
#
# CPU time (INFO cpu), over ROUNDS rounds that each drain on one server, on
# a cluster of one master and on the cluster of three, so a noisy moment of
# the machine falls on all; the median of each. Every server listens on
# loopback TCP (a unix socket costs Redis less per read and write: that is
# not the cluster's cost). The one-master cluster tells the cost of cluster
# mode itself (slot checks, keys kept per slot) from that of the work split
# over three processes, which here share two cores with the pipeline.
set -euo pipefail
N=${1:-15000}
A=${2:-30}
ROUNDS=${3:-5}
. "$(dirname "$0")/lib.sh"

fig() {
	printf '{"figure":"%s","value":%s,"unit":"%s","ratio":%s,"to":"%s","goal":"%s"%s}\n' \
		"$1" "$2" "$3" "$4" "$5" "$6" "${7:+,$7}"
}
# Redis CPU (µs) and commands run so far, of the server on port $1.
cpu_of() { redis-cli -p "$1" INFO cpu | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.0f", s * 1e6 }'; }
reads_of() { redis-cli -p "$1" INFO stats | tr -d '\r' | awk -F: '/^total_reads_processed:/ { print $2 }'; }
calls_of() { redis-cli -p "$1" INFO commandstats | tr -d '\r' | awk -F'[:,=]' '/^cmdstat_/ { n += $3 } END { print n + 0 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
requests() {
	awk -v n="$1" -v a="$A" -v past="$(($(date +%s) - 60))" 'BEGIN { for (i = 0; i < n; i++)
		printf "{\"card\":\"8986%016d\",\"carrier\":\"c%d\",\"scene\":\"package_expired\",\"source\":\"bench\",\"facts\":{\"pkg_expires_at\":%d,\"status\":\"active\"}}\n", i, i % a, past }'
}

# tcp_server DIR [OPTIONS...]: a redis-server on a free loopback port, in
# $port, its files in DIR.
tcp_server() {
	local dir=$1
	shift
	mkdir -p "$dir"
	for _ in $(seq 20); do
		port=$((20000 + RANDOM % 30000))
		redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
			--pidfile "$dir/redis.pid" --dir "$dir" --logfile "$dir/redis.log" "$@" >"$dir/out" 2>&1 &
		for _ in $(seq 400); do
			redis-cli -p "$port" PING 2>/dev/null | grep -q PONG && return 0
			kill -0 $! 2>/dev/null || continue 2 # the port was taken
			sleep 0.05
		done
	done
	return 1
}

# servers: one server ($single), a cluster of one master ($lone) and a
# 3-master cluster (${ports[@]}), the
# accounts' slots given out in turn: their CRC16 alone would split 30
# accounts unevenly by chance, so, as an operator would (docs/redis.md,
# Resharding), account i goes to master i % 3. The slots are given so from
# the start, every other slot in thirds: moved after the cluster is made
# (CLUSTER SETSLOT on each master), a master could take a stale gossip
# message for the slot's owner, and two masters could each answer MOVED to
# the other (seen: one account's requests refused, MOVED, in about one run
# of twenty).
servers() {
	local i p slots
	tcp_server "$T/one"
	single=$port
	tcp_server "$T/lone" --cluster-enabled yes --cluster-config-file "$T/lone/nodes.conf"
	lone=$port
	redis-cli -p "$lone" CLUSTER ADDSLOTSRANGE 0 16383 >/dev/null
	ports=()
	for i in 1 2 3; do
		tcp_server "$T/cl$i" --cluster-enabled yes --cluster-config-file "$T/cl$i/nodes.conf"
		ports+=("$port")
	done
	for i in $(seq 0 $((A - 1))); do redis-cli -p "$lone" CLUSTER KEYSLOT "c$i"; done >"$T/account-slots"
	for i in 0 1 2; do
		p=${ports[i]}
		# Master i: the slots of accounts i, i+3, ..., and of the others its third.
		slots=$(awk -v m="$i" 'NR == FNR { own[$1] = (FNR - 1) % 3; next }
			END { for (s = 0; s < 16384; s++) if ((s in own) ? own[s] == m : int(s * 3 / 16384) == m) print s }' \
			"$T/account-slots" /dev/null)
		redis-cli -p "$p" CLUSTER SET-CONFIG-EPOCH $((i + 1)) >/dev/null
		# shellcheck disable=SC2086 # one argument per slot
		redis-cli -p "$p" CLUSTER ADDSLOTS $slots >/dev/null
		[ "$i" = 0 ] || redis-cli -p "$p" CLUSTER MEET 127.0.0.1 "${ports[0]}" >/dev/null
	done
	for p in "$lone" "${ports[@]}"; do
		for _ in $(seq 400); do redis-cli -p "$p" CLUSTER INFO | grep -q '^cluster_state:ok' && break; sleep 0.05; done
	done
	# Every master knows the others before a tool reads the map from one.
	for p in "${ports[@]}"; do
		for _ in $(seq 400); do [ "$(redis-cli -p "$p" CLUSTER NODES | grep -c master)" = 3 ] && break; sleep 0.05; done
	done
}
servers_stop() {
	local d
	for d in one lone cl1 cl2 cl3; do bench_stop "$T/$d/redis.pid"; done
	rm -rf "$T/one" "$T/lone" "$T"/cl?
}
trap 'servers_stop; bench_cleanup' EXIT

# round URL REQUESTS PORT...: on empty servers, the requests queued, then
# drained; prints the servers'
# Redis CPU per drained command (µs), per server the commands it ran, and
# the reads of client input of them all.
round() {
	local url=$1 req=$2 p n us=0 reads=0 c=()
	shift 2
	n=$(wc -l <"$req")
	for p in "$@"; do redis-cli -p "$p" FLUSHALL >/dev/null; done
	SRQ_REDIS=$url "$BIN/sr-enqueue" <"$req" >/dev/null
	for p in "$@"; do
		redis-cli -p "$p" CONFIG RESETSTAT >/dev/null
		c+=("$(cpu_of "$p")")
	done
	done0=$(SRQ_REDIS=$url "$BIN/sr-claim" --until-empty --for 600 --batch 256 |
		SRQ_REDIS=$url "$BIN/sr-exec" | SRQ_REDIS=$url "$BIN/sr-confirm" | grep -c '"state":"done"' || true)
	[ "$done0" = "$n" ] || { echo "bench/cluster.sh: $done0 of $n commands done" >&2; exit 1; }
	for p in "$@"; do us=$((us + $(cpu_of "$p") - c[0])); c=("${c[@]:1}"); done
	awk -v a="$us" -v n="$n" 'BEGIN { printf "%.1f", a / n }'
	for p in "$@"; do printf ' %s' "$(calls_of "$p")"; reads=$((reads + $(reads_of "$p"))); done
	echo " $reads"
}

bench_gwsim --log /dev/null
export SRQ_QPS=0 SRQ_MAX_RUNNING=0 SRQ_UNLIMITED=1 SRQ_MIN_INTERVAL_MS=0
requests "$N" >"$T/req.jsonl"

servers
: >"$T/r-single" >"$T/r-lone" >"$T/r-cluster"
for _ in $(seq "$ROUNDS"); do
	round "redis://127.0.0.1:$single" "$T/req.jsonl" "$single" >>"$T/r-single"
	round "redis+cluster://127.0.0.1:$lone" "$T/req.jsonl" "$lone" >>"$T/r-lone"
	round "redis+cluster://127.0.0.1:${ports[0]}" "$T/req.jsonl" "${ports[@]}" >>"$T/r-cluster"
done
servers_stop
single_us=$(cut -d' ' -f1 "$T/r-single" | median)
lone_us=$(cut -d' ' -f1 "$T/r-lone" | median)
cluster_us=$(cut -d' ' -f1 "$T/r-cluster" | median)
# Reads of client input per command (the median round's): each one wakes a
# server's event loop, a cost a cluster pays once per master a round trip
# reaches.
reads_per() { awk '{ print $NF }' "$1" | median | awk -v n="$N" '{ printf "%.3f", $1 / n }'; }
fig cluster_single "$single_us" "µs Redis CPU/command" 1 single "" \
	"\"n\":$N,\"accounts\":$A,\"reads\":$(reads_per "$T/r-single"),\"rounds\":[$(cut -d' ' -f1 "$T/r-single" | paste -sd,)]"
fig cluster_one_master "$lone_us" "µs Redis CPU/command" "$(ratio "$lone_us" "$single_us")" single "" \
	"\"n\":$N,\"masters\":1,\"reads\":$(reads_per "$T/r-lone"),\"rounds\":[$(cut -d' ' -f1 "$T/r-lone" | paste -sd,)]"
for i in 1 2 3; do
	share=$(awk -v i="$i" '{ k += $(i + 1); for (j = 2; j <= 4; j++) t += $j } END { printf "%.3f", k / t }' "$T/r-cluster")
	fig cluster_share "$share" "of the commands" "$(ratio "$share" 0.3333)" third "0.85-1.15" "\"master\":$i"
done
fig cluster_cpu "$cluster_us" "µs Redis CPU/command" "$(ratio "$cluster_us" "$single_us")" single "<= 1.2" \
	"\"n\":$N,\"masters\":3,\"reads\":$(reads_per "$T/r-cluster"),\"rounds\":[$(cut -d' ' -f1 "$T/r-cluster" | paste -sd,)]"

