#!/bin/sh
# SPDX-License-Identifier: MIT
# man.sh HELP2MAN NAME DESCRIPTION PROGRAM OUTPUT: NAME's man page from
# PROGRAM's --help and --version (docs/meson.build). help2man runs a
# stand-in called NAME that runs PROGRAM with its arguments and rewrites
# its usage block the way help2man makes a SYNOPSIS of it: the program's
# path becomes NAME, "usage:" becomes "Usage:", another form of the command
# ("       NAME other [options]") becomes "  or: NAME other [options]", and
# a usage line wrapped onto the next one ("    [--more]") is joined; an em
# dash becomes "-" (man in the C locale shows it as "???").
set -eu
h2m=$1 name=$2 desc=$3 prog=$4 out=$5
dir=$(mktemp -d "${TMPDIR:-/tmp}/dnp-man.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat >"$dir/filter.awk" <<'AWK'
{ gsub(prog, name); gsub("\342\200\224", "-") }
/^[Uu]sage: / { if (held != "") print held; held = "Usage: " substr($0, 8); inuse = 1; next }
inuse && /^[ \t]+[^ \t]/ {
	line = $0
	sub(/^[ \t]+/, "", line)
	if (index(line, name " ") == 1 || line == name) {
		print held; held = "  or: " line; next
	}
	if (substr(line, 1, 1) == "[") { held = held " " line; next }
}
{ if (held != "") print held; held = ""; inuse = 0; print }
END { if (held != "") print held }
AWK
cat >"$dir/$name" <<WRAP
#!/bin/sh
"$prog" "\$@" | awk -v prog="$prog" -v name="$name" -f "$dir/filter.awk"
WRAP
chmod +x "$dir/$name"
"$h2m" --no-info --name "$desc" --output "$out" "$dir/$name"
