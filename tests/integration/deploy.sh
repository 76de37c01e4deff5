#!/bin/sh
# SPDX-License-Identifier: MIT
#
# deploy.sh BUILD SRC — the host set-up of deploy/ (docs/cluster.md, "A host's
# set-up") without systemd as PID 1 (suite 'integration').
#
#  1. dnpctl finds a daemon's files whatever its socket is called: two shm
#     dnpd with sockets S/dnpd-a.sock and S/dnpd-b.sock (not node-<id>.sock)
#     and their run directory elsewhere; `dnpctl sensor temp 99000` must
#     reach the register block (the daemon logs the temperature alarm) and
#     `dnpctl impair` the impairment file (dnpctl stats shows it).
#  2. systemd-analyze verify (Debian's systemd package) on dnpd@alice.service
#     and dnp-hfm@alice.service in a staging root whose /usr/local/bin holds
#     the binaries meson installs there: unit syntax, and the ExecStart
#     programs exist where the units say. Skipped without systemd-analyze.
#  3. Root only (private mount namespaces): the ExecStart line of
#     dnpd@.service, read from the unit, run as systemd would for instance
#     "nobody" (User=, EnvironmentFile=, $DNPD_OPTS split into words,
#     RuntimeDirectory=dnp owned by the user), on two "hosts": each its own
#     mount namespace with its own /etc/dnp (dnpd.ini from `dnp topo` on a
#     two-host udp list, dnpd.env from the example) and /run. Then, as the
#     instance user and without DNP_SOCKET, dnp_pingpong on both finds its
#     daemon at /run/dnp/dnpd.sock (dnp_open(NULL)), `dnpctl topo` there exits
#     0 and `dnpctl sensor` finds the register block next to the default
#     socket; SIGTERM (KillSignal=) stops the daemon with exit 0 and removes
#     its socket.
# Exit 77 only when none of the parts could run.
set -u
build=$1
src=$2
ran=0
fail=0
. "$(dirname "$0")/lib.sh"
dnp_tools "$build"
need_built "$dnpd" "$ctl" "$pp"
run_dir "$(mktemp -d /tmp/deploy-test.XXXXXX)"
chmod 755 "$dir"


# ---- 1. files found through the daemon, any socket name
echo "--- 1. dnpctl sensor/impair with sockets not named node-<id>.sock"
mkdir -p "$dir/run1" "$dir/sock1"
for c in 0 1; do
	"$dnpd" --torus 2x1x1 --coord $c,0,0 --run-dir "$dir/run1" \
		--socket "$dir/sock1/dnpd-$c.sock" </dev/null >"$dir/d1-$c.log" 2>&1 &
	pids="$pids $!"
done
if wait_for 20 test -e "$dir/run1/node-0.up" -a -S "$dir/sock1/dnpd-0.sock"; then
	ran=1
	"$ctl" --socket "$dir/sock1/dnpd-0.sock" sensor temp 99000 ||
		bad "dnpctl sensor through $dir/sock1/dnpd-0.sock"
	wait_for 10 grep -q 'lofamo: sensor temperature alarm' "$dir/d1-0.log" ||
		bad "node 0 did not log the simulated temperature alarm"
	"$ctl" --socket "$dir/sock1/dnpd-0.sock" sensor temp off || bad "dnpctl sensor off"
	"$ctl" --socket "$dir/sock1/dnpd-1.sock" impair 'dir=xp,loss=5%' || bad "dnpctl impair"
	wait_for 5 sh -c "'$ctl' --socket '$dir/sock1/dnpd-1.sock' stats |
		grep -q '^link X+ impair dir=xp,loss=5'" ||
		bad "node 1 does not show the impairment set through its socket"
	"$ctl" --socket "$dir/sock1/dnpd-1.sock" stats | grep '^file \|^link X+ impair'
else
	bad "two shm daemons did not come up"
	cat "$dir"/d1-*.log
fi
for p in $pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
pids=
grep ' dnpd node ' "$dir/d1-0.log" | head -n 5

# ---- 2. systemd-analyze verify
echo "--- 2. systemd-analyze verify"
if command -v systemd-analyze >/dev/null 2>&1 && [ -d /usr/lib/systemd/system ]; then
	root=$dir/root
	mkdir -p "$root/etc/systemd/system" "$root/usr/lib/systemd" "$root/usr/local/bin"
	cp -a /usr/lib/systemd/system "$root/usr/lib/systemd/"
	cp "$build/deploy/dnpd@.service" "$build/deploy/dnp-hfm@.service" \
		"$build/deploy/dnp-supervisor.service" "$root/etc/systemd/system/"
	# Every ExecStart program must be one that meson installs (default prefix).
	meson introspect --installed "$build" 2>/dev/null |
		python3 -c 'import json, sys; [print(v) for v in json.load(sys.stdin).values()]' \
		>"$dir/installed"
	for u in dnpd@.service dnp-hfm@.service dnp-supervisor.service; do
		exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$build/deploy/$u")
		grep -qx "$exe" "$dir/installed" ||
			bad "$u: ExecStart program $exe is not where meson installs it ($(grep bin/ "$dir/installed" | tr '\n' ' '))"
		cp "$build/$(basename "$exe" | sed 's/^dnpd$/dnp-core\/dnpd\/dnpd/; s/^dnp-\(hfm\|supervisor\)$/lofamo\/&/')" \
			"$root$exe"
	done
	if systemd-analyze verify --root="$root" dnpd@alice.service dnp-hfm@alice.service \
		dnp-supervisor.service >"$dir/verify" 2>&1; then
		ran=1
		echo "ok: systemd-analyze verify dnpd@alice.service dnp-hfm@alice.service dnp-supervisor.service"
	else
		ran=1
		cat "$dir/verify"
		bad "systemd-analyze verify failed"
	fi
	# The check can fail: a unit naming a program that is not there.
	sed 's|^ExecStart=/usr/local/bin/dnpd |ExecStart=/usr/local/bin/dnpd-missing |' \
		"$build/deploy/dnpd@.service" >"$root/etc/systemd/system/dnpd@.service"
	systemd-analyze verify --root="$root" dnpd@alice.service >"$dir/verify2" 2>&1 &&
		bad "systemd-analyze verify accepted a unit whose ExecStart program is missing"
else
	echo "skipped: no systemd-analyze (Debian package systemd)"
fi

# ---- 3. the unit's ExecStart, run as systemd would, in private mount namespaces
echo "--- 3. dnpd@nobody's ExecStart with /etc/dnp and /run/dnp (two hosts)"
if [ "$(id -u)" -ne 0 ]; then
	echo "skipped: needs root (private mount namespaces, setpriv)"
elif ! command -v unshare >/dev/null 2>&1 || ! command -v setpriv >/dev/null 2>&1 ||
	! getent passwd nobody >/dev/null; then
	echo "skipped: needs unshare and setpriv (util-linux) and the user nobody"
else
	unit=$build/deploy/dnpd@.service
	exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
	user=$(sed -n 's/^User=//p' "$unit" | sed 's/%i/nobody/')
	envfile=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$unit")
	rtdir=$(sed -n 's/^RuntimeDirectory=//p' "$unit")
	rtmode=$(sed -n 's/^RuntimeDirectoryMode=//p' "$unit")
	echo "ExecStart=$exec_start User=$user EnvironmentFile=$envfile RuntimeDirectory=$rtdir"
	[ "$envfile" = /etc/dnp/dnpd.env ] || bad "EnvironmentFile is $envfile, docs say /etc/dnp/dnpd.env"
	[ "$rtdir" = dnp ] || bad "RuntimeDirectory is $rtdir, not dnp (/run/dnp)"
	port=$(port_base)
	printf 'h0 addr=127.0.0.1\nh1 addr=127.0.0.1\n' >"$dir/hosts"
	python3 "$src/apps/dnp-topo" --torus 2x1x1 --hosts "$dir/hosts" --transport udp \
		--udp-port $port --out "$dir/topo" >/dev/null || bad "dnp topo"
	grep -q '^socket = /run/dnp/dnpd.sock' "$dir/topo/h0.ini" ||
		bad "dnp topo's file does not name /run/dnp/dnpd.sock"
	mkdir -p "$dir/bin"
	# Copies, not links: the unit's user must reach them, and the build tree
	# may sit in a directory only root can enter (mktemp -d). dnp_pingpong
	# finds libdnp at $ORIGIN/../api, so they keep that layout.
	mkdir -p "$dir/bin/apps" "$dir/bin/api"
	cp "$dnpd" "$ctl" "$dir/bin/"
	cp "$pp" "$dir/bin/apps/"
	find "$build/api" -maxdepth 1 -name 'libdnp.so*' ! -type d -exec cp -P {} "$dir/bin/api/" \;
	chmod -R a+rX "$dir/bin"
	# Type=notify: what dnpd tells systemd's NOTIFY_SOCKET, recorded (READY=1, STOPPING=1).
	cat >"$dir/notify.py" <<'EOF'
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
with open(sys.argv[2], "w") as f:
    while True:
        f.write(s.recv(4096).decode(errors="replace").replace("\n", " ") + "\n")
        f.flush()
EOF
	for h in 0 1; do
		up=$dir/etc$h
		mkdir -p "$up/dnp" "$dir/work$h"
		cp "$dir/topo/h$h.ini" "$up/dnp/dnpd.ini"
		cp "$src/deploy/etc-dnp/dnpd.env.example" "$up/dnp/dnpd.env"
		cp "$dir/hosts" "$up/dnp/hosts"
		cp "$dir/topo/hosts.map" "$up/dnp/hosts.map"
		cat >"$dir/host$h.sh" <<EOF
set -u
mount -t overlay overlay -o lowerdir=/etc,upperdir=$up,workdir=$dir/work$h /etc || exit 1
mount --bind "$dir/bin" /usr/local/bin || exit 1
mount -t tmpfs tmpfs /run || exit 1
# RuntimeDirectory=$rtdir, RuntimeDirectoryMode=$rtmode, owned by User=
mkdir -m ${rtmode:-0755} /run/$rtdir && chown $user /run/$rtdir || exit 1
# EnvironmentFile=: its assignments; ExecStart's \$DNPD_OPTS split into words
DNPD_OPTS=\$(sh -c '. $envfile; printf %s "\$DNPD_OPTS"')
echo "host $h: $exec_start (DNPD_OPTS=\$DNPD_OPTS)"
python3 $dir/notify.py /run/notify.sock $dir/notify-$h &
l=\$!
n=50
while [ ! -S /run/notify.sock ] && [ \$n -gt 0 ]; do sleep 0.1; n=\$((n - 1)); done
setpriv --reuid=$user --regid=\$(id -g $user) --clear-groups env -i PATH=/usr/bin:/bin \\
	NOTIFY_SOCKET=/run/notify.sock DNPD_OPTS="\$DNPD_OPTS" sh -c 'exec $exec_start' 2>$dir/dnpd-$h.log &
d=\$!
n=200
while [ ! -e /run/dnp/node-$h.up ] && [ \$n -gt 0 ]; do sleep 0.1; n=\$((n - 1)); done
[ -e /run/dnp/node-$h.up ] || { echo "host $h: links not up"; kill \$d; exit 1; }
ls -l /run/dnp | sed 's/^/host $h: /'
rc=0
as_user() { setpriv --reuid=$user --regid=\$(id -g $user) --clear-groups env -i PATH=/usr/bin:/bin "\$@"; }
as_user /usr/local/bin/apps/dnp_pingpong --sizes 8,4096 --iters 20 >$dir/pp-$h.out 2>&1 || rc=1
as_user /usr/local/bin/dnpctl topo >$dir/topo-$h.out 2>&1 || rc=2
as_user /usr/local/bin/dnpctl sensor volt 1500 >$dir/sensor-$h.out 2>&1 || rc=3
# Neither daemon stops before both hosts have asked theirs: the first to
# stop takes the other's links down, and a later topo there would find
# them down (a race the test once lost).
touch $dir/asked-$h
n=200
while [ ! -e $dir/asked-$((1 - h)) ] && [ \$n -gt 0 ]; do sleep 0.1; n=\$((n - 1)); done
kill -TERM \$d
wait \$d
echo "host $h: dnpd exit \$?" >>$dir/stop-$h
sleep 0.2
kill \$l
[ -e /run/dnp/dnpd.sock ] && echo "host $h: socket left" >>$dir/stop-$h
exit \$rc
EOF
		unshare --mount --propagation private sh "$dir/host$h.sh" >"$dir/host$h.out" 2>&1 &
		eval "hostpid$h=\$!"
		pids="$pids $!"
	done
	for h in 0 1; do
		eval "wait \$hostpid$h"
		rc=$?
		echo "--- host $h (exit $rc):"
		cat "$dir/host$h.out" "$dir/pp-$h.out" "$dir/topo-$h.out" "$dir/sensor-$h.out" \
			"$dir/stop-$h" 2>/dev/null | sed 's/^/  | /'
		[ $rc -eq 0 ] || { bad "host $h: exit $rc"; cat "$dir/dnpd-$h.log"; }
		grep -q 'exit 0$' "$dir/stop-$h" 2>/dev/null || bad "host $h: dnpd did not exit 0 on SIGTERM"
		grep -q 'socket left' "$dir/stop-$h" 2>/dev/null && bad "host $h: /run/dnp/dnpd.sock left behind"
		[ "$(grep -c ' ok$' "$dir/topo-$h.out")" -eq 2 ] || bad "host $h: dnpctl topo: not 2 links ok"
		sed 's/^/  | notify: /' "$dir/notify-$h" 2>/dev/null
		if ldd "$dnpd" | grep -q libsystemd; then
			grep -q '^READY=1' "$dir/notify-$h" || bad "host $h: dnpd sent no READY=1 (Type=notify)"
			grep -q '^STOPPING=1' "$dir/notify-$h" || bad "host $h: dnpd sent no STOPPING=1"
		fi
	done
	pids=
	grep -Eq '^ +4096 +20 ' "$dir/pp-0.out" || bad "host 0: no 4096-byte ping-pong row"
	ran=1
fi

[ $ran -eq 1 ] || { echo "SKIP: no part could run here"; exit 77; }
[ $fail -eq 0 ] && echo "PASS: deploy"
exit $fail
