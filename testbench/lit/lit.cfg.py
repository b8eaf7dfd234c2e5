# lit configuration for tpusim's tool tests. Each test file holds its RUN lines
# and CHECK lines together, as LLVM's tests do.
import os
import lit.formats

config.name = "tpusim"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".s", ".hlo", ".test", ".json"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tpusim_obj_root, "testbench", "lit")

path = os.pathsep.join([config.tpusim_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.environment["PATH"] = path
# A tool not built yet makes its tests fail far from the cause ("FileCheck: stdin
# is empty"): name the missing ones up front.
_missing = [t for t in getattr(config, "tpusim_tools", [])
            if not os.path.exists(os.path.join(config.tpusim_tools_dir, t))]
if _missing:
    lit_config.warning("tools not built in %s: %s; tests that run them fail. Build them first: "
                       "ninja -C %s %s" % (config.tpusim_tools_dir, ", ".join(_missing),
                                           config.tpusim_obj_root, " ".join(_missing)))
# The external HLO corpus (CMake setting TPUSIM_HLO_CORPUS): tests that read it
# say "REQUIRES: hlo-corpus" and are reported UNSUPPORTED when it is not there.
if config.tpusim_hlo_corpus and os.path.isdir(config.tpusim_hlo_corpus):
    config.available_features.add("hlo-corpus")
    config.substitutions.append(("%hlo_corpus", config.tpusim_hlo_corpus))
else:
    lit_config.note("the external HLO corpus is not there (TPUSIM_HLO_CORPUS='%s'): tests that "
                    "read it are UNSUPPORTED; configure with -DTPUSIM_HLO_CORPUS=<folder of .hlo "
                    "files> to run them" % config.tpusim_hlo_corpus)
config.substitutions.append(("%src", config.tpusim_src_root))
# tpusim-batch built with MPI (REQUIRES: mpi): %mpirun launches ranks on this
# one machine (oversubscribed: CI has 2 cores; root needs --allow-run-as-root).
if getattr(config, "tpusim_mpiexec", ""):
    config.available_features.add("mpi")
    root = " --allow-run-as-root" if os.geteuid() == 0 else ""
    config.substitutions.append(("%mpirun", config.tpusim_mpiexec + root + " --oversubscribe"))
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "HOME", "TMPDIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Debian's chromium (scripts/setup.sh) opens the profiler's report.html
# headless; tests that need it say "REQUIRES: chromium".
import shutil
if shutil.which("chromium"):
    config.available_features.add("chromium")
else:
    lit_config.note("chromium is not installed (scripts/setup.sh installs it): the report.html "
                    "browser test is UNSUPPORTED")
