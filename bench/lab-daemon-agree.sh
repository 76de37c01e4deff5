#!/bin/bash
# SPDX-License-Identifier: MIT
#
# lab-daemon-agree.sh — the same two experiments in the lab and on shm daemons, for the
# lab/daemon agreement table (issue 30; bench/results/2026-12-05-h-val-agreement.md):
#   tput:    every node PUTs 32 4096-byte messages (dnp_alltoall takes 32 sizes at most) to every other
#            node, routing dor and adaptive; throughput ratio = time(dor) / time(adaptive)
#            (lab: virtual end time; daemons: median over nodes of dnp_alltoall's
#            "sent ... in N ms").
#   classes: a bulk all-to-all of 1 MiB PUTs in class 0 beside an 8-byte ping-pong in
#            class 7 between node 0 and the farthest node, arbitration off and strict;
#            figure: the ping-pong's p99.
# usage: bench/lab-daemon-agree.sh lab|daemons TORUS [REPS]   (from the build tree's parent)
# Daemon runs each take the heavy lock; output: CSV rows on stdout.
set -u
side=$1 torus=$2 reps=${3:-3}
b=${BUILD:-build}
lab=$b/dnp-core/lab/dnp-lab
run=$b/apps/dnp-run
count=${TPUT_COUNT:-32}
bulk_count=${BULK_COUNT:-8}
iters=${PP_ITERS:-1000}
IFS=x read -r X Y Z <<<"$torus"
far="$((X / 2)),$((Y / 2)),$((Z / 2))"
far_id=$(((X / 2) + X * ((Y / 2) + Y * (Z / 2))))
sizes=$(printf '4096%.0s,' $(seq "$count")); sizes=${sizes%,}
bulk=$(printf '1M%.0s,' $(seq "$bulk_count")); bulk=${bulk%,}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

echo "side,torus,experiment,config,rep,figure,unit"
if [ "$side" = lab ]; then
	for r in dor adaptive; do
		t=$("$lab" run --torus "$torus" --pattern all-to-all --sizes 4096 --count "$count" \
			--routing "$r" --csv 2>&1 | awk -F, '$1 == "time" {print $2; exit}')
		echo "lab,$torus,tput,$r,1,$t,time_units"
	done
	for a in off strict; do
		p=$("$lab" run --torus "$torus" --pattern all-to-all --sizes 1048576 \
			--count "$bulk_count" --pingpong "0,$far_id" --pingpong-count "$iters" \
			--arbitration "$a" --csv 2>&1 |
			awk -F, '/^# pingpong/ {getline; getline; print $4; exit}')
		echo "lab,$torus,classes,$a,1,$p,time_units_p99"
	done
	exit 0
fi

cat >"$tmp/node.sh" <<NODE
#!/bin/bash
DNP_PORT=0 $PWD/$b/apps/dnp_alltoall --sizes $bulk --window 64 --tc 0 > /dev/null 2>&1 &
sleep 0.3
DNP_PORT=1 $PWD/$b/apps/dnp_pingpong --peer $far --sizes 8 --iters $iters --warmup 200 --tc 7 --csv
wait
NODE
chmod +x "$tmp/node.sh"
for rep in $(seq "$reps"); do
	for r in dor adaptive; do
		flock /tmp/softdnp-heavy.lock timeout 300 "$run" --torus "$torus" --transport shm \
			--no-lofamo --routing "$r" -- "$b/apps/dnp_alltoall" --sizes "$sizes" \
			--window 64 >"$tmp/out" 2>&1
		ms=$(grep -o 'in [0-9.]* ms' "$tmp/out" | awk '{print $2}' | sort -n |
			awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
		echo "daemons,$torus,tput,$r,$rep,$ms,ms_median_node"
	done
	for a in off strict; do
		flock /tmp/softdnp-heavy.lock timeout 300 "$run" --torus "$torus" \
			--transport shm --no-lofamo --arbitration "$a" --dnpd-arg --cmd-timeout-ms \
			--dnpd-arg 0 -- "$tmp/node.sh" >"$tmp/out" 2>&1
		# node 0's CSV row: bytes,iterations,t_min_us,t_median_us,t_p99_us,...
		p=$(grep '^\[0,0,0\] 8,' "$tmp/out" | head -1 | sed 's/^\[0,0,0\] //' | cut -d, -f5)
		echo "daemons,$torus,classes,$a,$rep,$p,us_p99"
	done
done
