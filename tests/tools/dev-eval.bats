#!/usr/bin/env bats
# dev-eval.bats - device evaluation: merging, one more pass, consistency, races.

bats_require_minimum_version 1.5.0

load ../test_helper

# A device D1 with cards K1 (c1), K2 (c2), K3 (c1, its own package expired).
device_with_cards() {
	sr-asset >/dev/null <<-EOF
	{"card":"K1","carrier":"c1","device":"D1","pkg_expires_at":$FUTURE,"status":"active"}
	{"card":"K2","carrier":"c2","device":"D1","pkg_expires_at":$FUTURE,"status":"active"}
	{"card":"K3","carrier":"c1","device":"D1","pkg_expires_at":$PAST,"status":"active"}
	{"device":"D1","pkg_expires_at":$FUTURE}
	EOF
	for k in K1 K2 K3; do printf '{"card":"%s","status":"active"}\n' $k; done >"$T/gw-cards.jsonl"
}

# No device left in any shard's queue.
assert_device_queues_empty() {
	local s
	for s in $(seq 0 15); do assert_equal "$(rcli ZCARD "t:device_eval:{d$s}:queue")" 0; done
}

device_request() { # device_request SCENE...
	for s in "$@"; do printf '{"device":"D1","scene":"%s","source":"test"}\n' "$s"; done | sr-enqueue >/dev/null
}

@test "a burst of device requests merges into one evaluation; the device's cards end consistent" {
	device_with_cards
	gwsim_start --cards "$T/gw-cards.jsonl"
	# The device package expires, and four requests arrive at once.
	printf '{"device":"D1","pkg_expires_at":%d}\n' "$PAST" | sr-asset >/dev/null
	device_request device device_package_expired order reset
	run -0 dev-eval
	assert_equal "$(echo "$output" | wc -l)" 1
	assert_equal "$(echo "$output" | jq -r '.scenes | sort | join(" ")')" "device device_package_expired order reset"
	assert_equal "$(echo "$output" | jq -r '[.state, .ver] | join(" ")')" "done 4"
	# Every card stops, for the device's reason (it comes first), in the high class (order).
	assert_equal "$(echo "$output" | jq -r '.cards[] | "\(.card) \(.action) \(.reason)"' | sort | tr '\n' ',')" \
		"K1 stop device_package_expired,K2 stop device_package_expired,K3 stop device_package_expired,"
	run -0 drain 20
	assert_equal "$(gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" | jq -r .status | sort -u)" stopped
	# The device package is renewed: its cards resume, but K3's own package
	# is still expired, and a card-level reason is honoured per card.
	printf '{"device":"D1","pkg_expires_at":%d}\n' "$FUTURE" | sr-asset >/dev/null
	device_request order
	run -0 dev-eval
	assert_equal "$(echo "$output" | jq -r '.cards[] | "\(.card) \(.action)"' | sort | tr '\n' ',')" \
		"K1 resume,K2 resume,K3 none,"
	run -0 drain 20
	assert_equal "$(gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" | jq -r '"\(.card) \(.status)"' | sort | tr '\n' ',')" \
		"K1 active,K2 active,K3 stopped,"
	run gwcheck interval "$T/gw.log" "$GW_INTERVAL_MS"
	assert_output ''
}

@test "a device facts key damaged by hand: nothing is queued, the line says why, exit 3, and the device waits to be evaluated again" {
	device_with_cards
	rcli DEL t:device:D1:facts >/dev/null
	rcli SET t:device:D1:facts clobbered >/dev/null
	device_request order
	run -3 --separate-stderr dev-eval
	assert_equal "$(echo "$output" | jq -r '"\(.state) \(.error) \(.cards // [] | length)"')" \
		"retry device facts not read: WRONGTYPE Operation against a key holding the wrong kind of value 0"
	[[ $stderr == *"device 'D1': device facts not read: WRONGTYPE"* ]]
	for q in stop_resume:high stop_resume stop_resume:bulk; do
		assert_equal "$(rcli ZCARD "t:carrier:{c1}:$q")" 0
	done
	# Repaired, the device is evaluated as it should have been.
	rcli DEL t:device:D1:facts >/dev/null
	printf '{"device":"D1","pkg_expires_at":%d}\n' "$FUTURE" | sr-asset >/dev/null
	for _ in $(seq 50); do
		run -0 dev-eval
		[ -n "$output" ] && break
		sleep 0.1
	done
	assert_equal "$(echo "$output" | jq -r .state)" done
}

@test "a request arriving during an evaluation causes exactly one more pass" {
	device_with_cards
	device_request device
	# Hold the device lock for a moment so the evaluation is in progress
	# (claimed, waiting for the lock) when the next request comes in.
	rcli SET t:device:D1:lock someone-else PX 1000 >/dev/null
	dev-eval --until-empty --for 20 >"$T/out" &
	pid=$!
	# Once it has claimed the device (and waits for the lock), a request comes in.
	key="t:device_eval:{d$(rcli --scan --pattern 't:device_eval:*:dev:D1' | sed 's/.*{d\([0-9]*\)}.*/\1/')}:dev:D1"
	for i in $(seq 100); do [ "$(rcli HEXISTS "$key" claim)" = 1 ] && break; sleep 0.02; done
	[ "$(rcli HEXISTS "$key" claim)" = 1 ]
	device_request order
	wait "$pid"
	assert_equal "$(jq -r '"\(.ver) \(.state) \(.scenes | sort | join("+"))"' "$T/out" | tr '\n' ',')" \
		"1 again device,2 done order,"
	assert_device_queues_empty
	run -0 dev-eval --until-empty --for 5
	assert_output ''
}

@test "two dev-eval processes racing over 200 devices: each evaluated once per version, none lost" {
	for d in $(seq 200); do
		printf '{"card":"A%d","carrier":"c%d","device":"D%d","pkg_expires_at":%d,"status":"active"}\n' "$d" $((d % 3)) "$d" "$FUTURE"
		printf '{"card":"B%d","carrier":"c%d","device":"D%d","pkg_expires_at":%d,"status":"active"}\n' "$d" $((d % 5)) "$d" "$FUTURE"
		printf '{"device":"D%d","disabled":1}\n' "$d"
	done | sr-asset >/dev/null
	for d in $(seq 200); do printf '{"device":"D%d","scene":"device"}\n' "$d"; done | sr-enqueue >/dev/null
	dev-eval --until-empty --for 60 --batch 1 >"$T/a" &
	a=$!
	dev-eval --until-empty --for 60 --batch 1 >"$T/b" &
	b=$!
	wait "$a" "$b"
	# Both took part, and together they evaluated every device exactly once.
	[ -s "$T/a" ] && [ -s "$T/b" ]
	assert_equal "$(cat "$T/a" "$T/b" | jq -r .device | sort | uniq -d)" ''
	assert_equal "$(cat "$T/a" "$T/b" | jq -r 'select(.state == "done") | .device' | sort -u | wc -l)" 200
	assert_equal "$(cat "$T/a" "$T/b" | jq -r '.cards[].status' | sort | uniq -c | awk '{print $2 "=" $1}')" "queued=400"
	# No card command was written twice: one audit entry per card, version 1.
	total=0
	for c in 0 1 2 3 4; do total=$((total + $(rcli XLEN "t:carrier:{c$c}:audit"))); done
	assert_equal "$total" 400
	assert_device_queues_empty
}

@test "a request that moves a card to another device makes it that device's member, and no longer the old one's" {
	sr-asset >/dev/null <<-EOF
	{"card":"X","carrier":"c1","device":"D1","status":"active","pkg_expires_at":$FUTURE}
	{"card":"Y","carrier":"c1","device":"D2","status":"active","pkg_expires_at":$FUTURE}
	{"device":"D2","pkg_expires_at":$FUTURE}
	EOF
	printf '{"card":"X","carrier":"c1","scene":"order","facts":{"device":"D2"}}\n' | sr-enqueue >/dev/null
	assert_equal "$(rcli SMEMBERS t:device:D2:cards | sort | paste -sd' ') $(rcli SCARD t:device:D1:cards)" "X Y 0"
	printf '{"device":"D2","scene":"device_package_expired","facts":{"pkg_expires_at":%d}}\n' "$PAST" |
		sr-enqueue >/dev/null
	run -0 dev-eval --until-empty --for 5
	assert_equal "$(jq -r '[.cards[] | select(.action == "stop") | .card] | sort | join(" ")' <<<"$output")" "X Y"
	# A card first known from a request is its device's member too.
	printf '{"card":"N","carrier":"c1","scene":"order","facts":{"device":"D3","pkg_expires_at":%d}}\n' "$FUTURE" |
		sr-enqueue >/dev/null
	assert_equal "$(rcli SMEMBERS t:device:D3:cards)" N
}

@test "a device request's facts are seen by a card request after it in the same input" {
	sr-asset >/dev/null <<-EOF
	{"card":"B","carrier":"c1","device":"D1","status":"active","pkg_expires_at":$FUTURE}
	{"device":"D1","pkg_expires_at":$FUTURE}
	EOF
	run -0 sr-enqueue <<-EOF
	{"device":"D1","scene":"device_package_expired","facts":{"pkg_expires_at":$PAST}}
	{"card":"B","carrier":"c1","scene":"polling"}
	EOF
	assert_equal "$(jq -r '"\(.status) \(.action // "") \(.reason // "")"' <<<"$output" | paste -sd,)" \
		"device_queued  ,queued stop device_package_expired"
}

@test "a device request after a request that made a card its member sees the member, as in two inputs" {
	run -0 sr-enqueue <<-EOF
	{"card":"K1","carrier":"c1","scene":"order","facts":{"pkg_expires_at":$FUTURE,"status":"active","device":"DX"}}
	{"device":"DX","scene":"device"}
	EOF
	assert_equal "$(jq -r .status <<<"$output" | paste -sd' ')" "noop device_queued"
}

@test "--max below the number of device shards still evaluates a due device, whatever its shard" {
	for d in D1 D2 D3; do
		printf '{"device":"%s","scene":"device","facts":{"disabled":0}}\n' "$d"
	done | sr-enqueue >/dev/null
	run -0 dev-eval --max 1
	assert_equal "$(jq -r .state <<<"$output")" done
	run -0 dev-eval --max 2
	assert_equal "$(jq -r .state <<<"$output" | paste -sd' ')" "done done"
}

@test "SIGTERM stops dev-eval --follow after the devices it claimed, exit 0" {
	device_with_cards
	device_request device_package_expired
	dev-eval --follow >"$T/evals" 2>"$T/eval.err" &
	pid=$!
	for i in $(seq 100); do [ -s "$T/evals" ] && break; sleep 0.05; done
	kill -TERM "$pid"
	start=$(date +%s%3N)
	wait "$pid"
	[ $(($(date +%s%3N) - start)) -lt 2000 ]
	assert_equal "$(jq -r '"\(.device) \(.state)"' "$T/evals")" "D1 done"
	assert_device_queues_empty
	[ ! -s "$T/eval.err" ]
}
