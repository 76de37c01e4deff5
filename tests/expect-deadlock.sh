#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# expect-deadlock.sh PROGRAM ARGS...: runs a lab scenario that must deadlock.
# Passes only if the program exits 1 and its report says DEADLOCK; a crash, a
# verification failure or a time-out is a failure of this test.
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 1 ]; then
	echo "expect-deadlock: exit status $rc, want 1" >&2
	exit 1
fi
if ! grep -q DEADLOCK <<<"$out"; then
	echo "expect-deadlock: no DEADLOCK in the report" >&2
	exit 1
fi
exit 0
