"""Shared buffers whose lifetimes do not overlap share bytes when the buffers
do not fit the chip one after the other (the plan in
lib/Conversion/TileToGPU/SharedMemoryPlan.cpp). The case is TileLang's MLA
decoding example: Q (64x512), Q_pe, the two stages of KV (64x512) and K_pe,
S and O (64x512), all float16, need 288 KB one after the other, more than
the 227 KB of an sm_90a block; O is written only after the last read of Q
and takes its bytes. No GPU here: the sm_90a kernels are compiled (PTX) and
the program itself runs on the CPU on random inputs against PyTorch."""

import re

import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.frontend.errors import CompilationError

NO_CACHE = {"tl.disable_cache": True}
SM90_SHARED = 227 * 1024


def mla_decode(batch, heads, seqlen, dim, pe_dim, block_N, block_H, threads=256, stages=2):
    """TileLang's example_mla_decode.py (the kernel without splits), one KV
    head: O = softmax(Q KV^T + Q_pe K_pe^T) KV per block of block_H heads."""
    scale = float((dim + pe_dim) ** -0.5 * 1.44269504)
    dtype, accum = T.float16, T.float32

    @T.prim_func
    def main(Q: T.Tensor([batch, heads, dim], dtype), Q_pe: T.Tensor([batch, heads, pe_dim], dtype),
             KV: T.Tensor([batch, seqlen, 1, dim], dtype),
             K_pe: T.Tensor([batch, seqlen, 1, pe_dim], dtype),
             Output: T.Tensor([batch, heads, dim], dtype)):
        with T.Kernel(heads // block_H, batch, threads=threads) as (hid, bid):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            S_shared = T.alloc_shared([block_H, block_N], dtype)
            Q_pe_shared = T.alloc_shared([block_H, pe_dim], dtype)
            KV_shared = T.alloc_shared([block_N, dim], dtype)
            K_pe_shared = T.alloc_shared([block_N, pe_dim], dtype)
            O_shared = T.alloc_shared([block_H, dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum)
            acc_o = T.alloc_fragment([block_H, dim], accum)
            scores_max = T.alloc_fragment([block_H], accum)
            scores_max_prev = T.alloc_fragment([block_H], accum)
            scores_scale = T.alloc_fragment([block_H], accum)
            scores_sum = T.alloc_fragment([block_H], accum)
            logsum = T.alloc_fragment([block_H], accum)

            T.copy(Q[bid, hid * block_H:(hid + 1) * block_H, :], Q_shared)
            T.copy(Q_pe[bid, hid * block_H:(hid + 1) * block_H, :], Q_pe_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum))
            for k in T.Pipelined(T.ceildiv(seqlen, block_N), num_stages=stages):
                T.copy(KV[bid, k * block_N:(k + 1) * block_N, 0, :], KV_shared)
                T.copy(K_pe[bid, k * block_N:(k + 1) * block_N, 0, :], K_pe_shared)
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True, clear_accum=True,
                       policy=T.GemmWarpPolicy.FullCol)
                T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True,
                       policy=T.GemmWarpPolicy.FullCol)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                T.copy(acc_s, S_shared)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.gemm(S_shared, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)
            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bid, hid * block_H:(hid + 1) * block_H, :])

    return main


def reference(q, q_pe, kv, k_pe):
    q, q_pe, kv, k_pe = (x.double() for x in (q, q_pe, kv, k_pe))
    scores = (torch.einsum("bhd,bnd->bhn", q, kv[:, :, 0]) +
              torch.einsum("bhd,bnd->bhn", q_pe, k_pe[:, :, 0])) * (q.shape[-1] + q_pe.shape[-1]) ** -0.5
    return torch.einsum("bhn,bnd->bhd", scores.softmax(-1), kv[:, :, 0])


def test_mla_shaped_program_runs_on_cpu():
    """The program of the sm_90a tests, at small sizes, on random inputs."""
    batch, heads, seqlen, dim, pe_dim = 2, 32, 96, 64, 16
    kernel = tl.compile(mla_decode(batch, heads, seqlen, dim, pe_dim, block_N=32, block_H=16,
                                   threads=128),
                        out_idx=[4], target="cpu", pass_configs=NO_CACHE)
    q = torch.randn(batch, heads, dim, dtype=torch.float16)
    q_pe = torch.randn(batch, heads, pe_dim, dtype=torch.float16)
    kv = torch.randn(batch, seqlen, 1, dim, dtype=torch.float16)
    k_pe = torch.randn(batch, seqlen, 1, pe_dim, dtype=torch.float16)
    out = torch.as_tensor(kernel(q, q_pe, kv, k_pe)).double()
    ref = reference(q, q_pe, kv, k_pe)
    assert ((out - ref).norm() / ref.norm()).item() < 1e-2


@pytest.mark.parametrize("batch", [1, 132], ids=["one-tile-per-block", "persistent"])
def test_mla_shaped_kernel_fits_sm90a_by_reusing_shared_memory(batch):
    """The example's sizes: 288 KB of buffers one after the other, within the
    227 KB of sm_90a once O takes Q's bytes. With 264 tiles (batch 132)
    the warp-specialized kernel is persistent: the consumer's loop over
    tiles is the scope of the lifetimes. The drain before the bytes change
    hands: every wgmma group, then the consumers' named barrier."""
    kernel = tl.compile(mla_decode(batch, 128, 8192, 512, 64, block_N=64, block_H=64),
                        out_idx=[4], target="cuda:sm_90a", pass_configs=NO_CACHE)
    assert 0 < kernel.shared_bytes <= SM90_SHARED, kernel.shared_bytes
    ptx = kernel.get_source()
    assert re.search(r"wgmma\.wait_group\.sync\.aligned\s+0;", ptx)
    assert re.search(r"bar\.sync\s+1, 256;", ptx)  # the consumers' named barrier


def test_kernel_too_large_even_with_reuse_names_both_plans():
    """Two 128 KB buffers read by the same gemm are live together: sharing
    bytes cannot help and the error gives both footprints."""

    @T.prim_func
    def big(A: T.Tensor([256, 256], T.float16), B: T.Tensor([256, 256], T.float16),
            C: T.Tensor([256, 256], T.float32)):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared([256, 256], T.float16)
            B_s = T.alloc_shared([256, 256], T.float16)
            C_l = T.alloc_fragment([256, 256], T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C_l, clear_accum=True)
            T.copy(C_l, C)

    with pytest.raises(CompilationError,
                       match=r"more than the 227 KB a block can have on sm_90a; with shared "
                             r"buffers whose lifetimes do not overlap sharing bytes, it still "
                             r"needs \d+"):
        tl.compile(big, target="cuda:sm_90a", pass_configs=NO_CACHE)


def gemm_with_output_tile(M, N, K, block_M=128, block_N=256, block_K=64, stages=3):
    """A GEMM whose float32 output tile goes through shared memory after the
    loop (TileLang's gemm_sp example does so): the three stages of A and B
    (144 KB) and C_shared (128 KB) need 272 KB one after the other. The
    stages are TMA destinations, written while no op runs; each is waited
    for before its last read, so after the loop C_shared takes their bytes."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16),
             C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_K, block_N), T.float16)
            C_s = T.alloc_shared((block_M, block_N), T.float32)
            C_l = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C_s)
            T.copy(C_s, C[by * block_M, bx * block_N])

    return main


def test_output_tile_takes_the_bytes_of_the_tma_stages():
    kernel = tl.compile(gemm_with_output_tile(512, 512, 512), target="cuda:sm_90a",
                        pass_configs=NO_CACHE)
    ptx = kernel.get_source()
    assert "cp.async.bulk.tensor" in ptx  # the stages are TMA destinations
    assert 0 < kernel.shared_bytes <= SM90_SHARED, kernel.shared_bytes
    assert re.search(r"wgmma\.wait_group\.sync\.aligned\s+0;", ptx)


# 12 tiles (one each a block), and 16 x 16 tiles of 128x256: more than the
# 132 SMs, where the kernel would be persistent.
@pytest.mark.gpu
@pytest.mark.parametrize("M, N, K", [(512, 768, 1024), (2048, 4096, 512)])
def test_output_tile_over_the_tma_stages_on_the_gpu(M, N, K):
    kernel = tl.compile(gemm_with_output_tile(M, N, K), out_idx=[2], target="cuda",
                        pass_configs=NO_CACHE)
    a = torch.randn(M, K, dtype=torch.float16, device="cuda")
    b = torch.randn(K, N, dtype=torch.float16, device="cuda")
    c = kernel(a, b)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-2)


def test_output_tile_over_the_stages_keeps_one_tile_a_block():
    """With more tiles than multiprocessors the warp-specialized kernel would
    be persistent, and there the producer fills the next tile's stages while
    the consumers still write C_shared: the stages cannot give it their
    bytes. The buffers fit only if they do, so the kernel stays one tile a
    block (TileLang's gemm_sp example at 16384^3: 300 KB persistent)."""
    kernel = tl.compile(gemm_with_output_tile(4096, 4096, 1024), target="cuda:sm_90a",
                        pass_configs=NO_CACHE)
    assert 0 < kernel.shared_bytes <= SM90_SHARED, kernel.shared_bytes
    assert "tile.persistent" not in kernel.mlir("pipelined")

