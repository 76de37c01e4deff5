#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Side by side for "shm: one publish path" (docs/performance.md): the 8-byte
# ping-pong (dnp_pingpong, median us; the copying tx_burst) and the 1 MiB
# stream from the heap (dnp_bw, MB/s; the one-pass tx_reserve/tx_commit)
# over shm on 2x1x1, BASE and NEW build alternating (which goes first
# alternates too), each run alone under the shared heavy-run lock.
#   bench/shm-publish-sbs.sh BASE_BUILD NEW_BUILD [ROUNDS] > rows.csv
# Rows: build,round,test,value
set -euo pipefail
base=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
rounds=${3:-7}
one() { # BUILD FIELD ARGS...
	local b=$1 field=$2
	shift 2
	flock /tmp/softdnp-heavy.lock timeout 120 "$b/apps/dnp-run" --torus 2x1x1 --transport shm \
		--timeout 60 -- "$@" 2>/dev/null | grep '^\[0,0,0\] [0-9]' | tail -1 | cut -d' ' -f2 |
		cut -d, -f"$field"
}
echo "build,round,test,value"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
	for which in $order; do
		b=$base
		[ "$which" = new ] && b=$new
		echo "$which,$r,pp-8,$(one "$b" 4 dnp_pingpong --csv --sizes 8 --iters 20000)"
		echo "$which,$r,bw-1M,$(one "$b" 3 dnp_bw --csv --sizes 1M --iters 1000)"
	done
done
