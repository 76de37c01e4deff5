#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Presto figures: eager vs rendez-vous ping-pong per size (the switch-over),
# eager by ring PUT vs by SEND, and the raw dnp_pingpong beside them, over shm
# and udp on a 2x1x1 torus, in one run.
# usage: bench/mpi-presto.sh BUILD_DIR   -> bench/results/mpi-presto-<date>.md
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
run=$build/apps/dnp-run
out=$top/bench/results/mpi-presto-$(date -u +%Y-%m-%d).md
tmp=$(mktemp -d /tmp/mpi-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
lock() { ${DNP_BENCH_LOCK:-flock /tmp/softdnp-heavy.lock} "$@"; }

for tr in shm udp; do
	for how in put send; do
		PRESTO_EAGER=$how PRESTO_SLOT_SIZE=262208 lock "$run" --torus 2x1x1 --transport $tr \
			-- "$build/presto/presto_bench" --csv >"$tmp/$tr-$how.txt" 2>&1 ||
			{ cat "$tmp/$tr-$how.txt"; exit 1; }
	done
	lock "$run" --torus 2x1x1 --transport $tr -- dnp_pingpong --csv \
		--sizes 8,64,256,1K,4K,16K,64K,256K >"$tmp/$tr-raw.txt" 2>&1 ||
		{ cat "$tmp/$tr-raw.txt"; exit 1; }
done

# col FILE BYTES N: column N of the CSV row for BYTES in a dnp-run output file
col() { sed -n 's/^\[0,0,0\] //p' "$1" | awk -F, -v b="$2" -v n="$3" '$1 == b { print $n }'; }
switch_line() { sed -n 's/^\[0,0,0\] # switch-over: //p' "$1"; }

{
	echo "# Presto: eager / rendez-vous switch-over ($(date -u +%Y-%m-%d), $(hostname))"
	echo
	echo "Produced by \`bench/mpi-presto.sh\`: \`presto_bench\` (ping-pong between ranks 0 and 1"
	echo "of a 2x1x1 torus, half round trip, median of 3 rounds x 200 iterations, eager and"
	echo "rendez-vous rounds alternating) with 256 KiB slots so that every size can go either"
	echo "way; the raw \`dnp_pingpong\` (PUT ping-pong, median) in the same run. CPU:"
	echo "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) cores shared"
	echo "with the daemons (and other jobs on this machine: figures are noisy)."
	for tr in shm udp; do
		echo
		echo "## $tr"
		echo
		echo "| bytes | raw dnp_pingpong [us] | eager, ring PUT [us] | eager, SEND [us] | rendez-vous (GET) [us] |"
		echo "| ---: | ---: | ---: | ---: | ---: |"
		for b in 8 64 256 1024 4032 8192 16384 65536 262144; do
			rb=$b; [ "$b" = 4032 ] && rb=4096
			echo "| $b | $(col "$tmp/$tr-raw.txt" $rb 4) | $(col "$tmp/$tr-put.txt" $b 2) |" \
				"$(col "$tmp/$tr-send.txt" $b 2) | $(col "$tmp/$tr-put.txt" $b 3) |"
		done
		echo
		echo "- ring PUT eager vs rendez-vous: $(switch_line "$tmp/$tr-put.txt")"
		echo "- SEND eager vs rendez-vous: $(switch_line "$tmp/$tr-send.txt")"
	done
	echo
	echo "(raw dnp_pingpong at 4096 bytes is listed in the 4032 row.)"
} >"$out"
cat "$out"
