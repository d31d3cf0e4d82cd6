#!/bin/bash
# On a GPU machine with several GPUs (device tool, nvidia-h200-x2 or
# larger), from the repository root, with the cp312 wheel of dist/ carried:
# the one-GPU tests of symmetric memory (world of one through NCCL), the
# example under torchrun on every GPU, then benchmarks/distributed.py with
# the arguments in $DIST_ARGS (default: every op, both model shapes, fp16).
# $NPROC overrides the number of processes (default: every GPU).
WHL=$(ls dist/*cp312*.whl | head -1)
rm -rf /tmp/wsite && python3 -m pip install --no-index --no-deps --quiet --target /tmp/wsite "$WHL" 2>&1 | grep -v WARNING
cp -r python/tilelang_mlir/. /tmp/wsite/tilelang_mlir/
export PYTHONPATH=/tmp/wsite TILELANG_MLIR_CACHE_DIR=/tmp/tlcache
NPROC=${NPROC:-$(nvidia-smi -L | wc -l)}
nvidia-smi topo -m 2>&1 | head -12
python3 -m pytest -q -m gpu -p no:cacheprovider test/python/test_distributed.py 2>&1 | tail -5
# Compile once before the ranks race for the cache.
python3 examples/distributed/tensor_parallel.py --target cuda 2>&1 | tail -4
torchrun --nproc-per-node "$NPROC" examples/distributed/tensor_parallel.py --target cuda 2>&1 | tail -6
torchrun --nproc-per-node "$NPROC" benchmarks/distributed.py ${DIST_ARGS:-} 2>&1 \
  | tee ${OUT:-/tmp}/distributed.txt | tail -60
exit 0
