#include "kernels/codegen/Drain.h"

#include <fmt/format.h>

namespace tpusim::kernels::codegen {

const char* drainAtName(DrainAt a) {
  switch (a) {
    case DrainAt::Start:
      return "at its start";
    case DrainAt::BeforePrefetch:
      return "before it starts the next kernel's first blocks";
    case DrainAt::End:
      return "at its end";
    case DrainAt::None:
      break;
  }
  return "nowhere";
}

std::string DrainPlan::key() const {
  std::string k = atStart ? "drainS" : beforePrefetch ? "drainP" : "drain";
  for (const PendingWriteBack& c : copies)
    k += fmt::format(";{}f{}n{}@{}+{}", c.output, c.flag, c.count, c.row, c.rows);
  return k;
}

}  // namespace tpusim::kernels::codegen
