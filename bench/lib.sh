# bench/lib.sh - what every benchmark needs, sourced after `set -euo pipefail`:
# a temp dir $T, a throwaway redis-server on $T/redis.sock (SRQ_REDIS set),
# bench_gwsim [options] for sr-gwsim (SRQ_GATEWAY set), R for redis-cli,
# now_ms, and everything stopped and removed on exit.
cd "$(dirname "$0")/.."
BIN=${SRQ_BIN:-$PWD/bin}
T=$(mktemp -d)
bench_cleanup() {
	[ -f "$T/gw.pid" ] && kill "$(cat "$T/gw.pid")" 2>/dev/null
	[ -f "$T/redis.pid" ] && kill "$(cat "$T/redis.pid")" 2>/dev/null
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
	rm -f "$T/gw.port"
	"$BIN/sr-gwsim" --port 0 --port-file "$T/gw.port" "$@" &
	echo $! >"$T/gw.pid"
	for _ in $(seq 100); do [ -s "$T/gw.port" ] && break; sleep 0.05; done
	export SRQ_GATEWAY="http://127.0.0.1:$(cat "$T/gw.port")"
}
