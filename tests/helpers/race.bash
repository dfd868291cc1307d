# race.bash - provoke a race at a known point, for the *_attack.bats suites:
# a tool is stopped at a gdb breakpoint between its read and its write while
# another party runs. Load after test_helper.

# race_setup: skips (and says why) where gdb cannot stop a program.
race_setup() {
	command -v gdb >/dev/null || skip "gdb is not installed (scripts/deps.sh installs it)"
	# A machine that forbids tracing (a container's seccomp) cannot stop a
	# tool at a breakpoint: said, not failed.
	gdb -q -nx -batch -ex run /bin/true >/dev/null 2>&1 || skip "gdb cannot run a program here (ptrace refused)"
}

# stops FUNC TOOL ARGS SCRIPT=OUT...: TOOL with ARGS (one word list; stdin
# $T/in, stdout $T/out, stderr $T/err) under gdb, stopped each time it
# enters FUNC, once per SCRIPT: there SCRIPT runs (bash, its output in OUT),
# then TOOL goes on. The tool's exit code; 99 when it did not get there as
# often.
stops() {
	local func=$1 tool=$2 args=$3 p
	local -a ex=()
	shift 3
	[ -f "$T/in" ] || : >"$T/in"
	for p in "$@"; do
		ex+=(-ex "shell bash ${p%%=*} >${p#*=} 2>&1" -ex continue)
	done
	ex[${#ex[@]} - 1]=delete
	# (LeakSanitizer cannot run under a tracer: a sanitizer build's leak
	# check is off for this one run, the others keep it.)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" gdb -q -nx -batch -ex "break $func" \
		-ex "run $args <$T/in >$T/out 2>$T/err" "${ex[@]}" -ex 'continue' -ex 'quit $_exitcode' \
		"$(command -v "$tool")" >"$T/gdb.out" 2>&1
	local rc=$?
	[ "$(grep -c "^Breakpoint 1, $func" "$T/gdb.out")" -eq $# ] || { cat "$T/gdb.out" >&2; return 99; }
	return "$rc"
}

# at_break FUNC TOOL SCRIPT [ARGS...]: TOOL ARGS stopped the first time it
# enters FUNC, there SCRIPT run (its output in $T/script.out).
at_break() {
	local func=$1 tool=$2 script=$3
	shift 3
	stops "$func" "$tool" "$*" "$script=$T/script.out"
}

# at_breaks FUNC TOOL SCRIPT...: TOOL (no arguments) stopped the first time
# it enters FUNC for the first SCRIPT, the next time for the next one, and
# so on (each one's output in SCRIPT.out).
at_breaks() {
	local func=$1 tool=$2 s
	local -a p=()
	shift 2
	for s in "$@"; do
		p+=("$s=$s.out")
	done
	stops "$func" "$tool" "" "${p[@]}"
}

# at_write TOOL SCRIPT [ARGS...]: at_break at TOOL's first sr_cmds_append,
# that is, after it read and judged the facts and before it writes the
# commands.
at_write() {
	local tool=$1 script=$2
	shift 2
	at_break sr_cmds_append "$tool" "$script" "$@"
}

# final_state CARD: the card's state at the carrier in the end (from its
# initial state, $T/gw-cards.jsonl, and sr-gwsim's log).
final_state() {
	gwcheck states "$T/gw.log" "$T/gw-cards.jsonl" | jq -r --arg c "$1" 'select(.card == $c) | .status'
}
