#!/bin/sh
# SPDX-License-Identifier: MIT
# A torus that fails to start is torn down completely (issue: process
# lifetimes). dnp-run starts a 2x1x1 torus of real daemons, with its
# supervisor and HFMs, twice, and one node cannot start:
#   bad-option: node 1's dnpd gets an option it refuses (a wrapper adds it);
#   port-in-use: udp, and a port of node 1's X+ link is already taken.
# Each time dnp-run must fail (exit 2 for the refused option, as for a usage
# error; 1 for the port), naming node 1, and afterwards no
# process may remain whose command line, environment or working directory
# names the run directory (dnpd, dnp-hfm, dnp-supervisor or the program),
# and the run directory must be gone.
# usage: run-teardown.sh BUILD_DIR
set -u
build=$(cd "$1" && pwd)
run=$build/apps/dnp-run
dnpd=$build/dnp-core/dnpd/dnpd
. "$(dirname "$0")/lib.sh"
need_built "$run" "$dnpd" "$build/lofamo/dnp-supervisor" "$build/lofamo/dnp-hfm"
command -v python3 >/dev/null || { echo "SKIP: no python3 to hold a port"; exit 77; }
fail() {
	echo "FAIL: $*"
	[ -f "$dir/run.err" ] && { echo "--- dnp-run"; tail -n 20 "$dir/run.err"; }
	exit 1
}
run_dir "$(mktemp -d)"
XDG_RUNTIME_DIR=$dir/xdg
mkdir "$XDG_RUNTIME_DIR"
export XDG_RUNTIME_DIR
on_exit() { [ -n "${holder:-}" ] && kill "$holder" 2>/dev/null; }

# The pids that name $1 in their command line, environment or cwd, one scan
# (the pattern comes from a file, so no helper's own command line matches it).
run_pids() {
	printf '%s\n' "$1" >"$dir/pattern"
	{
		grep -laFf "$dir/pattern" /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null
		find /proc -maxdepth 2 -name cwd -lname "${1%?}?*" 2>/dev/null
	} | sed -n 's|^/proc/\([0-9]*\)/.*|\1|p' | sort -u
}
count_run() { # how many; their command lines on stderr
	n=0
	for p in $(run_pids "$1"); do
		[ -e "/proc/$p" ] || continue
		n=$((n + 1))
		echo "  left: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" >&2
	done
	echo $n
}

# attempt NAME WANT DNP-RUN-ARGS...: dnp-run must fail (exit WANT: 2 when a
# daemon refused its arguments, as for a usage error; 1 otherwise) naming node 1 and leave
# nothing; while it starts, the most processes of its run seen at once.
attempt() {
	name=$1 want=$2
	shift 2
	timeout 60 "$run" --torus 2x1x1 --print-run-dir --up-timeout 15 "$@" -- sleep 30 \
		>"$dir/run.out" 2>"$dir/run.err" &
	rpid=$!
	rd='' most=0
	while kill -0 $rpid 2>/dev/null; do
		[ -n "$rd" ] || rd=$(sed -n 's/^dnp-run: run directory: //p' "$dir/run.err")
		if [ -n "$rd" ]; then
			c=$(count_run "$rd" 2>/dev/null)
			[ "$c" -gt "$most" ] && most=$c
		fi
		sleep 0.05
	done
	wait $rpid
	rc=$?
	[ -n "$rd" ] || rd=$(sed -n 's/^dnp-run: run directory: //p' "$dir/run.err")
	[ -n "$rd" ] || fail "$name: dnp-run did not say its run directory"
	[ $rc = "$want" ] || fail "$name: dnp-run exited $rc, want $want"
	grep -q "1,0,0" "$dir/run.err" || fail "$name: the failing node 1,0,0 is not named"
	left=0
	for _ in $(seq 50); do
		left=$(count_run "$rd" 2>"$dir/left")
		[ "$left" = 0 ] && break
		sleep 0.1
	done
	[ "$most" -ge 2 ] || fail "$name: never saw the run's processes (the count would prove nothing)"
	[ "$left" = 0 ] || { cat "$dir/left"; fail "$name: $left processes of $rd remain"; }
	[ ! -e "$rd" ] || fail "$name: the run directory $rd remains"
	echo "ok: $name: dnp-run failed (exit $rc, node 1,0,0 named); $most processes of the run at once while it started, none after"
}

# Node 1's daemon refuses its command line; node 0's starts normally.
cat >"$dir/dnpd-wrap" <<WRAP
#!/bin/sh
# node 1 fails a second late, once the others and the fault managers run
case " \$* " in *" --coord 1,0,0 "*) sleep 1; exec "$dnpd" --no-such-option "\$@" ;; esac
exec "$dnpd" "\$@"
WRAP
chmod +x "$dir/dnpd-wrap"
attempt bad-option 2 --dnpd "$dir/dnpd-wrap"

# Node 1's X+ link port (base + id*8 + dir) is taken before the torus starts.
base=$(port_base)
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", int(sys.argv[1])))
open(sys.argv[2], "w").close(); time.sleep(120)' $((base + 8)) "$dir/held" &
holder=$!
wait_for 10 test -e "$dir/held" || fail "could not hold port $((base + 8))"
# node 1 again starts a second late, so that the run's processes are there to be seen
# (failing at once, it could be torn down between two looks of a loaded machine)
cat >"$dir/dnpd-late" <<WRAP
#!/bin/sh
case " \$* " in *" --coord 1,0,0 "*) sleep 1 ;; esac
exec "$dnpd" "\$@"
WRAP
chmod +x "$dir/dnpd-late"
attempt port-in-use 1 --transport udp --udp-base-port $base --dnpd "$dir/dnpd-late"
echo "run-teardown: ok"
