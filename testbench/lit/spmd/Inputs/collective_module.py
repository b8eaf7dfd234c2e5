"""Prints an SPMD module with one collective over every device.

Usage: collective_module.py COLLECTIVE TYPE OP DEVICES ELEMENTS [GROUPS]
COLLECTIVE: reduce-scatter or all-reduce; TYPE: an HLO element type (f32,
bf16, s32); OP: the reducer's opcode (add, maximum, ...); ELEMENTS: of the
operand (reduce-scatter: scattered along dimension 0 of [ELEMENTS / 128, 128]
over the members of a group); GROUPS: replica_groups (default {}: one group
of every device), e.g. "{0,1,2,3},{4,5,6,7}".
"""
import sys

coll, ty, op, n, elements = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
groups = sys.argv[6] if len(sys.argv) > 6 else ""
members = len(groups.split("}")[0].split(",")) if groups else n
rows = elements // 128
print(f"HloModule {coll.replace('-', '_')}_{ty}_{op}_{n}, num_partitions={n}")
print(f"red {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  ROOT r = {ty}[] {op}(a, b)\n}}")
print("ENTRY main {")
print(f"  x = {ty}[{rows},128] parameter(0)")
if coll == "reduce-scatter":
    print(f"  ROOT r = {ty}[{rows // members},128] reduce-scatter(x), channel_id=1, "
          f"replica_groups={{{groups}}}, dimensions={{0}}, to_apply=red")
else:
    print(f"  ROOT r = {ty}[{rows},128] all-reduce(x), channel_id=1, replica_groups={{{groups}}}, "
          "to_apply=red")
print("}")
