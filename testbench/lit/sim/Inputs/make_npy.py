#!/usr/bin/env python3
"""Writes a 2-D .npy file with the standard library: make_npy.py DESCR ROWS COLS PATH
(DESCR '<f4' or '<i4'); values are i / (ROWS * COLS) or 0."""
import struct
import sys

descr, rows, cols, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }" % (descr, rows, cols)
header += " " * (117 - len(header)) + "\n"
n = rows * cols
if descr == "<f4":
    body = struct.pack("<%df" % n, *[i / n for i in range(n)])
else:
    body = struct.pack("<%di" % n, *[0] * n)
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + body)
