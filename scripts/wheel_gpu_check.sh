#!/usr/bin/env bash
# The self-contained wheel on a GPU machine (issue 9's acceptance): installs
# the wheel alone (no dependencies: the machine's torch/numpy/cuda-bindings
# serve) into a temporary target folder, shows what its native library links
# against, then JIT-compiles and runs the seed GEMM, softmax and the GPU
# tests with it, and times import and a cold compile there.
#
#   scripts/wheel_gpu_check.sh dist/tilelang_mlir-0.1.0-cp312-cp312-manylinux_2_35_x86_64.whl
#
# Nothing from the source tree's python/ is imported: PYTHONPATH names only
# the target folder and the tests' helpers.
set -uo pipefail
cd "$(dirname "$0")/.."
WHEEL=${1:?usage: $0 WHEEL}
SITE=$(mktemp -d /tmp/tilelang-wheel-XXXX)
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
# Each compile is cold: a fresh kernel cache under the target folder.
export TILELANG_MLIR_CACHE_DIR="$SITE/.kernel-cache"

$PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$WHEEL" || exit 1
export PYTHONPATH="$SITE:$PWD/test/python"
echo "== installed $(basename "$WHEEL") into $SITE ($(du -sh "$SITE" | cut -f1))"
echo "== ldd of the native libraries"
for lib in $(find "$SITE/tilelang_mlir" -name '*.so'); do
  echo "-- ${lib#$SITE/}"; ldd "$lib" | sed 's/^/   /'
done
status=0
echo "== import and cold compile"
(cd /tmp && $PY "$OLDPWD/scripts/wheel_timings.py") || status=1
echo "== examples (JIT on this machine)"
for ex in examples/*/*.py; do
  out=$(cd /tmp && $PY "$OLDPWD/$ex" --target cuda 2>&1); rc=$?
  echo "-- $ex: exit $rc"; echo "$out" | tail -4
  [ $rc -eq 0 ] || status=1
done
echo "== GPU tests (JIT): every test of test/python marked gpu"
$PY -m pytest -q -p no:cacheprovider -m gpu test/python -rf 2>&1 | tail -15
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
$PY -c "import tilelang_mlir, os; print('tests used', os.path.dirname(tilelang_mlir.__file__))"
exit $status
