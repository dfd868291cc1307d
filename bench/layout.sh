#!/bin/bash
# bench/layout.sh - what an idle card would cost in Redis under other
# layouts: 100k cards written straight into a throwaway Redis, one layout at
# a time, bytes per card from INFO memory. docs/performance.md ("Where the time
# goes") quotes it; it tells what a change of layout can win before it is
# built. One JSON line per layout:
#   {"layout":..., "bytes":..., "ratio":...}   ratio: to today's layout
# Usage: bench/layout.sh [N]   (100000)
set -euo pipefail
N=${1:-100000}
. "$(dirname "$0")/lib.sh"

card="'bench:carrier:{c1}:card:8986' .. string.format('%016d', i)"
declare -A layouts=(
	[today]="redis.call('HSET', $card, 'ver', '1', 'last_call', '1796118131886', 'seen', 'stopped', 'seen_ms', '1796118131888', 'last_dir', 'stop')"
	[short_names]="redis.call('HSET', $card, 'v', '1', 't', '1796118131886', 'sn', 'stopped', 'sm', '1796118131888', 'd', 'stop')"
	[version_and_last_call]="redis.call('HSET', $card, 'v', '1', 't', '1796118131886')"
	[packed_in_1024_buckets]="redis.call('HSET', 'bench:carrier:{c1}:cards:' .. (i % 1024), '8986' .. string.format('%016d', i), '1 1796118131886 s 1796118131888 s')"
)
base=0
for l in today short_names version_and_last_call packed_in_1024_buckets; do
	R FLUSHALL >/dev/null
	m0=$(redis_mem)
	R EVAL "for i = 1, $N do ${layouts[$l]} end" 0 >/dev/null
	b=$(( ($(redis_mem) - m0) / N ))
	[ "$base" = 0 ] && base=$b
	printf '{"layout":"%s","bytes":%d,"ratio":%s}\n' "$l" "$b" "$(ratio "$b" "$base")"
done
