# Prints, for an s32 [16, 128] .npy file, the value of rows 0-7 and 8-15 when
# each block is uniform (or "mixed"). Standard library only (lit's python3 may
# not have NumPy).
import struct
import sys

data = open(sys.argv[1], "rb").read()
assert data[:6] == b"\x93NUMPY", "not a .npy file"
header_len = struct.unpack("<H", data[8:10])[0]
values = struct.unpack("<%di" % (16 * 128), data[10 + header_len:10 + header_len + 16 * 128 * 4])
for first in (0, 8):
    block = set(values[first * 128:(first + 8) * 128])
    print("rows %d-%d: %s" % (first, first + 7, block.pop() if len(block) == 1 else "mixed"))
