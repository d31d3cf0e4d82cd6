"""2:4 structured-sparse GEMM (`T.gemm_sp`): the host converter, the CPU
path, the CUDA lowerings (mma.sp on sm_80, wgmma.mma_async.sp on sm_90a)
as PTX, and on a GPU the results against dense torch matmuls."""

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.bounds import assert_float32_matmul
from tilelang_mlir.kernels import gemm_sp as lib
from tilelang_mlir.sparse import compress, decompress, random_2_4
from tilelang_mlir.testing import random_seed, relative_error, to_device


def _seed():
    torch.manual_seed(random_seed())


def gemm_sp_general(M, N, K, block_M, block_N, block_K, threads, dtype="float16",
                    meta="int16", trans_B=False, num_stages=2):
    """Like the example, with the metadata type and B's layout chosen."""
    bits = {"int8": 8, "int16": 16, "int32": 32}[meta]
    b_shape = (N, K) if trans_B else (K, N)
    bs_shape = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def main(A_sparse: T.Tensor((M, K // 2), dtype), E: T.Tensor((M, K // bits), meta),
             B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K // 2), dtype)
            E_shared = T.alloc_shared((block_M, block_K // bits), meta)
            B_shared = T.alloc_shared(bs_shape, dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A_sparse[by * block_M, k * block_K // 2], A_shared)
                T.copy(E[by * block_M, k * block_K // bits], E_shared)
                if trans_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm_sp(A_shared, E_shared, B_shared, C_local, transpose_B=trans_B)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def _problem(M, N, K, dtype, meta="int16", trans_B=False, device="cpu"):
    tdtype = getattr(torch, dtype)
    a = random_2_4(M, K, dtype)
    b = torch.randn(K, N).to(tdtype)
    a_sparse, e = compress(a, meta)
    b_arg = b.T.contiguous() if trans_B else b
    ref = a.double() @ b.double()
    args = [a_sparse, e, b_arg]
    if device == "cuda":  # CPU tensors where no GPU exists (AOT prepare)
        args = [to_device(x, "cuda") for x in args]
    return args, ref


# Host converter -------------------------------------------------------------


@pytest.mark.parametrize("meta", ["int8", "int16", "int32"])
def test_compress_round_trip(meta):
    _seed()
    a = random_2_4(48, 96, "float16")
    a_sparse, e = compress(a, meta)
    bits = int(meta[3:])
    assert a_sparse.shape == (48, 48) and e.shape == (48, 96 // bits)
    assert e.dtype == getattr(torch, meta)
    assert torch.equal(decompress(a_sparse, e), a)


def test_compress_metadata_encoding():
    """Row [0, 5, 0, 7 | 1, 2, 0, 0 | ...]: positions (1, 3) -> 0b1101,
    (0, 1) -> 0b0100, at bits 0 and 4 of the int16."""
    a = torch.zeros(1, 16, dtype=torch.float16)
    a[0, 1], a[0, 3], a[0, 4], a[0, 5] = 5, 7, 1, 2
    a[0, 8 + 2] = 3  # one nonzero: kept with the lowest free position (0)
    a_sparse, e = compress(a)
    assert a_sparse[0, :6].tolist() == [5, 7, 1, 2, 0, 3]
    assert int(e[0, 0]) & 0xFFF == (0b1101 | 0b0100 << 4 | 0b1000 << 8)


def test_compress_refuses_dense_groups():
    a = torch.ones(4, 16, dtype=torch.float16)
    with pytest.raises(ValueError, match="not 2:4 sparse: row 0, columns 0..3 hold 4"):
        compress(a)
    with pytest.raises(ValueError, match="multiple of 16"):
        compress(torch.zeros(4, 8))
    with pytest.raises(ValueError, match="int8, int16 or int32"):
        compress(torch.zeros(4, 16), "int64")


# Emulator of the per-thread semantics ----------------------------------------


def _mma_sp_emulate(a_frags, b_frags, metas, selector):
    """One mma.sp m16n8k32 (f16/bf16) from per-lane operands, as PTX defines
    it: lane l = 4g + t holds compressed A (16 x 16) at rows g, g + 8 and
    columns 2t, 2t + 1, +8 (a0..a7 as the dense m16k16 fragment), B (32 x 8)
    rows 2t + e + 8i of column g (b0..b7), and, when t // 2 == selector,
    the metadata of rows g (bits 0-15) and g + 8 (bits 16-31) for columns
    16 (t % 2) .. +15, four bits per group of four columns."""
    ac = np.zeros((16, 16))
    b = np.zeros((32, 8))
    meta = np.zeros((16, 8), dtype=np.int64)  # nibble per (row, group)
    for lane in range(32):
        g, t = divmod(lane, 4)
        for i, v in enumerate(a_frags[lane]):
            ac[g + 8 * ((i // 2) % 2), 2 * t + i % 2 + 8 * (i // 4)] = v
        for i, v in enumerate(b_frags[lane]):
            b[2 * t + i % 2 + 8 * (i // 2), g] = v
        if t // 2 == selector:
            for half, row in ((0, g), (1, g + 8)):
                chunk = (metas[lane] >> (16 * half)) & 0xFFFF
                for q in range(4):
                    meta[row, 4 * (t % 2) + q] = (chunk >> (4 * q)) & 0xF
    a = np.zeros((16, 32))
    for r in range(16):
        for q in range(8):
            a[r, 4 * q + (meta[r, q] & 3)] = ac[r, 2 * q]
            a[r, 4 * q + (meta[r, q] >> 2)] = ac[r, 2 * q + 1]
    return a @ b


def test_metadata_registers_emulated():
    """The register fill of the CUDA lowering (gemmSpMetadata, ldmatrix
    fragments), emulated per lane on a 16 x 64 tile: two K steps of 32, one
    metadata register per lane for both (lanes 2, 3 hold the second step's
    chunks; selectors 0 then 1), reproduces A @ B from compress()'s E."""
    _seed()
    a = random_2_4(16, 64, "float16").double()
    bmat = torch.randn(64, 8, dtype=torch.float64)
    a_sparse, e = compress(a)
    e16 = e.numpy().astype(np.int64) & 0xFFFF
    acs = a_sparse.numpy()
    metas = []
    for lane in range(32):
        g, t = divmod(lane, 4)
        chunk = t % 2 + 2 * (t // 2)  # k0 = 0, paired with the next step
        metas.append(int(e16[g, chunk] | (e16[g + 8, chunk] << 16)))
    out = np.zeros((16, 8))
    for step in range(2):
        k0 = 32 * step
        a_frags, b_frags = [], []
        for lane in range(32):
            g, t = divmod(lane, 4)
            a_frags.append([acs[g + 8 * ((i // 2) % 2), k0 // 2 + 2 * t + i % 2 + 8 * (i // 4)]
                            for i in range(8)])
            b_frags.append([bmat[k0 + 2 * t + i % 2 + 8 * (i // 2), g].item() for i in range(8)])
        out += _mma_sp_emulate(a_frags, b_frags, metas, selector=step)
    np.testing.assert_allclose(out, (a @ bmat).numpy(), rtol=1e-12, atol=1e-9)


# CPU -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,meta,trans_B", [
    ("float16", "int16", False),
    ("bfloat16", "int16", True),
    ("float16", "int32", True),
    ("float16", "int8", False),
])
def test_gemm_sp_cpu(dtype, meta, trans_B):
    _seed()
    M, N, K = 64, 48, 128
    kernel = tl.compile(gemm_sp_general(M, N, K, 32, 16, 64, 32, dtype, meta, trans_B),
                        out_idx=[3], target="cpu")
    args, ref = _problem(M, N, K, dtype, meta, trans_B)
    out = kernel(*args)
    # float32 sums of exact float16/bfloat16 products: the summation bound (|A| from the
    # kernel's operands, decompressed; the product from the dense A)
    assert_float32_matmul(out, decompress(args[0], args[1]), args[2].T if trans_B else args[2],
                          want=ref)


# CUDA lowering (compiles here, ptxas checks the PTX) -------------------------


def _ptx(program, arch):
    kernel = tl.compile(program, out_idx=[3], target=f"cuda:{arch}",
                        pass_configs={"tl.disable_cache": True})
    return kernel.get_source()


def test_sm80_uses_mma_sp():
    ptx = _ptx(lib.gemm_sp(256, 256, 256), "sm_80")
    # 2x2 warps of 64x64: 4 m tiles x 8 n tiles per K step of 32, two steps
    # per copy of the loop body (the pipeliner peels some).
    count = ptx.count("mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32")
    assert count > 0 and count % 64 == 0, count
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx


def test_sm90a_uses_sparse_wgmma():
    ptx = _ptx(lib.gemm_sp(256, 512, 256, **lib.FAST), "sm_90a")
    assert ".version 8.2" in ptx
    # 2 warpgroups of 64x256, 4 K steps of 32 per K tile (LLVM may unroll
    # the loop): sparsity selectors 0, 1, 0, 1 (one metadata register per
    # two steps).
    steps = [line for line in ptx.splitlines()
             if "wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.f16.f16" in line]
    assert steps and len(steps) % 4 == 0, len(steps)
    assert [s.split(",")[-6].strip() for s in steps] == ["0", "1"] * (len(steps) // 2)
    assert "cp.async.bulk.tensor" in ptx  # A_sparse, E and B arrive by TMA


def test_sm90a_bf16_and_k_major_b():
    prog = gemm_sp_general(128, 128, 256, 64, 128, 64, 128, "bfloat16", trans_B=True)
    ptx = _ptx(prog, "sm_90a")
    assert "wgmma.mma_async.sp.sync.aligned.m64n128k32.f32.bf16.bf16" in ptx
    # K-major B: imm-trans-b = 0.
    assert all(line.rstrip().endswith("1, 1, 0, 0;") for line in ptx.splitlines()
               if "wgmma.mma_async.sp" in line)


def test_two_warps_fall_back_to_mma_sp_on_sm90a():
    ptx = _ptx(gemm_sp_general(64, 64, 128, 64, 64, 64, 64), "sm_90a")
    assert "mma.sp.sync.aligned.m16n8k32" in ptx and "wgmma" not in ptx


def _small_gemm_sp(gemm, metadata_scope="shared", accumulator="float32"):
    """A 64 x 64 x 64 block: A_sparse, E and B copied to `shared` (E to
    `metadata_scope`), `gemm(a, e, b, c)` into a fragment C of
    `accumulator`, copied out."""
    alloc_e = T.alloc_fragment if metadata_scope == "fragment" else T.alloc_shared

    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), E: T.Tensor((64, 4), "int16"),
             B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), accumulator)):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 32), "float16")
            e = alloc_e((64, 4), "int16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), accumulator)
            T.copy(A, a)
            T.copy(E, e)
            T.copy(B, b)
            T.clear(c)
            gemm(a, e, b, c)
            T.copy(c, C)

    return main


def test_fragment_metadata_is_refused():
    main = _small_gemm_sp(lambda a, e, b, c: T.gemm_sp(a, e, b, c, clear_accum=True),
                          metadata_scope="fragment")
    with pytest.raises(tl.TileLangError, match="A_sparse, E and B must be shared buffers"):
        tl.compile(main, out_idx=[3], target="cuda:sm_90a")


def test_float16_accumulator_is_refused_on_cuda():
    main = _small_gemm_sp(lambda a, e, b, c: T.gemm_sp(a, e, b, c, clear_accum=True),
                          accumulator="float16")
    with pytest.raises(tl.TileLangError, match="accumulator must be float32"):
        tl.compile(main, out_idx=[3], target="cuda:sm_80")


@pytest.mark.parametrize("form", ["new", "old", "keywords"])
def test_positional_arguments_in_either_release_order(form):
    """TileLang 0.1.10 on: gemm_sp(A, E, B, C, transpose_A, transpose_E,
    transpose_B, policy, ...); up to 0.1.9: (transpose_A, transpose_B, policy,
    ...). Each form with transpose_B=True gives a gemm reading B as N x K."""
    calls = {
        "new": lambda a, e, b, c: T.gemm_sp(a, e, b, c, False, False, True,
                                            T.GemmWarpPolicy.FullRow),
        "old": lambda a, e, b, c: T.gemm_sp(a, e, b, c, False, True, T.GemmWarpPolicy.FullRow),
        "keywords": lambda a, e, b, c: T.gemm_sp(a, e, b, c, transpose_B=True,
                                                 policy=T.GemmWarpPolicy.FullRow),
    }
    kernel = tl.compile(_small_gemm_sp(calls[form]), out_idx=[3], target="cuda:sm_80")
    ops = [ln for ln in kernel.mlir("tile").splitlines() if "tile.gemm_sp" in ln]
    assert len(ops) == 1 and "transpose_b" in ops[0] and "full_row" in ops[0], ops


def test_positional_transpose_E_is_refused():
    main = _small_gemm_sp(lambda a, e, b, c: T.gemm_sp(a, e, b, c, False, True))
    with pytest.raises(tl.TileLangError, match="transpose_E=True"):
        tl.compile(main, out_idx=[3], target="cuda:sm_80")


# GPU -------------------------------------------------------------------------

GPU_CASES = [
    # (M, N, K, config, dtype, meta, trans_B): the sm_90a tiles (wgmma.sp,
    # TMA + warp specialization), then 64-thread blocks (mma.sp on any GPU).
    (512, 512, 512, "fast", "float16", "int16", False),
    (512, 512, 512, "fast", "bfloat16", "int16", False),
    # block_K = 128 (every copy a TMA, K steps 2 and 3 of a tile): two
    # warpgroups of 64 x 128 (Square policy: two m tiles each), 4 stages; a
    # K-major B with int32 metadata; mma.sp over four K steps (no warpgroups).
    (512, 512, 1024, dict(block_M=128, block_N=128, block_K=128, threads=256, num_stages=4),
     "float16", "int16", False),
    (512, 512, 1024, dict(block_M=128, block_N=128, block_K=128, threads=256, num_stages=3),
     "bfloat16", "int32", True),
    (256, 256, 512, dict(block_M=64, block_N=64, block_K=128, threads=64), "float16", "int16", False),
    (256, 256, 512, dict(block_M=128, block_N=128, block_K=64, threads=128), "float16", "int16", True),
    (256, 256, 256, dict(block_M=128, block_N=128, block_K=64, threads=256), "bfloat16", "int32", False),
    (128, 128, 256, dict(block_M=64, block_N=64, block_K=64, threads=64), "float16", "int16", False),
    (128, 128, 256, dict(block_M=64, block_N=64, block_K=64, threads=64), "bfloat16", "int8", True),
]


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K,config,dtype,meta,trans_B", GPU_CASES)
def test_gemm_sp_gpu(M, N, K, config, dtype, meta, trans_B):
    _seed()
    if config == "fast":
        prog = lib.gemm_sp(M, N, K, **lib.FAST, dtype=dtype, out_dtype="float32")
    else:
        prog = gemm_sp_general(M, N, K, dtype=dtype, meta=meta, trans_B=trans_B, **config)
    kernel = tl.compile(prog, out_idx=[3], target="cuda")
    args, ref = _problem(M, N, K, dtype, meta, trans_B, device="cuda")
    out = kernel(*args)
    err = relative_error(out.float().cpu().numpy(), ref.numpy())
    assert err < 5e-3, err
    # Against torch's dense matmul of the decompressed A, on the GPU.
    a = to_device(decompress(args[0].cpu(), args[1].cpu()), "cuda")
    b = args[2].T if trans_B else args[2]
    dense = (a.float() @ b.float()).cpu().numpy()
    assert relative_error(out.float().cpu().numpy(), dense) < 5e-3

