# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# expect-lib.sh: the functions of the expect-*.sh test scripts (bash, sourced):
# each runs a lab scenario and judges its exit status and report.

# expect_run NAME WANT PROGRAM ARGS...: runs the program, prints its output and
# keeps it in $out; exits 1 (the test fails) unless it exited with status WANT.
expect_run() {
	local name=$1 want=$2 rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	if [ "$rc" -ne "$want" ]; then
		echo "$name: exit status $rc, want $want" >&2
		exit 1
	fi
}

# expect_counted NAME COUNTER WHAT PROGRAM ARGS...: the run is verified (exit
# 0: every message arrived byte-exact and completed exactly once, no deadlock)
# and the line COUNTER,N of its --csv report has N > 0 (WHAT names the N
# things counted, in the messages); else exits 1.
expect_counted() {
	local name=$1 counter=$2 what=$3 n
	shift 3
	expect_run "$name" 0 "$@"
	n=$(sed -n "s/^$counter,\([0-9]*\)\$/\1/p" <<<"$out")
	if [ -z "$n" ] || [ "$n" -eq 0 ]; then
		echo "$name: no $what ($counter '${n}')" >&2
		exit 1
	fi
	echo "$name: verified, $n $what"
	exit 0
}
