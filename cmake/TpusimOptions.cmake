# Warning and sanitizer flags shared by every tpusim target.
add_library(tpusim_options INTERFACE)
target_compile_options(tpusim_options INTERFACE -Wall -Wextra -Wno-unused-parameter)
if(TPUSIM_WERROR)
  target_compile_options(tpusim_options INTERFACE -Werror)
endif()
if(TPUSIM_SANITIZE)
  target_compile_options(tpusim_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                                  -fno-sanitize-recover=undefined)
  target_link_options(tpusim_options INTERFACE -fsanitize=address,undefined)
endif()
target_include_directories(tpusim_options INTERFACE ${PROJECT_SOURCE_DIR})

# tpusim_lto_library(target) / tpusim_lto_link(target): the simulator's hot
# loop (DMA engine -> HBM model -> pseudo-channels) crosses a dozen
# translation units; inlining across them takes ~10% off a timing run. The
# libraries keep machine code next to the LTO bytecode (fat objects), so
# the ~100 test binaries link them as before and only the tools named with
# tpusim_lto_link do the link-time work. GCC only (Clang's LTO objects are
# bitcode only); off under the sanitizers.
set(TPUSIM_LTO_ACTIVE OFF)
if(TPUSIM_LTO AND NOT TPUSIM_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(TPUSIM_LTO_ACTIVE ON)
endif()
function(tpusim_lto_library target)
  if(TPUSIM_LTO_ACTIVE)
    target_compile_options(${target} PRIVATE -flto=auto -ffat-lto-objects)
  endif()
endfunction()
function(tpusim_lto_link target)
  if(TPUSIM_LTO_ACTIVE)
    target_link_options(${target} PRIVATE -flto=auto)
  endif()
endfunction()

# tpusim_add_tool(name SOURCES ... LIBS ...): an LLVM-style command-line tool,
# placed in <build>/bin so lit finds every tool in one directory.
function(tpusim_add_tool name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE tpusim_options ${ARG_LIBS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
  set_property(GLOBAL APPEND PROPERTY TPUSIM_TOOLS ${name})
endfunction()

# tpusim_add_unit_test(name SOURCES ... LIBS ... [LABELS ...] [TIMEOUT s] [ARGS ...]): a
# Catch2 v2 test binary registered as one CTest test. (catch_discover_tests
# splits list-valued PROPERTIES such as several labels, so labels and the
# environment are set here directly.) Labels: always "unit", plus LABELS;
# "sanitize" also puts the binary in the ASan + UBSan run of scripts/test.sh.
# ARGS are passed to the binary (e.g. a Catch2 test filter).
# Test cases tagged [throws-in-systemc] let an exception cross a SystemC
# coroutine stack (a simulated program's fault or deadlock, or any throw after
# one in the same process). ASan cannot follow those stack switches (Debian's
# SystemC 2.3.4 is not built with ASan's fiber annotations) and reports a false
# stack-buffer-overflow, so the sanitizer build leaves them out; the normal
# build runs them.
# CORPUS: the binary has test cases tagged [corpus] that read the external HLO
# corpus; they run as their own test, NAME:corpus, which exits 77 (skipped,
# with the reason) when TPUSIM_HLO_CORPUS is not there. CORPUS_ONLY: every test
# case reads the corpus; the binary is one test, NAME, skipped the same way.
# PARTS tag...: the test cases tagged [tag] run as their own test, NAME:tag,
# and NAME runs the rest: a long binary's parts run side by side under
# `ctest -j` and each gets its own TIMEOUT (the sanitizer build runs them
# 5-10x slower).
function(tpusim_add_unit_test name)
  cmake_parse_arguments(ARG "CORPUS;CORPUS_ONLY" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS;PARTS" ${ARGN})
  if(TPUSIM_SANITIZE)
    list(APPEND ARG_ARGS "~[throws-in-systemc]")
  endif()
  set(_part_args ${ARG_ARGS})
  foreach(_part IN LISTS ARG_PARTS)
    list(APPEND ARG_ARGS "~[${_part}]")
  endforeach()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE tpusim_options tpusim_catch_main Catch2::Catch2 ${ARG_LIBS})
  if("sanitize" IN_LIST ARG_LABELS)
    add_dependencies(tpusim_sanitize_targets ${name})
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set(_env "TPUSIM_SOURCE_DIR=${PROJECT_SOURCE_DIR};TPUSIM_HLO_CORPUS=${TPUSIM_HLO_CORPUS};TPUSIM_BINARY_DIR=${PROJECT_BINARY_DIR}")
  if(ARG_CORPUS)
    add_test(NAME ${name} COMMAND ${name} ${ARG_ARGS} "~[corpus]")
    add_test(NAME ${name}:corpus COMMAND ${name} "[corpus]")
    set_tests_properties(${name}:corpus PROPERTIES
      LABELS "unit;corpus;${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT} SKIP_RETURN_CODE 77 ENVIRONMENT "${_env}")
  else()
    add_test(NAME ${name} COMMAND ${name} ${ARG_ARGS})
  endif()
  if(ARG_CORPUS_ONLY)
    list(APPEND ARG_LABELS corpus)
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
  set_tests_properties(${name} PROPERTIES
    LABELS "unit;${ARG_LABELS}"
    TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "${_env}")
  foreach(_part IN LISTS ARG_PARTS)
    add_test(NAME ${name}:${_part} COMMAND ${name} ${_part_args} "[${_part}]")
    set_tests_properties(${name}:${_part} PROPERTIES
      LABELS "unit;${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${_env}")
  endforeach()
endfunction()
