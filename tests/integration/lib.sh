# SPDX-License-Identifier: MIT
# Steps the integration scripts share (POSIX sh), sourced with
#   . "$(dirname "$0")/lib.sh"
# dnp_tools BUILD          name the programs of the build BUILD: $dnpd, $ctl
#                          (dnpctl), $pp (dnp_pingpong), $a2a (dnp_alltoall).
# skip MSG                 say "SKIP: MSG" and exit 77.
# bad MSG                  say "FAIL: MSG" and set fail=1 (the script goes on and
#                          exits $fail at its end).
# need_built FILE...       exit 77 (skip) unless every FILE is built (executable).
# need_dpdk_testbed        exit 77 unless this build has DPDK, we are root and
#                          ip(8) is there (the namespace testbed, tests/testbed/netns.sh).
# need_slurm CMD...        exit 77 unless we are root and every CMD is installed
#                          (the Slurm cluster of tests/testbed/slurm-cluster.sh).
# run_dir DIR              make the run directory ($dir := DIR); at exit, on_exit
#                          (if the script defines one) runs, the daemons in $pids
#                          are killed and reaped, the testbed (testbed_up) is taken
#                          down, and DIR and the remove_at_exit paths are removed.
# remove_at_exit PATH...   remove these files or directories at exit, last.
# testbed_up NETNS_SH PREFIX DIR  build the 2x2x2 namespace testbed PREFIX
#                          (NETNS_SH up, its files in DIR), taken down at exit
#                          after the daemons; "FAIL" and exit 1 when it cannot be.
# port_base                the first of 16 loopback ports for this script ($$):
#                          10000 + 16 k, below the kernel's ephemeral range, so
#                          no socket the kernel numbers can hold one; scripts
#                          running at once have different PIDs, so different k.
# udp_listen_free PORTFILE CMD...  exec CMD --listen 127.0.0.1:P --listen-fd N: the
#                          kernel picks and binds the loopback UDP port P, which
#                          stays bound from the pick to CMD (no other test can
#                          take it between), P is written to PORTFILE first. Run
#                          it in the background: $! is CMD's pid.
# wait_port PORTFILE SECONDS  print the port udp_listen_free wrote; 1 if none
#                          after SECONDS.
# wait_for SECONDS CMD...  run CMD every 50 ms until it succeeds; 1 if it has not
#                          after SECONDS.
# wait_links_up SECONDS ID...  wait until every node ID has all links UP (the
#                          daemon's $dir/node-ID.up); else fail "node ID links never
#                          came UP" (the script's fail()).
# node_stats ID            `dnpctl stats` of node ID (socket $dir/node-ID.sock,
#                          dnpctl at $ctl), its errors discarded.
# fail_logs MSG            say "FAIL: MSG", show the last 10 lines of every *.log
#                          and *.out of $dir, exit 1 (a script's fail() may be it).
# node_field ID PREFIX FIELD  the value after FIELD on node ID's stats line that
#                          starts with PREFIX (e.g. `node_field 3 engine pkts_forwarded`).
# alltoall_on TAG IDS [--detours]  dnp_alltoall ($a2a) on every node of IDS (a
#                          space-separated list) at once, 1 B, 4 KiB and 100 KB to
#                          every other node; each must exit 0 and verify its bytes,
#                          else fail (the script's fail()). Hops must equal the
#                          torus distance unless --detours. Outputs: $dir/a2a-TAG-ID.out.
# two_node_run BUILD TAG LABEL ARG...  BUILD's dnp-run --torus 2x1x1 --timeout 120
#                          --no-lofamo ARG... (its options, then -- and the command
#                          each node runs); prints the lines "TAG node 0 ..." and
#                          "TAG node 1 ..." of its output, node 0 first (also to
#                          stderr, after "LABEL: "). 1, after "FAIL: LABEL: ..." and
#                          the output's last 20 lines on stderr, if dnp-run fails or
#                          not both nodes printed their line. TAG is one word.
# two_host_dnpd BUILD FILE  write FILE, a dnpd for dnp-run --dnpd that runs node
#                          x's BUILD dnpd on CPU x (the two-host placement, as
#                          bench/lib.sh's two_host_wrappers).
# two_node_field LINES NODE NAME  the value after NAME on node NODE's line of
#                          LINES (two_node_run's output).

# shellcheck disable=SC2034 # dnp_tools and bad set variables for the sourcing script
dnp_tools() {
	dnpd=$1/dnp-core/dnpd/dnpd
	ctl=$1/dnp-core/dnpd/dnpctl
	pp=$1/apps/dnp_pingpong
	a2a=$1/apps/dnp_alltoall
}

skip() {
	echo "SKIP: $*"
	exit 77
}

bad() {
	echo "FAIL: $*"
	fail=1
}

need_built() {
	for _nb_p in "$@"; do
		[ -x "$_nb_p" ] || skip "$_nb_p is not built"
	done
}

need_dpdk_testbed() {
	[ "${DNP_HAVE_DPDK:-1}" = 1 ] || skip "this build has no DPDK (meson found no libdpdk)"
	[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, veth pairs, packet sockets)"
	command -v ip >/dev/null 2>&1 || skip "no 'ip' (iproute2)"
}

need_slurm() {
	[ "$(id -u)" -eq 0 ] || skip "the slurm suite needs root (network namespaces, slurmd)"
	for _ns_p in "$@"; do
		command -v "$_ns_p" >/dev/null 2>&1 ||
			skip "no $_ns_p (Debian slurmctld slurmd slurm-client munge iproute2; ./dnp test as root installs them)"
	done
}

lib_cleanup() {
	command -v on_exit >/dev/null 2>&1 && on_exit
	for _lc_p in ${pids:-}; do kill "$_lc_p" 2>/dev/null; done
	for _lc_p in ${pids:-}; do wait "$_lc_p" 2>/dev/null; done
	[ -n "${lib_netns:-}" ] && sh "$lib_netns" down "$lib_netns_prefix" "$lib_netns_dir" >/dev/null 2>&1
	[ -n "${lib_dir:-}" ] && rm -rf "$lib_dir"
	# shellcheck disable=SC2086 # a list of paths without blanks (mktemp, /dev/shm/NAME)
	[ -n "${lib_remove:-}" ] && rm -rf $lib_remove
	# a script under set -e would exit with the status of a false test above
	return 0
}

lib_trap() {
	trap lib_cleanup EXIT
	trap 'exit 1' INT TERM
}

run_dir() {
	dir=$1
	lib_dir=$1
	mkdir -p "$dir" || exit 1
	pids=""
	lib_trap
}

remove_at_exit() {
	lib_remove="${lib_remove:-} $*"
	lib_trap
}

testbed_up() {
	lib_netns=$1
	lib_netns_prefix=$2
	lib_netns_dir=$3
	lib_trap
	sh "$1" up 2x2x2 "$2" "$3" >/dev/null || { echo "FAIL: netns.sh up"; exit 1; }
}

port_base() {
	_pb_low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
	echo $((10000 + ($$ % ((_pb_low - 10000) / 16)) * 16))
}

udp_listen_free() {
	_ul_file=$1
	shift
	exec python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % port)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
os.set_inheritable(s.fileno(), True)
argv = sys.argv[2:] + ["--listen", "127.0.0.1:%d" % port, "--listen-fd", str(s.fileno())]
os.execv(argv[0], argv)' "$_ul_file" "$@"
}

wait_port() {
	wait_for "$2" test -s "$1" || return 1
	cat "$1"
}

wait_for() {
	_wf_n=$(($1 * 20))
	shift
	until "$@"; do
		_wf_n=$((_wf_n - 1))
		[ $_wf_n -ge 0 ] || return 1
		sleep 0.05
	done
}

wait_links_up() {
	_wu_t=$1
	shift
	for _wu_id in "$@"; do
		wait_for "$_wu_t" test -e "$dir/node-$_wu_id.up" ||
			fail "node $_wu_id links never came UP"
	done
}

node_stats() { "$ctl" --socket "$dir/node-$1.sock" stats 2>/dev/null; }

fail_logs() {
	echo "FAIL: $*"
	for _fl_f in "$dir"/*.log "$dir"/*.out; do
		[ -e "$_fl_f" ] && { echo "--- $_fl_f"; tail -n 10 "$_fl_f"; }
	done
	exit 1
}

node_field() {
	node_stats "$1" | awk -v pre="$2" -v f="$3" 'index($0, pre) == 1 {
		for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }'
}

alltoall_on() {
	_aa_pids=""
	_aa_n=0
	for _aa_id in $2; do
		DNP_SOCKET=$dir/node-$_aa_id.sock DNP_APP_TIMEOUT=60 "$a2a" ${3:-} \
			--sizes 1,4096,100000 >"$dir/a2a-$1-$_aa_id.out" 2>&1 &
		_aa_pids="$_aa_pids $!"
		_aa_n=$((_aa_n + 1))
	done
	_aa_rc=0
	for _aa_p in $_aa_pids; do wait "$_aa_p" || _aa_rc=1; done
	[ $_aa_rc -eq 0 ] || fail "$1: an all-to-all instance failed"
	_aa_ok=$(cat "$dir"/a2a-"$1"-*.out | grep -c 'all bytes verified')
	[ "$_aa_ok" -eq $_aa_n ] || fail "$1: $_aa_ok of $_aa_n instances verified their bytes"
}

two_node_run() {
	_tn_run=$1/apps/dnp-run _tn_tag=$2 _tn_label=$3
	shift 3
	_tn_out=$("$_tn_run" --torus 2x1x1 --timeout 120 --no-lofamo "$@" 2>&1) || {
		echo "FAIL: $_tn_label: the run failed" >&2
		echo "$_tn_out" | tail -n 20 >&2
		return 1
	}
	_tn_lines=$(echo "$_tn_out" | grep -o "$_tn_tag node [01] .*" | sort)
	[ "$(echo "$_tn_lines" | grep -c .)" = 2 ] || {
		echo "FAIL: $_tn_label: the nodes reported nothing" >&2
		echo "$_tn_out" | tail -n 20 >&2
		return 1
	}
	echo "$_tn_lines" | sed "s/^/$_tn_label: /" >&2
	echo "$_tn_lines"
}

two_host_dnpd() {
	cat >"$2" <<EOS
#!/bin/sh
prev=; x=0
for a; do [ "\$prev" = --coord ] && x=\${a%%,*}; prev=\$a; done
exec taskset -c "\$x" "$1/dnp-core/dnpd/dnpd" "\$@"
EOS
	chmod +x "$2"
}

two_node_field() {
	echo "$1" | grep "^[^ ]* node $2 " | sed -n "s/.* $3 \([0-9]*\).*/\1/p"
}
