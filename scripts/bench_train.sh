#!/bin/bash
# Training-step benchmark (issue 18): a whole train step (tpu-tracegen --phase=train: forward,
# cross-entropy, backward, AdamW) compiled by tpuc and simulated in timing mode with the profiler.
#
#   scripts/bench_train.sh [--build DIR] [--out DIR] [--chip C ...] [TRACE.hlo]
#
# TRACE defaults to traces/llama_tiny_train.hlo (the workload: d_model 1024, 8 layers, batch 256,
# seq 256), chips to v6e and v5e. Per chip it prints: tpuc compile seconds, simulated step time,
# tokens per second, MFU, the split of the step between forward (op_name scope jvp(loss_fn)),
# backward (transpose(jvp(loss_fn))) and optimizer (adamw), the peak HBM footprint (buffer
# assignment: the heap's high-water mark, from tpuc --print-stats), the host seconds of tpuc and tpusim;
# then the top ops of the profile. Model FLOPs (what MFU counts, PaLM's definition) =
# tokens x (6 x parameters + 12 x layers x d_model x seq): parameters = every params[...] input of
# the module, tokens = the tokens input's elements; peak = the preset's MXU FLOP/s (bf16).
# Profiles are kept in --out (default bench-train-out/). Numbers go to docs/performance.md by hand.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
out=bench-train-out
chips=()
trace="$root/traces/llama_tiny_train.hlo"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --chip) chips+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "bench_train.sh: unknown option $1" >&2; exit 1 ;;
    *) trace=$1; shift ;;
  esac
done
[ ${#chips[@]} -gt 0 ] || chips=(v6e v5e)
[ -f "$trace" ] || { echo "bench_train.sh: no trace $trace" >&2; exit 1; }
for tool in tpuc tpusim; do
  [ -x "$build/bin/$tool" ] || { echo "bench_train.sh: $build/bin/$tool is missing (build it, or pass --build DIR)" >&2; exit 1; }
done
mkdir -p "$out"
name=$(basename "$trace" .hlo)
now() { date +%s.%N; }

for chip in "${chips[@]}"; do
  prog="$out/$name.$chip.tpuprog"
  rm -f "$out/$name.$chip.host.txt" "$out/$name.$chip.error.txt"
  t0=$(now)
  if ! "$build/bin/tpuc" "$trace" -o "$prog" --chip "$chip" --print-stats > "$out/$name.$chip.tpuc.txt" \
       2> "$out/$name.$chip.error.txt"; then
    # e.g. a step that does not fit the preset's HBM: tpuc names the largest buffers.
    cat "$out/$name.$chip.error.txt" >&2
    continue
  fi
  t1=$(now)
  rm -rf "$out/$name.$chip.profile"
  "$build/bin/tpusim" "$prog" --chip "$chip" --mode timing --quiet --top-ops 30 \
    --profile "$out/$name.$chip.profile" > "$out/$name.$chip.summary.txt"
  t2=$(now)
  python3 -c "print($t1 - $t0, $t2 - $t1)" > "$out/$name.$chip.host.txt"
done

python3 - "$trace" "$out" "$name" "${chips[@]}" <<'EOF'
import json, re, sys
trace, out, name, chips = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]

# The model from the entry parameters (op_name metadata names them as JAX does).
entry = open(trace).read().split("ENTRY", 1)[1]
param = re.compile(r"= (\w+)\[([0-9,]*)\]\S* parameter\(\d+\).*?op_name=\"([^\"]*)\"")
params = 0
layers = set()
d_model = seq = tokens = 0
for m in param.finditer(entry):
    dims = [int(d) for d in m.group(2).split(",") if d]
    n = 1
    for d in dims:
        n *= d
    op_name = m.group(3)
    if op_name.startswith("params["):
        params += n
        lm = re.search(r"\['layers'\]\[(\d+)\]", op_name.replace("\\'", "'"))
        if lm:
            layers.add(int(lm.group(1)))
        if op_name.replace("\\'", "'") == "params['embed']":
            d_model = dims[1]
    elif op_name == "tokens":
        tokens, seq = n, dims[-1]
model_flops = tokens * (6 * params + 12 * len(layers) * d_model * seq)
print(f"{name}: {params / 1e6:.1f} M parameters, {len(layers)} layers, d_model {d_model}, "
      f"{tokens} tokens per step (seq {seq}); model FLOPs per step {model_flops:.4g}")

def scope(op_name):
    if "transpose(jvp(" in op_name:
        return "backward"
    if "jvp(" in op_name:
        return "forward"
    if "/adamw" in op_name or op_name.startswith("adamw"):
        return "optimizer"
    return "other"

rows = []
# The heap's high-water mark from tpuc --print-stats ("HBM: peak N bytes ...").
def heap_peak(chip):
    m = re.search(r"^HBM: peak (\d+) bytes", open(f"{out}/{name}.{chip}.tpuc.txt").read(), re.M)
    return int(m.group(1)) if m else 0

failed = []
for chip in chips:
    try:
        host = open(f"{out}/{name}.{chip}.host.txt").read()
    except FileNotFoundError:
        err = open(f"{out}/{name}.{chip}.error.txt").read().splitlines()
        failed.append((chip, err[0] if err else "tpuc failed"))
        continue
    p = json.load(open(f"{out}/{name}.{chip}.profile/profile.json"))
    ov, peaks = p["overview"], p["peaks"]
    compile_s, sim_s = (float(x) for x in host.split())
    step = ov["step_seconds"]
    split = {"forward": 0, "backward": 0, "optimizer": 0, "other": 0}
    total = 0
    for op in p["ops"]:
        split[scope(op["op_name"])] += op["cycles"]
        total += op["cycles"]
    pct = {k: 100.0 * v / max(1, ov["step_cycles"]) for k, v in split.items()}
    rows.append((chip, step, tokens / step, 100.0 * model_flops / step / peaks["mxu_flops_per_second"],
                 pct, heap_peak(chip), compile_s, sim_s))
    top = sorted(p["ops"], key=lambda o: -o["cycles"])[:12]
    print(f"\n{chip}: top ops ({ov['step_cycles']} cycles in the step)")
    print(f"  {'op':<34} {'scope':<9} {'% step':>7} {'TFLOP/s':>8} {'GB/s':>7}  op_name")
    for o in top:
        secs = o["cycles"] / peaks["clock_hz"]
        tf = o.get("flops", 0) / secs / 1e12 if secs else 0
        gb = o.get("hbm_bytes", 0) / secs / 1e9 if secs else 0
        short = re.sub(r"^(jit\([^)]*\)/)+", "", o["op_name"])[:70]
        print(f"  {o['name'][:34]:<34} {scope(o['op_name']):<9} {100.0 * o['cycles'] / ov['step_cycles']:7.2f} "
              f"{tf:8.1f} {gb:7.1f}  {short}")

print()
print(f"{'chip':<5} {'step ms':>9} {'tokens/s':>10} {'MFU %':>6} {'fwd %':>6} {'bwd %':>6} {'opt %':>6} "
      f"{'other %':>7} {'HBM peak GiB':>12} {'tpuc s':>7} {'tpusim s':>8}")
for chip, step, tps, mfu, pct, heap, cs, ss in rows:
    print(f"{chip:<5} {step * 1e3:9.2f} {tps:10.4g} {mfu:6.1f} {pct['forward']:6.1f} {pct['backward']:6.1f} "
          f"{pct['optimizer']:6.1f} {pct['other']:7.1f} {heap / 2**30:12.3f} {cs:7.1f} {ss:8.1f}")
for chip, err in failed:
    print(f"{chip:<5} {err}")
EOF
