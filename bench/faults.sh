#!/bin/sh
# SPDX-License-Identifier: MIT
# Fault drill bench (issue 25): real daemons under all-to-all 8-byte PUT
# traffic (apps/dnp_faults.c), one fault per run, shm and udp:
#   stop1.5 / stop3  the daemon of node 2 of a 2x2x2 torus frozen (SIGSTOP)
#                    for 1.5 s / 3 s, then SIGCONT
#   kill             the daemon of node 2 of a 4x1x1 ring killed (SIGKILL)
#   kill-nodrain     the same, node 2's program never taking an event
# It prints one row per run: commands issued and ended, never ended, the
# status classes (0, -ENOLINK, -EHOSTUNREACH, -ETIMEDOUT, others), the latest
# completion after SIGCONT / the kill (ms, of commands issued before it), the
# checks (-ETIMEDOUT or 'not delivered' with the data written, 0 without it)
# and the verdict. Logs go to $FAULTS_OUT (default /tmp/softdnp-faults-PID).
# Run it under the shared lock: flock /tmp/softdnp-heavy.lock bench/faults.sh
# usage: faults.sh [BUILD_DIR] [SCENARIO...]
set -u
build=${1:-build}
[ $# -gt 0 ] && shift
scen=${*:-"stop1.5 stop3 kill kill-nodrain"}
run=$build/apps/dnp-run
out=${FAULTS_OUT:-/tmp/softdnp-faults-$$}
mkdir -p "$out" || exit 1
[ -x "$build/apps/dnp_faults" ] || { echo "no $build/apps/dnp_faults"; exit 1; }

printf '%-13s %-4s %6s %6s %4s %6s %7s %7s %7s %6s %8s %6s %6s %6s %s\n' scenario tr cmds \
	ended pend st0 ENOLINK EHOSTUN ETIMEDO other latestms wr_ETO nd_wr ok_nwr verdict
for tr in shm udp; do
	for sc in $scen; do
		case $sc in
		stop1.5) torus=2x2x2 args="--fault stop --hold-ms 1500" ;;
		stop3) torus=2x2x2 args="--fault stop --hold-ms 3000" ;;
		kill) torus=4x1x1 args="--fault kill" ;;
		kill-nodrain) torus=4x1x1 args="--fault kill --no-drain-victim" ;;
		*) echo "unknown scenario $sc"; exit 1 ;;
		esac
		log=$out/$tr-$sc.log
		# shellcheck disable=SC2086
		"$run" --torus $torus --transport "$tr" --daemon-death continue --drill \
			--keep-going --no-lofamo --timeout 120 -- dnp_faults --victim 2 \
			--warm-ms 1000 --after-ms 2000 $args >"$log" 2>&1
		awk -v sc="$sc" -v tr="$tr" '
			/^\[0,0,0\] faults: status/ { s[$4] = $6; tot += $6 }
			/^\[0,0,0\] faults: cmds/ { c = $4; e = $6; p = $8; l = $10 }
			/^\[0,0,0\] faults: written_but/ { w = $4; nd = $8; ok = $6 }
			/^\[0,0,0\] (PASS|FAIL)/ { v = $2 }
			END {
				o = tot - s[0] - s[-67] - s[-113] - s[-110]
				printf "%-13s %-4s %6d %6d %4d %6d %7d %7d %7d %6d %8s %6s %6s %6s %s\n",
					sc, tr, c, e, p, s[0], s[-67], s[-113], s[-110], o, l, w, nd,
					ok, v == "" ? "NO-RESULT" : v
			}' "$log"
	done
done
echo "logs: $out"
