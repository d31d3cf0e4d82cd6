"""The dequant GEMV tile programs (M = 1, no tensor cores):
`dequant_gemv` (float32 accumulation over 16-byte chunks of the stored
row), `dequant_gemv_pairs` (float16 pairs on `pack_pairs` weights) and
`dequant_gemv_elementwise` (one accumulator a stored byte, kept for
comparison).
"""

import tilelang_mlir.language as T

from .macros import H2_1024, H2_1032, H2_1152, first_words, step_words
from .packers import check_gemv_shapes


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
            first_words(Wq, bx * block_N, 0, wq_next, prefetch)
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
            first_words(Wp, bx * block_N, 0, wq_next, prefetch)
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
