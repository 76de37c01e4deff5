#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# LO|FA|MO drills on the DPDK namespace testbed (docs/lofamo.md, "Drills over
# DPDK"): every scenario of tests/integration/drill.sh --transport dpdk
# (LOFAMO_SCENS picks fewer), RUNS times each; awareness,
# path, healing, commands. Root and a DPDK build. Each round takes the shared
# heavy-run lock for itself only.
#   bench/lofamo-dpdk.sh BUILD [RUNS]
# Writes bench/results/lofamo-dpdk-DATE.csv (every drill) and lofamo-dpdk-DATE.md.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "bench/lofamo-dpdk.sh: needs root (network namespaces)" >&2; exit 1; }
LOFAMO_TRANSPORTS=dpdk \
	LOFAMO_SCENS=${LOFAMO_SCENS:-"kill-dnpd kill-hfm both sensor svcnet-cut restart-hfm restart link-down sick-link"} \
	LOFAMO_NAME=lofamo-dpdk exec "$(dirname "${BASH_SOURCE[0]}")/lofamo-heal.sh" "$@"
