#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# expect-deadlock.sh PROGRAM ARGS...: runs a lab scenario that must deadlock.
# Passes only if the program exits 1 and its report says DEADLOCK; a crash, a
# verification failure or a time-out is a failure of this test.
# shellcheck source=tests/expect-lib.sh
. "$(dirname "$0")/expect-lib.sh"
expect_run expect-deadlock 1 "$@"
if ! grep -q DEADLOCK <<<"$out"; then
	echo "expect-deadlock: no DEADLOCK in the report" >&2
	exit 1
fi
exit 0
