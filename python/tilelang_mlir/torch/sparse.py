"""2:4 structured sparsity on the host: the operands `T.gemm_sp` takes.

A matrix A (M x K) is 2:4 sparse when every group of four consecutive
elements of a row (columns 4g .. 4g+3) holds at most two nonzeros.
`compress(A)` packs it into

- `A_sparse` (M x K/2): the two kept values of each group, in column order
  (group g gives columns 2g and 2g + 1);
- `E` (M x K/b, for b-bit integer elements): the metadata. Group g is
  described by four bits, at bit 4 * (g mod (b/4)) of E[m, g // (b/4)]: the
  low two bits are the position (0..3) in the group of the first kept value,
  the high two bits that of the second (first < second). An int16 element
  thus covers 16 columns of A, four groups.

This is the row-major metadata of the sparse tensor-core instructions (PTX
`mma.sp` / `wgmma.mma_async.sp`, one 16-bit chunk per row and 16 columns),
and the metadata PyTorch's CUTLASS path computes
(`torch.sparse._semi_structured_conversions`) before it interleaves it for
CUTLASS; the kernels read it as it is, so there is no reordering step.
Groups with fewer than two nonzeros keep zeros at the lowest free positions.

    A_sparse, E = compress(A)            # torch tensors, int16 metadata
    assert torch.equal(decompress(A_sparse, E), A)

A matrix already in torch's `SparseSemiStructuredTensor` form converts
through its dense value: `compress(a_sp.to_dense())`.
"""

from __future__ import annotations

__all__ = ["compress", "decompress", "random_2_4"]

_META_BITS = {"int8": 8, "int16": 16, "int32": 32}


def _torch():
    import torch

    return torch


def _meta_bits(dtype) -> int:
    name = str(dtype).replace("torch.", "")
    if name not in _META_BITS:
        raise ValueError(f"metadata dtype must be int8, int16 or int32, got {dtype}")
    return _META_BITS[name]


def compress(A, meta_dtype="int16"):
    """(A_sparse, E) of a 2:4-sparse M x K matrix A (a torch tensor; K a
    multiple of the metadata width, 16 for int16). Raises ValueError when a
    group of four holds more than two nonzeros."""
    torch = _torch()
    bits = _meta_bits(meta_dtype)
    if A.dim() != 2:
        raise ValueError(f"compress takes a 2-d matrix, got shape {tuple(A.shape)}")
    m, k = A.shape
    if k % bits:
        raise ValueError(f"K = {k} must be a multiple of {bits} for {bits}-bit metadata")
    groups = A.reshape(m, k // 4, 4)
    nonzero = groups != 0
    counts = nonzero.sum(-1)
    if bool((counts > 2).any()):
        row, g = (counts > 2).nonzero()[0].tolist()
        raise ValueError(f"A is not 2:4 sparse: row {row}, columns {4 * g}..{4 * g + 3} "
                         f"hold {int(counts[row, g])} nonzeros")
    # Nonzeros first, then zeros, each in column order; keep the first two
    # and put them back in column order.
    pos = torch.arange(4, device=A.device)
    key = (~nonzero).to(torch.int64) * 4 + pos
    idx = key.argsort(dim=-1)[..., :2].sort(dim=-1).values
    values = groups.gather(-1, idx).reshape(m, k // 2).contiguous()
    nibble = (idx[..., 0] | (idx[..., 1] << 2)).to(torch.int64)  # (m, k/4)
    per = bits // 4
    shifts = torch.arange(per, device=A.device, dtype=torch.int64) * 4
    packed = (nibble.reshape(m, k // bits, per) << shifts).sum(-1)
    packed = torch.where(packed >= 2 ** (bits - 1), packed - 2 ** bits, packed)
    E = packed.to(getattr(torch, f"int{bits}")).contiguous()
    return values, E


def decompress(A_sparse, E):
    """The dense M x K matrix that `compress` packed into (A_sparse, E)."""
    torch = _torch()
    bits = _meta_bits(E.dtype)
    m, half = A_sparse.shape
    k = 2 * half
    if E.shape != (m, k // bits):
        raise ValueError(f"E must be {m} x {k // bits} for A_sparse of shape {tuple(A_sparse.shape)}, "
                         f"got {tuple(E.shape)}")
    per = bits // 4
    e = E.to(torch.int64) & ((1 << bits) - 1)
    shifts = torch.arange(per, device=E.device, dtype=torch.int64) * 4
    nibble = ((e.unsqueeze(-1) >> shifts) & 0xF).reshape(m, k // 4)
    idx = torch.stack([nibble & 3, (nibble >> 2) & 3], dim=-1)
    dense = torch.zeros(m, k // 4, 4, dtype=A_sparse.dtype, device=A_sparse.device)
    dense.scatter_(-1, idx, A_sparse.reshape(m, k // 4, 2))
    return dense.reshape(m, k)


def random_2_4(M, K, dtype="float16", device="cpu", generator=None):
    """A random M x K matrix with exactly two nonzeros (standard normal) in
    every group of four columns, at random positions."""
    torch = _torch()
    tdtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    vals = torch.randn(M, K, generator=generator)
    scores = torch.rand(M, K // 4, 4, generator=generator)
    keep = scores.argsort(dim=-1)[..., :2]
    mask = torch.zeros(M, K // 4, 4, dtype=torch.bool).scatter_(-1, keep, True)
    return (vals * mask.reshape(M, K)).to(tdtype).to(device)
