"""Reads a tpusim report on stdin; fails unless its cycle count (or, with a
second argument, that op's row of the op table) is below argv[1]."""
import re
import sys

text = sys.stdin.read()
bound = int(sys.argv[1])
what = sys.argv[2] if len(sys.argv) > 2 else "cycles"
m = re.search(r"^\s*" + re.escape(what) + r"\s+(\d+)", text, re.M)
if not m:
    sys.exit(f"cycles_below.py: no '{what}' row in the report:\n" + text)
cycles = int(m.group(1))
if cycles >= bound:
    sys.exit(f"cycles_below.py: {what}: {cycles} cycles, expected fewer than {bound}")
print(f"{what}: {cycles} cycles < {bound}")
