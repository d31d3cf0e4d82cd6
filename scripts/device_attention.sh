#!/bin/bash
# Issue 21's GPU work (attention: decoding, backward, forward) in one pass.
#   scripts/device_attention.sh prepare [BENCHES]  (here) compiles the GPU tests of
#       $TESTS, scripts/sanitize_kernels.py and the benchmarks BENCHES (default:
#       "flash_decode flash_attn_bwd"; each with $<NAME>_ARGS) into one kernel
#       cache, .gpu-cache-attn, packed into .gpu-cache-attn.tar.xz (carry it);
#   scripts/device_attention.sh run [BENCHES]      (on the GPU machine, through the
#       device tool) runs the same from the cache: the tests, compute-sanitizer
#       memcheck and racecheck over sanitize_kernels.py, then each benchmark,
#       logs in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
CACHE="$PWD/.gpu-cache-attn"
PACK="$PWD/.gpu-cache-attn.tar.xz"  # (xz: gzip packs the cubins to over 64 MiB)
TESTS=${TESTS:-"test/python/test_bulk_atomic_add.py test/python/test_flash_decode.py test/python/test_mla_decode.py test/python/test_flash_attn_bwd.py"}
mode=${1:-}
shift
BENCHES=${*:-"flash_decode flash_attn_bwd"}
args_of() { local v="${1^^}_ARGS"; echo "${!v:-}"; }
case "$mode" in
prepare)
  start=$SECONDS
  rm -rf "$CACHE" "$PACK"
  export TILELANG_MLIR_AOT_PREPARE=1 TILELANG_MLIR_CUDA_ARCH=sm_90a TILELANG_MLIR_CACHE_DIR="$CACHE"
  if [ "$TESTS" != skip ]; then
    .venv/bin/python -m pytest -q -m gpu -p no:cacheprovider -rf $TESTS | grep -E "^FAILED|passed|failed" | tail -20; [ "${PIPESTATUS[0]}" = 0 ] || exit 1
    .venv/bin/python scripts/sanitize_kernels.py || exit 1
  fi
  for b in $BENCHES; do .venv/bin/python benchmarks/$b.py $(args_of $b) | tail -3 || exit 1; done
  git describe --always --dirty > "$CACHE/prepared_commit"
  tar cf - -C "$CACHE" . | xz -T0 -6 > "$PACK" || exit 1
  echo "prepared $(ls "$CACHE" | wc -l) files in $((SECONDS - start)) s: $(du -h --apparent-size "$PACK" | cut -f1)"
  [ "$(stat -c %s "$PACK")" -le $((64 * 1048576)) ] || { echo "the pack is over 64 MiB" >&2; exit 1; }
  ;;
run)
  rm -rf "$CACHE" && mkdir -p "$CACHE" || exit 1
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$CACHE" || exit 1
  export PYTHONPATH="$PWD/python:$PWD/test/python" TILELANG_MLIR_OFFLINE=1 TILELANG_MLIR_CACHE_DIR="$CACHE"
  export PYTHONUNBUFFERED=1
  OUT=${OUT:-/tmp}
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  if [ "$TESTS" != skip ]; then
    python3 -m pytest -q -m gpu -p no:cacheprovider -rfE $TESTS 2>&1 | tee "$OUT/tests.log" | tail -15
    for tool in memcheck racecheck; do
      compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 scripts/sanitize_kernels.py \
        > "$OUT/sanitizer_$tool.log" 2>&1
      echo "compute-sanitizer $tool: exit $? ($(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1))"
    done
  fi
  for b in $BENCHES; do
    python3 benchmarks/$b.py $(args_of $b) 2>&1 | tee "$OUT/$b.log" | grep -v "^   " | tail -40
  done
  ;;
*)
  echo "usage: $0 prepare|run [BENCHES]" >&2; exit 2 ;;
esac
