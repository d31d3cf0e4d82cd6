#!/bin/bash
# TileLang's example programs on the GPU machine (the device tool), from the
# repository root; results in $OUT.
#
#   IMPL=ours COMMIT=<sha> bash scripts/corpus_device.sh  # carrying dist/<cp312 wheel>,
#                                                         # .tl-examples, .corpus-deps
#   IMPL=tilelang bash scripts/corpus_device.sh           # TileLang's PyPI wheel and its
#                                                         # dependencies' wheels in $TLW
#
# ours: the cp312 wheel with this tree's Python over it. tilelang: TileLang
# itself, the denominator (its wheels are copied into $TLW over two calls back
# to back, as for scripts/conformance_device.sh). The corpus's pure-Python
# dependencies come from ${DEPS:-.corpus-deps} (pip download -r
# requirements/corpus.txt), the examples from ${EXAMPLES:-.tl-examples}
# (docs/compat.md says how to prepare both). With GPUTESTS, those GPU test
# files run alongside. Then, here:
#   python scripts/tilelang_corpus.py --merge OURS.json TILELANG.json
set -u
OUT=${OUT:?run on the device machine, where OUT is set}
IMPL=${IMPL:-ours}
python3 -m pip install --no-index --no-deps --quiet ${DEPS:-.corpus-deps}/*.whl 2>&1 | grep -v WARNING
python3 -c "import fla, einops; print('fla', fla.__file__)" 2>&1 | tail -1
. scripts/device_site.sh
export PYTHONUNBUFFERED=1 TILELANG_MLIR_CACHE_DIR=/tmp/tlcache
if [ "$IMPL" = tilelang ]; then
  site_tilelang
  export PYTHONPATH=/tmp/tlsite TILELANG_CACHE_DIR=/tmp/tl-cache
else
  site_ours
  export PYTHONPATH=/tmp/wsite
fi
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/card.txt
if [ -n "${GPUTESTS:-}" ]; then
  ( timeout -s INT ${TESTS_LIMIT:-400} python3 -m pytest -q -m gpu -p no:cacheprovider -rfE -n ${TESTS_N:-6} $GPUTESTS \
      > $OUT/gputests.txt 2>&1; echo "pytest exit $?" >> $OUT/gputests.txt ) &
fi
python3 scripts/tilelang_corpus.py --examples ${EXAMPLES:-.tl-examples} --impl $IMPL --jobs ${JOBS:-6} \
   --timeout ${TMO:-200} ${DEADLINE:+--deadline $DEADLINE} --logs /tmp/corpus_logs_$IMPL \
   --json $OUT/corpus_$IMPL.json --gpu "$GPU" ${ONLY:+--only $ONLY} > $OUT/corpus_$IMPL.txt 2>&1
tail -8 $OUT/corpus_$IMPL.txt
wait
[ -f $OUT/gputests.txt ] && tail -15 $OUT/gputests.txt
tar czf $OUT/corpus_logs_$IMPL.tgz -C /tmp corpus_logs_$IMPL
