#!/bin/bash
# On the GPU machine (device tool), from the repository root, with the cp312
# wheel of dist/ carried: issue 22's GPU checks. $TESTS (default: the
# PyTorch-facing GPU tests: every operator's CUDA path with opcheck, CUDA
# graphs, reduce-overhead compile, the tiny Llama with CUDAGraphDecoder,
# the world-of-one symmetric-memory tests) with pytest -m gpu on $JOBS
# workers; then, unless $MODEL_ARGS is "skip", benchmarks/model.py
# $MODEL_ARGS (default: the 8-layer model, B8 x 2048, 128 decode steps),
# its output in $OUT/model.txt.
WHL=$(ls dist/*cp312*.whl | head -1)
rm -rf /tmp/wsite && python3 -m pip install --no-index --no-deps --quiet --target /tmp/wsite "$WHL" 2>&1 | grep -v WARNING
cp -r python/tilelang_mlir/. /tmp/wsite/tilelang_mlir/
export PYTHONPATH=/tmp/wsite TILELANG_MLIR_CACHE_DIR=/tmp/tlcache PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
TESTS=${TESTS:-"test/python/test_ops_gpu.py test/python/test_models.py test/python/test_distributed.py"}
if [ "$TESTS" != "skip" ]; then
  python3 -m pytest -q -m gpu -p no:cacheprovider -n ${JOBS:-8} -rfE $TESTS 2>&1 \
    | tee ${OUT:-/tmp}/tests.txt | tail -40
fi
if [ "${MODEL_ARGS:-}" != "skip" ]; then
  python3 benchmarks/model.py ${MODEL_ARGS:-} 2>&1 | tee ${OUT:-/tmp}/model.txt | tail -40
fi
exit 0
