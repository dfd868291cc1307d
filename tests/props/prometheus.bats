#!/usr/bin/env bats
# prometheus.bats - what ships for an operator's Prometheus and Grafana
# (share/prometheus, share/grafana): the rules load and pass their unit
# tests, those tests catch a rule that pages through a pause or misses a
# stale textfile, and every query of the dashboard and every rule runs
# against a real Prometheus scraping sr-stat's textfile after a drain.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	test_vars
	RULES="$PROJECT_ROOT/share/prometheus"
	DASH="$PROJECT_ROOT/share/grafana/srq.json"
}

teardown() {
	stop_pidfile "$T/prometheus.pid"
	stop_pidfile "$T/http.pid"
	srq_teardown
}

# stop_pidfile FILE: the process FILE names stopped, and waited for. (It
# may have ended already, as a Prometheus whose port was taken does: then
# kill and wait fail, which is no failure here.)
stop_pidfile() {
	[ -f "$1" ] || return 0
	kill "$(cat "$1")" 2>/dev/null || true
	wait "$(cat "$1")" 2>/dev/null || true
	rm -f "$1"
	return 0
}

need() { # need TOOL...: fail, saying which, when one is not installed (a skip would prove nothing)
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || {
			echo "$t is not installed (scripts/deps.sh installs it: Debian packages prometheus, python3)" >&2
			return 1
		}
	done
}

@test "the shipped rules load, pass their unit tests, and every alert is tested firing" {
	need promtool
	run -0 promtool check rules "$RULES/srq.rules.yml"
	assert_output --regexp 'SUCCESS: [0-9]+ rules found'
	cd "$RULES"
	run -0 promtool test rules srq.rules.test.yml
	assert_output --partial SUCCESS
	# An alert with no test that expects it firing could be one that never
	# fires (a typo in a metric's name): each one has such a test.
	alerts=$(sed -n 's/^ *- alert: //p' srq.rules.yml | sort)
	[ "$(wc -l <<<"$alerts")" -ge 10 ]
	tested=$(awk '/^ *alertname: / { a = $2 } /^ *- exp_labels:/ { print a }' srq.rules.test.yml | sort -u)
	assert_equal "$tested" "$alerts"
	# Each says how urgent it is and what to do, and waits before it fires.
	for a in $alerts; do
		block=$(awk -v a="$a" '$0 ~ "- alert: " a "$" { on = 1; next } /- (alert|record):/ { on = 0 } on' srq.rules.yml)
		grep -Eq '^ +for: [0-9]+m$' <<<"$block" || { echo "$a: no for:"; false; }
		grep -Eq '^ +severity: (critical|warning)$' <<<"$block" || { echo "$a: no severity"; false; }
		grep -q '^ *summary: ' <<<"$block" || { echo "$a: no summary"; false; }
		grep -q '^ *description: ' <<<"$block" || { echo "$a: no description"; false; }
	done
}

@test "a rule broken on a trap (a pause, an open breaker, a stale textfile, a few calls) fails the unit tests" {
	need promtool
	# mutate NAME SED ALERT GOT LABEL: the rules with SED applied still
	# load, and promtool test rules fails on ALERT, with the series LABEL
	# among the alerts it got (GOT "fires") or not (GOT "missed").
	mutate() {
		local d="$T/$1" got
		mkdir -p "$d"
		cp "$RULES/srq.rules.yml" "$RULES/srq.rules.test.yml" "$d"
		sed -i "$2" "$d/srq.rules.yml"
		! cmp -s "$RULES/srq.rules.yml" "$d/srq.rules.yml" || { echo "$1: $2 changed nothing"; return 1; }
		promtool check rules "$d/srq.rules.yml" >/dev/null || { echo "$1: the broken copy does not load"; return 1; }
		run -1 promtool test rules "$d/srq.rules.test.yml"
		assert_output --partial "alertname: $3,"
		# What fired, as promtool lists it after "got:" (what the test
		# expected is listed before, under "exp:").
		got=$(awk '/got:\[\]/ { next } /got:\[/ { g = 1 } g { print } /^ *\]$/ { g = 0 }' <<<"$output")
		case $4 in
		fires) grep -qF "$5" <<<"$got" || { echo "$1: $5 did not fire"; return 1; } ;;
		missed) ! grep -qF "$5" <<<"$got" || { echo "$1: $5 fired"; return 1; } ;;
		esac
	}
	# A paused account's queue pages as not draining.
	mutate pause '/unless on (account) srq_paused == 1/d' SrqQueueNotDraining fires 'account="held"'
	# An open breaker pages twice: as itself and as a queue not draining.
	mutate breaker '/unless on (account) srq_breaker_open == 1/d' SrqQueueNotDraining fires 'account="broken"'
	# srq_up alone misses a textfile cron no longer rewrites (it keeps 1).
	mutate stale 's/time() - srq_last_success_timestamp_seconds > 300/srq_up == 0/' SrqMetricsStale \
		missed 'instance="stopped"'
	# Two failed calls in ten minutes are no failing account.
	mutate few-calls '/and on (account) increase(srq_calls_total\[10m\]) >= 10/d' SrqSuccessRatioLow \
		fires 'account="trickle"'
	mutate few-commands '/and on (account) increase(srq_commands_total\[10m\]) >= 10/d' \
		SrqRetryAmplificationHigh fires 'account="few"'
}

@test "the dashboard is a Grafana model: a datasource variable, an account variable, every panel on them" {
	run -0 jq -e . "$DASH"
	# The datasource is chosen on the dashboard (provisioned or imported
	# alike), the accounts come from the metrics.
	jq -e '.templating.list | map(select(.name == "datasource"))[0] | .type == "datasource" and .query == "prometheus"' "$DASH"
	jq -e '.templating.list | map(select(.name == "account"))[0] |
		.type == "query" and .multi and .includeAll and .datasource.uid == "${datasource}" and
		(.query.query | test("^label_values\\(srq_[a-z_]+, account\\)$"))' "$DASH"
	# Every panel queries through the variable, ids are unique, every panel
	# fits in the 24 columns of Grafana's grid.
	jq -e '[.panels[] | select(.type != "row")] | length >= 15 and
		all(.datasource.uid == "${datasource}" and (.targets | length > 0) and
		    all(.targets[]; .datasource.uid == "${datasource}" and (.expr | length > 0)) and
		    (.targets | map(.refId) | unique | length) == (.targets | length))' "$DASH"
	jq -e '[.panels[].id] | length == (unique | length)' "$DASH"
	jq -e 'all(.panels[]; .gridPos.x + .gridPos.w <= 24 and .gridPos.h > 0)' "$DASH"
	# Every query of a metric with an account label is the chosen
	# accounts' (the devices' queue and the file's own series have none).
	run jq -r '.panels[].targets[]?.expr | select(test("srq_(device|up|last_success)") | not) |
		select(test("account=~\"\\$account\"") | not)' "$DASH"
	assert_output ''
	# What the README's thresholds table pages on is on the dashboard.
	for m in srq_queued srq_due srq_oldest_due_seconds srq_confirming srq_frozen srq_qps_limit \
		srq_qps_effective srq_calls_total srq_outcomes_total srq_breaker_open srq_paused \
		srq_success_ratio srq_retry_amplification srq_version_conflict_ratio srq_flapping_cards \
		srq_alerts_open srq_device_queue srq_last_success_timestamp_seconds srq_up; do
		jq -e --arg m "$m" '[.panels[].targets[]?.expr | select(test($m + "\\b"))] | length > 0' "$DASH" >/dev/null ||
			{ echo "$m is on no panel"; false; }
	done
}

@test "every dashboard query and every rule runs on a real Prometheus scraping sr-stat after a drain" {
	need promtool prometheus python3
	redis_start
	# Lost answers (5xx after the change) leave unknown results that status
	# queries settle: every outcome panel, calls' and queries', has data.
	gwsim_start --fault-5xx-after 0.3 --seed 5
	stop_requests 12 2 | sr-enqueue >/dev/null
	drain_until_empty
	mkdir -p "$T/www"
	run -0 sr-stat --prom --output "$T/www/srq.prom"
	grep -q '^srq_query_outcomes_total{account="a0"' "$T/www/srq.prom"

	# node_exporter serves such a file over HTTP; a static server does
	# the same here.
	python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$T/www" >"$T/http.log" 2>&1 3>&-&
	echo $! >"$T/http.pid"
	for _ in $(seq 100); do grep -q '^Serving HTTP' "$T/http.log" && break; sleep 0.05; done
	http_port=$(sed -n 's/^Serving HTTP on [0-9.]* port \([0-9]*\).*/\1/p' "$T/http.log")
	[ -n "$http_port" ] || { cat "$T/http.log"; false; }
	cat >"$T/prometheus.yml" <<-EOF
		global:
		  scrape_interval: 1s
		  evaluation_interval: 1s
		rule_files:
		  - $RULES/srq.rules.yml
		scrape_configs:
		  - job_name: srq
		    metrics_path: /srq.prom
		    static_configs:
		      - targets: ['127.0.0.1:$http_port']
	EOF
	run -0 promtool check config "$T/prometheus.yml"
	prom_start
	# A few scrapes, so that rate() over a range has samples to work on.
	wait_query 'count_over_time(srq_up[1m]) >= 3'

	# The dashboard's queries as Grafana sends them with account a0 chosen
	# ($__rate_interval: a range of several scrapes).
	run -0 jq -r '.panels[].targets[]?.expr' "$DASH"
	exprs=$output
	n=0
	# shellcheck disable=SC2016 # (Grafana's variables, as written)
	while IFS= read -r e; do
		q=${e//'$__rate_interval'/1m}
		q=${q//'$__interval'/1m}
		q=${q//'${account}'/a0}
		q=${q//'$account'/a0}
		res=$(query "$q")
		jq -e '.status == "success" and (.data.result | length > 0)' <<<"$res" >/dev/null ||
			{ echo "no data for: $q"; echo "$res"; false; }
		n=$((n + 1))
	done <<<"$exprs"
	[ "$n" -ge 20 ]
	# ... and the account variable's values.
	run -0 curl -fsS -G "$PROM/api/v1/label/account/values" --data-urlencode \
		"match[]=$(jq -r '.templating.list[] | select(.name == "account") | .query.query |
			capture("label_values\\((?<m>[a-z_]+), account\\)").m' "$DASH")"
	jq -e '.data == ["a0", "a1"]' <<<"$output"

	# Prometheus loaded every rule and evaluated each on the scraped
	# series without an error.
	for _ in $(seq 100); do
		rules=$(curl -fsS "$PROM/api/v1/rules")
		jq -e '[.data.groups[].rules[] | select(.lastEvaluation | startswith("0001"))] | length == 0' \
			<<<"$rules" >/dev/null && break
		sleep 0.1
	done
	jq -e '[.data.groups[].rules[]] | length >= 14 and all(.health == "ok")' <<<"$rules" ||
		{ jq -c '.data.groups[].rules[] | select(.health != "ok") | {name, lastError}' <<<"$rules"; false; }
	# The per-account rate used is recorded from the scrape.
	res=$(query 'account:srq_rate_used:ratio{account="a0"}')
	jq -e '.data.result | length == 1' <<<"$res"
}

# prom_start: a Prometheus on a free loopback port with $T/prometheus.yml,
# its data in $T; its URL in PROM, once ready.
prom_start() {
	local port
	for _ in $(seq 10); do
		port=$((20000 + RANDOM % 30000))
		stop_pidfile "$T/prometheus.pid"
		prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
			--web.listen-address="127.0.0.1:$port" >"$T/prometheus.log" 2>&1 3>&- &
		echo $! >"$T/prometheus.pid"
		PROM="http://127.0.0.1:$port"
		for _ in $(seq 200); do
			curl -fsS "$PROM/-/ready" >/dev/null 2>&1 && return 0
			grep -q 'address already in use' "$T/prometheus.log" && break # another port
			sleep 0.05
		done
	done
	cat "$T/prometheus.log" >&2
	return 1
}

# query PROMQL: the API's answer, now.
query() {
	curl -sS -G "$PROM/api/v1/query" --data-urlencode "query=$1"
}

# wait_query PROMQL: until it has a result (20 s at most).
wait_query() {
	for _ in $(seq 200); do
		query "$1" | jq -e '.data.result | length > 0' >/dev/null && return 0
		sleep 0.1
	done
	echo "no result for $1" >&2
	return 1
}
