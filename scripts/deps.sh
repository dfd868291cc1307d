#!/bin/sh
# deps.sh - install srq's build and test dependencies from Debian's packages,
# only those that are missing. Needs root (or sudo) when something is missing.
# clang and libclang-rt-dev (libFuzzer and the sanitizers' runtimes) build
# the fuzz targets, make test runs a short smoke of them. prometheus is here
# for promtool (the metrics' format and the shipped rules are checked with
# it) and for its server, which tests/props/prometheus.bats runs on a loopback
# port to query the dashboard's panels (the package's service is not
# started); man-db and mandoc render and lint the man pages; time (GNU
# time) is how bench/core.sh reads one stage's CPU; parallel (GNU) lets bats run
# two test files at a time (tests/run); gdb stops a tool at a known point
# (a breakpoint) so that tests/props/device_attack.bats provokes its races exactly;
# python3 and openssl run tests/helpers/badcarrier, a misbehaving carrier
# (over TLS with a certificate made on the spot); python3 also serves
# sr-stat's textfile to that Prometheus, as node_exporter would. systemd
# brings systemd-analyze, which tests/props/systemd.bats verifies the shipped units
# with (nothing here starts it: a container may run no init at all).
set -eu
pkgs="build-essential pkg-config libhiredis-dev libcurl4-openssl-dev libjansson-dev
libcsv-dev libmicrohttpd-dev libssl-dev redis-server redis-tools jq bats bats-support bats-assert parallel curl valgrind
clang libclang-rt-dev prometheus man-db mandoc time gdb python3 openssl systemd"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps.sh: installing:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
# No service a package brings is started (prometheus): policy-rc.d says no
# for the time of the install, unless the machine already has its own.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
	$SUDO chmod 755 /usr/sbin/policy-rc.d
	trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
