#!/bin/sh
# SPDX-License-Identifier: MIT
# Checks dnp-run against a stand-in daemon: environment, line prefixes,
# exit codes, failure propagation, timeouts, a daemon dying, clean-up,
# --output and --print-run-dir, usage errors (exit 2, the bad option named),
# the fit check, and that a dnp-run killed with SIGKILL leaves no process
# behind (counted by the run directory in their command line or environment).
# usage: test-dnp-run.sh BUILD_DIR FAKE_DNPD
set -u
run=$1/apps/dnp-run
fake=$2
fails=0
out=$(mktemp)
# A private base for the run directories, so the clean-up check sees only ours.
XDG_RUNTIME_DIR=$(mktemp -d)
export XDG_RUNTIME_DIR
trap 'rm -f "$out"; rm -rf "$XDG_RUNTIME_DIR"' EXIT

check() { # description, condition (shell expression)
	if eval "$2"; then
		echo "ok: $1"
	else
		echo "FAIL: $1"
		echo "---- output ----"
		cat "$out"
		echo "----------------"
		fails=$((fails + 1))
	fi
}

"$run" --torus 2x2x1 --dnpd "$fake" -- sh -c \
	'echo "id=$DNP_NODE_ID n=$DNP_NNODES t=$DNP_TORUS c=$DNP_COORD s=${DNP_SOCKET##*/}"; printf tail; echo err >&2' \
	>"$out" 2>&1
rc=$?
check "all programs exit 0 -> exit 0" "[ $rc -eq 0 ]"
check "environment and prefix of node 3" \
	"grep -qx '\[1,1,0\] id=3 n=4 t=2x2x1 c=1,1,0 s=node-3.sock' '$out'"
check "unterminated last line is printed" "[ \$(grep -c '^\[[01],[01],0\] tail\$' '$out') -eq 4 ]"
check "stderr is prefixed too" "[ \$(grep -c '^\[[01],[01],0\] err\$' '$out') -eq 4 ]"

start=$(date +%s)
"$run" --torus 2x1x1 --dnpd "$fake" -- sh -c '[ $DNP_NODE_ID = 1 ] && exit 3; sleep 30' >"$out" 2>&1
rc=$?
check "one program fails -> exit 1" "[ $rc -eq 1 ]"
check "the failing node is named" "grep -q 'node 1,0,0 failed (exit 3)' '$out'"
check "the others are stopped at once" "[ \$((\$(date +%s) - start)) -lt 10 ]"

"$run" --torus 2x1x1 --keep-going --dnpd "$fake" -- sh -c '[ $DNP_NODE_ID = 1 ] && exit 3; sleep 0.3; echo finished' >"$out" 2>&1
rc=$?
check "--keep-going lets the others finish" "[ $rc -eq 1 ] && grep -q '^\[0,0,0\] finished' '$out'"

"$run" --torus 2x1x1 --timeout 1 --dnpd "$fake" -- sleep 30 >"$out" 2>&1
rc=$?
check "timeout -> exit 1 with a message" "[ $rc -eq 1 ] && grep -q 'timeout' '$out'"

FAKE_DNPD_DIE=1 "$run" --torus 2x1x1 --dnpd "$fake" -- sleep 30 >"$out" 2>&1
rc=$?
check "a daemon dying early fails the run" "[ $rc -eq 1 ] && grep -q 'died early' '$out'"
check "its log is shown" "grep -q 'dying on purpose' '$out'"

FAKE_DNPD_NOUP=0 "$run" --torus 2x1x1 --up-timeout 1 --dnpd "$fake" -- true >"$out" 2>&1
rc=$?
check "links never up -> clear failure" "[ $rc -eq 1 ] && grep -q 'brought their links up' '$out'"

"$run" --torus 2x1x1 --dnpd /nonexistent/dnpd -- true >"$out" 2>&1
rc=$?
check "missing daemon binary -> exit 1" "[ $rc -eq 1 ] && grep -q 'not an executable' '$out'"

"$run" --torus 2x1x1 --dnpd "$fake" -- no-such-program-xyz >"$out" 2>&1
rc=$?
check "unknown program -> exit 1" "[ $rc -eq 1 ] && grep -q 'not found' '$out'"

"$run" --torus 2y2 -- true >"$out" 2>&1
rc=$?
check "bad torus -> usage error 2" "[ $rc -eq 2 ]"

"$run" --torus 2x2x1 --output node2 --dnpd "$fake" -- sh -c 'echo "id=$DNP_NODE_ID"; echo "e$DNP_NODE_ID" >&2' \
	>"$out" 2>/dev/null
check "--output node2: node 2's stdout alone, no prefix" "[ \"\$(cat '$out')\" = id=2 ]"
"$run" --torus 2x1x1 --output raw --dnpd "$fake" -- sh -c 'echo "id=$DNP_NODE_ID"' >"$out" 2>&1
check "--output raw: every node, no prefix" \
	"[ \$(grep -cx 'id=[01]' '$out') -eq 2 ] && ! grep -q '^\[' '$out'"

usage_error() { # description, expected message, dnp-run arguments...
	desc=$1 want=$2
	shift 2
	"$run" "$@" >"$out" 2>&1
	rc=$?
	check "$desc -> exit 2 naming it" "[ $rc -eq 2 ] && grep -q -- \"$want\" '$out'"
}
usage_error "unknown option" "unknown option '--bogus'" --bogus --torus 2x1x1 -- true
usage_error "option without its value" "needs a value" --torus
usage_error "bad --output" "bad --output 'nodeX'" --torus 2x1x1 --output nodeX -- true
usage_error "--output of a node outside the torus" "node5" --torus 2x1x1 --output node5 -- true
usage_error "overflowing --timeout" "bad --timeout '17179869185G'" --torus 2x1x1 --timeout 17179869185G -- true
usage_error "a torus this machine cannot hold" "does not fit this machine" --torus 16x16x16 -- true
usage_error "an impairment dnpd would refuse" "bad --impair 'loss=150%'" --torus 2x1x1 --impair loss=150% -- true
# The programs of apps/: usage errors exit 2 and name the problem (no daemon needed).
app_error() { # description, expected message, program, arguments...
	desc=$1 want=$2 prog=$(dirname "$run")/$3
	shift 3
	"$prog" "$@" >"$out" 2>&1
	rc=$?
	check "$desc -> exit 2 naming it" "[ $rc -eq 2 ] && grep -q -- \"$want\" '$out'"
}
app_error "dnp_pingpong overflowing size" "bad value '17179869185G' for --sizes" dnp_pingpong --sizes 17179869185G
app_error "dnp_bw window 0" "bad value '0' for --window" dnp_bw --window 0
app_error "dnp_alltoall unknown option" "unknown option '--bogus'" dnp_alltoall --bogus
app_error "dnp_check unknown mode" "unknown mode 'nope'" dnp_check nope
app_error "udp_pingpong bad --cpus" "bad value 'x' for --cpus" udp_pingpong --cpus x
DNP_SOCKET=/nonexistent/dnpd.sock "$(dirname "$run")/dnp_pingpong" >"$out" 2>&1
rc=$?
check "a program without a daemon says so" \
	"[ $rc -eq 1 ] && grep -q 'daemon is not running: no dnpd listens on /nonexistent/dnpd.sock' '$out'"

"$run" --help >"$out" 2>/dev/null
rc=$?
check "--help: usage on stdout, exit 0" "[ $rc -eq 0 ] && grep -q '^usage: dnp-run' '$out'"
"$run" --version >"$out" 2>&1
rc=$?
check "--version" "[ $rc -eq 0 ] && grep -qx 'dnp-run (SoftDNP) [0-9][0-9.]*[-0-9a-z]*' '$out'"

# Lifetimes: kill -9 dnp-run, count what is left of the run.
count_run() { # processes whose command line or environment name the run directory
	n=0
	for p in /proc/[0-9]*; do
		if tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -qF "$1" ||
			tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qF "$1"; then
			n=$((n + 1))
		fi
	done
	echo $n
}
err=$(mktemp)
"$run" --torus 2x1x1 --print-run-dir --dnpd "$fake" -- \
	sh -c ': >"$DNP_SOCKET.started"; exec sleep 60' >/dev/null 2>"$err" &
pid=$!
dir=
for i in $(seq 100); do
	dir=$(sed -n 's/^dnp-run: run directory: //p' "$err")
	[ -n "$dir" ] && [ -e "$dir/node-0.sock.started" ] && [ -e "$dir/node-1.sock.started" ] && break
	sleep 0.1
done
before=$(count_run "$dir")
kill -9 $pid
wait $pid 2>/dev/null
after=$before
for i in $(seq 100); do
	after=$(count_run "$dir")
	[ "$after" -eq 0 ] && break
	sleep 0.1
done
cp "$err" "$out"
check "--print-run-dir names the run directory" "[ -n '$dir' ]"
check "kill -9 of dnp-run leaves no process of its run ($before before, $after after)" \
	"[ $before -ge 4 ] && [ $after -eq 0 ]"
rm -f "$err"
[ -n "$dir" ] && rm -rf "$dir"

check "run directories are made under \$XDG_RUNTIME_DIR and removed" \
	"[ -z \"\$(ls -A '$XDG_RUNTIME_DIR')\" ]"

[ $fails -eq 0 ] || { echo "$fails checks failed"; exit 1; }
echo "PASS: dnp-run"
