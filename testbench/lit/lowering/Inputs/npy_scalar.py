#!/usr/bin/env python3
"""Writes a scalar int32 .npy file (standard library only): npy_scalar.py OUT.npy VALUE."""
import struct
import sys

out, value = sys.argv[1], int(sys.argv[2])
header = "{'descr': '<i4', 'fortran_order': False, 'shape': (), }"
header += " " * (63 - (len(header) + 10) % 64) + "\n"
with open(out, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<i", value))
