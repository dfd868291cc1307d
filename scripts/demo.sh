#!/bin/bash
# demo.sh - srq end to end on an embedded default, for a newcomer:
# a local redis-server on a unix socket under ./demo, sr-gwsim as the
# carrier gateway, and a generated sample of cards over several accounts
# with every judgment case. Enqueue, drain, then a short summary checked
# from the gateway's own log. Everything is stopped at the end.
#
#   scripts/demo.sh [CARDS] [ACCOUNTS]        (defaults 3000, 4)
#
# Everything it writes is under ./demo (emptied first), or under
# SRQ_DEMO_DIR when that is set: a directory that is empty, or that an
# earlier demo wrote (it leaves .srq-demo there); any other is refused,
# never emptied.
set -euo pipefail
D=
if [ -n "${SRQ_DEMO_DIR:-}" ]; then
	mkdir -p "$SRQ_DEMO_DIR"
	D=$(cd "$SRQ_DEMO_DIR" && pwd)
fi
cd "$(dirname "$0")/.."
N=${1:-3000}
A=${2:-4}
PATH="$PWD/bin:$PWD/scripts:$PWD/tests/helpers:$PATH"

if [ -z "$D" ]; then
	D="$PWD/demo"
	rm -rf "$D"
elif [ -e "$D/.srq-demo" ] || [ -z "$(ls -A "$D")" ]; then
	find "$D" -mindepth 1 -delete
else
	echo "demo.sh: SRQ_DEMO_DIR=$D holds files the demo did not write: give it an empty directory" >&2
	exit 2
fi
mkdir -p "$D"
[ "$D" = "$PWD/demo" ] || touch "$D/.srq-demo"
cleanup() {
	local pid
	for f in "$D/gw.pid" "$D/redis.pid"; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		kill "$pid" 2>/dev/null
		# Wait until it is gone, so the next run starts clean (Redis removes
		# its socket as it shuts down; kill -0 would also see a zombie).
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			[ "$f" = "$D/redis.pid" ] && [ ! -S "$D/redis.sock" ] && break
			sleep 0.05
		done
	done
	return 0
}
trap cleanup EXIT

# The demo carrier allows one change per card every 2 s (a real one: 10 min)
# and 50 calls per second per account; srq is configured just above that.
GW_QPS=50 GW_INTERVAL_MS=2000
export SRQ_REDIS="unix://$D/redis.sock" SRQ_PREFIX=polling
export SRQ_QPS=$GW_QPS SRQ_MIN_INTERVAL_MS=2200 SRQ_LEASE_MS=10000 SRQ_CONFIRM_DELAY_MS=500
# A call's timeout a second and more under the lease (or sr-claim and sr-exec refuse to run).
export SRQ_GATEWAY_TIMEOUT_MS=5000

redis-server --port 0 --unixsocket "$D/redis.sock" --unixsocketperm 700 --save '' \
	--appendonly no --daemonize yes --pidfile "$D/redis.pid" --dir "$D" --logfile "$D/redis.log"
for _ in $(seq 100); do [ -S "$D/redis.sock" ] && break; sleep 0.05; done

gen-sample "$D/sample" "$N" "$A" "$(date +%s)" "$SRQ_PREFIX"
redis-cli -s "$D/redis.sock" <"$D/sample/devices.redis" >/dev/null

sr-gwsim --port 0 --port-file "$D/gw.port" --log "$D/gateway.log" --qps $GW_QPS \
	--interval-ms $GW_INTERVAL_MS --cards "$D/sample/gw-cards.jsonl" \
	--fault-drop-after 0.02 --fault-5xx-after 0.02 --fault-429 0.02 --seed 42 &
echo $! >"$D/gw.pid"
for _ in $(seq 100); do [ -s "$D/gw.port" ] && break; sleep 0.05; done
export SRQ_GATEWAY="http://127.0.0.1:$(cat "$D/gw.port")"

t0=$(date +%s%3N)
echo "srq demo: $N cards over $A accounts (Redis: $D/redis.sock, gateway: $SRQ_GATEWAY)"
rc=0
sr-enqueue <"$D/sample/requests.jsonl" >"$D/acks.jsonl" || rc=$?
sr-enqueue <"$D/sample/renew.jsonl" >"$D/renew-acks.jsonl" || rc=$?
echo "  enqueue:  $(jq -r .status "$D/acks.jsonl" | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}' | sed 's/, $//')"
echo "  renewals: $(jq -r .status "$D/renew-acks.jsonl" | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}' | sed 's/, $//')"
sr-claim --until-empty --for 120 | sr-exec | sr-confirm >"$D/finals.jsonl" || rc=$?
t1=$(date +%s%3N)
echo "  drain:    $(jq -r .state "$D/finals.jsonl" | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}' | sed 's/, $//')"
echo "  gateway:  $(jq -r '.kind + (if .fault != "" then "(" + .fault + ")" else "" end)' "$D/gateway.log" | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}' | sed 's/, $//')"

iv=$(gwcheck interval "$D/gateway.log" $GW_INTERVAL_MS | wc -l)
rv=$(gwcheck rate "$D/gateway.log" $GW_QPS | wc -l)
gwcheck states "$D/gateway.log" "$D/sample/gw-cards.jsonl" | sort >"$D/final-states.jsonl"
jq -c '{card, status}' "$D/sample/expected.jsonl" | sort >"$D/expected-states.jsonl"
ok=$(comm -12 "$D/final-states.jsonl" "$D/expected-states.jsonl" | wc -l)
echo "  checks:   $iv interval violations, $rv rate violations, $ok of $N cards in their judged state"
echo "  elapsed:  $(( (t1 - t0) / 1000 )).$(( (t1 - t0) % 1000 / 100 )) s; logs and records in $D/"
echo
sr-stat --table | sed 's/^/  /'
[ "$iv" -eq 0 ] && [ "$rv" -eq 0 ] && [ "$ok" -eq "$N" ] && [ "$rc" -eq 0 ]
