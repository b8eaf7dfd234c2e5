// tpu-prof: prints the profile tpusim --profile DIR wrote (overview, op
// profile by category folded across layers, per layer), or compares two
// (tpu-prof diff A B). See docs/profiler.md.
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>

#include "sim/tools/tpu-prof/TpuProf.h"

namespace cl = llvm::cl;

static cl::OptionCategory category("tpu-prof options");
static cl::list<std::string> positional(cl::Positional, cl::desc("<DIR | diff A B>"), cl::OneOrMore,
                                        cl::cat(category));
static cl::opt<int> rows("rows",
                         cl::desc("Op rows per category (diff: changed ops listed); 0: all"),
                         cl::init(10), cl::cat(category));
static cl::opt<bool> layers("layers",
                            cl::desc("Expand each folded op into its instances (one per layer)"),
                            cl::cat(category));
static cl::opt<std::string> html("html",
                                 cl::desc("Also write the HTML report of the profile here (links "
                                          "to profile.json and the trace are relative)"),
                                 cl::value_desc("report.html"), cl::cat(category));
static cl::opt<bool> overview("overview", cl::desc("Print the overview only"), cl::cat(category));

int main(int argc, char** argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "tpu-prof: the XProf-style profile of a tpusim run\n\n"
                              "  tpusim model.hlo --profile prof     (writes prof/profile.json)\n"
                              "  tpu-prof prof                       overview + op profile\n"
                              "  tpu-prof diff prof-a prof-b         op-by-op comparison\n");
  if (rows < 0) {
    fmt::print(stderr, "tpu-prof: error: --rows must be >= 0 (0 lists every row), got {}\n",
               int(rows));
    return 1;
  }
  tpusim::prof::TpuProfArgs a;
  a.positional.assign(positional.begin(), positional.end());
  a.rows = size_t(int(rows));
  a.layers = layers;
  a.overviewOnly = overview;
  a.html = html;
  // "diff" with a different default: 25 changed ops.
  if (!a.positional.empty() && a.positional[0] == "diff" && rows.getNumOccurrences() == 0)
    a.rows = 25;
  return tpusim::prof::runTpuProf(a);
}
