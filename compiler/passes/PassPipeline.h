// Runs passes in order on a module, runs the verifier after each one, and
// optionally writes the module after each pass to a directory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/passes/HloPass.h"

namespace tpusim::passes {

class PassPipeline {
 public:
  // Adds the named pass; false (and *error set) for an unknown name.
  bool addPass(const std::string& name, std::string* error);
  void addPass(std::unique_ptr<HloPass> pass) { passes_.push_back(std::move(pass)); }
  // Parses "dce,cse,algsimp" (empty items ignored).
  bool addPasses(const std::string& commaList, std::string* error);
  size_t size() const { return passes_.size(); }

  // Writes "<dir>/<prefix>.<NN>.<pass>.hlo" after each pass ("" = no dumps).
  void setDumpDir(std::string dir, std::string prefix) {
    dumpDir_ = std::move(dir);
    dumpPrefix_ = std::move(prefix);
  }
  void setVerify(bool verify) { verify_ = verify; }

  // Runs every pass; false with *error set if the verifier fails after a
  // pass ("after pass 'x': ...") or a dump cannot be written. *changed (if
  // given) says whether any pass changed the module.
  bool run(hlo::HloModule& module, std::string* error, bool* changed = nullptr);

 private:
  std::vector<std::unique_ptr<HloPass>> passes_;
  std::string dumpDir_, dumpPrefix_;
  bool verify_ = true;
};

}  // namespace tpusim::passes
