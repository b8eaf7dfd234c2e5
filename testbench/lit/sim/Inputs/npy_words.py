# Prints the elements of a 1-D .npy file of 2- or 4-byte integers as hex, one
# per line. Standard library only (lit's python3 may not have NumPy).
import ast
import struct
import sys

data = open(sys.argv[1], "rb").read()
assert data[:6] == b"\x93NUMPY", "not a .npy file"
header_len = struct.unpack("<H", data[8:10])[0]
header = ast.literal_eval(data[10:10 + header_len].decode("latin1"))
size = int(header["descr"][2:])
body = data[10 + header_len:]
for i in range(len(body) // size):
    print("0x%0*x" % (2 * size, int.from_bytes(body[i * size:(i + 1) * size], "little")))
