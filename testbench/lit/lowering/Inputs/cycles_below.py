"""Reads a tpusim report on stdin; fails unless its cycle count is below argv[1]."""
import re
import sys

text = sys.stdin.read()
m = re.search(r"^\s*cycles\s+(\d+)", text, re.M)
if not m:
    sys.exit("cycles_below.py: no cycle count in the report:\n" + text)
cycles, bound = int(m.group(1)), int(sys.argv[1])
if cycles >= bound:
    sys.exit(f"cycles_below.py: {cycles} cycles, expected fewer than {bound}")
print(f"{cycles} cycles < {bound}")
