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

# ------------------------------------------------ hand-off figures (issue: CPU, switches)
# rus_run OUT CMD...: runs CMD under GNU time; OUT gets "user system vcsw ivcsw" of
# CMD and of every descendant it reaped (dnp-run reaps its daemons and programs).
# Returns CMD's status.
rus_run() {
	local out=$1
	shift
	/usr/bin/time -f '%U %S %w %c' -o "$out.t" -- "$@"
	local rc=$?
	tail -n 1 "$out.t" >"$out"
	rm -f "$out.t"
	return $rc
}

# rus_sum FILE...: "cpu_s switches" summed over rus_run (or GNU time -f '%U %S %w %c')
# outputs; a file may hold several (the last line of each run: grep -v its status lines)
rus_sum() {
	grep -hE '^[0-9.]+ [0-9.]+ [0-9]+ [0-9]+$' "$@" | awk '{ c += $1 + $2; s += $3 + $4 } END { printf "%.4f %d\n", c, s }'
}

# two_host_wrappers DIR BUILD: the "two hosts" placement on a 2x1x1 torus,
# each node's daemon and program sharing one CPU (node x on CPU x): writes
# DIR/dnpd (for dnp-run --dnpd) and DIR/dnp_pingpong, DIR/dnp_bw (programs
# for dnp-run), which exec the real ones under taskset.
two_host_wrappers() {
	local dir=$1 b=$2 p
	mkdir -p "$dir"
	cat >"$dir/dnpd" <<EOS
#!/bin/sh
# the daemon of node X,0,0 on CPU X
prev=; x=0
for a; do [ "\$prev" = --coord ] && x=\${a%%,*}; prev=\$a; done
exec taskset -c "\$x" "$b/dnp-core/dnpd/dnpd" "\$@"
EOS
	for p in dnp_pingpong dnp_bw; do
		cat >"$dir/$p" <<EOS
#!/bin/sh
# node i's program on CPU i, beside its daemon
exec taskset -c "\${DNP_NODE_ID:-0}" "$b/apps/$p" "\$@"
EOS
	done
	chmod +x "$dir/dnpd" "$dir/dnp_pingpong" "$dir/dnp_bw"
}

# callgrind_rows ENGINE_BENCH ROUNDS: rows engine,,instr_per_put,8,K (instructions
# of both engines per 8-byte PUT, K = 1..ROUNDS): engine_bench --puts N under
# callgrind for N = 20000 and 60000, the difference of the two counts over the
# 40000 extra PUTs (set-up cancels out). engine_bench's timers follow the clock,
# which valgrind slows, so counts differ by a few per cent between rounds: the
# report takes the median. A count that fails ends the rows there.
callgrind_rows() {
	local k n a err
	err=$(mktemp /tmp/callgrind-rows.XXXXXX)
	for k in $(seq "$2"); do
		a=''
		for n in 20000 60000; do
			if ! timeout 300 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" \
				--sizes 8 --reps 1 --puts $n >/dev/null 2>"$err"; then
				echo "bench: engine_bench under callgrind failed (rows left out):" >&2
				tail -n 3 "$err" >&2
				rm -f "$err"
				return 0
			fi
			a="$a $(awk '/Collected :/ { print $NF }' "$err")"
		done
		echo "$a" | awk -v r="$k" 'NF == 2 && $2 > $1 {
			printf "engine,,instr_per_put,8,%s,%.0f,instr\n", r, ($2 - $1) / 40000 }'
	done
	rm -f "$err"
}
