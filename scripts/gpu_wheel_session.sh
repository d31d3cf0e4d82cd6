#!/bin/bash
# One call on the GPU machine (the device tool), from the repository root,
# carrying dist/<the cp312 wheel> (make wheel WHEEL_PYTHON=python3.12): installs
# the wheel with this tree's Python sources over it, then runs side by side
#   - every GPU-marked test of test/python (pytest -m gpu; all files, so none
#     is left out), JIT-compiling with the wheel's compiler;
#   - the random-program GPU campaign (test/fuzz/gpu_campaign.py, SEED, COUNT);
# with, first and alone, the launch-overhead benchmark and, beside the tests,
# where .tl-examples holds TileLang's deepseek_v32 folder, its sparse MLA
# forward through the compat route (the silent-NaN program of issue 43).
# Results land in $OUT: gputests.txt, the campaign's table.md / summary.json /
# campaign.tgz, launch.txt, sparse_mla.txt. Exits non-zero on any failure.
#
#   SEED=44 COUNT=1100 bash scripts/gpu_wheel_session.sh
set -u
OUT=${OUT:?run on the device machine, where OUT is set}
WHL=$(ls dist/*cp312*.whl 2>/dev/null | head -1)
[ -n "$WHL" ] || { echo "no dist/*cp312*.whl: make wheel WHEEL_PYTHON=python3.12 and carry it"; exit 2; }
rm -rf /tmp/wsite && python3 -m pip install --no-index --no-deps --quiet --target /tmp/wsite "$WHL" 2>&1 | grep -v WARNING
cp -r python/tilelang_mlir/. /tmp/wsite/tilelang_mlir/
export PYTHONPATH=/tmp/wsite PYTHONUNBUFFERED=1 TILELANG_MLIR_CACHE_DIR=/tmp/tlcache
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/card.txt
status=0
# The launch benchmark first, alone (host microseconds need a quiet machine).
timeout ${LAUNCH_LIMIT:-100} python3 benchmarks/launch_overhead.py > $OUT/launch.txt 2>&1 || status=1
tail -22 $OUT/launch.txt
(timeout -s INT ${TESTS_LIMIT:-420} python3 -m pytest -q -m gpu -p no:cacheprovider -rf \
   test/python > $OUT/gputests.txt 2>&1; echo "pytest exit $?" >> $OUT/gputests.txt) &
tests=$!
if [ -d .tl-examples/deepseek_v32 ]; then
  ( (cd .tl-examples/deepseek_v32 && timeout 300 python3 -m tilelang_mlir.compat sparse_mla_fwd.py) \
    > $OUT/sparse_mla.txt 2>&1; echo "sparse_mla exit $?" >> $OUT/sparse_mla.txt ) &
fi
if [ "${COUNT:-0}" -gt 0 ]; then
  LIMIT=${CAMPAIGN_LIMIT:-420} BUDGET=${CAMPAIGN_BUDGET:-330} \
    ARGS="--jobs ${CAMPAIGN_JOBS:-10} ${ARGS:-}" bash scripts/gpu_campaign_device.sh > $OUT/campaign.txt 2>&1
  echo "campaign exit $?" >> $OUT/campaign.txt
fi
wait
tail -25 $OUT/gputests.txt
grep -q "pytest exit 0" $OUT/gputests.txt || status=1
if [ "${COUNT:-0}" -gt 0 ]; then
  tail -30 $OUT/campaign.txt; grep -q "campaign exit 0" $OUT/campaign.txt || status=1
fi
if [ -f $OUT/sparse_mla.txt ]; then
  tail -6 $OUT/sparse_mla.txt; grep -q "sparse_mla exit 0" $OUT/sparse_mla.txt || status=1
fi
echo "session exit status $status"
exit $status
