"""Checks a latency-bound step of a tpusim summary against the preset's hop latency.

Usage: step_vs_hops.py SUMMARY PRESET [--min R] [--max R]
Prints the step over ici.latency_cycles and fails unless MIN <= step / hop <= MAX.
"""
import argparse
import json
import math
import re
import sys

p = argparse.ArgumentParser()
p.add_argument("summary")
p.add_argument("preset")
p.add_argument("--min", type=float, default=0.0)
p.add_argument("--max", type=float, default=math.inf)
a = p.parse_args()
hop = json.load(open(a.preset))["ici"]["latency_cycles"]
step = int(re.search(r"step\s+(\d+) cycles", open(a.summary).read()).group(1))
ratio = step / hop
ok = a.min <= ratio <= a.max
print(f"step / hop latency: {ratio:.2f} ({step} / {hop}), wanted {a.min} .. {a.max}: "
      f"{'ok' if ok else 'out of range'}")
sys.exit(0 if ok else 1)
