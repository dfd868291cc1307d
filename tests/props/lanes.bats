#!/usr/bin/env bats
# lanes.bats - the urgent work inside a backlog: a status query due, the
# retry of a call the carrier did not apply, and a paying user's command go
# before the backlog's next calls, whatever is queued or already claimed;
# checked at the carrier, in the order of its log.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	export SRQ_QPS=5
}

# stops SCENE PREFIX N: stop requests for cards PREFIX001..PREFIX(N).
stops() {
	awk -v s="$1" -v p="$2" -v n="$3" -v past="$PAST" 'BEGIN { for (i = 1; i <= n; i++)
		printf "{\"card\":\"%s%03d\",\"carrier\":\"c1\",\"scene\":\"%s\",\"facts\":{\"pkg_expires_at\":%d,\"status\":\"active\"}}\n", p, i, s, past }' |
		sr-enqueue >/dev/null
}

# ahead_of CARD KIND SINCE: how many calls of the backlog (cards B...) the
# carrier got from SINCE (ms) until CARD's first KIND (stop, status) since.
ahead_of() {
	jq -s --arg c "$1" --arg k "$2" --argjson since "$3" '
		([.[] | select(.card == $c and .kind == $k and .t >= $since)][0].t) as $at
		| if $at == null then "never" else
			[.[] | select((.card | startswith("B")) and .t >= $since and .t < $at)] | length end' \
		"$T/gw.log"
}

# retry_and_query SECONDS: T001's stop refused for rate (not applied: it
# goes again after the carrier's Retry-After of SECONDS), Q001's accepted
# (its status query goes a poll later): both bulk, both due again soon.
retry_and_query() {
	gwsim_start --fault-429 1 --retry-after "$1"
	stops reset T 1
	sr-claim --max 1 | sr-exec | sr-confirm >/dev/null
	gwsim_start --async-ms 600000
	stops reset Q 1
	sr-claim --max 1 | sr-exec | sr-confirm >/dev/null
}

# in_flight: what the account may have claimed at once (claim.lua): a
# second's worth of calls at its rate, and those its calls keep out (the
# edge's measured time from gate to result). A task due, or of a higher
# lane, waits for those at most, and for the call that frees its room.
in_flight() {
	local lat
	lat=$(rcli HGET 't:carrier:{c1}:edge' lat)
	echo $(( (SRQ_QPS * (1000 + ${lat:-0}) + 999) / 1000 + 1 ))
}

@test "the claim takes a status query due, then a retry due, then high priority, then the backlog" {
	profiles 'from = default' 'accounts = *' 'poll_ms = 500'
	retry_and_query 1
	stops reset B 30
	stops order H 1
	# Both due again (the retry after the carrier's Retry-After, the query
	# a poll after its acceptance), behind 30 bulk stops due before them.
	for _ in $(seq 50); do
		now=$(rcli TIME | head -1)000
		[ "$(rcli ZCOUNT 't:carrier:{c1}:stop_resume:bulk' -inf "$now")" -ge 32 ] && break
		sleep 0.1
	done
	run -0 sr-claim --max 4 --batch 4
	assert_equal "$(echo "$output" | jq -r '"\(.card) \(.lane) \(.task)"' | paste -sd,)" \
		"Q001 query query,T001 retry call,H001 high call,B001 bulk call"
}

@test "sr-exec sends a task of a higher lane before the lower ones it holds" {
	gwsim_start
	stops reset B 5
	# (claimed at a rate that lets five go at once; sent at one a second)
	SRQ_QPS=10 sr-claim --max 5 >"$T/tasks"
	stops order H 1
	SRQ_QPS=10 sr-claim --max 1 >>"$T/tasks"
	# H001 comes last, behind five bulk stops that wait a second each: it
	# goes first (or second, had the first been sent before it was read).
	SRQ_QPS=1 sr-exec <"$T/tasks" | sr-confirm >/dev/null
	pos=$(jq -r .card "$T/gw.log" | grep -n H001 | cut -d: -f1)
	[ "$pos" -le 2 ] || { echo "H001 was call $pos: $(jq -r .card "$T/gw.log" | paste -sd' ')"; false; }
	assert_equal "$(jq -r .card "$T/gw.log" | sort | paste -sd' ')" "B001 B002 B003 B004 B005 H001"
}

@test "a status query due and a throttled retry go before the backlog's next calls" {
	# T's call is refused for rate (not applied: it goes again after the
	# carrier's Retry-After), Q's is accepted (a query asks in poll_ms):
	# both are due again in about 2 s, behind 60 bulk stops due now.
	# (Q's stop is then not landed at the carrier: its query shows that,
	# and after settle_ms it is called again.)
	profiles 'from = default' 'accounts = *' 'settle_ms = 1000'
	retry_and_query 2
	gwsim_start
	stops reset B 60
	t_due=$(rcli ZSCORE 't:carrier:{c1}:stop_resume:bulk' T001)
	q_due=$(rcli ZSCORE 't:carrier:{c1}:stop_resume:bulk' Q001)
	run -0 sr-admin show Q001
	assert_equal "$(echo "$output" | jq -r .command.confirming)" 1
	sr-claim --until-empty --for 30 | sr-exec | sr-confirm >/dev/null
	# Once due, each went within the calls already on their way; behind
	# the backlog, 60 would have gone.
	most=$(in_flight)
	n=$(ahead_of T001 stop "$t_due")
	[ "$n" != never ] && [ "$n" -le "$most" ] || { echo "T001's retry went after $n backlog calls"; false; }
	n=$(ahead_of Q001 status "$q_due")
	[ "$n" != never ] && [ "$n" -le "$most" ] || { echo "Q001's query went after $n backlog calls"; false; }
	# And the backlog was drained, within the rate and the interval.
	assert_equal "$(jq -s '[.[] | select((.card | startswith("B")) and .kind == "stop" and .applied)] | length' "$T/gw.log")" 60
	run gwcheck rate "$T/gw.log" 5
	assert_output ''
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "a paying user's stop arriving while the backlog is claimed goes ahead of it" {
	gwsim_start
	stops reset B 60
	sr-claim --until-empty --for 30 | sr-exec | sr-confirm >/dev/null &
	pipeline=$!
	# The backlog under way: calls at the carrier, more claimed and waiting.
	for _ in $(seq 100); do [ "$(wc -l <"$T/gw.log")" -ge 5 ] && break; sleep 0.1; done
	# (since: before its request, not after its ack: a stop that goes at
	# once may reach the carrier before the shell reads the clock)
	since=$(date +%s%3N)
	stops order H 1
	wait "$pipeline"
	n=$(ahead_of H001 stop "$since")
	most=$(in_flight)
	[ "$n" != never ] && [ "$n" -le "$most" ] || { echo "H001 went after $n backlog calls"; false; }
	run gwcheck rate "$T/gw.log" 5
	assert_output ''
}

@test "claims in flight stay within what the account sends in a second and while its calls are out" {
	gwsim_start --latency-ms 200
	stops reset B 60
	# (max-running would allow 20 at once: the rate allows fewer)
	run -0 sr-claim
	n=$(echo "$output" | wc -l)
	[ "$n" -ge 1 ] && [ "$n" -le 5 ] || { echo "$n claimed at once at 5 a second"; false; }
	# Calls that stay out longer at the carrier let more be claimed: the
	# account's rate is still used fully.
	sr-claim --until-empty --for 30 | sr-exec | sr-confirm >/dev/null
	lat=$(rcli HGET 't:carrier:{c1}:edge' lat)
	[ "$lat" -ge 200 ]
	assert_equal "$(jq -s '[.[] | select(.kind == "stop" and .applied)] | length' "$T/gw.log")" 60
}

@test "a task's lane is checked: a bad one is refused, one without a lane takes its scene's" {
	gwsim_start
	run -1 --separate-stderr sr-exec < <(printf '%s\n' \
		'{"task":"call","card":"X1","carrier":"c1","action":"stop","ver":1,"token":"1-a","lane":"fast"}' \
		'{"task":"call","card":"X2","carrier":"c1","action":"stop","ver":1,"token":"1-b","lane":3}')
	assert_equal "$(echo "$output" | jq -r .error | sort -u)" 'bad "lane": one of query retry high normal bulk'
	[[ $stderr == *'bad "lane"'* ]]
}

@test "normal and bulk work leave a room free: a paying user's stop is claimed while the backlog fills the rest" {
	gwsim_start
	stops reset B 30
	# At 5 a second, five in flight at most; the backlog takes four.
	run -0 sr-claim --batch 64
	assert_equal "$(echo "$output" | wc -l)" 4
	run -0 sr-claim
	assert_output ''
	stops order H 1
	run -0 sr-claim
	assert_equal "$(echo "$output" | jq -r '"\(.card) \(.lane)"')" "H001 high"
}
