#!/usr/bin/env bats
# systemd.bats - the systemd units (share/systemd), the other way to run srq
# than the crontab: make install-units puts them where systemd looks, their
# paths set, and every one passes systemd-analyze verify (scripts/deps.sh
# installs systemd for it).

bats_require_minimum_version 1.5.0

load ../test_helper

setup() {
	T="$BATS_TEST_TMPDIR"
	UNITS="srq-drain.service srq-dev-eval.service srq-scan.service srq-scan.timer srq-sweep.service
		srq-sweep.timer srq-stat.service srq-stat.timer srq-notify@.service"
}

@test "make install-units: every unit, its paths set, passes systemd-analyze verify" {
	# Installed for real under a prefix of the test's own: verify checks
	# that each command it names is there.
	make -s -C "$PROJECT_ROOT" install install-units PREFIX="$T/usr" >/dev/null
	cd "$T/usr/lib/systemd/system"
	assert_equal "$(ls | sort | paste -sd' ')" "$(printf '%s\n' $UNITS | sort | paste -sd' ')"
	run grep -l '@[A-Z]*@' $UNITS
	assert_output ''
	grep -q "^ExecStart=$T/usr/bin/srq-drain --follow$" srq-drain.service
	# (what they run runs with systemd's PATH, the wrappers' library apart)
	for t in srq-drain srq-expiry-scan srq-page; do
		run -0 env -i PATH=/usr/bin:/bin "$T/usr/bin/$t" --version
	done
	run -0 --separate-stderr systemd-analyze verify --man=no $UNITS
	[ -z "$stderr$output" ] || { echo "$stderr$output"; false; }
	# Every unit that runs a job pages through the notify template (its
	# failures: verify does not look for the units OnFailure= names).
	for u in srq-drain.service srq-dev-eval.service srq-scan.service srq-sweep.service srq-stat.service; do
		grep -q '^OnFailure=srq-notify@%n.service$' "$u" || { echo "$u: no OnFailure"; false; }
	done
	# The two that run on: restarted on failure, stopped by SIGTERM to the
	# main process alone (srq-drain passes it to sr-claim).
	for u in srq-drain.service srq-dev-eval.service; do
		grep -q '^Restart=on-failure$' "$u" && grep -q '^KillMode=mixed$' "$u" ||
			{ echo "$u: Restart/KillMode"; false; }
	done
	for t in scan sweep stat; do grep -q '^OnCalendar=' "srq-$t.timer"; done
	# verify does find what is wrong: a key misspelt, a command missing.
	sed -e 's/^Restart=/Restrat=/' -e "s|$T/usr/bin/srq-drain|$T/usr/bin/no-such|" srq-drain.service >"$T/bad.service"
	run systemd-analyze verify --man=no "$T/bad.service"
	assert_output --partial "Unknown key 'Restrat'"
	assert_output --partial "no-such"
}

@test "make install-units honours DESTDIR and UNITDIR; the paths in the units are where the tools will be" {
	make -s -C "$PROJECT_ROOT" install-units DESTDIR="$T/stage" PREFIX=/opt/srq >/dev/null
	grep -q '^ExecStart=/opt/srq/bin/sr-sweep$' "$T/stage/opt/srq/lib/systemd/system/srq-sweep.service"
	grep -q '/opt/srq/bin/srq-page --status' "$T/stage/opt/srq/lib/systemd/system/srq-notify@.service"
	make -s -C "$PROJECT_ROOT" install-units DESTDIR="$T/stage" UNITDIR=/etc/systemd/system >/dev/null
	[ -s "$T/stage/etc/systemd/system/srq-drain.service" ]
}
