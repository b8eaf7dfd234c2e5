#include "compiler/hlo/eval/CustomCalls.h"

#include <map>
#include <mutex>

namespace tpusim::hlo::eval {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, CustomCallKernel> kernels;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

}  // namespace

void registerCustomCall(const std::string& target, CustomCallKernel kernel) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.kernels[target] = std::move(kernel);
}

CustomCallKernel findCustomCall(const std::string& target) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.kernels.find(target);
  return it == r.kernels.end() ? CustomCallKernel() : it->second;
}

std::vector<std::string> registeredCustomCalls() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, kernel] : r.kernels) names.push_back(name);
  return names;
}

}  // namespace tpusim::hlo::eval
