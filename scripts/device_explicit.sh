#!/bin/bash
# On the GPU machine (device tool), from the repository root, with the cp312
# wheel of dist/ and .tl-examples carried: compute-sanitizer memcheck and
# racecheck over scripts/sanitize_kernels.py (with the explicitly
# warp-specialized GEMMs), then TileLang's explicit MLA decode program
# (examples/deepseek_mla/example_mla_decode_ws.py) alone on the GPU at
# batch 132, 128 heads, cache 4096 and 8192. Results land in $OUT.
WHL=$(ls dist/*cp312*.whl | head -1)
rm -rf /tmp/wsite && python3 -m pip install --no-index --no-deps --quiet --target /tmp/wsite "$WHL" 2>&1 | grep -v WARNING
cp -r python/tilelang_mlir/. /tmp/wsite/tilelang_mlir/
export PYTHONPATH=/tmp/wsite TILELANG_MLIR_CACHE_DIR=/tmp/tlcache
python3 scripts/sanitize_kernels.py 2>&1 | tail -2
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 scripts/sanitize_kernels.py \
    > "$OUT/sanitizer_$tool.log" 2>&1
  echo "compute-sanitizer $tool: exit $? ($(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1))"
done
cd ${EXAMPLES:-.tl-examples}/deepseek_mla
for ctx in 4096 8192; do
  echo "example_mla_decode_ws.py --kv_ctx $ctx"
  python3 -m tilelang_mlir.compat example_mla_decode_ws.py --kv_ctx $ctx 2>&1 | tail -2
  echo "example_mla_decode.py --kv_ctx $ctx"
  python3 -m tilelang_mlir.compat example_mla_decode.py --kv_ctx $ctx 2>&1 | tail -2
done
