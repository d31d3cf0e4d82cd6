"""Import time and cold compile time of an installed tilelang_mlir (the
wheel's targets: import at most 0.5 s, the seed GEMM for sm_90a at most 1 s,
ptxas included). Run with the interpreter of the environment to measure:

    .venv-wheeltest/bin/python scripts/wheel_timings.py
"""

import os
import time

t0 = time.perf_counter()
import tilelang_mlir as tl  # noqa: E402
from tilelang_mlir import ir  # noqa: E402,F401  (loads the native library)

t1 = time.perf_counter()
from tilelang_mlir.kernels import gemm  # noqa: E402

program = gemm.matmul(1024, 1024, 1024, 128, 128, 32)
t2 = time.perf_counter()
tl.compile(program, out_idx=[2], target="cuda:sm_90a", pass_configs={"tl.disable_cache": True})
t3 = time.perf_counter()
print(f"package: {os.path.dirname(tl.__file__)}")
print(f"import tilelang_mlir + MLIR bindings: {t1 - t0:.3f} s")
print(f"cold compile of the seed GEMM for sm_90a (ptxas included): {t3 - t2:.3f} s")
