#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One pass on the first transmission (h-onepass; docs/performance.md): two
# builds side by side, alternating (the order flips every round), on a 2x1x1
# shm torus: dnp_bw 1 MiB and 4 KiB from the heap (MB/s), dnp_bw 1 MiB from
# private memory (DNP_APP_NOHEAP=1: the copying path, unchanged), and the
# 8-byte ping-pong (--pin, median half round trip in us). Each run holds the
# heavy-run lock alone.
#   bench/onepass-h-onepass.sh BASE_BUILD NEW_BUILD [ROUNDS] > out.csv
set -euo pipefail
base=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
rounds=${3:-7}
one() { # BUILD FIELD ARGS...
	local b=$1 f=$2
	shift 2
	timeout 120 flock /tmp/softdnp-heavy.lock "$b/apps/dnp-run" --torus 2x1x1 --transport shm \
		--timeout 60 "$@" 2>/dev/null | grep '^\[0,0,0\] [0-9]' | tail -1 | cut -d' ' -f2 |
		cut -d, -f"$f" || true
}
set_of() { # BUILD NAME ROUND
	local b=$1 n=$2 r=$3
	echo "$n,$r,bw-1M,$(one "$b" 3 -- dnp_bw --csv --sizes 1M --iters 2000)"
	echo "$n,$r,bw-4K,$(one "$b" 3 -- dnp_bw --csv --sizes 4K --iters 50000)"
	echo "$n,$r,bw-1M-private,$(DNP_APP_NOHEAP=1 one "$b" 3 -- dnp_bw --csv --sizes 1M --iters 1000)"
	echo "$n,$r,pp-8-us,$(one "$b" 4 --pin -- dnp_pingpong --csv --sizes 8 --iters 20000)"
}
echo "build,round,test,value"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		set_of "$base" old "$r"
		set_of "$new" new "$r"
	else
		set_of "$new" new "$r"
		set_of "$base" old "$r"
	fi
done
