#include "compiler/passes/PassPipeline.h"

#include <fmt/format.h>

#include <fstream>

#include "compiler/hlo/HloPrinter.h"
#include "compiler/hlo/HloVerifier.h"
#include "compiler/passes/PassRegistry.h"

namespace tpusim::passes {

bool PassPipeline::addPass(const std::string& name, std::string* error) {
  auto pass = createPass(name);
  if (!pass) {
    std::string known;
    for (const auto& n : registeredPassNames()) known += (known.empty() ? "" : ", ") + n;
    if (error) *error = fmt::format("unknown pass '{}' (known passes: {})", name, known);
    return false;
  }
  passes_.push_back(std::move(pass));
  return true;
}

bool PassPipeline::addPasses(const std::string& list, std::string* error) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string name = list.substr(start, comma - start);
    if (!name.empty() && !addPass(name, error)) return false;
    start = comma + 1;
  }
  return true;
}

bool PassPipeline::run(hlo::HloModule& module, std::string* error, bool* changed) {
  bool any = false;
  for (size_t i = 0; i < passes_.size(); ++i) {
    HloPass& pass = *passes_[i];
    any |= pass.run(module);
    if (!dumpDir_.empty()) {
      std::string path =
          fmt::format("{}/{}.{:02}.{}.hlo", dumpDir_, dumpPrefix_, i + 1, pass.name());
      std::ofstream out(path, std::ios::binary);
      out << hlo::printModule(module);
      if (!out) {
        if (error) *error = fmt::format("cannot write '{}'", path);
        return false;
      }
    }
    if (verify_) {
      hlo::VerifierResult v = hlo::verifyModule(module);
      if (!v.ok()) {
        if (error)
          *error = fmt::format("the module does not verify after pass '{}':\n{}", pass.name(),
                               v.message());
        return false;
      }
    }
  }
  if (changed) *changed = any;
  return true;
}

}  // namespace tpusim::passes
