#!/bin/bash
# SPDX-License-Identifier: MIT
# Goodput under loss: 64 KiB PUT stream (dnp_bw, window 32) between two dnpd
# daemons over udp, every frame either daemon sends lost with probability
# 0%, 0.1%, 1% and 5% (dnpd --impair 'loss=P%', the impairment layer below
# the link; seeded, a different seed per repetition). Each loss rate runs
# REPS times; the repetitions of all rates are interleaved so that a slow
# minute of the shared machine does not fall on one rate only.
#
# With a second build directory (e.g. a build of main), both builds run in
# the same invocation, alternating, so "before" and "after" share the
# machine's conditions.
#
# Writes bench/results/goodput-loss-<date>-<host>.csv
#   (build,loss_pct,rep,bytes,iters,MBps) and a summary -<...>.md with the
# median goodput per build and loss and its ratio to the same build's
# lossless median. Not a test: it prints figures. Run it alone (flock).
# usage: bench/goodput-loss.sh BUILD_DIR [BASE_BUILD_DIR] [REPS] [ITERS]
set -u
build=$1
base=${2:-}
reps=${3:-3}
iters=${4:-400}
here=$(cd "$(dirname "$0")" && pwd)
outdir=${BENCH_OUT:-$here/results}
stamp=$(date -u +%Y-%m-%d)-$(hostname -s)
csv=$outdir/goodput-loss-$stamp.csv
md=$outdir/goodput-loss-$stamp.md
losses="0 0.1 1 5"

builds=("after:$build")
[ -n "$base" ] && builds+=("before:$base")
for b in "${builds[@]}"; do
	d=${b#*:}
	for p in "$d/apps/dnp-run" "$d/apps/dnp_bw" "$d/dnp-core/dnpd/dnpd"; do
		if [ ! -x "$p" ]; then
			echo "goodput-loss: $p is not built" >&2
			exit 1
		fi
	done
done
mkdir -p "$outdir"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

echo "build,loss_pct,rep,bytes,iters,MBps" >"$csv"
for r in $(seq "$reps"); do
	for loss in $losses; do
		for b in "${builds[@]}"; do
			name=${b%%:*}
			d=${b#*:}
			spec=off
			[ "$loss" != 0 ] && spec="loss=$loss%,seed=$((100 + r))"
			printf 'rep %s loss %s%% %s: ' "$r" "$loss" "$name"
			if "$d/apps/dnp-run" --torus 2x1x1 --transport udp --no-lofamo --timeout 300 \
				--impair "$spec" -- dnp_bw --sizes 64K --iters "$iters" --csv >"$tmp" 2>&1; then
				v=$(sed -n 's/^\[0,0,0\] //p' "$tmp" | awk -F, '/^[0-9]+,/ { print $3 }')
				echo "${v:-?} MB/s"
				[ -n "$v" ] && echo "$name,$loss,$r,65536,$iters,$v" >>"$csv"
			else
				echo "failed"
				tail -n 5 "$tmp" >&2
			fi
		done
	done
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print ""; exit }
	if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -F, -v b="$1" -v l="$2" 'NR > 1 && $1 == b && $2 == l { print $6 }' "$csv" | median; }
{
	echo "# Goodput under loss (bench/goodput-loss.sh, $(date -u +%Y-%m-%d))"
	echo
	echo "64 KiB PUTs, dnp_bw --window 32, $iters per run, 2 dnpd over udp, dnpd --impair loss=P%"
	echo "(both directions). Medians of $reps runs; MB/s; ratio = goodput / the same build's lossless goodput."
	echo "Machine: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) CPUs."
	echo
	echo "| build | loss | MB/s | ratio to lossless |"
	echo "| --- | --- | --- | --- |"
	for b in "${builds[@]}"; do
		name=${b%%:*}
		ref=$(col "$name" 0)
		for loss in $losses; do
			v=$(col "$name" "$loss")
			ratio=$(awk -v a="$v" -v b="$ref" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b; else print "-" }')
			echo "| $name | $loss% | ${v:--} | $ratio |"
		done
	done
} | tee "$md"
echo "wrote $csv and $md"
