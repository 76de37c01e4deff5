#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test-dnp-topo.sh BUILD TOPO — dnp topo (apps/dnp-topo):
#  1. a udp host list -> one file per host with the expected coordinates and
#     link endpoints, and --check accepts them;
#  2. bad lists are refused with the reason: shared coordinates, too few
#     hosts, a dpdk cable with one end, a duplicated MAC;
#  3. a dpdk list -> each link sends to its neighbour's opposite port MAC;
#  4. a file edited by hand so that a link points at the wrong endpoint is
#     refused by --check;
#  5. the files drive a real torus: eight dnpd on 127.77.0.1-8 (udp), each
#     with its own run directory, and dnp_alltoall on every node finds its
#     daemon through DNP_SOCKET=DIR/%N/dnpd.sock (libdnp's Slurm patterns,
#     SLURMD_NODENAME set per node) and verifies every byte; a pattern it
#     does not know (%q), or %n without SLURM_NODEID, is refused.
set -u
build=$1
topo=$2
tmp=$(mktemp -d /tmp/cluster-topo.XXXXXX)
run=/dev/shm/$(basename "$tmp")
pids=
fail=0

cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp" "$run"
}
trap cleanup EXIT INT TERM

bad() {
	echo "FAIL: $*"
	fail=1
}

# expect_fail WHAT PATTERN ARGS...: dnp topo must exit 1 and print PATTERN.
expect_fail() {
	what=$1 pat=$2
	shift 2
	if "$topo" "$@" >"$tmp/out" 2>&1; then
		bad "$what: accepted"
	elif ! grep -q "$pat" "$tmp/out"; then
		bad "$what: no '$pat' in:"; cat "$tmp/out"
	else
		echo "ok: $what: $(grep "$pat" "$tmp/out" | head -n 1)"
	fi
}

# 1. udp
i=0
while [ $i -lt 8 ]; do
	echo "n$i addr=127.77.0.$((i + 1))"
	i=$((i + 1))
done >"$tmp/hosts"
"$topo" --torus 2x2x2 --hosts "$tmp/hosts" --transport udp --out "$tmp/udp" \
	--udp-port 46100 --run-dir "$run/%h" || bad "udp list refused"
grep -qx 'coord = 1,0,0' "$tmp/udp/n1.ini" || bad "n1 is not 1,0,0"
grep -qx 'coord = 1,1,1' "$tmp/udp/n7.ini" || bad "n7 is not 1,1,1"
grep -qx 'xp = 127.77.0.2:46100,127.77.0.1:46101' "$tmp/udp/n1.ini" || bad "n1 X+ endpoints"
grep -qx 'zm = 127.77.0.8:46105,127.77.0.4:46104' "$tmp/udp/n7.ini" || bad "n7 Z- endpoints"
grep -qx "socket = $run/n3/dnpd.sock" "$tmp/udp/n3.ini" || bad "n3 socket"
grep -qx 'n6 6 0,1,1 127.77.0.7' "$tmp/udp/hosts.map" || bad "hosts.map line of n6"
"$topo" --check "$tmp/udp" >/dev/null || bad "--check refuses its own output"

# Explicit coordinates: the others fill the free places in id order.
{ echo "a coord=1,1,0 addr=10.0.0.1"; echo "b addr=10.0.0.2"; echo "c 10.0.0.3"
  echo "d addr=10.0.0.4"; } >"$tmp/hosts2"
"$topo" --torus 2x2x1 --hosts "$tmp/hosts2" --transport udp --out "$tmp/udp2" >/dev/null ||
	bad "2x2x1 list refused"
grep -qx 'coord = 0,0,0' "$tmp/udp2/b.ini" && grep -qx 'coord = 1,0,0' "$tmp/udp2/c.ini" &&
	grep -qx 'coord = 1,1,0' "$tmp/udp2/a.ini" || bad "free coordinates not in id order"
grep -q '^zp' "$tmp/udp2/a.ini" && bad "a Z link in a dimension of size 1"
# One machine: a shared address gets ports per node id.
printf 'p 127.0.0.1\nq 127.0.0.1\n' >"$tmp/hosts3"
"$topo" --torus 2x1x1 --hosts "$tmp/hosts3" --transport udp --out "$tmp/udp3" >/dev/null &&
	grep -qx 'xp = 127.0.0.1:47008,127.0.0.1:47001' "$tmp/udp3/q.ini" ||
	bad "shared address: ports not per node"

# 2. bad lists
sed 's/^n3 .*/n3 coord=0,0,0 addr=127.77.0.4/' "$tmp/hosts" >"$tmp/dup"
sed -i 's/^n0 .*/n0 coord=0,0,0 addr=127.77.0.1/' "$tmp/dup"
expect_fail "shared coordinates" "share coordinates 0,0,0" --torus 2x2x2 --hosts "$tmp/dup" \
	--transport udp --out "$tmp/x"
head -n 7 "$tmp/hosts" >"$tmp/seven"
expect_fail "7 hosts" "7 hosts for a 2x2x2 torus" --torus 2x2x2 --hosts "$tmp/seven" \
	--transport udp --out "$tmp/x"
[ -e "$tmp/x" ] && bad "files written despite errors"

# 3. dpdk: a 4x1x1 ring cabled port to port.
mac() { printf '02:00:00:00:%02x:%02x' "$1" "$2"; }
i=0
while [ $i -lt 4 ]; do
	echo "h$i xp=af_packet:eth1@$(mac $i 0) xm=af_packet:eth2@$(mac $i 1)"
	i=$((i + 1))
done >"$tmp/cabled"
"$topo" --torus 4x1x1 --hosts "$tmp/cabled" --transport dpdk --out "$tmp/dpdk" >/dev/null ||
	bad "dpdk list refused"
grep -qx "xp = af_packet:eth1,$(mac 2 1)" "$tmp/dpdk/h1.ini" || bad "h1 X+ not to h2's X- MAC"
grep -qx "xm = af_packet:eth2,$(mac 3 0)" "$tmp/dpdk/h0.ini" || bad "h0 X- not to h3's X+ MAC"
"$topo" --check "$tmp/dpdk" >/dev/null || bad "--check refuses the dpdk output"
sed '3s/ xm=.*//' "$tmp/cabled" >"$tmp/one"
expect_fail "dpdk cable with one end" "X+ has no other end: h2 (2,0,0) lists no X- port" \
	--torus 4x1x1 --hosts "$tmp/one" --transport dpdk --out "$tmp/x"
sed "s/$(mac 3 0)/$(mac 1 0)/" "$tmp/cabled" >"$tmp/dupmac"
expect_fail "duplicated MAC" "MAC $(mac 1 0) of h3 X+ is also h1 X+" \
	--torus 4x1x1 --hosts "$tmp/dupmac" --transport dpdk --out "$tmp/x"

# 4. a hand-edited file pointing a link at the wrong endpoint
cp -r "$tmp/udp" "$tmp/edit"
sed -i 's/^xp = 127.77.0.2:46100,.*/xp = 127.77.0.2:46100,127.77.0.5:46101/' "$tmp/edit/n1.ini"
expect_fail "--check on a miswired file" \
	"n1.ini (1,0,0) X+ sends to 127.77.0.5:46101, but n0.ini (0,0,0) X- binds 127.77.0.1:46101" \
	--check "$tmp/edit"
sed 's/\(\(xm\|ym\) = af_packet:eth2\),.*/\1,02:00:00:00:99:99/' "$tmp/dpdk/h2.ini" >"$tmp/h2"
cp -r "$tmp/dpdk" "$tmp/edit2" && cp "$tmp/h2" "$tmp/edit2/h2.ini"
expect_fail "--check on a wrong MAC" "h2.ini (2,0,0) X- sends to 02:00:00:00:99:99" \
	--check "$tmp/edit2"

# 5. a live torus from the files
dnpd=$build/dnp-core/dnpd/dnpd
a2a=$build/apps/dnp_alltoall
if [ ! -x "$dnpd" ] || [ ! -x "$a2a" ]; then
	bad "no $dnpd or $a2a"
	exit 1
fi
mkdir -p "$run"
i=0
while [ $i -lt 8 ]; do
	"$dnpd" --config "$tmp/udp/n$i.ini" 2>"$tmp/dnpd-$i.log" &
	pids="$pids $!"
	i=$((i + 1))
done
t=0
while [ "$(ls "$run"/n*/node-*.up 2>/dev/null | wc -l)" -lt 8 ]; do
	t=$((t + 1))
	[ $t -lt 300 ] || { bad "links not up after 30 s"; cat "$tmp"/dnpd-*.log; exit 1; }
	sleep 0.1
done
apids=
i=0
while [ $i -lt 8 ]; do
	SLURMD_NODENAME=n$i DNP_SOCKET="$run/%N/dnpd.sock" DNP_APP_TIMEOUT=60 \
		"$a2a" --sizes 8,64K >"$tmp/a2a-$i.log" 2>&1 &
	apids="$apids $!"
	i=$((i + 1))
done
for p in $apids; do wait "$p" || bad "dnp_alltoall (pid $p) failed"; done
i=0
while [ $i -lt 8 ]; do
	grep -q 'all bytes verified' "$tmp/a2a-$i.log" || { bad "node n$i:"; cat "$tmp/a2a-$i.log"; }
	i=$((i + 1))
done
[ $fail -eq 0 ] && echo "ok: 8 daemons from dnp topo files, all-to-all verified on every node"
# A pattern libdnp does not know, or a Slurm variable that is not set, is refused.
if DNP_SOCKET="$run/%q/dnpd.sock" "$a2a" >"$tmp/pat" 2>&1; then
	bad "DNP_SOCKET with %q accepted"
elif ! grep -q 'invalid argument' "$tmp/pat"; then
	bad "DNP_SOCKET with %q:"; cat "$tmp/pat"
fi
if env -u SLURM_NODEID DNP_SOCKET="$run/n%n/dnpd.sock" "$a2a" >"$tmp/pat" 2>&1; then
	bad "DNP_SOCKET with %n and no SLURM_NODEID accepted"
fi
for p in $pids; do kill "$p" 2>/dev/null; done
for p in $pids; do wait "$p" || bad "a dnpd exited with an error"; done
pids=
exit $fail
