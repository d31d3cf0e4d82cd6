#!/usr/bin/env bash
# GPU checks of the NVIDIA backend.
#
#   scripts/gpu_check.sh prepare   (here, with the compiler) compiles every
#       GPU test kernel, the sanitizer kernels and the benchmark kernels for
#       sm_90a into .gpu-cache/ (the kernel cache), with no GPU needed;
#   scripts/gpu_check.sh run       (on the GPU machine, no compiler there)
#       runs the GPU tests from that cache, compute-sanitizer memcheck and
#       racecheck on the GEMM and softmax kernels, the benchmark and every
#       example, and prints a table.
#
# Only .gpu-cache/ and the source tree travel (python/ is importable as is:
# the runtime needs no MLIR).
set -uo pipefail
cd "$(dirname "$0")/.."
CACHE="$PWD/.gpu-cache"
EXAMPLES=$(ls examples/*/*.py)
TESTS="test/python/test_kernels.py test/python/test_frontend.py test/python/test_language_surface.py"

case "${1:-}" in
prepare)
  rm -rf "$CACHE"
  export TILELANG_MLIR_AOT_PREPARE=1 TILELANG_MLIR_CUDA_ARCH=${ARCH:-sm_90a} TILELANG_MLIR_CACHE_DIR="$CACHE"
  .venv/bin/python -m pytest -q -m gpu $TESTS || exit 1
  .venv/bin/python scripts/sanitize_kernels.py || exit 1
  .venv/bin/python benchmarks/basic_kernels.py || exit 1
  .venv/bin/python benchmarks/launch_overhead.py || exit 1
  for ex in $EXAMPLES; do
    .venv/bin/python - "$ex" <<'PY' || exit 1
import runpy, sys
from tilelang_mlir.runtime.cuda import NoCUDADevice
sys.argv = [sys.argv[1], "--target", "cuda"]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except NoCUDADevice:
    print(f"compiled {sys.argv[0]} (no GPU here)")
PY
  done
  echo "prepared $(ls "$CACHE" | wc -l) cache files ($(du -sh "$CACHE" | cut -f1))"
  ;;
run)
  export PYTHONPATH="$PWD/python:$PWD/test/python" TILELANG_MLIR_OFFLINE=1 TILELANG_MLIR_CACHE_DIR="$CACHE"
  export PYTHONUNBUFFERED=1
  OUT=${OUT:-/tmp}
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -m pytest -q -m gpu $TESTS test/python/test_cuda_runtime.py -rf 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
  tests=${PIPESTATUS[0]}
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 scripts/sanitize_kernels.py \
      > "$OUT/sanitizer_$tool.log" 2>&1
    echo "compute-sanitizer $tool: exit $? ($(grep -c 'ERROR SUMMARY' "$OUT/sanitizer_$tool.log") summaries; $(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1))"
  done
  python3 benchmarks/basic_kernels.py 2>&1 | tee "$OUT/bench.log"
  python3 benchmarks/launch_overhead.py --profile 2>&1 | tee "$OUT/launch.log" | head -8
  examples=0
  for ex in $EXAMPLES; do
    python3 "$ex" --target cuda 2>&1 | tail -3 | tee -a "$OUT/examples.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || examples=1
  done
  [ $tests -eq 0 ] && [ $examples -eq 0 ]
  ;;
*)
  echo "usage: $0 prepare|run" >&2
  exit 2
  ;;
esac
