#!/usr/bin/env bats
# config.bats - one config file (SRQ_CONFIG, or /etc/srq/srq.conf) that
# cron and an interactive shell both read, so they see the same settings;
# the environment overrides it, flags override both, and sr-admin config
# says what each setting is and where it came from.

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	srq_setup
	# The cron job's settings, in the file only.
	unset SRQ_MIN_INTERVAL_MS
	printf '%s\n' '# srq settings' "SRQ_REDIS = $SRQ_REDIS" 'SRQ_PREFIX=t' '' \
		'SRQ_MIN_INTERVAL_MS = 577000' >"$T/srq.conf"
	unset SRQ_REDIS
	export SRQ_CONFIG="$T/srq.conf"
}

@test "an interactive why sees the interval the cron job's config file sets" {
	gwsim_start
	printf '{"card":"K1","carrier":"c1","scene":"package_expired","facts":{"pkg_expires_at":%d,"status":"active"}}\n' "$PAST" | sr-enqueue >/dev/null
	drain 10 >/dev/null
	printf '{"card":"K1","carrier":"c1","scene":"polling","facts":{"pkg_expires_at":%d,"status":"stopped"}}\n' "$FUTURE" | sr-enqueue >/dev/null
	run -0 sr-admin why K1
	assert_equal "$(jq -r .state <<<"$output")" interval
	# 577 s of interval: next allowed in 9 minutes and some.
	assert_output --regexp 'next allowed at [0-9T:-]+Z \(in 9m[0-9]{2}s\)'
}

@test "environment over file, flags over both; sr-admin config says where each came from, secrets redacted" {
	run -0 sr-admin config
	assert_line '{"setting":"SRQ_MIN_INTERVAL_MS","value":"577000","from":"'"$T"'/srq.conf:5"}'
	assert_line '{"setting":"SRQ_QPS","value":"10","from":"default"}'
	SRQ_MIN_INTERVAL_MS=1000 SRQ_REDIS_PASSWORD=hunter2 run -0 sr-admin config --prefix other
	assert_line '{"setting":"SRQ_MIN_INTERVAL_MS","value":"1000","from":"environment"}'
	assert_line '{"setting":"SRQ_PREFIX","value":"other","from":"--prefix"}'
	assert_line '{"setting":"SRQ_REDIS_PASSWORD","value":"(set, redacted)","from":"environment","secret":"set"}'
	refute_output --partial hunter2
}

@test "a bad config file is exit 2 naming the file and line; a password does not belong in it" {
	echo 'SRQ_MIN_INTERVAL = 5' >>"$T/srq.conf"
	run -2 sr-admin config
	assert_output --partial "srq.conf: line 6: unknown setting 'SRQ_MIN_INTERVAL'"
	sed -i '$d' "$T/srq.conf"
	echo 'SRQ_REDIS_PASSWORD = hunter2' >>"$T/srq.conf"
	run -2 sr-enqueue </dev/null
	assert_output --partial 'does not belong in a config file'
	refute_output --partial hunter2
	sed -i '$d' "$T/srq.conf"
	echo 'SRQ_QPS = 12x' >>"$T/srq.conf"
	run -2 sr-enqueue </dev/null
	assert_output --partial "SRQ_QPS: '12x'"
	SRQ_CONFIG="$T/missing.conf" run -2 sr-stat
	assert_output --partial 'missing.conf'
}
