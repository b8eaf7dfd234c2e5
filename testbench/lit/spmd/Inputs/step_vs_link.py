"""Checks a cycle property of a tpusim summary against the preset's ICI link.

Usage: step_vs_link.py SUMMARY PRESET BYTES [--min R] [--max R]
T = the cycles one link needs for BYTES (link_bytes_per_second / clock_hz per
cycle); prints the step over T and fails unless MIN <= step / T <= MAX.
"""
import argparse
import json
import math
import re
import sys

p = argparse.ArgumentParser()
p.add_argument("summary")
p.add_argument("preset")
p.add_argument("bytes", type=int)
p.add_argument("--min", type=float, default=0.0)
p.add_argument("--max", type=float, default=math.inf)
a = p.parse_args()
preset = json.load(open(a.preset))
per_cycle = preset["ici"]["link_bytes_per_second"] / preset["core"]["clock_hz"]
link = math.ceil(a.bytes / per_cycle)
step = int(re.search(r"step\s+(\d+) cycles", open(a.summary).read()).group(1))
ratio = step / link
ok = a.min <= ratio <= a.max
print(f"step / link cycles: {ratio:.2f} ({step} / {link}), wanted {a.min} .. {a.max}: "
      f"{'ok' if ok else 'out of range'}")
sys.exit(0 if ok else 1)
