#!/bin/bash
# bench/asset.sh - sr-asset loading N card rows (JSONL and CSV), as a ratio
# to a baseline measured in the same run on the same Redis: redis-benchmark
# HSET of a 5-field facts hash, pipelined 16 deep (sr-asset also reads each
# card's account and device, and keeps device membership).
# Usage: bench/asset.sh [N]     (default 1000000)
set -euo pipefail
N=${1:-1000000}
. "$(dirname "$0")/lib.sh"

awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++)
	printf "{\"card\":\"8986%016d\",\"carrier\":\"c%d\",\"device\":\"D%d\",\"pkg_expires_at\":1800000000,\"status\":\"active\"}\n", i, i % 8, i / 2 }' >"$T/rows.jsonl"
{ echo card,carrier,device,pkg_expires_at,status
  awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) printf "8986%016d,c%d,D%d,1800000000,active\n", i, i % 8, i / 2 }'; } >"$T/rows.csv"

base=$(redis-benchmark -s "$T/redis.sock" -n "$N" -P 16 -r 100000000 -q \
	HSET 'bk:card:__rand_int__:facts' cr c1 dv D1 pe 1800000000 st active x 1 |
	tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1 | cut -d. -f1)
R FLUSHALL >/dev/null
for fmt in jsonl csv; do
	flag=; [ $fmt = csv ] && flag=--csv
	t0=$(now_ms)
	"$BIN/sr-asset" $flag --no-progress <"$T/rows.$fmt" >"$T/out"
	t1=$(now_ms)
	loaded=$(grep -c '"status":"loaded"' "$T/out")
	members=$(R EVAL "return #redis.call('KEYS', ARGV[1])" 0 'bench:device:*:cards')
	per_s=$(( N * 1000 / (t1 - t0) ))
	printf '{"bench":"asset","format":"%s","n":%d,"loaded":%d,"devices":%d,"seconds":%s,"per_s":%d,"ratio":%s}\n' \
		$fmt "$N" "$loaded" "$members" "$(awk -v ms=$((t1 - t0)) 'BEGIN { printf "%.1f", ms / 1000 }')" \
		"$per_s" "$(awk -v a="$per_s" -v b="$base" 'BEGIN { printf "%.2f", a / b }')"
	R FLUSHALL >/dev/null
done
printf '{"bench":"baseline","what":"HSET 5 fields, -P 16","per_s":%d}\n' "$base"
