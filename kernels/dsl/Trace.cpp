#include "kernels/dsl/Trace.h"

#include <fmt/format.h>

namespace tpusim::kernels::dsl {
namespace {
thread_local llo::Builder* g_builder = nullptr;

const char* baseName(const char* path) {
  const char* slash = path;
  for (const char* p = path; *p; ++p)
    if (*p == '/') slash = p + 1;
  return slash;
}
}  // namespace

llo::SourceLoc Loc::toIr() const { return llo::SourceLoc{baseName(file), line}; }

std::string Loc::str() const {
  return line > 0 ? fmt::format("{}:{}", baseName(file), line) : std::string();
}

void fail(const Loc& loc, const std::string& what) {
  std::string where = loc.str();
  throw Error(where.empty() ? "error: " + what : where + ": error: " + what);
}

llo::Builder& builder(const char* what) {
  if (!g_builder)
    throw Error(
        fmt::format("error: {} is only valid while a kernel is being traced "
                    "(inside the kernel body or an index map)",
                    what));
  return *g_builder;
}

bool tracing() { return g_builder != nullptr; }

TraceScope::TraceScope(llo::Builder* b) : previous_(g_builder) { g_builder = b; }
TraceScope::~TraceScope() { g_builder = previous_; }

void locate(const Loc& loc) {
  if (g_builder && loc.line > 0) g_builder->setLoc(loc.toIr());
}

}  // namespace tpusim::kernels::dsl
