// The pass interface: a named transformation of a module that reports whether
// it changed anything. One pass per file in this folder; PassRegistry.h
// creates them by name.
#pragma once

#include <string_view>

#include "compiler/hlo/HloModule.h"

namespace tpusim::passes {

class HloPass {
 public:
  virtual ~HloPass() = default;
  // The name used on the command line (--passes=dce,cse).
  virtual std::string_view name() const = 0;
  // Transforms the module in place; true if anything changed.
  virtual bool run(hlo::HloModule& module) = 0;
};

}  // namespace tpusim::passes
