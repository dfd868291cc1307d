#!/usr/bin/env bats
# sr-stat.bats - metrics: values match what the gateway saw, the Prometheus
# format is valid, and the counters stay bounded.

bats_require_minimum_version 1.5.0

load ../test_helper

@test "the metrics match what the pipeline did, as the gateway saw it" {
	export SRQ_FREEZE_AFTER=100
	gwsim_start --fault-drop-after 0.15 --fault-5xx-after 0.1 --fault-429 0.1 --seed 3
	gen-sample "$T/s" 200 2 "$(date +%s)" "$SRQ_PREFIX"
	rcli <"$T/s/devices.redis" >/dev/null
	sr-enqueue <"$T/s/requests.jsonl" >/dev/null
	run -0 drain 60
	run -0 sr-stat
	total=$(echo "$output" | jq -c 'select(.carrier == "*")')
	calls=$(jq -s '[.[] | select(.kind == "stop" or .kind == "resume")] | length' "$T/gw.log")
	queries=$(jq -s '[.[] | select(.kind == "status")] | length' "$T/gw.log")
	commands=$(jq -s '[.[] | select(.kind != "status") | .key] | unique | length' "$T/gw.log")
	assert_equal "$(jq .calls <<<"$total")" "$calls"
	assert_equal "$(jq .queries <<<"$total")" "$queries"
	assert_equal "$(jq .commands <<<"$total")" "$commands"
	# Outcomes by class, against the carrier's own answers.
	assert_equal "$(jq '.outcomes.retry // 0' <<<"$total")" \
		"$(jq -s '[.[] | select(.kind != "status" and (.http == 429 or .code == "TOO_FREQUENT"))] | length' "$T/gw.log")"
	assert_equal "$(jq '(.outcomes.ok // 0) + (.outcomes.already // 0)' <<<"$total")" \
		"$(jq -s '[.[] | select(.kind != "status" and .http == 200)] | length' "$T/gw.log")"
	assert_equal "$(jq '.outcomes.unknown // 0' <<<"$total")" \
		"$(jq -s '[.[] | select(.kind != "status" and (.http >= 500 or .http == 0))] | length' "$T/gw.log")"
	# Retry amplification is calls per distinct command, and faults made it > 1.
	jq -e --argjson c "$calls" --argjson d "$commands" '.retry_amplification - ($c / $d) | fabs < 0.001' <<<"$total"
	jq -e '.retry_amplification > 1' <<<"$total"
	# Nothing is left queued, claimed or confirming.
	jq -e '.queued == 0 and .claimed == 0 and .confirming == 0 and .frozen == 0' <<<"$total"
	# The Prometheus output says the same, in a valid exposition format.
	run -0 sr-stat --prom --output "$T/srq.prom"
	assert_output ''
	run promcheck "$T/srq.prom"
	assert_success
	# Per account only: sum() over the label is the total, nothing twice.
	assert_equal "$(grep -c 'account="\*"' "$T/srq.prom")" 0
	assert_equal "$(awk '/^srq_calls_total\{/ { s += $2 } END { print s }' "$T/srq.prom")" "$calls"
	assert_equal "$(awk '/^srq_queries_total\{/ { s += $2 } END { print s }' "$T/srq.prom")" "$queries"
	assert_equal "$(awk '/^srq_outcomes_total\{/ { s += $2 } END { print s }' "$T/srq.prom")" \
		"$(jq '[.outcomes[]] | add' <<<"$total")"
	# Counters are counters; the rest are gauges.
	grep -qx '# TYPE srq_calls_total counter' "$T/srq.prom"
	grep -qx '# TYPE srq_queued gauge' "$T/srq.prom"
	[ -z "$(grep '^# TYPE srq_.*_total gauge' "$T/srq.prom")" ]
	# The JSON record has the same counters since the start (all of this run
	# is inside the window here).
	jq -e '.totals.calls == .calls and .totals.commands == .commands and .totals.outcomes == .outcomes' <<<"$total"
	assert_equal "$(awk '/^srq_queued\{/ { s += $2 } END { print s + 0 }' "$T/srq.prom")" "$(jq .queued <<<"$total")"
	# A dead exporter pages: the file says when it was written.
	grep -qx 'srq_up 1' "$T/srq.prom"
	ts=$(sed -n 's/^srq_last_success_timestamp_seconds //p' "$T/srq.prom")
	[ $((ts - $(date +%s))) -le 5 ] && [ $(($(date +%s) - ts)) -le 60 ]
	[ -z "$(ls "$T" | grep 'srq.prom.tmp')" ]
	run -0 promtool check metrics <"$T/srq.prom"
	assert_output ''
	# Counters only grow: a later file never says less.
	cp "$T/srq.prom" "$T/before.prom"
	printf '{"card":"EXTRA","carrier":"c0","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' | sr-enqueue >/dev/null
	drain 10 >/dev/null
	sr-stat --prom --output "$T/srq.prom"
	join <(grep '_total{' "$T/before.prom" | sort) <(grep '_total{' "$T/srq.prom" | sort) |
		awk '$3 < $2 { print "went down:", $0; bad = 1 } END { exit bad }'
	[ "$(awk '/^srq_calls_total\{/ { s += $2 } END { print s }' "$T/srq.prom")" -gt "$calls" ]
}

@test "queued, due and frozen are counted as they stand; --table and --window work" {
	now=$(date +%s)
	for i in 1 2 3; do
		printf '{"card":"Z%d","carrier":"c1","scene":"order","facts":{"pkg_expires_at":1,"status":"active"}}\n' "$i"
	done | sr-enqueue >/dev/null
	run -0 sr-stat --carrier c1 --window 90s
	jq -e '.queued == 3 and .due == 3 and .window_s == 90' <<<"$(echo "$output" | head -1)"
	run -0 sr-stat --table
	assert_line --index 0 --partial 'account'
	run -2 sr-stat --window forever
	run -2 sr-stat --prom --table
}

@test "a command frozen while confirming is counted frozen, not confirming; retried, it is queried first" {
	# A card not yet activated (retired, to the simulator: a state srq never
	# changes), whose stop got a 500.
	echo '{"card":"F1","carrier":"c1","status":"retired"}' >"$T/cards.jsonl"
	gwsim_start --cards "$T/cards.jsonl" --fail-account c1
	printf '{"card":"F1","carrier":"c1","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' |
		sr-enqueue >/dev/null
	run -0 bash -c 'sr-claim | sr-exec | sr-confirm'
	assert_output --partial '"task":"call","outcome":"unknown","state":"confirming"'
	# The carrier back, its status query sees the card in that state: frozen.
	gw_set fail_account=
	sleep 0.5 # (real time: the query is due SRQ_CONFIRM_DELAY_MS, 200 ms, after the call)
	run -0 bash -c 'sr-claim | sr-exec | sr-confirm'
	assert_output --partial '"task":"query","outcome":"ok","state":"frozen"'
	run -0 sr-stat --carrier c1
	jq -s -e 'map(select(.carrier == "c1"))[0] | .confirming == 0 and .frozen == 1' <<<"$output"
	sr-stat --prom --output "$T/srq.prom"
	grep -qx 'srq_confirming{account="c1"} 0' "$T/srq.prom"
	grep -qx 'srq_frozen{account="c1"} 1' "$T/srq.prom"
	# Retried by an operator, it asks the carrier first: its result was
	# unknown. Confirming again, it is counted so.
	sr-admin retry F1 --reason "card activated"
	run -0 sr-stat --carrier c1
	jq -s -e 'map(select(.carrier == "c1"))[0] | .confirming == 1 and .frozen == 0' <<<"$output"
	run -0 bash -c 'sr-claim | sr-exec'
	assert_equal "$(jq -r '"\(.task) \(.outcome) \(.observed)"' <<<"$output")" "query ok other"
}

@test "the devices' queue is in the Prometheus file, with no account label, so its alert can fire" {
	printf '{"card":"DC1","carrier":"c1","device":"D1","pkg_expires_at":%d}\n' "$(( $(date +%s) + 86400 ))" | sr-asset >/dev/null
	printf '{"device":"D1","scene":"device_package_expired","facts":{"pkg_expires_at":0}}\n' | sr-enqueue >/dev/null
	assert_equal "$(sr-stat | jq -r 'select(.carrier == "*") | .device_queue')" 1
	run -0 sr-stat --prom --output "$T/srq.prom"
	grep -qx 'srq_device_queue 1' "$T/srq.prom"
	grep -qx '# TYPE srq_device_queue gauge' "$T/srq.prom"
	grep -q '^srq_device_oldest_seconds [0-9]*$' "$T/srq.prom"
	run -0 promtool check metrics <"$T/srq.prom"
	assert_output ''
	dev-eval --until-empty --for 10 >/dev/null
	sr-stat --prom --output "$T/srq.prom"
	grep -qx 'srq_device_queue 0' "$T/srq.prom"
}

@test "counters stay bounded: 100k finished commands do not grow the metrics' memory" {
	# The release build: this is about Redis memory, not the tools' code.
	B="$PROJECT_ROOT/bin"
	export SRQ_QPS=0 SRQ_MAX_RUNNING=0 SRQ_UNLIMITED=1 SRQ_MIN_INTERVAL_MS=0
	gwsim_start
	metrics_memory() {
		local k total=0 n=0
		for k in $(rcli --scan --pattern 't:carrier:*:stats:*') $(rcli --scan --pattern 't:carrier:*:confirming') \
			$(rcli --scan --pattern 't:carrier:*:flapping') $(rcli --scan --pattern 't:carrier:*:alerts_open'); do
			total=$((total + $(rcli MEMORY USAGE "$k"))); n=$((n + 1))
		done
		echo "$total $n"
	}
	run_batch() { # run_batch FIRST COUNT
		awk -v f="$1" -v n="$2" 'BEGIN { for (i = f; i < f + n; i++)
			printf "{\"card\":\"B%d\",\"carrier\":\"c%d\",\"scene\":\"refund\",\"facts\":{\"pkg_expires_at\":1,\"refunded\":1}}\n", i, i % 4 }' |
			"$B/sr-enqueue" >/dev/null
		"$B/sr-claim" --until-empty --for 120 --batch 256 | "$B/sr-exec" | "$B/sr-confirm" | grep -c '"state":"done"'
	}
	assert_equal "$(run_batch 0 10000)" 10000
	read -r m1 k1 <<<"$(metrics_memory)"
	assert_equal "$(run_batch 10000 90000)" 90000
	read -r m2 k2 <<<"$(metrics_memory)"
	echo "metrics memory: $m1 B in $k1 keys after 10k, $m2 B in $k2 keys after 100k" >&3
	# Ten times the commands: the same few keys (one per account and minute),
	# of the same size; only the minutes that passed can add a bucket each.
	[ "$k2" -le $((k1 + 4 * 3)) ]
	[ "$m2" -le $((m1 * k2 / k1 + 2048)) ]
	# And the total is small in absolute terms.
	[ "$m2" -lt 65536 ]
	run -0 "$B/sr-stat" --carrier c0
	jq -e '.finishes >= 25000' <<<"$output"
}

@test "retry amplification over 1.5 raises one alert for the account, and only one" {
	export SRQ_MIN_INTERVAL_MS=0 SRQ_FREEZE_AFTER=100 SRQ_ALERT_AFTER=100
	GW_INTERVAL_MS=0
	# Calls that may have applied (a 5xx) are confirmed by a query and called
	# again: more calls than commands. (Refusals for rate would lower the
	# account's rate instead; the breaker, which would stop calls to an
	# account failing this often, is set out of the way.)
	export SRQ_CONFIRM_DELAY_MS=50
	profiles 'from = default' 'accounts = *' 'breaker_failures = 100000'
	gwsim_start --fault-5xx-before 0.5 --seed 5
	for i in $(seq 20); do
		printf '{"card":"H%d","carrier":"c1","scene":"refund","facts":{"pkg_expires_at":1,"refunded":1}}\n' "$i"
	done | sr-enqueue >/dev/null
	# A few rounds of retries are enough to amplify; convergence is not the point.
	run -0 drain 6
	# sr-stat only reads: it raises nothing, writes nothing.
	rcli CONFIG RESETSTAT >/dev/null
	run -0 sr-stat --carrier c1
	jq -e '.retry_amplification > 1.5' <<<"$(echo "$output" | head -1)"
	run -0 sr-stat --carrier c1 --prom
	run -0 rcli INFO commandstats
	refute_output --regexp 'cmdstat_(xadd|hset|hsetnx|hdel|hincrby|set|del|expire|zadd|zrem|xtrim):'
	assert_equal "$(sr-admin alerts --all | jq -r 'select(.alert == "amplification")')" ''
	# The cron job's run raises it (--raise-alerts), once however often it runs.
	run -0 sr-stat --carrier c1 --raise-alerts
	run -0 sr-stat --carrier c1 --raise-alerts
	run -0 sr-admin alerts
	assert_equal "$(echo "$output" | jq -r 'select(.alert == "amplification") | "\(.carrier) \(.open)"')" "c1 true"
	# Acknowledged: closed, and audited in the account's stream with who and why.
	id=$(echo "$output" | jq -r 'select(.alert == "amplification") | .id')
	run -0 sr-admin alerts --ack "$id" --reason "carrier flaky, ticket 42"
	assert_output --partial '"cause":"amplification:c1"'
	run -0 sr-admin alerts --all # (open ones only without it)
	assert_equal "$(echo "$output" | jq -r 'select(.alert == "amplification") | .open')" false
	run rcli XRANGE 't:carrier:{c1}:audit' - +
	assert_line 'admin:ack'
	assert_line 'carrier flaky, ticket 42'
	run -1 sr-admin alerts --ack "$id" --reason again
	assert_output --partial 'is not open'
}

@test "a mistyped account or prefix is said, not answered with a row of zeros" {
	printf '{"card":"M1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":1}}\n' | sr-enqueue >/dev/null
	run -1 --separate-stderr sr-stat --carrier c11
	[[ $stderr == *"account 'c11' has never had a request"* ]]
	run -0 --separate-stderr sr-stat --prefix tt
	[[ $stderr == *"no account has ever had a request under the prefix 'tt'"* ]]
	run -0 --separate-stderr sr-stat --carrier c1
	[ -z "$stderr" ]
}

@test "an account Redis cannot read is said on stderr; every other account is still written, and the exit is 3" {
	printf '{"card":"W%d","carrier":"%s","scene":"package_expired","facts":{"pkg_expires_at":1}}\n' 1 c1 2 c18 |
		sr-enqueue >/dev/null
	rcli SET 't:carrier:{c18}:confirming' junk >/dev/null
	run -3 --separate-stderr sr-stat --prom --output "$T/srq.prom"
	[[ $stderr == *"account 'c18': not read: "*WRONGTYPE* ]]
	grep -qx 'srq_queued{account="c1"} 1' "$T/srq.prom"
	! grep -q 'account="c18"' "$T/srq.prom"
	# The file says it does not hold every account.
	grep -qx 'srq_up 0' "$T/srq.prom"
	run -0 promtool check metrics <"$T/srq.prom"
	run -3 --separate-stderr sr-stat
	assert_equal "$(jq -r '"\(.carrier) \(.queued)"' <<<"$output" | tr '\n' ' ')" "c1 1 * 1 "
	run -3 --separate-stderr sr-stat --table
	assert_line --index 1 --partial 'c1 '
}

@test "a device shard's queue Redis cannot read is an error, not an empty queue" {
	printf '{"card":"DC1","carrier":"c1","device":"D1","pkg_expires_at":%d}\n' "$(( $(date +%s) + 86400 ))" | sr-asset >/dev/null
	printf '{"device":"D1","scene":"device_package_expired","facts":{"pkg_expires_at":0}}\n' | sr-enqueue >/dev/null
	rcli SET 't:device_eval:{d11}:queue' junk >/dev/null
	run -3 --separate-stderr sr-stat
	[[ $stderr == *"t:device_eval:{d11}:queue"*"not read"*WRONGTYPE* ]]
	# Neither 0 nor the other shards' count: unknown.
	assert_equal "$(jq -c 'select(.carrier == "*") | [.device_queue, .device_oldest_s]' <<<"$output")" "[null,null]"
	run -3 --separate-stderr sr-stat --prom --output "$T/srq.prom"
	! grep -q '^srq_device_' "$T/srq.prom"
	grep -qx 'srq_up 0' "$T/srq.prom"
	run -0 promtool check metrics <"$T/srq.prom"
}

@test "--table: a paused account, an open breaker and a lowered rate say so beside their queues; --local gives the zone's time" {
	for a in c1 c2 c3; do
		printf '{"card":"Q%s","carrier":"%s","scene":"order","facts":{"pkg_expires_at":1,"status":"active"}}\n' "$a" "$a"
	done | sr-enqueue >/dev/null
	sr-admin pause c1 --until 2099-01-01T10:00Z --reason maintenance >/dev/null
	sr-admin breaker c2 open --reason "carrier down" >/dev/null
	# The carrier refused c3's calls for rate: srq calls it at 4 a second
	# now (growing back slowly) against a limit of 10.
	now=$(rcli TIME | head -1)000
	rcli HSET 't:carrier:{c3}:edge' eff 4 eff_at "$now" low_at "$now" >/dev/null
	run -0 sr-stat --table
	assert_line --index 0 --regexp '^account +queued .* qps_eff +qps +breaker +paused$'
	# (columns: ... qps_eff qps breaker paused)
	assert_line --regexp '^c1 +1 .* 10\.0 +10 closed +until 2099-01-01T10:00:00Z \(in [0-9]+d[0-9]+h\)$'
	assert_line --regexp '^c2 +1 .* 10\.0 +10 open +no$'
	assert_line --regexp '^c3 +1 .* 4\.[0-9] +10 closed +no$'
	# In the local zone, with its offset; JSON keeps UTC.
	TZ=Asia/Shanghai run -0 sr-stat --table --local
	assert_line --regexp '^c1 .* until 2099-01-01T18:00:00\+08:00 \(in '
	TZ=Asia/Shanghai run -0 sr-stat --carrier c1
	assert_equal "$(jq -r 'select(.carrier == "c1") | .paused_until_at' <<<"$output")" 2099-01-01T10:00:00.000Z
	run -2 --separate-stderr sr-stat --local
	[[ $stderr == *"--local: only for --table"* ]]
	run -2 sr-stat --table --utc --local
}

# frames FILE: how many frames of --watch FILE holds.
frames() {
	grep -c '^sr-stat --watch ' "$1"
}

@test "--watch redraws the table until SIGINT or SIGTERM (exit 0): frames one after another, with no escape codes, when not a terminal; cleared and redrawn on one" {
	printf '{"card":"W1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":1,"status":"active"}}\n' | sr-enqueue >/dev/null
	sr-stat --watch 1 >"$T/watch.out" 2>"$T/watch.err" &
	pid=$!
	for i in $(seq 300); do [ "$(frames "$T/watch.out")" -ge 2 ] && break; sleep 0.1; done
	kill -INT "$pid"
	rc=0 && wait "$pid" || rc=$?
	assert_equal "$rc" 0
	[ "$(frames "$T/watch.out")" -ge 2 ]
	assert_equal "$(grep -c '^c1 ' "$T/watch.out")" "$(frames "$T/watch.out")"
	! grep -q $'\e' "$T/watch.out"
	assert_equal "$(cat "$T/watch.err")" ""
	# On a terminal (script(1) gives it one): each frame clears the screen
	# and homes the cursor first; SIGTERM ends it as cleanly.
	script -qfec "sr-stat --watch 1 & echo \$! >'$T/tty.pid'; wait \$!" "$T/tty.out" >/dev/null &
	spid=$!
	for i in $(seq 300); do [ "$(grep -ac $'\e\\[H\e\\[2Jsr-stat --watch 1 ' "$T/tty.out" 2>/dev/null)" -ge 2 ] && break; sleep 0.1; done
	kill -TERM "$(cat "$T/tty.pid")"
	rc=0 && wait "$spid" || rc=$?
	assert_equal "$rc" 0
	[ "$(grep -ac $'\e\\[H\e\\[2Jsr-stat --watch 1 ' "$T/tty.out")" -ge 2 ]
	# --watch is the table's: not with what runs from cron.
	run -2 sr-stat --watch 1 --prom
	run -2 sr-stat --watch 1 --raise-alerts
	run -2 sr-stat --watch 0
}
