#!/bin/bash
# TileLang's own tests (testing/python of a pinned checkout, copied into
# .tl-src: mkdir .tl-src && cp -r CHECKOUT/testing .tl-src/ &&
# git -C CHECKOUT rev-parse --short HEAD > .tl-src/COMMIT) on the GPU machine
# (the device tool), from the repository root; results in $OUT.
#
#   IMPL=ours COMMIT=<this tree's commit> bash scripts/conformance_device.sh
#                                                      # carrying dist/<cp312 wheel> and .tl-src
#   IMPL=tilelang bash scripts/conformance_device.sh   # TileLang's PyPI wheel and its
#                                                      # dependencies' wheels in $TLW
#
# ours: the cp312 wheel with this tree's Python over it; with GPUTESTS (test
# files or folders, e.g. test/python), their GPU tests run beside on TESTS_N
# pytest-xdist workers (GPUTESTS_PER_FILE=1: one pytest process per file,
# TESTS_N at a time, a summary per file in $OUT/gputests.txt). tilelang: TileLang
# itself, the denominator (docs/compat.md). Its wheels (tilelang,
# apache-tvm-ffi, torch-c-dlpack-ext, z3-solver, cloudpickle, psutil, tqdm:
# over one call's 64 MiB) are copied into $TLW over two calls back to back.
# Then, here: python scripts/tilelang_conformance.py --merge OURS.json TILELANG.json
set -u
OUT=${OUT:?run on the device machine, where OUT is set}
IMPL=${IMPL:-ours}
SRC=/tmp/tl-src
[ -d .tl-src/testing/python ] && { rm -rf $SRC; cp -r .tl-src $SRC; }
[ -d $SRC/testing/python ] || { echo "no .tl-src/testing/python (carry it)"; exit 2; }
# TileLang's tests import helpers from its examples (carried as .tl-examples)
[ -d $SRC/examples ] || [ ! -d .tl-examples ] || ln -s "$(pwd)/.tl-examples" $SRC/examples
. scripts/device_site.sh
site_ours  # our pytest plugin serves both runs
export PYTHONUNBUFFERED=1 TILELANG_MLIR_CACHE_DIR=/tmp/tlcache PYTHONPATH=/tmp/wsite
if [ "$IMPL" = tilelang ]; then
  site_tilelang
  export PYTHONPATH=/tmp/tlsite:/tmp/wsite TILELANG_CACHE_DIR=/tmp/tl-cache
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/card.txt
if [ -n "${GPUTESTS:-}" ] && [ -n "${GPUTESTS_PER_FILE:-}" ]; then
  # one pytest process per file, TESTS_N at a time: a sticky CUDA error (an
  # illegal address) fails the rest of its own file only, not every later
  # test of a shared xdist worker
  ( printf "%s\n" $GPUTESTS | xargs -P ${TESTS_N:-6} -I{} bash -c \
      'f={}; log=/tmp/gpufile_$(echo $f | tr "/:" "__").txt
       timeout -s INT ${TESTS_LIMIT:-400} python3 -m pytest -q -m gpu -p no:cacheprovider -rfE $f > $log 2>&1
       { echo "== $f: $(tail -1 $log)"; grep -E "^(FAILED|ERROR) " $log | head -12; grep -E "^E  " $log | head -6; } > $log.sum'
    cat /tmp/gpufile_*.sum > $OUT/gputests.txt ) &
elif [ -n "${GPUTESTS:-}" ]; then
  ( timeout -s INT ${TESTS_LIMIT:-400} python3 -m pytest -q -m gpu -p no:cacheprovider -rfE -n ${TESTS_N:-6} $GPUTESTS \
      > $OUT/gputests.txt 2>&1; echo "pytest exit $?" >> $OUT/gputests.txt ) &
fi
python3 scripts/tilelang_conformance.py --tilelang $SRC --tilelang-commit "$(cat $SRC/COMMIT)" \
  --impl $IMPL ${COMMIT:+--commit $COMMIT} --jobs ${JOBS:-8} --timeout ${TMO:-240} --deadline ${DEADLINE:-420} \
  --logs /tmp/conf_logs_$IMPL --json $OUT/conformance_$IMPL.json ${ONLY:+--only $ONLY} \
  > $OUT/conformance_$IMPL.txt 2>&1
tail -14 $OUT/conformance_$IMPL.txt
wait
[ -f $OUT/gputests.txt ] && tail -15 $OUT/gputests.txt
tar czf $OUT/conf_logs_$IMPL.tgz -C /tmp conf_logs_$IMPL
