# Finds every third-party package the project uses. Each failure names the
# missing package and the apt-get line that installs it (see scripts/setup.sh).

set(TPUSIM_APT_HINT "run scripts/setup.sh as root, or: apt-get install -y")

macro(tpusim_require found what pkg)
  if(NOT ${found})
    message(FATAL_ERROR "tpusim: ${what} not found. Install it with:\n  apt-get install -y ${pkg}\n(or run scripts/setup.sh as root, which installs everything)")
  endif()
endmacro()

find_package(PkgConfig QUIET)
tpusim_require(PKG_CONFIG_FOUND "pkg-config" "pkg-config")

# SystemC has no CMake package on Debian: use pkg-config (toolchain.md #3).
pkg_check_modules(SystemC QUIET IMPORTED_TARGET systemc)
tpusim_require(SystemC_FOUND "SystemC 2.3.4 (pkg-config module 'systemc')" "libsystemc-dev")

# LLVM 16: Support/ADT, llvm::cl. Needs C enabled and zstd (toolchain.md #2).
find_package(LLVM 16 QUIET CONFIG HINTS /usr/lib/llvm-16/lib/cmake/llvm)
tpusim_require(LLVM_FOUND "LLVM 16 CMake package" "llvm-16-dev llvm-16-tools libzstd-dev libffi-dev libncurses-dev")
llvm_map_components_to_libnames(TPUSIM_LLVM_LIBS support)
add_library(tpusim_llvm INTERFACE)
target_include_directories(tpusim_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(tpusim_llvm INTERFACE ${LLVM_DEFINITIONS})
target_link_libraries(tpusim_llvm INTERFACE ${TPUSIM_LLVM_LIBS})
if(NOT LLVM_ENABLE_RTTI)
  # Debian's LLVM is built without RTTI; our code uses it only where it does
  # not derive from LLVM classes, which is allowed.
endif()

find_package(fmt QUIET CONFIG)
tpusim_require(fmt_FOUND "fmt" "libfmt-dev")

find_package(nlohmann_json 3.11 QUIET CONFIG)
tpusim_require(nlohmann_json_FOUND "nlohmann/json 3.11" "nlohmann-json3-dev")

find_package(Catch2 2 QUIET CONFIG)
tpusim_require(Catch2_FOUND "Catch2 v2" "catch2")

find_package(verilator QUIET HINTS /usr/share/verilator)
tpusim_require(verilator_FOUND "Verilator (CMake package)" "verilator")

# lit and FileCheck come with llvm-16-tools (toolchain.md #9).
set(TPUSIM_LLVM_BINDIR "${LLVM_TOOLS_BINARY_DIR}")
find_program(TPUSIM_FILECHECK FileCheck HINTS ${TPUSIM_LLVM_BINDIR} NO_DEFAULT_PATH)
tpusim_require(TPUSIM_FILECHECK "FileCheck (LLVM 16)" "llvm-16-tools")
find_file(TPUSIM_LIT lit.py HINTS ${LLVM_INSTALL_PREFIX}/build/utils/lit /usr/lib/llvm-16/build/utils/lit NO_DEFAULT_PATH)
tpusim_require(TPUSIM_LIT "lit (lit.py from LLVM 16)" "llvm-16-tools")
find_package(Python3 QUIET COMPONENTS Interpreter)
tpusim_require(Python3_FOUND "python3" "python3")
