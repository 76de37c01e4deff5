#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# LO|FA|MO awareness figures (docs/lofamo.md): every drill of
# tests/integration/drill.sh RUNS times over shm and udp, then the median and
# worst awareness time per scenario beside 3 x T_read. Each round (ten
# drills, about a minute) takes the shared heavy-run lock for itself only.
#   bench/lofamo.sh BUILD [RUNS] [SOAK_SECONDS]
# Writes bench/results/lofamo-DATE.csv (every drill, with its verdict: a drill
# that failed keeps its figures but counts as failed, never as a run ok) and
# lofamo-DATE.md (medians and worst over the drills that passed).
# With SOAK_SECONDS > 0 it also runs the soak (drill.sh soak): no fault, full
# traffic, false alarms counted.
set -euo pipefail
build=$(cd "$1" && pwd)
runs=${2:-10}
soak=${3:-0}
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
day=$(date -u +%Y-%m-%d)
csv=$top/bench/results/lofamo-$day.csv
md=$top/bench/results/lofamo-$day.md
drill=$top/tests/integration/drill.sh
scens="kill-dnpd kill-hfm both sensor svcnet-cut"

echo "scenario,transport,t_write_ms,t_read_ms,awareness_ms,path,cmds_ok,cmds_failed,cmds_unfinished,false_alarms,verdict" >"$csv"
# One drill: its CSV row plus PASS or FAIL from its exit status (the row of a
# drill that failed has figures too: before, those counted as a run ok).
one() { # SCENARIO TRANSPORT [drill args...]
	local s=$1 tr=$2 out row verdict=PASS
	shift 2
	out=$(bash "$drill" "$build" "$s" --transport "$tr" --csv --no-header "$@" \
		2>"/tmp/lofamo-bench-$s-$tr.err") || verdict=FAIL
	row=$(grep -E "^$s," <<<"$out" | head -1 || true)
	[ -n "$row" ] || { row="$s,$tr,,,,,,,,"; verdict=FAIL; }
	echo "$row,$verdict" >>"$csv"
	if [ $verdict = FAIL ]; then
		echo "lofamo bench: $s over $tr failed; its log:" >&2
		grep -v '^\[' "/tmp/lofamo-bench-$s-$tr.err" | tail -20 >&2
	fi
	rm -f "/tmp/lofamo-bench-$s-$tr.err"
}
round() {
	for tr in shm udp; do
		for s in $scens; do
			one "$s" "$tr"
		done
	done
}
export -f one round
export drill build csv scens
for i in $(seq "$runs"); do
	flock /tmp/softdnp-heavy.lock bash -c round
	echo "lofamo bench: round $i of $runs done"
done
if [ "$soak" -gt 0 ]; then
	for tr in shm; do
		flock /tmp/softdnp-heavy.lock bash -c 'one soak "$0" --soak "$1"' "$tr" "$soak"
	done
fi

python3 - "$csv" "$runs" "$soak" >"$md" <<'PY'
import csv, statistics, sys, platform
rows = list(csv.DictReader(open(sys.argv[1])))
soak = int(sys.argv[3])
print("# LO|FA|MO awareness drills\n")
print(f"Machine: {platform.node()}, {open('/proc/cpuinfo').read().count('processor')} CPUs, "
      f"load average at the end {open('/proc/loadavg').read().split()[0]}.")
print(f"Each scenario {sys.argv[2]} times per transport on a 2x2x2 torus, T_write 100 ms, "
      "T_read 250 ms, link credit timeout 400 ms; the fault is on the last node.\n")
print("Runs ok: drills that passed (a failed drill's figures stay in the CSV, out of the "
      "medians and totals).\n")
print("| scenario | transport | runs ok | path | awareness median ms | worst ms | 3 x T_read ms | cmds ok | cmds failed | unfinished | false alarms |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
keys = []
for r in rows:
    k = (r["scenario"], r["transport"])
    if k not in keys:
        keys.append(k)
for k in keys:
    rs = [r for r in rows if (r["scenario"], r["transport"]) == k]
    ok = [r for r in rs if r["verdict"] == "PASS" and r["awareness_ms"]]
    aw = [int(r["awareness_ms"]) for r in ok]
    paths = sorted(set(r["path"] for r in ok))
    def tot(c):
        v = [int(r[c]) for r in ok if r[c] != ""]
        return str(sum(v)) if v else "-"
    tr3 = 3 * int(ok[0]["t_read_ms"]) if ok else "-"
    if k[0] == "soak":
        aw = []
    print(f"| {k[0]} | {k[1]} | {len(ok)}/{len(rs)} | {','.join(paths)} | "
          f"{statistics.median(aw) if aw else '-'} | {max(aw) if aw else '-'} | {tr3} | "
          f"{tot('cmds_ok')} | {tot('cmds_failed')} | {tot('cmds_unfinished')} | {tot('false_alarms')} |")
if soak > 0:
    print(f"\nThe soak row: {soak} s of traffic between every pair of nodes, no fault "
          "(drill.sh soak); cmds are PUTs.")
PY
cat "$md"
