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
. "$(dirname "$0")/../lib.sh"
peer_ready || { echo '{"bench":"peer","skipped":"node or npm is not installed"}'; exit 0; }
bench_gwsim --log /dev/null
node bench/peer/bullmq.js --redis "$T/redis.sock" --n "$N" --accounts "$A" \
	--gateway "$SRQ_GATEWAY" --concurrency "${SRQ_CONCURRENCY:-64}"
