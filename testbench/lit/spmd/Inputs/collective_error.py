"""Prints an SPMD module whose collective the compiler must refuse.

Usage: collective_error.py CASE
Each case is one collective (or async pair) with what is wrong with it; the
module has 4 partitions unless the case says otherwise, x: f32[8,128],
y: f32[8,128], z: f32[6,128], add and multiply reducers.
"""
import sys

CASES = {
    # replica_groups
    "two-groups": "ROOT r = f32[8,128] all-reduce(x), channel_id=1, replica_groups={{0,1},{1,2}}, to_apply=add",
    "no-group": "ROOT r = f32[8,128] all-reduce(x), channel_id=1, replica_groups={{0,1}}, to_apply=add",
    # source_target_pairs
    "pair-of-three": "ROOT r = f32[8,128] collective-permute(x), channel_id=1, source_target_pairs={{0,1,2}}",
    "pair-device": "ROOT r = f32[8,128] collective-permute(x), channel_id=1, source_target_pairs={{0,7}}",
    "source-twice": "ROOT r = f32[8,128] collective-permute(x), channel_id=1, source_target_pairs={{0,1},{0,2}}",
    "target-twice": "ROOT r = f32[8,128] collective-permute(x), channel_id=1, source_target_pairs={{0,1},{2,1}}",
    # dimensions
    "scatter-split": "ROOT r = f32[6,32] reduce-scatter(z), channel_id=1, replica_groups={}, dimensions={0}, to_apply=add",
    "scatter-no-dim": "ROOT r = f32[2,128] reduce-scatter(x), channel_id=1, replica_groups={}, to_apply=add",
    "gather-no-dim": "ROOT r = f32[32,128] all-gather(x), channel_id=1, replica_groups={}",
    "gather-dim": "ROOT r = f32[32,128] all-gather(x), channel_id=1, replica_groups={}, dimensions={5}",
    # all-to-all
    "a2a-tuple-dim": "ROOT r = (f32[8,128], f32[8,128]) all-to-all(x, y), channel_id=1, replica_groups={}, dimensions={0}",
    "a2a-count": "ROOT r = (f32[8,128], f32[8,128]) all-to-all(x, y), channel_id=1, replica_groups={}",
    "a2a-shapes": "ROOT r = (f32[8,128], f32[8,128], f32[8,128], f32[6,128]) all-to-all(x, y, x, z), channel_id=1, replica_groups={}",
    # async pairs
    "start-alone": ("cps = (f32[8,128], f32[8,128], u32[], u32[]) collective-permute-start(x), channel_id=1, "
                    "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}\n  ROOT r = f32[8,128] add(x, y)"),
    "start-used": ("cps = (f32[8,128], f32[8,128], u32[], u32[]) collective-permute-start(x), channel_id=1, "
                   "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}\n"
                   "  d = f32[8,128] collective-permute-done(cps)\n"
                   "  g = f32[8,128] get-tuple-element(cps), index=0\n"
                   "  ROOT r = (f32[8,128], f32[8,128]) tuple(d, g)"),
    # 32 members: the one-shot combine of multiply is refused (more than 16
    # members), and the ring needs the elements to split into 32 chunks.
    "ring-split": "ROOT r = f32[3] all-reduce(w), channel_id=1, replica_groups={}, to_apply=mul",
}

case = sys.argv[1]
partitions = 32 if case == "ring-split" else 4
print(f"HloModule {case.replace('-', '_')}, num_partitions={partitions}\n")
for name, op in (("add", "add"), ("mul", "multiply")):
    print(f"{name} {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] {op}(a, b)\n}}\n")
print("ENTRY main {")
print("  x = f32[8,128] parameter(0)\n  y = f32[8,128] parameter(1)\n  z = f32[6,128] parameter(2)")
print("  w = f32[3] parameter(3)")
print("  " + CASES[case])
print("}")
