#!/bin/sh
# SPDX-License-Identifier: MIT
# One pass on the first transmission (docs/performance.md): on a 2x1x1 torus
# over shm, a stream of 64 KiB PUTs from the heap leaves node 0 with its
# payload copied straight from the heap into the link's slots (`tx_onepass`
# in `dnpctl stats`: every packet of the stream), and every message arrives
# intact (dnp_bw --verify). Over udp the same stream takes the copying path
# (tx_onepass 0), as does shm with an impairment active on the link (the
# impairment layer needs the frames): there every message arrives intact too,
# through losses and corruption that the link protocol repairs.
# usage: onepass.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (not built).
set -u
build=$1
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

# Inside dnp-run, on each node: the verified stream, then node 0's counters.
if [ "${2:-}" = inner ]; then
	"$build/apps/dnp_bw" --sizes 64K --iters 200 --warmup 10 --verify --csv >/dev/null || exit 1
	[ "$DNP_NODE_ID" = 0 ] || exit 0
	st=$("$build/dnp-core/dnpd/dnpctl" --socket "$DNP_SOCKET" stats | grep '^engine ')
	n=$(echo "$st" | sed -n 's/.* tx_onepass \([0-9]*\).*/\1/p')
	f=$(echo "$st" | sed -n 's/.* tx_onepass_faults \([0-9]*\).*/\1/p')
	[ -n "$n" ] && [ -n "$f" ] || exit 1
	echo "onepass frames $n faults $f"
	exit 0
fi

. "$(dirname "$0")/lib.sh"
need_built "$build/dnp-core/dnpd/dnpd" "$build/dnp-core/dnpd/dnpctl" "$build/apps/dnp-run" \
	"$build/apps/dnp_bw"
fail=0

# run LABEL DNP-RUN-OPTIONS...: prints node 0's "frames N faults F"
run() {
	label=$1
	shift
	out=$("$build/apps/dnp-run" --torus 2x1x1 --timeout 120 --no-lofamo "$@" \
		-- "$self" "$build" inner 2>&1) || {
		echo "FAIL: $label: the run failed" >&2
		echo "$out" | tail -n 20 >&2
		return 1
	}
	line=$(echo "$out" | grep -o 'onepass frames [0-9]* faults [0-9]*' | head -n 1)
	[ -n "$line" ] || {
		echo "FAIL: $label: node 0 reported nothing" >&2
		echo "$out" | tail -n 20 >&2
		return 1
	}
	echo "$label: $line"
	echo "$line" | sed 's/onepass frames \([0-9]*\) faults \([0-9]*\)/\1 \2/' >"$tmp/$label"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 210 PUTs of 64 KiB, 16 packets each (4 KiB payloads): every first transmission
if run shm --transport shm; then
	read -r n f <"$tmp/shm"
	[ "$n" -ge 3360 ] || { echo "FAIL: shm: $n frames written in one pass (want >= 3360)" >&2; fail=1; }
	[ "$f" = 0 ] || { echo "FAIL: shm: $f failed reads" >&2; fail=1; }
else
	fail=1
fi
if run udp --transport udp; then
	read -r n f <"$tmp/udp"
	[ "$n" = 0 ] || { echo "FAIL: udp: $n frames in one pass (udp copies)" >&2; fail=1; }
else
	fail=1
fi
if run shm-impaired --transport shm --impair 'loss=1%,corrupt=0.5%,seed=7'; then
	read -r n f <"$tmp/shm-impaired"
	[ "$n" = 0 ] || { echo "FAIL: shm-impaired: $n frames in one pass" >&2; fail=1; }
else
	fail=1
fi
exit $fail
