#!/bin/sh
# SPDX-License-Identifier: MIT
#
# slurm.sh BUILD SRC udp|dpdk — SoftDNP on a real Slurm cluster (suite 'slurm').
#
# tests/testbed/slurm-cluster.sh builds an eight-host cluster on this machine:
# one network namespace per host (the netns.sh torus of veth pairs, plus a
# management bridge), one slurmd per namespace, slurmctld and munged in the
# root namespace. dnp topo turns the cluster's host list (udp: the hosts'
# management addresses; dpdk: each host's af_packet port and MAC per
# direction) into one dnpd file per host. Then two Slurm jobs, each with one
# dnpd per host as a job step:
#  1. sbatch --wait -N 8 dnp-slurm --topo DIR -- dnp_alltoall: the sbatch
#     wrapper (the batch script runs on host n0, inside its namespace); every
#     rank must report "all bytes verified";
#  2. salloc -N 8 with the steps written out by hand: srun dnpd on every host,
#     then srun dnp_pingpong --peer 1,1,1 where each rank finds its host's
#     daemon only through DNP_SOCKET=RUN/%N/dnpd.sock (libdnp expands %N to
#     SLURMD_NODENAME); the ping-pong across the torus (3 hops) must report
#     its sizes.
# Everything started here is stopped by PID; the namespaces, the bridge and
# the files are removed. Exit 77 (skipped) when not root, without the Slurm
# packages (./dnp test as root installs them), or for dpdk without DPDK.
set -u
build=$1
src=$2
tr=$3

skip() {
	echo "SKIP: $*"
	exit 77
}

[ "$(id -u)" -eq 0 ] || skip "the slurm suite needs root (network namespaces, slurmd)"
for p in slurmctld slurmd munged srun sbatch salloc sinfo nsenter ip python3; do
	command -v $p >/dev/null 2>&1 ||
		skip "no $p (Debian slurmctld slurmd slurm-client munge iproute2; ./dnp test as root installs them)"
done
[ "$tr" = dpdk ] && [ "${DNP_HAVE_DPDK:-1}" != 1 ] && skip "this build has no DPDK"
dnpd=$build/dnp-core/dnpd/dnpd
for p in "$dnpd" "$build/apps/dnp_alltoall" "$build/apps/dnp_pingpong"; do
	[ -x "$p" ] || skip "$p is not built"
done

prefix=cl$(($$ % 100000))${tr%"${tr#?}"}
dir=$(mktemp -d /tmp/cluster-slurm.XXXXXX)
run=/dev/shm/$prefix
cluster=$src/tests/testbed/slurm-cluster.sh
netns_sh=$src/tests/testbed/netns.sh
fail=0

cleanup() {
	sh "$cluster" down "$prefix" "$dir" "$netns_sh"
	rm -rf "$dir" "$run"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

bad() {
	echo "FAIL: $*"
	fail=1
}

t0=$(date +%s.%N)
sh "$cluster" up 2x2x2 "$prefix" "$dir" "$netns_sh" || { echo "FAIL: cluster"; exit 1; }
export SLURM_CONF=$dir/slurm.conf
echo "cluster $prefix up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s:"
sinfo -N -h -o '  %N %t %o'

python3 "$src/apps/dnp-topo" --torus 2x2x2 --hosts "$dir/hosts.$tr" --transport "$tr" \
	--out "$dir/topo" --run-dir "$run/%h" || { echo "FAIL: dnp topo"; exit 1; }
mkdir -p "$run"

# Job 1: the sbatch wrapper.
echo "+ sbatch --wait -N 8 dnp-slurm --topo DIR -- dnp_alltoall --sizes 1,4095,65536"
sbatch --wait -N 8 -o "$dir/job1.out" -e "$dir/job1.out" -J dnp-alltoall \
	"$src/deploy/slurm/dnp-slurm" --topo "$dir/topo" --dnpd "$dnpd" --timeout 30 -- \
	"$build/apps/dnp_alltoall" --sizes 1,4095,65536 >/dev/null
rc=$?
sed 's/^/  | /' "$dir/job1.out"
echo "job 1 done at $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
[ $rc -eq 0 ] || bad "job 1 (sbatch dnp-slurm dnp_alltoall) exited $rc"
n=$(grep -c 'all bytes verified' "$dir/job1.out")
[ "$n" -eq 8 ] || bad "job 1: $n of 8 ranks verified their bytes"
hosts=$(grep -o 'node [01],[01],[01]' "$dir/job1.out" | sort -u | wc -l)
[ "$hosts" -eq 8 ] || bad "job 1: ranks on $hosts distinct torus nodes, not 8"

# Job 2: steps by hand, the daemon found through DNP_SOCKET with %N.
cat >"$dir/job2.sh" <<EOF
#!/bin/sh
srun --overlap -N 8 --ntasks-per-node=1 -J dnpd sh -c 'exec "$dnpd" --config "$dir/topo/\$SLURMD_NODENAME.ini"' &
d=\$!
srun --overlap -N 8 --ntasks-per-node=1 "$src/deploy/slurm/dnp-slurm" --node-wait "$dir/topo" 30 || exit 1
DNP_SOCKET='$run/%N/dnpd.sock' srun --overlap -N 8 --ntasks-per-node=1 \
	"$build/apps/dnp_pingpong" --peer 1,1,1 --sizes 8,4096,65536 --iters 50
rc=\$?
scancel --signal=TERM "\$(squeue -h -s -j \$SLURM_JOB_ID -o '%i %j' | awk '\$2 == "dnpd" { print \$1 }')"
wait \$d || rc=1
exit \$rc
EOF
echo "+ salloc -N 8 job2.sh (srun dnpd &; srun dnp_pingpong --peer 1,1,1)"
DNP_APP_TIMEOUT=40 timeout 200 salloc -N 8 -J dnp-pingpong sh "$dir/job2.sh" >"$dir/job2.out" 2>&1
rc=$?
sed 's/^/  | /' "$dir/job2.out"
[ $rc -eq 0 ] || bad "job 2 (salloc srun dnp_pingpong) exited $rc"
grep -q 'PUT ping-pong 0,0,0 <-> 1,1,1 (3 hops)' "$dir/job2.out" || bad "job 2: no 3-hop ping-pong"
grep -Eq '^ +65536 +50 ' "$dir/job2.out" || bad "job 2: no 65536-byte row"

# Every dnpd of both jobs is gone (srun forwarded SIGTERM); none was left running.
left=$(ls "$run"/n*/dnpd.sock 2>/dev/null | wc -l)
[ "$left" -eq 0 ] || bad "$left daemon sockets left behind (a dnpd did not stop cleanly)"
[ $fail -eq 0 ] && echo "PASS: slurm-$tr (total $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s)"
exit $fail
