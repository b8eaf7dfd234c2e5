// The grid reduce-scatter's algorithm for mid sizes: a direct exchange along
// each line of the slice, one dimension after the other, instead of the
// pipelined rings (GridReduceScatter.h) whose partial sums cross a line hop
// after hop (m - 1 hop latencies, transfers and combines in series per phase):
//
//  - each member's share is cut into D parts as in the rings; part j is
//    reduced along the dimensions in the order j, j + 1, ... (mod D);
//  - in a phase along dimension d every chip sends the block each other chip
//    of its line (same coordinates but d) reduces straight to it: m - 1
//    remote DMAs, into a landing buffer of the phase at the sender's
//    coordinate, all in flight at once;
//  - the receiver loads its own block and the m - 1 that arrived into VMEM
//    and combines them in coordinate order (a chain of vector loops, the
//    reference evaluator's operand order along the line), then stores the
//    reduced block for the next phase (or the result) and sends the next
//    phase's blocks at once;
//  - where the estimate says so, each part is cut into two halves and the
//    second half's first blocks go out once the first half's have left, so
//    the first half's next phase (its hops) runs while the second is on the
//    wire;
//  - one ready signal to every chip of each line it exchanges along (the
//    landing buffers are free), no barrier.
//
// The middle links of a line carry floor(m/2) ceil(m/2) blocks instead of
// the rings' m - 1, but a phase pays one hop latency (the farthest chip's
// hops) and one combine instead of m - 1 in series: the estimate picks it
// where that wins (the latency-bound mid sizes).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/lower/collectives/GridReduceScatter.h"
#include "compiler/lower/control/ControlCode.h"
#include "isa/target/ChipConfig.h"

namespace tpusim::lower {

// Can the exchange be emitted (parts on element boundaries, blocks that fit
// VMEM, 32-bit addresses: gridReduceScatterFits's rules)?
bool lineExchangeReduceFits(const GridReduce& g, const target::ChipConfig& chip);

// Estimated cycles: per part, per phase the farthest hop, the busiest link's
// blocks one after the other and the combine (loads, m - 1 vector loops,
// store); the slowest part, plus the ready signals.
double lineExchangeReduceCycles(const GridReduce& g, const target::ChipConfig& chip);

// Is the exchange bound by its hops: its first phase's busiest link busy for
// less than the handshake's extra hops (every chip of a line, where the rings
// signal their neighbours)? There the rings win whatever the estimates say:
// their estimate charges each hop a whole piece's combine, which overstates
// them for the smallest blocks (v5e 4x4, 8 KiB: 16,636 estimated cycles,
// 12,427 measured).
bool lineExchangeHopBound(const GridReduce& g, const target::ChipConfig& chip);

// Emits the exchange; `scratch` holds gridReduceScratchBuffers addresses (the
// work buffer, then a landing buffer per phase; the rest unused). Uses
// flags.ready, flags.sent[0], flags.local and the stream flags
// firstStream - (part x D + phase).
void emitLineExchangeReduce(ControlCode& code, const GridReduce& g, const target::ChipConfig& chip,
                            const std::vector<uint64_t>& scratch, const GridReduceFlags& flags);

}  // namespace tpusim::lower
