// Truncated and byte-mutated versions of every shared HLO file and every test
// input go through the parser, the verifier, the printer and the passes:
// each must give an error or a module, never crash, assert or hang. Labelled
// "sanitize": CI runs it under ASan + UBSan, so it is kept to a few seconds.
#include <catch2/catch.hpp>
#include <random>

#include "TestFiles.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloPrinter.h"
#include "compiler/hlo/HloVerifier.h"
#include "compiler/passes/PassPipeline.h"

using namespace tpusim::hlo;

namespace {

// Variants per file; big files get fewer (each parse reads the whole file).
int variantsFor(size_t size) { return size > 100000 ? 12 : size > 20000 ? 48 : 200; }

int64_t gParsed = 0, gRejected = 0;

void exercise(const std::string& text, const std::string& name) {
  ParseResult r = parseHloText(text, name);
  if (!r.ok()) {
    ++gRejected;
    // An error is a located message, never empty.
    CHECK(r.error.find("error:") != std::string::npos);
    return;
  }
  ++gParsed;
  for (auto& m : r.modules) {
    VerifierResult v = verifyModule(*m);
    std::string printed = printModule(*m);
    ParseResult again = parseHloText(printed, name + ".printed");
    // What the printer writes, the parser reads (if the module verified;
    // unverified modules may hold shapes the printer cannot spell).
    if (v.ok()) {
      INFO(again.error);
      CHECK(again.ok());
      if (text.size() < 20000) {
        tpusim::passes::PassPipeline p;
        std::string err;
        p.addPasses("inline,dot-canonicalize,algsimp,constant-folding,cse,dce", &err);
        CHECK(p.run(*m, &err));
        INFO(err);
      }
    }
  }
}

const char kInteresting[] = "{}()[],=%\":/*\n 0-.x<T";

}  // namespace

TEST_CASE("truncated files never crash the parser", "[hlo][fuzz]") {
  for (const auto& f : hlotest::hloFiles()) {
    std::string text = hlotest::readFile(f);
    INFO(f);
    int n = variantsFor(text.size());
    std::mt19937_64 rng(std::hash<std::string>{}(f));
    for (int k = 0; k < n; ++k) {
      size_t cut = k < n / 2 ? text.size() * k / (n / 2) : rng() % (text.size() + 1);
      exercise(text.substr(0, cut), f);
    }
  }
  CHECK(gRejected > 0);
}

TEST_CASE("mutated files never crash the parser", "[hlo][fuzz]") {
  for (const auto& f : hlotest::hloFiles()) {
    const std::string original = hlotest::readFile(f);
    if (original.empty()) continue;
    INFO(f);
    int n = variantsFor(original.size());
    std::mt19937_64 rng(std::hash<std::string>{}(f) ^ 0x5eed);
    for (int k = 0; k < n; ++k) {
      std::string text = original;
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        size_t at = rng() % text.size();
        switch (rng() % 5) {
          case 0:
            text[at] = static_cast<char>(rng() % 256);
            break;
          case 1:
            text[at] = kInteresting[rng() % (sizeof(kInteresting) - 1)];
            break;
          case 2:
            text.erase(at, 1 + rng() % 8);
            break;
          case 3:
            text.insert(at, 1, kInteresting[rng() % (sizeof(kInteresting) - 1)]);
            break;
          default:
            text.insert(at, text.substr(rng() % text.size(), 1 + rng() % 16));
            break;
        }
      }
      exercise(text, f);
    }
  }
  CHECK(gParsed + gRejected > 0);
}

TEST_CASE("hostile inputs: deep nesting, huge numbers, odd bytes", "[hlo][fuzz]") {
  const std::string deep = std::string(100000, '(');
  for (const std::string& text : {
           "ENTRY e {\n ROOT p = " + deep + " parameter(0)\n}\n",
           std::string("ENTRY e {\n ROOT c = f32[1,1] constant(") + std::string(50000, '{') + "\n}",
           std::string("ENTRY e {\n ROOT p = f32[") + std::string(5000, '9') + "] parameter(0)\n}",
           std::string("ENTRY e {\n ROOT p = f32[1099511627776,1099511627776] parameter(0)\n}\n"),
           std::string("ENTRY e {\n ROOT p = f32[2] parameter(999999999999)\n}\n"),
           std::string(
               "ENTRY e {\n a = f32[2] parameter(0)\n ROOT s = f32[2] slice(a), "
               "slice={[9223372036854775807:-9223372036854775807:9223372036854775807]}\n}\n"),
           std::string("ENTRY e {\n a = f32[2] parameter(0)\n z = f32[] constant(0)\n ROOT p = "
                       "f32[2] pad(a, z), padding=9223372036854775807_9223372036854775807\n}\n"),
           std::string("ENTRY e {\n ROOT p = f32[2] parameter(0), metadata={op_name=\"\\"),
           std::string("\0\0\0\xff\xfe", 5),
           std::string("/* never closed"),
           std::string("HloModule m, a={{{{{{{{{{{{{{{{{{{{{{{{{"),
           std::string("ENTRY e {\n ROOT t = tuple(t)\n}\n"),
           std::string("ENTRY e {\n a = tuple(b)\n ROOT b = tuple(a)\n}\n"),
       }) {
    exercise(text, "hostile.hlo");
  }
}
