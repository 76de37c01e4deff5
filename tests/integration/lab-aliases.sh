#!/bin/sh
# SPDX-License-Identifier: MIT
# dnp-lab takes dnpd's names for the concepts they share, beside its own
# (docs/lab.md, "Options"): each pair gives the same run, byte for byte, and
# a run where the value matters differs from one without it.
#   --impair loss=5%,dup=1%      = --loss 0.05 --dup 0.01
#   --credit-timeout-ms 0.01     = --credit-timeout 3500 (350 MHz: 3500 cycles),
#                                  = --credit-timeout-ms 5us --link-mhz 700
#   --cmd-timeout-ms 1us         = --cmd-timeout 350 (and commands time out)
#   --credit-period-us 0.2       = --credit-period 70
#   no --vcs                     = --vcs 4, dnpd's default (and not --vcs 2)
# and dnpd's spec with what the lab cannot do (dir=, delay=, seed=) or a bad
# value is refused with exit 2 and a message.
# usage: lab-aliases.sh BUILD_DIR
set -u
lab=$1/dnp-core/lab/dnp-lab
. "$(dirname "$0")/lib.sh"
need_built "$lab"
fails=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

run() { # NAME ARGS...: the run's CSV report into $t/NAME
	n=$1
	shift
	timeout 60 "$lab" run --csv "$@" >"$t/$n" 2>&1 || {
		echo "FAIL: dnp-lab run $* failed"
		cat "$t/$n"
		fails=$((fails + 1))
	}
}
runf() { # NAME ARGS...: a run meant to fail its verification (exit 1)
	n=$1
	shift
	timeout 60 "$lab" run --csv "$@" >"$t/$n" 2>&1
	_rc=$?
	[ $_rc = 1 ] || {
		echo "FAIL: dnp-lab run $* exited $_rc, want 1"
		fails=$((fails + 1))
	}
}
same() { # DESCRIPTION A B
	if cmp -s "$t/$2" "$t/$3"; then echo "ok: $1"; else
		echo "FAIL: $1"
		diff "$t/$2" "$t/$3" | head -20
		fails=$((fails + 1))
	fi
}
differ() {
	if cmp -s "$t/$2" "$t/$3"; then
		echo "FAIL: $1 (the option changed nothing, so the comparison proves nothing)"
		fails=$((fails + 1))
	else echo "ok: $1"; fi
}

T="--torus 2x2x1"
run plain $T
run loss $T --loss 0.05 --dup 0.01
run impair $T --impair loss=5%,dup=1%
run impair_all $T --impair dir=all,loss=5%,dup=1%
same "--impair loss=5%,dup=1% is --loss 0.05 --dup 0.01" loss impair
same "--impair with dir=all" loss impair_all
differ "the impairment matters" plain loss

run ct $T --credit-timeout 3500
run ctms $T --credit-timeout-ms 0.01
run ctms700 $T --credit-timeout-ms 5us --link-mhz 700
runf ct10 $T --credit-timeout 10
same "--credit-timeout-ms 0.01 is 3500 cycles at 350 MHz" ct ctms
same "--credit-timeout-ms 5us --link-mhz 700 is 3500 cycles" ct ctms700
differ "the credit timeout matters" ct ct10

runf cmd $T --cmd-timeout 350
runf cmdms $T --cmd-timeout-ms 1us
same "--cmd-timeout-ms 1us is --cmd-timeout 350" cmd cmdms
grep -q '^completions_err,[1-9]' "$t/cmd" && echo "ok: the command timeout matters" ||
	{ echo "FAIL: no command timed out"; fails=$((fails + 1)); }

run cp $T --credit-period 70
run cpus $T --credit-period-us 0.2
same "--credit-period-us 0.2 is --credit-period 70" cp cpus
differ "the credit period matters" plain cp

R="--torus 4x1x1 --sizes 64K"
run vdef $R
run v4 $R --vcs 4
run v2 $R --vcs 2
same "the default --vcs is dnpd's, 4" vdef v4
differ "the number of VCs matters" v4 v2

for bad in "--impair dir=xp,loss=1%" "--impair delay=5us" "--impair seed=3,loss=1%" \
	"--impair loss=150%" "--impair nonsense" "--credit-timeout-ms 3parsecs" \
	"--link-mhz 0" "--cmd-timeout-ms 100000000h"; do
	# shellcheck disable=SC2086
	timeout 60 "$lab" run $T $bad >"$t/out" 2>"$t/err"
	rc=$?
	opt=${bad%% *}
	if [ $rc = 2 ] && grep -q -- "$opt" "$t/err"; then echo "ok: $bad refused"; else
		echo "FAIL: $bad: exit $rc, want 2 and a message naming $opt"
		cat "$t/err"
		fails=$((fails + 1))
	fi
done
"$lab" run --help | grep -q -- "--credit-timeout-ms" || { echo "FAIL: --help"; fails=$((fails + 1)); }
[ $fails = 0 ] || { echo "$fails failed"; exit 1; }
echo "lab-aliases: ok"
