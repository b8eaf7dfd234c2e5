#!/usr/bin/env python3
"""Writes or prints a .npy array with the standard library only.
  npy_array.py write OUT.npy DESCR SHAPE V0 V1 ...   DESCR '<f2', '<u4', '<i8', ...; SHAPE '2,3'
  npy_array.py print IN.npy                          'DESCR SHAPE: V0 V1 ...'
Values are given and printed as Python numbers (f2 through struct's 'e')."""
import ast
import struct
import sys

CODES = {"f2": "e", "f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q",
         "u1": "B", "u2": "H", "u4": "I", "u8": "Q", "b1": "?"}


def write(out, descr, shape, values):
    code = CODES[descr[1:]]
    dims = tuple(int(d) for d in shape.split(",") if d)
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims!r}, }}"
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    conv = float if code in "efd" else int
    with open(out, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<" + code * len(values), *[conv(v) for v in values]))


def show(path):
    data = open(path, "rb").read()
    n = struct.unpack("<H", data[8:10])[0]
    h = ast.literal_eval(data[10:10 + n].decode())
    code = CODES[h["descr"][1:]]
    body = data[10 + n:]
    count = len(body) // struct.calcsize(code)
    vals = struct.unpack("<" + code * count, body)
    shape = ",".join(str(d) for d in h["shape"])
    print(f"{h['descr']} [{shape}]: " + " ".join(repr(v) for v in vals))


if sys.argv[1] == "write":
    write(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
else:
    show(sys.argv[2])
