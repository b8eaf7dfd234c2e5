# tpusim_add_kernel(NAME SOURCES file.cpp... [CHIP preset]):
#   builds a kernel executable (its main calls kernels/examples/KernelMain.h's
#   kernelMain) and registers a test that interprets it, checks the reference,
#   compiles it for CHIP (default v5e) and, when the tpusim tool is part of the
#   build, simulates it and requires the outputs to equal interpret mode's.
function(tpusim_add_kernel name)
  cmake_parse_arguments(ARG "" "CHIP" "SOURCES" ${ARGN})
  if(NOT ARG_CHIP)
    set(ARG_CHIP v5e)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE tpusim_options tpusim_kernel_main)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/kernels)
  set(args --chip ${ARG_CHIP} --out ${CMAKE_CURRENT_BINARY_DIR}/${name}.out)
  if(TARGET tpusim)
    list(APPEND args --tpusim $<TARGET_FILE:tpusim>)
  endif()
  add_test(NAME kernel:${name} COMMAND ${name} ${args})
  set_tests_properties(kernel:${name} PROPERTIES LABELS "kernel")
endfunction()
