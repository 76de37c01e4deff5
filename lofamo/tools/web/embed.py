# SPDX-License-Identifier: MIT
"""Build step: a file's bytes as a C array (the fault map page inside dnp-supervisor)."""
import sys

src, dst = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
with open(dst, "w") as f:
    f.write("/* Generated from %s by embed.py: do not edit. */\n" % src.split("/")[-1])
    f.write("#include <stddef.h>\n\n")
    f.write("const char dnp_web_page[] = {\n")
    for i in range(0, len(data), 16):
        f.write("\t" + ", ".join("0x%02x" % b for b in data[i:i + 16]) + ",\n")
    f.write("\t0x00\n};\n")
    f.write("const size_t dnp_web_page_len = %d;\n" % len(data))
