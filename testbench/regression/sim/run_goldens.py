#!/usr/bin/env python3
"""Cycle goldens: runs every regression program on every chip preset with
tpusim (timing mode) and compares cycles, bundles, stalls and status with
testbench/regression/sim/cycles.golden.json. The golden file is written only by
scripts/update_goldens.sh (--update), never by hand; a change in cycles is a
visible diff in review.

Programs: isa/samples/*.s and testbench/regression/sim/programs/*.s.
Usage: run_goldens.py --tpusim PATH (--check | --update)
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
GOLDEN = os.path.join(HERE, "cycles.golden.json")
PRESETS = ["v4", "v5e", "v5p", "v6e", "tiny8", "tiny16"]


def programs():
    files = sorted(glob.glob(os.path.join(ROOT, "isa", "samples", "*.s")))
    files += sorted(glob.glob(os.path.join(HERE, "programs", "*.s")))
    return files


def measure(tpusim, program, preset):
    with tempfile.TemporaryDirectory() as tmp:
        stats_path = os.path.join(tmp, "stats.json")
        proc = subprocess.run(
            [tpusim, program, "--chip", preset, "--mode", "timing", "--quiet",
             "--max-cycles", "50000000", "--stats", stats_path],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not os.path.exists(stats_path):
            return {"status": "error", "message": proc.stderr.strip().splitlines()[:1]}
        stats = json.load(open(stats_path))
    fault = stats["fault"]
    entry = {"status": "fault: " + fault["kind"] if fault else "halted",
             "cycles": stats["total_cycles"]}
    for c in stats["cores"]:
        key = "core%d" % c["core"]
        entry[key + ".bundles"] = c["bundles_issued"]
        entry[key + ".stalls"] = {k: v for k, v in c["stalls"].items() if v}
    return entry


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpusim", required=True)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--update", action="store_true")
    args = ap.parse_args()
    current = {}
    for program in programs():
        name = os.path.relpath(program, ROOT)
        current[name] = {p: measure(args.tpusim, program, p) for p in PRESETS}
    if args.update:
        with open(GOLDEN, "w") as f:
            json.dump(current, f, indent=1, sort_keys=True)
            f.write("\n")
        print("wrote %s (%d programs x %d presets)" % (GOLDEN, len(current), len(PRESETS)))
        return 0
    if not os.path.exists(GOLDEN):
        print("no golden file: run scripts/update_goldens.sh")
        return 1
    golden = json.load(open(GOLDEN))
    failures = 0
    for name in sorted(set(golden) | set(current)):
        for preset in PRESETS:
            want = golden.get(name, {}).get(preset)
            got = current.get(name, {}).get(preset)
            if want != got:
                failures += 1
                print("MISMATCH %s on %s:\n  golden:  %s\n  current: %s" % (
                    name, preset, json.dumps(want, sort_keys=True), json.dumps(got, sort_keys=True)))
    if failures:
        print("%d mismatches; if the change is intended, run scripts/update_goldens.sh and "
              "review the diff" % failures)
        return 1
    print("cycle goldens: %d programs x %d presets match" % (len(current), len(PRESETS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
