#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# LO|FA|MO healing figures (docs/lofamo.md): the drills that undo their fault
# (restart, link-down, sick-link of tests/integration/drill.sh) RUNS times
# over shm and udp: awareness (fault to supervisor event) and healing (restart
# or restore to links UP and an all-healthy picture), median and worst.
# Each round (six drills, about 30 s) takes the shared heavy-run lock for
# itself only.
#   bench/lofamo-heal.sh BUILD [RUNS]
# Writes bench/results/lofamo-heal-DATE.csv (every drill) and lofamo-heal-DATE.md.
# LOFAMO_TRANSPORTS, LOFAMO_SCENS and LOFAMO_NAME (the results' name) change
# what is run; bench/lofamo-dpdk.sh uses them for the DPDK namespace testbed.
set -euo pipefail
build=$(cd "$1" && pwd)
runs=${2:-5}
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
day=$(date -u +%Y-%m-%d)
name=${LOFAMO_NAME:-lofamo-heal}
csv=$top/bench/results/$name-$day.csv
md=$top/bench/results/$name-$day.md
drill=$top/tests/integration/drill.sh
scens=${LOFAMO_SCENS:-restart link-down sick-link}
transports=${LOFAMO_TRANSPORTS:-shm udp}

echo "scenario,transport,awareness_ms,path,heal_ms,links_up_ms,cmds_ok,cmds_failed,cmds_unfinished,false_alarms,verdict" >"$csv"
round() {
	for tr in $transports; do
		for s in $scens; do
			line=$(bash "$drill" "$build" "$s" --transport "$tr" 2>/dev/null | grep "^drill $s over" || true)
			python3 - "$s" "$tr" "$line" >>"$csv" <<'PY'
import re, sys
s, tr, l = sys.argv[1:]
def g(p):
    m = re.search(p, l)
    return m.group(1) if m else ""
ok = "PASS" if l.endswith(": PASS") else "FAIL"
print(",".join([s, tr, g(r"awareness (\d+) ms"), g(r"path (\w+)"), g(r"healed (\d+) ms"),
                g(r"links all UP after (\d+) ms"), g(r"PUTs ok (\d+)"), g(r"failed (\d+)"),
                g(r"unfinished (\d+)"), g(r"false alarms (\d+)"), ok]))
PY
		done
	done
}
export -f round
export drill build csv scens transports
for i in $(seq "$runs"); do
	flock /tmp/softdnp-heavy.lock bash -c round
	echo "lofamo heal bench: round $i of $runs done"
done

python3 - "$csv" "$runs" "$name" >"$md" <<'PY'
import csv, statistics, sys, platform
rows = list(csv.DictReader(open(sys.argv[1])))
print("# LO|FA|MO drills that heal\n" if sys.argv[3] == "lofamo-heal" else
      f"# LO|FA|MO drills ({sys.argv[3]})\n")
print(f"Machine: {platform.node()}, {open('/proc/cpuinfo').read().count('processor')} CPUs, "
      f"load average at the end {open('/proc/loadavg').read().split()[0]}.")
print(f"Each scenario {sys.argv[2]} times per transport on a 2x2x2 torus, T_write 100 ms, "
      "T_read 250 ms, link credit timeout 400 ms; the fault is on the last node "
      "(restart: its dnpd; link-down, sick-link: its X+ link). Over dpdk: the namespace "
      "testbed, link-down takes the victim's X+ veth down, svcnet-cut its service veth.\n")
print("| scenario | transport | runs ok | path | awareness median ms | worst ms | heal median ms | worst ms | links UP median ms | cmds ok | cmds failed | unfinished | false alarms |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
keys = []
for r in rows:
    k = (r["scenario"], r["transport"])
    if k not in keys:
        keys.append(k)
def med(v): return f"{statistics.median(v):.0f}" if v else "-"
def worst(v): return f"{max(v)}" if v else "-"
for k in keys:
    rs = [r for r in rows if (r["scenario"], r["transport"]) == k]
    ok = [r for r in rs if r["verdict"] == "PASS"]
    aw = [int(r["awareness_ms"]) for r in ok]
    he = [int(r["heal_ms"]) for r in ok if r["heal_ms"]]
    up = [int(r["links_up_ms"]) for r in ok if r["links_up_ms"]]
    paths = sorted({r["path"] for r in ok})
    tot = lambda f: sum(int(r[f]) for r in ok if r[f])
    print(f"| {k[0]} | {k[1]} | {len(ok)}/{len(rs)} | {'/'.join(paths)} | {med(aw)} | {worst(aw)} | "
          f"{med(he)} | {worst(he)} | {med(up)} | {tot('cmds_ok')} | {tot('cmds_failed')} | "
          f"{tot('cmds_unfinished')} | {tot('false_alarms')} |")
PY
cat "$md"
