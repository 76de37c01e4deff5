#!/bin/sh
# SPDX-License-Identifier: MIT
# One SPDX style (LICENSE is MIT): C files open with
#   /* SPDX-License-Identifier: MIT */
# shell scripts and meson files carry "# SPDX-License-Identifier: MIT" in their
# first two lines. Prints every file that does not; exit 1 if any.
# usage: check-spdx.sh SOURCE_ROOT
set -u
root=${1:?usage: check-spdx.sh SOURCE_ROOT}
cd "$root" || exit 2
bad=0
files=$(find . \( -path './build*' -o -path './.git' -o -path './subprojects' \) -prune -o \
	-type f \( -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name meson.build \
	-o -name meson_options.txt \) -print)
for f in $files; do
	case $f in
	*.c|*.h) [ "$(head -n 1 "$f")" = '/* SPDX-License-Identifier: MIT */' ] && continue ;;
	*) head -n 2 "$f" | grep -qx '# SPDX-License-Identifier: MIT' && continue ;;
	esac
	echo "$f: no SPDX line in the project's style"
	bad=1
done
[ $bad -eq 0 ] && echo "SPDX lines: every source file in the project's style"
exit $bad
