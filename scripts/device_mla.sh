#!/bin/bash
# On the GPU machine (device tool), from the repository root, with the cp312
# wheel of dist/ carried: the MLA decode GPU tests, then
# benchmarks/mla_decode.py with the arguments in $MLA_ARGS, then (with
# $GEMM_ARGS / $ATTN_ARGS) the GEMM and FlashAttention benchmarks as a
# check that the wgmma kernels kept their speed. With $NCU set, an ncu
# profile of one seesaw split kernel (B=128, cache 8192) lands in $OUT.
WHL=$(ls dist/*cp312*.whl | head -1)
rm -rf /tmp/wsite && python3 -m pip install --no-index --no-deps --quiet --target /tmp/wsite "$WHL" 2>&1 | grep -v WARNING
cp -r python/tilelang_mlir/. /tmp/wsite/tilelang_mlir/
export PYTHONPATH=/tmp/wsite TILELANG_MLIR_CACHE_DIR=/tmp/tlcache
if [ -n "$TESTS" ]; then
  python3 -m pytest -q -m gpu -p no:cacheprovider $TESTS 2>&1 | tail -8
fi
if [ -n "$MLA_ARGS" ]; then
  python3 benchmarks/mla_decode.py $MLA_ARGS 2>&1 | tee $OUT/mla.txt | grep -v "^   ours" | tail -40
fi
[ -n "$GEMM_ARGS" ] && python3 benchmarks/gemm.py $GEMM_ARGS 2>&1 | tail -12
[ -n "$ATTN_ARGS" ] && python3 benchmarks/flash_attn.py $ATTN_ARGS 2>&1 | tail -10
if [ -n "$NCU" ]; then
  ncu --clock-control none --set full -k regex:main_kernel -c 1 -o $OUT/seesaw \
    python3 scripts/mla_profile_case.py > $OUT/ncu.log 2>&1; echo "ncu rc=$?"; tail -3 $OUT/ncu.log
fi
exit 0
