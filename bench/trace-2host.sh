#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The 8-byte udp (or shm) ping-pong of SoftDNP in the two-host placement
# (node x's daemon and program both on CPU x; bench/lib.sh, two_host_wrappers),
# traced switch by switch (docs/performance.md, "udp in the two-host placement").
#
#   bench/trace-2host.sh BUILD_DIR [ITERS] [TRANSPORT]     (default 5000, udp)
#
# Records, system-wide, sched_switch, sched_wakeup and the entry and exit of
# sendmmsg and recvmmsg (perf record; root or perf_event_paranoid <= -1), then
# prints for the middle half of the run (warm-up and teardown left out):
# - per half round trip: the context switches of the run's daemons and
#   programs, their switches to the idle task (a CPU left idle: its next
#   wake-up is the kernel's), the program wake-ups, sendmmsg and recvmmsg calls;
# - the median time of each step of a hop, from the receive call that brought
#   the data (its exit) to the next daemon's receive of the reply: wake-up of
#   the program, switch to it, its block (switch back), the send call's entry
#   and exit, and the other CPU's receive;
# - the half round trip dnp_pingpong reported (the tracing slows it); the
#   window's half round trips are its length over their mean.
# Take it under the heavy-run lock: flock /tmp/softdnp-heavy.lock bench/trace-2host.sh ...
set -euo pipefail
build=$(cd "${1:?usage: bench/trace-2host.sh BUILD_DIR [ITERS] [TRANSPORT]}" && pwd)
iters=${2:-5000}
tp=${3:-udp}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
command -v perf >/dev/null || {
	echo "trace-2host: no perf" >&2
	exit 2
}
tmp=$(mktemp -d /tmp/trace-2host.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
two_host_wrappers "$tmp/w" "$build"
timeout 300 perf record -q -o "$tmp/perf.data" -a -e sched:sched_switch,sched:sched_wakeup \
	-e syscalls:sys_enter_sendmmsg,syscalls:sys_exit_sendmmsg,syscalls:sys_exit_recvmmsg -- \
	"$build/apps/dnp-run" --torus 2x1x1 --transport "$tp" --no-lofamo --dnpd "$tmp/w/dnpd" \
	--timeout 120 -- "$tmp/w/dnp_pingpong" --sizes 8 --iters "$iters" --warmup 100 --csv \
	>"$tmp/out" 2>&1
lat=$(sed -n 's/^\[0,0,0\] 8,[0-9]*,[^,]*,\([^,]*\),.*/\1/p' "$tmp/out")
mean=$(sed -n 's/^\[0,0,0\] 8,[0-9]*,[^,]*,[^,]*,[^,]*,\([^,]*\),.*/\1/p' "$tmp/out")
perf script --ns -i "$tmp/perf.data" -F comm,pid,cpu,time,event,trace 2>/dev/null >"$tmp/script"
python3 - "$tmp/script" "${mean:-0}" "${lat:-?}" <<'EOF'
import re, statistics, sys

path, mean, lat = sys.argv[1], float(sys.argv[2]), sys.argv[3]
ours = ("dnpd", "dnp_pingpong")
ev = []
line_re = re.compile(r"^\s*(\S+)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$")
for line in open(path):
    m = line_re.match(line)
    if m:
        comm, pid, cpu, t, name, rest = m.groups()
        ev.append((float(t) * 1e6, comm, int(pid), int(cpu), name.split(":")[-1], rest))
# the middle half of the run, by the daemons' receive calls (warm-up and teardown left out)
rx = [e for e in ev if e[4] == "sys_exit_recvmmsg" and e[1] == "dnpd"]
if len(rx) < 100:
    sys.exit("trace-2host: too few receive calls traced")
t_lo, t_hi = rx[len(rx) // 4][0], rx[3 * len(rx) // 4][0]
win = [e for e in ev if t_lo <= e[0] <= t_hi]

def field(rest, key):
    m = re.search(key + r"=(\S+)", rest)
    return m.group(1) if m else ""

sw = [e for e in win if e[4] == "sched_switch" and field(e[5], "prev_comm") in ours]
idle = [e for e in sw if field(e[5], "next_comm").startswith("swapper")]
wk = [e for e in win if e[4] == "sched_wakeup" and field(e[5], "comm") == "dnp_pingpong"]
snd = [e for e in win if e[4] == "sys_enter_sendmmsg" and e[1] == "dnpd"]
rcv = [e for e in win if e[4] == "sys_exit_recvmmsg" and e[1] == "dnpd"]
# half round trips in the window: its length over the mean half round trip
if mean <= 0:
    sys.exit("trace-2host: dnp_pingpong reported no mean")
halves = (t_hi - t_lo) / mean
per = lambda n: n / halves
print(f"half round trip (dnp_pingpong, traced): {lat} us; half round trips in the window: {halves:.0f}")
print(f"per half round trip: switches {per(len(sw)):.2f} (to idle {per(len(idle)):.2f}), "
      f"program wake-ups {per(len(wk)):.2f}, sendmmsg {per(len(snd)):.2f}, recvmmsg {per(len(rcv)):.2f}")

# steps of a hop: on the CPU of the wake-up, from the receive call before it
steps = {k: [] for k in ("rx->wake", "wake->switch in", "program ran (switch out)",
                         "->send entry", "send call", "->other CPU's receive", "hop")}
by_cpu = {}
for e in win:
    by_cpu.setdefault(e[3], []).append(e)
for e_i, e in enumerate(win):
    if not (e[4] == "sched_wakeup" and field(e[5], "comm") == "dnp_pingpong" and e[1] == "dnpd"):
        continue
    cpu, t_w = e[3], e[0]
    seq = by_cpu[cpu]
    i = seq.index(e)
    prev_rx = next((x for x in reversed(seq[:i]) if x[4] == "sys_exit_recvmmsg"), None)
    nxt = seq[i + 1:i + 60]
    sin = next((x for x in nxt if x[4] == "sched_switch" and field(x[5], "next_comm") == "dnp_pingpong"), None)
    sout = next((x for x in nxt if x[4] == "sched_switch" and field(x[5], "prev_comm") == "dnp_pingpong"), None)
    if not (prev_rx and sin and sout) or sout[0] < sin[0]:
        continue
    s_in = next((x for x in nxt if x[4] == "sys_enter_sendmmsg" and x[0] > sout[0]), None)
    s_out = next((x for x in nxt if x[4] == "sys_exit_sendmmsg" and s_in and x[0] > s_in[0]), None)
    if not (s_in and s_out):
        continue
    other = next((x for x in win[e_i:] if x[3] != cpu and x[4] == "sys_exit_recvmmsg"
                  and x[1] == "dnpd" and x[0] > s_in[0]), None)
    if not other:
        continue
    steps["rx->wake"].append(t_w - prev_rx[0])
    steps["wake->switch in"].append(sin[0] - t_w)
    steps["program ran (switch out)"].append(sout[0] - sin[0])
    steps["->send entry"].append(s_in[0] - sout[0])
    steps["send call"].append(s_out[0] - s_in[0])
    steps["->other CPU's receive"].append(other[0] - s_in[0])
    steps["hop"].append(other[0] - prev_rx[0])
n = len(steps["hop"])
print(f"steps of a hop, medians over {n} hops (us; tracing adds about 0.5-1 us to each):")
for k, v in steps.items():
    if v:
        print(f"  {k:28s} {statistics.median(v):6.2f}")
EOF
