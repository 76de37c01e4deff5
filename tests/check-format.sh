#!/bin/sh
# SPDX-License-Identifier: MIT
# The C sources follow .clang-format: prints every file clang-format would
# change (with its first differing lines); exit 1 if any. Formats differ
# between clang-format releases, so only the release the style was written
# for (14, Debian 12) is trusted; with another one, or none, the test skips.
# Fix a file with: clang-format -i FILE
# usage: check-format.sh SOURCE_ROOT
set -u
root=${1:?usage: check-format.sh SOURCE_ROOT}
cd "$root" || exit 2
cf=$(command -v clang-format-14 || command -v clang-format) || {
	echo "SKIP: clang-format not installed"
	exit 77
}
ver=$("$cf" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "$ver" != 14 ]; then
	echo "SKIP: $cf is release ${ver:-unknown}, the style is checked with release 14"
	exit 77
fi
files=$(find . \( -path './build*' -o -path './.git' -o -path './subprojects' \) -prune -o \
	-type f \( -name '*.c' -o -name '*.h' \) -print | sort)
# One clang-format for every file (a process per file took 30 s of CI); only
# when it finds a difference are the files checked one by one, to name them.
# shellcheck disable=SC2086
if "$cf" --dry-run --Werror $files >/dev/null 2>&1; then
	echo "format: every C source follows .clang-format"
	exit 0
fi
bad=0
for f in $files; do
	if ! "$cf" --dry-run --Werror "$f" >/dev/null 2>&1; then
		echo "$f: not in the .clang-format style (clang-format -i $f):"
		"$cf" "$f" | diff "$f" - | head -n 6
		bad=1
	fi
done
[ $bad -eq 0 ] && echo "format: clang-format failed on the whole list, but on no single file"
exit 1
