#!/bin/bash
# One call on the GPU machine (the device tool), from the repository root,
# carrying dist/<the cp312 wheel> (make wheel WHEEL_PYTHON=python3.12): installs
# the wheel with this tree's Python sources over it, then runs every
# GPU-marked test of test/python (pytest -m gpu; all files, so none is left
# out; JIT-compiling with the wheel's compiler), alone (TESTS_FIRST=0: beside
# the rest), then side by side
#   - the documentation's tutorials with TUTORIAL_TARGET=cuda;
#   - the random-program GPU campaign (test/fuzz/gpu_campaign.py, SEED, COUNT);
#   - where .tl-src holds TileLang's testing/ (a pinned checkout's:
#     mkdir .tl-src && cp -r CHECKOUT/testing .tl-src/ &&
#     git -C CHECKOUT rev-parse --short HEAD > .tl-src/COMMIT, carried), its
#     tests through the compat route (scripts/tilelang_conformance.py; a
#     conformance count, not a failure of the session);
# with, first and alone, the launch-overhead benchmark and, beside the tests,
# where .tl-examples holds TileLang's deepseek_v32 folder, its sparse MLA
# forward through the compat route (the silent-NaN program of issue 43).
# Results land in $OUT: gputests.txt, the campaign's table.md / summary.json /
# campaign.tgz, launch.txt, sparse_mla.txt. Exits non-zero on any failure.
#
#   SEED=44 COUNT=1100 PYTEST_N=8 bash scripts/gpu_wheel_session.sh
set -u
OUT=${OUT:?run on the device machine, where OUT is set}
. scripts/device_site.sh
site_ours
export PYTHONPATH=/tmp/wsite PYTHONUNBUFFERED=1 TILELANG_MLIR_CACHE_DIR=/tmp/tlcache WSITE_READY=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/card.txt
status=0
# The launch benchmark first, alone (host microseconds need a quiet machine).
timeout ${LAUNCH_LIMIT:-100} python3 benchmarks/launch_overhead.py > $OUT/launch.txt 2>&1 || status=1
tail -22 $OUT/launch.txt
# The GPU tests, alone first where TESTS_FIRST=1 (the default: beside the
# campaign's compile workers, 3 pytest workers did not finish in 330 s on
# the H100), else beside the rest.
run_tests() {
  timeout -s INT ${TESTS_LIMIT:-420} python3 -m pytest -q -m gpu -p no:cacheprovider -rf \
    ${PYTEST_N:+-n $PYTEST_N} test/python > $OUT/gputests.txt 2>&1
  echo "pytest exit $?" >> $OUT/gputests.txt
}
if [ "${TESTS_FIRST:-1}" = 1 ]; then run_tests; else run_tests & fi
if [ -d .tl-examples/deepseek_v32 ]; then
  ( (cd .tl-examples/deepseek_v32 && timeout 300 python3 -m tilelang_mlir.compat sparse_mla_fwd.py) \
    > $OUT/sparse_mla.txt 2>&1; echo "sparse_mla exit $?" >> $OUT/sparse_mla.txt ) &
fi
# The documentation's tutorials on the GPU (what each page tells a reader to
# run there: TUTORIAL_TARGET=cuda), one after another.
( for t in docs/tutorials/t*.py; do
    echo "== $t"; TUTORIAL_TARGET=cuda timeout 120 python3 "$t" > /tmp/tut.log 2>&1
    rc=$?; tail -3 /tmp/tut.log; echo "rc=$rc"
  done > $OUT/tutorials.txt 2>&1 ) &
if [ -d .tl-src/testing/python ]; then  # TileLang's own tests through the compat route
  ( timeout ${CONF_LIMIT:-420} python3 scripts/tilelang_conformance.py --tilelang .tl-src \
      --tilelang-commit "$(cat .tl-src/COMMIT 2>/dev/null)" --jobs ${CONF_JOBS:-4} --timeout 240 --deadline ${CONF_DEADLINE:-330} --logs /tmp/conf_logs \
      --json $OUT/conformance.json > $OUT/conformance.txt 2>&1
    tar czf $OUT/conf_logs.tgz -C /tmp conf_logs ) &
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
grep "rc=" $OUT/tutorials.txt | sort | uniq -c
grep -q "rc=[1-9]" $OUT/tutorials.txt && status=1
if [ -f $OUT/sparse_mla.txt ]; then
  tail -6 $OUT/sparse_mla.txt; grep -q "sparse_mla exit 0" $OUT/sparse_mla.txt || status=1
fi
echo "session exit status $status"
# The device hands back a few files: everything small in one archive, the
# test log and the campaign table beside it.
(cd $OUT && tar czf results.tgz --exclude results.tgz --exclude campaign.tgz --exclude conf_logs.tgz \
   $(ls | grep -v '\.tgz$') && find . -maxdepth 1 -type f ! -name '*.tgz' ! -name gputests.txt \
   ! -name table.md -delete)
exit $status
