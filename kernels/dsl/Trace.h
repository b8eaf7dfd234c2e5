// The tracing context of the DSL: while pallas_call traces a kernel body (or an
// index map), every DSL operation appends kernel-IR ops at the current insertion
// point. Source locations come from __builtin_FILE/__builtin_LINE default
// arguments of the DSL calls.
#pragma once

#include <stdexcept>
#include <string>

#include "kernels/llo/Ir.h"

namespace tpusim::kernels::dsl {

// A user error in a kernel definition (bad block shape, VMEM overflow, wrong
// dtype...). The message names the DSL source location when it is known.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Loc {
  const char* file = "";
  int line = 0;
  static Loc here(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    return Loc{file, line};
  }
  llo::SourceLoc toIr() const;
  std::string str() const;  // "file:line" or "" when unknown
};

[[noreturn]] void fail(const Loc& loc, const std::string& what);

// The current builder; throws Error when no kernel is being traced.
llo::Builder& builder(const char* what = "this operation");
bool tracing();

// Makes `b` the current builder for the lifetime of the scope (nests).
class TraceScope {
 public:
  explicit TraceScope(llo::Builder* b);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  llo::Builder* previous_;
};

// Sets the builder's location for the ops a DSL call emits.
void locate(const Loc& loc);

}  // namespace tpusim::kernels::dsl
