"""Reads tpu-objdump output of a grid reduce-scatter with paced links and
prints the longest run of back-to-back waits on link flags (the flags its
dma.remote sends count on) before its last send.

Usage: tpu-objdump PROG | link_wait_runs.py
"""
import re
import sys

lines = sys.stdin.read().splitlines()
sends = [i for i, l in enumerate(lines) if "dma.remote" in l]
links = {re.search(r"dma\.remote s\d+, s\d+, (f\d+),", lines[i]).group(1) for i in sends}
longest = run = 0
for line in lines[: sends[-1]]:
    m = re.search(r"sync\.wait (f\d+),", line)
    if m and m.group(1) in links:
        run += 1
        longest = max(longest, run)
    elif re.match(r"^\s+[a-z]", line):  # any other instruction
        run = 0
print(f"link flags: {len(links)}")
print(f"longest run of link waits: {longest}")
