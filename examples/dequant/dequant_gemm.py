"""Weight-only quantized GEMM, as LLM inference runs it: C = A @ dequant(W)^T
with A (M, K) in float16/bfloat16 and W (N, K) stored as int4 or int8 with
one scale per group of `group` consecutive elements of a row (group 128).

The kernels, their packed formats and tuned configurations are in
python/tilelang_mlir/kernels/dequant/ (its docstring describes the formats):
`program` picks the kernel of a config (`default_config`: the regime's
first that fits: GEMV for M = 1, decode up to M = 16, prefill beyond),
`inputs_for` repacks the weights the way that kernel reads them. This
script quantizes random weights, runs the default kernel, checks it against
a float64 reference and prints the time and bandwidth.

    python examples/dequant/dequant_gemm.py [--target cpu|cuda] [--m M --n N --k K]
        [--bits 4|8] [--group 128] [--dtype float16|bfloat16]
"""

import argparse

import tilelang_mlir as tl
from tilelang_mlir.kernels.dequant import (PORTABLE_DECODE, PORTABLE_PAIRS, PORTABLE_PAIRS_PREFILL,
                                           PORTABLE_PREFILL, PORTABLE_TN, default_config,
                                           inputs_for, program, random_problem, reference)
from tilelang_mlir.testing import relative_error, to_numpy


def programs(M=16, N=8192, K=8192):
    return [("dequant_gemm_int4_f16_decode", program(M, N, K, 4, config=PORTABLE_DECODE), [3]),
            ("dequant_gemm_int8_bf16_decode",
             program(M, N, K, 8, dtype="bfloat16", config=PORTABLE_DECODE), [3]),
            ("dequant_gemm_int4_f16_prefill", program(4096, N, K, 4, config=PORTABLE_PREFILL),
             [3]),
            ("dequant_gemm_tn_int4_f16_decode", program(M, N, K, 4, config=PORTABLE_TN), [3]),
            ("dequant_gemm_tn_int8_bf16_decode",
             program(M, N, K, 8, dtype="bfloat16", config=PORTABLE_TN), [3]),
            ("dequant_gemm_pairs_int4_f16_decode", program(M, N, K, 4, config=PORTABLE_PAIRS),
             [3]),
            ("dequant_gemm_pairs_int8_f16_prefill",
             program(4096, N, K, 8, config=PORTABLE_PAIRS_PREFILL), [3]),
            ("dequant_gemv_int4_f16", program(1, N, K, 4), [3]),
            ("dequant_gemv_int8_f16", program(1, N, K, 8), [3]),
            ("dequant_gemv_int8_bf16", program(1, N, K, 8, dtype="bfloat16"), [3])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--k", type=int, default=8192)
    parser.add_argument("--bits", type=int, default=4, choices=[4, 8])
    parser.add_argument("--group", type=int, default=128)
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    args = parser.parse_args(argv)
    M, N, K, bits, group = args.m, args.n, args.k, args.bits, args.group
    config = default_config(M, N, K, bits, group, args.dtype)
    kernel = tl.compile(program(M, N, K, bits, group, args.dtype, config), out_idx=[3],
                        target=args.target)
    A, Wq, S = random_problem(M, N, K, bits, group, args.dtype, kernel.device)
    inputs = inputs_for(config, A, Wq, S, bits)  # what the kernel reads (packed, views)
    err = relative_error(to_numpy(kernel(*inputs)), reference(A, Wq, S, bits, group).numpy())
    seconds = kernel.time(*inputs)
    moved = Wq.numel() * Wq.element_size() + S.numel() * 2 + (M * K + M * N) * 2
    what = "GEMV" if M == 1 else "GEMM"
    print(f"target {kernel.target}: int{bits} dequant {what} {M}x{N}x{K} {args.dtype} "
          f"(group {group}), relative error {err:.1e}, {seconds * 1e6:.1f} us "
          f"({2 * M * N * K / seconds / 1e12:.2f} TFLOP/s, {moved / seconds / 1e9:.0f} GB/s)")
    if not err < 1e-2:
        raise SystemExit(f"FAILED: relative error {err:.1e}")
    return err


if __name__ == "__main__":
    main()
