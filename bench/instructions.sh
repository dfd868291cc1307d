#!/bin/bash
# bench/instructions.sh - Redis's instructions per command, stage by stage,
# counted by valgrind's callgrind: the same count for the same tree and the
# same input whatever else the machine is doing, where Redis's CPU time
# (bench/core.sh) moves by 10-30% between runs on a shared machine. Use it
# to decide whether a change to the scripts makes Redis do less; use
# core.sh for what that is worth in µs.
#
# One run: N requests with facts over 20 accounts enqueued, then drained one
# stage after the other (sr-claim, sr-exec through sr-gwsim, sr-confirm),
# with Redis counting only while a stage runs. Printed, one JSON line each:
#   yardstick_instr  a PING and an EVALSHA of core.sh's yardstick script
#                    (the Redis work of one new command), instructions per call
#   enqueue_instr    per enqueued request
#   drain_instr      per drained command, claim + gate + finish, and each stage
# with "ratio" to the EVALSHA's, which carries over between machines.
# The gate's and the finish's figures move by 2-4% between runs: their
# batches follow sr-exec's and sr-confirm's timing. The others repeat to the
# instruction.
#
# REDIS_ARGS="--name value ...": settings for that Redis, e.g. to count what
# a smaller zset-max-listpack-entries saves (docs/performance.md).
# REDIS_SERVER=path: another redis-server binary, e.g. one built from
# Debian's source with its symbols. KEEP=dir keeps each stage's profile
# there, to see where the instructions go:
#   callgrind_annotate --inclusive=yes dir/claim.out
# Usage: bench/instructions.sh [N]   (4000: under valgrind Redis runs ~50x
# slower; per command it gives the figures of N=20000 within 5%)
set -euo pipefail
N=${1:-4000}
A=20
cd "$(dirname "$0")/.."
BIN=${SRQ_BIN:-$PWD/bin}
command -v valgrind >/dev/null || { echo '{"figure":"instructions","skipped":"valgrind is not installed"}'; exit 0; }
T=$(mktemp -d)
cleanup() {
	[ -f "$T/gw.pid" ] && kill "$(cat "$T/gw.pid")" 2>/dev/null
	redis-cli -s "$T/redis.sock" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
	for _ in $(seq 100); do [ -S "$T/redis.sock" ] || break; sleep 0.1; done
	rm -rf "$T"
}
trap cleanup EXIT
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$T/redis.out" \
	"${REDIS_SERVER:-redis-server}" --port 0 --unixsocket "$T/redis.sock" --save '' \
	--appendonly no --dir "$T" ${REDIS_ARGS:-} >"$T/valgrind.log" 2>&1 &
for _ in $(seq 300); do [ -S "$T/redis.sock" ] && break; sleep 0.1; done
export SRQ_REDIS="unix://$T/redis.sock" SRQ_PREFIX=bench
R() { redis-cli -s "$T/redis.sock" "$@"; }
pid=$(R INFO server | tr -d '\r' | awk -F: '/^process_id:/ { print $2 }')
"$BIN/sr-gwsim" --port 0 --port-file "$T/gw.port" --log /dev/null &
echo $! >"$T/gw.pid"
for _ in $(seq 100); do [ -s "$T/gw.port" ] && break; sleep 0.05; done
export SRQ_GATEWAY="http://127.0.0.1:$(cat "$T/gw.port")"
export SRQ_QPS=0 SRQ_MAX_RUNNING=0 SRQ_UNLIMITED=1 SRQ_MIN_INTERVAL_MS=0

# count NAME CMD...: run CMD with Redis counting; prints Redis's instructions.
count() {
	local name=$1
	shift
	callgrind_control -i on "$pid" >/dev/null 2>&1
	callgrind_control -z "$pid" >/dev/null 2>&1
	"$@" >/dev/null
	callgrind_control -d "$name" "$pid" >/dev/null 2>&1
	# The dump just made: the newest file.
	local f
	f=$(ls -t "$T"/redis.out.* | head -1)
	if [ -n "${KEEP:-}" ]; then
		mv "$f" "$KEEP/$name.out"
		f=$KEEP/$name.out
	fi
	awk '/^(summary|totals):/ { print $2; exit }' "$f"
}
per() { awk -v a="$1" -v n="$2" 'BEGIN { printf "%.0f", n ? a / n : 0 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }

sha=$(R SCRIPT LOAD "$(cat bench/yardstick.lua)")
ping=$(per "$(count ping redis-benchmark -s "$T/redis.sock" -n 20000 -P 16 -q PING)" 20000)
evalsha=$(per "$(count evalsha redis-benchmark -s "$T/redis.sock" -n "$N" -P 16 -r 100000000 -q \
	EVALSHA "$sha" 3 'bk:{a}:card:__rand_int__' 'bk:{a}:q' 'bk:{a}:audit' \
	package_expired package_expired bench __rand_int__)" "$N")
R FLUSHALL >/dev/null

awk -v n="$N" -v a="$A" -v t=$(($(date +%s) - 60)) 'BEGIN { for (i = 0; i < n; i++)
	printf "{\"card\":\"8986%016d\",\"carrier\":\"c%d\",\"scene\":\"package_expired\",\"source\":\"bench\",\"facts\":{\"pkg_expires_at\":%d,\"status\":\"active\"}}\n", i, i % a, t }' >"$T/req.jsonl"
enq=$(count enqueue sh -c '"$1/sr-enqueue" <"$2/req.jsonl" >/dev/null' - "$BIN" "$T")
claim=$(count claim sh -c '"$1/sr-claim" --follow --max "$3" --for 300 --batch 256 >"$2/tasks.jsonl"' - "$BIN" "$T" "$N")
gate=$(count gate sh -c '"$1/sr-exec" <"$2/tasks.jsonl" >"$2/results.jsonl"' - "$BIN" "$T")
finish=$(count finish sh -c '"$1/sr-confirm" <"$2/results.jsonl" >"$2/finals.jsonl"' - "$BIN" "$T")
done_n=$(grep -c '"state":"done"' "$T/finals.jsonl" || true)
[ "$done_n" = "$N" ] || echo "bench/instructions.sh: only $done_n of $N commands done" >&2

drain=$(per $((claim + gate + finish)) "$done_n")
printf '{"figure":"yardstick_instr","value":%s,"unit":"instructions/EVALSHA","ping":%s}\n' "$evalsha" "$ping"
printf '{"figure":"enqueue_instr","value":%s,"unit":"instructions/request","ratio":%s,"to":"evalsha","n":%s}\n' \
	"$(per "$enq" "$N")" "$(ratio "$(per "$enq" "$N")" "$evalsha")" "$N"
printf '{"figure":"drain_instr","value":%s,"unit":"instructions/command","ratio":%s,"to":"evalsha","claim":%s,"gate":%s,"finish":%s,"n":%s,"done":%s}\n' \
	"$drain" "$(ratio "$drain" "$evalsha")" "$(per "$claim" "$done_n")" "$(per "$gate" "$done_n")" \
	"$(per "$finish" "$done_n")" "$N" "$done_n"
