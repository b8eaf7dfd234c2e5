"""Writes or reads small .npy files with the standard library only (lit's
python3 may not have NumPy).
  npy_fill.py write DESCR ROWS COLS VALUE PATH  a [ROWS, COLS] array of VALUE
                                                (DESCR '<f4' or '<i4')
  npy_fill.py read PATH...                      per file, its name and the
                                                sorted distinct values (f32, s32)
"""
import os
import struct
import sys

if sys.argv[1] == "write":
    descr, rows, cols, value, path = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }" % (descr, rows, cols)
    header += " " * (117 - len(header)) + "\n"
    n = rows * cols
    if descr == "<f4":
        body = struct.pack("<%df" % n, *[float(value)] * n)
    else:
        body = struct.pack("<%di" % n, *[int(value)] * n)
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + body)
else:
    for path in sys.argv[2:]:
        data = open(path, "rb").read()
        assert data[:6] == b"\x93NUMPY", "not a .npy file"
        header_len = struct.unpack("<H", data[8:10])[0]
        header = data[10:10 + header_len].decode()
        code = {"'<f4'": "f", "'<i4'": "i"}[header.split("'descr': ")[1].split(",")[0].strip()]
        body = data[10 + header_len:]
        values = struct.unpack("<%d%s" % (len(body) // 4, code), body)
        print("%s: %s" % (os.path.basename(path), " ".join(str(v) for v in sorted(set(values)))))
