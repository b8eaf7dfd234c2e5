// The packed s8x2 buffer layout (isa::BufferDesc::pairRows): where each dense
// byte goes, the round trip, the validity rules, and the layout's trip through
// the assembler, the disassembler and the .tpuprog container.
#include <catch2/catch.hpp>

#include "isa/Assembler.h"
#include "isa/Disassembler.h"
#include "isa/ProgramFile.h"

using namespace tpusim::isa;

namespace {

BufferDesc packed(int64_t rows, int64_t cols, uint32_t S) {
  BufferDesc b;
  b.name = "w";
  b.shape = {rows, cols};
  b.dtype = DType::S8;
  b.role = BufferRole::Input;
  b.sizeBytes = uint64_t(rows * cols);
  b.pairRows = S;
  return b;
}

}  // namespace

TEST_CASE("the packed layout puts rows k and k + S of a chunk in one 16-bit pair, by tiles",
          "[isa][layout]") {
  const uint32_t S = 4;
  BufferDesc b = packed(16, 256, S);  // 2 chunks of 8 rows, 2 column tiles
  std::vector<uint8_t> dense(b.sizeBytes);
  for (size_t i = 0; i < dense.size(); ++i) dense[i] = uint8_t(i * 7 + i / 256);
  std::vector<uint8_t> stored = packBuffer(b, dense);
  auto at = [&](int64_t r, int64_t c) { return dense[size_t(r * 256 + c)]; };
  // Chunk 0, tile 0, row 1, lane 3: rows 1 (low) and 5 (high).
  const size_t tile = S * 128 * 2, chunk = 2 * S * 256;
  CHECK(stored[1 * 256 + 3 * 2] == at(1, 3));
  CHECK(stored[1 * 256 + 3 * 2 + 1] == at(5, 3));
  // Chunk 1, tile 1, row 2, lane 7: rows 10 and 14 of column 135.
  CHECK(stored[chunk + tile + 2 * 256 + 7 * 2] == at(10, 135));
  CHECK(stored[chunk + tile + 2 * 256 + 7 * 2 + 1] == at(14, 135));
  CHECK(unpackBuffer(b, stored) == dense);
  b.pairRows = 0;
  CHECK(packBuffer(b, dense) == dense);
}

TEST_CASE("the packed layout is for whole chunks and tiles of s8 HBM inputs", "[isa][layout]") {
  std::string why;
  CHECK(pairLayoutValid(packed(256, 128, 128), &why));
  CHECK_FALSE(pairLayoutValid(packed(384, 128, 128), &why));
  CHECK(why.find("chunks") != std::string::npos);
  CHECK_FALSE(pairLayoutValid(packed(256, 192, 128), &why));
  CHECK(why.find("tiles of 128") != std::string::npos);
  BufferDesc f = packed(256, 128, 128);
  f.dtype = DType::Bf16;
  CHECK_FALSE(pairLayoutValid(f, &why));
  BufferDesc o = packed(256, 128, 128);
  o.role = BufferRole::Output;
  CHECK_FALSE(pairLayoutValid(o, &why));
}

TEST_CASE("pair_rows survives assembly, disassembly and the .tpuprog file", "[isa][layout]") {
  const char* src =
      ".chip v5e\n"
      ".buffer w, shape=[512, 256], dtype=s8, space=hbm, addr=0x0, role=input, pair_rows=128\n"
      "halt\n";
  Program p;
  std::vector<Diagnostic> diags;
  REQUIRE(assemble(src, "t.s", &p, &diags));
  REQUIRE(p.buffers.at(0).pairRows == 128);
  CHECK(disassembleProgram(p).find("pair_rows=128") != std::string::npos);
  std::vector<uint8_t> bytes;
  std::string error;
  REQUIRE(serializeProgram(p, &bytes, &error));
  Program q;
  REQUIRE(parseProgram(bytes.data(), bytes.size(), "t.tpuprog", &q, &error));
  CHECK(q.buffers.at(0).pairRows == 128);
  // A layout the shape cannot have is an assembler error, naming the rule.
  Program bad;
  diags.clear();
  CHECK_FALSE(
      assemble(".chip v5e\n.buffer w, shape=[300, 256], dtype=s8, space=hbm, addr=0x0, "
               "role=input, pair_rows=128\nhalt\n",
               "t.s", &bad, &diags));
  REQUIRE_FALSE(diags.empty());
  CHECK(diags[0].message.find("chunks") != std::string::npos);
}
