#!/usr/bin/env python3
"""Runs a program in functional and in timing mode for each seed and compares the
cycles (issue 19): equal, unless timing mode's summary says it is not exact (a
'not exact' line: DMAs or branches that depend on data timing mode does not move).
Usage: same_cycles.py PROGRAM CHIP SEED..."""
import re
import subprocess
import sys

program, chip, seeds = sys.argv[1], sys.argv[2], sys.argv[3:]


def run(mode, seed):
    out = subprocess.run(["tpusim", program, "--chip", chip, "--mode", mode, "--seed", seed,
                          "--quiet", "--top-ops", "1"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("%s --mode %s --seed %s failed:\n%s" % (program, mode, seed, out.stderr))
    cycles = int(re.search(r"^  cycles +(\d+)", out.stdout, re.M).group(1))
    return cycles, "not exact" in out.stdout


for seed in seeds:
    functional, _ = run("functional", seed)
    timing, flagged = run("timing", seed)
    if functional == timing:
        print("seed %s: equal (%d cycles)" % (seed, functional))
    elif flagged:
        print("seed %s: differ, and timing mode says it is not exact (%d vs %d cycles)"
              % (seed, functional, timing))
    else:
        sys.exit("seed %s: functional %d cycles, timing %d, and timing mode claims to be exact"
                 % (seed, functional, timing))
print("ok")
