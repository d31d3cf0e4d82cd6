"""Weight-only quantized GEMM, as LLM inference runs it: C = A @ dequant(W)^T
with A (M, K) in float16/bfloat16 and W (N, K) stored as int4 or int8 with
one scale per group of `group` consecutive elements of a row (group 128).

Packing (what `packers.quantize` produces and the kernels read):
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

The package is split by role: `packers` (the formats' rules, quantize, the
offline packers and the reference), `macros` (device code the kernels
share), `gemm` and `gemv` (the tile programs), `configs` (the tuned
configuration tables and `program`, which picks a kernel for a config).
Every public name is importable from here.
"""

from .configs import (DECODE, GEMV, OVERLAP, PACKED, PAIR_RING_BYTES, PAIRS,  # noqa: F401
                      PORTABLE_DECODE, PORTABLE_PAIRS, PORTABLE_PAIRS_PREFILL,
                      PORTABLE_PREFILL, PORTABLE_TN, PREFILL, configs_for, default_config,
                      pair_ring_fits, program)
from .gemm import (dequant_gemm, dequant_gemm_packed, dequant_gemm_pairs,  # noqa: F401
                   dequant_gemm_tn)
from .gemv import dequant_gemv, dequant_gemv_elementwise, dequant_gemv_pairs  # noqa: F401
from .packers import (check_gemv_shapes, check_packed_shapes, check_shapes,  # noqa: F401
                      dequantize, input_key, inputs_for, is_chunked_gemv, pack_pairs,
                      pack_pairs_mma, pack_pairs_mma_tiled, pack_scales, pack_words, quantize,
                      random_problem, reference, scales_for, tile_scales, unpack, unpack_pairs,
                      unpack_pairs_mma, unpack_pairs_mma_tiled, unpack_words, weights_for)
