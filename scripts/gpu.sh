#!/usr/bin/env bash
# The one GPU entry point: on a machine with an NVIDIA GPU, from the
# repository root,
#
#   make gpu-test                 # = scripts/gpu.sh (tests examples sanitize)
#   scripts/gpu.sh SUITE...       # some suites only
#
# Suites (each runs, whatever the others gave; the exit status is non-zero
# when any of them failed, and a table at the end says which):
#   tests        every test of test/python marked `gpu` (pytest -m gpu over
#                the whole folder: the marker decides, no list); JOBS=N
#                runs them on N pytest-xdist workers (default 1: one process);
#                TESTS_LIMIT=S interrupts pytest after S seconds (it then
#                reports what ran and fails)
#   examples     every examples/*/*.py with --target cuda (each checks its
#                result against a reference and exits non-zero when wrong)
#   sanitize     compute-sanitizer memcheck and racecheck over
#                test/python/support/sanitize_kernels.py (fails on any error or hazard)
#   distributed  examples/distributed/tensor_parallel.py under torchrun on
#                every GPU (needs two or more; in the default set when the
#                machine has them)
#   bench-NAME   benchmarks/NAME.py with $ARGS (bench-distributed under
#                torchrun on every GPU); never in the default set
#
# The package: where dist/ holds a wheel for this interpreter (make wheel
# WHEEL_PYTHON=python3.12, carried to the GPU machine), it is installed into
# a temporary folder with this tree's Python sources over it (kernels JIT-
# compile with the wheel's compiler); else .venv/bin/python of a built
# checkout (make build); else $PYTHON (default python3) must import it.
# Kernels are cached in $TILELANG_MLIR_CACHE_DIR (default /tmp/tlcache), so
# a second call (another suite) reuses them. Logs land in $OUT (default
# /tmp/gpu-test): SUITE.log each.
#
# On the device tool (10 minutes a command), one suite a call fits:
#   scripts/gpu.sh tests   then   scripts/gpu.sh examples sanitize
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-test}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TILELANG_MLIR_CACHE_DIR=${TILELANG_MLIR_CACHE_DIR:-/tmp/tlcache}

PY=${PYTHON:-python3}
TAG=$($PY -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")') || exit 2
WHL=$(ls dist/tilelang_mlir-*-"$TAG"-*.whl 2>/dev/null | head -1)
if [ -n "$WHL" ]; then
  SITE=$(mktemp -d /tmp/gpu-test-site-XXXX)
  $PY -m pip install --no-index --no-deps --quiet --target "$SITE" "$WHL" || exit 2
  cp -r python/tilelang_mlir/. "$SITE/tilelang_mlir/"
  # (as gpu_campaign_device.sh: ml_dtypes from a carried .whl/ where missing)
  if ! $PY -c "import ml_dtypes" 2>/dev/null && ls .whl/ml_dtypes*.whl >/dev/null 2>&1; then
    $PY -m pip install --no-index --no-deps --quiet --target "$SITE" .whl/ml_dtypes*.whl || exit 2
  fi
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"  # (the caller's path after it)
  echo "package: $WHL with this tree's Python sources ($SITE)"
elif [ -z "${PYTHON:-}" ] && [ -x .venv/bin/python ]; then
  PY=.venv/bin/python
  echo "package: the built checkout (.venv/bin/python)"
fi
$PY - <<'EOF' || { echo "no usable GPU or package: nothing run" >&2; exit 2; }
import torch, tilelang_mlir
assert torch.cuda.is_available(), "torch sees no CUDA GPU"
print(f"{torch.cuda.get_device_name()} x{torch.cuda.device_count()}, torch {torch.__version__}, "
      f"tilelang_mlir from {tilelang_mlir.__file__}")
EOF
GPUS=$($PY -c "import torch; print(torch.cuda.device_count())")

if [ $# -eq 0 ]; then
  set -- tests examples sanitize
  [ "$GPUS" -ge 2 ] && set -- "$@" distributed
fi

tests() {
  local jobs=${JOBS:-1} par=()
  if [ "$jobs" -gt 1 ] && $PY -c "import xdist" 2>/dev/null; then par=(-n "$jobs"); fi
  local limit=()
  [ -n "${TESTS_LIMIT:-}" ] && limit=(timeout -s INT "$TESTS_LIMIT")
  "${limit[@]}" $PY -m pytest -q -m gpu -p no:cacheprovider -rfE "${par[@]}" test/python
  # (exit 5, no test collected, is a failure here: the marker selects none)
}

examples() {
  local status=0 ex
  for ex in examples/*/*.py; do
    echo "-- $ex"
    $PY "$ex" --target cuda 2>&1 | tail -4
    [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "FAILED: $ex"; status=1; }
  done
  return $status
}

sanitize() {
  local tool sanitizer status=0
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  [ -n "$sanitizer" ] || { echo "FAILED: no compute-sanitizer on this machine"; return 1; }
  for tool in memcheck racecheck; do
    "$sanitizer" --tool $tool --report-api-errors no --error-exitcode 9 \
      $PY test/python/support/sanitize_kernels.py > "$OUT/sanitize_$tool.log" 2>&1
    local rc=$?
    echo "compute-sanitizer $tool: exit $rc ($(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' "$OUT/sanitize_$tool.log" | tail -1))"
    [ $rc -eq 0 ] || { tail -20 "$OUT/sanitize_$tool.log"; status=1; }
  done
  return $status
}

torchrun_all() {
  [ "$GPUS" -ge 2 ] || { echo "FAILED: $GPUS GPU(s); torchrun needs two or more"; return 1; }
  $PY -m torch.distributed.run --nproc-per-node "$GPUS" "$@"
}

distributed() {
  # Compile once before the ranks race for the cache.
  $PY examples/distributed/tensor_parallel.py --target cuda || return 1
  torchrun_all examples/distributed/tensor_parallel.py --target cuda
}

bench() {
  local name=$1
  [ -f "benchmarks/$name.py" ] || { echo "FAILED: no benchmarks/$name.py"; return 1; }
  if [ "$name" = distributed ]; then
    torchrun_all benchmarks/distributed.py ${ARGS:-}
  else
    $PY "benchmarks/$name.py" ${ARGS:-}
  fi
}

declare -A RESULT
failed=0
for suite in "$@"; do
  case "$suite" in
  tests|examples|sanitize|distributed) run=("$suite") ;;
  bench-*) run=(bench "${suite#bench-}") ;;
  *) echo "no suite '$suite' (tests examples sanitize distributed bench-NAME)" >&2; exit 2 ;;
  esac
  echo "== $suite"
  start=$SECONDS
  "${run[@]}" 2>&1 | tee "$OUT/$suite.log"
  rc=${PIPESTATUS[0]}
  RESULT[$suite]="exit $rc, $((SECONDS - start)) s"
  [ "$rc" -eq 0 ] || failed=1
done
echo "== summary ($OUT)"
for suite in "$@"; do echo "$suite: ${RESULT[$suite]}"; done
[ $failed -eq 0 ] && echo "gpu-test: all passed" || echo "gpu-test: FAILED"
exit $failed
