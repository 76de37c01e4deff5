#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# expect-valiant.sh PROGRAM ARGS...: runs a lab scenario with --routing valiant and
# --csv. Passes only if the run is verified (exit 0: every message arrived byte-exact
# and completed exactly once, in a hop count from the torus distance to twice the
# diameter, no deadlock) and messages really went through intermediate nodes (counter
# detoured > 0, which counts longer-than-minimal arrivals): a run that ignored the
# option would otherwise pass as plain DOR.
# shellcheck source=tests/expect-lib.sh
. "$(dirname "$0")/expect-lib.sh"
expect_counted expect-valiant detoured "messages through an intermediate node" "$@"
