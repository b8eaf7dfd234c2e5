// Finding and loading chip presets, and `--set key=value` overrides.
//
// A chip is named either by a path (contains '/' or ends in ".json") or by a
// preset name ("v5e"), looked up as <dir>/<name>.json in, in order:
//   1. every directory in $TPUSIM_CHIPS_DIR (':'-separated),
//   2. the source tree's sim/chips (compiled in).
#pragma once

#include <string>
#include <vector>

#include "isa/target/ChipConfig.h"

namespace tpusim::target {

// Loads, validates and returns a chip; throws ConfigError naming file and field.
ChipConfig loadChip(const std::string& nameOrPath);
// The same, then applies "section.field=value" overrides (what --chip X --set ... means).
ChipConfig loadChip(const std::string& nameOrPath, const std::vector<std::string>& overrides);

// Parses preset JSON text; `file` names it in errors and is where a relative
// "extends" is resolved from (its directory, then the search directories).
ChipConfig parseChipText(const std::string& text, const std::string& file);

// The directories searched for preset names, in order.
std::vector<std::string> chipSearchDirs();
// The source tree's sim/chips (the committed presets, which docs/presets.md describes).
std::string sourceChipsDir();
// The presets (names without ".json") in `dir`: production presets first, then
// test presets, each group sorted by name.
std::vector<std::string> listPresetsIn(const std::string& dir);
// The presets of every search directory (an earlier directory shadows a later one).
std::vector<std::string> listPresets();
// The file a name or path resolves to; throws ConfigError listing where it looked.
std::string resolveChipPath(const std::string& nameOrPath, const std::string& relativeTo = "");

// Applies one "section.field=value" override; the value is parsed by the field's
// type and checked against its limits. Throws ConfigError naming the field.
// Cross-field constraints are checked by validateChip once all overrides are in.
void applyOverride(ChipConfig& chip, const std::string& assignment);
// Applies every override, then validates the result.
void applyOverrides(ChipConfig& chip, const std::vector<std::string>& assignments);
// Checks the cross-field constraints; throws ConfigError listing every violation.
void validateChip(const ChipConfig& chip, const std::string& what = "configuration");

}  // namespace tpusim::target
