# bench/lib.sh - what every benchmark needs, sourced after `set -euo pipefail`:
# a temp dir $T, a throwaway redis-server on $T/redis.sock (SRQ_REDIS set),
# bench_gwsim [options] for sr-gwsim (SRQ_GATEWAY set), R for redis-cli,
# now_ms, and everything stopped and removed on exit.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${SRQ_BIN:-$PWD/bin}
T=$(mktemp -d)
# Stop a process by its pid file and wait for it: Redis writes its log as it
# goes down, and would leave a file behind in a directory being removed.
bench_stop() {
	local pid
	[ -f "$1" ] || return 0
	pid=$(cat "$1")
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	rm -f "$1"
}
bench_cleanup() {
	bench_stop "$T/gw.pid"
	bench_stop "$T/redis.pid"
	rm -rf "$T"
}
trap bench_cleanup EXIT
redis-server --port 0 --unixsocket "$T/redis.sock" --save '' --appendonly no \
	--daemonize yes --pidfile "$T/redis.pid" --dir "$T" --logfile "$T/redis.log"
for _ in $(seq 100); do [ -S "$T/redis.sock" ] && break; sleep 0.05; done
export SRQ_REDIS="unix://$T/redis.sock" SRQ_PREFIX=bench
R() { redis-cli -s "$T/redis.sock" "$@"; }
now_ms() { date +%s%3N; }
bench_gwsim() {
	bench_stop "$T/gw.pid"
	rm -f "$T/gw.port"
	"$BIN/sr-gwsim" --port 0 --port-file "$T/gw.port" "$@" &
	echo $! >"$T/gw.pid"
	for _ in $(seq 100); do [ -s "$T/gw.port" ] && break; sleep 0.05; done
	export SRQ_GATEWAY="http://127.0.0.1:$(cat "$T/gw.port")"
}
# Redis's CPU time so far (user + sys, all its threads), µs.
redis_cpu_us() { R INFO cpu | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.0f", s * 1e6 }'; }
redis_mem() { R INFO memory | awk -F: '/^used_memory:/ { printf "%d", $2 }'; }
# Commands Redis ran so far, scripts' own calls included, and the script
# calls among them: "ALL SCRIPTS".
redis_calls() {
	R INFO commandstats | tr -d '\r' | awk -F'[:,=]' '/^cmdstat_/ { all += $3 }
		$1 ~ /^cmdstat_(evalsha|eval|evalsha_ro|eval_ro|fcall)$/ { scripts += $3 }
		END { printf "%d %d", all, scripts }'
}
# Reads of client input Redis made so far (INFO stats): each is a wake-up
# of its event loop, which costs it as much as tens of small commands.
redis_reads() { R INFO stats | tr -d '\r' | awk -F: '/^total_reads_processed:/ { print $2 }'; }
# The mean MEMORY USAGE of the keys matching a pattern (up to 1000 of them).
key_bytes() {
	R --scan --pattern "$1" | awk "NR <= 1000" | sed 's/^/MEMORY USAGE /' | R |
		awk '{ s += $1; n++ } END { printf "%d", n ? s / n : 0 }'
}
# keys_bytes_per N PATTERN...: the bytes of every key matching the patterns
# (MEMORY USAGE, summed) per N things they hold, e.g. cards packed into
# buckets.
keys_bytes_per() {
	local n=$1
	shift
	for p in "$@"; do R --scan --pattern "$p"; done | sed 's/^/MEMORY USAGE /' | R |
		awk -v n="$n" '{ s += $1 } END { printf "%d", n ? s / n : 0 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
# The peer (bench/peer, BullMQ from npm at its pinned version) installed when
# it is missing or older than its lock file. 1: no node or npm here.
peer_ready() {
	command -v node >/dev/null && command -v npm >/dev/null || return 1
	if [ ! -d bench/peer/node_modules ] || [ bench/peer/package-lock.json -nt bench/peer/node_modules ]; then
		(cd bench/peer && npm ci --silent --no-audit --no-fund) >&2
		touch bench/peer/node_modules
	fi
}
