# test_helper.bash - what every bats suite shares, loaded at the top of each
# (tests/tools/*.bats, one tool each; tests/props/*.bats, what holds across
# tools) with `load ../test_helper`.
#
# Each test gets its own redis-server (unix socket only, no persistence) and,
# when it asks, its own sr-gwsim on a free loopback port, both under
# $BATS_TEST_TMPDIR and stopped by their own pidfiles (never by name).
# Binaries come from $SRQ_BIN (make test points it at the sanitizer build).
# The default setup and teardown below are those of most suites; a suite
# that needs more defines its own, calling srq_setup / srq_teardown.

# (the project is the parent of tests/, wherever the suite itself lies)
PROJECT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRQ_BIN="${SRQ_BIN:-$PROJECT_ROOT/bin}"
PATH="$SRQ_BIN:$PROJECT_ROOT/tests/helpers:$PROJECT_ROOT/scripts:$PATH"
export PATH PROJECT_ROOT

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

# Sanitizers: fail loudly on leaks or UB in the tools under test.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

# Small intervals so the suite runs in minutes. The carrier (sr-gwsim)
# enforces GW_INTERVAL_MS; srq waits a little longer (headroom for the time
# between srq's gate and the carrier's clock), as operators should configure.
GW_INTERVAL_MS=1000
export SRQ_MIN_INTERVAL_MS=1200
# A lease outlives a call's whole timeout by a second at least, or sr-claim
# and sr-exec refuse to run (a call longer than its lease is asked again).
export SRQ_LEASE_MS=4000
export SRQ_CONFIRM_DELAY_MS=200
export SRQ_GATEWAY_TIMEOUT_MS=3000
export SRQ_RATE_WINDOW_MS=1100
export SRQ_PREFIX=t
# Times given without a zone are read in TZ: a test means UTC unless it
# says otherwise (the machine's own zone must not change what it sees).
export TZ=UTC
# No config file but the one a test writes: the machine's /etc/srq/srq.conf
# must not change what a test sees.
export SRQ_CONFIG=

srq_setup() {
	test_vars
	redis_start
}

# The default setup and teardown: the test's own Redis, and everything the
# test started stopped. (A suite that starts nothing but sets T gets the
# teardown too: it stops nothing then.)
setup() {
	srq_setup
}

teardown() {
	[ -z "${T:-}" ] || srq_teardown
}

# make_list NAME: a list the Makefile keeps (tools, prod-tools, scripts),
# one line of words.
make_list() {
	# (a make of its own: run under make test, it would inherit the
	# outer make's flags and say which directory it enters)
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$PROJECT_ROOT" "print-$1"
}

# test_vars: $T, the test's directory, and package expiry times around now
# (expired a minute ago, valid for a day).
test_vars() {
	T="$BATS_TEST_TMPDIR"
	NOW=$(date +%s)
	FUTURE=$((NOW + 86400))
	PAST=$((NOW - 60))
}

srq_teardown() {
	gwsim_stop
	bad_stop_all
	redis_done
	cluster_stop
	tcp_redis_stop
}

# SRQ_TEST_REDIS=cluster (make test-cluster): each test's Redis is a local
# cluster of 3 masters with a replica each instead of one server; redis_start, redis_stop and rcli
# choose, so the suites run unchanged on either.
#
# A cluster takes about 3 s to form, longer than most tests, so a few
# clusters (one for each file bats runs at once, SRQ_TEST_JOBS: under
# $BATS_RUN_TMPDIR/cluster.N, stopped by tests/setup_suite.bash) serve test
# after test, flushed in between. A test takes the first that no other test
# holds (a lock directory beside it), and is given it only as it was made:
# its nodes up, masters and slots where they were, and no client connected
# (a process of an earlier test could still write); otherwise, after a
# failed test, and after redis_stop, the next test to take it gets a new
# one. A test that asks for options (--requirepass), or that finds every
# shared one in use, gets a cluster of its own.
SHARED_CLUSTER=

# shared_cluster_lock: SHARED_CLUSTER is the first shared cluster no other
# test holds, now held by this one; false if all are held.
shared_cluster_lock() {
	local i
	for i in $(seq "${SRQ_TEST_JOBS:-2}"); do
		if mkdir "$BATS_RUN_TMPDIR/cluster.$i.lock" 2>/dev/null; then
			SHARED_CLUSTER="$BATS_RUN_TMPDIR/cluster.$i"
			return 0
		fi
	done
	return 1
}

redis_start() {
	if [ "${SRQ_TEST_REDIS:-}" = cluster ]; then
		# Options, or every shared cluster in use: one's own. Three
		# masters with a replica each, as a production cluster runs:
		# every write is also sent to a replica.
		if [ $# -gt 0 ] || ! shared_cluster_lock; then
			cluster_start 3 1 "$@"
			return
		fi
		SHARED_TAKEN=1 # from here redis_stop releases it, made or not
		shared_cluster_take && return
		shared_cluster_stop
		cluster_make "$SHARED_CLUSTER" 3 1 || return
		cluster_layout >"$SHARED_CLUSTER/layout"
		return
	fi
	local extra=("$@")
	redis-server --port 0 --unixsocket "$T/redis.sock" --unixsocketperm 700 \
		--save '' --appendonly no --daemonize yes --pidfile "$T/redis.pid" \
		--dir "$T" --logfile "$T/redis.log" "${extra[@]}"
	# Up when it answers: its socket file exists from its bind(), before
	# its listen(), and a connection in between is refused (a loaded
	# machine made the first tool of a test meet that).
	# (With --requirepass it answers NOAUTH: up all the same.)
	local i answer=
	for i in $(seq 200); do
		answer=$(redis-cli -s "$T/redis.sock" ping 2>&1) || true
		[[ $answer == PONG || $answer == *NOAUTH* ]] && break
		sleep 0.05
	done
	[[ $answer == PONG || $answer == *NOAUTH* ]] ||
		{ echo "redis-server did not start: $answer" >&2; return 1; }
	export SRQ_REDIS="unix://$T/redis.sock"
}

# redis_stop: the test's Redis is gone ("Redis is down" is true after it).
redis_stop() {
	local pid i
	if [ "${SRQ_TEST_REDIS:-}" = cluster ]; then
		if [ -n "${SHARED_TAKEN:-}" ]; then
			shared_cluster_stop
			rmdir "$SHARED_CLUSTER.lock"
		fi
		SHARED_TAKEN=
		cluster_stop
		return 0
	fi
	[ -n "${T:-}" ] && [ -f "$T/redis.pid" ] || return 0
	pid=$(cat "$T/redis.pid")
	kill "$pid" 2>/dev/null
	# Gone for good before the test goes on: "Redis is down" must be true.
	# (Redis removes its socket as it shuts down; a daemonized process may
	# linger as a zombie where nothing reaps it, so kill -0 would not do.)
	for i in $(seq 100); do [ -S "$T/redis.sock" ] || break; sleep 0.02; done
	rm -f "$T/redis.pid"
	return 0
}

# redis_done: the test is over. A shared cluster that served a passing
# test is left for the next one (which checks it); otherwise Redis stops.
redis_done() {
	if [ -n "${SHARED_TAKEN:-}" ] && [ -n "${BATS_TEST_COMPLETED:-}" ]; then
		rmdir "$SHARED_CLUSTER.lock"
		return 0
	fi
	redis_stop
}

# shared_cluster_take: the shared cluster, flushed, for this test, if it is
# as it was made and nobody else is connected to it.
shared_cluster_take() {
	local port
	[ -f "$SHARED_CLUSTER/layout" ] || return 1
	read -ra CLUSTER_PORTS <"$SHARED_CLUSTER/ports"
	[ "$(cluster_layout)" = "$(cat "$SHARED_CLUSTER/layout")" ] || return 1
	for port in "${CLUSTER_PORTS[@]}"; do
		[ "$(redis-cli -p "$port" CLIENT LIST TYPE normal | wc -l)" = 1 ] || return 1
	done
	# The masters flushed (their replicas follow: a replica refuses it).
	for port in $(cluster_masters); do
		redis-cli -p "$port" FLUSHALL SYNC >/dev/null || return 1
	done
	for port in "${CLUSTER_PORTS[@]}"; do
		redis-cli -p "$port" SCRIPT FLUSH SYNC >/dev/null &&
			redis-cli -p "$port" CONFIG RESETSTAT >/dev/null &&
			redis-cli -p "$port" CONFIG SET maxmemory 0 >/dev/null || return 1
	done
	cluster_url
}

# cluster_url: SRQ_REDIS names two of the cluster's nodes (the second a
# fallback).
cluster_url() {
	export SRQ_REDIS="redis+cluster://127.0.0.1:${CLUSTER_PORTS[0]},127.0.0.1:${CLUSTER_PORTS[1]}"
}

shared_cluster_stop() {
	cluster_kill_dir "$SHARED_CLUSTER"
}

# cluster_layout: the cluster's nodes as the first node sees them, without
# what changes by itself (pings, pongs): a node down, a failover or a slot
# moved changes it.
cluster_layout() {
	redis-cli -p "${CLUSTER_PORTS[0]}" CLUSTER INFO 2>/dev/null | grep '^cluster_state:'
	redis-cli -p "${CLUSTER_PORTS[0]}" CLUSTER NODES 2>/dev/null |
		awk '{ sub(/myself,/, "", $3); $5 = $6 = ""; print }' | sort
}

# cluster_start MASTERS [REPLICAS] [OPTIONS...]: the test's own local Redis
# Cluster of MASTERS masters (with REPLICAS replicas each), nodes under
# $T/cl/N; see cluster_make.
cluster_start() {
	cluster_make "$T/cl" "$@"
}

# cluster_make DIR MASTERS [REPLICAS] [OPTIONS...]: a local Redis Cluster on
# free loopback ports, nodes under DIR/N, OPTIONS for every node
# (--requirepass ...). CLUSTER_PORTS (and DIR/ports) lists every node's
# port, masters first; SRQ_REDIS names the cluster (cluster_url).
cluster_make() {
	local dir=$1 masters=$2 replicas=${3:-0} i n port up addrs=()
	shift $(($# < 3 ? $# : 3))
	CLUSTER_EXTRA=("$@")
	# A password for the nodes is the helpers' password too.
	for ((i = 1; i < $#; i++)); do
		if [ "${!i}" = --requirepass ]; then
			up=$((i + 1))
			local REDISCLI_AUTH=${!up}
			export REDISCLI_AUTH
			CLUSTER_EXTRA+=(--masterauth "${!up}") # a replica's, to its master
		fi
	done
	n=$((masters * (1 + replicas)))
	CLUSTER_PORTS=()
	for i in $(seq "$n"); do
		# (tcp_redis's ports leave the bus, port + 10000, below 65536)
		cluster_node_opts "$dir/$i"
		tcp_redis "$dir/$i" "${NODE_OPTS[@]}" || return
		echo "$PORT" >"$dir/$i/port"
		CLUSTER_PORTS+=("$PORT")
		addrs+=("127.0.0.1:$PORT")
	done
	echo "${CLUSTER_PORTS[*]}" >"$dir/ports"
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$replicas" --cluster-yes >"$dir/create.log" 2>&1 ||
		{ cat "$dir/create.log" >&2; return 1; }
	# Every node agrees the cluster is up, and knows every other node's
	# address and role, before a test uses it.
	for port in "${CLUSTER_PORTS[@]}"; do
		for i in $(seq 200); do
			redis-cli -p "$port" CLUSTER INFO | grep -q '^cluster_state:ok' &&
				[ "$(redis-cli -p "$port" CLUSTER NODES | grep -v ':0@' | grep -vc 'handshake\|noaddr')" = "$n" ] &&
				break
			sleep 0.05
		done
	done
	# Every master's replicas in sync (a WAIT would count them short).
	for port in "${CLUSTER_PORTS[@]:0:$masters}"; do
		for i in $(seq 200); do
			[ "$(redis-cli -p "$port" INFO replication | grep -c 'state=online')" = "$replicas" ] && break
			sleep 0.05
		done
	done
	# ... and known as replicas, with their masters, by every node: a sync
	# done is not yet gossiped (a test that looks up a master's replica
	# in CLUSTER NODES would find none).
	for port in "${CLUSTER_PORTS[@]}"; do
		for i in $(seq 200); do
			[ "$(redis-cli -p "$port" CLUSTER NODES | awk '$3 ~ /slave/ && $4 != "-"' | wc -l)" = \
				$((masters * replicas)) ] && break
			sleep 0.05
		done
	done
	cluster_url
}

# cluster_stop: the test's own cluster (cluster_start) killed.
cluster_stop() {
	[ -n "${T:-}" ] && cluster_kill_dir "$T/cl"
	return 0
}

cluster_kill_dir() {
	local f
	[ -d "$1" ] || return 0
	for f in "$1"/*/redis.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
		rm -f "$f"
	done
	rm -rf "$1" # a cluster started again is a new one
	return 0
}

# cluster_node_opts DIR: in NODE_OPTS, a cluster node's options, its state
# (nodes.conf) in DIR.
cluster_node_opts() {
	NODE_OPTS=(--cluster-enabled yes --cluster-config-file "$1/nodes.conf" --cluster-node-timeout 2000
		--repl-diskless-sync-delay 0
		"${CLUSTER_EXTRA[@]}")
}

# cluster_restart PORT: start the node that listened on PORT again; it
# rejoins the cluster (as a replica, if its slots were taken over).
cluster_restart() {
	local d
	for d in "$T"/cl/*/; do
		d=${d%/}
		[ "$(cat "$d/port" 2>/dev/null)" = "$1" ] || continue
		cluster_node_opts "$d"
		redis_run "$d" "$1" "${NODE_OPTS[@]}"
		return
	done
	return 1
}

# cluster_kill PORT: kill -9 the cluster node listening on PORT.
cluster_kill() {
	local d
	for d in "$T"/cl/*/; do
		if [ "$(cat "$d/port" 2>/dev/null)" = "$1" ] && [ -f "$d/redis.pid" ]; then
			kill -9 "$(cat "$d/redis.pid")"
			rm -f "$d/redis.pid"
		fi
	done
}

# ccli ARGS...: redis-cli on the cluster, following redirections.
ccli() {
	redis-cli -c -p "${CLUSTER_PORTS[0]}" "$@"
}

rcli() {
	local port
	if [ "${SRQ_TEST_REDIS:-}" = cluster ]; then
		case "${1^^}" in
		--SCAN | SCRIPT | FLUSHALL | FLUSHDB | CONFIG | INFO | ACL)
			# Not about one key: every master, one after the other.
			for port in $(cluster_masters); do
				redis-cli -p "$port" ${REDISCLI_AUTH:+--no-auth-warning} "$@"
			done
			return ;;
		DBSIZE)
			for port in $(cluster_masters); do
				redis-cli -p "$port" ${REDISCLI_AUTH:+--no-auth-warning} DBSIZE
			done | awk '{ n += $1 } END { print n + 0 }'
			return ;;
		esac
		redis-cli -c -p "${CLUSTER_PORTS[0]}" ${REDISCLI_AUTH:+--no-auth-warning} "$@"
		return
	fi
	redis-cli -s "$T/redis.sock" ${REDISCLI_AUTH:+--no-auth-warning} "$@"
}

# hashed CARD...: each card's command waiting packed (docs/redis.md "Redis layout":
# its wait and idle buckets) written as a hash instead: the form of a command
# already claimed, or written by an older release, for a test that edits its
# hash by hand. Account $ACCOUNT (c1), through $RCLI (rcli).
hashed() {
	local c head f out a=${ACCOUNT:-c1}
	for c in "$@"; do
		if [ ${#c} -le 2 ]; then head='' f=$c; else head=${c:0:${#c}-2} f=${c: -2}; fi
		out=$(${RCLI:-rcli} EVAL "
			local function put(t, v, names)
			  local i = 1
			  for p in string.gmatch(v .. '|', '([^|]*)|') do
			    if names[i] and p ~= '' then t[#t + 1] = names[i]; t[#t + 1] = p end
			    i = i + 1
			  end
			end
			local w = redis.call('HGET', KEYS[3], ARGV[1])
			if not w then return redis.error_reply('no command waits packed') end
			local t = {}
			put(t, redis.call('HGET', KEYS[2], ARGV[1]) or '',
			  { 'ver', 'last_call', 'seen', 'seen_ms', 'last_dir', 'dir_changes', 'superseded' })
			put(t, w, { 'action', 'reason', 'scene', 'source', 'prio' })
			local scene = string.match(w, '^[^|]*|[^|]*|([^|]*)')
			if scene == '' then t[#t + 1] = 'scene'; t[#t + 1] = string.match(w, '^[^|]*|([^|]*)') end
			redis.call('HSET', KEYS[1], unpack(t))
			redis.call('HDEL', KEYS[2], ARGV[1])
			redis.call('HDEL', KEYS[3], ARGV[1])
			return 1" 3 "t:carrier:{$a}:card:$c" "t:carrier:{$a}:idle:$head" "t:carrier:{$a}:wait:$head" "$f")
		[ "$out" = 1 ] || { echo "hashed $c: $out" >&2; return 1; }
	done
}

# server_of KEY: the server holding KEY, as redis-cli's address arguments
# (one server: its socket).
server_of() {
	local slot
	if [ "${SRQ_TEST_REDIS:-}" = cluster ]; then
		slot=$(redis-cli -p "${CLUSTER_PORTS[0]}" CLUSTER KEYSLOT "$1")
		redis-cli -p "${CLUSTER_PORTS[0]}" CLUSTER SHARDS | tr -d '\r' |
			awk -v s="$slot" '/^slots$/ { getline a; getline b; inslot = (s >= a && s <= b); next }
				inslot && /^port$/ { getline p } inslot && /^role$/ { getline r; if (r == "master") { print "-p " p; exit } }'
		return
	fi
	echo "-s $T/redis.sock"
}

# rcli_at KEY ARGS...: redis-cli on the server holding KEY (one server: the
# server), for what must run there itself (MONITOR).
rcli_at() {
	local at
	at=$(server_of "$1")
	shift
	# shellcheck disable=SC2086 # (two words: the option and its value)
	redis-cli $at ${REDISCLI_AUTH:+--no-auth-warning} "$@"
}

# The command line of redis-cli for this test's Redis (for recipes run by sh).
rcli_line() {
	if [ "${SRQ_TEST_REDIS:-}" = cluster ]; then
		echo "redis-cli -c -p ${CLUSTER_PORTS[0]}"
	else
		echo "redis-cli -s $T/redis.sock"
	fi
}

# The ports of the cluster's masters now.
cluster_masters() {
	redis-cli -p "${CLUSTER_PORTS[0]}" ${REDISCLI_AUTH:+--no-auth-warning} CLUSTER NODES |
		awk '$3 ~ /master/ && $3 !~ /fail/ { sub(/@.*/, "", $2); sub(/.*:/, "", $2); print $2 }' | sort -u
}

# tcp_redis DIR [ARGS...]: a redis-server on a free loopback port (in
# $PORT), its files in DIR (a sentinel.conf there makes it a sentinel), ARGS
# after the defaults (--unixsocket, --replicaof, --bind ::1, ...).
tcp_redis() {
	local dir=$1 try rc
	shift
	for try in $(seq 20); do
		PORT=$((20000 + RANDOM % 30000))
		redis_run "$dir" "$PORT" "$@" && return 0
		rc=$?
		[ "$rc" = 2 ] && continue # the port is taken: another
		break
	done
	echo "no redis-server in $dir" >&2
	cat "$dir/redis.log" >&2
	return 1
}

# redis_run DIR PORT [ARGS...]: tcp_redis on PORT, until it answers: 0; 2
# when it cannot listen there; 1 when it never answers.
redis_run() {
	local dir=$1 port=$2 conf=() i
	shift 2
	mkdir -p "$dir"
	[ -f "$dir/sentinel.conf" ] && conf=("$dir/sentinel.conf")
	rm -f "$dir/redis.log"
	redis-server "${conf[@]}" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize yes --pidfile "$dir/redis.pid" --dir "$dir" --logfile "$dir/redis.log" "$@"
	for i in $(seq 100); do
		grep -q 'Could not create server TCP listening socket' "$dir/redis.log" 2>/dev/null && return 2
		grep -q 'Ready to accept' "$dir/redis.log" 2>/dev/null && return 0
		# A sentinel never says it is ready: it answers. The answer must
		# be our process's: a port taken by another test's server answers
		# too, before ours has logged that it could not listen.
		[ -s "$dir/redis.pid" ] &&
			[ "$(redis-cli -p "$port" INFO server 2>/dev/null | tr -d '\r' |
				awk -F: '/^process_id:/ { print $2 }')" = "$(cat "$dir/redis.pid")" ] && return 0
		sleep 0.05
	done
	return 1
}

# tcp_redis_stop: every server tcp_redis started for this test, killed.
tcp_redis_stop() {
	local f
	for f in "$T"/*/redis.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
		rm -f "$f"
	done
	return 0
}

# gwsim_start [sr-gwsim options...]: log in $T/gw.log, URL in SRQ_GATEWAY.
gwsim_start() {
	gwsim_stop # one simulator per test: a second start replaces the first
	rm -f "$T/gw.port"
	sr-gwsim --port 0 --port-file "$T/gw.port" --log "$T/gw.log" \
		--interval-ms "$GW_INTERVAL_MS" "$@" 2>>"$T/gw.err" &
	echo $! >"$T/gw.pid"
	local i
	for i in $(seq 100); do [ -s "$T/gw.port" ] && break; sleep 0.05; done
	[ -s "$T/gw.port" ] || { echo "sr-gwsim did not start" >&2; cat "$T/gw.err" >&2; return 1; }
	export SRQ_GATEWAY="http://127.0.0.1:$(cat "$T/gw.port")"
	touch "$T/gw.log"
}

gwsim_stop() {
	if [ -f "$T/gw.pid" ]; then
		# (one that ended already, or ended on the signal, is no failure)
		kill "$(cat "$T/gw.pid")" 2>/dev/null || true
		wait "$(cat "$T/gw.pid")" 2>/dev/null || true
		rm -f "$T/gw.pid"
	fi
	return 0
}

# bad_start NAME MODE [ARG]: tests/helpers/badcarrier NAME in MODE (its
# port in $T/bad-NAME.port, its log of every request it read
# $T/bad-NAME.log); SRQ_GATEWAY points at it. bad_stop NAME stops it.
bad_start() {
	local name=$1 i
	shift
	bad_stop "$name"
	"$PROJECT_ROOT/tests/helpers/badcarrier" "$1" "$T/bad-$name.port" "$T/bad-$name.log" "${2:-}" \
		2>>"$T/bad-$name.err" &
	echo $! >"$T/bad-$name.pid"
	for i in $(seq 100); do [ -s "$T/bad-$name.port" ] && break; sleep 0.05; done
	[ -s "$T/bad-$name.port" ] || { cat "$T/bad-$name.err" >&2; return 1; }
	touch "$T/bad-$name.log"
	export SRQ_GATEWAY="http://127.0.0.1:$(cat "$T/bad-$name.port")"
}

bad_stop() {
	local f="$T/bad-$1.pid"
	[ -f "$f" ] || return 0
	kill "$(cat "$f")" 2>/dev/null || true # (gone already: die-after-first)
	wait "$(cat "$f")" 2>/dev/null || true
	rm -f "$f" "$T/bad-$1.port"
}

bad_stop_all() {
	local f
	for f in "$T"/bad-*.pid; do
		[ -f "$f" ] || continue
		f=${f##*/bad-}
		bad_stop "${f%.pid}"
	done
}

# profiles LINE...: a carrier profile (one line per argument) in
# $T/profiles/test.profile, used through SRQ_PROFILES.
profiles() {
	mkdir -p "$T/profiles"
	printf '%s\n' "$@" >"$T/profiles/${PROFILE_NAME:-test}.profile"
	export SRQ_PROFILES="$T/profiles"
}

# example_profile NAME [LINE...]: the shipped example share/profiles/NAME,
# pointed at sr-gwsim (its base on the simulator, its secrets under
# $T/secrets, a short card interval), with LINEs added.
example_profile() {
	local name=$1
	shift
	mkdir -p "$T/profiles" "$T/secrets"
	sed -e "s|^base = https://[^/]*\(.*\)|base = {gateway}\1|" \
		-e "s|/etc/srq/secrets/|$T/secrets/|" \
		-e "s|^interval_ms = .*|interval_ms = $SRQ_MIN_INTERVAL_MS|" \
		"$PROJECT_ROOT/share/profiles/$name.profile" >"$T/profiles/$name.profile"
	printf '%s\n' "$@" >>"$T/profiles/$name.profile"
	export SRQ_PROFILES="$T/profiles"
}

# gw_set KEY=VALUE...: change the running sr-gwsim (qps, fail_account, token_ttl_ms).
gw_set() {
	local q
	q=$(IFS='&'; echo "$*")
	curl -fsS -X POST "$SRQ_GATEWAY/_sim/set?$q" >/dev/null
}

# request CARD [SCENE [PKG_EXPIRES_AT [STATUS [ACCOUNT]]]]: one request for
# CARD, a JSON line on stdout (sr-enqueue's input): at ACCOUNT (c1), scene
# SCENE (package_expired), its facts the package's expiry PKG_EXPIRES_AT
# (epoch s; $PAST, a minute ago) and the card's STATUS at the carrier
# (active; "-" leaves the status out of the facts).
request() {
	local status=
	[ "${4:-active}" = - ] || printf -v status ',"status":"%s"' "${4:-active}"
	printf '{"card":"%s","carrier":"%s","scene":"%s","facts":{"pkg_expires_at":%d%s}}\n' \
		"$1" "${5:-c1}" "${2:-package_expired}" "${3:-$PAST}" "$status"
}

# enqueue CARD [SCENE [PKG_EXPIRES_AT [STATUS [ACCOUNT]]]]: that request
# queued by sr-enqueue (its records dropped). With no more than the card: a
# stop for an expired package.
enqueue() {
	request "$@" | sr-enqueue >/dev/null
}

# refund_stop ACCOUNT CARD...: a stop of each CARD of ACCOUNT, whatever else
# it holds (its package refunded), queued by sr-enqueue.
refund_stop() {
	local a=$1 c
	shift
	for c in "$@"; do
		printf '{"card":"%s","carrier":"%s","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' "$c" "$a"
	done | sr-enqueue >/dev/null
}

# stop_requests N ACCOUNTS: N stop requests for expired packages, cards C0..,
# over ACCOUNTS accounts a0.. (round robin), the cards active at the carrier.
stop_requests() {
	awk -v n="$1" -v a="$2" -v past="$PAST" 'BEGIN { for (i = 0; i < n; i++)
		printf "{\"card\":\"C%d\",\"carrier\":\"a%d\",\"scene\":\"package_expired\",\"facts\":{\"pkg_expires_at\":%d,\"status\":\"active\"}}\n", i, i % a, past }'
}

# drain_until_empty: the pipeline again and again, as cron runs it, until
# nothing is queued or confirming (claims lost with a failed master expire
# after SRQ_LEASE_MS and are claimed again); at most 12 rounds. sr-exec's
# results are appended to $T/results.jsonl, the finals to $T/finals.jsonl.
drain_until_empty() {
	local round left
	for round in $(seq 12); do
		sr-claim --until-empty --for 20 | sr-exec --concurrency 16 | tee -a "$T/results.jsonl" |
			sr-confirm >>"$T/finals.jsonl" 2>>"$T/drain.err" || true
		left=$(sr-stat 2>/dev/null | jq -s 'map(select(.carrier == "*"))[0] | .queued + .confirming')
		[ "$left" = 0 ] && return 0
		sleep 1
	done
	echo "still queued or confirming: $left" >&2
	return 1
}

# backlog_requests N ACCOUNT...: N cards to stop on each ACCOUNT (ACCOUNT-0
# ..), each with a refund: a stop whatever else they hold; the requests on
# stdout. stop_backlog N ACCOUNT... queues them (sr-enqueue's records dropped).
backlog_requests() {
	local n=$1 a
	shift
	for a in "$@"; do
		awk -v n="$n" -v a="$a" 'BEGIN { for (i = 0; i < n; i++)
			printf "{\"card\":\"%s-%d\",\"carrier\":\"%s\",\"scene\":\"refund\",\"facts\":{\"pkg_expires_at\":1,\"refunded\":1}}\n", a, i, a }'
	done
}

stop_backlog() {
	backlog_requests "$@" | sr-enqueue >/dev/null
}

# spread_backlog N ACCOUNTS: N cards to stop (B0 ..), spread over accounts
# c0..c(ACCOUNTS-1), each with a refund, queued.
spread_backlog() {
	awk -v n="$1" -v a="$2" 'BEGIN { for (i = 0; i < n; i++)
		printf "{\"card\":\"B%d\",\"carrier\":\"c%d\",\"scene\":\"refund\",\"facts\":{\"pkg_expires_at\":1,\"refunded\":1}}\n", i, i % a }' |
		sr-enqueue >/dev/null
}

# drain [seconds]: the documented pipeline, until nothing is queued.
drain() {
	sr-claim --until-empty --for "${1:-60}" | sr-exec | sr-confirm
}

# k1_story: the carrier's calls and landings for K1, in order (sr-gwsim's
# log): "stop apply:stopped ...".
k1_story() {
	jq -r 'select(.card == "K1" and .kind != "status") | if .kind == "apply" then "apply:\(.state)" else .kind end' \
		"$T/gw.log" | paste -sd' '
}
