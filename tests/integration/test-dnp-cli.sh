#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ./dnp script's command line (suite 'integration'): every command's
# --help and -h print a usage on stdout and exit 0 at once, without building,
# installing or starting anything; --version prints the version of
# meson.build; every bad input listed below exits 2 with a message on stderr
# naming the problem, before anything is built or started.
#
# "Nothing built or started" is checked with stand-ins: meson, ninja, flock,
# apt-get, python3 and the build directories' programs are put first on PATH
# (or named by DNP_*BUILD) as scripts that leave a mark; a mark fails the test.
# usage: test-dnp-cli.sh SOURCE_DIR
set -u
src=$(cd "${1:?usage: test-dnp-cli.sh SOURCE_DIR}" && pwd)
dnp=$src/dnp
tmp=$(mktemp -d /tmp/dnp-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
checks=0

mkdir -p "$tmp/bin"
for p in meson ninja flock apt-get python3 mpirun sudo; do
	printf '#!/bin/sh\necho "%s $*" >>"%s/marks"\nexit 0\n' "$p" "$tmp" >"$tmp/bin/$p"
	chmod +x "$tmp/bin/$p"
done
export PATH=$tmp/bin:$PATH
# build directories that do not exist: a command that builds would create them
export DNP_BUILD=$tmp/build DNP_BENCH_BUILD=$tmp/build-bench DNP_DEMO_BUILD=$tmp/build-demo
export DNP_FUZZ_BUILD=$tmp/build-fuzz

bad() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# run ARGS...: ./dnp ARGS with a 10 s bound; sets rc, out ($tmp/out), err ($tmp/err).
run() {
	rm -f "$tmp/marks"
	(cd "$tmp" && timeout 10 "$dnp" "$@" >"$tmp/out" 2>"$tmp/err")
	rc=$?
	checks=$((checks + 1))
}

# nothing_started WHAT: no stand-in was called and no build directory made.
nothing_started() {
	if [ -s "$tmp/marks" ]; then
		bad "$1 started something: $(head -n 3 "$tmp/marks" | tr '\n' ';')"
	fi
	for d in build build-bench build-demo build-fuzz; do
		[ ! -e "$tmp/$d" ] || bad "$1 created the build directory $d"
	done
}

# help_ok ARGS...: exit 0, a usage on stdout, nothing on stderr, nothing started.
help_ok() {
	run "$@"
	local what="./dnp $*"
	[ $rc -eq 0 ] || bad "$what exited $rc (want 0); stderr: $(head -n 2 "$tmp/err")"
	grep -q '^usage: ./dnp' "$tmp/out" || bad "$what printed no usage on stdout"
	[ ! -s "$tmp/err" ] || bad "$what wrote to stderr: $(head -n 2 "$tmp/err")"
	nothing_started "$what"
}

# usage_error PATTERN ARGS...: exit 2, PATTERN (grep -E) on stderr, nothing started.
usage_error() {
	local pat=$1
	shift
	run "$@"
	local what="./dnp $*"
	[ $rc -eq 2 ] || bad "$what exited $rc (want 2); stderr: $(head -n 2 "$tmp/err")"
	grep -Eq -- "$pat" "$tmp/err" || bad "$what: no '$pat' on stderr: $(head -n 2 "$tmp/err")"
	nothing_started "$what"
}

cmds=(test demo lab run mpirun drill topo bench bench-dpdk fuzz build)
help_ok
help_ok help
for h in --help -h; do
	help_ok "$h"
	for c in "${cmds[@]}"; do
		help_ok "$c" "$h"
	done
	help_ok bench engine "$h"
done
# the overview names every command
run --help
for c in "${cmds[@]}"; do
	grep -Eq "^  $c( |$)" "$tmp/out" || bad "./dnp --help does not list $c"
done
# a help option after other arguments still builds nothing
help_ok drill kill-dnpd --torus 2x2x2 --help
help_ok mpirun --torus 2x1x1 -np 2 --help -- NPopenmpi
help_ok bench --quick --help
help_ok bench --transport verbs --help
help_ok test --werror --help

run --version
want=$(sed -n "s/^ *version: *'\([^']*\)'.*/\1/p" "$src/meson.build" | head -n 1)
[ $rc -eq 0 ] && [ -n "$want" ] && grep -Eqx "dnp \(SoftDNP\) $want(-g[0-9a-f]+(-dirty)?)?" "$tmp/out" ||
	bad "./dnp --version: rc $rc, '$(cat "$tmp/out")' (want 'dnp (SoftDNP) $want-gCOMMIT')"
nothing_started "./dnp --version"

usage_error "unknown command 'nosuch'" nosuch
usage_error "unknown command '--bogus'" --bogus
usage_error "unknown option --bogus" test --bogus
usage_error "option --suite needs a value" test --suite
usage_error "option --no-suite needs a value" test --no-suite
usage_error "unknown option extra" demo extra
usage_error "option -np needs a value" mpirun --torus 2x1x1 -np
usage_error "-np needs a positive number, not 'x'" mpirun --torus 2x1x1 -np x -- true
usage_error "option --out needs a value" mpirun --out
usage_error "no '-- PROGRAM' to run" mpirun --torus 2x1x1
usage_error "no PROGRAM after --" mpirun --torus 2x1x1 --
usage_error "unknown scenario 'nosuch'" drill nosuch
usage_error "unknown option --bogus" drill kill-dnpd --bogus
usage_error "unknown transport 'tcp'" drill kill-dnpd --transport tcp
usage_error "option --transport needs a value" drill kill-dnpd --transport
usage_error "--torus needs XxYxZ, not '2x2'" drill all --torus 2x2
usage_error "--t-read needs a positive number" drill all --t-read soon
usage_error "unknown option --bogus" bench --bogus
usage_error "unknown option --bogus" bench engine --bogus
usage_error "option --out needs a value" bench --out
usage_error "--save and --out exclude each other" bench --save --out "$tmp/x"
usage_error "unknown option --quick" bench-dpdk --quick
usage_error "--transport takes verbs" bench --transport udp
usage_error "option --transport needs a value" bench --transport
usage_error "unknown option --transport" bench engine --transport verbs
usage_error "SECONDS must be a positive number, not 'soon'" fuzz soon
usage_error "unexpected argument 7" fuzz 5 7
usage_error "unknown option foo" build foo
# a usage error says so on stderr only, never on stdout
usage_error "unknown scenario" drill nosuch --csv
[ ! -s "$tmp/out" ] || bad "./dnp drill nosuch --csv wrote to stdout: $(head -n 2 "$tmp/out")"
[ ! -e "$tmp/x" ] || bad "./dnp bench --save --out DIR created DIR"

if [ $fails -gt 0 ]; then
	echo "FAIL: dnp-cli: $fails failed checks in $checks invocations of ./dnp (listed above)"
	exit 1
fi
echo "PASS: dnp-cli: $checks invocations of ./dnp (help, --version, usage errors)"
exit 0
