#!/bin/bash
# bench/peer/bullmq.sh - BullMQ as a peer of srq on the same kind of Redis and
# the same gateway simulator, so its figures can be read beside bench/core.sh:
# BullMQ addBulk vs sr-enqueue; a BullMQ worker making one HTTP call per job
# to the same sr-gwsim vs srq's drain (see bullmq.js for what each figure is).
# JSON lines on stdout, one per figure, each with "peer":"bullmq <version>";
# npm's noise goes to stderr. Without node or npm: one "skipped" line, exit 0.
# Usage: bench/peer/bullmq.sh [N] [ACCOUNTS]     (defaults 20000, 20)
set -euo pipefail
N=${1:-20000}
A=${2:-20}
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo '{"bench":"peer","skipped":"node is not installed"}'
	exit 0
fi
# lib.sh cds to the parent of this script's directory (bench/ here) and takes
# bin/ from there unless SRQ_BIN is set: point it at the repo root's.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRQ_BIN=${SRQ_BIN:-$ROOT/bin}
. "$ROOT/bench/lib.sh"
cd "$ROOT"
P=bench/peer
if [ ! -d "$P/node_modules" ] || [ "$P/package-lock.json" -nt "$P/node_modules" ]; then
	(cd "$P" && npm ci --silent --no-audit --no-fund) >&2
	touch "$P/node_modules"
fi
bench_gwsim --log /dev/null
node "$P/bullmq.js" --redis "$T/redis.sock" --n "$N" --accounts "$A" \
	--gateway "$SRQ_GATEWAY" --concurrency "${SRQ_CONCURRENCY:-64}"
