// The value of one vector register: 8 sublanes x 128 lanes of 32-bit words,
// element [s][l] at index s * 128 + l. Shared by every unit that moves vregs
// (core, VPU, XLU, MXU and the RTL wrapper).
#pragma once

#include <array>
#include <cstdint>

#include "isa/Isa.h"

namespace tpusim::sim {

using VregData = std::array<uint32_t, isa::kSublanes * isa::kLanes>;

inline uint32_t& at(VregData& v, int sublane, int lane) { return v[sublane * isa::kLanes + lane]; }
inline uint32_t at(const VregData& v, int sublane, int lane) { return v[sublane * isa::kLanes + lane]; }

}  // namespace tpusim::sim
