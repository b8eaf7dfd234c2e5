// Reading a whole input file the way every tool should: only a regular file
// (a directory, a device such as /dev/zero, a FIFO or a socket is refused
// before a byte is read, so nothing hangs or exhausts memory), with a size
// bound, and an error that says which of these went wrong. Paths are the
// caller's to print: the problem comes back without the file name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tpusim::support {

// Larger than any model input the tools read (HLO text, .tpuprog, presets, .npy).
constexpr uint64_t kMaxInputFileBytes = uint64_t(4) << 30;

// Why `path` cannot be read as an input file ("no such file", "is a directory,
// not a file", ...), or nullopt when it is a regular file.
std::optional<std::string> inputFileProblem(const std::string& path);

// Reads the whole file into *contents. Returns the problem (as above, or a
// read error, or "larger than N bytes") or nullopt on success.
std::optional<std::string> readInputFile(const std::string& path, std::string* contents,
                                         uint64_t maxBytes = kMaxInputFileBytes);

}  // namespace tpusim::support
