// The two forms of a program's code (isa/Program.h): flat (`code` holds every
// bundle) or with shared kernel bodies (`code` holds the bundles outside the
// instances; each instance is a body with a few operands patched). These
// helpers count, walk and flatten both alike, so a tool that wants every
// bundle never needs to know which form it has, and the linker finds the
// patches that make a kernel an instance of a body.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "isa/Program.h"

namespace tpusim::isa {

// The number of bundles the program runs (both forms).
uint64_t codeSize(const Program& p);
inline bool hasSharedCode(const Program& p) { return !p.bodies.empty() || !p.instances.empty(); }

// Calls visit(pc, bundle) for every bundle in order; a patched bundle is
// built in a scratch bundle valid during the call only. The structure must be
// valid (checkSharedCode); a file the reader accepted always is.
void forEachBundle(const Program& p, const std::function<void(uint32_t, const Bundle&)>& visit);

// Calls visit(instance, pc) at the first bundle of each instance and
// visit(-1, pc) where a run of `code` bundles starts: the runs of the code.
void forEachRun(const Program& p, const std::function<void(int64_t, uint32_t)>& visit);

// The bundles of instance `i` (its body with the patches applied).
std::vector<Bundle> instanceCode(const Program& p, size_t i);
// Every bundle, in order, and the program turned into the flat form.
std::vector<Bundle> flatCode(const Program& p);
void flattenCode(Program* p);

// The position in `code` of bundle `pc`, or -1 when it lies in an instance
// or past the end.
int64_t ownCodeIndex(const Program& p, uint32_t pc);

// Sets the operand `patch` names in `b`; false with *error when `b` has no op
// in that slot or the op has no such operand.
bool applyPatch(Bundle* b, const CodePatch& patch, std::string* error);

// The patches that turn `body` into the `n` bundles at `code`, appended to
// *out in order (bundle, slot, operand); false when the two differ in size or
// in any slot's opcode (then *out is unchanged).
bool patchesFor(const std::vector<Bundle>& body, const Bundle* code, size_t n,
                std::vector<CodePatch>* out);

// The first problem with the shared-code structure: a body index out of
// range, an empty body, instances out of order or overlapping or leaving a
// gap `code` cannot fill, patches out of order or naming no operand, a
// patched bundle that does not encode, a patch value the decoder would
// return otherwise; "" when there is none.
std::string checkSharedCode(const Program& p);

// checkSharedCode one instance at a time (the file reader checks each as it
// reads it): `walk` is where the previous instance left off; `ownTotal` the
// number of bundles in `code` (which a reader need not keep).
struct CodeWalk {
  uint64_t pc = 0;   // the bundle after the previous instance
  uint64_t own = 0;  // `code` bundles placed before it
};
std::string checkInstance(const Program& p, size_t i, uint64_t ownTotal, CodeWalk* walk);

}  // namespace tpusim::isa
