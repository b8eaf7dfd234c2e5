// Kernel IR: printer, verifier and interpreter on hand-built functions.
#include <catch2/catch.hpp>

#include "isa/support/Numerics.h"
#include "kernels/llo/Interpreter.h"
#include "kernels/llo/Printer.h"
#include "kernels/llo/Verifier.h"

using namespace tpusim;
using namespace tpusim::kernels::llo;

namespace {

// f(x: vmem f32[16,256]) { for r in 0..16 step 8: for c: x[r, c] = exp(x[r, c]) + 1 }
std::unique_ptr<Function> expPlusOne() {
  auto fn = std::make_unique<Function>();
  fn->name = "exp_plus_one";
  Value* x = fn->addArg(Type::ref(MemSpace::Vmem, DType::F32, {16, 256}), "x");
  Builder b(fn.get(), &fn->body);
  Value* lo = b.sconst(0);
  Value* hi = b.sconst(16);
  Op* loop = b.forLoop(lo, hi, 8, "r");
  b.setBlock(&loop->regions[0]);
  Value* r = loop->regions[0].args[0];
  for (int c : {0, 128}) {
    Value* col = b.sconst(c);
    Value* t = b.create(OpKind::VLoad, {x, r, col}, {Type::tile(DType::F32)}, {1, 0xFF})->result();
    Value* e = b.vun(VecUn::Exp, t);
    Value* s = b.vbin(VecBin::Add, e, b.vconst(bitsOf(1.0f), DType::F32));
    b.create(OpKind::VStore, {s, x, r, col}, {}, {0xFF, 128});
  }
  return fn;
}

}  // namespace

TEST_CASE("tiled layout places 8 rows of a column tile in consecutive VMEM rows") {
  TiledLayout l = tiledLayout({2, 20, 300});
  CHECK(l.paddedRows == 24);
  CHECK(l.colTiles == 3);
  CHECK(l.matrices == 2);
  CHECK(l.row(0, 5, 0) == 5);
  CHECK(l.row(0, 5, 1) == 24 + 5);
  CHECK(l.row(1, 0, 0) == 72);
  CHECK(l.totalBytes() == 144 * 512);
  CHECK(refBytes(Type::ref(MemSpace::Hbm, DType::Bf16, {4, 4})) == 32);
}

TEST_CASE("printer shows ops, loops and types") {
  auto fn = expPlusOne();
  std::string text = printFunction(*fn);
  CHECK(text.find("func @exp_plus_one(%0: ref<vmem f32[16,256]> \"x\")") != std::string::npos);
  INFO(text);
  CHECK(text.find("for %3 = %1 to %2 step 8 {") != std::string::npos);
  CHECK(text.find("vun.exp") != std::string::npos);
  CHECK(text.find("vconst 1 (0x3f800000)") != std::string::npos);
  CHECK(text.find("sublanes=0xff lanes=128") != std::string::npos);
  CHECK(verifyFunction(*fn).empty());
}

TEST_CASE("interpreter runs tile ops with the machine's numerics") {
  auto fn = expPlusOne();
  auto buf = Buffer::make("x", fn->body.args[0]->type, 0);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 256; ++c) buf->at({r, c}) = bitsOf(float(r - c) / 64.0f);
  Interpreter interp;
  interp.run(*fn, {Arg::ofBuffer(buf.get())}, {});
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 256; ++c) {
      float want = std::exp(float(r - c) / 64.0f) + 1.0f;
      REQUIRE(floatOf(buf->at({r, c})) == want);
    }
}

TEST_CASE("verifier rejects use before definition, bad dtypes and bad bounds") {
  Function fn;
  fn.name = "bad";
  Value* x = fn.addArg(Type::ref(MemSpace::Vmem, DType::Bf16, {8, 128}), "x");
  Value* s = fn.addArg(Type::ref(MemSpace::Smem, DType::S32, {4}), "s");
  Builder b(&fn, &fn.body);
  Value* zero = b.sconst(0);
  Value* t =
      b.create(OpKind::VLoad, {x, zero, zero}, {Type::tile(DType::Bf16)}, {1, 0xFF})->result();
  b.vbin(VecBin::Add, t, t);  // bf16 arithmetic
  b.create(OpKind::VLoad, {x, zero, b.sconst(64)}, {Type::tile(DType::Bf16)}, {1, 0xFF});
  b.create(OpKind::VLoad, {s, zero}, {Type::tile(DType::S32)}, {1, 0xFF});  // SMEM
  Value* loose = fn.newValue(Type::scalar());
  b.sbin(ScalarBin::Add, loose, zero);
  auto errors = verifyFunction(fn);
  REQUIRE(errors.size() == 4);
  CHECK(errors[0].find("arithmetic on bf16/s8 tiles") != std::string::npos);
  CHECK(errors[1].find("column offset 64 is not a multiple of 128") != std::string::npos);
  CHECK(errors[2].find("which this op cannot access") != std::string::npos);
  CHECK(errors[3].find("used before it is defined") != std::string::npos);
}

TEST_CASE("XLU lane sum follows the pairwise tree, not a left-to-right sum") {
  TileData a{};
  // Values whose sum depends on the association: 1e8 and many 1s.
  for (int l = 0; l < 128; ++l) a[l] = bitsOf(l == 0 ? 1e8f : 1.0f);
  TileData r = tileReduceLanes(Reduce::Sum, DType::F32, a);
  float tree[128];
  for (int l = 0; l < 128; ++l) tree[l] = floatOf(a[l]);
  for (int w = 64; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) tree[l] = tree[l] + tree[l + w];
  float serial = 0;
  for (int l = 0; l < 128; ++l) serial += floatOf(a[l]);
  CHECK(floatOf(r[5]) == tree[0]);
  CHECK(tree[0] != serial);  // the test distinguishes the two orders
}

TEST_CASE("MXU dot accumulates in k order per chunk of the array size") {
  std::vector<uint32_t> a(256), b(256);
  for (int k = 0; k < 256; ++k) {
    a[k] = f32ToBf16Bits(k == 0 ? 16777216.0f : (k == 255 ? -16777216.0f : 1.0f));
    b[k] = f32ToBf16Bits(1.0f);
  }
  // 128-chunks: 2^24 (the +1s round away) plus (127 - 2^24) = 127; one 256-long
  // chunk loses all the +1s and ends at 0.
  uint32_t r128 = mxuDotBf16(a.data(), b.data(), 256, 128);
  uint32_t r256 = mxuDotBf16(a.data(), b.data(), 256, 256);
  float x = 0;
  for (int c = 0; c < 2; ++c) {
    float r = 0;
    for (int k = c * 128; k < c * 128 + 128; ++k) r = r + bf16BitsToF32(a[k]) * 1.0f;
    x = c == 0 ? r : x + r;
  }
  float y = 0;
  for (int k = 0; k < 256; ++k) y = y + bf16BitsToF32(a[k]);
  CHECK(floatOf(r128) == x);
  CHECK(floatOf(r256) == y);
  CHECK(x == 127.0f);
  CHECK(y == 0.0f);
}

TEST_CASE("interpreter matmul and DMA between HBM and VMEM") {
  Function fn;
  fn.name = "mm";
  Value* ah = fn.addArg(Type::ref(MemSpace::Hbm, DType::Bf16, {8, 128}), "a_hbm");
  Value* av = fn.addArg(Type::ref(MemSpace::Vmem, DType::Bf16, {8, 128}), "a");
  Value* bv = fn.addArg(Type::ref(MemSpace::Vmem, DType::Bf16, {128, 128}), "b");
  Value* cv = fn.addArg(Type::ref(MemSpace::Vmem, DType::F32, {8, 128}), "c");
  Value* sem = fn.addArg(Type::ref(MemSpace::Semaphore, DType::S32, {1}), "sem");
  Builder bl(&fn, &fn.body);
  Value* z = bl.sconst(0);
  bl.create(OpKind::DmaStart, {ah, z, z, av, z, z, sem, z}, {}, {8, 128});
  bl.create(OpKind::DmaWait, {ah, z, z, av, z, z, sem, z}, {}, {8, 128});
  bl.create(OpKind::Matmul, {cv, z, z, av, z, z, bv, z, z}, {}, {8, 128, 128, 0, 0, 0});
  REQUIRE(verifyFunction(fn).empty());
  auto A = Buffer::make("a_hbm", ah->type, 0);
  auto Av = Buffer::make("a", av->type);
  auto B = Buffer::make("b", bv->type);
  auto C = Buffer::make("c", cv->type);
  auto S = Buffer::make("sem", sem->type);
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 128; ++k) A->at({i, k}) = f32ToBf16Bits(float(i + k % 3));
  for (int k = 0; k < 128; ++k)
    for (int j = 0; j < 128; ++j) B->at({k, j}) = f32ToBf16Bits(k == j ? 2.0f : 0.0f);
  Interpreter in;
  in.run(fn,
         {Arg::ofBuffer(A.get()), Arg::ofBuffer(Av.get()), Arg::ofBuffer(B.get()),
          Arg::ofBuffer(C.get()), Arg::ofBuffer(S.get())},
         {});
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 128; ++j) REQUIRE(floatOf(C->at({i, j})) == 2.0f * float(i + j % 3));
  // The widening DMA wrote each bf16 to the low 16 bits of its VMEM word and
  // zeroed the upper half (it held poison before).
  CHECK((Av->at({0, 0}) >> 16) == 0);
  CHECK((Av->at({0, 0}) & 0xFFFF) == A->at({0, 0}));
  // A wait with no DMA started would deadlock the machine: an error here.
  Function w;
  w.name = "wait_only";
  Value* ws = w.addArg(Type::ref(MemSpace::Semaphore, DType::S32, {1}), "sem");
  Value* wa = w.addArg(ah->type, "a");
  Value* wb = w.addArg(av->type, "b");
  Builder wbld(&w, &w.body);
  Value* wz = wbld.sconst(0);
  wbld.create(OpKind::DmaWait, {wa, wz, wz, wb, wz, wz, ws, wz}, {}, {8, 128});
  auto S2 = Buffer::make("sem", sem->type);
  CHECK_THROWS_WITH(
      in.run(w, {Arg::ofBuffer(S2.get()), Arg::ofBuffer(A.get()), Arg::ofBuffer(Av.get())}, {}),
      Catch::Contains("never started"));
}
