// profile.json: the profile as JSON with a version field and a stable key
// order (the schema is documented in docs/profiler.md). Nothing in it depends
// on the host or on the simulation mode, so timing and functional runs of a
// program write the same file and two runs diff clean.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/prof/Profile.h"

namespace tpusim::prof {

nlohmann::ordered_json profileToJson(const Profile& p);
// Reads a profile back (tpu-prof); throws std::runtime_error naming `what`
// (the file) and the field on a malformed or newer file.
Profile profileFromJson(const nlohmann::json& j, const std::string& what);
Profile readProfile(const std::string& path);

}  // namespace tpusim::prof
