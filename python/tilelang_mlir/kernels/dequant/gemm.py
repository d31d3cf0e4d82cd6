"""The dequant GEMM tile programs: `dequant_gemm` (W dequantized into
shared memory), `dequant_gemm_tn` (C^T = W X^T, W the register operand),
`dequant_gemm_packed` (on word-packed weights) and `dequant_gemm_pairs`
(float16 pairs on pair-packed weights). The formats they read and the
packers are in `packers`; the tuned tiles in `configs`.
"""

import tilelang_mlir.language as T

from .macros import (H2_1024, H2_1032, H2_1152, H2_MINUS_72, H2_SIXTEENTH, first_words,
                     step_words, store_transposed)
from .packers import check_packed_shapes, check_shapes

FullCol = T.GemmWarpPolicy.FullCol
FullRow = T.GemmWarpPolicy.FullRow


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
            first_words(Wq, bx * block_N, 0, wq_next, prefetch)
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
            if not w_shared:
                for g in G:
                    first_words(Wp, bx * block_N, g * gwords, wq_next[g], prefetch)
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
