"""What the step checkers share: a tpusim summary's step, the preset's ICI
numbers, and the range check of step / reference with its report line."""
import argparse
import json
import math
import re
import sys


def arguments(*positional, default_min=0.0):
    """SUMMARY PRESET, then `positional` (name, type) pairs, --min, --max."""
    p = argparse.ArgumentParser()
    p.add_argument("summary")
    p.add_argument("preset")
    for name, kind in positional:
        p.add_argument(name, type=kind)
    p.add_argument("--min", type=float, default=default_min)
    p.add_argument("--max", type=float, default=math.inf)
    return p.parse_args()


def preset(path):
    return json.load(open(path))


def link_bytes_per_cycle(chip):
    return chip["ici"]["link_bytes_per_second"] / chip["core"]["clock_hz"]


def step_cycles(summary_path):
    return int(re.search(r"step\s+(\d+) cycles", open(summary_path).read()).group(1))


def check(what, step, reference, a, reference_text=None):
    """Prints step / reference and exits 1 unless a.min <= it <= a.max."""
    ratio = step / reference
    ok = a.min <= ratio <= a.max
    shown = reference_text if reference_text is not None else f"{reference}"
    print(f"step / {what}: {ratio:.2f} ({step} / {shown}), wanted {a.min} .. {a.max}: "
          f"{'ok' if ok else 'out of range'}")
    sys.exit(0 if ok else 1)
