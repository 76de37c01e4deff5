# SPDX-License-Identifier: MIT
# Steps the integration scripts share (POSIX sh), sourced with
#   . "$(dirname "$0")/lib.sh"
# need_built FILE...       exit 77 (skip) unless every FILE is built (executable).
# need_dpdk_testbed        exit 77 unless this build has DPDK, we are root and
#                          ip(8) is there (the namespace testbed, tests/testbed/netns.sh).
# run_dir DIR              make the run directory ($dir := DIR); at exit, on_exit
#                          (if the script defines one) runs, the daemons in $pids
#                          are killed and reaped, and DIR is removed.
# wait_for SECONDS CMD...  run CMD every 50 ms until it succeeds; 1 if it has not
#                          after SECONDS.
# wait_links_up SECONDS ID...  wait until every node ID has all links UP (the
#                          daemon's $dir/node-ID.up); else fail "node ID links never
#                          came UP" (the script's fail()).
# node_stats ID            `dnpctl stats` of node ID (socket $dir/node-ID.sock,
#                          dnpctl at $ctl), its errors discarded.

need_built() {
	for _nb_p in "$@"; do
		if [ ! -x "$_nb_p" ]; then
			echo "SKIP: $_nb_p is not built"
			exit 77
		fi
	done
}

need_dpdk_testbed() {
	if [ "${DNP_HAVE_DPDK:-1}" != 1 ]; then
		echo "SKIP: this build has no DPDK (meson found no libdpdk)"
		exit 77
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "SKIP: needs root (network namespaces, veth pairs, packet sockets)"
		exit 77
	fi
	if ! command -v ip >/dev/null 2>&1; then
		echo "SKIP: no 'ip' (iproute2)"
		exit 77
	fi
}

lib_cleanup() {
	command -v on_exit >/dev/null 2>&1 && on_exit
	for _lc_p in $pids; do kill "$_lc_p" 2>/dev/null; done
	for _lc_p in $pids; do wait "$_lc_p" 2>/dev/null; done
	rm -rf "$dir"
}

run_dir() {
	dir=$1
	mkdir -p "$dir" || exit 1
	pids=""
	trap lib_cleanup EXIT
	trap 'exit 1' INT TERM
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
