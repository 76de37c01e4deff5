#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed programs and their man pages (suite 'integration'): meson
# install into a scratch DESTDIR, then for every program named
#   - PREFIX/bin/NAME --version prints "NAME (SoftDNP) VERSION" (the version
#     of this build, common/dnp_version_gen.h) on stdout and exits 0;
#   - PREFIX/bin/NAME --help prints its usage on stdout, nothing on stderr,
#     and exits 0;
#   - MANDIR/man1/NAME.1 exists, its .TH header names the program and the
#     version, it shows --help, and it renders: man -l (man-db), else groff,
#     else mandoc, without a warning; with none of them the source is
#     checked alone (the SYNOPSIS and an option line).
# Without help2man at configure time (DNP_MAN_BUILT=0) the man pages are
# not built: the --version/--help part runs, then the test exits 77.
# usage: man-pages.sh BUILD_DIR "NAME..."
set -u
build=$(cd "${1:?usage: man-pages.sh BUILD_DIR NAMES}" && pwd)
names=${2:?usage: man-pages.sh BUILD_DIR NAMES}
tmp=$(mktemp -d /tmp/softdnp-man.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

ver=$(sed -n 's/^#define DNP_VERSION_FULL "\(.*\)"$/\1/p' "$build/common/dnp_version_gen.h")
[ -n "$ver" ] || {
	echo "FAIL: no version in $build/common/dnp_version_gen.h"
	exit 1
}
if ! timeout 120 meson install -C "$build" --no-rebuild --destdir "$tmp/root" >"$tmp/install.log" 2>&1; then
	echo "FAIL: meson install --destdir failed:"
	tail -n 20 "$tmp/install.log"
	exit 1
fi
bin=$(dirname "$(find "$tmp/root" -type f -path '*/bin/dnpd' | head -n 1)")
lib=$(dirname "$(find "$tmp/root" -name 'libdnp.so*' | head -n 1)")
[ -x "$bin/dnpd" ] || {
	echo "FAIL: no bin/dnpd under the DESTDIR"
	exit 1
}
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}

n=0
for name in $names; do
	n=$((n + 1))
	p=$bin/$name
	[ -x "$p" ] || {
		bad "$name: not installed in $bin"
		continue
	}
	out=$(timeout 10 "$p" --version 2>"$tmp/err")
	rc=$?
	[ $rc -eq 0 ] && [ "$out" = "$name (SoftDNP) $ver" ] ||
		bad "$name --version: exit $rc, '$out' (want '$name (SoftDNP) $ver')"
	timeout 10 "$p" --help >"$tmp/help" 2>"$tmp/err"
	rc=$?
	[ $rc -eq 0 ] && [ -s "$tmp/help" ] && [ ! -s "$tmp/err" ] ||
		bad "$name --help: exit $rc, $(wc -l <"$tmp/help") lines on stdout, stderr '$(head -c 200 "$tmp/err")'"
done
echo "checked --version and --help of $n installed programs (version $ver)"

if [ "${DNP_MAN_BUILT:-0}" != 1 ]; then
	[ $fails -eq 0 ] || exit 1
	echo "SKIP: help2man was not found at configure time: no man pages to check"
	exit 77
fi

man1=$(find "$tmp/root" -type d -path '*/man/man1' | head -n 1)
[ -n "$man1" ] || {
	echo "FAIL: no share/man/man1 under the DESTDIR"
	exit 1
}
render=none
if command -v man >/dev/null; then
	render='man'
elif command -v groff >/dev/null; then
	render=groff
elif command -v mandoc >/dev/null; then
	render=mandoc
fi
for name in $names; do
	page=$man1/$name.1
	[ -s "$page" ] || {
		bad "$name: no man page $page"
		continue
	}
	th=$(grep -m 1 '^\.TH ' "$page")
	case "$th" in
	*"$ver"*) ;;
	*) bad "$name.1: the .TH header does not carry the version $ver: $th" ;;
	esac
	grep -q '^\.SH SYNOPSIS' "$page" || bad "$name.1: no SYNOPSIS section"
	grep -Eq -- '(\\-\\-|--)help' "$page" || bad "$name.1: does not show --help"
	case $render in
	man) MANWIDTH=100 timeout 20 man -l "$page" >"$tmp/out" 2>"$tmp/err" ;;
	groff) timeout 20 groff -man -Tutf8 -ww "$page" >"$tmp/out" 2>"$tmp/err" ;;
	mandoc) timeout 20 mandoc -Tutf8 -Wwarning "$page" >"$tmp/out" 2>"$tmp/err" ;;
	none) : >"$tmp/err" && cp "$page" "$tmp/out" ;;
	esac
	rc=$?
	col -b <"$tmp/out" >"$tmp/text" 2>/dev/null || cp "$tmp/out" "$tmp/text"
	[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] ||
		bad "$name.1: $render exited $rc: $(head -c 300 "$tmp/err")"
	if [ $render != none ]; then
		grep -q "^NAME" "$tmp/text" && grep -q -- "--version" "$tmp/text" &&
			grep -q "$name - " "$tmp/text" ||
			bad "$name.1: rendered by $render without NAME, '$name - ' or --version: $(head -n 8 "$tmp/text")"
	fi
done
echo "checked $n man pages in $man1 (rendered with $render)"
[ $fails -eq 0 ] || {
	echo "FAIL: man-pages: $fails problems"
	exit 1
}
echo "PASS: man-pages: $n programs answer --version and --help, their man pages render"
