"""Checks a latency-bound step of a tpusim summary against the preset's hop latency.

Usage: step_vs_hops.py SUMMARY PRESET [--min R] [--max R]
Prints the step over ici.latency_cycles and fails unless MIN <= step / hop <= MAX.
"""
import step_ratio

a = step_ratio.arguments()
hop = step_ratio.preset(a.preset)["ici"]["latency_cycles"]
step_ratio.check("hop latency", step_ratio.step_cycles(a.summary), hop, a)
