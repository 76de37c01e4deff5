#!/bin/bash
# SPDX-License-Identifier: MIT
# Conformance of the libfabric provider "dnp" (suite 'mpi', tests conform-*):
# each behaviour is checked against a reference provider from Debian's
# libfabric (tcp;ofi_rxm on loopback, no daemon) and then against dnp on a
# torus started by apps/dnp-run; both must give the same outcome, or dnp a
# clean refusal (fi_getinfo -FI_ENODATA, printed as DECLINED).
# usage: conform.sh BUILD_DIR SOURCE_DIR TEST [FI_CONFORM]
#   fi-peek fi-cq-data fi-inject-write fi-rma-read fi-two-ep fi-src-addr
#   fi-eq-sread fi-inject-nosel fi-cntr
#                   tests/conformance/fi_conform.c TEST (one process, two
#                   endpoints; dnp: on nodes 0 and 1 of a 2x1x1 torus)
#   second-client   one server process, two client processes one after the
#                   other on one node, each a ping-pong with that server
#   daemon-death    a provider process blocked in a CQ read returns an error
#                   once its dnpd is killed (-9); the time it took is printed
#   mpi-c           mpi_conform.c (Open MPI, compiled with mpicc): MPI_Mprobe/
#                   Improbe, MPI_Issend and cancel, MPI_Alltoallw, one-sided
#                   Put/Get/Accumulate, accept/connect; 4 ranks, 2 per node
#   mpi-py-shm, mpi-py-udp, mpi-py-dpdk
#                   mpi_conform.py (python3-mpi4py): objects, mprobe, blocking
#                   Send/Recv; 4 ranks, over each SoftDNP transport
# Exit 77 (with the reason) when a package, the provider or root (dpdk) is missing.
set -u
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) t=$3 # $4: fi_conform
here=$src/tests/conformance
fidir=$build/fabric
run=$build/apps/dnp-run
conform=${4:-tests/integration/fi_conform}
case $conform in /*) ;; *) conform=$build/$conform ;; esac # meson passes it relative to the build dir
ref='tcp;ofi_rxm'
skip() {
	echo "SKIP: $*"
	exit 77
}
fail() {
	echo "FAIL: $*"
	exit 1
}
need() { command -v "$1" >/dev/null 2>&1 || skip "$1 not installed (Debian package $2)"; }
[ -f "$fidir/libdnp-fi.so" ] || skip "libdnp-fi.so not built (libfabric-dev missing at configure time)"
[ -x "$build/dnp-core/dnpd/dnpd" ] || skip "dnpd not built"
[ -x "$run" ] || skip "dnp-run not built"
case $t in
fi-* | second-client | daemon-death) [ -x "$conform" ] || skip "fi_conform not built" ;;
esac
if [ "${DNP_SANITIZE:-none}" != none ]; then
	case $t in
	mpi-*) skip "sanitized build ($DNP_SANITIZE): Debian's programs cannot load an instrumented provider" ;;
	esac
	# libfabric's own providers are not leak-clean; dnp is still checked by the other tests
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
fi
export FI_PROVIDER_PATH=$fidir
tmp=$(mktemp -d /tmp/conform-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# Runs "$@" and prints how long it took, labelled $1 (ref or dnp).
timed() {
	local label=$1 s e rc
	shift
	s=$(date +%s%N)
	"$@"
	rc=$?
	e=$(date +%s%N)
	printf 'time %s %s: %d ms (exit %d)\n' "$t" "$label" $(((e - s) / 1000000)) "$rc"
	return $rc
}

# The reference side must really pass (a DECLINED reference would mean the
# test asserts nothing); dnp may pass or decline cleanly.
fi_single() {
	local name=${t#fi-}
	timed ref timeout 60 "$conform" "$ref" "$name" >ref.out 2>&1
	rc=$?
	cat ref.out
	[ $rc -eq 0 ] && grep -q "^PASS $name" ref.out || fail "reference $ref: $name did not pass"
	timed dnp "$run" --torus 2x1x1 --timeout 60 -- "$conform" dnp "$name" >dnp.out 2>&1
	rc=$?
	cat dnp.out
	[ $rc -eq 0 ] || fail "dnp: $name failed (dnp-run exit $rc)"
	if grep -q "DECLINED $name" dnp.out; then
		echo "OK: $name passes on $ref; dnp declines it cleanly"
	else
		grep -q "PASS $name" dnp.out || fail "dnp: no PASS line for $name"
		echo "OK: $name passes on $ref and dnp"
	fi
}

second_client() {
	mkdir ref
	timeout 60 "$conform" "$ref" serve "$tmp/ref" 2 >ref-server.out 2>&1 &
	local srv=$!
	timed ref bash -c "timeout 30 '$conform' '$ref' client '$tmp/ref' 1 &&
		timeout 30 '$conform' '$ref' client '$tmp/ref' 2" >ref.out 2>&1
	rc=$?
	wait $srv
	rs=$?
	cat ref-server.out ref.out
	[ $rc -eq 0 ] && [ $rs -eq 0 ] || fail "reference $ref: clients $rc, server $rs"
	mkdir dnp
	cat >sc.sh <<SC
#!/bin/sh
case \$DNP_NODE_ID in
0) exec "$conform" dnp serve "$tmp/dnp" 2 ;;
1) "$conform" dnp client "$tmp/dnp" 1 && exec "$conform" dnp client "$tmp/dnp" 2 ;;
esac
SC
	chmod +x sc.sh
	timed dnp "$run" --torus 2x1x1 --timeout 60 -- "$tmp/sc.sh" >dnp.out 2>&1
	rc=$?
	cat dnp.out
	[ $rc -eq 0 ] || fail "dnp: server and two clients did not all finish (dnp-run exit $rc)"
	grep -q 'client 2: PASS' dnp.out || fail "dnp: the second client did not complete"
	echo "OK: a second client process completes its ping-pong on $ref and dnp"
}

# Node 0 starts a provider process blocked in a CQ read, kills its own dnpd
# with SIGKILL and waits (at most 5 s) for the process to return an error.
daemon_death() {
	cat >dd.sh <<DD
#!/bin/bash
[ "\$DNP_NODE_ID" = 0 ] || exit 0
"$conform" dnp block >"$tmp/block.out" 2>&1 &
p=\$!
for i in \$(seq 200); do grep -q READY "$tmp/block.out" && break; sleep 0.05; done
grep -q READY "$tmp/block.out" || { echo "provider process not ready"; kill \$p; exit 1; }
sleep 0.2
s=\$(date +%s%N)
kill -9 "\$(cat "\$DNP_RUN_DIR/node-0.pid")"
for i in \$(seq 500); do kill -0 \$p 2>/dev/null || break; sleep 0.01; done
e=\$(date +%s%N)
if kill -0 \$p 2>/dev/null; then
	echo "provider process still blocked 5 s after its daemon was killed"
	kill -9 \$p
	wait \$p
	exit 1
fi
wait \$p
rc=\$?
cat "$tmp/block.out"
echo "provider process returned \$(((e - s) / 1000000)) ms after its daemon was killed, exit \$rc"
[ \$rc -eq 3 ]
DD
	chmod +x dd.sh
	timed dnp "$run" --torus 2x1x1 --timeout 60 --daemon-death continue -- "$tmp/dd.sh" \
		>dnp.out 2>&1
	rc=$?
	cat dnp.out
	grep -q 'provider process returned .* exit 3$' dnp.out ||
		fail "the provider process did not return an error after its daemon died"
	echo "OK: a killed daemon makes a waiting provider process return an error"
}

mpirun_ref() {
	local root=
	[ "$(id -u)" -eq 0 ] && root=--allow-run-as-root
	timeout 120 mpirun $root --oversubscribe --bind-to none -np 4 \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$ref" \
		-x FI_PROVIDER="$ref" "$@"
}
mpirun_dnp() { DNP_BUILD=$build "$src/dnp" mpirun --timeout 120 "$@"; }

mpi_c() {
	need mpirun openmpi-bin
	need mpicc libopenmpi-dev
	mpicc -std=gnu11 -O2 -o mpi_conform "$here/mpi_conform.c" || skip "mpicc cannot build"
	timed ref mpirun_ref ./mpi_conform all >ref.out 2>&1
	rc=$?
	cat ref.out
	[ $rc -eq 0 ] || fail "reference $ref: mpi_conform exited $rc"
	timed dnp mpirun_dnp --torus 2x1x1 -np 4 -- "$tmp/mpi_conform" all >dnp.out 2>&1
	rc=$?
	cat dnp.out
	[ $rc -eq 0 ] || fail "dnp: mpi_conform exited $rc"
	grep -q 'PASS mpi_conform: 0 failed' dnp.out || fail "dnp: no PASS line"
	echo "OK: MPI programs pass on $ref and dnp (4 ranks, 2 per node)"
}

mpi_py() {
	local tr=${t#mpi-py-}
	need mpirun openmpi-bin
	/usr/bin/python3 -c 'import mpi4py' 2>/dev/null || skip "no mpi4py (Debian package python3-mpi4py)"
	if [ "$tr" = dpdk ]; then
		[ "${DNP_HAVE_DPDK:-1}" = 1 ] || skip "this build has no DPDK"
		[ "$(id -u)" -eq 0 ] || skip "dpdk needs root (network namespaces, veth, packet sockets)"
		command -v ip >/dev/null 2>&1 || skip "no 'ip' (iproute2) for the namespace testbed"
	fi
	if [ "$tr" = shm ]; then # the reference once, not per transport
		timed ref mpirun_ref /usr/bin/python3 "$here/mpi_conform.py" >ref.out 2>&1
		rc=$?
		cat ref.out
		[ $rc -eq 0 ] || fail "reference $ref: mpi_conform.py exited $rc"
	fi
	timed dnp mpirun_dnp --torus 2x1x1 --transport "$tr" -np 4 -- \
		/usr/bin/python3 "$here/mpi_conform.py" >dnp.out 2>&1
	rc=$?
	cat dnp.out
	[ $rc -eq 0 ] || fail "dnp ($tr): mpi_conform.py exited $rc"
	grep -q 'PASS mpi_conform.py: 0 failed' dnp.out || fail "dnp ($tr): no PASS line"
	echo "OK: Python MPI programs pass over dnp ($tr)"
}

case $t in
fi-peek | fi-cq-data | fi-inject-write | fi-rma-read | fi-two-ep | fi-src-addr | fi-eq-sread | \
	fi-inject-nosel | fi-cntr) fi_single ;;
second-client) second_client ;;
daemon-death) daemon_death ;;
mpi-c) mpi_c ;;
mpi-py-shm | mpi-py-udp | mpi-py-dpdk) mpi_py ;;
*)
	echo "unknown test $t" >&2
	exit 2
	;;
esac
