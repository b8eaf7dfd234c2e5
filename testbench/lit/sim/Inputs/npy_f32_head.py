# Prints the first N (default 4) elements of a float32 .npy file, one per
# line. Standard library only (lit's python3 may not have NumPy).
import struct
import sys

data = open(sys.argv[1], "rb").read()
assert data[:6] == b"\x93NUMPY", "not a .npy file"
header_len = struct.unpack("<H", data[8:10])[0]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 4
for v in struct.unpack("<%df" % n, data[10 + header_len:10 + header_len + 4 * n]):
    print(repr(v))
