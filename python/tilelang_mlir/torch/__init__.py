"""The PyTorch integration, one layer above the kernel library (`kernels/`):

- `ops`: the kernel library as `torch.library` operators
  (`import tilelang_mlir.ops as tlops`);
- `library`: any compiled kernel as a custom operator
  (`tl.library.custom_op`);
- `models`: `transformers` models on those operators (`use_tilelang`, the
  paged cache, CUDA-graph decoding);
- `distributed`: symmetric buffers over torch.distributed, and simulated
  ranks for the CPU target (`tl.distributed`);
- `sparse`: 2:4 sparse operands for `T.gemm_sp` from torch tensors.

Users import them by their old names (`tilelang_mlir.ops`,
`tilelang_mlir.models`, ...): each of those modules is this package's
module under a second name (the same object, so patching one patches the
other). Importing this package imports none of them (nor torch).
"""
