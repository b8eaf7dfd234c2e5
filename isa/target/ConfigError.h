// The error every configuration problem is reported with: a user error (bad
// preset, bad --set), never a simulator bug. The message is complete and
// ready to print: one line per problem, each naming the file (with
// line:col where known) and the full field path.
#pragma once

#include <stdexcept>
#include <string>

namespace tpusim::target {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tpusim::target
