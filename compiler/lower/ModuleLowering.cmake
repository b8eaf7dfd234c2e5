# The module compiler (ModuleLowering.h): a whole HLO module the passes have
# prepared -> one isa::Program. Kept apart from tpusim_lower (the analyses the
# passes use) because it needs the kernel code generator and the
# per-instruction lowerings. Included from compiler/CMakeLists.txt.
set(_dir ${CMAKE_CURRENT_LIST_DIR})
add_library(tpusim_module_lowering STATIC
  ${_dir}/ModuleLowering.cpp
  ${_dir}/ModuleLoweringUnfuse.cpp
  ${_dir}/ModuleLoweringLayouts.cpp
  ${_dir}/ModuleLoweringNames.cpp
  ${_dir}/ModuleLoweringConstants.cpp
  ${_dir}/ModuleLoweringCosts.cpp
  ${_dir}/ModuleLoweringStats.cpp
  ${_dir}/ControlCode.cpp
  ${_dir}/ControlFlow.cpp
)
target_link_libraries(tpusim_module_lowering PUBLIC tpusim_lower tpusim_lower_buffers tpusim_lower_fusion tpusim_lower_dma
                      tpusim_kernels_codegen tpusim_isa tpusim_options fmt::fmt)
