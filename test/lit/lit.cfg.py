# -*- Python -*-
# lit configuration for tilelang-mlir's FileCheck tests.

import os

import lit.formats

config.name = "tilelang-mlir"
# lit 23 rejects external shells; the internal one runs our RUN lines.
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tile_obj_root, "test", "lit")

# Tools: our own build first, then FileCheck/not/count from the LLVM wheel.
for directory in (config.tile_tools_dir, config.llvm_tools_dir):
    config.environment["PATH"] = os.pathsep.join(
        [directory, config.environment.get("PATH", os.environ.get("PATH", ""))]
    )
config.substitutions.append(("%python", config.python_executable))
config.environment["PYTHONPATH"] = config.python_package_dir
