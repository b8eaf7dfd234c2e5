// The flash attention kernel's generated code, structurally: its unmasked
// slab loop runs two pipelined iterations per trip, and a trip is shorter
// than two one-iteration trips (the first iteration's tail overlaps the
// second one's head instead of draining at the end of the trip).
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "kernels/codegen/Compile.h"
#include "kernels/lib/FlashAttention.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;

namespace {

struct LoopBlock {
  int64_t bundles = 0;  // the loop body and its latch
  int64_t exps = 0;
};

// Loop blocks with exps (the slab loops), by their bundle count per trip.
std::vector<LoopBlock> slabLoops(const std::string& machineText) {
  std::vector<LoopBlock> loops;
  std::regex label(R"(^([a-z]+)\d+:\s+# bundles (\d+)\.\.(\d+))");
  std::istringstream in(machineText);
  std::string line, kind;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, label)) {
      kind = m[1];
      int64_t n = std::stoll(m[3]) - std::stoll(m[2]);
      if (kind == "loop") loops.push_back({n, 0});
      if (kind == "latch" && !loops.empty()) loops.back().bundles += n;
      continue;
    }
    if (kind != "loop") continue;
    for (size_t at = line.find("vexp"); at != std::string::npos; at = line.find("vexp", at + 1))
      ++loops.back().exps;
  }
  std::vector<LoopBlock> withExps;
  for (const LoopBlock& l : loops)
    if (l.exps > 0) withExps.push_back(l);
  return withExps;
}

struct Block {
  std::string kind;  // the label without its number: loop, latch, exit, then, ...
  std::string text;
};

std::vector<Block> blocks(const std::string& machineText) {
  std::vector<Block> out;
  std::regex label(R"(^([a-z]+)\d+:)");
  std::istringstream in(machineText);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, label)) {
      out.push_back({m[1], ""});
      continue;
    }
    if (!out.empty()) out.back().text += line + "\n";
  }
  return out;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Causal 1024 x 1024 with blocks of 512 as tpu-kernel builds it for v5e
// (V latched where block_k = 4 x 128): one step below the diagonal, two on it.
// 1024 x 1024 keys in 512 blocks on v5e's four 128-wide MXUs, V latched.
lib::FlashAttentionParams blocks512() {
  lib::FlashAttentionParams p;
  p.blockQ = p.blockK = 512;
  p.latchV = true;
  p.mxuSize = 128;
  p.mxuCount = 4;
  return p;
}

// Causal, the diagonal in two parts, with tpu-kernel's defaults score_next,
// score_next_q and pair_q; accSlots result slots for early p x V (0: none).
lib::FlashAttentionParams causalInParts(int accSlots) {
  lib::FlashAttentionParams p = blocks512();
  p.causal = true;
  p.causalParts = 2;
  p.accSlots = accSlots;
  p.scoreNext = p.scoreNextQ = p.pairQ = true;
  return p;
}

codegen::CompiledKernel kernel1024(const codegen::TargetInfo& t,
                                   const lib::FlashAttentionParams& p) {
  auto kernel = lib::flashAttentionCall(1, 1024, 1024, 128, p)
                    .trace(lib::flashAttentionInputs(1, 1024, 1024, 128));
  return codegen::compileKernel(*kernel, t);
}

codegen::CompiledKernel causalKernel(const codegen::TargetInfo& t, int causalParts = 2) {
  lib::FlashAttentionParams p = blocks512();
  p.causal = true;
  p.causalParts = causalParts;
  return kernel1024(t, p);
}

}  // namespace

// The diagonal steps stream p x V through V latched during the score dot, as
// the steps below it do: after either step's slab loop no weight is pushed.
// And their causal mask broadcasts a slab's row bound once for its 4 windows'
// compares of both reads (2 per slab, 8 per one-iteration trip), not per
// compare (32). The diagonal step runs its rows in two parts (causal_parts
// 2), each its own slab loop: the first over the step's first 256 keys only
// (2 windows: 8 exps and 4 alphas per trip), p x V after the second. The
// second part's rows (256-511) see all of the first 256 keys: those 2 windows
// are scaled only, so its compares and selects are those of the last 2 (2
// reads of 4 slabs: 16 each, not 32).
TEST_CASE("causal flash attention's diagonal steps latch V and share the row bound") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  codegen::CompiledKernel ck = causalKernel(t);
  std::vector<Block> bs = blocks(ck.machineText);
  std::vector<int> exps;
  int withPv = 0;
  for (size_t b = 0; b + 2 < bs.size(); ++b) {
    if (bs[b].kind != "loop" || count(bs[b].text, "vexp") == 0) continue;
    exps.push_back(count(bs[b].text, "vexp"));
    INFO("slab loop " << exps.size());
    CHECK(bs[b + 1].kind == "latch");
    CHECK(bs[b + 2].kind == "exit");
    CHECK(count(bs[b + 2].text, "mxu.wpush") == 0);
    withPv += count(bs[b + 2].text, "mxu.mm") > 0;
    if (exps.back() == 20) {
      CHECK(count(bs[b].text, "vbcast") == 8);
      CHECK(count(bs[b].text, "vcmp") == 16);
      CHECK(count(bs[b].text, "vsel") == 16);
    }
  }
  // Unmasked (two iterations per trip), the diagonal's first part, its second.
  CHECK(exps == std::vector<int>{40, 12, 20});
  CHECK(withPv == 2);
}

// The diagonal step (the q block's last) writes the output in its own last
// block, beside its 1 / l (64 reciprocals) and p x V's pops: 64 bf16
// converts of out there (and the last group's pb), not in a loop after it.
TEST_CASE("causal flash attention's diagonal step writes the output") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  int diagonalEnds = 0;
  for (const Block& b : blocks(causalKernel(t).machineText))
    if (count(b.text, "vrcp") == 64 && count(b.text, "vcvt.bf16") >= 64) ++diagonalEnds;
  CHECK(diagonalEnds >= 1);
}

// With score_next, score_next_q and pair_q (tpu-kernel's defaults): the
// diagonal of q block 0 makes q block 1's first scores in its last part's one
// block, all of that part's slabs (rows 256-511) at constant rows. Those of
// rows 256-383 see none of keys 384-511: that window gets no exps (weights
// 0): 16 fewer in the block with the next dot and p x V (512 mms) and 1 / l
// (64 reciprocals): 156, 172 with them; 120 in the variant of q block 0,
// whose diagonal is its first step (fresh: 36 alpha exps fewer). The first
// part's slabs (rows 0-255) are straight-line in the same block, as work the
// next dot hides (no slab loop ends the block before it): 68 exps more (40
// fresh), 224 and 160 (its own score dot there too: 768 mms).
TEST_CASE("causal flash attention's diagonal skips the exps of keys after a slab's rows") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  lib::FlashAttentionParams p = causalInParts(0);
  int ready = 0, fresh = 0;
  for (const Block& b : blocks(kernel1024(t, p).machineText)) {
    if (count(b.text, "vrcp") != 64) continue;
    const int exps = count(b.text, "vexp"), mms = count(b.text, "mxu.mm");
    INFO("exps " << exps << ", mms " << mms);
    if (mms == 512) {
      CHECK(exps == 224);
      ++ready;
    }
    if (mms == 768) {
      CHECK(exps == 160);
      ++fresh;
    }
  }
  CHECK(ready >= 2);
  CHECK(fresh == 1);
}

// A diagonal without the next q block's score dot (the head's last, here q
// block 1's of the pair) starts its first part's p x V (rows 0-255, all 32
// result slots) when that part's weights are stored: the MXUs, idle through
// the second part's softmax, stream it there, and the second part's slabs
// are straight-line after the start in its block (156 exps, as in the block
// with the next q block's dot), with the start (128 mms), the
// rest of p x V (rows 256-511, 128 mms) and 1 / l (64 reciprocals). Before,
// that part was a slab loop (20 exps a trip) and its p x V of all 512 rows
// (256 mms) followed it.
TEST_CASE(
    "causal flash attention's last diagonal streams its first part's p x V under the second") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  lib::FlashAttentionParams p = causalInParts(t.accSlots);
  int lastDiagonals = 0, secondPartLoops = 0;
  for (const Block& b : blocks(kernel1024(t, p).machineText)) {
    if (b.kind == "loop" && count(b.text, "vexp") == 20) ++secondPartLoops;
    lastDiagonals += count(b.text, "vrcp") == 64 && count(b.text, "mxu.mm") == 256 &&
                     count(b.text, "vexp") == 156;
  }
  CHECK(lastDiagonals >= 1);
  CHECK(secondPartLoops == 0);
  // Without the MXUs' result slots to hold the rows (no accSlots given: no
  // early p x V anywhere) the second part keeps its loop.
  p.accSlots = 0;
  secondPartLoops = 0;
  for (const Block& b : blocks(kernel1024(t, p).machineText))
    if (b.kind == "loop" && count(b.text, "vexp") == 20) ++secondPartLoops;
  CHECK(secondPartLoops >= 1);
}

// With score_next, q block 0's first step is its diagonal, which in parts
// writes m, l and acc without reading them (fresh: the row max of its
// scores, l = the row sum, acc = 0, no alpha exps), as a later q block's
// first step does: no init (m = -inf, an immediate 0xff800000 stored) is left
// in the kernel. In one part (causal_parts 1) the diagonal keeps the init.
TEST_CASE("causal flash attention's first diagonal needs no init") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  lib::FlashAttentionParams p = causalInParts(t.accSlots);
  const std::string minusInf = std::to_string(0xff800000u);
  CHECK(count(kernel1024(t, p).machineText, ", " + minusInf) == 0);
  p.causalParts = 1;
  CHECK(count(kernel1024(t, p).machineText, ", " + minusInf) > 0);
}

// With causal_parts 1 the diagonal step is one slab loop over all keys.
TEST_CASE("causal flash attention's diagonal step in one part") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  std::vector<Block> bs = blocks(causalKernel(t, 1).machineText);
  std::vector<int> exps;
  for (const Block& b : bs)
    if (b.kind == "loop" && count(b.text, "vexp") > 0) exps.push_back(count(b.text, "vexp"));
  CHECK(exps == std::vector<int>{40, 20});
}

TEST_CASE("flash attention's unmasked slab loop overlaps two iterations per trip") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  lib::FlashAttentionParams p;
  p.blockQ = p.blockK = 512;
  p.causal = true;  // steps below the diagonal (unmasked) and on it (masked)
  auto kernel = lib::flashAttentionCall(1, 1024, 1024, 128, p)
                    .trace(lib::flashAttentionInputs(1, 1024, 1024, 128));
  codegen::CompiledKernel ck = codegen::compileKernel(*kernel, t);
  std::vector<LoopBlock> loops = slabLoops(ck.machineText);
  REQUIRE(loops.size() == 2);
  // An iteration: 4 slabs of 8 rows x 512 keys, 5 exps each (4 score vregs, alpha).
  const LoopBlock& unmasked = loops[0];
  const LoopBlock& masked = loops[1];
  CHECK(unmasked.exps == 2 * 20);
  CHECK(masked.exps == 20);
  // At least the EUP's bound (an exp every transcendental_interval = 4 cycles),
  // and shorter than two trips of one (masked) iteration.
  CHECK(unmasked.bundles >= 40 * 4);
  CHECK(unmasked.bundles < 2 * masked.bundles);
}

// rcp_in_update: 1 / l is made at the end of every step (where the EUP idles
// while p x V drains), so the output pass after the last step (the loop with
// the output stores) has no reciprocal; without it, that loop makes them.
TEST_CASE("flash attention's reciprocals of l leave the output pass") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  auto rcpsInOutputLoop = [&](bool rcpInUpdate, bool causal = false) {
    lib::FlashAttentionParams p;
    p.blockQ = p.blockK = 512;
    p.rcpInUpdate = rcpInUpdate;
    p.causal = causal;
    auto kernel = lib::flashAttentionCall(1, 1024, 1024, 128, p)
                      .trace(lib::flashAttentionInputs(1, 1024, 1024, 128));
    codegen::CompiledKernel ck = codegen::compileKernel(*kernel, t);
    // The last loop of the kernel is finish's.
    std::istringstream in(ck.machineText);
    std::string line;
    std::vector<std::string> loopText;
    bool inLoop = false;
    while (std::getline(in, line)) {
      if (std::regex_search(line, std::regex(R"(^[a-z]+\d+:)"))) {
        inLoop = line.rfind("loop", 0) == 0;
        if (inLoop) loopText.push_back("");
        continue;
      }
      if (inLoop) loopText.back() += line + "\n";
    }
    REQUIRE(!loopText.empty());
    const std::string& out = loopText.back();
    CHECK(out.find("vst") != std::string::npos);
    int n = 0;
    for (size_t at = out.find("vrcp"); at != std::string::npos; at = out.find("vrcp", at + 1)) ++n;
    return n;
  };
  CHECK(rcpsInOutputLoop(true) == 0);
  CHECK(rcpsInOutputLoop(false) > 0);
  // Causal too (the last step of a q block is a diagonal one).
  CHECK(rcpsInOutputLoop(true, true) == 0);
  CHECK(rcpsInOutputLoop(false, true) > 0);
}

// head_overlap: the slab loop's first iterations in the score dot's block up
// to V's latch are marked as VPU work the dot hides (dsl::OverlapWithMxu),
// and the block holds 9 of them instead of 5: an unmasked step (the score
// dot's block, the loop's trips of two iterations, p x V's block) is shorter
// (seq 2048: 50,758 -> 49,189 cycles).
namespace {

struct Step {
  int head = 0, bundles = 0, scoreBlockMms = 0;
};

// An unmasked step of kernel1024 (q block 1's kv block 0 is below the
// diagonal when causal; every step without): the score dot's block (the
// prologue's group and the head iterations, 20 exps each: 4 slabs of 4 score
// vregs and an alpha), the loop's trips, its latch and the block after it.
Step unmaskedStep(const codegen::TargetInfo& t, const lib::FlashAttentionParams& p) {
  std::string text = kernel1024(t, p).machineText;
  // Bundle counts per block, in order.
  std::regex label(R"(^([a-z]+)\d+:\s+# bundles (\d+)\.\.(\d+))");
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  std::vector<std::pair<std::string, int>> sizes;
  while (std::getline(in, line))
    if (std::regex_search(line, m, label))
      sizes.push_back({m[1], int(std::stoll(m[3]) - std::stoll(m[2]))});
  std::vector<Block> bs = blocks(text);
  REQUIRE(bs.size() == sizes.size());
  Step s;
  for (size_t b = 0; b + 3 < bs.size(); ++b) {
    if (count(bs[b].text, "mxu.wpush.t") == 0) continue;
    REQUIRE(bs[b + 1].kind == "loop");
    REQUIRE(bs[b + 3].kind == "exit");
    s.head = count(bs[b].text, "vexp") / 20 - 1;
    s.scoreBlockMms = count(bs[b].text, "mxu.mm");
    const int trips = (512 / 32 - 2 - s.head) / 2;
    s.bundles =
        sizes[b].second + trips * (sizes[b + 1].second + sizes[b + 2].second) + sizes[b + 3].second;
    break;
  }
  return s;
}

}  // namespace

TEST_CASE("flash attention's score dot block hides more of the slab loop") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  auto withHeadOverlap = [&](bool headOverlap) {
    lib::FlashAttentionParams p = blocks512();
    p.headOverlap = headOverlap;
    return unmaskedStep(t, p);
  };
  Step on = withHeadOverlap(true), off = withHeadOverlap(false);
  CHECK(on.head == 9);
  CHECK(off.head == 5);
  INFO("step bundles " << on.bundles << " against " << off.bundles);
  CHECK(on.bundles < off.bundles - 50);
}

// pv_early: p x V of the groups the score dot's block finishes (12 head
// iterations and the prologue's group: 13 groups, 8 of them as many as v5e's
// 32 result slots per MXU hold, 4 row tiles each) starts in that block, each
// group's 4 row tiles on the 4 MXUs (16 mms) in its own slot set; the block
// after the loop pops them. The step is shorter (seq 2048: 49,020 -> 46,294
// cycles).
TEST_CASE("flash attention's p x V starts in the score dot's block") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  lib::FlashAttentionParams p = blocks512();
  p.accSlots = t.accSlots;
  Step early = unmaskedStep(t, p);
  p.pvEarly = 0;
  Step late = unmaskedStep(t, p);
  CHECK(late.head == 9);
  CHECK(early.head == 12);
  // The score dot: 64 row tiles x 4 MXUs.
  CHECK(late.scoreBlockMms == 256);
  CHECK(early.scoreBlockMms == 256 + 8 * 16);
  INFO("step bundles " << early.bundles << " against " << late.bundles);
  CHECK(early.bundles < late.bundles - 100);
}

// score_next: an unmasked step's softmax (16 groups of 20 exps) runs in one
// basic block under the next step's score dot (128 transposed K pushes, 256
// mms on v5e's 4 MXUs). The q block's first step makes its own scores and,
// where a next step follows, that one's (two score dots in the block); a
// later step finds its scores ready (by parity: two variants each) and makes
// the next step's scores or, the q block's last, none. Every such block
// holds the step's p x V too (16 groups x 16 mms): no slab loop. The first
// step writes m, l and acc without reading them (no init, no alphas: 16
// exps a group); 1 / l (64 reciprocals) only in steps that make no next
// scores (a later step's overwrites it).
TEST_CASE("flash attention's next score dot runs under the softmax") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  lib::FlashAttentionParams p = blocks512();
  p.accSlots = t.accSlots;
  p.scoreNext = true;
  std::vector<Block> bs = blocks(kernel1024(t, p).machineText);
  std::map<std::pair<int, int>, int> steps;  // (score dots, p x V mms) -> blocks
  int first = 0;
  for (const Block& b : bs) {
    const int dots = count(b.text, "mxu.wpush.t") / 128;
    if (count(b.text, "vexp") == 16 * 16 && dots == 2) {
      ++first;
      CHECK(count(b.text, "vrcp") == 0);
    }
    if (count(b.text, "vexp") != 16 * 20) continue;
    ++steps[{dots, count(b.text, "mxu.mm") - dots * 256}];
    CHECK(count(b.text, "vrcp") == (dots == 0 ? 64 : 0));
  }
  CHECK(first == 1);                // the first step, a next one follows
  CHECK(steps[{1, 16 * 16}] == 2);  // later steps, a next one follows
  CHECK(steps[{0, 16 * 16}] == 2);  // later steps, the q block's last
}

// score_next_q: q block 0's last step makes q block 1's first scores, so
// that step finds them ready (256 exps, its own m, l and acc) and q block
// 1's first step with its own score dot is gone. In the ready blocks the
// softmax runs from the start under the next dot: the scheduler's tries
// with a small register reserve for overlap work (Scheduler.cpp,
// kOverlapWorkReserves) keep the dot's weight loads from holding the exps
// back (with the full reserve: no exp for 191 bundles after the first ones).
TEST_CASE("flash attention's last step makes the next q block's first scores") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  lib::FlashAttentionParams p = blocks512();
  p.accSlots = t.accSlots;
  p.scoreNext = true;
  p.scoreNextQ = true;
  REQUIRE(lib::flashScoreNextQ(1024, 1024, 128, p));
  int ownFirst = 0, readyFirst = 0, readyWithNext = 0;
  for (const Block& b : blocks(kernel1024(t, p).machineText)) {
    const int exps = count(b.text, "vexp"), dots = count(b.text, "mxu.wpush.t") / 128;
    if (exps == 16 * 16 && dots == 2) ++ownFirst;
    if (exps == 16 * 16 && dots == 1) ++readyFirst;
    if (exps != 16 * 20 || dots != 1) continue;
    ++readyWithNext;
    std::istringstream in(b.text);
    std::string line;
    int gap = 0, longest = 0;
    bool started = false;
    while (std::getline(in, line)) {
      if (line.find("vexp") != std::string::npos) {
        if (started) longest = std::max(longest, gap);
        started = true;
        gap = 0;
      } else {
        ++gap;
      }
    }
    INFO("the longest run without an exp: " << longest << " bundles");
    CHECK(longest < 150);
  }
  CHECK(ownFirst == 1);    // q block 0 (the head's first)
  CHECK(readyFirst == 1);  // q block 1's, ready
  // Ready steps with a next score dot: q block 0's last (kv 1, q block 1's
  // first scores) and the parity variants the code holds for longer rows.
  CHECK(readyWithNext >= 1);
  // Not causal, an even number of K blocks and two q blocks or more.
  CHECK_FALSE(lib::flashScoreNextQ(1536, 1536, 128, p));  // 3 K blocks
  CHECK_FALSE(lib::flashScoreNextQ(512, 1024, 128, p));   // one q block
  p.scoreNext = false;                                    // score_next_q builds on score_next
  CHECK_FALSE(lib::flashScoreNextQ(1024, 1024, 128, p));
  p.scoreNext = true;
  // Causal: the diagonal step in parts makes them (any number of K blocks),
  // not with the diagonal in one part.
  p.causal = true;
  CHECK(lib::flashScoreNextQ(1536, 1536, 128, p));
  // q's two buffers (2 MiB at 2048 rows) fill a quarter of an 8 MiB limit;
  // the causal third score buffer (1 MiB) does not fit beside them.
  const int64_t limit = p.vmemLimitBytes;
  p.vmemLimitBytes = int64_t(8) << 20;
  CHECK_FALSE(lib::flashScoreNextQ(2048, 2048, 128, p));
  p.causal = false;
  CHECK(lib::flashScoreNextQ(2048, 2048, 128, p));
  p.causal = true;
  p.vmemLimitBytes = limit;
  p.causalParts = 1;
  CHECK_FALSE(lib::flashScoreNextQ(1024, 1024, 128, p));
}

// In that block V's latch and the early p x V starts (8 groups, ~500 MXU
// instructions, all overlap work) come two groups per iteration: all at once
// they filled the scheduler's 400-instruction overlap window and the next
// slabs' exps waited ~230 bundles for the MXUs to take them.
TEST_CASE("flash attention's early p x V starts leave the EUP busy") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  lib::FlashAttentionParams p = blocks512();
  p.accSlots = t.accSlots;
  p.scoreNext = true;
  int checked = 0;
  for (const Block& b : blocks(kernel1024(t, p).machineText)) {
    if (count(b.text, "vexp") != 16 * 20 || count(b.text, "mxu.wpush.t") != 128) continue;
    // The longest run of bundles (lines) without an exp from V's pushes on
    // (before it the next dot's pushes hold the exps back ~190 bundles).
    std::istringstream in(b.text);
    std::string line;
    int gap = 0, longest = 0;
    bool latched = false;
    while (std::getline(in, line)) {
      latched = latched || line.find("mxu.wpush.bf") != std::string::npos;  // V's, not K^T's
      if (line.find("vexp") != std::string::npos) {
        if (latched) longest = std::max(longest, gap);
        gap = 0;
      } else {
        ++gap;
      }
    }
    INFO("the longest run without an exp after V's latch: " << longest << " bundles");
    CHECK(latched);
    CHECK(longest < 100);
    ++checked;
  }
  CHECK(checked == 2);
}
