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
config.substitutions.append(("%shared", config.tpusim_shared_dir))
config.substitutions.append(("%src", config.tpusim_src_root))
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "HOME", "TMPDIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
