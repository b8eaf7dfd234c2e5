#!/usr/bin/env python3
"""Writes the inputs of a train step (tpu-tracegen --phase=train) as a fresh
optax.adamw state would have them, with the standard library only:
  adamw_init.py TRAIN.hlo OUT_DIR
opt_state.count, step = 0; opt_state.mu / opt_state.nu = zeros (nu >= 0, so no
update is NaN); tokens = 5i mod 13 (repeats, so an embedding gradient accumulates). Parameters keep
tpusim's seeded random data. Prints the --input arguments for tpusim."""
import os
import re
import struct
import sys

PARAM = re.compile(r"%(\S+) = (s32|f32)\[([0-9,]*)\]\S* parameter\((\d+)\).*op_name=\"([^\"]*)\"")


def write(path, code, dims, values):
    descr = "<i4" if code == "i" else "<f4"
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple(dims)!r}, }}"
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<" + code * len(values), *values))


def main(hlo, out):
    entry = open(hlo).read().split("ENTRY", 1)[1]
    vocab = None
    params = []
    for m in PARAM.finditer(entry):
        name, dtype, shape, number, op_name = m.groups()
        dims = [int(d) for d in shape.split(",") if d]
        params.append((name, dtype, dims, op_name))
        if op_name == "params[\\'embed\\']":
            vocab = dims[0]
    args = []
    for name, dtype, dims, op_name in params:
        count = 1
        for d in dims:
            count *= d
        if op_name in ("step", "opt_state.count"):
            values = [0]
        elif op_name.startswith("opt_state.mu") or op_name.startswith("opt_state.nu"):
            values = [0.0] * count
        elif op_name == "tokens":
            values = [(5 * i) % min(13, vocab) for i in range(count)]
        else:
            continue
        path = os.path.join(out, name + ".npy")
        write(path, "i" if dtype == "s32" else "f", dims, values)
        args.append(f"--input {name}={path}")
    print(" ".join(args))


main(sys.argv[1], sys.argv[2])
