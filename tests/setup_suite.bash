# setup_suite.bash - what a whole bats run shares: with SRQ_TEST_REDIS=cluster
# the Redis Clusters that serve test after test, one for each file run at
# once (tests/test_helper.bash), killed once the run is over.
#
# bats looks for it beside the first file or directory it is given: the
# suites' directories (tests/tools, tests/props) have one each that sources
# this one, and tests/run names this one (--setup-suite-file) whatever it
# runs.

setup_suite() {
	:
}

teardown_suite() {
	local f
	for f in "$BATS_RUN_TMPDIR"/cluster.*/*/redis.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	return 0
}
