# SPDX-License-Identifier: MIT
# Helpers shared by the benchmark scripts (sourced, not run).
# They read $csv (rows: TEST,BYTES,...) and $build.

# med TEST BYTES COLUMN: median over the runs of one CSV column (empty if none).
med() {
	awk -F, -v t="$1" -v b="$2" -v c="$3" '$1 == t && $2 == b && $c != "" { print $c }' "$csv" |
		sort -g | awk '{ v[NR] = $1 } END {
			if (NR == 0) exit
			if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ratio A B: A / B with two decimals, or "-"
ratio() {
	if [ -n "$1" ] && [ -n "$2" ]; then
		awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'
	else
		echo "-"
	fi
}

# machine_info: sets btype (meson buildtype of $build) and cpu (model name).
machine_info() {
	btype=$(meson introspect "$build" --buildoptions 2>/dev/null | python3 -c \
		'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "buildtype"))' \
		2>/dev/null || echo unknown)
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
}
