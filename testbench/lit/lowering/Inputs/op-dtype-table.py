#!/usr/bin/env python3
"""op-dtype-table.py OUTDIR: writes one HLO module per element type, OUTDIR/<type>.hlo,
whose outputs are every element-wise op on that type, each applied once to the
entry parameters (single-op kernels), and prints the (output, op, type) table.
tpusim --check --strict then compares every output with the reference
evaluator. Integer operands are spread over their whole range (a multiply
by 0x10000001, or 37 for s8, that wraps) so signedness and overflow matter; f16 operands also
go through converts that overflow and underflow f16."""
import os
import sys

SHAPE = "[8,128]"

FLOAT_UNARY = ["abs", "negate", "sign", "floor", "ceil", "round-nearest-even",
               "round-nearest-afz", "exponential", "exponential-minus-one", "log",
               "log-plus-one", "sqrt", "rsqrt", "cbrt", "tanh", "logistic", "sine",
               "cosine", "tan", "erf"]
FLOAT_BINARY = ["add", "subtract", "multiply", "divide", "remainder", "power",
                "maximum", "minimum", "atan2"]
INT_UNARY = ["negate", "abs", "sign", "not", "popcnt", "count-leading-zeros"]
INT_BINARY = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
              "and", "or", "xor", "shift-left", "shift-right-logical",
              "shift-right-arithmetic"]
# 64-bit integers (int64-to-pairs): every integer op (power in op-s64-divide.hlo).
WIDE_UNARY = INT_UNARY
WIDE_BINARY = INT_BINARY
SPREAD = {"s8": 37, "u8": 37, "s16": 4097, "u16": 4097,  # 0x1001
          "s32": 268435457, "u32": 268435457,  # 0x10000001
          "s64": 1152921508901814273, "u64": 1152921508901814273}  # 0x1000000010000001
NARROW = ("s8", "u8", "s16", "u16")
DIRECTIONS = ["EQ", "NE", "LT", "LE", "GT", "GE"]


def module(t):
    lines = [f"HloModule ops_{t}", "", "ENTRY main {"]
    outs = []  # (name, description)

    def add(name, text, desc):
        lines.append(f"  {name} = {text}")
        outs.append((name, desc))

    ty = f"{t}{SHAPE}"
    lines.append(f"  p0 = {ty} parameter(0)")
    lines.append(f"  p1 = {ty} parameter(1)")
    if t in SPREAD:
        wide = t in ("s64", "u64")
        unary, binary = (WIDE_UNARY, WIDE_BINARY) if wide else (INT_UNARY, INT_BINARY)
        # Spread the small random integers over the whole range.
        lines.append(f"  k = {t}[] constant({SPREAD[t]})")
        lines.append(f"  kb = {ty} broadcast(k), dimensions={{}}")
        lines.append(f"  a = {ty} multiply(p0, kb)")
        lines.append(f"  b = {ty} add(p1, p0)")
        for op in unary:
            add(f"u_{op.replace('-', '_')}", f"{ty} {op}(a)", f"{op} {t}")
        for op in binary:
            rhs = "p1" if op.startswith("shift") else "b"
            add(f"b_{op.replace('-', '_')}", f"{ty} {op}(a, {rhs})", f"{op} {t}")
        if wide:
            add("b_divide_big", f"{ty} divide(a, kb)", f"divide {t} (by the spread)")
            add("b_remainder_big", f"{ty} remainder(a, kb)", f"remainder {t} (by the spread)")
            # Shift amounts around the word boundary: p1 + 30 covers 22..45 (s64) or 30..45.
            lines.append(f"  k30 = {t}[] constant(30)")
            lines.append(f"  k30b = {ty} broadcast(k30), dimensions={{}}")
            lines.append(f"  amt = {ty} add(p1, k30b)")
            for op in ("shift-left", "shift-right-logical", "shift-right-arithmetic"):
                add(f"w_{op.replace('-', '_')}", f"{ty} {op}(a, amt)", f"{op} {t} (near 32)")
        else:
            add("b_power", f"{ty} power(p0, p1)", f"power {t}")
            add("b_divide_small", f"{ty} divide(p0, p1)", f"divide {t} (small)")
        add("t_clamp", f"{ty} clamp(p1, a, b)", f"clamp {t}")
        lines.append(f"  pr = pred{SHAPE} compare(p0, p1), direction=LT")
        add("t_select", f"{ty} select(pr, a, b)", f"select {t}")
        for d in DIRECTIONS:
            add(f"c_{d.lower()}", f"pred{SHAPE} compare(a, b), direction={d}", f"compare {d} {t}")
        add("cv_f32", f"f32{SHAPE} convert(a)", f"convert {t} -> f32")
        add("cv_f16", f"f16{SHAPE} convert(p0)", f"convert {t} -> f16")
        add("cv_bf16", f"bf16{SHAPE} convert(a)", f"convert {t} -> bf16")
        for other in ("s32", "u32", "s64", "u64") + NARROW:
            if other != t:
                add(f"cv_{other}", f"{other}{SHAPE} convert(a)", f"convert {t} -> {other}")
        lines.append(f"  f = f32{SHAPE} convert(a)")
        add("cv_from_f32", f"{ty} convert(f)", f"convert f32 -> {t}")
        add("cv_pred", f"pred{SHAPE} convert(p0)", f"convert {t} -> pred")
    else:
        for op in FLOAT_UNARY:
            add(f"u_{op.replace('-', '_')}", f"{ty} {op}(p0)", f"{op} {t}")
        for op in FLOAT_BINARY:
            add(f"b_{op}", f"{ty} {op}(p0, p1)", f"{op} {t}")
        lines.append(f"  two = {t}[] constant(2)")
        lines.append(f"  twob = {ty} broadcast(two), dimensions={{}}")
        add("b_power_int", f"{ty} power(p0, twob)", f"power {t} (integer exponent)")
        add("t_clamp", f"{ty} clamp(p1, p0, twob)", f"clamp {t}")
        lines.append(f"  pr = pred{SHAPE} compare(p0, p1), direction=LT")
        add("t_select", f"{ty} select(pr, p0, p1)", f"select {t}")
        for d in DIRECTIONS:
            add(f"c_{d.lower()}", f"pred{SHAPE} compare(p0, p1), direction={d}", f"compare {d} {t}")
        add("u_is_finite", f"pred{SHAPE} is-finite(p0)", f"is-finite {t}")
        for to in ("f32", "bf16", "f16", "s32", "u32", "s64", "u64") + NARROW:
            if to != t:
                add(f"cv_{to}", f"{to}{SHAPE} convert(p0)", f"convert {t} -> {to}")
        if t == "f32":
            # f32 -> f16 that overflows to inf and underflows into subnormals.
            for name, scale in (("big", "70000"), ("tiny", "0.0001")):
                lines.append(f"  s_{name} = f32[] constant({scale})")
                lines.append(f"  sb_{name} = {ty} broadcast(s_{name}), dimensions={{}}")
                lines.append(f"  x_{name} = {ty} multiply(p0, sb_{name})")
                add(f"cv_f16_{name}", f"f16{SHAPE} convert(x_{name})", f"convert f32 -> f16 ({name})")
            # f32 -> narrow integers saturate to their range.
            for to in NARROW:
                add(f"cv_{to}_big", f"{to}{SHAPE} convert(x_big)", f"convert f32 -> {to} (big)")
    types = ", ".join(text.split(" ")[0] for text in
                      [l.split(" = ", 1)[1] for l in lines if l.split(" = ")[0].strip() in
                       {n for n, _ in outs}])
    lines.append(f"  ROOT out = ({types}) tuple({', '.join(n for n, _ in outs)})")
    lines.append("}")
    return "\n".join(lines) + "\n", outs


def main():
    outdir = sys.argv[1]
    for t in ("f32", "bf16", "f16", "s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64"):
        text, outs = module(t)
        with open(os.path.join(outdir, f"{t}.hlo"), "w") as f:
            f.write(text)
        for i, (_, desc) in enumerate(outs):
            print(f"{t} out.{i}: {desc}")


if __name__ == "__main__":
    main()
