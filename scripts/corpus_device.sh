#!/bin/bash
# On the GPU machine (the device tool), from the repository root: install the
# cp312 wheel of dist/, overlay this tree's Python sources, install the
# corpus's pure-Python dependencies from ${DEPS:-.corpus-deps} (pip download -r
# requirements/corpus.txt), and run TileLang's examples from
# ${EXAMPLES:-.tl-examples} (docs/compat.md says how to prepare both); with
# GPUTESTS, those GPU test files run alongside. Results land in $OUT.
WHL=$(ls dist/*cp312*.whl | head -1)
python3 -m pip install --no-index --no-deps --quiet ${DEPS:-.corpus-deps}/*.whl 2>&1 | grep -v WARNING
python3 -c "import fla, einops; print('fla', fla.__file__)" 2>&1 | tail -1
rm -rf /tmp/wsite && python3 -m pip install --no-index --no-deps --quiet --target /tmp/wsite "$WHL" 2>&1 | grep -v WARNING
cp -r python/tilelang_mlir/. /tmp/wsite/tilelang_mlir/
export PYTHONPATH=/tmp/wsite TILELANG_MLIR_CACHE_DIR=/tmp/tlcache
if [ -n "$GPUTESTS" ]; then
  (python3 -m pytest -q -m gpu -p no:cacheprovider $GPUTESTS > $OUT/gputests.txt 2>&1; echo "rc=$?" >> $OUT/gputests.txt) &
fi
python3 scripts/tilelang_corpus.py --examples ${EXAMPLES:-.tl-examples} --jobs ${JOBS:-6} --timeout ${TMO:-200} \
   --logs /tmp/logs --json $OUT/corpus.json --md $OUT/compat.md --gpu "NVIDIA H200" ${ONLY:+--only $ONLY} 2>&1 | tail -70
wait
tar czf $OUT/logs.tgz -C /tmp logs
tail -5 $OUT/gputests.txt 2>/dev/null
