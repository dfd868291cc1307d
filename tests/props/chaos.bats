#!/usr/bin/env bats
# chaos.bats - kill -9 of one random stage at a random moment, then a
# recovery run: every card ends in its judged state, the carrier never sees a
# card changed twice inside its interval nor an account over its rate, and no
# acknowledged request is lost.
#
# A trial:
#   - a fresh redis-server with `appendonly yes`, `appendfsync always` (an ack
#     is on disk before sr-enqueue prints it) and a fresh sr-gwsim (rate
#     counted on arrival, the card interval, a random answer latency);
#   - about 150 cards over 3 accounts: gen-sample's cards (every judgment
#     case, and renewals of cards already queued for a stop) sent as card
#     requests with their facts; and devices whose cards only a device request
#     moves (a device disabled: its cards stop; a device package renewed: its
#     cards resume, except one stopped by hand), evaluated by dev-eval;
#   - the requests, shuffled (a renewal after its card's first request), fed
#     to one sr-enqueue a few lines at a time while
#     `sr-claim --follow | sr-exec | sr-confirm` and `dev-eval --follow` run;
#   - kill -9 of one stage, at a random moment while it has work: sr-claim,
#     sr-exec, sr-confirm or redis-server at a random time; sr-enqueue right
#     after a random chunk of lines was written to it (often mid-batch: some
#     lines written to Redis, not acknowledged); dev-eval right after Redis
#     saw it claim its k-th device (k random; its evaluations under way).
# Recovery is what an operator or cron does: redis-server restarted on the
# same directory (it reloads its AOF); the requests that sr-enqueue did not
# acknowledge sent again, in their order (a caller's duty; an acknowledged
# request is never sent again: it must be carried out from the queue alone);
# then `dev-eval --until-empty` and the pipeline until nothing is queued
# (the killed stage's claims come back when their leases expire).
# Checks, per trial:
#   - every card's state at the carrier (sr-gwsim's log over the initial
#     states) is the state its facts judge;
#   - gwcheck: no card changed twice inside the carrier's interval, no
#     account over its rate in any sliding second;
#   - no acknowledged request lost: the facts every request carried are in
#     Redis, every acknowledged version is still there (a card's or a device's
#     version never went back), no command is left queued, claimed,
#     confirming or frozen, no device is left queued, and the inspection
#     sweep finds nothing to repair.
#
# Seeds: trial i (from 1) uses seed CHAOS_SEED + i - 1 (CHAOS_SEED defaults
# to a random number, printed); the seed chooses the stage (seed mod 6, so
# consecutive trials cover every stage) and, through $RANDOM and awk's
# srand, the request order, the chunks, the latency and the moment of the
# kill. Each trial prints its seed; replay one with
#   CHAOS_SEED=<seed> CHAOS_TRIALS=1 bats tests/props/chaos.bats
# (timings differ from run to run, so a replay is a close repeat, not an
# exact one). CHAOS_TRIALS (default 6: each stage once) sets the number of
# trials; CHAOS_STAGE (one of the stages below) kills that stage in every
# trial.
# `bats --no-tempdir-cleanup` keeps each trial's files (logs, acks, the
# gateway's log, Redis's AOF) under trial-SEED/ for a look after a failure.

bats_require_minimum_version 1.5.0

load ../test_helper

STAGES=(sr-enqueue sr-claim sr-exec sr-confirm dev-eval redis-server)

setup() {
	QPS=15
	export SRQ_QPS=$QPS
	PIDS=()
}

teardown() {
	local p
	# Stages of a trial that failed half-way: only the processes we started.
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	[ -n "${T:-}" ] && srq_teardown
	return 0
}

ms() { # ms VAR: milliseconds since the epoch, into VAR (no fork)
	local t=${EPOCHREALTIME/./}
	printf -v "$1" '%s' $((t / 1000))
}

# alive PID: the process exists and is not a zombie.
alive() {
	[ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" 2>/dev/null
}

# aof_redis_start: redis-server on $T/redis.sock with its AOF under $T,
# fsynced before every answer. Restarting it on the same $T reloads the AOF
# (test_helper.bash's redis_start runs without persistence).
aof_redis_start() {
	rm -f "$T/redis.sock" "$T/redis.pid"
	redis-server --port 0 --unixsocket "$T/redis.sock" --unixsocketperm 700 \
		--save '' --appendonly yes --appendfsync always --daemonize yes \
		--pidfile "$T/redis.pid" --dir "$T" --logfile "$T/redis.log"
	export SRQ_REDIS="unix://$T/redis.sock"
	local i
	for i in $(seq 200); do
		[ "$(rcli PING 2>/dev/null)" = PONG ] && [ -s "$T/redis.pid" ] && return 0
		sleep 0.05
	done
	echo "redis-server did not start (or did not load its AOF)" >&2
	cat "$T/redis.log" >&2
	return 1
}

# sample SEED: the trial's cards, in $T:
#   stream.jsonl    the requests, in the order they are fed
#   gw-cards.jsonl  every card's state at the carrier before the trial
#   expected.jsonl  every card's judged end state {card, status}
# gen-sample's cards get their facts from their requests; the device cards
# (devices V0..V8, six cards each, over the 3 accounts) are loaded with
# sr-asset, and only their device's request changes what they should be:
#   V0, V3, ...  the device gets disabled          -> its cards stop
#   V1, V4, ...  the device package is renewed     -> its cards resume
#   V2, V5, ...  renewed, first card stopped by hand -> it stays stopped
# Each device also gets a request without facts (scene device: a plain
# re-evaluation, merged with the other or one more pass).
sample() {
	local seed=$1 d j card acct type
	gen-sample "$T/s" 90 3 "$NOW" "$SRQ_PREFIX"
	rcli <"$T/s/devices.redis" >/dev/null
	cp "$T/s/gw-cards.jsonl" "$T/gw-cards.jsonl"
	jq -c '{card, status}' "$T/s/expected.jsonl" >"$T/expected.jsonl"
	: >"$T/assets.jsonl"
	: >"$T/devreq.jsonl"
	for d in $(seq 0 8); do
		type=$((d % 3))
		if [ $type = 0 ]; then
			printf '{"device":"V%d","disabled":0}\n' $d >>"$T/assets.jsonl"
			printf '{"device":"V%d","scene":"device","source":"chaos","facts":{"disabled":1}}\n' $d >>"$T/devreq.jsonl"
		else
			printf '{"device":"V%d","pkg_expires_at":%d}\n' $d "$PAST" >>"$T/assets.jsonl"
			printf '{"device":"V%d","scene":"order","source":"chaos","facts":{"pkg_expires_at":%d}}\n' $d "$FUTURE" >>"$T/devreq.jsonl"
		fi
		printf '{"device":"V%d","scene":"device","source":"chaos"}\n' $d >>"$T/devreq.jsonl"
		for j in 0 1 2 3 4 5; do
			card="V${d}K$j" acct="c$(((d + j) % 3))"
			if [ $type = 0 ]; then
				printf '{"card":"%s","carrier":"%s","device":"V%d","pkg_expires_at":%d,"status":"active"}\n' \
					"$card" "$acct" $d "$FUTURE" >>"$T/assets.jsonl"
				printf '{"card":"%s","carrier":"%s","status":"active"}\n' "$card" "$acct" >>"$T/gw-cards.jsonl"
				printf '{"card":"%s","status":"stopped"}\n' "$card" >>"$T/expected.jsonl"
			else
				by=auto end=active
				[ $type = 2 ] && [ $j = 0 ] && by=manual end=stopped
				printf '{"card":"%s","carrier":"%s","device":"V%d","pkg_expires_at":%d,"status":"stopped","stopped_by":"%s"}\n' \
					"$card" "$acct" $d "$FUTURE" $by >>"$T/assets.jsonl"
				printf '{"card":"%s","carrier":"%s","status":"stopped"}\n' "$card" "$acct" >>"$T/gw-cards.jsonl"
				printf '{"card":"%s","status":"%s"}\n' "$card" $end >>"$T/expected.jsonl"
			fi
		done
	done
	sr-asset <"$T/assets.jsonl" >"$T/assets.out"
	[ "$(jq -r .status "$T/assets.out" | sort -u)" = loaded ]
	# The order: each line a random key; a renewal a little after its card's
	# first request.
	awk -v seed="$seed" '
	BEGIN { srand(seed) }
	function card(s) { return match(s, /"card":"[^"]*"/) ? substr(s, RSTART + 8, RLENGTH - 9) : "" }
	FILENAME ~ /requests/ { k[card($0)] = rand(); printf "%.6f\t%s\n", k[card($0)], $0; next }
	FILENAME ~ /renew/ { printf "%.6f\t%s\n", k[card($0)] + 0.001 + rand() * 0.2, $0; next }
	{ printf "%.6f\t%s\n", rand(), $0 }
	' "$T/s/requests.jsonl" "$T/s/renew.jsonl" "$T/devreq.jsonl" | sort -g | cut -f2- >"$T/stream.jsonl"
}

# snapshot: "claims devices": commands claimed (every account's running
# claims) and devices claimed by dev-eval, as Redis has them now.
snapshot() {
	rcli EVAL "
	local n, d = 0, 0
	for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':carrier:*:sr_running')) do
		n = n + redis.call('ZCARD', k)
	end
	for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':device_eval:*:dev:*')) do
		if not k:match(':scenes\$') and redis.call('HEXISTS', k, 'claim') == 1 then d = d + 1 end
	end
	return n .. ' ' .. d" 0 "$SRQ_PREFIX" 2>/dev/null || echo "? ?"
}

# acked FILE: the acknowledged lines of sr-enqueue's output (a line cut short
# by the kill is no ack), as JSONL.
acked() {
	jq -R -c 'fromjson? | select(.status as $s | ["queued", "cancelled", "unchanged", "noop", "device_queued"] | index($s))' "$1"
}

# in_redis FILE: how many of the requests in FILE Redis already has (the
# facts each one carries are there), e.g. requests that were written but
# not acknowledged when sr-enqueue or Redis was killed.
in_redis() {
	jq -r 'if .card then "\(env.SRQ_PREFIX):card:\(.card):facts pe \(.facts.pkg_expires_at)"
	       elif .facts then .device as $d | .facts | to_entries[0] | "\(env.SRQ_PREFIX):device:\($d):facts \({pkg_expires_at: "pe", disabled: "ds"}[.key]) \(.value)"
	       else empty end' "$1" >"$1.facts"
	[ -s "$1.facts" ] || { echo 0; return; }
	awk '{ print "HGET", $1, $2 }' "$1.facts" | rcli | paste -d' ' "$1.facts" - | awk '$3 == $4' | wc -l
}

# chaos SEED: one trial.
chaos() {
	local seed=$1 stage=${CHAOS_STAGE:-${STAGES[$1 % 6]}}
	local t_start t_now t_kill=0 kill_at=0 trigger="" event=0 lat i n a size
	local killed=0 feeding=1 written=0 snap="" p note victim note_nokill=""
	RANDOM=$seed
	T="$BATS_TEST_TMPDIR/trial-$seed"
	mkdir -p "$T"
	NOW=$(date +%s)
	FUTURE=$((NOW + 86400))
	PAST=$((NOW - 60))
	aof_redis_start
	sample "$seed"
	lat=$(((RANDOM % 4) * 50))
	gwsim_start --qps "$QPS" --cards "$T/gw-cards.jsonl" --latency-ms "$lat" 3>&-

	# The chunks fed to sr-enqueue: 1 to 12 lines each, 30 to 90 ms apart
	# (about 1.5 s in all).
	n=$(wc -l <"$T/stream.jsonl")
	local starts=() sizes=()
	a=1
	while [ "$a" -le "$n" ]; do
		size=$((1 + RANDOM % 12))
		starts+=("$a") sizes+=("$size")
		a=$((a + size))
	done
	# When to kill. The pipeline stages and Redis are busy all along: at a
	# random time. sr-enqueue and dev-eval are idle most of the time (a
	# batch or an evaluation takes milliseconds): sr-enqueue is killed
	# right after a random chunk was written to it (while it reads, judges,
	# writes that batch, or prints its acks), and dev-eval on an event
	# Redis sees (MONITOR): right after device_claim.lua claimed its k-th
	# device (that round's devices are evaluated next, one after the
	# other: lock, read, the cards' commands written, unlock, finish).
	local kill_chunk=-1
	kill_at=$((150 + RANDOM % 2350)) # ms after the start
	case $stage in
	sr-enqueue) kill_chunk=$((RANDOM % (${#starts[@]} - 1))) ;;
	dev-eval) trigger="\"HSET\" \"[^\"]*:device_eval:[^\"]*:dev:[^\"]*\" \"claim\"" event=$((1 + RANDOM % 9)) ;;
	esac

	mkfifo "$T/in" "$T/tasks" "$T/results"
	PIDS=()
	sr-enqueue <"$T/in" >"$T/acks.jsonl" 2>"$T/enqueue.err" 3>&- &
	local pid_enqueue=$!
	sr-claim --follow --for 3 >"$T/tasks" 2>"$T/claim.err" 3>&- &
	local pid_claim=$!
	sr-exec <"$T/tasks" >"$T/results" 2>"$T/exec.err" 3>&- &
	local pid_exec=$!
	sr-confirm <"$T/results" >"$T/finals.jsonl" 2>"$T/confirm.err" 3>&- &
	local pid_confirm=$!
	dev-eval --follow --for 3 >"$T/deveval.jsonl" 2>"$T/deveval.err" 3>&- &
	local pid_deveval=$!
	PIDS=("$pid_enqueue" "$pid_claim" "$pid_exec" "$pid_confirm" "$pid_deveval")
	case $stage in
	sr-enqueue) victim=$pid_enqueue ;;
	sr-claim) victim=$pid_claim ;;
	sr-exec) victim=$pid_exec ;;
	sr-confirm) victim=$pid_confirm ;;
	dev-eval) victim=$pid_deveval ;;
	redis-server) victim=$(cat "$T/redis.pid") ;;
	esac
	if [ -n "$trigger" ]; then
		mkfifo "$T/monitor"
		redis-cli -s "$T/redis.sock" MONITOR >"$T/monitor" 2>/dev/null 3>&- &
		PIDS+=($!)
		awk -v re="$trigger" -v k="$event" -v pid="$victim" '
		$0 ~ re && ++n == k { r = system("kill -9 " pid " 2>/dev/null"); print $0, (r ? "(missed: it had ended)" : ""); fflush(); exit }' \
			<"$T/monitor" >"$T/trigger" 3>&- &
		PIDS+=($!)
		sleep 0.1 # MONITOR is on before the first request
	fi

	exec 4>"$T/in"
	ms t_start
	for i in "${!starts[@]}"; do
		# An external writer: if sr-enqueue is gone, it is the writer
		# that gets SIGPIPE, not this shell.
		if [ $feeding = 1 ]; then
			if sed -n "${starts[$i]},$((starts[$i] + sizes[$i] - 1))p" "$T/stream.jsonl" >&4 2>/dev/null; then
				written=$((starts[$i] + sizes[$i] - 1))
				[ "$written" -gt "$n" ] && written=$n
			else
				feeding=0
			fi
		fi
		if [ "$i" = "$kill_chunk" ]; then
			kill -9 "$victim" || { echo "trial $seed: $stage had ended before its kill"; return 1; }
			ms t_kill
			killed=1 feeding=0
			snap=$(snapshot)
			break
		fi
		sleep "0.0$((3 + RANDOM % 7))"
		ms t_now
		if [ -n "$trigger" ]; then
			if [ $killed = 0 ] && [ -s "$T/trigger" ]; then
				t_kill=$(awk '{ printf "%.0f", $1 * 1000 }' "$T/trigger") killed=1
				snap=$(snapshot)
			fi
		elif [ $killed = 0 ] && [ "$kill_chunk" = -1 ] && [ $((t_now - t_start)) -ge "$kill_at" ]; then
			[ "$stage" = redis-server ] && snap=$(snapshot)
			kill -9 "$victim" || { echo "trial $seed: $stage had ended before its kill"; return 1; }
			ms t_kill
			killed=1
			[ "$stage" = redis-server ] && feeding=0 || snap=$(snapshot)
		fi
	done
	exec 4>&-
	if [ $killed = 0 ] && [ -n "$trigger" ]; then
		# Give the last requests' work a moment to happen.
		for i in $(seq 20); do [ -s "$T/trigger" ] && break; sleep 0.05; done
		ms t_now
		if [ -s "$T/trigger" ]; then
			t_kill=$(awk '{ printf "%.0f", $1 * 1000 }' "$T/trigger") killed=1
			snap=$(snapshot)
		fi
	fi
	if [ $killed = 0 ]; then
		# No trigger (too few events) or the time came after the last
		# chunk: kill at the chosen time.
		ms t_now
		[ $((t_now - t_start)) -lt "$kill_at" ] && sleep "$(printf '%d.%03d' $(((kill_at - (t_now - t_start)) / 1000)) $(((kill_at - (t_now - t_start)) % 1000)))"
		[ "$stage" = redis-server ] && snap=$(snapshot)
		if [ -n "$trigger" ] && ! alive "$victim"; then
			# dev-eval saw fewer claims than k and has ended (--for): a
			# trial without a kill, said in its line.
			note_nokill=" (no kill: it saw fewer than $event claims and ended)"
		else
			kill -9 "$victim" || { echo "trial $seed: $stage had ended before its kill"; return 1; }
		fi
		ms t_kill
		trigger=""
		[ "$stage" = redis-server ] || snap=$(snapshot)
	fi

	# The survivors end by themselves (--for 3, end of input, Redis gone);
	# a MONITOR that saw no trigger is ended here.
	for p in "${PIDS[@]:5}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do
		for i in $(seq 300); do alive "$p" || break; sleep 0.05; done
		if alive "$p"; then
			echo "trial $seed: process $p ($(tr '\0' ' ' <"/proc/$p/cmdline")) still running 15 s after --for ran out" >&2
			return 1
		fi
		wait "$p" 2>/dev/null || true
	done
	PIDS=()

	# Recovery.
	[ "$stage" = redis-server ] && aof_redis_start
	acked "$T/acks.jsonl" >"$T/acked.jsonl"
	jq -r .line "$T/acked.jsonl" | sort -n >"$T/acked.lines"
	awk 'FILENAME == ARGV[1] { ok[$1] = 1; next } !(FNR in ok)' "$T/acked.lines" "$T/stream.jsonl" >"$T/resend.jsonl"
	local inredis
	inredis=$(in_redis "$T/resend.jsonl")
	run -0 --separate-stderr sr-enqueue <"$T/resend.jsonl"
	echo "$output" >"$T/resend-acks.jsonl"
	[ "$(acked "$T/resend-acks.jsonl" | wc -l)" = "$(wc -l <"$T/resend.jsonl")" ] || {
		echo "trial $seed: a request sent again was not acknowledged:"
		jq -c 'select(.status == "error" or .status == "rejected")' "$T/resend-acks.jsonl"
		return 1
	}
	run -0 dev-eval --until-empty --for 30
	run -0 drain 60
	ms t_now

	note="trial seed=$seed: kill -9 $stage at $((t_kill - t_start)) ms"
	[ -n "$trigger" ] && note+=" (right after Redis saw its $(sed 's/^[0-9.]* \[[^]]*\] //' "$T/trigger" | cut -c1-40)..., event $event)"
	[ "$kill_chunk" != -1 ] && note+=" (right after chunk $((kill_chunk + 1)) of ${#starts[@]})"
	note+=$note_nokill
	note+="; then held: ${snap% *} command claims, ${snap#* } device claims; gateway latency $lat ms;"
	note+=" $written of $n lines written, $(wc -l <"$T/acked.lines") acked; $(wc -l <"$T/resend.jsonl") not acked,"
	note+=" sent (again) in the recovery ($inredis of them already in Redis);"
	note+=" recovered in $((t_now - t_kill)) ms"
	echo "$note"
	echo "# $note" >&3

	check "$seed"
	srq_teardown
}

# check SEED: the trial's invariants.
check() {
	local seed=$1
	# Every card in its judged state at the carrier.
	gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" | sort >"$T/final.jsonl"
	sort "$T/expected.jsonl" >"$T/want.jsonl"
	run diff "$T/want.jsonl" "$T/final.jsonl"
	[ "$status" = 0 ] || { echo "trial $seed: cards not in their judged state (want < > carrier):"; echo "$output"; return 1; }
	# The carrier's limits.
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	[ -z "$output" ] || { echo "trial $seed: interval violations:"; echo "$output"; return 1; }
	run gwcheck rate "$T/gw.log" "$QPS"
	[ -z "$output" ] || { echo "trial $seed: rate violations:"; echo "$output"; return 1; }

	# No acknowledged request lost. The facts each request carried (the
	# last request of a card or device wins) are in Redis...
	jq -r 'if .card then "\(.card) pe \(.facts.pkg_expires_at)"
	       elif .facts then .device as $d | .facts | to_entries[] | "dev:\($d) \({pkg_expires_at: "pe", disabled: "ds"}[.key]) \(.value)"
	       else empty end' "$T/stream.jsonl" |
		awk '{ last[$1 " " $2] = $3; if (!($1 " " $2 in seen)) { seen[$1 " " $2] = 1; order[++n] = $1 " " $2 } }
		     END { for (i = 1; i <= n; i++) print order[i], last[order[i]] }' >"$T/facts.want"
	awk -v p="$SRQ_PREFIX" '{ k = ($1 ~ /^dev:/) ? p ":device:" substr($1, 5) ":facts" : p ":card:" $1 ":facts"; print "HGET", k, $2 }' \
		"$T/facts.want" | rcli >"$T/facts.got"
	run diff <(awk '{ print $3 }' "$T/facts.want") "$T/facts.got"
	[ "$status" = 0 ] || { echo "trial $seed: facts of acknowledged requests missing:"; paste "$T/facts.want" "$T/facts.got" | awk '$3 != $4'; return 1; }
	# ...every acknowledged version is still there (never went back): a
	# card's in its hash, or packed first in its bucket while it sleeps...
	rcli --scan --pattern "$SRQ_PREFIX:device_eval:*:dev:*" | grep -v ':scenes$' |
		awk '{ d = $0; sub(/.*:dev:/, "", d); print d, $0 }' >"$T/devkeys"
	cat "$T/acked.jsonl" "$T/resend-acks.jsonl" | jq -r 'select(.ver > 0) | "\(.card // "") \(.carrier // "") \(.device // "") \(.ver)"' |
		awk -v p="$SRQ_PREFIX" 'FILENAME == ARGV[1] { dk[$1] = $2; next }
		  NF == 3 { n = length($1); h = n > 2 ? n - 2 : 0
		            print $3, p ":carrier:{" $2 "}:card:" $1, p ":carrier:{" $2 "}:idle:" substr($1, 1, h), substr($1, h + 1); next }
		  NF == 2 { print $2, dk[$1], "-", "-" }' "$T/devkeys" - >"$T/vers.want" # ack, key, bucket, field
	awk '{ print "HGET", $2, "ver"; if ($3 == "-") print "ECHO", "-"; else print "HGET", $3, $4 }' \
		"$T/vers.want" | rcli >"$T/vers.got" # two replies per line of vers.want
	awk 'NR == FNR { ack[NR] = $1; key[NR] = $2; n = NR; next }
	     FNR % 2 { v[(FNR + 1) / 2] = $0; next }
	     v[FNR / 2] == "" { split($0, f, "|"); v[FNR / 2] = f[1] }
	     END { for (i = 1; i <= n; i++) if (v[i] + 0 < ack[i] + 0) print ack[i], key[i], v[i] }' \
		"$T/vers.want" "$T/vers.got" >"$T/vers.lost"
	[ ! -s "$T/vers.lost" ] || { echo "trial $seed: acknowledged versions gone back (ack ver, key, now):"; cat "$T/vers.lost"; return 1; }
	# ...and nothing is left: queued, claimed, confirming, frozen, devices.
	run rcli --scan --pattern "$SRQ_PREFIX:carrier:*:stop_resume*"
	[ -z "$output" ] || { echo "trial $seed: left in the queues: $output"; return 1; }
	run rcli --scan --pattern "$SRQ_PREFIX:carrier:*:frozen"
	[ -z "$output" ] || { echo "trial $seed: frozen: $output"; return 1; }
	local k
	# (The accounts' running-claim sets are not looked at: a claim whose
	# finish found a newer version stays there until its lease runs out
	# and the next claim sweeps it; a claimed command is in its queue.)
	for k in $(rcli --scan --pattern "$SRQ_PREFIX:carrier:*:confirming") \
		$(rcli --scan --pattern "$SRQ_PREFIX:device_eval:*:queue"); do
		case $(rcli TYPE "$k") in
		set) n=$(rcli SCARD "$k") ;;
		zset) n=$(rcli ZCARD "$k") ;;
		*) n=0 ;;
		esac
		[ "$n" = 0 ] || { echo "trial $seed: $k still holds $n"; return 1; }
	done
	run -0 --separate-stderr sr-sweep
	[ -z "$output" ] || { echo "trial $seed: the sweep found:"; echo "$output"; return 1; }
}

@test "kill -9 of a random stage at a random moment: recovery converges, no violation, no acked request lost" {
	# Its Redis is one server with an AOF, restarted after its kill -9; a
	# cluster master's kill -9 and failover is tests/props/cluster.bats.
	[ "${SRQ_TEST_REDIS:-}" != cluster ] || skip "one server's AOF across kill -9; a cluster's is tests/props/cluster.bats"
	local seed0=${CHAOS_SEED:-$((RANDOM * 32768 + RANDOM))} trials=${CHAOS_TRIALS:-6} i
	echo "CHAOS_SEED=$seed0 CHAOS_TRIALS=$trials"
	echo "# CHAOS_SEED=$seed0 CHAOS_TRIALS=$trials" >&3
	for i in $(seq 0 $((trials - 1))); do
		# (Not `chaos ... || ...`: that would turn off errexit inside.)
		echo "trial $((i + 1)) of $trials: seed $((seed0 + i)); replay: CHAOS_SEED=$((seed0 + i)) CHAOS_TRIALS=1 bats tests/props/chaos.bats"
		chaos $((seed0 + i))
	done
}
