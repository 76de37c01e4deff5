#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# expect-adaptive.sh PROGRAM ARGS...: runs a lab scenario with --routing adaptive
# and --csv. Passes only if the run is verified (exit 0: every message arrived
# byte-exact and completed exactly once, no deadlock) and packets really took
# adaptive hops (counter adaptive_hops > 0): a run that ignored the option
# would otherwise pass as plain DOR.
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 0 ]; then
	echo "expect-adaptive: exit status $rc, want 0" >&2
	exit 1
fi
hops=$(sed -n 's/^adaptive_hops,\([0-9]*\)$/\1/p' <<<"$out")
if [ -z "$hops" ] || [ "$hops" -eq 0 ]; then
	echo "expect-adaptive: no adaptive hops (adaptive_hops '${hops}')" >&2
	exit 1
fi
echo "expect-adaptive: verified, $hops adaptive hops"
exit 0
