#!/usr/bin/env bats
# attack_settle.bats - defects found by attacking the outstanding change
# ('out') at asynchronous carriers. Checked at the carrier (sr-gwsim's log).

bats_require_minimum_version 1.5.0

load ../test_helper

@test "an asynchronous carrier that took a stop and answered 5xx, then a renewal: the stop lands, and the card is resumed after it" {
	# The carrier accepts every change and lands it later. It has answered
	# one "in progress" (202) already, so srq knows it is asynchronous.
	# Then it takes K1's stop and answers a 500 (5xx after applying): an
	# unknown result. The renewal turns the command into a resume while the
	# stop is on its way; a query that still shows the card active is not
	# the stop having failed: it is still landing.
	profiles 'from = default' 'accounts = *' 'poll_ms = 200' 'settle_ms = 8000'
	printf '{"card":"%s","status":"active"}\n' K0 K1 >"$T/gw-cards.jsonl"
	gwsim_start --cards "$T/gw-cards.jsonl" --async-ms 100
	printf '{"card":"K0","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
	drain_until_empty
	assert_equal "$(jq -r 'select(.kind == "stop") | .http' "$T/gw.log")" 202
	gwsim_start --cards "$T/gw-cards.jsonl" --async-ms 1500 --fault-5xx-after 1
	printf '{"card":"K1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' \
		"$PAST" | sr-enqueue >/dev/null
	run -0 bash -c 'sr-claim --max 1 | sr-exec | sr-confirm'
	assert_equal "$(jq -r '"\(.outcome) \(.state)"' <<<"$output")" "unknown confirming"
	run -0 sr-enqueue <<<"{\"card\":\"K1\",\"carrier\":\"c1\",\"scene\":\"order\",\"facts\":{\"pkg_expires_at\":$FUTURE}}"
	assert_equal "$(jq -r '"\(.status) \(.action)"' <<<"$output")" "queued resume"
	run bash -c 'sr-claim --follow --for 8 | sr-exec | sr-confirm'
	# The customer renewed: the card ends active at the carrier.
	assert_equal "$(gwcheck states "$T/gw.log" /dev/null | jq -r 'select(.card == "K1") | .status')" active
	assert_equal "$(k1_story)" "stop apply:stopped resume apply:active"
}

@test "a stop srq made at an asynchronous carrier is srq's: the renewal resumes the card" {
	# A1 was once stopped by hand, then resumed by hand: the export says it
	# is active (its stopped_by is as it was). Its package expires and srq
	# stops it; the carrier accepts the stop and lands it later. The stop
	# is srq's own (it landed before the first query), as it is at a
	# carrier that answers at once: when the customer renews, the card is
	# resumed.
	profiles 'from = default' 'accounts = *' 'poll_ms = 200' 'settle_ms = 5000'
	echo '{"card":"A1","status":"active"}' >"$T/gw-cards.jsonl"
	gwsim_start --cards "$T/gw-cards.jsonl" --async-ms 50
	printf '{"card":"A1","carrier":"c1","pkg_expires_at":%d,"status":"stopped","stopped_by":"manual"}\n' "$FUTURE" | sr-asset >/dev/null
	echo '{"card":"A1","carrier":"c1","status":"active"}' | sr-asset >/dev/null
	run -0 sr-enqueue <<<"{\"card\":\"A1\",\"carrier\":\"c1\",\"scene\":\"package_expired\",\"facts\":{\"pkg_expires_at\":$PAST}}"
	assert_equal "$(jq -r '"\(.status) \(.action)"' <<<"$output")" "queued stop"
	drain_until_empty
	assert_equal "$(gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" | jq -r .status)" stopped
	run -0 sr-enqueue <<<"{\"card\":\"A1\",\"carrier\":\"c1\",\"scene\":\"order\",\"facts\":{\"pkg_expires_at\":$FUTURE}}"
	assert_equal "$(jq -r '"\(.status) \(.action)"' <<<"$output")" "queued resume"
}
