# Writes an HLO module whose entry is one element-wise chain of N ops (issue 19:
# compile time must stay near-linear in N). Usage: elementwise_chain.py N
import sys
n=int(sys.argv[1])
ops=["add","multiply","subtract","maximum"]
print("HloModule chain_%d\n\nENTRY main {\n  x = f32[8,128] parameter(0)\n  y = f32[8,128] parameter(1)" % n)
prev="x"
for i in range(n):
    name="v%d"%i
    root="ROOT " if i==n-1 else ""
    print("  %s%s = f32[8,128] %s(%s, y)" % (root,name,ops[i%4],prev))
    prev=name
print("}")
