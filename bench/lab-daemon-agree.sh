#!/bin/bash
# SPDX-License-Identifier: MIT
#
# lab-daemon-agree.sh — the same two experiments in the lab and on shm daemons, for the
# lab/daemon agreement table (issue 30; bench/results/2026-12-05-h-lab30-agreement.md):
#   tput:    every node PUTs TPUT_COUNT (32) 4096-byte messages to every other node
#            (dnp_alltoall's order: destination after destination, a window of 64
#            outstanding), routing dor and adaptive; throughput ratio = time(dor) /
#            time(adaptive). Lab: virtual end time (--order by-destination
#            --app-window 64). Daemons: TPUT_ROUNDS (8) dnp_alltoall runs, one after the
#            other, in one torus (round r on port r+2, so that rounds never meet); figure:
#            the median over every node and round of "sent ... in N ms".
#   classes: a bulk all-to-all of BULK_COUNT (8) 1 MiB PUTs per destination in class 0,
#            and, once the bulk is under way, an 8-byte ping-pong in class 7 between node
#            0 and the farthest node: PP_WARMUP (200) round trips not measured, then
#            PP_ITERS (1000); arbitration off and strict; figure: the ping-pong's p99.
#            Daemons: the ping-pong starts PP_DELAY (0.3) s after the bulk programs;
#            node 0's p99 of half round trips. Lab: the same flow (2 x (PP_WARMUP +
#            PP_ITERS) messages, the first 2 x PP_WARMUP not measured), started at
#            PP_START_FRAC (0.3) of the lab bulk's own duration (measured first, without
#            the ping-pong; set it to PP_DELAY / the daemons' bulk time), every message after
#            the warm-up measured (--pingpong-measure all, as dnp_pingpong); p99 of one-way
#            latencies.
# usage: bench/lab-daemon-agree.sh lab|daemons TORUS [REPS] [EXPERIMENTS]
#        (from the build tree's parent; EXPERIMENTS: "tput classes" by default)
# Daemon runs each take the heavy lock (one torus per lock hold); output: CSV rows on stdout,
# the daemons' raw outputs kept in $KEEP (default: a temporary directory, removed).
set -u
side=$1 torus=$2 reps=${3:-3} exps=${4:-tput classes}
b=${BUILD:-build}
lab=$b/dnp-core/lab/dnp-lab
run=$b/apps/dnp-run
count=${TPUT_COUNT:-32}
rounds=${TPUT_ROUNDS:-8}
bulk_count=${BULK_COUNT:-8}
iters=${PP_ITERS:-1000}
warm=${PP_WARMUP:-200}
delay=${PP_DELAY:-0.3}
frac=${PP_START_FRAC:-0.3}
IFS=x read -r X Y Z <<<"$torus"
far="$((X / 2)),$((Y / 2)),$((Z / 2))"
far_id=$(((X / 2) + X * ((Y / 2) + Y * (Z / 2))))
sizes=$(printf '4096%.0s,' $(seq "$count")); sizes=${sizes%,}
bulk=$(printf '1M%.0s,' $(seq "$bulk_count")); bulk=${bulk%,}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
keep=${KEEP:-$tmp}
mkdir -p "$keep"
has() { [[ " $exps " == *" $1 "* ]]; }

echo "side,torus,experiment,config,rep,figure,unit"
if [ "$side" = lab ]; then
	a2a=(--torus "$torus" --pattern all-to-all --order by-destination --app-window 64)
	for r in dor adaptive; do
		has tput || break
		t=$("$lab" run "${a2a[@]}" --sizes 4096 --count "$count" --routing "$r" --csv 2>&1 |
			awk -F, '$1 == "time" {print $2; exit}')
		echo "lab,$torus,tput,$r,1,$t,time_units"
	done
	has classes || exit 0
	blk=(--sizes 1048576 --count "$bulk_count")
	end=$("$lab" run "${a2a[@]}" "${blk[@]}" --csv 2>&1 | awk -F, '$1 == "time" {print $2; exit}')
	start=$(awk -v e="$end" -v f="$frac" 'BEGIN {printf "%d", e * f}')
	echo "lab,$torus,bulk,none,1,$end,time_units"
	for a in off strict; do
		"$lab" run "${a2a[@]}" "${blk[@]}" --pingpong "0,$far_id" \
			--pingpong-count $((2 * (iters + warm))) --pingpong-warmup $((2 * warm)) \
			--pingpong-start "$start" --pingpong-measure all --arbitration "$a" \
			--csv >"$tmp/lab.csv" 2>&1
		# messages,all,median,p99,max,end,rest_end
		row=$(awk -F, '/^# pingpong/ {getline; getline; print; exit}' "$tmp/lab.csv")
		cp "$tmp/lab.csv" "$keep/lab-$torus-classes-$a.csv" 2>/dev/null
		echo "lab,$torus,classes,$a,1,$(cut -d, -f4 <<<"$row"),time_units_p99"
		echo "lab,$torus,classes_measured,$a,1,$(cut -d, -f1 <<<"$row"),messages"
		echo "lab,$torus,classes_pp_end,$a,1,$(cut -d, -f6 <<<"$row"),time_units"
		echo "lab,$torus,classes_bulk_end,$a,1,$(cut -d, -f7 <<<"$row"),time_units"
	done
	exit 0
fi

cat >"$tmp/tput.sh" <<NODE
#!/bin/bash
for r in \$(seq $rounds); do
	DNP_PORT=\$((r + 1)) $PWD/$b/apps/dnp_alltoall --sizes $sizes --window 64 || exit 1
done
NODE
cat >"$tmp/classes.sh" <<NODE
#!/bin/bash
DNP_PORT=0 $PWD/$b/apps/dnp_alltoall --sizes $bulk --window 64 --tc 0 &
sleep $delay
DNP_PORT=1 $PWD/$b/apps/dnp_pingpong --peer $far --sizes 8 --iters $iters --warmup $warm --tc 7 --csv
wait
NODE
chmod +x "$tmp/tput.sh" "$tmp/classes.sh"
# median of the numbers on stdin
median() { sort -n | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'; }
for rep in $(seq "$reps"); do
	for r in dor adaptive; do
		has tput || break
		out=$keep/daemons-$torus-tput-$r-$rep.out
		flock /tmp/softdnp-heavy.lock timeout 300 "$run" --torus "$torus" --transport shm \
			--no-lofamo --routing "$r" -- "$tmp/tput.sh" >"$out" 2>&1
		ms=$(grep -o 'in [0-9.]* ms' "$out" | awk '{print $2}' | median)
		echo "daemons,$torus,tput,$r,$rep,$ms,ms_median_node_round"
	done
	for a in off strict; do
		has classes || break
		out=$keep/daemons-$torus-classes-$a-$rep.out
		flock /tmp/softdnp-heavy.lock timeout 300 "$run" --torus "$torus" \
			--transport shm --no-lofamo --arbitration "$a" --dnpd-arg --cmd-timeout-ms \
			--dnpd-arg 0 -- "$tmp/classes.sh" >"$out" 2>&1
		# node 0's CSV row: bytes,iterations,t_min_us,t_median_us,t_p99_us,...
		p=$(grep '^\[0,0,0\] 8,' "$out" | head -1 | sed 's/^\[0,0,0\] //' | cut -d, -f5)
		bms=$(grep -o 'in [0-9.]* ms' "$out" | awk '{print $2}' | median)
		echo "daemons,$torus,classes,$a,$rep,$p,us_p99"
		echo "daemons,$torus,classes_bulk,$a,$rep,$bms,ms_median_node"
	done
done
