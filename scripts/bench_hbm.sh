#!/usr/bin/env bash
# HBM model benchmark: achieved bandwidth against each preset's peak, and how
# fast the model simulates (HBM clock cycles per host CPU second), with
# tpusim-hbm-bench on every preset. Writes the "## HBM model" section of
# docs/performance.md (other sections are left as they are) and prints it.
#
#   scripts/bench_hbm.sh [--build-dir DIR] [--bytes N] [--no-doc] [PRESETS...]
#
# Defaults: build/ (configured if missing), 64 MiB per streaming pattern,
# presets v4 v5e v5p v6e.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="$src/build"
bytes=$((64 << 20))
write_doc=1
presets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --bytes) bytes="$2"; shift 2 ;;
    --no-doc) write_doc=0; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "bench_hbm.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) presets+=("$1"); shift ;;
  esac
done
[[ ${#presets[@]} -gt 0 ]] || presets=(v4 v5e v5p v6e)

if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$src" -B "$build" -G Ninja > "$build.configure.log" 2>&1 ||
    { echo "configure failed: see $build.configure.log" >&2; exit 1; }
fi
ninja -C "$build" -j2 tpusim-hbm-bench > /dev/null
bench="$build/bin/tpusim-hbm-bench"

rows=""
for p in "${presets[@]}"; do
  echo "== $p" >&2
  rows+="$("$bench" --chip "$p" --bytes "$bytes" --markdown)"$'\n'
done

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || echo unknown)
section=$(cat <<EOT
## HBM model

Measured by \`scripts/bench_hbm.sh\` ($(date -u +%Y-%m-%d), $cpu, one thread, Release-like
RelWithDebInfo build; host time is process CPU time, so other jobs on the machine do not
inflate it). Tool: \`tpusim-hbm-bench\` (sim/dma/tools). Bandwidth is bytes moved over
the core cycles from the first request to the last completion, against the preset's peak
(\`channels x pseudo_channels x bus_bytes_per_clock x hbm.clock_hz\`); every run includes
the preset's refresh (per-bank).

Patterns: **stream-read / stream-write**: sequential \`dma.request_bytes\` requests, with
\`dma.max_outstanding_requests\` in flight, straight into the HBM model. **conflict**: one
burst per request, all to bank 0 of pseudo-channel 0, a new row each time (a lower bound:
tRAS + tRP per burst). **dma-stream**: HBM to VMEM descriptors of 1 MiB on one queue of
core 0, through the DMA engine (descriptor issue latency, outstanding limit, VMEM port).
**dma-stream-all-queues**: the same round-robin over every queue, i.e. several streams
1 MiB apart: without a bank hash they meet in the same banks (the row-hit rate and
bandwidth drop); the real-chip presets hash bank bits with row bits (\`hbm.address_hash\`
"xor_row_bank"), so they spread over banks.

| preset | pattern | MiB | GB/s | % of peak | row hits | refreshes | HBM cycles | CPU s | HBM cycles / CPU s |
|---|---|---|---|---|---|---|---|---|---|
${rows%$'\n'}

Simulation speed: the model spends its time per burst (scheduling each 32-byte column
command), so a chip streaming at full bandwidth costs the most per HBM cycle; idle
stretches cost nothing (pseudo-channels without work are skipped and their refreshes are
caught up in closed form), and the conflict pattern, which keeps one pseudo-channel busy,
simulates far more HBM cycles per second.
EOT
)

echo "$section"
if [[ $write_doc == 1 ]]; then
  SECTION="$section" python3 - "$src/docs/performance.md" <<'PY'
import os, re, sys
path = sys.argv[1]
section = os.environ["SECTION"].rstrip("\n") + "\n"
text = open(path).read() if os.path.exists(path) else "# Performance\n"
# Replace "## HBM model" up to the next "## " heading, or append it.
pattern = re.compile(r"^## HBM model\n.*?(?=^## |\Z)", re.S | re.M)
if pattern.search(text):
    text = pattern.sub(lambda m: section + "\n", text, count=1)
else:
    text = text.rstrip("\n") + "\n\n" + section
open(path, "w").write(text.rstrip("\n") + "\n")
PY
  echo "updated docs/performance.md" >&2
fi
