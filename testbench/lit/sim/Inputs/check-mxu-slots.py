# Checks y of mxu-slots.s: W[k][n] = n, LHS rows j of v2 are all j and of v1
# are k, so a40 (rows 0..7) holds 8jn and a63 (rows 8..15) 28n + 8jn in
# lanes n < 8, zero elsewhere. Standard library only.
import struct
import sys

data = open(sys.argv[1], "rb").read()
assert data[:6] == b"\x93NUMPY", "not a .npy file"
header_len = struct.unpack("<H", data[8:10])[0]
y = struct.unpack("<%df" % (16 * 128), data[10 + header_len:])
bad = 0
for r in range(16):
    j = r % 8
    for n in range(128):
        want = 0.0 if n >= 8 else (8.0 * j * n if r < 8 else 28.0 * n + 8.0 * j * n)
        if y[r * 128 + n] != want:
            print("y[%d][%d] = %r, want %r" % (r, n, y[r * 128 + n], want))
            bad += 1
sys.exit(1 if bad else 0)
