#!/bin/sh
# SPDX-License-Identifier: MIT
#
# netns.sh — a multi-host torus testbed on one machine: one network namespace
# per node, one veth pair per torus link (docs/dpdk.md, "Testbed").
#
#   netns.sh up XxYxZ PREFIX [DIR]   create; writes DIR/PREFIX.topo (DIR: /tmp)
#   netns.sh down PREFIX [DIR]       remove what "up" created
#   netns.sh ini PREFIX ID [DIR] [dpdk|udp]
#                                    print node ID's [links] section for dnpd
#                                    dpdk (default): "dir = af_packet:IFNAME,PEER_MAC"
#                                    udp: "dir = ADDR:PORT,PEER_ADDR:PORT" (needs
#                                    NETNS_IPV4=1 at "up")
#
# NETNS_IPV4=1 at "up" also gives every veth pair an IPv4 /30 from the
# benchmarking range 198.18.0.0/15 (RFC 2544): the pair created for node n's +
# link in dimension d (d = 0..2) is number k = 3n + d, 198.18.0.0 + 4k; its +
# end (d<n>-xp, ...) gets .1, its - end .2. dnpd's udp links then run over the
# same veths as the dpdk ones (port NETNS_UDP_PORT, default 47000, on every
# address). The topo lines get two more columns: own and peer address.
# Without it no address is set, so the kernel never sends anything on the links.
#
# Node ids are x + X*(y + Y*z) (dnp-core/torus.h); node id lives in namespace
# PREFIX-<id>. Directions xp xm yp ym zp zm are the torus order X+ X- Y+ Y- Z+ Z-
# (dnp_dir 0..5). The X+ port of a node is cabled to the X- port of its X+
# neighbour, so a dimension of size 2 gets two distinct veth pairs between the
# same two nodes, and a dimension of size 1 none. Interfaces are named
# d<id>-<dir> (at most 12 characters up to 16M nodes; IFNAMSIZ is 16), MTU 9000,
# IPv6 disabled in every namespace (no neighbour discovery traffic on the links).
#
# The LO|FA|MO service network (docs/lofamo.md), separate from the torus so
# it can be cut on its own: a namespace PREFIX-svc holding a bridge "svcbr"
# with 100.64.0.1/10 (the RFC 6598 shared address range: nothing on the
# machine routes it, and every namespace is private anyway), and in every
# node's namespace an interface "svc" with 100.64.0.0 + id + 2, its veth peer
# s<id> enslaved to the bridge. The Fault Supervisor runs in PREFIX-svc and
# listens on 100.64.0.1:NETNS_SVC_PORT (default 47100); each node's dnp-hfm
# runs in its node's namespace and reaches it over its "svc" veth, so
# `ip -n PREFIX-<id> link set dev svc down` cuts that node's service network
# and nothing else. NETNS_SVC=0 at "up" leaves the service network out.
#
# DIR/PREFIX.topo, one line per node and direction that has a link:
#   <id> <dir> <dir number> <namespace> <ifname> <own MAC> <peer id> <peer ifname> <peer MAC>
# preceded by "# dims X Y Z", with the service network
# "# svc <namespace> <supervisor address> <port>", and a column comment. Exit status 0 on success;
# on any failure during "up" everything created so far is removed.
set -eu

MTU=${NETNS_MTU:-9000}
IPV4=${NETNS_IPV4:-0}
UDP_PORT=${NETNS_UDP_PORT:-47000}
SVC=${NETNS_SVC:-1}
SVC_PORT=${NETNS_SVC_PORT:-47100}

usage() {
	echo "usage: $0 up XxYxZ PREFIX [DIR] | down PREFIX [DIR] | ini PREFIX ID [DIR] [dpdk|udp]" >&2
	exit 2
}

die() {
	echo "netns.sh: $*" >&2
	exit 1
}

# Namespaces named PREFIX-<digits> (only those this script could have made).
list_ns() {
	ip netns list 2>/dev/null | awk -v p="$1-" '{
		if (index($1, p) == 1 && substr($1, length(p) + 1) ~ /^[0-9]+$/) print $1 }'
}

do_down() {
	prefix=$1
	dir=$2
	for ns in $(list_ns "$prefix"); do
		ip netns delete "$ns" 2>/dev/null || true
	done
	# the service network's namespace (its veths and bridge go with it)
	if ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$prefix-svc"; then
		ip netns delete "$prefix-svc" 2>/dev/null || true
	fi
	rm -f "$dir/$prefix.topo" "$dir/$prefix.topo.tmp"
	# DPDK primaries leave their runtime directory behind.
	rm -rf /var/run/dpdk/rte
}

# The helpers below set a variable instead of printing, so the loops over
# nodes and links fork nothing but ip (a fork costs milliseconds on a VM,
# and the testbed is built before every DPDK test).

# dimension d's size (0..2) -> DSIZE
dim_size() {
	case $1 in 0) DSIZE=$DX ;; 1) DSIZE=$DY ;; *) DSIZE=$DZ ;; esac
}

# direction number 0..5 -> its name DNAME (xp xm yp ym zp zm)
dir_name() {
	case $1 in 0) DNAME=xp ;; 1) DNAME=xm ;; 2) DNAME=yp ;; 3) DNAME=ym ;; 4) DNAME=zp ;; *) DNAME=zm ;; esac
}

# neighbour id of node (x,y,z) in dimension d (0..2) towards sign s (+1/-1) -> NB
nbr() {
	_x=$1 _y=$2 _z=$3 _d=$4 _s=$5
	case $_d in
	0) _x=$(( (_x + _s + DX) % DX )) ;;
	1) _y=$(( (_y + _s + DY) % DY )) ;;
	2) _z=$(( (_z + _s + DZ) % DZ )) ;;
	esac
	NB=$(( _x + DX * (_y + DY * _z) ))
}

# IPv4 address of the +end (e=1) or -end (e=2) of pair number k (see the header) -> ADDR
addr_of() {
	_v=$(( 4 * $1 + $2 ))
	ADDR="198.$(( 18 + _v / 65536 )).$(( (_v / 256) % 256 )).$(( _v % 256 ))"
}

# The MAC of every torus interface of node id's namespace, as mac_<id>_<dir>.
read_macs() {
	eval "$(ip -n "$prefix-$1" -o link show | awk -v id="$1" '
		match($0, /: d[0-9]+-[xyz][pm][@:]/) {
			dir = substr($0, RSTART + RLENGTH - 3, 2)
			if (match($0, /link\/ether [0-9a-f:]+/))
				print "mac_" id "_" dir "=" substr($0, RSTART + 11, RLENGTH - 11)
		}')"
}

do_up() {
	dims=$1
	prefix=$2
	dir=$3
	echo "$dims" | grep -Eq '^[0-9]+x[0-9]+x[0-9]+$' || die "bad dimensions '$dims'"
	DX=${dims%%x*}
	rest=${dims#*x}
	DY=${rest%%x*}
	DZ=${rest#*x}
	for d in $DX $DY $DZ; do
		[ "$d" -ge 1 ] && [ "$d" -le 256 ] || die "dimension $d out of 1..256"
	done
	case $prefix in
	''|*[!A-Za-z0-9_.]*) die "bad prefix '$prefix' (letters, digits, _ .)" ;;
	esac
	N=$((DX * DY * DZ))
	[ -d "$dir" ] || die "no directory $dir"
	[ -z "$(list_ns "$prefix")" ] || die "namespaces $prefix-* exist already (run down first)"
	if [ "$SVC" = 1 ]; then
		[ $N -le 4194300 ] || die "too many nodes for the service network (100.64.0.0/10)"
		! ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$prefix-svc" ||
			die "namespace $prefix-svc exists already (run down first)"
	fi

	trap 'do_down "$prefix" "$dir"; exit 1' EXIT INT TERM HUP

	id=0
	while [ $id -lt $N ]; do
		ns=$prefix-$id
		ip netns add "$ns"
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1
		id=$((id + 1))
	done

	# One batch of "link add" commands: X+ of every node to X- of its neighbour.
	batch=$(mktemp)
	id=0
	while [ $id -lt $N ]; do
		x=$((id % DX)); y=$(((id / DX) % DY)); z=$((id / (DX * DY)))
		for d in 0 1 2; do
			dim_size $d
			[ "$DSIZE" -ge 2 ] || continue
			nbr $x $y $z $d 1
			dir_name $((2 * d)); pd=$DNAME
			dir_name $((2 * d + 1)); md=$DNAME
			echo "link add d$id-$pd netns $prefix-$id mtu $MTU type veth" \
			     "peer name d$NB-$md netns $prefix-$NB mtu $MTU" >>"$batch"
		done
		id=$((id + 1))
	done
	ip -batch "$batch" || { rm -f "$batch"; die "creating veth pairs failed"; }
	rm -f "$batch"

	if [ "$IPV4" = 1 ]; then
		[ $((3 * N)) -le 32768 ] || die "NETNS_IPV4: too many nodes for 198.18.0.0/15"
		id=0
		while [ $id -lt $N ]; do
			x=$((id % DX)); y=$(((id / DX) % DY)); z=$((id / (DX * DY)))
			: >"$batch"
			for dn in 0 1 2 3 4 5; do
				d=$((dn / 2))
				dim_size $d
				[ "$DSIZE" -ge 2 ] || continue
				dir_name $dn
				if [ $((dn % 2)) -eq 0 ]; then
					addr_of $((3 * id + d)) 1
				else
					nbr $x $y $z $d -1
					addr_of $((3 * NB + d)) 2
				fi
				echo "addr add $ADDR/30 dev d$id-$DNAME" >>"$batch"
			done
			ip -n "$prefix-$id" -batch "$batch" ||
				{ rm -f "$batch"; die "IPv4 addresses failed"; }
			id=$((id + 1))
		done
		rm -f "$batch"
	fi

	# every node's lo and torus interfaces up: one ip -batch per namespace
	batch=$(mktemp)
	id=0
	while [ $id -lt $N ]; do
		echo "link set dev lo up" >"$batch"
		for dn in 0 1 2 3 4 5; do
			dim_size $((dn / 2))
			[ "$DSIZE" -ge 2 ] || continue
			dir_name $dn
			echo "link set dev d$id-$DNAME up" >>"$batch"
		done
		ip -n "$prefix-$id" -batch "$batch" || { rm -f "$batch"; die "links up failed"; }
		id=$((id + 1))
	done
	rm -f "$batch"

	if [ "$SVC" = 1 ]; then
		# The service network: one veth per node to a bridge in PREFIX-svc.
		ip netns add "$prefix-svc"
		ip netns exec "$prefix-svc" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1
		ip -n "$prefix-svc" link set lo up
		ip -n "$prefix-svc" link add svcbr type bridge
		ip -n "$prefix-svc" addr add 100.64.0.1/10 dev svcbr
		ip -n "$prefix-svc" link set svcbr up
		batch=$(mktemp)
		id=0
		while [ $id -lt $N ]; do
			echo "link add svc netns $prefix-$id type veth peer name s$id netns $prefix-svc" >>"$batch"
			id=$((id + 1))
		done
		ip -batch "$batch" || { rm -f "$batch"; die "creating the service network's veths failed"; }
		: >"$batch"
		id=0
		while [ $id -lt $N ]; do
			echo "link set dev s$id master svcbr up" >>"$batch"
			id=$((id + 1))
		done
		ip -n "$prefix-svc" -batch "$batch" || { rm -f "$batch"; die "service network bridge failed"; }
		rm -f "$batch"
		id=0
		while [ $id -lt $N ]; do
			v=$((id + 2))
			ip -n "$prefix-$id" addr add \
				"100.$((64 + v / 65536)).$(((v / 256) % 256)).$((v % 256))/10" dev svc
			ip -n "$prefix-$id" link set dev svc up
			id=$((id + 1))
		done
	fi

	# veth reports carrier about 0.65 s after both ends are up: wait for all.
	tries=0
	while :; do
		down=0
		id=0
		while [ $id -lt $N ]; do
			if ip -n "$prefix-$id" -o link show | grep -E ': (d|svc@)' |
			   grep -q 'NO-CARRIER\|state DOWN'; then
				down=1
				break
			fi
			id=$((id + 1))
		done
		[ $down -eq 0 ] && break
		tries=$((tries + 1))
		[ $tries -lt 200 ] || die "links without carrier after 10 s"
		sleep 0.05
	done

	id=0
	while [ $id -lt $N ]; do
		read_macs $id
		id=$((id + 1))
	done
	topo=$dir/$prefix.topo.tmp
	{
		echo "# dims $DX $DY $DZ"
		[ "$SVC" = 1 ] && echo "# svc $prefix-svc 100.64.0.1 $SVC_PORT"
		echo "# id dir dirnum namespace ifname mac peer_id peer_ifname peer_mac [ipv4 peer_ipv4]"
		id=0
		while [ $id -lt $N ]; do
			x=$((id % DX)); y=$(((id / DX) % DY)); z=$((id / (DX * DY)))
			for dn in 0 1 2 3 4 5; do
				d=$((dn / 2))
				dim_size $d
				[ "$DSIZE" -ge 2 ] || continue
				s=1; [ $((dn % 2)) -eq 1 ] && s=-1
				nbr $x $y $z $d $s
				p=$NB
				dir_name $dn; dname=$DNAME
				dir_name $((dn ^ 1)); oname=$DNAME
				ips=
				if [ "$IPV4" = 1 ]; then
					if [ $((dn % 2)) -eq 0 ]; then
						addr_of $((3 * id + d)) 1; ips=$ADDR
						addr_of $((3 * id + d)) 2; ips="$ips $ADDR"
					else
						addr_of $((3 * p + d)) 2; ips=$ADDR
						addr_of $((3 * p + d)) 1; ips="$ips $ADDR"
					fi
				fi
				eval "own=\${mac_${id}_$dname:-} peer=\${mac_${p}_$oname:-}"
				[ -n "$own" ] && [ -n "$peer" ] || die "no MAC for d$id-$dname or d$p-$oname"
				echo "$id $dname $dn $prefix-$id d$id-$dname $own $p d$p-$oname $peer" $ips
			done
			id=$((id + 1))
		done
	} >"$topo"
	mv "$topo" "$dir/$prefix.topo"
	trap - EXIT INT TERM HUP
	cat "$dir/$prefix.topo"
}

do_ini() {
	topo=$3/$1.topo
	[ -r "$topo" ] || die "no $topo"
	echo "[links]"
	case ${4:-dpdk} in
	dpdk)
		awk -v id="$2" '!/^#/ && $1 == id { print $2 " = af_packet:" $5 "," $9 }' "$topo"
		;;
	udp)
		awk -v id="$2" -v port="$UDP_PORT" '!/^#/ && $1 == id {
			if (NF < 11) { print "no IPv4 addresses (up without NETNS_IPV4=1)" > "/dev/stderr"; exit 1 }
			print $2 " = " $10 ":" port "," $11 ":" port }' "$topo"
		;;
	*)
		usage
		;;
	esac
}

[ $# -ge 2 ] || usage
if [ "$1" = ini ]; then
	[ $# -ge 3 ] || usage
	do_ini "$2" "$3" "${4:-/tmp}" "${5:-dpdk}"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces)"
case $1 in
up)
	[ $# -ge 3 ] || usage
	do_up "$2" "$3" "${4:-/tmp}"
	;;
down)
	do_down "$2" "${3:-/tmp}"
	;;
*)
	usage
	;;
esac
