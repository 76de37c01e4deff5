#!/bin/bash
# SPDX-License-Identifier: MIT
# MPI / libfabric tests over the provider "dnp" (suite 'mpi').
# usage: mpi.sh BUILD_DIR SOURCE_DIR TEST
#   fi-info       `fi_info -p dnp` lists the provider (no daemon needed)
#   fi-check      fabric/fi_dnp_check: matching, truncation, cancel, CQ errors, RMA (2x1x1)
#   fi-pingpong   Debian's fi_pingpong -e rdm between nodes 0 and 1, data checked (2x1x1)
#   netpipe       NPopenmpi -i (integrity: every whole word checked) over `./dnp mpirun
#                 --torus 2x1x1`, 1 B to 8 KiB
#   netpipe-dpdk  the same over --transport dpdk (root, DPDK build; namespace testbed)
#   lammps        LAMMPS melt, 8 ranks on 2x2x2: thermo table identical to 8 ranks
#                 over Open MPI's own shared memory (pml ob1, btl self,vader)
#   hpcc          HPCC, 2 ranks on 2x1x1: Success=1, no FAILED, RandomAccess errors 0
#   death-fail, death-restart, death-lammps-restart
#                 node 1's dnpd is killed (SIGKILL) while NetPIPE (or LAMMPS, 8 ranks on
#                 2x2x2) runs under `./dnp mpirun --daemon-death fail|restart`: the job
#                 neither hangs nor succeeds silently; it ends within 30 s of the kill
#                 with an error from the provider that Open MPI reports
#   pin, pin-udp  NetPIPE 8 B (2,000 round trips) under `dnp-run --pin` with
#                 dnp-mpirun.sh's pinned placement (DNP_MPI_PIN=1): each rank runs on
#                 the CPU of the other node's daemon and its empty CQ reads make the
#                 pinned hand-off (at least one per round trip, DNP_FI_STATS), the
#                 placement learnt from libdnp (dnp_wait_placement; DNP_FI_HANDOFF
#                 unset); with the daemons not pinned (no --pin), or under
#                 DNP_FI_HANDOFF=off, none
#   pin-busy      the same (udp, 500 round trips) beside two busy loops (one pinned to
#                 each CPU, killed by PID): each rank's CQ yields start a blocking
#                 window and its empty reads sleep until the next event (blocks >= 250)
#   fi-wait, fi-wait-udp
#                 fabric/fi_dnp_wait on an FI_THREAD_SAFE domain with DNP_FI_WAIT=block:
#                 a thread sleeping in fi_cq_sread does not hold the provider lock, so
#                 the main thread's 500 sends complete with a median under 500 us (a
#                 sleep under the lock: 1 ms or more each); the reader slept (blocks)
#   lammps-udp, lammps-dpdk, hpcc-udp, hpcc-dpdk
#                 the same over SoftDNP's udp and dpdk transports (dpdk: root and a
#                 DPDK build, on the namespace testbed)
# Exit 77 when a Debian package or the provider is missing (./dnp test installs them).
set -u
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) t=$3
fidir=$build/fabric
run=$build/apps/dnp-run
skip() { echo "SKIP: $*"; exit 77; }
need() { command -v "$1" >/dev/null 2>&1 || skip "$1 not installed (Debian package $2)"; }
[ -f "$fidir/libdnp-fi.so" ] || skip "libdnp-fi.so not built (libfabric-dev missing at configure time)"
[ -x "$build/dnp-core/dnpd/dnpd" ] || skip "dnpd not built"
export FI_PROVIDER_PATH=$fidir
# A sanitized libdnp-fi.so cannot be loaded into Debian's programs (the ASan
# runtime must come first); only our own fi_dnp_check and fi_dnp_wait run then.
if [ "${DNP_SANITIZE:-none}" != none ] && [ "$t" != fi-check ] &&
	[ "${t%-udp}" != fi-wait ]; then
	skip "sanitized build ($DNP_SANITIZE): Debian's programs cannot load an instrumented provider"
fi
tmp=$(mktemp -d /tmp/mpi-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
# the programs run in $tmp (--out), where the checks below read their files
mpirun_dnp() { DNP_BUILD=$build "$src/dnp" mpirun --out "$tmp" --timeout 150 "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
# The transport a test name asks for (NAME-udp, NAME-dpdk; shm otherwise),
# skipping dpdk where it cannot run.
tr=shm
case $t in
*-udp) tr=udp t=${t%-udp} ;;
*-dpdk)
	[ "${DNP_HAVE_DPDK:-1}" = 1 ] || skip "this build has no DPDK"
	[ "$(id -u)" -eq 0 ] || skip "dpdk needs root (network namespaces, veth, packet sockets)"
	command -v ip >/dev/null 2>&1 || skip "no 'ip' (iproute2) for the namespace testbed"
	tr=dpdk t=${t%-dpdk}
	;;
esac

case $t in
fi-info)
	need fi_info libfabric-bin
	fi_info -p dnp >out 2>&1
	cat out
	grep -q '^provider: dnp' out || fail "fi_info -p dnp does not list the provider"
	grep -q 'FI_EP_RDM' out || fail "no FI_EP_RDM endpoint"
	;;
fi-check)
	"$run" --torus 2x1x1 --timeout 120 -- "$fidir/fi_dnp_check" >out 2>&1
	rc=$?
	cat out
	[ $rc -eq 0 ] || fail "fi_dnp_check exited $rc"
	grep -q '^\[0,0,0\] PASS fi_dnp_check' out || fail "no PASS line"
	;;
fi-wait)
	env DNP_FI_WAIT=block DNP_FI_STATS=1 "$run" --torus 2x1x1 --transport $tr --timeout 120 -- \
		"$fidir/fi_dnp_wait" >out 2>&1
	rc=$?
	cat out
	[ $rc -eq 0 ] || fail "fi_dnp_wait exited $rc"
	grep -q '^\[0,0,0\] PASS fi_dnp_wait' out || fail "no PASS line"
	# the reader's CQ (closed first) slept meanwhile, 1 ms a sleep: at least 10 sleeps,
	# one every DFI_IDLE_READS (4) empty reads (the check that DNP_FI_WAIT=block works)
	grep -o 'cq empty_reads.*' out | head -1 | awk '{ for (i = 1; i < NF; i++) {
		if ($i == "blocks") b = $(i + 1)
		if ($i == "empty_reads") e = $(i + 1) } } END { exit !(b >= 10 && b * 4 + 4 >= e) }' ||
		fail "the reader did not sleep at each idle step (blocks)"
	echo "ok: the other thread posted and completed while the reader slept"
	;;
fi-pingpong)
	need fi_pingpong libfabric-bin
	port=$((20000 + $$ % 12000)) # below the kernel's ephemeral ports (32768 on)
	cat >pp.sh <<PP
#!/bin/sh
case \$DNP_NODE_ID in
0) exec fi_pingpong -p dnp -e rdm -B $port -I 10 -c -S all ;;
1)
	# the client starts once the server listens on its out-of-band port (10 s at most)
	i=0
	until ss -Hltn 'sport = :$port' | grep -q .; do
		i=\$((i + 1))
		[ \$i -le 200 ] || { echo "fi_pingpong server never listened on port $port" >&2; exit 1; }
		sleep 0.05
	done
	exec fi_pingpong -p dnp -e rdm -P $port -I 10 -c -S all 127.0.0.1 ;;
esac
PP
	chmod +x pp.sh
	"$run" --torus 2x1x1 --timeout 120 -- "$tmp/pp.sh" >out 2>&1
	rc=$?
	cat out
	[ $rc -eq 0 ] || fail "fi_pingpong exited $rc"
	n=$(grep -c '^\[0,0,0\] 1m  *10  *=10 ' out)
	[ "$n" -eq 1 ] || fail "server did not complete the 1 MiB transfers"
	;;
pin)
	need NPopenmpi netpipe-openmpi
	need mpirun openmpi-bin
	# handoffs N of each rank's CQ (DNP_FI_STATS=1 at fi_close), one per line
	pin_run() {
		env DNP_FI_STATS=1 DNP_MPI_ARGS="-x DNP_FI_STATS -x DNP_FI_HANDOFF" DNP_MPI_NP= \
			DNP_FI_DIR="$fidir" "$@" "$run" ${runpin---pin} --timeout 100 --torus 2x1x1 --transport $tr -- \
			"$src/fabric/dnp-mpirun.sh" NPopenmpi -p 0 -l 8 -u 8 -n 2000 -o np.out >out 2>&1 ||
			{ tail -20 out; fail "NetPIPE under dnp-run --pin exited $?"; }
		grep -o 'cq empty_reads.*' out
	}
	pin_run DNP_MPI_PIN=1 >stats || exit 1
	cat stats
	[ "$(wc -l <stats)" -eq 2 ] || fail "expected the CQ statistics of 2 ranks"
	awk '{ for (i = 1; i < NF; i++) if ($i == "handoffs" && $(i + 1) < 2000) bad = 1 }
		END { exit bad }' stats || fail "a rank made fewer than 2000 hand-offs in 2000 round trips"
	awk '$1 == 8 { exit !($3 > 0) }' np.out || fail "NetPIPE gave no 8-byte time"
	# DNP_FI_HANDOFF is not set above: the provider learnt the placement from libdnp
	# (dnp_wait_placement). Without pinned daemons libdnp says nothing: the old rule
	runpin='' pin_run DNP_MPI_PIN=0 >stats || exit 1
	cat stats
	grep -q 'handoffs [1-9]' stats && fail "hand-offs with the daemons not pinned"
	# and the override turns it off in the pinned placement
	pin_run DNP_MPI_PIN=1 DNP_FI_HANDOFF=off >stats || exit 1
	cat stats
	grep -q 'handoffs [1-9]' stats && fail "hand-offs under DNP_FI_HANDOFF=off"
	echo "ok: pinned hand-off in every rank, learnt from libdnp; none unpinned or turned off"
	;;
pin-busy)
	need NPopenmpi netpipe-openmpi
	need mpirun openmpi-bin
	command -v taskset >/dev/null || skip "no taskset"
	[ "$(nproc)" -ge 2 ] || skip "--pin needs two CPUs"
	taskset -c 0 sh -c 'while :; do :; done' &
	b0=$!
	taskset -c 1 sh -c 'while :; do :; done' &
	b1=$!
	env DNP_FI_STATS=1 DNP_MPI_ARGS="-x DNP_FI_STATS" DNP_MPI_NP= DNP_FI_DIR="$fidir" DNP_MPI_PIN=1 \
		timeout 120 "$run" --pin --timeout 100 --torus 2x1x1 --transport udp -- \
		"$src/fabric/dnp-mpirun.sh" NPopenmpi -p 0 -l 8 -u 8 -n 500 -o np.out >out 2>&1
	rc=$?
	kill "$b0" "$b1"
	wait "$b0" "$b1" 2>/dev/null
	[ $rc -eq 0 ] || { tail -20 out; fail "NetPIPE beside two busy loops exited $rc"; }
	grep -o 'cq empty_reads.*' out | tee stats
	[ "$(wc -l <stats)" -eq 2 ] || fail "expected the CQ statistics of 2 ranks"
	awk '{ for (i = 1; i < NF; i++) {
		if ($i == "busy_windows" && $(i + 1) < 1) bad = 1
		if ($i == "blocks" && $(i + 1) < 250) bad = 1 } } END { exit bad }' stats ||
		fail "a rank did not sleep between messages beside two busy loops"
	echo "ok: both ranks slept in their blocking windows"
	;;
netpipe)
	need NPopenmpi netpipe-openmpi
	need mpirun openmpi-bin
	# NetPIPE's integrity mode (-i): the messages of every size it picks up to
	# 8 KiB (23 sizes, 5 B to 8,193 B), 100 per size, are filled with a known
	# pattern (word i holds i) and checked on arrival. NetPIPE 3.7 checks whole
	# 4-byte words only: the last 1-3 bytes of an odd size are not checked.
	mpirun_dnp --torus 2x1x1 --transport $tr -- NPopenmpi -i -n 100 -u 8200 -o np.out >out 2>&1
	rc=$?
	tail -5 out
	# NetPIPE exits 1 at the first bad word: name it before the exit status
	if grep -q 'Integrity check failed' out; then
		grep 'Integrity check failed' out | head -n 5
		fail "NetPIPE's integrity check failed (after $(grep -c 'Integrity check passed' out) sizes passed)"
	fi
	[ $rc -eq 0 ] || fail "NPopenmpi -i exited $rc"
	[ -s np.out ] || fail "NetPIPE wrote no np.out"
	# np.out in integrity mode: bytes, repetitions; one line per size
	sizes=$(wc -l <np.out)
	passed=$(grep -c 'Integrity check passed' out)
	[ "$passed" -eq "$sizes" ] || fail "$passed sizes passed the integrity check, of $sizes"
	awk '$1 >= 8192 { ok = 1 } END { exit !ok }' np.out || fail "NetPIPE did not reach 8 KiB"
	echo "integrity check passed for $sizes sizes up to $(tail -n 1 np.out | awk '{ print $1 }') bytes"
	;;
lammps)
	need lmp lammps
	need mpirun openmpi-bin
	in=/usr/share/lammps/examples/melt/in.melt
	[ -f $in ] || skip "$in missing (Debian package lammps-examples)"
	root=
	[ "$(id -u)" -eq 0 ] && root=--allow-run-as-root
	mpirun $root --oversubscribe --bind-to none -np 8 --mca pml ob1 --mca btl self,vader \
		lmp -in $in -log ref.log >ref.out 2>&1 || { cat ref.out; fail "reference run failed"; }
	mpirun_dnp --torus 2x2x2 --transport $tr -- lmp -in $in -log dnp.log >out 2>&1
	rc=$?
	tail -3 out
	[ $rc -eq 0 ] || fail "lmp over SoftDNP ($tr) exited $rc"
	table() { sed -n '/^ *Step /,/^Loop time/p' "$1" | grep -v '^Loop time'; }
	table ref.log >ref.t
	table dnp.log >dnp.t
	cat dnp.t
	[ "$(wc -l <ref.t)" -gt 3 ] || fail "no thermo table in the reference run"
	diff ref.t dnp.t || fail "thermodynamic output differs from the reference run"
	echo "thermo table identical to the reference ($(wc -l <dnp.t) lines)"
	;;
hpcc)
	need hpcc hpcc
	need mpirun openmpi-bin
	cp /usr/share/doc/hpcc/examples/_hpccinf.txt hpccinf.txt || skip "hpcc example input missing"
	sed -i '11s/^[0-9]* /1 /; 12s/^[0-9]* /2 /' hpccinf.txt
	mpirun_dnp --torus 2x1x1 --transport $tr -- hpcc >out 2>&1
	rc=$?
	tail -3 out
	[ $rc -eq 0 ] || fail "hpcc exited $rc"
	grep -E '^(Success|MPIRandomAccess_Errors|HPL_Tflops)=' hpccoutf.txt
	grep -q '^Success=1$' hpccoutf.txt || fail "HPCC Success is not 1"
	grep -q '^MPIRandomAccess_Errors=0$' hpccoutf.txt || fail "RandomAccess errors"
	! grep -q FAILED hpccoutf.txt || fail "a FAILED verification line"
	[ "$(grep -c PASSED hpccoutf.txt)" -gt 0 ] || fail "no PASSED verification line"
	;;
death-*)
	need mpirun openmpi-bin
	mode=${t##*-}
	if [ "$t" = death-lammps-restart ]; then
		need lmp lammps
		[ -f /usr/share/lammps/examples/melt/in.melt ] || skip "LAMMPS melt example missing"
		torus=2x2x2 prog="lmp -in /usr/share/lammps/examples/melt/in.melt -log dnp.log"
	else
		need NPopenmpi netpipe-openmpi
		torus=2x1x1 prog="NPopenmpi -u 1048576 -o np.out"
	fi
	# the job's own node-1 daemon: a dnpd of this build below this script
	mine() { # PID: is PID a descendant of this shell?
		local p=$1
		while [ "$p" -gt 1 ]; do
			[ "$p" -eq $$ ] && return 0
			p=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null) || return 1
		done
		return 1
	}
	victim() {
		for p in $(pgrep -f -- "^$build/apps/../dnp-core/dnpd/dnpd .*--coord 1,0,0"); do
			mine "$p" && { echo "$p"; return 0; }
		done
		return 1
	}
	# shellcheck disable=SC2086
	mpirun_dnp --torus $torus --transport $tr --daemon-death "$mode" -- $prog >out 2>&1 &
	job=$!
	for _ in $(seq 300); do grep -qs 'Now starting\| Step ' out && break; sleep 0.1; done
	sleep 1
	v=$(victim) || { kill $job; fail "no node-1 dnpd of this job found"; }
	kill -0 $job 2>/dev/null || fail "the job ended before the kill"
	s=$(date +%s%N)
	kill -9 "$v"
	for _ in $(seq 300); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
	e=$(date +%s%N)
	if kill -0 $job 2>/dev/null; then
		pkill -P $job
		kill $job
		wait $job
		tail -20 out
		fail "the job still ran 30 s after node 1's dnpd was killed (--daemon-death $mode)"
	fi
	wait $job
	rc=$?
	grep -v 'bytes .* times -->' out | tail -12
	echo "the job ended $(((e - s) / 1000000)) ms after the kill, exit $rc"
	[ $rc -ne 0 ] || fail "the job exited 0 though a daemon died under it"
	grep -Eq 'dnp provider|Input/output error|fi_cq_read' out ||
		fail "no error from the provider in the job's output"
	;;
*)
	echo "unknown test $t" >&2
	exit 2
	;;
esac
echo "OK: $t over $tr"
