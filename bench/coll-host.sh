#!/bin/sh
# SPDX-License-Identifier: MIT
# Offloaded against host-based collectives in the lab (docs/lab.md, "Host-based
# collectives in the lab"): dnp-lab run --coll OP, once run by the engines and once
# as the hosts run it (--coll-host) under several host models, on growing tori.
# Writes OUT/coll-host.csv (one row per run) and, with gnuplot, OUT/bcast.png.
#   bench/coll-host.sh [OUT]    env: LAB (dnp-lab), OPS ("allreduce bcast"),
#   TORI_ALLREDUCE, TORI_BCAST (lists of XxYxZ), COUNT (collectives per run), SIZE (bytes)
set -eu
OUT=${1:-/tmp/coll-host}
LAB=${LAB:-build/dnp-core/lab/dnp-lab}
OPS=${OPS:-"allreduce bcast"}
COUNT=${COUNT:-5}
SIZE=${SIZE:-8}
TORI_ALLREDUCE=${TORI_ALLREDUCE:-"2x2x2 4x4x4 8x8x8"}
TORI_BCAST=${TORI_BCAST:-"2x2x2 4x2x2 4x4x2 4x4x4 8x4x4 8x8x4 8x8x8 16x8x8 16x16x8 16x16x16"}
mkdir -p "$OUT"
CSV=$OUT/coll-host.csv
[ -s "$CSV" ] || echo "op,size,nodes,torus,mode,median,max,per_op,done,failed,verify_errors,seconds" >"$CSV"

# mode name -> dnp-lab options
mode_opts() {
	case $1 in
	offload) echo "" ;;
	host) echo "--coll-host" ;; # the defaults: 1020 ns per event, 55 ns per KiB
	host-wake) echo "--coll-host --host-event-ns 4550" ;; # + a sleeping program's wake-up
	host0) echo "--coll-host --host-event-ns 0 --host-reduce-ns-per-kib 0" ;;
	rd) echo "--coll-host --coll-host-alg rd" ;;
	rd0) echo "--coll-host --coll-host-alg rd --host-event-ns 0 --host-reduce-ns-per-kib 0" ;;
	esac
}

run() { # op torus mode
	t0=$(date +%s)
	# shellcheck disable=SC2046
	line=$("$LAB" run --torus "$2" --coll "$1" --coll-size "$SIZE" --coll-count "$COUNT" \
		$(mode_opts "$3") | tee "$OUT/$1-$2-$3.txt" | grep '^collective') || true
	ver=$(sed -n 's/^verify: *\([0-9]*\) errors.*/\1/p' "$OUT/$1-$2-$3.txt")
	t1=$(date +%s)
	echo "$line" | awk -v op="$1" -v t="$2" -v m="$3" -v v="${ver:-?}" -v s=$((t1 - t0)) '{
		split(t, d, "x"); n = d[1] * d[2] * d[3]
		for (i = 1; i <= NF; i++) {
			if ($i == "median") med = $(i + 1); if ($i == "max") mx = $(i + 1)
			if ($i == "done,") dn = $(i - 1); if ($i == "failed;") fl = $(i - 1)
			if ($i == "per") po = $(i - 3)
		}
		printf "%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", op, $4, n, t, m, med, mx, po, dn, fl, v, s
	}' >>"$CSV"
	tail -1 "$CSV"
}

for op in $OPS; do
	if [ "$op" = allreduce ]; then
		for t in $TORI_ALLREDUCE; do
			for m in ${MODES_ALLREDUCE:-offload host host-wake host0 rd rd0}; do run "$op" "$t" "$m"; done
		done
	else
		for t in $TORI_BCAST; do
			for m in ${MODES_BCAST:-offload host host0}; do run "$op" "$t" "$m"; done
		done
	fi
done

# broadcast latency (median member) against nodes, both lines, in microseconds at 350 MHz
if command -v gnuplot >/dev/null && grep -q '^bcast' "$CSV"; then
	for m in offload host host0; do
		grep "^bcast,$SIZE,.*,$m," "$CSV" | sort -t, -k3n | awk -F, '{ print $3, $6 / 350 }' \
			>"$OUT/bcast-$m.dat"
	done
	gnuplot <<EOF
set terminal pngcairo size 900,560
set output "$OUT/bcast.png"
set title "Broadcast of $SIZE B in the lab: member latency (median) against nodes"
set xlabel "nodes"
set ylabel "latency (us, link at 350 MHz)"
set logscale x 2
set logscale y
set grid
set key top left Left reverse
set yrange [0.1:40]
plot "$OUT/bcast-offload.dat" w lp lw 2 pt 7 t "offloaded (engines)", \
     "$OUT/bcast-host.dat" w lp lw 2 pt 5 t "host-based, Presto's binomial tree (1020 ns per event)", \
     "$OUT/bcast-host0.dat" w lp lw 2 pt 4 dt 2 t "host-based, host cost 0 (network only)"
EOF
	echo "plot: $OUT/bcast.png"
fi
