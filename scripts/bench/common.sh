# Shared start of the simulator benchmarks (bench_sim.sh, bench_ici.sh,
# bench_collectives.sh), sourced after `set -euo pipefail`:
#   bench_start NAME "$@"
# parses [--build-dir DIR] [--quick] [--full], and sets root, build, quick, full, tpusim (checked
# to be built) and work (a temporary directory removed on exit).
bench_start() {
  local name=$1
  shift
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  build="$root/build"
  quick=0
  full=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --build-dir)
        [[ $# -ge 2 ]] || { echo "$name: --build-dir needs a directory" >&2; exit 2; }
        build=$2; shift 2 ;;
      --quick) quick=1; shift ;;
      --full) full=1; shift ;;
      *) echo "usage: scripts/$name [--build-dir DIR] [--quick] [--full]" >&2; exit 2 ;;
    esac
  done
  tpusim="$build/bin/tpusim"
  [[ -x "$tpusim" ]] || { echo "$name: $tpusim not built (ninja -C $build tpusim)" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
}
