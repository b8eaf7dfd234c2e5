# rel_rms.py SIM.npy REF.npy: prints the rms of (sim - ref) over the rms of ref
# (little-endian f32 .npy files; standard library only).
import ast
import math
import struct
import sys


def load_f32(path):
    data = open(path, "rb").read()
    header_len = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10 : 10 + header_len].decode("latin1"))
    assert header["descr"] == "<f4", header
    body = data[10 + header_len :]
    return struct.unpack("<%df" % (len(body) // 4), body)


sim, ref = load_f32(sys.argv[1]), load_f32(sys.argv[2])
err = math.sqrt(sum((s - r) ** 2 for s, r in zip(sim, ref)) / len(ref))
scale = math.sqrt(sum(r * r for r in ref) / len(ref))
print("rel_rms_error %.3e" % (err / scale))
