"""Weight-only quantized GEMM, as LLM inference runs it: C = A @ dequant(W)^T
with A (M, K) in float16/bfloat16 and W (N, K) stored as int4 or int8 with
one scale per group of `group` consecutive elements of a row (group 128).

Packing (what `quantize` below produces and the kernel reads):
  * int8: `Wq` is (N, K) int8, w[n, k] = Wq[n, k] * S[n, k // group].
  * int4: `Wq` is (N, K // 2) uint8, two weights per byte, the even k in the
    low nibble, offset by 8 (nibble = q + 8 for q in [-8, 7]):
    w[n, k] = (((Wq[n, k // 2] >> 4 * (k % 2)) & 15) - 8) * S[n, k // group].
  * S is (N, K // group) in the activations' dtype.

The tile program copies A and the packed W tile into shared memory (the
pipeliner overlaps those copies with compute), unpacks and scales W into a
float16/bfloat16 tile in shared memory, and multiplies on the tensor cores
(T.gemm with W read K-major). The same program serves both regimes through
its tile sizes: decode (M = 1-16: block_M = 16, narrow blocks of N so that
the grid fills the GPU and W streams through at full bandwidth) and prefill
(M = 4096: 128x128 tiles, compute-bound).

    python examples/dequant/dequant_gemm.py [--target cpu|cuda] [--m M --n N --k K]
        [--bits 4|8] [--group 128] [--dtype float16|bfloat16]
"""

import argparse

import numpy as np
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.testing import relative_error, to_device, to_numpy

FullCol = T.GemmWarpPolicy.FullCol


def dequant_gemm(M, N, K, bits=4, group=128, block_M=16, block_N=64, block_K=128,
                 num_stages=3, threads=128, policy=FullCol, dtype="float16"):
    check_shapes(N, K, bits, group, block_K)
    storage = "uint8" if bits == 4 else "int8"
    per_byte = 8 // bits  # weights per stored byte

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), Wq: T.Tensor((N, K // per_byte), storage),
             S: T.Tensor((N, K // group), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            Wq_s = T.alloc_shared((block_N, block_K // per_byte), storage)
            W_s = T.alloc_shared((block_N, block_K), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // block_K, num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(Wq[bx * block_N, k * (block_K // per_byte)], Wq_s)
                if bits == 4:  # compile-time branch: one iteration per byte
                    for n, b in T.Parallel(block_N, block_K // 2, coalesced_width=4):
                        row = T.min(bx * block_N + n, N - 1)  # rows past N: any scale
                        if group % block_K == 0:  # one scale per row of the tile
                            s = T.cast(S[row, k * block_K // group], dtype)
                        else:
                            s = T.cast(S[row, (k * block_K + 2 * b) // group], dtype)
                        byte = T.int32(Wq_s[n, b])
                        W_s[n, 2 * b] = T.cast(T.cast((byte & 15) - 8, dtype) * s, dtype)
                        W_s[n, 2 * b + 1] = T.cast(T.cast((byte >> 4) - 8, dtype) * s, dtype)
                else:
                    for n, j in T.Parallel(block_N, block_K, coalesced_width=8):
                        row = T.min(bx * block_N + n, N - 1)
                        if group % block_K == 0:
                            s = T.cast(S[row, k * block_K // group], dtype)
                        else:
                            s = T.cast(S[row, (k * block_K + j) // group], dtype)
                        W_s[n, j] = T.cast(T.cast(Wq_s[n, j], dtype) * s, dtype)
                T.gemm(A_s, W_s, acc, transpose_B=True, policy=policy)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


def check_shapes(N, K, bits, group, block_K):
    """The layout rules of the packed format (clear errors instead of wrong
    results): whole groups, whole bytes and whole K tiles."""
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    if group <= 0 or K % group:
        raise ValueError(f"K = {K} is not a multiple of the group size {group}")
    if K % block_K:
        raise ValueError(f"K = {K} is not a multiple of block_K = {block_K}")


# Tile configurations: decode (M <= 16) and prefill. The benchmark tunes over
# each list; the first entry is the default. block_K divides the group size
# (128), so each row of a W tile has one scale.
DECODE = [
    dict(block_M=16, block_N=64, block_K=128, num_stages=4, threads=128),
    dict(block_M=16, block_N=32, block_K=128, num_stages=6, threads=128),
    dict(block_M=16, block_N=64, block_K=128, num_stages=8, threads=128),
    dict(block_M=16, block_N=128, block_K=128, num_stages=4, threads=256),
]
# Prefill: 256 threads keep the dequantized elements per thread (block_N *
# block_K / threads) at 32 next to the 64-per-thread accumulator; 128
# threads on 128x128 tiles spill.
PREFILL = [
    dict(block_M=128, block_N=128, block_K=64, num_stages=3, threads=256,
         policy=T.GemmWarpPolicy.Square),
    dict(block_M=128, block_N=256, block_K=32, num_stages=4, threads=256,
         policy=T.GemmWarpPolicy.Square),
    dict(block_M=128, block_N=128, block_K=32, num_stages=4, threads=256,
         policy=T.GemmWarpPolicy.Square),
]
# What programs() compiles for every target (CI assembles them for sm_80,
# sm_90a and the AMD chips): tiles that fit 64 KB of shared memory.
PORTABLE_DECODE = dict(block_M=16, block_N=64, block_K=128, num_stages=3, threads=128)
PORTABLE_PREFILL = dict(block_M=128, block_N=128, block_K=64, num_stages=2, threads=256,
                        policy=T.GemmWarpPolicy.Square)


def configs_for(M):
    return DECODE if M <= 16 else PREFILL


def program(M, N, K, bits=4, group=128, dtype="float16", config=None):
    """The tile program for (M, N, K) with the regime's default tiles."""
    config = dict(configs_for(M)[0] if config is None else config)
    while K % config["block_K"] and config["block_K"] > 16:  # K is a multiple of the group
        config["block_K"] //= 2
    return dequant_gemm(M, N, K, bits, group, dtype=dtype, **config)


# ---------------------------------------------------------------------------
# Host side: quantize/pack and the reference
# ---------------------------------------------------------------------------


def quantize(w, bits=4, group=128):
    """Symmetric per-group quantization of a float (N, K) torch tensor.
    Returns (Wq, S) in the packed format above, S in w's dtype."""
    if w.dim() != 2:
        raise ValueError(f"expected a 2-D weight, got shape {tuple(w.shape)}")
    N, K = w.shape
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    if K % group:
        raise ValueError(f"K = {K} is not a multiple of the group size {group}")
    qmax = 7 if bits == 4 else 127
    g = w.float().reshape(N, K // group, group)
    scale = (g.abs().amax(dim=2) / qmax).clamp_min(1e-8).to(w.dtype)  # rounded like the kernel's
    q = torch.round(g / scale.float()[:, :, None]).clamp(-qmax - 1, qmax).to(torch.int32)
    q = q.reshape(N, K)
    if bits == 8:
        return q.to(torch.int8).contiguous(), scale.contiguous()
    nib = (q + 8).to(torch.uint8)
    return (nib[:, 0::2] | (nib[:, 1::2] << 4)).contiguous(), scale.contiguous()


def unpack(Wq, bits=4):
    """The integer weights (N, K) int32 of a packed Wq (on Wq's device)."""
    if bits == 8:
        return Wq.to(torch.int32)
    b = Wq.to(torch.int32)
    q = torch.stack([(b & 15) - 8, (b >> 4) - 8], dim=2)
    return q.reshape(Wq.shape[0], 2 * Wq.shape[1])


def dequantize(Wq, S, bits=4, group=128):
    """dequant(W) as the kernel computes it: q * s in float32, rounded to
    S's dtype."""
    q = unpack(Wq, bits).float()
    s = S.float().repeat_interleave(group, dim=1)
    return (q * s).to(S.dtype)


def reference(A, Wq, S, bits=4, group=128):
    """A @ dequant(W)^T in float64."""
    w = dequantize(Wq.cpu(), S.cpu(), bits, group).double()
    return A.cpu().double() @ w.T


def random_problem(M, N, K, bits=4, group=128, dtype="float16", device="cpu"):
    """Random activations and a random quantized weight."""
    tdt = getattr(torch, dtype)
    A = torch.randn(M, K).to(tdt)
    Wq, S = quantize((torch.randn(N, K) * 0.05).to(tdt), bits, group)
    return to_device(A, device), to_device(Wq, device), to_device(S, device)


def programs(M=16, N=8192, K=8192):
    return [("dequant_gemm_int4_f16_decode", program(M, N, K, 4, config=PORTABLE_DECODE), [3]),
            ("dequant_gemm_int8_bf16_decode",
             program(M, N, K, 8, dtype="bfloat16", config=PORTABLE_DECODE), [3]),
            ("dequant_gemm_int4_f16_prefill", program(4096, N, K, 4, config=PORTABLE_PREFILL),
             [3])]


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
    kernel = tl.compile(program(M, N, K, bits, group, args.dtype), out_idx=[3],
                        target=args.target)
    A, Wq, S = random_problem(M, N, K, bits, group, args.dtype, kernel.device)
    err = relative_error(to_numpy(kernel(A, Wq, S)), reference(A, Wq, S, bits, group).numpy())
    seconds = kernel.time(A, Wq, S)
    moved = Wq.numel() * Wq.element_size() + S.numel() * 2 + (M * K + M * N) * 2
    print(f"target {kernel.target}: int{bits} dequant GEMM {M}x{N}x{K} {args.dtype} "
          f"(group {group}), relative error {err:.1e}, {seconds * 1e6:.1f} us "
          f"({2 * M * N * K / seconds / 1e12:.2f} TFLOP/s, {moved / seconds / 1e9:.0f} GB/s)")
    if not err < 1e-2:
        raise SystemExit(f"FAILED: relative error {err:.1e}")
    return err


if __name__ == "__main__":
    main()
