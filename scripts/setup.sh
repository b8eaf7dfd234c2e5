#!/usr/bin/env bash
# Sets up a Debian 12 machine for tpusim and builds it.
#   scripts/setup.sh [--build-dir DIR] [--sanitize] [--werror] [--no-build]
# Installs (as root, with apt-get) exactly the packages the build needs,
# skipping those already installed; then configures with CMake + Ninja and
# builds. Idempotent: a second run with nothing changed takes seconds.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$root/build"
cmake_args=()
do_build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --sanitize) cmake_args+=(-DTPUSIM_SANITIZE=ON); shift ;;
    --werror) cmake_args+=(-DTPUSIM_WERROR=ON); shift ;;
    --no-build) do_build=0; shift ;;  # configure only
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# The packages, one reason each (toolchain.md).
packages=(
  build-essential      # g++ 12
  cmake ninja-build pkg-config ccache
  libsystemc-dev       # SystemC 2.3.4 + TLM
  verilator            # Verilator 5.006 (RTL MXU)
  llvm-16-dev llvm-16-tools  # Support/ADT, llvm::cl, FileCheck, lit, not
  libzstd-dev libffi-dev libncurses-dev  # needed by LLVM 16's CMake package
  libfmt-dev catch2 nlohmann-json3-dev
  python3 python3-numpy  # lit; NumPy for scripts that read .npy
  clang-format
  chromium             # headless browser: the profiler's report.html test (testbench/lit/prof)
  openmpi-bin libopenmpi-dev  # optional for the build: tpusim-batch under mpirun (ctest batch_mpi)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup.sh: not root and no sudo; install as root: apt-get install -y ${missing[*]}" >&2; exit 1; }
    sudo_cmd=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -f "$build_dir/build.ninja" ] || [ ${#cmake_args[@]} -gt 0 ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja "${cmake_args[@]}" >/dev/null
fi
[ "$do_build" = 1 ] || exit 0
cmake --build "$build_dir"
