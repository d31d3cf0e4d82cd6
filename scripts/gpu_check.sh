#!/usr/bin/env bash
# GPU checks of the NVIDIA backend.
#
#   scripts/gpu_check.sh prepare   (here, with the compiler) compiles every
#       GPU test kernel, the sanitizer kernels and the benchmark kernels for
#       sm_90a into .gpu-cache/ (the kernel cache), with no GPU needed;
#   scripts/gpu_check.sh run       (on the GPU machine, no compiler there)
#       runs the GPU tests from that cache, compute-sanitizer memcheck and
#       racecheck on the GEMM and softmax kernels, the benchmark and every
#       example, and prints a table; it exits non-zero when a test, a
#       sanitizer run or an example failed. (With the compiler or a wheel
#       on the GPU machine, scripts/gpu.sh, `make gpu-test`, is simpler.)
#
#   scripts/gpu_check.sh prepare-gemm [ARGS]   (here) compiles every kernel of
#       benchmarks/gemm.py (every config of every case) into .gpu-cache-gemm/
#       and packs it into .gpu-cache-gemm.tar.gz (the folder holds each
#       kernel's IR at every stage, over 100 MB; the pack is a tenth of it);
#   scripts/gpu_check.sh run-gemm [ARGS]       (on the GPU machine) unpacks it
#       and runs the GEMM benchmark alone: one table, ours / cuBLAS / Triton.
#       ARGS go to benchmarks/gemm.py (--quick, --shapes, --no-autotune ...);
#       a full prepare serves any ARGS of the run.
#
#   scripts/gpu_check.sh prepare-attn [ARGS]   (here) compiles every kernel of
#       benchmarks/flash_attn.py (every config of every case) into
#       .gpu-cache-attn/ and packs it into .gpu-cache-attn.tar.gz (a few MB);
#   scripts/gpu_check.sh run-attn [ARGS]       (on the GPU machine) unpacks it
#       and runs the FlashAttention benchmark alone: one table, ours / cuDNN /
#       torch's FlashAttention-2 and memory-efficient SDPA / Triton. ARGS go to
#       benchmarks/flash_attn.py (--dims, --causal, --no-autotune); a full
#       prepare serves any ARGS of the run.
#   scripts/gpu_check.sh prepare-attn-bwd / run-attn-bwd [ARGS]: the same for
#       the FlashAttention backward (benchmarks/flash_attn_bwd.py: ours /
#       the backward of each SDPA backend; --dims, --causal, --no-autotune).
#
#   scripts/gpu_check.sh prepare-dequant [ARGS]   (here) compiles every kernel
#       of benchmarks/dequant.py (every config of the int4/int8 dequant GEMM
#       and the GEMV cases) into .gpu-cache-dequant/ and packs it into
#       .gpu-cache-dequant.tar.gz (about 2 MiB; refused over 64 MiB);
#   scripts/gpu_check.sh run-dequant [ARGS]       (on the GPU machine) unpacks
#       it and runs the dequant benchmark: ours / cuBLAS fp16 / Triton, GB/s
#       against the measured copy bandwidth. ARGS go to benchmarks/dequant.py.
#   scripts/gpu_check.sh prepare-mla [ARGS]    (here) compiles every kernel of
#       benchmarks/mla_decode.py (each split count of every case) into
#       .gpu-cache-mla/ and packs it into .gpu-cache-mla.tar.gz;
#   scripts/gpu_check.sh run-mla [ARGS]        (on the GPU machine) unpacks it
#       and runs the MLA decode benchmark alone: one table, ours / torch
#       gather+bmm / Triton split-KV, in TFLOP/s and GB/s of cache. ARGS go to
#       benchmarks/mla_decode.py (--batch, --cache, --no-autotune).
#   scripts/gpu_check.sh prepare-decode [ARGS] (here) compiles every kernel of
#       benchmarks/flash_decode.py (each config and split count of every
#       case) into .gpu-cache-decode/ and packs it into .gpu-cache-decode.tar.gz;
#   scripts/gpu_check.sh run-decode [ARGS]     (on the GPU machine) unpacks it
#       and runs the flash decoding benchmark alone: ours / torch SDPA (each
#       backend) / Triton split-KV, time and GB/s of KV cache against the
#       measured copy bandwidth. ARGS go to benchmarks/flash_decode.py
#       (--batch, --kv-heads, --cache, --no-autotune).
#   scripts/gpu_check.sh prepare-gemm-sp [ARGS]   (here) compiles every kernel
#       of benchmarks/gemm_sp.py into .gpu-cache-gemm-sp/ and packs it into
#       .gpu-cache-gemm-sp.tar.gz;
#   scripts/gpu_check.sh run-gemm-sp [ARGS]       (on the GPU machine) runs
#       the 2:4 sparse GEMM benchmark: ours / dense cuBLAS / torch's
#       semi-structured sparse (cuSPARSELt, CUTLASS), dense-equivalent
#       TFLOP/s. ARGS go to benchmarks/gemm_sp.py (--sizes, --dtypes).
#
#   scripts/gpu_check.sh prepare-launch [ARGS] (here) compiles the kernels of
#       benchmarks/launch_overhead.py into .gpu-cache-launch.tar.gz;
#   scripts/gpu_check.sh run-launch [ARGS]     (on the GPU machine) builds the
#       native launcher, runs the launcher's GPU tests (test_launcher.py and
#       test_cuda_runtime.py, native path on, then off) and the launch-overhead
#       benchmark with --profile: ours (native and Python path) / torch / Triton
#       / TileLang where installed. ARGS go to benchmarks/launch_overhead.py.
#
# Only .gpu-cache/ (or .gpu-cache-gemm.tar.gz) and the source tree travel
# (python/ is importable as is: the runtime needs no MLIR). The GPU runs
# build the native launcher (runtime/launch.cpp) first, with the machine's
# C++ compiler; without one, kernels launch through the Python path.
set -uo pipefail
cd "$(dirname "$0")/.."
CACHE="$PWD/.gpu-cache"
# The benchmarks with a prepare/run pair of their own: name -> script.
declare -A BENCH=([gemm]=gemm [attn]=flash_attn [attn-bwd]=flash_attn_bwd [dequant]=dequant [mla]=mla_decode [decode]=flash_decode [gemm-sp]=gemm_sp [launch]=launch_overhead)

# build_native: the native launcher into the source tree (GPU runs use
# python/ as is); where it cannot be built, the Python path serves.
build_native() {
  PYTHONPATH="$PWD/python" python3 -m tilelang_mlir.runtime.launcher build \
    || echo "the native launcher was not built: kernels launch through the Python path" >&2
}

# prepare_bench NAME ARGS...: compiles every kernel of benchmarks/SCRIPT.py
# into .gpu-cache-NAME/ and packs it into .gpu-cache-NAME.tar.gz (refused
# over 64 MiB, the most a device run carries).
prepare_bench() {
  local name=$1 cache="$PWD/.gpu-cache-$1" pack="$PWD/.gpu-cache-$1.tar.gz" start=$SECONDS
  shift
  rm -rf "$cache" "$pack"
  export TILELANG_MLIR_AOT_PREPARE=1 TILELANG_MLIR_CUDA_ARCH=${ARCH:-sm_90a} TILELANG_MLIR_CACHE_DIR="$cache"
  .venv/bin/python "benchmarks/${BENCH[$name]}.py" "$@" || exit 1
  # The commit the kernels were compiled at (the benchmark's header prints it).
  git describe --always --dirty > "$cache/prepared_commit" 2>/dev/null
  tar czf "$pack" -C "$cache" . || exit 1
  echo "prepared $(ls "$cache" | wc -l) cache files ($(du -sh --apparent-size "$cache" | cut -f1)) in $((SECONDS - start)) s;" \
       "packed into $(basename "$pack") ($(du -h --apparent-size "$pack" | cut -f1)): carry it to the GPU machine"
  [ "$(stat -c %s "$pack")" -le $((64 * 1048576)) ] || { echo "the pack is over 64 MiB" >&2; exit 1; }
}

# run_bench NAME ARGS...: unpacks .gpu-cache-NAME.tar.gz (or uses the folder)
# and runs benchmarks/SCRIPT.py from it without a compiler; log in $OUT.
run_bench() {
  local name=$1 cache="$PWD/.gpu-cache-$1" pack="$PWD/.gpu-cache-$1.tar.gz"
  shift
  if [ -f "$pack" ]; then
    rm -rf "$cache" && mkdir -p "$cache" && tar xzf "$pack" -C "$cache" || exit 1
  fi
  [ -d "$cache" ] || { echo "no $pack or $cache: run '$0 prepare-$name' where the compiler is" >&2; exit 1; }
  build_native
  export PYTHONPATH="$PWD/python" TILELANG_MLIR_OFFLINE=1 TILELANG_MLIR_CACHE_DIR="$cache"
  export PYTHONUNBUFFERED=1
  if [ "$name" = launch ]; then
    # The launcher's GPU tests (hand-written PTX, no cache needed), native
    # path on, then off; then the benchmark.
    PYTHONPATH="$PYTHONPATH:$PWD/test/python" python3 -m pytest -q -m gpu -rfs \
      test/python/runtime/test_launcher.py test/python/runtime/test_cuda_runtime.py 2>&1 | tail -15
    local on=${PIPESTATUS[0]}
    TILELANG_MLIR_NATIVE_LAUNCH=0 PYTHONPATH="$PYTHONPATH:$PWD/test/python" python3 -m pytest \
      -q -m gpu -rfs test/python/runtime/test_launcher.py test/python/runtime/test_cuda_runtime.py 2>&1 | tail -5
    local off=${PIPESTATUS[0]}
    echo "launcher GPU tests: native path exit $on, Python path exit $off"
    python3 "benchmarks/${BENCH[$name]}.py" --profile "$@" 2>&1 | tee "${OUT:-/tmp}/${name}_bench.log"
    local bench=${PIPESTATUS[0]}
    [ "$on" -eq 0 ] && [ "$off" -eq 0 ] && [ "$bench" -eq 0 ]
    exit $?
  fi
  python3 "benchmarks/${BENCH[$name]}.py" "$@" 2>&1 | tee "${OUT:-/tmp}/${name}_bench.log"
  exit "${PIPESTATUS[0]}"
}
EXAMPLES=$(ls examples/*/*.py)
# The GPU tests: every test of test/python marked `gpu` (the marker decides).
TESTS=test/python

case "${1:-}" in
prepare)
  rm -rf "$CACHE"
  export TILELANG_MLIR_AOT_PREPARE=1 TILELANG_MLIR_CUDA_ARCH=${ARCH:-sm_90a} TILELANG_MLIR_CACHE_DIR="$CACHE"
  .venv/bin/python -m pytest -q -m gpu $TESTS || exit 1
  .venv/bin/python test/python/support/sanitize_kernels.py || exit 1
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
  build_native
  export PYTHONPATH="$PWD/python:$PWD/test/python" TILELANG_MLIR_OFFLINE=1 TILELANG_MLIR_CACHE_DIR="$CACHE"
  export PYTHONUNBUFFERED=1
  OUT=${OUT:-/tmp}
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -m pytest -q -m gpu $TESTS -rf 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
  tests=${PIPESTATUS[0]}
  sanitizer=0
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 test/python/support/sanitize_kernels.py \
      > "$OUT/sanitizer_$tool.log" 2>&1
    rc=$?
    echo "compute-sanitizer $tool: exit $rc ($(grep -c 'ERROR SUMMARY' "$OUT/sanitizer_$tool.log") summaries; $(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1))"
    [ $rc -eq 0 ] || sanitizer=1
  done
  python3 benchmarks/basic_kernels.py 2>&1 | tee "$OUT/bench.log"
  python3 benchmarks/launch_overhead.py 2>&1 | tee "$OUT/launch.log" | head -14
  examples=0
  for ex in $EXAMPLES; do
    python3 "$ex" --target cuda 2>&1 | tail -3 | tee -a "$OUT/examples.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || examples=1
  done
  [ $tests -eq 0 ] && [ $sanitizer -eq 0 ] && [ $examples -eq 0 ]
  ;;
prepare-*|run-*)
  name=${1#*-}
  [ -n "${BENCH[$name]:-}" ] || { echo "no benchmark '$name' (have: ${!BENCH[*]})" >&2; exit 2; }
  if [ "${1%%-*}" = prepare ]; then prepare_bench "$name" "${@:2}"; else run_bench "$name" "${@:2}"; fi
  ;;
*)
  echo "usage: $0 prepare|run|prepare-NAME|run-NAME [benchmark args]; NAME: ${!BENCH[*]}" >&2
  exit 2
  ;;
esac
