"""The kernel library: tuned tile programs with their configurations, the
host-side helpers they need (packers, wrappers that chain kernels) and
references to check them against.

- `gemm`: dense GEMM in float16, bfloat16 and float8 (`matmul`,
  `matmul_nt`), its configuration tables and autotuning.
- `gemm_sp`: 2:4 structured-sparse GEMM.
- `attention`: FlashAttention forward, backward and variable-length, flash
  decoding and MLA decoding (one module each).
- `dequant`: weight-only quantized GEMM and GEMV (int4/int8): kernels,
  packers and configuration tables.
- `gemv`, `rms_norm`, `softmax`, `silu_mul`: small memory-bound kernels.

Import a module (`from tilelang_mlir.kernels import gemm`); each program
factory returns a `T.prim_func` for `tl.compile`. `examples/` shows them
at work: each example compiles, checks and times a few of these programs.
"""
