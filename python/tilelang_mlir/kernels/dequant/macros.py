"""Device code the dequant kernels share, as macros inlined into them:
`first_words` and `step_words` (a step's packed words into registers, the
next step's prefetched) and `store_transposed` (the C^T accumulator of the transposed
kernels stored as C through shared memory), and the float16 pairs the
pair kernels build or subtract (H2_*, as int32 bits).
"""

import tilelang_mlir.language as T


@T.macro
def first_words(W, row, col, wq_next, prefetch):
    """Before the loop of `step_words` with `prefetch`: the first step's
    words of W (at (row, col)) into wq_next; nothing without `prefetch`."""
    if prefetch:
        T.copy(W[row, col], wq_next)


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
