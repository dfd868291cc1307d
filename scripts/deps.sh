#!/bin/sh
# deps.sh - install srq's build and test dependencies from Debian's packages,
# only those that are missing. Needs root (or sudo) when something is missing.
# clang and libclang-rt-dev (libFuzzer and the sanitizers' runtimes) build
# the fuzz targets, make test runs a short smoke of them.
set -eu
pkgs="build-essential pkg-config libhiredis-dev libcurl4-openssl-dev libjansson-dev
libcsv-dev libmicrohttpd-dev libssl-dev redis-server redis-tools jq bats bats-support bats-assert curl valgrind
clang libclang-rt-dev"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps.sh: installing:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
