"""`tilelang.utils.sparse`: 2:4 sparse operands for `T.gemm_sp` on the host.

`compress(A, meta_dtype=None)` is TileLang's compressor of its later
releases: (A_sparse, E) with the ordered metadata `T.gemm_sp` reads
(tilelang_mlir/sparse.py: two kept values per group of four, four bits of
positions per group, int16 metadata unless `meta_dtype` says otherwise).
The `*_semi_sparse` helpers make 2:4-sparse test matrices as TileLang's do:
in every group of four columns of a row, the two largest values become 0.

The older releases' `compress(A, transposed, arch)` returned metadata in
CUTLASS's storage order (made by a CUTLASS C++ extension on sm_90, by
PyTorch's CUTLASS path on sm_80), for kernels that annotate E with
`tilelang.layout.make_cutlass_metadata_layout`; that call is refused with
what to write instead (this package builds no CUDA C++ extension).
"""

from __future__ import annotations

from .. import sparse as _sparse

__all__ = ["compress", "randn_semi_sparse", "randint_semi_sparse", "arange_semi_sparse"]

_OLD_API = ("tilelang.utils.sparse.compress(A, transposed, arch) of TileLang's older releases "
            "(metadata in CUTLASS's storage order, from a CUTLASS C++ extension)")


def _meta_name(meta_dtype) -> str:
    if meta_dtype is None:
        return "int16"
    name = str(meta_dtype).replace("torch.", "")
    if name not in ("int8", "int16", "int32"):
        raise ValueError(f"metadata dtype must be torch.int8, int16 or int32, got {meta_dtype}")
    return name


def compress(A, meta_dtype=None, *args, **kwargs):
    """(A_sparse, E) of the 2:4-sparse matrix A (2-d, rows of groups of
    four columns): the kept values (M x K/2) and the ordered metadata
    (M x K/b for b-bit `meta_dtype`, a torch integer dtype; default int16)
    that `T.gemm_sp` takes. float32 (TileLang's 1:2 sparsity) is not
    supported by T.gemm_sp here: ValueError."""
    import torch

    from ..base.errors import TileLangError
    from .refusals import refusal

    if isinstance(meta_dtype, bool) or args or "transposed" in kwargs or "arch" in kwargs:
        raise TileLangError(refusal(
            _OLD_API, "TileLang's adapter internals: compress with compress(A) (ordered "
                      "metadata, which T.gemm_sp reads as it is) and drop the "
                      "make_cutlass_metadata_layout annotation of E"))
    if kwargs:
        raise TypeError(f"compress() got unexpected keyword arguments {sorted(kwargs)}")
    if not isinstance(A, torch.Tensor) or A.dim() != 2:
        raise ValueError("compress takes a 2-d torch tensor")
    if A.dtype == torch.float32:
        raise ValueError("compress: float32 operands (TileLang's 1:2 sparsity for TF32) are not "
                         "supported by T.gemm_sp here; use float16, bfloat16, int8 or float8")
    return _sparse.compress(A.contiguous(), _meta_name(meta_dtype))


def _sparsify(tensor, M: int, K: int, transposed: bool, dtype):
    """Zeroes the two largest values of every group of four columns of each
    row (for a float32 `dtype`, TileLang's groups of two, one zeroed)."""
    import torch

    keep, group = (1, 2) if dtype == torch.float32 else (2, 4)
    if K % group:
        raise ValueError(f"K = {K} must be a multiple of {group}")
    grouped = tensor.view(M, K // group, group)
    idx = grouped.topk(keep, dim=-1).indices
    grouped.scatter_(-1, idx, 0)
    out = grouped.view(M, K)
    return out.t().contiguous() if transposed else out


def randn_semi_sparse(M: int, K: int, dtype=None, device="cuda", transposed: bool = False):
    """A random normal M x K matrix (K x M if `transposed`) with 2:4
    sparsity along K, in `dtype` (default float16)."""
    import torch

    dtype = torch.float16 if dtype is None else dtype
    t = torch.randn((M, K), dtype=torch.float32, device=device)
    return _sparsify(t, M, K, transposed, dtype).to(dtype)


def randint_semi_sparse(M: int, K: int, low: int, high: int, dtype=None, device="cuda",
                        transposed: bool = False):
    """A random integer M x K matrix in [low, high) with 2:4 sparsity along
    K (default int32)."""
    import torch

    dtype = torch.int32 if dtype is None else dtype
    return _sparsify(torch.randint(low, high, (M, K), dtype=dtype, device=device), M, K,
                     transposed, dtype)


def arange_semi_sparse(M: int, K: int, dtype=None, device="cuda", transposed: bool = False):
    """0 .. M*K-1 as an M x K matrix with 2:4 sparsity along K (default
    float16)."""
    import torch

    dtype = torch.float16 if dtype is None else dtype
    return _sparsify(torch.arange(M * K, dtype=dtype, device=device).view(M, K), M, K,
                     transposed, dtype)
