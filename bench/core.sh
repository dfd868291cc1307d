#!/bin/bash
# bench/core.sh - srq's core figures in one run, each next to a yardstick
# measured in the same run on the same local Redis (the machines are noisy:
# compare the ratios, not the absolute numbers). One JSON line per figure:
#   {"figure":..., "value":..., "unit":..., "ratio":..., "to":..., "goal":...}
# "ratio" is value ÷ the yardstick named by "to"; bench/table renders them.
#
# Yardsticks:
#   ping      redis-benchmark PING, pipelined 16 deep: the machine's Redis
#   evalsha   redis-benchmark EVALSHA of a script doing the Redis work of one
#             new command (HMGET, HINCRBY, HSET, ZADD, XADD), -P 16: its
#             rate, its Redis CPU per call and the bytes it keeps per command
# Figures:
#   enqueue        sr-enqueue, N requests with facts over 20 accounts, req/s
#   enqueue_cpu    Redis CPU per enqueued request (INFO cpu), and Redis
#                  commands per request (INFO commandstats, scripts' included)
#   drain_cpu      Redis CPU per drained command, claim + gate + finish (the
#                  median of the drains), and per stage (the stages run one
#                  after the other for it); its commands and its reads of
#                  client input (round trips as Redis sees them) per command
#   queued_bytes   Redis bytes per queued command (facts excluded, its audit
#                  entry, stats and queue entry included), each account's
#                  cards 1,000 consecutive ids at a time; "scattered": every
#                  next card another account's (the requests of "enqueue")
#   idle_card      bytes per card once its command finished (its share of
#                  the bucket it sleeps in, docs/redis.md "Redis layout")
#   facts_card     bytes of a card's facts hash with its 8 fields and the time
#                  of the write that set them
#   drain          sr-claim | sr-exec | sr-confirm through sr-gwsim (no limits,
#                  no latency), commands/s (the fastest of the drains), everything
#                  on this machine
#   exec_50ms      the same drain against a gateway answering in 50 ms, at
#                  --concurrency 256: calls/s, and sr-exec's CPU in cores;
#                  the ratio is to what 256 calls in flight allow (5,120/s)
#   reset_day      1M resume requests (a monthly package reset) enqueued,
#                  seconds; the ratio is to 1M evalsha calls' time
#   peer_*         BullMQ (bench/peer) on the same Redis and sr-gwsim: addBulk
#                  of N_DRAIN jobs, and a worker making one HTTP call per job
# Usage: bench/core.sh [N_ENQUEUE] [N_DRAIN] [N_RESET]   (200000 20000 1000000)
# ROUNDS=3: yardstick and enqueue alternate, best of each kept; the drain
# runs ROUNDS times too (its Redis CPU: the median).
set -euo pipefail
N=${1:-200000}
D=${2:-20000}
M=${3:-1000000}
A=20
. "$(dirname "$0")/lib.sh"

# One JSON line: fig NAME VALUE UNIT RATIO TO GOAL [EXTRA_JSON_MEMBERS]
fig() {
	printf '{"figure":"%s","value":%s,"unit":"%s","ratio":%s,"to":"%s","goal":"%s"%s}\n' \
		"$1" "$2" "$3" "$4" "$5" "$6" "${7:+,$7}"
}
us_per() { awk -v a="$1" -v n="$2" 'BEGIN { printf "%.1f", n ? a / n : 0 }'; }
flush() { R FLUSHALL >/dev/null; }
# requests N FIRST SCENE FACTS [RUN]: N requests over $A accounts, cards
# FIRST..., each account's cards RUN consecutive ids at a time (1: every
# next card is another account's).
requests() {
	awk -v n="$1" -v f="$2" -v s="$3" -v facts="$4" -v a="$A" -v run="${5:-1}" 'BEGIN { for (i = f; i < f + n; i++)
		printf "{\"card\":\"8986%016d\",\"carrier\":\"c%d\",\"scene\":\"%s\",\"source\":\"bench\",\"facts\":%s}\n",
			i, int(i / run) % a, s, facts }'
}
# Redis bytes per queued command of the requests in FILE, on an empty Redis
# (the facts are not the command's: dropped before the command is weighed).
queued_bytes_of() {
	local m0 n
	flush
	m0=$(redis_mem)
	"$BIN/sr-enqueue" <"$1" >"$T/acks_b.jsonl"
	R EVAL "local c = '0' repeat local r = redis.call('SCAN', c, 'MATCH', ARGV[1], 'COUNT', 10000)
		c = r[1] for _, k in ipairs(r[2]) do redis.call('UNLINK', k) end until c == '0'" 0 'bench:card:*:facts' >/dev/null
	n=$(grep -c '"status":"queued"' "$T/acks_b.jsonl" || true)
	echo $(( ($(redis_mem) - m0) / n ))
}
drain() { "$BIN/sr-claim" --until-empty --for 300 --batch 256 | "$BIN/sr-exec" "$@" | "$BIN/sr-confirm"; }

# --- yardsticks ---------------------------------------------------------------
bench_rps() { tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1 | cut -d. -f1; }
c0=$(redis_cpu_us)
ping=$(redis-benchmark -s "$T/redis.sock" -n 1000000 -P 16 -q PING | bench_rps)
ping_us=$(us_per $(( $(redis_cpu_us) - c0 )) 1000000)
sha=$(R SCRIPT LOAD "$(cat bench/yardstick.lua)")
evalsha() {
	redis-benchmark -s "$T/redis.sock" -n "$N" -P 16 -r 100000000 -q \
		EVALSHA "$sha" 3 'bk:{a}:card:__rand_int__' 'bk:{a}:q' 'bk:{a}:audit' \
		package_expired package_expired bench __rand_int__ | bench_rps
}

# --- sr-enqueue, alternating with the evalsha yardstick ---------------------------
requests "$N" 0 package_expired "{\"pkg_expires_at\":$(( $(date +%s) - 60 )),\"status\":\"active\"}" >"$T/req.jsonl"
base=0 base_us=0 base_bytes=0 enq=0 enq_us=0 enq_calls=0 queued_bytes=0
for _ in $(seq "${ROUNDS:-3}"); do
	flush
	m0=$(redis_mem) c0=$(redis_cpu_us)
	b=$(evalsha)
	c1=$(redis_cpu_us) m1=$(redis_mem)
	cmds=$(R ZCARD 'bk:{a}:q')
	[ "$b" -gt "$base" ] && base=$b
	u=$(us_per $(( c1 - c0 )) "$N")
	[ "$base_us" = 0 ] || awk -v u="$u" -v b="$base_us" 'BEGIN { exit !(u < b) }' && base_us=$u
	base_bytes=$(( (m1 - m0) / cmds ))

	flush
	R CONFIG RESETSTAT >/dev/null
	c0=$(redis_cpu_us)
	t0=$(now_ms)
	"$BIN/sr-enqueue" <"$T/req.jsonl" >"$T/acks.jsonl"
	t1=$(now_ms)
	c1=$(redis_cpu_us)
	e=$(( N * 1000 / (t1 - t0) ))
	[ "$e" -gt "$enq" ] && enq=$e
	u=$(us_per $(( c1 - c0 )) "$N")
	[ "$enq_us" = 0 ] || awk -v u="$u" -v b="$enq_us" 'BEGIN { exit !(u < b) }' && enq_us=$u
	read -r all scripts <<<"$(redis_calls)"
	enq_calls=$(us_per "$all" "$N")
	queued=$(grep -c '"status":"queued"' "$T/acks.jsonl" || true)
done
# Bytes: cards sleep, and commands wait, packed in buckets of 100 consecutive
# ids (docs/redis.md "Redis layout"). An account's SIMs come in batches of
# consecutive ICCIDs: its cards fill their buckets. The requests above, every
# next card another account's, are the worst case: each account's bucket
# holds a fifth of its 100.
requests "$N" 0 package_expired "{\"pkg_expires_at\":$(( $(date +%s) - 60 )),\"status\":\"active\"}" 1000 >"$T/req_b.jsonl"
queued_bytes=$(queued_bytes_of "$T/req_b.jsonl")
queued_bytes_scattered=$(queued_bytes_of "$T/req.jsonl")
rm -f "$T/req_b.jsonl"
fig yardstick_ping "$ping" "calls/s" 1 ping "" "\"redis_us\":$ping_us"
fig yardstick_evalsha "$base" "calls/s" "$(ratio "$base" "$ping")" ping "" "\"redis_us\":$base_us,\"bytes\":$base_bytes"
fig enqueue "$enq" "req/s" "$(ratio "$enq" "$base")" evalsha ">= 60000" "\"n\":$N,\"queued\":$queued,\"accounts\":$A"
fig enqueue_cpu "$enq_us" "µs Redis CPU/req" "$(ratio "$enq_us" "$base_us")" evalsha "" "\"redis_calls\":$enq_calls"
fig queued_bytes "$queued_bytes" "B/command" "$(ratio "$queued_bytes" "$base_bytes")" evalsha "<= 300" \
	"\"run\":1000,\"scattered\":$queued_bytes_scattered"

# --- the drain, end to end ------------------------------------------------------
bench_gwsim --log /dev/null
export SRQ_QPS=0 SRQ_MAX_RUNNING=0 SRQ_UNLIMITED=1 SRQ_MIN_INTERVAL_MS=0
# ROUNDS drains: the fastest is kept, and the median Redis CPU per command
# (one drain's figure moves by 10% with the machine's noise).
drain_per_s=0 drain_rounds=()
for _ in $(seq "${ROUNDS:-3}"); do
	flush
	head -n "$D" "$T/req.jsonl" | "$BIN/sr-enqueue" >/dev/null
	R CONFIG RESETSTAT >/dev/null
	c0=$(redis_cpu_us) t0=$(now_ms)
	drain >"$T/finals.jsonl"
	t1=$(now_ms) c1=$(redis_cpu_us)
	done_n=$(grep -c '"state":"done"' "$T/finals.jsonl" || true)
	d=$(( done_n * 1000 / (t1 - t0) ))
	[ "$d" -gt "$drain_per_s" ] && drain_per_s=$d
	drain_rounds+=("$(us_per $(( c1 - c0 )) "$done_n")")
done
drain_us=$(printf '%s\n' "${drain_rounds[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
read -r all scripts <<<"$(redis_calls)"
drain_calls=$(us_per "$all" "$done_n")
drain_reads=$(awk -v r="$(redis_reads)" -v n="$done_n" 'BEGIN { printf "%.3f", n ? r / n : 0 }')
idle=$(keys_bytes_per "$done_n" 'bench:carrier:*:idle:*' 'bench:carrier:*:card:*')

# The same again, one stage after the other, for each stage's Redis CPU.
flush
head -n "$D" "$T/req.jsonl" | "$BIN/sr-enqueue" >/dev/null
c0=$(redis_cpu_us)
"$BIN/sr-claim" --follow --max "$D" --for 300 --batch 256 >"$T/tasks.jsonl"
c1=$(redis_cpu_us)
"$BIN/sr-exec" <"$T/tasks.jsonl" >"$T/results.jsonl"
c2=$(redis_cpu_us)
"$BIN/sr-confirm" <"$T/results.jsonl" >"$T/finals2.jsonl"
c3=$(redis_cpu_us)
staged=$(grep -c '"state":"done"' "$T/finals2.jsonl" || true)
fig drain_cpu "$drain_us" "µs Redis CPU/command" "$(ratio "$drain_us" "$base_us")" evalsha "<= 20" \
	"\"rounds\":[$(IFS=,; echo "${drain_rounds[*]}")],\"redis_calls\":$drain_calls,\"redis_reads\":$drain_reads,\"claim_us\":$(us_per $((c1 - c0)) "$staged"),\"gate_us\":$(us_per $((c2 - c1)) "$staged"),\"finish_us\":$(us_per $((c3 - c2)) "$staged")"
fig idle_card "$idle" "B/card" "$(ratio "$idle" "$base_bytes")" evalsha "<= 125"

flush
awk 'BEGIN { for (i = 0; i < 1000; i++)
	printf "{\"card\":\"8986%016d\",\"carrier\":\"c%d\",\"device\":\"D%d\",\"status\":\"active\",\"stopped_by\":\"auto\",\"pkg_expires_at\":1800000000,\"data_used_kb\":123456,\"data_quota_kb\":1048576,\"refunded\":0,\"polling_paused\":0}\n", i, i % 20, i }' |
	"$BIN/sr-asset" --no-progress >/dev/null
facts=$(key_bytes 'bench:card:*:facts')
fig facts_card "$facts" "B/card" "$(ratio "$facts" "$base_bytes")" evalsha "<= 190 without times"
fig drain "$drain_per_s" "commands/s" "$(ratio "$drain_per_s" "$base")" evalsha ">= 10000" "\"n\":$D,\"done\":$done_n"

# --- the peer: BullMQ on this Redis and this sr-gwsim ------------------------------
if peer_ready; then
	flush
	node bench/peer/bullmq.js --redis "$T/redis.sock" --n "$D" --accounts "$A" --gateway "$SRQ_GATEWAY" >"$T/peer.jsonl"
	peer() { jq -r --arg b "$1" "select(.bench == \$b) | $2" "$T/peer.jsonl"; }
	v=$(peer addBulk .per_s)
	fig peer_addbulk "$v" "jobs/s" "$(ratio "$v" "$base")" evalsha "" \
		"\"peer\":\"$(peer addBulk .peer)\",\"redis_us\":$(peer addBulk .redis_cpu_us_per_job),\"bytes\":$(peer addBulk .redis_bytes_per_job),\"srq_per_s\":$enq"
	v=$(peer worker .per_s)
	fig peer_worker "$v" "jobs/s" "$(ratio "$v" "$base")" evalsha "" \
		"\"peer\":\"$(peer worker .peer)\",\"redis_us\":$(peer worker .redis_cpu_us_per_job),\"failed\":$(peer worker .failed),\"srq_per_s\":$drain_per_s"
else
	echo '{"figure":"peer","skipped":"node or npm is not installed"}'
fi

# --- against a 50 ms gateway ------------------------------------------------------
bench_gwsim --log /dev/null --latency-ms 50
flush
head -n "$D" "$T/req.jsonl" | "$BIN/sr-enqueue" >/dev/null
t0=$(now_ms)
"$BIN/sr-claim" --until-empty --for 300 --batch 256 |
	/usr/bin/time -f '%U %S' -o "$T/exec.time" "$BIN/sr-exec" --concurrency 256 |
	"$BIN/sr-confirm" >"$T/finals3.jsonl"
t1=$(now_ms)
slow=$(grep -c '"state":"done"' "$T/finals3.jsonl" || true)
slow_per_s=$(( slow * 1000 / (t1 - t0) ))
cores=$(awk -v ms=$((t1 - t0)) '{ printf "%.2f", ($1 + $2) * 1000 / ms }' "$T/exec.time")
fig exec_50ms "$slow_per_s" "calls/s" "$(ratio "$slow_per_s" 5120)" "256 in flight" ">= 2000 on <= 1 core" \
	"\"n\":$D,\"done\":$slow,\"exec_cores\":$cores"

# --- a reset day -------------------------------------------------------------------
flush
requests "$M" 0 reset "{\"pkg_expires_at\":$(( $(date +%s) + 30 * 86400 )),\"status\":\"stopped\"}" >"$T/reset.jsonl"
t0=$(now_ms)
"$BIN/sr-enqueue" <"$T/reset.jsonl" >"$T/acks.jsonl"
t1=$(now_ms)
reset_s=$(awk -v ms=$((t1 - t0)) 'BEGIN { printf "%.1f", ms / 1000 }')
reset_q=$(grep -c '"status":"queued"' "$T/acks.jsonl" || true)
fig reset_day "$reset_s" "s" "$(ratio "$reset_s" "$(awk -v m="$M" -v b="$base" 'BEGIN { print m / b }')")" \
	"$M evalsha" "<= 20" "\"n\":$M,\"queued\":$reset_q,\"redis_mb\":$(( $(redis_mem) / 1048576 ))"
