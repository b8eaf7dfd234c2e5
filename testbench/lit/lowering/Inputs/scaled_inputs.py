#!/usr/bin/env python3
"""scaled_inputs.py MODULE.hlo OUTDIR SCALE [SEED]: writes seeded uniform [-SCALE, SCALE)
float32 .npy files (standard library only) for every f32 or bf16 entry parameter (bf16 ones
are rounded to nearest even by the tools that read them) and prints one
`--input=NAME=FILE` argument per line for tpusim, NAME being the parameter's op_name (or
its instruction name), as tpuc names input buffers. Random weights of magnitude 1 make a
transformer block's logits so large that bf16 rounding of the MXU inputs flips softmax
weights; realistic magnitudes keep the comparison about the compiler, not about that."""
import os
import random
import re
import struct
import sys

hlo, outdir, scale = sys.argv[1], sys.argv[2], float(sys.argv[3])
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
text = open(hlo).read()
entry = text[text.index("ENTRY"):]
pattern = re.compile(r"%?([\w.\-]+) = (?:f32|bf16)\[([\d,]*)\](?:\{[^}]*\})? parameter\((\d+)\)"
                     r"(?:, metadata=\{op_name=\"((?:[^\"\\]|\\.)*)\")?")
os.makedirs(outdir, exist_ok=True)
for name, dims, number, op_name in pattern.findall(entry):
    shape = [int(d) for d in dims.split(",")] if dims else []
    count = 1
    for d in shape:
        count *= d
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join(
        "%d," % d if len(shape) == 1 else "%d, " % d for d in shape).rstrip(" ")
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    path = os.path.join(outdir, "param%s.npy" % number)
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % count, *(rng.uniform(-scale, scale) for _ in range(count))))
    label = op_name.replace("\\'", "'").replace('\\"', '"') if op_name else name
    print("--input=%s=%s" % (label, path))
