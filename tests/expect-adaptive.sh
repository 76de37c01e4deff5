#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# expect-adaptive.sh PROGRAM ARGS...: runs a lab scenario with --routing adaptive
# and --csv. Passes only if the run is verified (exit 0: every message arrived
# byte-exact and completed exactly once, no deadlock) and packets really took
# adaptive hops (counter adaptive_hops > 0): a run that ignored the option
# would otherwise pass as plain DOR.
# shellcheck source=tests/expect-lib.sh
. "$(dirname "$0")/expect-lib.sh"
expect_counted expect-adaptive adaptive_hops "adaptive hops" "$@"
