#!/bin/sh
# SPDX-License-Identifier: MIT
# The provider's traffic classes on the wire (suite 'mpi'): a 2x1x1 shm torus
# with --arbitration strict, node 0 capturing its frames (--pcap); fabric/
# fi_dnp_check --tc writes 1000 + i bytes from one endpoint per libfabric
# tclass (fi_dnp_check prints the list). Read back with tshark and the DNP
# dissector: every PUT frame of that length must carry the class of the
# table in docs/mpi.md ("Traffic classes in the provider").
# usage: fi-tc.sh BUILD_DIR DISSECTOR.lua
# Exit 77 without tshark or the provider.
set -u
build=$1
lua=$2
fidir=$build/fabric
command -v tshark >/dev/null 2>&1 || { echo "SKIP: tshark is not installed"; exit 77; }
[ -f "$fidir/libdnp-fi.so" ] || { echo "SKIP: libdnp-fi.so not built"; exit 77; }
. "$(dirname "$0")/lib.sh"
dnp_tools "$build"
need_built "$dnpd" "$fidir/fi_dnp_check"
run_dir /dev/shm/softdnp-fi-tc-$$
fail() { fail_logs "$@"; }
[ -r "$lua" ] || fail "no dissector at $lua"

for id in 0 1; do
	pcap=""
	[ $id = 0 ] && pcap="--pcap $dir/n0.pcapng"
	# shellcheck disable=SC2086 # pcap: an option and its path without blanks
	"$dnpd" --torus 2x1x1 --coord $id,0,0 --run-dir "$dir" --transport shm \
		--arbitration strict $pcap >"$dir/dnpd-$id.log" 2>&1 &
	pids="$pids $!"
done
wait_links_up 20 0 1
FI_PROVIDER_PATH=$fidir DNP_RUN_DIR=$dir DNP_NNODES=2 timeout 60 "$fidir/fi_dnp_check" --tc \
	>"$dir/tc.out" 2>&1 || fail "fi_dnp_check --tc failed: $(cat "$dir/tc.out")"
cat "$dir/tc.out"
sleep 0.2
for p in $pids; do kill "$p"; done
for p in $pids; do wait "$p"; done
pids=""
timeout 60 tshark -n -X lua_script:"$lua" -r "$dir/n0.pcapng" -T fields -E separator=/t \
	-E occurrence=f -e dnp.kind -e dnp.msg_len -e dnp.fstatus.tc >"$dir/tc.tsv" \
	2>"$dir/tshark.log" || fail "tshark could not read the capture"
# tclass (fi_dnp_check's list) -> the DNP class expected on the wire
bad=0
while read -r _ i _ tclass _ len; do
	case $tclass in
	0x0 | 0) want=0 ;;        # FI_TC_UNSPEC
	0x204) want=0 ;;          # FI_TC_SCAVENGER
	0x203) want=1 ;;          # FI_TC_BULK_DATA
	0x200) want=2 ;;          # FI_TC_BEST_EFFORT
	0x201) want=5 ;;          # FI_TC_LOW_LATENCY
	0x202) want=6 ;;          # FI_TC_DEDICATED_ACCESS
	0x205) want=7 ;;          # FI_TC_NETWORK_CTRL
	0x12e) want=5 ;;          # FI_TC_DSCP | 46 (EF): 46 >> 3
	0x118) want=3 ;;          # FI_TC_DSCP | 24 (CS3)
	*) fail "unexpected tclass $tclass" ;;
	esac
	got=$(awk -F'\t' -v l="$len" '$2 == l { print $3 }' "$dir/tc.tsv" | sort -u | tr '\n' ' ')
	echo "  tclass $tclass ($len B): class on the wire: ${got:-none}, expected $want"
	[ "$got" = "$want " ] || bad=1
done <<EOT
$(sed -n 's/^tc \([0-9]*\) tclass \(0x[0-9a-f]*\|0\) len \([0-9]*\)$/tc \1 tclass \2 len \3/p' "$dir/tc.out")
EOT
n=$(grep -c '^tc ' "$dir/tc.out")
[ "$n" -eq 9 ] || fail "$n of 9 classes written"
[ $bad = 0 ] || fail "a class did not reach the wire as the table says"
echo "PASS fi-tc"
