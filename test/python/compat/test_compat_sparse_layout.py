"""TileLang's 2:4 sparse host API through the compat route (issue 43):
`tilelang.layout.make_cutlass_metadata_layout` (and the module
`tilelang.layout.gemm_sp`) places CUTLASS-compressed metadata so that
T.gemm_sp reads it in its ordered form; `tilelang.utils.sparse` compresses
and makes 2:4-sparse matrices. The sm_80 placement is checked against
PyTorch's CUTLASS conversion, and a T.gemm_sp kernel fed CUTLASS-ordered
metadata runs on the CPU target against a float64 product."""

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.bounds import assert_float32_matmul
from tilelang_mlir import TileLangError, compat
from tilelang_mlir.sparse import compress as ordered_compress, decompress, random_2_4

cutlass_conv = pytest.importorskip("torch.sparse._semi_structured_conversions")

# TileLang's modules, served by the compat route while this file's tests run
# (installed and removed around them: the route changes process-wide
# defaults such as the profiler's).
tlayout = gemm_sp_layout = tsparse = None


@pytest.fixture(autouse=True, scope="module")
def _compat_route():
    global tlayout, gemm_sp_layout, tsparse
    compat.install(force=True)
    import tilelang.layout
    import tilelang.layout.gemm_sp
    import tilelang.utils.sparse

    tlayout, gemm_sp_layout, tsparse = (tilelang.layout, tilelang.layout.gemm_sp,
                                        tilelang.utils.sparse)
    yield
    compat.uninstall()


class _Buf:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = list(shape), dtype


def _int_2_4(m, k, gen):
    """A 2:4 int8 matrix whose kept values are nonzero (so the positions are
    the nonzeros' own)."""
    mask = random_2_4(m, k, "float32", generator=gen) != 0
    vals = torch.randint(1, 100, (m, k), generator=gen) * (1 - 2 * (torch.rand(m, k, generator=gen) < 0.5))
    return (vals * mask).to(torch.int8)


def _logical(layout, physical):
    """The elements the kernel reads at each logical index: physical[layout(i, j)]."""
    idx = np.indices(physical.shape[:1] + physical.shape[1:])
    out = layout.forward(list(idx))
    if len(out) == 1:
        return physical.reshape(-1)[out[0]]
    return physical[out[0], out[1]]


@pytest.mark.parametrize("a_dtype,meta,rows,cols", [(torch.float16, "int16", 64, 128),
                                                     (torch.bfloat16, "int16", 96, 64),
                                                     (torch.int8, "int32", 48, 256)])
def test_sm8x_layout_matches_pytorch_cutlass(a_dtype, meta, rows, cols):
    gen = torch.Generator().manual_seed(rows * cols)
    if a_dtype == torch.int8:
        a = _int_2_4(rows, cols, gen)
    else:
        a = random_2_4(rows, cols, str(a_dtype).replace("torch.", ""), generator=gen)
    values, e_cutlass = cutlass_conv.sparse_semi_structured_from_dense_cutlass(a)
    values_ours, e = ordered_compress(a, meta)
    assert torch.equal(values, values_ours)
    assert tuple(e_cutlass.shape) == tuple(e.shape)
    layout = tlayout.make_cutlass_metadata_layout(
        _Buf(e.shape, meta), str(a_dtype).replace("torch.", ""), arch="8.0")
    layout.check_bijective(list(e.shape))
    np.testing.assert_array_equal(_logical(layout, e_cutlass.numpy()), e.numpy())
    assert not np.array_equal(e_cutlass.numpy(), e.numpy())  # a real reordering


@pytest.mark.parametrize("mma,block_k,shape", [("float16", 64, (128, 16)),
                                               ("bfloat16", 128, (64, 16)),
                                               ("float32", 64, (64, 16)),
                                               ("int8", 128, (128, 32)),
                                               ("float8_e4m3", 64, (64, 16))])
def test_sm90_layout_is_one_to_one(mma, block_k, shape):
    layout = gemm_sp_layout.make_cutlass_metadata_layout_sm90(_Buf(shape, "uint8"), mma, block_k)
    layout.check_bijective(list(shape))
    assert layout.output_shape(list(shape)) == [shape[0] * shape[1]]
    via_arch = tlayout.make_cutlass_metadata_layout(_Buf(shape, "int8"), mma, arch="9.0",
                                                    block_k=block_k)
    idx = list(np.indices(shape))
    np.testing.assert_array_equal(layout.forward(idx)[0], via_arch.forward(idx)[0])


def test_layout_errors():
    with pytest.raises(ValueError, match="metadata should be 16 bit"):
        gemm_sp_layout.make_cutlass_metadata_layout_sm8x(_Buf((32, 8), "int32"), "float16")
    with pytest.raises(ValueError, match="metadata should be 32 bit"):
        gemm_sp_layout.make_cutlass_metadata_layout_sm8x(_Buf((32, 8), "int16"), "int8")
    with pytest.raises(ValueError, match="metadata should be 8 bit"):
        gemm_sp_layout.make_cutlass_metadata_layout_sm90(_Buf((64, 8), "int16"), "float16", 64)
    with pytest.raises(NotImplementedError, match="Unsupported dtype"):
        gemm_sp_layout.make_cutlass_metadata_layout_sm90(_Buf((64, 8), "int8"), "float64", 64)
    with pytest.raises(ValueError, match="Tile K is too small"):
        gemm_sp_layout.make_cutlass_metadata_layout_sm90(_Buf((64, 8), "int8"), "float16", 16)
    with pytest.raises(NotImplementedError, match="Unsupported architecture"):
        tlayout.make_cutlass_metadata_layout(_Buf((32, 8), "int16"), "float16", arch="7.5")
    with pytest.warns(UserWarning, match="too large"):
        gemm_sp_layout.make_cutlass_metadata_layout_sm90(_Buf((64, 16), "int8"), "float16", 256)
    assert gemm_sp_layout.decompose_col_major(23, [4, 3, 5]) == [3, 2, 1]


def _gemm_sp_cutlass_meta(M, N, K, arch, meta, block_M=64, block_N=64, block_K=64):
    e_factor = {"int16": 16, "int8": 8}[meta]

    @T.prim_func
    def main(A_sparse: T.Tensor((M, K // 2), T.float16), E: T.Tensor((M, K // e_factor), meta),
             B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K // 2), T.float16)
            E_shared = T.alloc_shared((block_M, block_K // e_factor), meta)
            B_shared = T.alloc_shared((block_K, block_N), T.float16)
            C_local = T.alloc_fragment((block_M, block_N), T.float32)
            extra = {"block_k": block_K} if arch == "9.0" else {}
            T.annotate_layout({
                E: tlayout.make_cutlass_metadata_layout(E, T.float16, arch=arch, **extra),
                E_shared: tlayout.make_cutlass_metadata_layout(E_shared, T.float16, arch=arch,
                                                               **extra)})
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A_sparse[by * block_M, k * block_K // 2], A_shared)
                T.copy(E[by * block_M, k * block_K // e_factor], E_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm_sp(A_shared, E_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def test_gemm_sp_reads_cutlass_sm80_metadata(target):
    M, N, K = 128, 64, 128
    gen = torch.Generator().manual_seed(7)
    a = random_2_4(M, K, "float16", generator=gen)
    b = torch.randn(K, N, generator=gen).to(torch.float16)
    a_sparse, e_cutlass = cutlass_conv.sparse_semi_structured_from_dense_cutlass(a)
    program = _gemm_sp_cutlass_meta(M, N, K, "8.0", "int16")
    kernel = tl.compile(program, target=target)
    dev = "cuda" if target == "cuda" else "cpu"
    c = torch.zeros(M, N, dtype=torch.float32, device=dev)
    kernel(a_sparse.to(dev), e_cutlass.to(dev), b.to(dev), c)
    if target == "cuda":
        ref = a.double().numpy() @ b.double().numpy()
        np.testing.assert_allclose(c.cpu().numpy(), ref, rtol=1e-2, atol=1e-2)
    else:
        assert_float32_matmul(c, a, b)  # float32 sums of exact float16 products
        for arch in ("cuda:sm_80", "cuda:sm_90a"):
            tl.compile(program, target=arch)
            tl.compile(_gemm_sp_cutlass_meta(M, N, K, "9.0", "int8"), target=arch)


def test_gemm_sp_reads_sm90_placed_metadata():
    """int8 metadata stored where the sm_90 layout places each element (the
    ordered E scattered through it) is read back in order."""
    M, N, K = 64, 64, 128
    gen = torch.Generator().manual_seed(11)
    a = random_2_4(M, K, "float16", generator=gen)
    b = torch.randn(K, N, generator=gen).to(torch.float16)
    a_sparse, e = ordered_compress(a, "int8")
    layout = gemm_sp_layout.make_cutlass_metadata_layout_sm90(_Buf(e.shape, "int8"), "float16", 64)
    place = layout.forward(list(np.indices(tuple(e.shape))))[0]
    stored = np.zeros(e.numel(), dtype=np.int8)
    stored[place.reshape(-1)] = e.numpy().reshape(-1)
    kernel = tl.compile(_gemm_sp_cutlass_meta(M, N, K, "9.0", "int8"), target="cpu")
    c = torch.zeros(M, N, dtype=torch.float32)
    kernel(a_sparse, torch.from_numpy(stored.reshape(tuple(e.shape))), b, c)
    assert_float32_matmul(c, a, b)  # float32 sums of exact float16 products


def test_utils_sparse_compress_and_generators():
    gen = torch.Generator().manual_seed(3)
    a = random_2_4(32, 64, "bfloat16", generator=gen)
    values, e = tsparse.compress(a)
    assert e.dtype == torch.int16 and torch.equal(decompress(values, e), a)
    values32, e32 = tsparse.compress(a, torch.int32)
    assert e32.dtype == torch.int32 and torch.equal(decompress(values32, e32), a)
    torch.manual_seed(5)
    for make, dtype in ((lambda: tsparse.randn_semi_sparse(16, 64, torch.float16, "cpu"),
                         torch.float16),
                        (lambda: tsparse.randint_semi_sparse(16, 64, 1, 50, torch.int32, "cpu"),
                         torch.int32),
                        (lambda: tsparse.arange_semi_sparse(16, 64, torch.float32, "cpu"),
                         torch.float32)):
        x = make()
        assert x.dtype == dtype and x.shape == (16, 64)
        group = 2 if dtype == torch.float32 else 4
        zeros = (x.view(16, -1, group) == 0).sum(-1)
        assert bool((zeros >= group // 2).all())
    ar = tsparse.arange_semi_sparse(2, 8, torch.float16, "cpu")  # the largest two are zeroed
    assert ar.tolist() == [[0, 1, 0, 0, 4, 5, 0, 0], [8, 9, 0, 0, 12, 13, 0, 0]]
    t = tsparse.randn_semi_sparse(8, 16, torch.float16, "cpu", transposed=True)
    assert t.shape == (16, 8) and bool(((t.t().reshape(8, 4, 4) == 0).sum(-1) >= 2).all())


def test_utils_sparse_errors():
    a = random_2_4(16, 32, "float16")
    with pytest.raises(TileLangError, match="older releases.*compress\\(A\\)"):
        tsparse.compress(a, False)
    with pytest.raises(TileLangError, match="out of scope"):
        tsparse.compress(a, transposed=False, arch="9.0")
    with pytest.raises(ValueError, match="float32 operands"):
        tsparse.compress(a.float())
    with pytest.raises(ValueError, match="metadata dtype must be"):
        tsparse.compress(a, torch.float16)
    with pytest.raises(ValueError, match="not 2:4 sparse"):
        tsparse.compress(torch.ones(16, 32, dtype=torch.float16))

