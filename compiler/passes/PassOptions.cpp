#include "compiler/passes/PassOptions.h"

namespace tpusim::passes {

PassOptions& passOptions() {
  static PassOptions options;
  return options;
}

}  // namespace tpusim::passes
