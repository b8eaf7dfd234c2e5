"""Checks that an async module's step saves cycles against its synchronous form.

Usage: overlap_vs_link.py ASYNC SYNC PRESET BYTES --min-saved R
T = the cycles one link needs for BYTES (link_bytes_per_second / clock_hz
per cycle); prints (sync step - async step) / T and fails below R.
"""
import argparse
import math
import sys

import step_ratio

p = argparse.ArgumentParser()
p.add_argument("async_summary")
p.add_argument("sync_summary")
p.add_argument("preset")
p.add_argument("bytes", type=int)
p.add_argument("--min-saved", type=float, required=True)
a = p.parse_args()
link = math.ceil(a.bytes / step_ratio.link_bytes_per_cycle(step_ratio.preset(a.preset)))
step = step_ratio.step_cycles

saved = (step(a.sync_summary) - step(a.async_summary)) / link
ok = saved >= a.min_saved
print(f"saved / link cycles: {saved:.2f} (sync {step(a.sync_summary)}, async "
      f"{step(a.async_summary)}, T {link}), wanted >= {a.min_saved}: "
      f"{'ok' if ok else 'too little'}")
sys.exit(0 if ok else 1)
