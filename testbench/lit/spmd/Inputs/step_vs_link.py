"""Checks a cycle property of a tpusim summary against the preset's ICI link.

Usage: step_vs_link.py SUMMARY PRESET BYTES [--min R] [--max R]
T = the cycles one link needs for BYTES (link_bytes_per_second / clock_hz per
cycle); prints the step over T and fails unless MIN <= step / T <= MAX.
"""
import math

import step_ratio

a = step_ratio.arguments(("bytes", int))
link = math.ceil(a.bytes / step_ratio.link_bytes_per_cycle(step_ratio.preset(a.preset)))
step_ratio.check("link cycles", step_ratio.step_cycles(a.summary), link, a)
