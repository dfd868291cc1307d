#!/usr/bin/env bats
# sr-confirm.bats - the finisher: failures, alerts, freezes, bad input.

bats_require_minimum_version 1.5.0

load ../test_helper

@test "consecutive failures alert once at the threshold and freeze at the maximum" {
	gwsim_start --fault-5xx-before 1
	export SRQ_ALERT_AFTER=2 SRQ_FREEZE_AFTER=3
	enqueue F1
	run -0 drain 30
	# 5xx may have applied: each call was followed by a status query first.
	assert_equal "$(jq -r .kind "$T/gw.log" | tr '\n' ' ')" "stop status stop status stop "
	assert_line --partial '"state":"alerted"'
	assert_line --partial '"state":"frozen"'
	assert_equal "$(rcli XLEN 't:carrier:{c1}:alerts')" 2
	run rcli XRANGE 't:carrier:{c1}:alerts' - +
	assert_line failures
	assert_line frozen
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:frozen' 0 -1)" F1
	assert_equal "$(rcli HGET 't:carrier:{c1}:card:F1' frozen)" 1
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "frozen after its claim, before its gate: nothing is sent, it stays frozen, and a retry drains it" {
	gwsim_start
	enqueue F1
	sr-claim --max 1 >"$T/tasks"
	sr-admin freeze F1 --reason dispute >/dev/null
	sr-exec <"$T/tasks" >"$T/r"
	assert_equal "$(jq -r '"\(.outcome) \(.gate)"' "$T/r")" "blocked frozen"
	assert_equal "$(jq -s length "$T/gw.log")" 0
	run -0 sr-confirm <"$T/r"
	assert_equal "$(jq -r .state <<<"$output")" frozen
	assert_equal "$(rcli ZRANGE 't:carrier:{c1}:frozen' 0 -1)" F1
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:sr_running')" 0
	sr-admin audit F1 | jq -e 'select(.event == "gate:frozen" and .state == "frozen")'
	sr-admin retry F1 --reason "dispute settled" >/dev/null
	run -0 drain 10
	assert_equal "$(jq -r 'select(.kind == "stop") | .applied' "$T/gw.log")" true
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:frozen')" 0
}

@test "frozen while its call is at the carrier: the result finishes it, and the frozen set keeps no ghost" {
	gwsim_start
	enqueue F1
	sr-claim --max 1 | sr-exec >"$T/r"
	sr-admin freeze F1 --reason dispute >/dev/null
	run -0 sr-confirm <"$T/r"
	assert_equal "$(jq -r .state <<<"$output")" done
	# Nothing is frozen: no command is left to retry, and nothing pages.
	run -1 sr-admin retry F1 --reason x
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:frozen')" 0
	assert_equal "$(sr-stat | jq -r 'select(.carrier == "c1") | .frozen')" 0
	# The card's next command is not listed as frozen, and is called.
	printf '{"card":"F1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d}}\n' "$FUTURE" | sr-enqueue >/dev/null
	assert_equal "$(sr-admin list c1 --state frozen | jq -s length)" 0
	run -0 drain 10
	assert_equal "$(jq -r .kind "$T/gw.log" | paste -sd' ')" "stop resume"
}

@test "frozen while its call is at the carrier, and the result is unknown: it stays frozen, out of the queues, confirming" {
	gwsim_start --fault-5xx-after 1
	enqueue F1
	sr-claim --max 1 | sr-exec >"$T/r"
	sr-admin freeze F1 --reason dispute >/dev/null
	run -0 sr-confirm <"$T/r"
	assert_equal "$(jq -r '"\(.outcome) \(.state)"' <<<"$output")" "unknown frozen"
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:stop_resume') $(rcli ZRANGE 't:carrier:{c1}:frozen' 0 -1)" "0 F1"
	assert_equal "$(rcli HMGET 't:carrier:{c1}:card:F1' confirming frozen_why | paste -sd' ')" "1 dispute"
	# Nothing for the sweep to find; nothing is sent until a retry, which
	# asks the carrier first.
	run -0 --separate-stderr sr-sweep
	assert_output ''
	run -0 drain 5
	assert_equal "$(jq -r .kind "$T/gw.log" | paste -sd' ')" stop
	sr-admin retry F1 --reason "dispute settled" >/dev/null
	run -0 drain 10
	assert_equal "$(jq -r .kind "$T/gw.log" | paste -sd' ')" "stop status"
	assert_equal "$(jq -r .state <<<"$output" | tail -1)" done
}

@test "frozen by its failures on an unknown result: it stays confirming, and a retry asks the carrier first, never a blind re-call" {
	# The stop applies and its answer is lost (a 500 after applying): the
	# first failure freezes it.
	gwsim_start --fault-5xx-after 1
	export SRQ_FREEZE_AFTER=1
	enqueue F1
	run -0 drain 5
	assert_equal "$(jq -r .state <<<"$output" | tail -1)" frozen
	assert_equal "$(rcli HMGET 't:carrier:{c1}:card:F1' confirming frozen | paste -sd' ')" "1 1"
	# The carrier again, F1 stopped there (the lost answer's change).
	echo '{"card":"F1","status":"stopped"}' >"$T/cards.jsonl"
	gwsim_start --cards "$T/cards.jsonl"
	sr-admin retry F1 --reason "carrier fixed" >/dev/null
	run -0 drain 10
	# The query finds the stop landed: done, with no second stop.
	assert_equal "$(jq -r .kind "$T/gw.log" | paste -sd' ')" "stop status"
	assert_equal "$(jq -r .state <<<"$output" | tail -1)" done
}

@test "an accepted change's first query is a poll after its call went; a result line that says it went in an hour does not put the query off" {
	profiles 'from = default' 'accounts = *' 'poll_ms = 500'
	gwsim_start --async-ms 5000
	enqueue F1
	sr-claim --max 1 | sr-exec >"$T/r"
	at=$(jq -r .at "$T/r")
	jq -c '.at += 3600000' "$T/r" | sr-confirm >/dev/null
	due=$(rcli ZSCORE 't:carrier:{c1}:stop_resume' F1)
	read -r sec usec < <(rcli TIME | paste -sd' ')
	now=$((sec * 1000 + usec / 1000))
	[ "$due" -ge $((at + 500)) ] && [ "$due" -le $((now + 500)) ] ||
		{ echo "query due at $due: the call went at $at, now $now"; false; }
}

@test "a permanent rejection alerts and freezes at once" {
	gwsim_start --fault-reject 1
	enqueue F2
	run -0 drain 10
	assert_output --partial '"outcome":"fail","state":"frozen"'
	assert_equal "$(wc -l <"$T/gw.log")" 1
	run rcli XRANGE 't:carrier:{c1}:alerts' - +
	assert_line permanent
	assert_equal "$(sr-admin alerts | jq -r 'select(.open) | .alert')" permanent
	# The card was renewed meanwhile: the frozen stop is cancelled, and its
	# alert is resolved with it (nothing is left for an operator to do).
	printf '{"card":"F2","carrier":"c1","scene":"order","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$(($(date +%s) + 86400))" | sr-enqueue >/dev/null
	assert_equal "$(rcli ZCARD 't:carrier:{c1}:frozen')" 0
	assert_equal "$(sr-admin alerts | jq -r 'select(.open) | .alert')" ''
}

@test "bad result lines are rejected with line numbers; upstream errors are not applied" {
	# The worst wins: an upstream backend error (3) over the rejections (1).
	run -3 --separate-stderr sr-confirm <<-'EOF'
	not json
	{"task":"call","card":"F3","carrier":"c1","action":"stop","ver":1,"token":"1-1","outcome":"maybe"}
	{"task":"call","card":"F3","carrier":"c1","action":"stop","ver":1,"token":"1-1","status":"error","error":"redis down"}
	EOF
	assert_equal "$(echo "$output" | jq -r '.status // .state' | tr '\n' ' ')" "rejected rejected error "
	[[ $stderr == *"line 2: missing or unknown \"outcome\""* ]]
}

# script_loads min|max: SCRIPT LOAD calls since the stats were reset, the
# fewest or the most of any master (one server: its own).
script_loads() {
	rcli INFO commandstats | tr -d '\r' | awk -F'[:=,]' -v want="$1" '
		/^# Commandstats/ { c[++n] = 0 }
		/^cmdstat_script\|load:/ { c[n] = $3 }
		END {
			m = c[1]
			for (i = 2; i <= n; i++) if (want == "min" ? c[i] < m : c[i] > m) m = c[i]
			print m + 0
		}'
}

@test "a Redis that lost its scripts (restart, SCRIPT FLUSH) mid-run is served again" {
	gwsim_start --qps 1000
	export SRQ_QPS=1000 SRQ_MAX_RUNNING=1000
	for i in $(seq 200); do
		printf '{"card":"F%d","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' "$i" "$PAST"
	done | sr-enqueue >/dev/null
	sr-claim | sr-exec >"$T/results"
	assert_equal "$(wc -l <"$T/results")" 200
	mkfifo "$T/in"
	scripts=$(ls "$PROJECT_ROOT"/share/lua/*.lua | wc -l)
	rcli CONFIG RESETSTAT >/dev/null
	sr-confirm <"$T/in" >"$T/out" &
	pid=$!
	exec 5>"$T/in"
	# Connected, its scripts loaded (on every master) before they are flushed.
	for i in $(seq 200); do
		[ "$(script_loads min)" -ge "$scripts" ] && break
		sleep 0.05
	done
	rcli CONFIG RESETSTAT >/dev/null
	rcli SCRIPT FLUSH >/dev/null
	cat "$T/results" >&5
	exec 5>&-
	wait "$pid"
	# Redis really answered NOSCRIPT, and every result was still applied.
	rcli INFO errorstats | grep -q '^errorstat_NOSCRIPT:count='
	assert_equal "$(jq -r .state "$T/out" | sort | uniq -c | awk '{print $1, $2}')" "200 done"
	assert_equal "$(rcli EXISTS 't:carrier:{c1}:stop_resume')" 0
	# The scripts were loaded again once for the burst, not once per result:
	# one load of every script per burst of results (on a cluster, on each
	# master: the results' facts live on all of them).
	loads=$(script_loads max)
	[ "$loads" -le $((2 * scripts)) ] || { echo "SCRIPT LOAD $loads times for $scripts scripts"; false; }
}
