#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The house rules on size (docs/architecture.md, "Size"): no C file over 1,500
lines, no function over 120 lines (from its opening brace to its closing one).
Kernel style puts a function's braces alone at column 0, which is what this
counts by. Test programs (tests/) may hold longer tables and cases: their
files are exempt from the file limit, not from the function limit.
usage: check-size.py SOURCE_DIR   (exit 0: within the rules; 1: names each breach)"""
import os
import subprocess
import sys

MAX_FILE, MAX_FUNC = 1500, int(os.environ.get("DNP_MAX_FUNC", "120"))
top = sys.argv[1]
files = subprocess.run(["git", "-C", top, "ls-files", "*.c", "*.h"], capture_output=True,
                       text=True, check=True).stdout.split()
bad = []
for f in files:
    path = os.path.join(top, f)
    if not os.path.exists(path):
        continue
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = fh.read().split("\n")
    if len(lines) - 1 > MAX_FILE and not f.startswith("tests/"):
        bad.append("%s: %d lines (limit %d)" % (f, len(lines) - 1, MAX_FILE))
    start = None
    for i, ln in enumerate(lines):
        if ln == "{" and i > 0 and not lines[i - 1].rstrip().endswith(("=", "\\")):
            start = i
        elif ln.startswith("}") and start is not None:
            n = i - start + 1
            if n > MAX_FUNC:
                j = start - 1
                while j > 0 and lines[j].startswith(("\t", " ")):
                    j -= 1  # a signature over several lines: its first
                head = lines[j].split("(")[0].split()
                name = head[-1] if "(" in lines[j] and head else "?"
                bad.append("%s:%d: function %s is %d lines (limit %d)" %
                           (f, start, name.lstrip("*"), n, MAX_FUNC))
            start = None
for b in bad:
    print(b)
print("%d C files checked: %s" % (len(files), "%d over a limit" % len(bad) if bad else "all within"))
sys.exit(1 if bad else 0)
