#!/bin/sh
# SPDX-License-Identifier: MIT
#
# slurm-cluster.sh — a real multi-node Slurm cluster on one machine, over the
# namespace testbed (netns.sh): one slurmd per network namespace, slurmctld
# and munged in the root namespace (root only; Debian's slurmctld, slurmd,
# slurm-client and munge).
#
#   slurm-cluster.sh up XxYxZ PREFIX DIR NETNS_SH   build it; prints nothing on success
#   slurm-cluster.sh down PREFIX DIR NETNS_SH       stop and remove all of it (by PID)
#
# "up" runs "netns.sh up XxYxZ PREFIX DIR" (namespaces PREFIX-<id>, veth
# pairs cabled as a torus, for the dpdk transport) and adds a management
# network: a bridge PREFIXb in the root namespace, 10.<a>.<b>.254/24, and
# in namespace PREFIX-<id> an interface mgmt with 10.<a>.<b>.<id+1>, where
# a.b is derived from the PREFIX (so two clusters do not collide). The hosts
# are named n<id>; Slurm reaches them on their mgmt address, and so does the
# udp transport ("host addresses"). In DIR:
#   hosts.udp       the host list for dnp topo --transport udp (n<id> addr=...)
#   hosts.dpdk      the host list for dnp topo --transport dpdk (n<id> xp=af_packet:IF@MAC ...)
#   slurm.conf      export SLURM_CONF=DIR/slurm.conf for srun/sbatch/sinfo
#   munge/          key, socket (AuthInfo), log
#   *.pid, log/     the daemons (all started by this script, stopped by PID)
#
# Traps (shared/notes/machine-facts.md, "Slurm in network namespaces"): each
# slurmd is started with nsenter --net (ip netns exec remounts /sys and hides
# the cgroup mounts), SlurmctldHost carries the bridge address (the host name
# resolves to 127.0.0.1, a namespace's own loopback), per-node paths use %n,
# proctrack/linuxproc and task/none.
set -eu

die() {
	echo "slurm-cluster.sh: $*" >&2
	exit 1
}

# a.b of the management network, from a hash of the prefix (10.200-249.x).
net_of() {
	h=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
	echo "$((200 + h % 50)).$(((h / 50) % 256))"
}

# stop_pids FILE...: SIGTERM to the PID in each file, at once; SIGKILL to those
# still alive 5 s later (slurmctld and munged can take that long).
stop_pids() {
	sp_list=
	for f in "$@"; do
		[ -r "$f" ] || continue
		p=$(cat "$f")
		rm -f "$f"
		[ -n "$p" ] && kill "$p" 2>/dev/null && sp_list="$sp_list $p"
	done
	t=0
	while [ $t -lt 50 ]; do
		alive=
		for p in $sp_list; do
			kill -0 "$p" 2>/dev/null && alive="$alive $p"
		done
		[ -z "$alive" ] && return 0
		sleep 0.1
		t=$((t + 1))
	done
	for p in $alive; do
		kill -9 "$p" 2>/dev/null || true
	done
}

do_down() {
	prefix=$1 dir=$2 netns_sh=$3
	stop_pids "$dir"/slurmd-*.pid "$dir/slurmctld.pid" "$dir/munged.pid"
	ip link delete "${prefix}b" 2>/dev/null || true
	sh "$netns_sh" down "$prefix" "$dir" >/dev/null 2>&1 || true
}

# clean CMD...: exec CMD with no descriptor but 0-2. The daemons outlive this
# script: they must not keep what its caller holds (the lock of
# "flock /tmp/softdnp-heavy.lock ...", pipes of the test harness).
clean() {
	exec python3 -c 'import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

# wait_for WHAT TRIES CMD...: retry CMD every 0.1 s.
wait_for() {
	wf_what=$1 wf_n=$2
	shift 2
	t=0
	until "$@" >/dev/null 2>&1; do
		t=$((t + 1))
		[ $t -lt "$wf_n" ] || die "timed out waiting for $wf_what"
		sleep 0.1
	done
}

do_up() {
	dims=$1 prefix=$2 dir=$3 netns_sh=$4
	[ ${#prefix} -le 10 ] || die "prefix '$prefix' longer than 10 characters (bridge name)"
	trap 'do_down "$prefix" "$dir" "$netns_sh"; exit 1' EXIT INT TERM HUP
	sh "$netns_sh" up "$dims" "$prefix" "$dir" >/dev/null
	topo=$dir/$prefix.topo
	n=$(awk '/^# dims/ { print $3 * $4 * $5 }' "$topo")
	net=10.$(net_of "$prefix")
	br=${prefix}b

	ip link add "$br" type bridge
	ip addr add "$net.254/24" dev "$br"
	ip link set "$br" up
	: >"$dir/hosts.udp"
	: >"$dir/hosts.dpdk"
	nodes=
	i=0
	while [ $i -lt "$n" ]; do
		ns=$prefix-$i
		ip link add "${prefix}m$i" type veth peer name mgmt netns "$ns"
		ip link set "${prefix}m$i" master "$br" up
		ip -n "$ns" addr add "$net.$((i + 1))/24" dev mgmt
		ip -n "$ns" link set mgmt up
		echo "n$i addr=$net.$((i + 1))" >>"$dir/hosts.udp"
		awk -v id=$i '!/^#/ && $1 == id { printf " %s=af_packet:%s@%s", $2, $5, $6 }
			END { print "" }' "$topo" | sed "s/^/n$i/" >>"$dir/hosts.dpdk"
		nodes="$nodes
NodeName=n$i NodeAddr=$net.$((i + 1)) CPUs=$(nproc)"
		i=$((i + 1))
	done

	# munged, by hand, with its own key and socket (directory mode 755).
	mkdir -p "$dir/munge" "$dir/log"
	chmod 700 "$dir/munge"
	dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
	chmod 400 "$dir/munge/munge.key"
	mkdir -p "$dir/munge/sock"
	chmod 755 "$dir/munge" "$dir/munge/sock"
	(clean munged -f --key-file="$dir/munge/munge.key" --socket="$dir/munge/sock/munge.socket" \
		--pid-file="$dir/munged.pid" --log-file="$dir/munge/munged.log" \
		--seed-file="$dir/munge/munged.seed" >"$dir/log/munged.out" 2>&1)
	wait_for munged 50 test -S "$dir/munge/sock/munge.socket"

	# Ports of this cluster: from the prefix too (slurmctld binds in the root namespace).
	h=$(printf '%s' "$prefix" | cksum | cut -d' ' -f1)
	cport=$((16000 + (h % 2000) * 2))
	cat >"$dir/slurm.conf" <<EOF
# slurm-cluster.sh: cluster $prefix
ClusterName=$prefix
SlurmctldHost=$(hostname)($net.254)
SlurmctldPort=$cport
SlurmdPort=$((cport + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/sock/munge.socket
StateSaveLocation=$dir/ctld
SlurmctldPidFile=$dir/slurmctld.pid.slurm
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdSpoolDir=$dir/spool/%n
SlurmdPidFile=$dir/spool/%n/slurmd.pid
SlurmdLogFile=$dir/log/slurmd-%n.log
TmpFS=$dir/tmp/%n
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MessageTimeout=10
$nodes
PartitionName=dnp Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
	mkdir -p "$dir/ctld"
	i=0
	while [ $i -lt "$n" ]; do
		mkdir -p "$dir/spool/n$i" "$dir/tmp/n$i"
		i=$((i + 1))
	done
	clean slurmctld -D -i -f "$dir/slurm.conf" >"$dir/log/slurmctld.out" 2>&1 &
	echo $! >"$dir/slurmctld.pid"
	i=0
	while [ $i -lt "$n" ]; do
		clean nsenter --net="/run/netns/$prefix-$i" \
			slurmd -D -f "$dir/slurm.conf" -N "n$i" >"$dir/log/slurmd-n$i.out" 2>&1 &
		echo $! >"$dir/slurmd-n$i.pid"
		i=$((i + 1))
	done
	export SLURM_CONF="$dir/slurm.conf"
	wait_for "$n idle nodes" 300 sh -c \
		"[ \$(sinfo -h -N -t idle -o %N 2>/dev/null | wc -l) -ge $n ]"
	trap - EXIT INT TERM HUP
}

[ $# -ge 1 ] || { echo "usage: $0 up XxYxZ PREFIX DIR NETNS_SH | down PREFIX DIR NETNS_SH" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || die "must run as root"
case $1 in
up)
	[ $# -eq 5 ] || die "usage: up XxYxZ PREFIX DIR NETNS_SH"
	do_up "$2" "$3" "$4" "$5"
	;;
down)
	[ $# -eq 4 ] || die "usage: down PREFIX DIR NETNS_SH"
	do_down "$2" "$3" "$4"
	;;
*)
	die "unknown command $1"
	;;
esac
