#include "kernels/codegen/Drain.h"

#include <fmt/format.h>

namespace tpusim::kernels::codegen {

std::string DrainPlan::key() const {
  std::string k = atStart ? "drainS" : beforePrefetch ? "drainP" : "drain";
  for (const PendingWriteBack& c : copies)
    k += fmt::format(";{}f{}n{}@{}+{}", c.output, c.flag, c.count, c.row, c.rows);
  return k;
}

}  // namespace tpusim::kernels::codegen
