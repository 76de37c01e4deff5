#!/bin/sh
# SPDX-License-Identifier: MIT
#
# slurm-lofamo.sh BUILD SRC — LO|FA|MO's response on a real Slurm cluster
# (suite 'slurm', root only): a node whose DNP turns faulty is drained, the
# next job avoids it, and it is resumed when healthy (docs/cluster.md,
# "Responding to faults").
#
# The eight-host cluster of tests/testbed/slurm-cluster.sh, with the daemons
# as the systemd units run them (permanently, not as job steps): in each
# host's namespace a dnpd (udp, dnp topo files) and its dnp-hfm; in the root
# namespace dnp-supervisor --on-fault/--on-heal deploy/slurm/dnp-lofamo-slurm
# (the HFMs reach it over the management bridge). Then:
#  1. n3 is drained by "the administrator" (Reason "maintenance");
#  2. kill -9 the dnpd of n5 and of n3: n5 must turn DRAIN with a Reason
#     "lofamo: ..." (the time from the kill is printed; it must come within
#     20 s, a bound for a stuck test, not a figure: the budget is
#     3 x T_read + 1 s = 1.75 s); n3 keeps the administrator's Reason;
#  3. srun -N 6: the job runs on the six other hosts, never on n5 or n3;
#  4. both dnpds restarted: n5 must be resumed (IDLE, no Reason) within 30 s,
#     n3 must stay drained for "maintenance";
#  5. the supervisor ran on-fault and on-heal exactly once each for node 5.
# Exit 77 when not root or without the Slurm packages.
set -u
build=$1
src=$2
. "$(dirname "$0")/lib.sh"

need_slurm slurmctld slurmd munged srun scontrol sinfo nsenter ip python3
dnp_tools "$build"
hfm=$build/lofamo/dnp-hfm
sup=$build/lofamo/dnp-supervisor
need_built "$dnpd" "$hfm" "$sup"

prefix=lf$(($$ % 100000))
run=/dev/shm/$prefix
cluster=$src/tests/testbed/slurm-cluster.sh
netns_sh=$src/tests/testbed/netns.sh
response=$src/deploy/slurm/dnp-lofamo-slurm
fail=0

# stop PIDFILE...: SIGTERM (SIGKILL 3 s later) to each PID, by PID.
stop() {
	for f in "$@"; do
		[ -r "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	sleep 0.2
	for f in "$@"; do
		[ -r "$f" ] || continue
		t=0
		while kill -0 "$(cat "$f")" 2>/dev/null && [ $t -lt 30 ]; do
			sleep 0.1
			t=$((t + 1))
		done
		kill -9 "$(cat "$f")" 2>/dev/null
		rm -f "$f"
	done
}

on_exit() {
	# The supervisor first: the HFMs' silence must not drain anything.
	stop "$dir/sup.pid"
	stop "$dir"/hfm-*.pid "$dir"/dnpd-*.pid
	sh "$cluster" down "$prefix" "$dir" "$netns_sh"
}
run_dir "$(mktemp -d /tmp/cluster-lofamo.XXXXXX)"
remove_at_exit "$run"

now_ms() {
	date +%s%3N
}

# spawn PIDFILE LOG CMD...: CMD in the background with no descriptor but 0-2
# (the caller's flock must not leak into daemons), its PID into PIDFILE.
spawn() {
	sp_pid=$1 sp_log=$2
	shift 2
	python3 -c 'import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])' \
		"$@" </dev/null >"$sp_log" 2>&1 &
	echo $! >"$sp_pid"
}

# start_dnpd ID: the host's dnpd in its namespace, as dnpd@.service would run it.
start_dnpd() {
	spawn "$dir/dnpd-$1.pid" "$dir/dnpd-$1.log" nsenter --net="/run/netns/$prefix-$1" \
		"$dnpd" --config "$dir/topo/n$1.ini"
}

node_field() { # node_field NAME FIELD: State or Reason of a Slurm node
	scontrol show node -o "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"
}

node_reason() {
	scontrol show node -o "$1" | sed -n 's/.* Reason=//p'
}

t0=$(now_ms)
sh "$cluster" up 2x2x2 "$prefix" "$dir" "$netns_sh" || { echo "FAIL: cluster"; exit 1; }
export SLURM_CONF=$dir/slurm.conf
echo "cluster $prefix up in $(($(now_ms) - t0)) ms"
python3 "$src/apps/dnp-topo" --torus 2x2x2 --hosts "$dir/hosts.udp" --transport udp \
	--out "$dir/topo" --run-dir "$run/%h" >/dev/null || { echo "FAIL: dnp topo"; exit 1; }
br=$(sed -n 's/^n0 addr=\(.*\)\.1$/\1.254/p' "$dir/hosts.udp")
port=$(port_base)

spawn "$dir/sup.pid" "$dir/sup.log" "$sup" --torus 2x2x2 --listen "$br:$port" \
	--on-fault "$response --map $dir/topo/hosts.map" --on-heal "$response --map $dir/topo/hosts.map"
for i in 0 1 2 3 4 5 6 7; do
	mkdir -p "$run/n$i"
	start_dnpd $i
	spawn "$dir/hfm-$i.pid" "$dir/hfm-$i.log" nsenter --net="/run/netns/$prefix-$i" \
		"$hfm" --regs "$run/n$i/node-$i.lofamo" --node $i --supervisor "$br:$port"
done

# All eight nodes healthy in the supervisor's picture.
t=0
until "$build/dnp-core/dnpd/dnpctl" --supervisor "$br:$port" status 2>/dev/null |
	grep -q '8 of 8 nodes healthy'; do
	t=$((t + 1))
	[ $t -lt 150 ] || { bad "the picture never turned all healthy"; sed 's/^/  sup| /' "$dir/sup.log"; exit 1; }
	sleep 0.1
done
echo "picture all healthy"

scontrol update NodeName=n3 State=DRAIN Reason="maintenance" || bad "scontrol drain n3"
kill -9 "$(cat "$dir/dnpd-5.pid")" "$(cat "$dir/dnpd-3.pid")"
tk=$(now_ms)
t=0
until node_field n5 State | grep -q DRAIN; do
	t=$((t + 1))
	[ $(($(now_ms) - tk)) -lt 20000 ] || break
	sleep 0.05
done
if node_field n5 State | grep -q DRAIN; then
	echo "n5 DRAIN $(($(now_ms) - tk)) ms after its dnpd was killed (budget 3 x T_read + 1 s = 1750 ms)"
else
	bad "n5 not drained 20 s after its dnpd was killed"
fi
r5=$(node_reason n5)
echo "n5 Reason=$r5"
case $r5 in lofamo:*dnp\ faulty*) ;; *) bad "n5's Reason is '$r5', not 'lofamo: ... dnp faulty'" ;; esac
sleep 1 # n3's hook has run by now too
r3=$(node_reason n3)
case $r3 in maintenance*) ;; *) bad "n3's Reason became '$r3' (the administrator's drain was overwritten)" ;; esac

# The next job: six hosts are left, and it must get those.
timeout 60 srun -N 6 -J after-drain sh -c 'echo $SLURMD_NODENAME' >"$dir/job.out" 2>&1 ||
	bad "srun -N 6 after the drain failed: $(cat "$dir/job.out")"
echo "next job ran on: $(sort "$dir/job.out" | tr '\n' ' ')"
[ "$(sort -u "$dir/job.out" | grep -c '^n[0-7]$')" -eq 6 ] || bad "the job did not get 6 hosts"
grep -qx 'n5\|n3' "$dir/job.out" && bad "the job ran on a drained host"

start_dnpd 5
start_dnpd 3
tr0=$(now_ms)
until [ -z "$(node_reason n5)" ] && ! node_field n5 State | grep -q DRAIN; do
	[ $(($(now_ms) - tr0)) -lt 30000 ] || break
	sleep 0.1
done
s5=$(node_field n5 State)
if node_field n5 State | grep -q DRAIN; then
	bad "n5 still $s5 ($(node_reason n5)) 30 s after its dnpd was restarted"
else
	echo "n5 $s5 again $(($(now_ms) - tr0)) ms after its dnpd was restarted"
fi
sleep 1
r3=$(node_reason n3)
case $r3 in maintenance*) ;; *) bad "n3 was resumed or changed: Reason '$r3', State $(node_field n3 State)" ;; esac
node_field n3 State | grep -q DRAIN || bad "n3 (drained for maintenance) is $(node_field n3 State)"

nf=$(grep -c 'hook on-fault node 5: started' "$dir/sup.log")
nh=$(grep -c 'hook on-heal node 5: started' "$dir/sup.log")
[ "$nf" -eq 1 ] && [ "$nh" -eq 1 ] || bad "on-fault ran $nf times, on-heal $nh times for node 5 (want 1 and 1)"
grep -E 'hook|node [35] ' "$dir/sup.log" | sed 's/^/  sup| /'
[ $fail -eq 0 ] && echo "PASS: slurm-lofamo (total $(($(now_ms) - t0)) ms)"
exit $fail
