#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# expect-valiant.sh PROGRAM ARGS...: runs a lab scenario with --routing valiant and
# --csv. Passes only if the run is verified (exit 0: every message arrived byte-exact
# and completed exactly once, in a hop count from the torus distance to twice the
# diameter, no deadlock) and messages really went through intermediate nodes (counter
# detoured > 0, which counts longer-than-minimal arrivals): a run that ignored the
# option would otherwise pass as plain DOR.
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 0 ]; then
	echo "expect-valiant: exit status $rc, want 0" >&2
	exit 1
fi
n=$(sed -n 's/^detoured,\([0-9]*\)$/\1/p' <<<"$out")
if [ -z "$n" ] || [ "$n" -eq 0 ]; then
	echo "expect-valiant: no message took a longer route (detoured '${n}')" >&2
	exit 1
fi
echo "expect-valiant: verified, $n messages through an intermediate node"
exit 0
