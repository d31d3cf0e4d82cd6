"""Weight-only quantized GEMM, as LLM inference runs it: C = A @ dequant(W)^T
with A (M, K) in float16/bfloat16 and W (N, K) stored as int4 or int8 with
one scale per group of `group` consecutive elements of a row (group 128).

Packing (what `quantize` below produces and the kernels read):
  * int8: `Wq` is (N, K) int8, w[n, k] = Wq[n, k] * S[n, k // group].
  * int4: `Wq` is (N, K // 2) uint8, two weights per byte from the two
    halves of a row: byte b holds k = b in its low nibble and k = b + K/2 in
    its high nibble, each offset by 8 (nibble = q + 8 for q in [-8, 7]):
    w[n, b] = ((Wq[n, b] & 15) - 8) * S[n, b // group],
    w[n, b + K/2] = ((Wq[n, b] >> 4) - 8) * S[n, (b + K/2) // group].
    A tile of bytes therefore unpacks into two tiles of whole rows of W
    (one from each half of K), indexed like the bytes: no shuffles, no
    index arithmetic on the packed tile, in registers or shared memory.
  * S is (N, K // group) in the activations' dtype; w is the product
    q * s rounded to that dtype (computed in float32 or in the dtype: the
    product of two 16-bit floats is exact in float32).

`dequant_gemm` copies A and the packed W tile into shared memory (the
pipeliner overlaps those copies with compute), unpacks and scales W into
float16/bfloat16 tiles in shared memory, and multiplies on the tensor cores
(T.gemm with W read K-major; int4: two gemms per step, one per half of K).
Its tile sizes serve both regimes: decode (M up to 16: block_M = 16,
narrow blocks of N so that the grid fills the GPU) and prefill (M = 4096:
128x128 tiles). `dequant_gemm_tn` is the decode alternative (configs with
`tn=True`): it computes C^T = W X^T, so the dequantized weights are the
tensor cores' A operand and stay in registers (no shared-memory round trip
for W; X, 16 rows at most, is the shared operand). `dequant_gemm_packed` (configs with `word`, first in the decode list) is
`dequant_gemm_tn` on weights repacked once, offline, by `pack_words` into
int64 words (16 nibbles or 8 bytes, from 16 or 8 slices of K), so that a
thread's operand fragment arrives in 16-byte loads straight into registers,
the next step's prefetched while this one computes; with `overlap` its
gemms are asynchronous (the next part dequantizes while the tensor cores
multiply, one wait a step) and with `packed_scales` the scales come in the
same word order (`pack_scales`, int64 words of 4). `dequant_gemv` is the M = 1 decode kernel without tensor
cores: the packed bytes arrive in 16-byte chunks straight into registers,
each thread owning whole chunks; a weight costs a shift, a logic op and one
fused multiply-add, the scale is applied once a chunk, and one reduction
across threads ends it (`inputs_for` gives its arguments: views of A and W).
The float16 kernels of every regime compute in pairs of float16
(`T.hsub2`, `T.hfma2`, ... on int32 words) on weights repacked offline so
that two adjacent k of a row share one word's 16-bit halves: the GEMV
`dequant_gemv_pairs` (`pack_pairs`) and the decode and prefill GEMM
`dequant_gemm_pairs` (`pack_pairs_mma`: a register of the tensor cores'
A operand per pair, the words of a thread adjacent). A pair costs one lop3
and one half2 operation; configs with `pairs` select them, first in each
float16 list.

    python examples/dequant/dequant_gemm.py [--target cpu|cuda] [--m M --n N --k K]
        [--bits 4|8] [--group 128] [--dtype float16|bfloat16]
"""

import argparse

import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.testing import relative_error, to_device, to_numpy

FullCol = T.GemmWarpPolicy.FullCol
FullRow = T.GemmWarpPolicy.FullRow


@T.macro
def step_words(W, row, col, next_col, wq, wq_next, rows, words, width, prefetch):
    """A step's words of W (rows x words at (row, col)) into the fragment
    wq. With `prefetch` they come from wq_next, loaded a step before, and
    the next step's (at (row, next_col)) go into wq_next, in flight while
    this step computes; `width`: the coalesced_width of the move."""
    if prefetch:
        for n, w in T.Parallel(rows, words, coalesced_width=width):
            wq[n, w] = wq_next[n, w]
        T.copy(W[row, next_col], wq_next)
    else:
        T.copy(W[row, col], wq)


@T.macro
def store_transposed(acc, C_s, C, row, col, rows, cols, dtype):
    """C[row:, col:] = acc^T in `dtype`: the kernels that compute C^T = W X^T
    (acc is rows x cols of C^T) store it through the shared tile C_s."""
    for n, m in T.Parallel(rows, cols):
        C_s[m, n] = T.cast(acc[n, m], dtype)
    T.copy(C_s, C[row, col])


# Float16 pairs the pair kernels build or subtract, as int32 bits:
# (1024, 1024), (1032, 1032), (1152, 1152), (1/16, 1/16), (-72, -72).
H2_1024, H2_1032, H2_1152 = 0x64006400, 0x64086408, 0x64806480
H2_SIXTEENTH, H2_MINUS_72 = 0x2C002C00, 0xD480D480


def dequant_gemm(M, N, K, bits=4, group=128, block_M=16, block_N=64, block_K=128,
                 num_stages=3, threads=128, policy=FullCol, dtype="float16"):
    check_shapes(N, K, bits, group, block_K)
    if bits == 8:
        return _gemm_int8(M, N, K, group, block_M, block_N, block_K, num_stages, threads,
                          policy, dtype)
    half = K // 2  # the high nibbles hold k in [half, K)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), Wq: T.Tensor((N, half), "uint8"),
             S: T.Tensor((N, K // group), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_lo = T.alloc_shared((block_M, block_K), dtype)
            A_hi = T.alloc_shared((block_M, block_K), dtype)
            Wq_s = T.alloc_shared((block_N, block_K), "uint8")
            W_lo = T.alloc_shared((block_N, block_K), dtype)
            W_hi = T.alloc_shared((block_N, block_K), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(half // block_K, num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_lo)
                T.copy(A[by * block_M, half + k * block_K], A_hi)
                T.copy(Wq[bx * block_N, k * block_K], Wq_s)
                for n, j in T.Parallel(block_N, block_K, coalesced_width=8):
                    row = T.min(bx * block_N + n, N - 1)  # rows past N: any scale
                    s_lo = T.cast(S[row, k * block_K // group], dtype)  # block_K | group
                    s_hi = T.cast(S[row, (half + k * block_K) // group], dtype)
                    byte = T.int32(Wq_s[n, j])
                    W_lo[n, j] = T.cast(T.cast((byte & 15) - 8, dtype) * s_lo, dtype)
                    W_hi[n, j] = T.cast(T.cast((byte >> 4) - 8, dtype) * s_hi, dtype)
                T.gemm(A_lo, W_lo, acc, transpose_B=True, policy=policy)
                T.gemm(A_hi, W_hi, acc, transpose_B=True, policy=policy)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


def _gemm_int8(M, N, K, group, block_M, block_N, block_K, num_stages, threads, policy, dtype):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), Wq: T.Tensor((N, K), "int8"),
             S: T.Tensor((N, K // group), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            Wq_s = T.alloc_shared((block_N, block_K), "int8")
            W_s = T.alloc_shared((block_N, block_K), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // block_K, num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(Wq[bx * block_N, k * block_K], Wq_s)
                for n, j in T.Parallel(block_N, block_K, coalesced_width=8):
                    s = T.cast(S[T.min(bx * block_N + n, N - 1), k * block_K // group], dtype)
                    W_s[n, j] = T.cast(T.cast(Wq_s[n, j], dtype) * s, dtype)
                T.gemm(A_s, W_s, acc, transpose_B=True, policy=policy)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


def dequant_gemm_tn(M, N, K, bits=4, group=128, block_M=16, block_N=64, block_K=128,
                    num_stages=2, threads=128, dtype="float16"):
    """The decode kernel with the weights as the register operand: C^T = W X^T.
    Rows of W are the tensor cores' M dimension (FullRow: each warp owns 16
    rows), so the dequantized weights stay in registers in the layout
    mma.sync reads its A operand in, and only the few rows of X go through
    shared memory. No shared-memory round trip for W (no 2-byte stores, no
    ldmatrix, no barrier between the dequantization and the gemm)."""
    check_shapes(N, K, bits, group, block_K)
    storage = "uint8" if bits == 4 else "int8"
    stored = K // 2 if bits == 4 else K

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), Wq: T.Tensor((N, stored), storage),
             S: T.Tensor((N, K // group), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            X_lo = T.alloc_shared((block_M, block_K), dtype)
            X_hi = T.alloc_shared((block_M, block_K), dtype)
            wq = T.alloc_fragment((block_N, block_K), storage)
            W_lo = T.alloc_fragment((block_N, block_K), dtype)
            W_hi = T.alloc_fragment((block_N, block_K), dtype)
            acc = T.alloc_fragment((block_N, block_M), "float32")
            C_s = T.alloc_shared((block_M, block_N), dtype)
            T.clear(acc)
            for k in T.Pipelined(stored // block_K, num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], X_lo)
                if bits == 4:
                    T.copy(A[by * block_M, stored + k * block_K], X_hi)
                T.copy(Wq[bx * block_N, k * block_K], wq)
                for n, j in T.Parallel(block_N, block_K):
                    row = T.min(bx * block_N + n, N - 1)
                    s_lo = T.cast(S[row, k * block_K // group], dtype)  # block_K | group
                    if bits == 4:
                        s_hi = T.cast(S[row, (stored + k * block_K) // group], dtype)
                        byte = T.int32(wq[n, j])
                        W_lo[n, j] = T.cast(T.cast((byte & 15) - 8, dtype) * s_lo, dtype)
                        W_hi[n, j] = T.cast(T.cast((byte >> 4) - 8, dtype) * s_hi, dtype)
                    else:
                        W_lo[n, j] = T.cast(T.cast(wq[n, j], dtype) * s_lo, dtype)
                T.gemm(W_lo, X_lo, acc, transpose_B=True, policy=FullRow)
                if bits == 4:
                    T.gemm(W_hi, X_hi, acc, transpose_B=True, policy=FullRow)
            store_transposed(acc, C_s, C, by * block_M, bx * block_N, block_N, block_M, dtype)

    return main


def dequant_gemm_packed(M, N, K, bits=4, group=128, block_M=16, block_N=64, block_K=16,
                        num_stages=2, threads=128, word="int64", prefetch=True,
                        overlap=False, packed_scales=False, dtype="float16"):
    """The decode kernel of `dequant_gemm_tn` (C^T = W X^T, the dequantized
    W the register A operand) on weights in the word-packed format of
    `pack_words` (done once, offline): a `word` (int64 or int32) of row n,
    column b holds the weights k = b + i * K/P of the row for i < P (P =
    word bits / `bits`, part i in bits [i*bits, (i+1)*bits), each offset by
    2^(bits-1)). A thread's operand fragment of one gemm holds pairs of
    adjacent columns, so with int64 words each pair is one 16-byte load
    (ld.global.v2.b64; int32: 8 bytes), straight into registers; the same
    word feeds P gemms (block_K columns each), one per part, against P tiles
    of X (block_M x block_K from the P slices of K, in shared memory). With
    `prefetch` the words of step k + 1 are loaded into a second register
    fragment before step k computes (the loads stay in flight for a whole
    step). With `overlap` the P gemms of a step are only issued
    (asynchronous wgmma, `T.gemm(..., wg_wait=-1)`), so the dequantization
    of part i + 1 runs while the tensor cores multiply part i; one
    `T.wait_wgmma(0)` ends the step, before the next step's copies and
    dequantization overwrite the X tiles and the P register fragments
    (each in-flight gemm reads its own fragment). With `packed_scales` S
    is `pack_scales(S)` (same shape, offline): the P scales of a word
    column are adjacent, so a thread's scales of one row come in one
    P-element vector load per step instead of P scalar loads. `block_K`
    counts words; it divides the group size."""
    check_packed_shapes(N, K, bits, group, block_K, word)
    wbits = 64 if word == "int64" else 32
    parts = wbits // bits
    span = K // parts  # words of a row
    steps = span // block_K
    mask, off = (1 << bits) - 1, 1 << (bits - 1)
    P = tuple(range(parts))
    Q = tuple(range(parts // 4))  # the int64 words of packed scales

    s_shape = (N, K // group // 4) if packed_scales else (N, K // group)
    s_dtype = "int64" if packed_scales else dtype

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), Wq: T.Tensor((N, span), word),
             S: T.Tensor(s_shape, s_dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            Xs = []
            Ws = []
            for i in P:
                Xs.append(T.alloc_shared((block_M, block_K), dtype))
                Ws.append(T.alloc_fragment((block_N, block_K), dtype))
            wq = T.alloc_fragment((block_N, block_K), word)
            wq_next = T.alloc_fragment((block_N, block_K), word)
            if packed_scales:  # int64 words of 4 scales, per row of the thread
                sw = [T.alloc_fragment((block_N,), "int64") for _ in Q]
            acc = T.alloc_fragment((block_N, block_M), "float32")
            C_s = T.alloc_shared((block_M, block_N), dtype)
            T.clear(acc)
            if prefetch:
                T.copy(Wq[bx * block_N, 0], wq_next)
            for k in T.Pipelined(steps, num_stages=num_stages):
                for i in P:
                    T.copy(A[by * block_M, i * span + k * block_K], Xs[i])
                step_words(Wq, bx * block_N, k * block_K, T.min(k + 1, steps - 1) * block_K,
                           wq, wq_next, block_N, block_K, None, prefetch)
                if packed_scales:  # the P scales of each row: P / 4 word loads
                    for w in Q:
                        for n in T.Parallel(block_N):
                            row = T.min(bx * block_N + n, N - 1)
                            sw[w][n] = S[row, (k * block_K) // group * (parts // 4) + w]
                for i in P:
                    for n, j in T.Parallel(block_N, block_K):
                        row = T.min(bx * block_N + n, N - 1)
                        if packed_scales:
                            s = T.reinterpret(T.cast(sw[i // 4][n] >> (16 * (i % 4)), "int16"),
                                              dtype)
                        else:
                            s = T.cast(S[row, (i * span + k * block_K) // group], dtype)
                        if wbits == 64:  # the 32-bit half that holds part i
                            half = T.cast(wq[n, j] >> (32 * (i * bits // 32)), "int32")
                        else:
                            half = wq[n, j]
                        q = ((half >> (i * bits % 32)) & mask) - off
                        Ws[i][n, j] = T.cast(T.cast(q, dtype) * s, dtype)
                    T.gemm(Ws[i], Xs[i], acc, transpose_B=True, policy=FullRow,
                           wg_wait=-1 if overlap else 0)
                if overlap:  # the step's gemms done: its X tiles and fragments free
                    T.wait_wgmma(0)
            store_transposed(acc, C_s, C, by * block_M, bx * block_N, block_N, block_M, dtype)

    return main


def dequant_gemv(N, K, bits=4, group=128, block_N=8, block_K=1024, threads=128,
                 dtype="float16", prefetch=True):
    """C = A @ dequant(W)^T for M = 1 without tensor cores, accumulated per
    chunk. A chunk is 16 stored bytes of a row (four int32 words, one
    16-byte load), always within one group; each step takes `block_K`
    stored bytes of `block_N` rows and every thread owns whole chunks (the
    loop's coalesced_width covers a chunk, so the chunk sums stay in the
    thread). One shift puts byte p of a word at bits 15..22, the top of a
    float's mantissa; masked into the bits of 1.0 (T.reinterpret; mask and
    exponent are one lop3, tile-fuse-lop3) it is v = 1 + u / 256 (int8: u
    the byte with its sign bit flipped, q + 128) or, for int4, v_hi = 1 +
    hi / 16 and v_lo = 1 + lo / 256 from the same shifted word, and one
    fused multiply-add accumulates v * x. The scale is applied once per
    chunk: sum q x = t sum v x - m sum x (t = 256, m = 384 for int8; t =
    16, m = 24 for the high nibbles and t = 256, m = 264 for the low ones;
    the low nibble's four-bit smaller v costs four bits of the float32
    chunk sum, far below the float16 result's rounding). A weight costs an
    FMA, a logic op and a shift (int4: half a shift); sum x is per chunk
    and shared by the rows. With `prefetch` the next step's words are loaded before this
    step computes (they stay in flight for a whole step).

    W arrives as int32 words, (N, stored / 4): `Wq.view(torch.int32)`
    (`inputs_for`). The chunk is expressed by the indices alone: byte j of a
    step is byte j % 4 of word j // 4 and belongs to chunk j // 16, and the
    loop's coalesced_width=16 gives each thread whole chunks, so layout
    inference keeps the chunk sums part[n, j // 16] in the thread."""
    check_gemv_shapes(N, K, bits, group, block_K)
    if group % 16 or block_K % 16:
        raise ValueError(f"the chunked GEMV needs the group size ({group}) and block_K "
                         f"({block_K}) in whole chunks of 16 bytes")
    stored = K // 2 if bits == 4 else K  # bytes of a row
    chunks = block_K // 16
    words = block_K // 4
    steps = stored // block_K
    # sum q x = top * sum v x - mid * sum x for v = 1 + (q + off) / top
    top_lo, mid_lo = (256.0, 264.0) if bits == 4 else (256.0, 384.0)
    top_hi, mid_hi = 16.0, 24.0

    @T.prim_func
    def main(A: T.Tensor((1, K), dtype), Wq: T.Tensor((N, stored // 4), "int32"),
             S: T.Tensor((N, K // group), dtype), C: T.Tensor((1, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bx:
            wq = T.alloc_fragment((block_N, words), "int32")
            wq_next = T.alloc_fragment((block_N, words), "int32")
            x_lo = T.alloc_fragment((block_K,), "float32")  # int4: k = b
            x_hi = T.alloc_fragment((block_K,), "float32")  # int4: k = b + K/2
            part_lo = T.alloc_fragment((block_N, chunks), "float32")  # sum v x of a chunk
            part_hi = T.alloc_fragment((block_N, chunks), "float32")
            sum_lo = T.alloc_fragment((chunks,), "float32")  # sum x of a chunk
            sum_hi = T.alloc_fragment((chunks,), "float32")
            acc = T.alloc_fragment((block_N, chunks), "float32")
            y = T.alloc_fragment((block_N,), "float32")
            T.clear(acc)
            if prefetch:
                T.copy(Wq[bx * block_N, 0], wq_next)
            for k in T.serial(steps):
                step_words(Wq, bx * block_N, k * words, T.min(k + 1, steps - 1) * words,
                           wq, wq_next, block_N, words, 4, prefetch)
                T.copy(A[0, k * block_K], x_lo)
                if bits == 4:
                    T.copy(A[0, stored + k * block_K], x_hi)
                T.clear(part_lo)
                T.clear(part_hi)
                # byte j of the step: byte j % 4 of word j // 4 of chunk j // 16,
                # a thread owns the chunk whole (coalesced_width=16)
                for n, j in T.Parallel(block_N, block_K, coalesced_width=16):
                    # The byte moved to bits 15..22 (a constant shift a byte):
                    # its bits masked into the mantissa of 1.0 (one lop3 each).
                    up = 15 - T.int32(j % 4) * 8
                    w = wq[n, j // 4]
                    b = T.if_then_else(up >= 0, w << up, w >> (0 - up))
                    if bits == 4:  # high nibble at the top: 1 + hi/16; low: 1 + lo/256
                        v_hi = T.reinterpret(b & 0x780000 | 0x3F800000, "float32")
                        v_lo = T.reinterpret(b & 0x078000 | 0x3F800000, "float32")
                        part_lo[n, j // 16] += v_lo * x_lo[j]
                        part_hi[n, j // 16] += v_hi * x_hi[j]
                    else:  # the byte, its sign bit flipped: 1 + (q + 128)/256
                        v = T.reinterpret(b & 0x7F8000 ^ 0x3FC00000, "float32")
                        part_lo[n, j // 16] += v * x_lo[j]
                T.clear(sum_lo)
                T.clear(sum_hi)
                for j in T.Parallel(block_K, coalesced_width=16):
                    sum_lo[j // 16] += x_lo[j]
                    if bits == 4:
                        sum_hi[j // 16] += x_hi[j]
                for n, c in T.Parallel(block_N, chunks):
                    row = T.min(bx * block_N + n, N - 1)
                    g = (k * block_K + c * 16) // group
                    acc[n, c] += T.float32(S[row, g]) * (part_lo[n, c] * top_lo -
                                                         sum_lo[c] * mid_lo)
                    if bits == 4:
                        s_hi = T.float32(S[row, stored // group + g])
                        acc[n, c] += s_hi * (part_hi[n, c] * top_hi - sum_hi[c] * mid_hi)
            T.reduce_sum(acc, y, dim=1)
            T.copy(y, C[0, bx * block_N])

    return main


def dequant_gemm_pairs(M, N, K, bits=4, group=128, block_M=16, block_N=128, block_K=128,
                       num_stages=4, threads=256, prefetch=True, w_shared=True, splits=1,
                       scale_weights=False, tiled=False, overlap=False, dtype="float16"):
    """The decode GEMM (M up to 16) on tensor cores with the weights as the
    register A operand (C^T = W X^T, like `dequant_gemm_tn`), dequantized in
    float16 pairs from the pair-packed format of `pack_pairs_mma` (offline):
    a 32-bit register of the operand holds two adjacent k of a row, and
    each thread's words hold exactly its registers' pairs, in 16-byte loads.
    A pair costs one lop3 (its two nibbles or bytes masked into the bits of
    1024.0) and one half2 operation that leaves (q0, q1) exactly: sub.f16x2
    of 1032 (int4 pairs at bit 0; int8: 1152), or, for int4 pairs masked at
    bit 4 (1024 + 16 u: one shift serves four pairs), fma.rn.f16x2 by 1/16
    minus 72. The gemm of a step (one group or part of one) accumulates
    into a float32 tile of its own, added to the total times the rows'
    scales: no multiply a weight (with `scale_weights` the pairs are
    multiplied by their row's scale instead, one mul.f16x2 a pair, and the
    gemms accumulate into the result: the better trade for wide tiles of X,
    where the per-step scaling of the result tile costs more than the
    weights' multiplies); a step may hold `splits` such gemms
    (their words adjacent), which spreads the step's fixed costs (waits,
    the scale epilogue) over more weights (3.4 SASS instructions a weight
    instead of 4.5 at int4, bN256 t256, but no faster on the H200: 42.9
    against 43.3 us cold at 16x28672x8192, where 112 blocks leave 20 of
    132 multiprocessors idle). With `w_shared` (the default) the words
    go through shared memory, `num_stages` steps in flight (TMA), then into
    registers in 16-byte loads; without it they go straight into
    registers, the next step's prefetched (`prefetch`), which keeps too few
    bytes in flight at 16 rows (2.7x slower on the H200). float16 only: the
    pairs need float16's 10-bit significand (1024 + 255 for a byte, 1024 +
    16 u for a high nibble); bfloat16 activations take the other decode
    kernels.

    Word order (`pack_pairs_mma`): in each step of `block_K` k (a multiple
    of 32) of row n, thread t (0..3 of a quad) owns the pairs at k = 32 b +
    8 p + 2 t (+ 0, 1) for p < 4 and the blocks b; its word (t, b) (int8:
    two, (t, b, p // 2)) sits at t * block_K / 32 + b (int8: times 2 plus
    p // 2), so the words of a thread are adjacent.

    `tiled` (with `w_shared`): the words in `pack_pairs_mma_tiled` order,
    (N / block_N, steps, block_N, words), so that the tile a step copies is
    one contiguous run of memory instead of block_N runs of 64 bytes (128
    with two splits) 4 KB apart, and the scales in `tile_scales` order,
    (N / block_N, groups, block_N), copied with the words (TMA) instead of
    loaded by the consumers, each step a fresh miss they would wait for.

    `overlap` (sm_90a; wgmma): a step's gemms are only issued (`wg_wait=-1`)
    and each one's sums are scaled once `T.wait_wgmma` says it is done, so
    the dequantization of gemm g + 1 runs while the tensor cores multiply
    gemm g (with `splits` > 1), and the step ends with all of them done."""
    if dtype != "float16":
        raise ValueError(f"dequant_gemm_pairs computes in float16 pairs; {dtype} activations "
                         f"need the other decode kernels")
    check_shapes(N, K, bits, group, block_K if not group % block_K else group)
    if block_K % 32 or group % block_K:
        raise ValueError(f"block_K = {block_K} must be a multiple of 32 dividing the group "
                         f"size {group}")
    per_word = 8 if bits == 4 else 4
    if splits < 1 or K % (block_K * splits):
        raise ValueError(f"K = {K} does not split into steps of {splits} x block_K = "
                         f"{block_K}")
    span = block_K * splits       # k of a step
    gwords = block_K // per_word  # words of a row, a gemm
    words = gwords * splits       # words of a row, a step
    blocks = block_K // 32
    steps = K // span
    G = tuple(range(splits))
    sub = H2_1032 if bits == 4 else H2_1152
    if tiled and (not w_shared or N % block_N):
        raise ValueError(f"tiled weights need w_shared and N = {N} in whole tiles of "
                         f"block_N = {block_N}")
    w_shape = (N // block_N, steps, block_N, words) if tiled else (N, K // per_word)
    gps = max(1, span // group)  # groups of a step
    s_shape = (N // block_N, K // group, block_N) if tiled else (N, K // group)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), Wp: T.Tensor(w_shape, "int32"),
             S: T.Tensor(s_shape, dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            Xs = [T.alloc_shared((block_M, block_K), dtype) for _ in G]
            Ws = [T.alloc_fragment((block_N, block_K), dtype) for _ in G]
            if not scale_weights:  # each gemm's own sums, scaled after it
                part = [T.alloc_fragment((block_N, block_M), "float32") for _ in G]
            # a gemm's words (each its own fragment: the layouts its loop induces)
            wq = [T.alloc_fragment((block_N, gwords), "int32") for _ in G]
            wq_next = [T.alloc_fragment((block_N, gwords), "int32") for _ in G]
            acc = T.alloc_fragment((block_N, block_M), "float32")
            C_s = T.alloc_shared((block_M, block_N), dtype)
            if w_shared:  # the words through shared memory, num_stages deep
                W_s = T.alloc_shared((block_N, words), "int32")
            if tiled:  # the step's scales too, one TMA box
                S_s = T.alloc_shared((gps, block_N), dtype)
            T.clear(acc)
            if prefetch and not w_shared:
                for g in G:
                    T.copy(Wp[bx * block_N, g * gwords], wq_next[g])
            for k in T.Pipelined(steps, num_stages=num_stages):
                for g in G:
                    T.copy(A[by * block_M, k * span + g * block_K], Xs[g])
                if w_shared:
                    if tiled:
                        T.copy(Wp[bx, k, 0, 0], W_s)
                        T.copy(S[bx, k * span // group, 0], S_s)
                    else:
                        T.copy(Wp[bx * block_N, k * words], W_s)
                    for g in G:
                        T.copy(W_s[0, g * gwords], wq[g])
                else:
                    for g in G:
                        step_words(Wp, bx * block_N, k * words + g * gwords,
                                   T.min(k + 1, steps - 1) * words + g * gwords,
                                   wq[g], wq_next[g], block_N, gwords, None, prefetch)
                for g in G:
                    # k j of gemm g: lane j % 2 of pair p = j // 8 % 4 of
                    # thread t = j // 2 % 4's word in block b = j // 32
                    for n, j in T.Parallel(block_N, block_K):
                        if bits == 4:
                            w = wq[g][n, j // 2 % 4 * blocks + j // 32]
                            cls = T.int32(j // 16 % 2)  # p // 2: mask at bit 0 or 4
                            pair = (w >> T.int32(j // 8 % 2) * 8) & (0x000F000F << cls * 4) \
                                | H2_1024
                            q = T.if_then_else(cls == 0, T.hsub2(pair, sub),
                                               T.hfma2(pair, H2_SIXTEENTH, H2_MINUS_72))
                        else:
                            w = wq[g][n, (j // 2 % 4 * blocks + j // 32) * 2 + j // 16 % 2]
                            pair = (w >> T.int32(j // 8 % 2) * 8) & 0x00FF00FF ^ H2_1152
                            q = T.hsub2(pair, sub)
                        if scale_weights:  # (q0 s, q1 s): one mul.f16x2 more a pair
                            if tiled:
                                s = S_s[g * block_K // group, n]
                            else:
                                s = S[T.min(bx * block_N + n, N - 1),
                                      (k * span + g * block_K) // group]
                            q = T.hmul2(q, T.pack2(s, s))
                        Ws[g][n, j] = T.unpack2(q, j % 2)
                    if scale_weights:
                        T.gemm(Ws[g], Xs[g], acc, transpose_B=True, policy=FullRow,
                               wg_wait=-1 if overlap else 0)
                    else:
                        T.gemm(Ws[g], Xs[g], part[g], transpose_B=True, policy=FullRow,
                               clear_accum=True, wg_wait=-1 if overlap else 0)
                if scale_weights and overlap:
                    T.wait_wgmma(0)
                if not scale_weights:  # each gemm's sums (once it is done) times its scales
                    for g in G:
                        if overlap:
                            T.wait_wgmma(splits - 1 - g)
                        for n, m in T.Parallel(block_N, block_M):
                            if tiled:
                                s = T.float32(S_s[g * block_K // group, n])
                            else:
                                s = T.float32(S[T.min(bx * block_N + n, N - 1),
                                                (k * span + g * block_K) // group])
                            acc[n, m] += s * part[g][n, m]
            store_transposed(acc, C_s, C, by * block_M, bx * block_N, block_N, block_M, dtype)

    return main


def dequant_gemv_pairs(N, K, bits=4, group=128, block_N=8, block_K=1024, threads=128,
                       dtype="float16", prefetch=False):
    """C = A @ dequant(W)^T for M = 1 in float16 pairs (half2 arithmetic),
    on weights repacked by `pack_pairs`: an int32 word holds the weights of
    8 (int4) or 4 (int8) consecutive k, arranged so that one mask takes two
    adjacent k into the two 16-bit halves of the word, each ORed into the
    bits of 1024.0 (a float16 whose unit in the last place is 1): one lop3
    makes the pair (1024 + u0, 1024 + u1). One half2 subtraction makes it
    (q0, q1) exactly, one half2 fused multiply-add accumulates (q0 x0, q1
    x1): three instructions for two weights, against the float32 GEMV's
    three for one. int4 pairs p = 0, 2 are nibbles (p, p + 4) of the word
    shifted by 4p, masked with 0x000F000F; pairs 1, 3 come from the same
    shifted word masked with 0x00F000F0 (1024 + 16 u, exact too, minus 1152
    is 16 q), so one shift serves four weights; their sums are scaled by
    1/16. The half2 sums cover one 16-byte chunk (16 k a lane for int4, 8
    for int8), then go to float32 with the group scale; their float16
    rounding (|q x| <= 8 |x| for int4) stays far below the result's.
    float16 only: bfloat16's 8-bit significand holds neither 1024 + 255
    nor the sums (`dequant_gemv` serves bfloat16).

    `block_K` counts stored bytes a step, as in `dequant_gemv`; every thread
    owns whole chunks (coalesced_width), so its sums stay in the thread."""
    if dtype != "float16":
        raise ValueError(f"dequant_gemv_pairs computes in float16 pairs; {dtype} activations "
                         f"need dequant_gemv")
    check_gemv_shapes(N, K, bits, group, block_K)
    per_word = 8 if bits == 4 else 4  # k of a word
    cw = 4 * per_word                 # k of a 16-byte chunk
    if group % cw:
        raise ValueError(f"the pair GEMV needs the group size ({group}) in whole chunks of "
                         f"{cw} weights")
    kstep = block_K * (2 if bits == 4 else 1)  # k of a step
    chunks = kstep // cw
    words = kstep // per_word
    steps = K // kstep
    classes = 2 if bits == 4 else 1  # int4: pairs masked at bit 0 or bit 4 (16 u)
    pairs_word = per_word // 2       # pairs of a word

    @T.prim_func
    def main(A: T.Tensor((1, K // 2), "int32"), Wp: T.Tensor((N, K // per_word), "int32"),
             S: T.Tensor((N, K // group), dtype), C: T.Tensor((1, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bx:
            wq = T.alloc_fragment((block_N, words), "int32")
            wq_next = T.alloc_fragment((block_N, words), "int32")
            xw = T.alloc_fragment((kstep // 2,), "int32")  # x pairs
            part = T.alloc_fragment((block_N, chunks, classes), "int32")  # half2 sums
            acc = T.alloc_fragment((block_N, chunks), "float32")
            y = T.alloc_fragment((block_N,), "float32")
            T.clear(acc)
            if prefetch:
                T.copy(Wp[bx * block_N, 0], wq_next)
            for k in T.serial(steps):
                step_words(Wp, bx * block_N, k * words, T.min(k + 1, steps - 1) * words,
                           wq, wq_next, block_N, words, 4, prefetch)
                T.copy(A[0, k * (kstep // 2)], xw)
                T.clear(part)
                # pair i of the step (k 2i, 2i + 1): pair i % pairs_word of
                # word i // pairs_word, in chunk i // (cw / 2)
                for n, i in T.Parallel(block_N, kstep // 2, coalesced_width=cw // 2):
                    w = wq[n, i // pairs_word]
                    if bits == 4:  # pair p = i % 4: shift (p % 2) * 8, mask at bit 4 (p // 2)
                        cls = T.int32(i // 2 % 2)
                        pair = (w >> T.int32(i % 2) * 8) & (0x000F000F << cls * 4) | H2_1024
                        q = T.hsub2(pair, T.if_then_else(cls == 0, H2_1032, H2_1152))
                    else:  # the signed bytes, their sign bits flipped: 1024 + q + 128
                        pair = (w >> T.int32(i % 2) * 8) & 0x00FF00FF ^ H2_1152
                        q = T.hsub2(pair, H2_1152)
                    part[n, i // (cw // 2), i // 2 % classes] = T.hfma2(
                        q, xw[i], part[n, i // (cw // 2), i // 2 % classes])
                for n, c, m in T.Parallel(block_N, chunks, classes):
                    row = T.min(bx * block_N + n, N - 1)
                    s = T.float32(S[row, (k * kstep + c * cw) // group])
                    if bits == 4:  # the second class holds 16 q
                        s = s * T.if_then_else(m == 0, 1.0, 0.0625)
                    acc[n, c] += s * (T.float32(T.unpack2(part[n, c, m], 0)) +
                                      T.float32(T.unpack2(part[n, c, m], 1)))
            T.reduce_sum(acc, y, dim=1)
            T.copy(y, C[0, bx * block_N])

    return main


def dequant_gemv_elementwise(N, K, bits=4, group=128, block_N=8, block_K=1024, threads=128,
                             dtype="float16"):
    """The first M = 1 kernel (configs with `elementwise`), kept for
    comparison with `dequant_gemv`: one float32 accumulator per stored byte
    (the scale applied to every weight). C = A @ dequant(W)^T. Each step takes
    `block_K` stored bytes of `block_N` rows into registers (16 bytes a
    thread), unpacks them (int4: weights k and k + K/2 of each byte) and
    accumulates the products with x per thread (two fused multiply-adds a
    byte). A step may span several groups (block_K a multiple of the group
    size): few rows and long steps keep enough bytes in flight to stream W
    at the memory bandwidth (the rows of one multiprocessor times block_K).
    The weights are computed in float32 without integer-to-float
    conversions or float16 arithmetic: each nibble (byte) goes into the top
    of a float's mantissa (v = 1 + nibble/16, T.reinterpret) and one exact
    fused multiply-add scales it (q s = 16 s v - 24 s), one more accumulates
    it: about half the instructions per weight of converting to float16,
    scaling there and converting to float32 (the M = 1 kernel is bound by
    instructions, not bytes, at int4). q s is exact in float32, so the GEMV
    does not round the dequantized weight to float16."""
    check_gemv_shapes(N, K, bits, group, block_K)
    storage = "uint8" if bits == 4 else "int8"
    stored = K // 2 if bits == 4 else K  # bytes of a row

    @T.prim_func
    def main(A: T.Tensor((1, K), dtype), Wq: T.Tensor((N, stored), storage),
             S: T.Tensor((N, K // group), dtype), C: T.Tensor((1, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bx:
            wq = T.alloc_fragment((block_N, block_K), storage)
            x_lo = T.alloc_fragment((block_K,), "float32")  # converted once a step
            x_hi = T.alloc_fragment((block_K,), "float32")
            acc = T.alloc_fragment((block_N, block_K), "float32")
            y = T.alloc_fragment((block_N,), "float32")
            T.clear(acc)
            for k in T.serial(stored // block_K):
                T.copy(Wq[bx * block_N, k * block_K], wq)
                T.copy(A[0, k * block_K], x_lo)
                if bits == 4:
                    T.copy(A[0, stored + k * block_K], x_hi)
                for n, j in T.Parallel(block_N, block_K, coalesced_width=16):
                    row = T.min(bx * block_N + n, N - 1)
                    g = (k * block_K + j) // group
                    s_lo = T.float32(S[row, g])
                    if bits == 4:
                        s_hi = T.float32(S[row, stored // group + g])
                        byte = T.int32(wq[n, j])
                        # A nibble in the top of a float's mantissa: v = 1 + nib/16
                        # (one shift and one logic op), then q * s = 16 s v - 24 s,
                        # one exact fused multiply-add (16 s, 24 s and q s are all
                        # exact in float32): no conversion, no separate scaling.
                        v_lo = T.reinterpret(((byte & 15) << 19) | 0x3F800000, "float32")
                        v_hi = T.reinterpret(((byte & 240) << 15) | 0x3F800000, "float32")
                        w_lo = v_lo * (s_lo * 16.0) - s_lo * 24.0
                        w_hi = v_hi * (s_hi * 16.0) - s_hi * 24.0
                        # Two fused multiply-adds (no separate product sum).
                        acc[n, j] = acc[n, j] + w_lo * x_lo[j] + w_hi * x_hi[j]
                    else:
                        # The byte (sign bit flipped: b + 128) in the top of the
                        # mantissa, v = 1 + (b + 128)/256: b s = 256 s v - 384 s.
                        u = T.int32(wq[n, j]) & 255
                        v = T.reinterpret(((u ^ 128) << 15) | 0x3F800000, "float32")
                        acc[n, j] += (v * (s_lo * 256.0) - s_lo * 384.0) * x_lo[j]
            T.reduce_sum(acc, y, dim=1)
            T.copy(y, C[0, bx * block_N])

    return main


def check_gemv_shapes(N, K, bits, group, block_K):
    """The GEMV's steps may span several groups: block_K divides the group
    size or is a multiple of it, and the stored row splits into steps."""
    check_shapes(N, K, bits, group, group)
    if group % block_K and block_K % group:
        raise ValueError(f"block_K = {block_K} must divide the group size {group} or be a "
                         f"multiple of it")
    span = K // 2 if bits == 4 else K
    if span % block_K:
        raise ValueError(f"K = {K} does not split into steps of block_K = {block_K} bytes")


def check_packed_shapes(N, K, bits, group, block_K, word):
    """The word-packed format's rules: P slices of K (P = word bits / bits),
    each whole groups; steps of block_K words within one group."""
    if word not in ("int64", "int32"):
        raise ValueError(f"word must be int64 or int32, got {word}")
    check_shapes(N, K, bits, group, group)
    parts = (64 if word == "int64" else 32) // bits
    if K % (parts * group):
        raise ValueError(f"K = {K} does not split into {parts} slices of whole groups "
                         f"({group}) for {word} words of int{bits}")
    if group % block_K:
        raise ValueError(f"block_K = {block_K} must divide the group size {group}")


def check_shapes(N, K, bits, group, block_K):
    """The rules of the packed format and the tiles (clear errors instead
    of wrong results): whole groups, each half of K (int4) whole groups,
    tiles of K within one group and whole tiles."""
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    if group <= 0 or K % group:
        raise ValueError(f"K = {K} is not a multiple of the group size {group}")
    if bits == 4 and (K // 2) % group:
        raise ValueError(f"int4: each half of K ({K // 2}) must be a multiple of the group "
                         f"size {group}")
    if group % block_K:
        raise ValueError(f"block_K = {block_K} must divide the group size {group}")
    span = K // 2 if bits == 4 else K
    if span % block_K:
        raise ValueError(f"K = {K} does not split into tiles of block_K = {block_K}")


# Tile configurations: decode (M <= 16) and prefill. The benchmark tunes over
# each list; the first entry is the default. block_K divides the group size
# (128), so each row of a W tile has one scale (two for int4: one per half).
# M = 1 also tries the GEMV kernel (configs without block_M).
# M = 1: the pair GEMV (float16; the first is the default, 12.2-12.5 us cold
# at int4 1x8192x8192 on the H200, BENCHMARKS.md), then the chunked float32
# GEMV (the bfloat16 default; the fastest of its --gemv-sweep, 14.7 us cold).
GEMV = [
    dict(pairs=True, block_N=4, block_K=1024, threads=64, prefetch=True),
    dict(pairs=True, block_N=8, block_K=1024, threads=128, prefetch=True),
    dict(pairs=True, block_N=16, block_K=1024, threads=256, prefetch=True),
    dict(pairs=True, block_N=8, block_K=1024, threads=128),
    dict(block_N=8, block_K=1024, threads=128, prefetch=False),
    dict(block_N=4, block_K=1024, threads=64, prefetch=True),
    dict(block_N=16, block_K=1024, threads=256, prefetch=False),
    dict(block_N=8, block_K=1024, threads=64, prefetch=True),
    dict(block_N=16, block_K=1024, threads=128, prefetch=True),
    # the per-byte kernel (dequant_gemv_elementwise), for comparison
    dict(elementwise=True, block_N=8, block_K=1024, threads=128),
]
# Word-packed weights (`pack_words`, configs with `word`): 16-byte loads of
# W straight into registers, the next step's words prefetched; block_K in
# words. `overlap`: the step's P gemms asynchronous, one wait a step;
# `packed_scales`: S in `pack_scales` order, word loads of the scales.
OVERLAP = dict(overlap=True, packed_scales=True)
PACKED = [
    dict(word="int64", block_M=16, block_N=64, block_K=32, num_stages=2, threads=128, **OVERLAP),
    dict(word="int64", block_M=16, block_N=64, block_K=32, num_stages=2, threads=128,
         overlap=True),
    dict(word="int64", block_M=16, block_N=64, block_K=16, num_stages=2, threads=128, **OVERLAP),
    dict(word="int64", block_M=16, block_N=128, block_K=16, num_stages=2, threads=256,
         **OVERLAP),
    dict(word="int64", block_M=16, block_N=32, block_K=16, num_stages=3, threads=64, **OVERLAP),
    dict(word="int32", block_M=16, block_N=64, block_K=32, num_stages=2, threads=128, **OVERLAP),
    # round 3's best (int4 118.8 us, int8 138.4 us at 16x28672x8192), kept
    dict(word="int64", block_M=16, block_N=64, block_K=32, num_stages=2, threads=128),
    dict(word="int64", block_M=16, block_N=128, block_K=16, num_stages=2, threads=256),
]
# float16 decode (M <= 16): the pair-packed GEMM (`dequant_gemm_pairs`,
# weights through shared memory num_stages deep), 2.7x the word-packed
# kernel at 16x28672x8192 int4 on the H200 (BENCHMARKS.md); tiled weights
# and scales (each step's tile one TMA box) 4-8% faster than row-major
# ones; at int4 two gemms a step the fastest, on 512 threads or, close
# behind, on 256 with the gemms asynchronous (`overlap`) (their 4 stages of
# 32 KB do not fit int8: `default_config` skips them).
# The untiled ones serve an N that is not whole tiles.
PAIRS = [
    dict(pairs=True, w_shared=True, tiled=True, block_M=16, block_N=256, block_K=128,
         num_stages=4, threads=512, splits=2),
    dict(pairs=True, w_shared=True, tiled=True, block_M=16, block_N=256, block_K=128,
         num_stages=4, threads=256, splits=2, overlap=True),
    dict(pairs=True, w_shared=True, tiled=True, block_M=16, block_N=256, block_K=128,
         num_stages=4, threads=256),
    dict(pairs=True, w_shared=True, block_M=16, block_N=256, block_K=128, num_stages=4,
         threads=256),
    dict(pairs=True, w_shared=True, block_M=16, block_N=256, block_K=128, num_stages=3,
         threads=256),
    dict(pairs=True, w_shared=True, block_M=16, block_N=128, block_K=128, num_stages=4,
         threads=256),
]
DECODE = PAIRS + PACKED + [
    dict(tn=True, block_M=16, block_N=64, block_K=128, num_stages=2, threads=128),
    dict(tn=True, block_M=16, block_N=64, block_K=64, num_stages=3, threads=128),
    dict(tn=True, block_M=16, block_N=128, block_K=64, num_stages=2, threads=256),
    dict(tn=True, block_M=16, block_N=32, block_K=128, num_stages=2, threads=64),
    dict(block_M=16, block_N=64, block_K=128, num_stages=4, threads=128),
    dict(block_M=16, block_N=128, block_K=128, num_stages=3, threads=256),
]
# Prefill: 256 threads keep the dequantized elements per thread (block_N *
# block_K / threads) at 32 next to the 64-per-thread accumulator; 128
# threads on 128x128 tiles spill.
PREFILL = [
    # float16: the pair GEMM with scaled weights (642 TFLOP/s int4 on the
    # H200, 1.8x the shared-memory dequant below; BENCHMARKS.md)
    dict(pairs=True, scale_weights=True, block_M=256, block_N=128, block_K=64, num_stages=3,
         threads=256),
    dict(pairs=True, scale_weights=True, block_M=128, block_N=128, block_K=128, num_stages=3,
         threads=256),
    dict(pairs=True, scale_weights=True, block_M=128, block_N=256, block_K=64, num_stages=3,
         threads=256),
    dict(block_M=128, block_N=128, block_K=64, num_stages=3, threads=256,
         policy=T.GemmWarpPolicy.Square),
    dict(block_M=128, block_N=256, block_K=32, num_stages=4, threads=256,
         policy=T.GemmWarpPolicy.Square),
    dict(block_M=128, block_N=128, block_K=32, num_stages=4, threads=256,
         policy=T.GemmWarpPolicy.Square),
]
# What programs() compiles for every target (CI assembles them for sm_80,
# sm_90a and the AMD chips): tiles that fit 64 KB of shared memory.
PORTABLE_DECODE = dict(block_M=16, block_N=32, block_K=128, num_stages=3, threads=128)
PORTABLE_TN = dict(tn=True, block_M=16, block_N=64, block_K=64, num_stages=2, threads=128)
PORTABLE_PREFILL = dict(block_M=128, block_N=128, block_K=32, num_stages=2, threads=256,
                        policy=T.GemmWarpPolicy.Square)
PORTABLE_PAIRS = dict(pairs=True, block_M=16, block_N=128, block_K=128, num_stages=2,
                      threads=256)
PORTABLE_PAIRS_PREFILL = dict(pairs=True, scale_weights=True, block_M=64, block_N=128,
                              block_K=32, num_stages=2, threads=256)


def configs_for(M):
    if M == 1:
        return GEMV + DECODE
    return DECODE if M <= 16 else PREFILL


# The most shared memory a pair GEMM's ring of weight tiles may take and
# leave room for the X tiles and the C tile (227 KB in all on the H200).
PAIR_RING_BYTES = 160 * 1024


def pair_ring_fits(config, bits):
    """Whether the pair GEMM's ring of weight tiles fits PAIR_RING_BYTES."""
    return (config.get("num_stages", 4) * config["block_N"] * config["block_K"] *
            config.get("splits", 1) * bits // 8) <= PAIR_RING_BYTES


def default_config(M, N, K, bits=4, group=128, dtype="float16"):
    """The regime's first config that fits the shape and dtype (the
    word-packed ones need K in P slices of whole groups, the pair GEMV
    float16 and groups of whole chunks)."""
    for config in configs_for(M):
        if config.get("pairs"):
            if "block_M" in config:  # the pair GEMM: steps of whole 32s within a group
                fits = not K % config["block_K"] and not group % config["block_K"]
                fits &= not config.get("tiled") or not N % config["block_N"]
                fits &= pair_ring_fits(config, bits)
            else:  # the pair GEMV: groups of whole chunks
                fits = not group % (32 if bits == 4 else 16)
            if dtype == "float16" and fits:
                return config
            continue
        if "word" not in config:
            return config
        parts = (64 if config["word"] == "int64" else 32) // bits
        if not K % (parts * group) and not group % config["block_K"]:
            return config
    return configs_for(M)[0]


def program(M, N, K, bits=4, group=128, dtype="float16", config=None):
    """The tile program for (M, N, K) with the regime's default tiles
    (`default_config`). Its arguments are `inputs_for(config, A, Wq, S)`:
    configs with `word` read word-packed weights and, with `packed_scales`,
    packed scales; the chunked GEMV reads views of A and Wq."""
    if config is None:
        config = default_config(M, N, K, bits, group, dtype)
    config = dict(config)
    span = K // 2 if bits == 4 else K
    gemv = "block_M" not in config  # its steps may span several groups

    def fits(bk):
        return not span % bk and (not group % bk or (gemv and not bk % group))

    # (the word- and pair-packed decode formats depend on block_K: kept)
    fixed = "word" in config or (config.get("pairs") and not gemv)
    while not fixed and not fits(config["block_K"]) and config["block_K"] > 8:
        config["block_K"] //= 2
    if gemv:  # M = 1: the GEMV kernel
        if M != 1:
            raise ValueError(f"the GEMV kernel computes one row, not M = {M}")
        if config.pop("elementwise", False):
            return dequant_gemv_elementwise(N, K, bits, group, dtype=dtype, **config)
        if config.pop("pairs", False):
            return dequant_gemv_pairs(N, K, bits, group, dtype=dtype, **config)
        return dequant_gemv(N, K, bits, group, dtype=dtype, **config)
    if config.pop("pairs", False):  # decode on pair-packed weights (pack_pairs_mma)
        return dequant_gemm_pairs(M, N, K, bits, group, dtype=dtype, **config)
    if "word" in config:  # decode on word-packed weights (pack_words)
        return dequant_gemm_packed(M, N, K, bits, group, dtype=dtype, **config)
    if config.pop("tn", False):  # decode: W as the register A operand
        return dequant_gemm_tn(M, N, K, bits, group, dtype=dtype, **config)
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
    if (K // 2) % group:
        raise ValueError(f"int4: each half of K ({K // 2}) must be a multiple of the group "
                         f"size {group}")
    nib = (q + 8).to(torch.uint8)
    return (nib[:, :K // 2] | (nib[:, K // 2:] << 4)).contiguous(), scale.contiguous()


def unpack(Wq, bits=4):
    """The integer weights (N, K) int32 of a packed Wq (on Wq's device)."""
    if bits == 8:
        return Wq.to(torch.int32)
    b = Wq.to(torch.int32)
    return torch.cat([(b & 15) - 8, (b >> 4) - 8], dim=1)


def pack_words(Wq, bits=4, word="int64"):
    """The word-packed format `dequant_gemm_packed` reads, from Wq in the
    format above (done once, offline, at quantization time; on Wq's
    device): (N, K / P) int64 (int32) words, P = 16 (8) nibbles or 8 (4)
    bytes a word; word b of row n holds q[n, b + i * K/P] + 2^(bits-1) in
    bits [i*bits, (i+1)*bits). `unpack_words` is its inverse."""
    q = unpack(Wq, bits).to(torch.int64)
    wbits = 64 if word == "int64" else 32
    parts = wbits // bits
    N, K = q.shape
    if K % parts:
        raise ValueError(f"K = {K} does not split into {parts} slices")
    span = K // parts
    u = q + (1 << (bits - 1))
    w = torch.zeros((N, span), dtype=torch.int64, device=q.device)
    for i in range(parts):
        w |= u[:, i * span:(i + 1) * span] << (i * bits)  # wraps into the sign bit
    if wbits == 32:
        w = torch.where(w >= 2 ** 31, w - 2 ** 32, w).to(torch.int32)
    return w.contiguous()


def unpack_words(Wp, bits=4):
    """The integer weights (N, K) int32 of word-packed Wp (pack_words)."""
    wbits = Wp.element_size() * 8
    w = Wp.to(torch.int64)
    mask, off = (1 << bits) - 1, 1 << (bits - 1)
    return torch.cat([((w >> (i * bits)) & mask) - off for i in range(wbits // bits)],
                     dim=1).to(torch.int32)


def _pair_shift(p, bits):
    """Bit position of lane 0 of pair p in a pair-packed word (lane 1 is 16
    above): int4 pairs 0, 1 at nibbles 0, 2 (shifts 0 and 8), pairs 2, 3 at
    nibbles 1, 3 (masked at bit 4); int8 pair p at byte p."""
    return 4 * (2 * (p % 2) + p // 2) if bits == 4 else 8 * p


def _pair_words(q, bits):
    """Integer weights q (N, K) as pair-packed int32 words (`pack_pairs`)."""
    q = q.to(torch.int64)
    N, K = q.shape
    per_word = 8 if bits == 4 else 4
    if K % per_word:
        raise ValueError(f"K = {K} is not a multiple of {per_word}")
    u = (q + 8 if bits == 4 else q & 255).reshape(N, K // per_word, per_word // 2, 2)
    w = torch.zeros((N, K // per_word), dtype=torch.int64, device=q.device)
    for p in range(per_word // 2):
        at = _pair_shift(p, bits)
        w |= u[:, :, p, 0] << at
        w |= u[:, :, p, 1] << (16 + at)
    return torch.where(w >= 2 ** 31, w - 2 ** 32, w).to(torch.int32).contiguous()


def pack_pairs(Wq, bits=4):
    """The pair-packed format `dequant_gemv_pairs` reads (offline, on Wq's
    device): (N, K / 8) int32 words for int4, (N, K / 4) for int8; word w
    of row n holds consecutive k. int4: k = 8w + 2p and 8w + 2p + 1, as
    q + 8, in the nibbles at bit `_pair_shift(p)` and 16 above, p = 0..3
    (nibbles 0, 2, 1, 3); int8: k = 4w + 2p in byte p and k = 4w + 2p + 1 in
    byte p + 2, as the signed byte, p = 0, 1. `unpack_pairs` is its
    inverse."""
    return _pair_words(unpack(Wq, bits), bits)


def pack_pairs_mma(Wq, bits=4, block_K=128):
    """The pair-packed format `dequant_gemm_pairs` reads (offline): (N, K / 8)
    int32 words for int4, (N, K / 4) for int8, each word's pairs laid out as
    in `pack_pairs`, the words of a step of `block_K` ordered so that the
    pairs of one thread of the tensor cores' A operand are adjacent (see
    `dequant_gemm_pairs`). `unpack_pairs_mma` is its inverse."""
    q = unpack(Wq, bits)
    K = q.shape[1]
    if K % block_K or block_K % 32:
        raise ValueError(f"K = {K} does not split into steps of block_K = {block_K} "
                         f"(a multiple of 32)")
    return _pair_words(q[:, _mma_pair_order(K, block_K)], bits)


def pack_pairs_mma_tiled(Wq, bits=4, block_K=128, block_N=256, splits=1):
    """`pack_pairs_mma` words in tiles (offline): (N / block_N, steps,
    block_N, words) int32 with steps = K / (block_K splits) and words the
    words of a row in a step, so that the tile of `block_N` rows a step of
    `dequant_gemm_pairs(tiled=True)` copies is contiguous.
    `unpack_pairs_mma_tiled` is its inverse."""
    w = pack_pairs_mma(Wq, bits, block_K)
    N, words_k = w.shape
    K = words_k * (8 if bits == 4 else 4)
    if N % block_N or K % (block_K * splits):
        raise ValueError(f"({N}, {K}) does not split into tiles of {block_N} rows and "
                         f"steps of {splits} x {block_K}")
    steps = K // (block_K * splits)
    return w.reshape(N // block_N, block_N, steps, words_k // steps).transpose(1, 2).contiguous()


def unpack_pairs_mma_tiled(Wt, bits=4, block_K=128):
    """The integer weights (N, K) int32 of `pack_pairs_mma_tiled` words."""
    tiles, steps, block_N, words = Wt.shape
    w = Wt.transpose(1, 2).reshape(tiles * block_N, steps * words)
    return unpack_pairs_mma(w, bits, block_K)


def unpack_pairs_mma(Wp, bits=4, block_K=128):
    """The integer weights (N, K) int32 of `pack_pairs_mma` words."""
    q = unpack_pairs(Wp, bits)
    out = torch.empty_like(q)
    out[:, _mma_pair_order(q.shape[1], block_K)] = q
    return out


def _mma_pair_order(K, block_K):
    """k of each position of the pair stream (pack_pairs order): the words
    of a step as (t, b), each word's pairs p, lanes (int8: words (t, b,
    p // 2) hold pairs p % 2, the same stream)."""
    blocks = block_K // 32
    order = []
    for step in range(K // block_K):
        for t in range(4):
            for b in range(blocks):
                for p in range(4):
                    for lane in range(2):
                        order.append(step * block_K + 32 * b + 8 * p + 2 * t + lane)
    return torch.tensor(order)


def unpack_pairs(Wp, bits=4):
    """The integer weights (N, K) int32 of pair-packed Wp (pack_pairs)."""
    w = Wp.to(torch.int64) & 0xFFFFFFFF
    mask = 15 if bits == 4 else 255
    lanes = [torch.stack([(w >> _pair_shift(p, bits)) & mask,
                          (w >> (16 + _pair_shift(p, bits))) & mask], dim=-1)
             for p in range(4 if bits == 4 else 2)]
    u = torch.stack(lanes, dim=2).reshape(Wp.shape[0], -1)
    q = u - 8 if bits == 4 else torch.where(u >= 128, u - 256, u)
    return q.to(torch.int32)


def weights_for(config, Wq, bits=4):
    """The weight tensor a config's kernel reads: Wq, or its word or pair
    packing."""
    if config and config.get("pairs"):
        if config.get("tiled"):
            return pack_pairs_mma_tiled(Wq, bits, config["block_K"], config["block_N"],
                                        config.get("splits", 1))
        if "block_M" in config:
            return pack_pairs_mma(Wq, bits, config["block_K"])
        return pack_pairs(Wq, bits)
    return pack_words(Wq, bits, config["word"]) if config and "word" in config else Wq


def pack_scales(S, bits=4, word="int64"):
    """The scales in the order of the word-packed format (offline, same
    shape): with P parts a word and G = K / P / group groups in a slice of
    K, S_packed[n, g * P + i] = S[n, i * G + g], the P scales of word
    column b (group g = b / group) adjacent, viewed as (N, groups / 4) int64
    words of 4 scales (what `dequant_gemm_packed(packed_scales=True)` reads)."""
    parts = (64 if word == "int64" else 32) // bits
    N, groups = S.shape
    if groups % parts:
        raise ValueError(f"{groups} groups do not split into {parts} slices")
    S = S.reshape(N, parts, groups // parts).transpose(1, 2).reshape(N, groups).contiguous()
    return S.view(torch.int64)


def tile_scales(S, block_N):
    """The scales (N, groups) in the tiled pair GEMM's order (offline):
    (N / block_N, groups, block_N), the scales of a tile's rows for one
    group contiguous."""
    N, groups = S.shape
    if N % block_N:
        raise ValueError(f"N = {N} is not whole tiles of {block_N} rows")
    return S.reshape(N // block_N, block_N, groups).transpose(1, 2).contiguous()


def scales_for(config, S, bits=4):
    """The scale tensor a config's kernel reads: S, pack_scales(S) or
    tile_scales(S)."""
    if config and config.get("packed_scales"):
        return pack_scales(S, bits, config["word"])
    if config and config.get("tiled"):
        return tile_scales(S, config["block_N"])
    return S


def is_chunked_gemv(config):
    """Whether a config is the chunked float32 GEMV (`dequant_gemv`)."""
    return (config is not None and "block_M" not in config and not config.get("elementwise")
            and not config.get("pairs"))


def input_key(config):
    """Configs with equal keys read the same arguments (`inputs_for`)."""
    config = config or {}
    tiles = ((config.get("block_N"), config.get("splits", 1)) if config.get("tiled")
             else None)
    return (config.get("word"), config.get("packed_scales"), bool(config.get("pairs")),
            config.get("block_K") if config.get("pairs") and "block_M" in config else None,
            is_chunked_gemv(config), tiles)


def inputs_for(config, A, Wq, S, bits=4):
    """The kernel arguments of a config (M = 1 with no config: the default
    GEMV): word-packed weights and scales (done once, offline) or, for the
    chunked GEMV, Wq viewed as int32 words (N, bytes / 4)."""
    if is_chunked_gemv(config):
        return A, Wq.view(torch.int32), S
    if config and config.get("pairs") and "block_M" not in config:  # x as float16 pairs
        return A.view(torch.int32), pack_pairs(Wq, bits), S
    return A, weights_for(config, Wq, bits), scales_for(config, S, bits)


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
