"""Runs the GEMM (3-stage pipeline; a ragged shape with TMA and with
cp.async) and softmax kernels once, the
explicitly warp-specialized GEMMs of compiler/test_explicit_ws.py (roles,
user barriers, TMA and per-thread cp.async), the bulk (TMA reduce-add)
atomic add of language/test_bulk_atomic_add.py, flash decoding's split and combine kernels
the FlashAttention backward with dq added by TMA (synchronous and
asynchronous gemms), persistent forward and backward walks and launched ones
whose tile copies the TMA producer issues, for compute-sanitizer
(memcheck, racecheck) on a GPU machine."""

import os
import sys

import torch
import torch.nn.attention

# The tests' programs, from test/python (this script runs as a file).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from compiler import test_explicit_ws  # noqa: E402
from language import test_bulk_atomic_add  # noqa: E402
from tilelang_mlir.kernels import programs as kernels  # noqa: E402
import tilelang_mlir as tl  # noqa: E402
from tilelang_mlir.kernels.attention import flash_attn_bwd as fab  # noqa: E402
from tilelang_mlir.kernels.attention import flash_decode as fd  # noqa: E402
from tilelang_mlir.runtime.cuda import NoCUDADevice  # noqa: E402


def main():
    gemm = tl.compile(kernels.matmul(256, 256, 256, 128, 128, 32, num_stages=3), out_idx=[2],
                      target="cuda")
    ragged = tl.compile(kernels.matmul(200, 136, 72, 64, 64, 32, num_stages=3), out_idx=[2],
                        target="cuda")
    # The same ragged shape loaded by every thread with cp.async: copies of
    # rows and columns past the ends read zero bytes from an address past
    # the allocation (not clamped).
    ragged_cp = tl.compile(kernels.matmul(200, 136, 72, 64, 64, 32, num_stages=3), out_idx=[2],
                           target="cuda", pass_configs=fd.CP_ASYNC)
    softmax = tl.compile(kernels.softmax(70, 96, 16), out_idx=[1], target="cuda")
    explicit = [tl.compile(program(128, 256, 256), out_idx=[2], target="cuda")
                for program in (test_explicit_ws.barrierpipe, test_explicit_ws.three_roles,
                                test_explicit_ws.cp_async_gemm)]
    bulk = tl.compile(test_bulk_atomic_add.accumulate(80, 6, 5), target="cuda")
    decode = fd.FlashDecode(1, 32, 8, 128, max_seq=1000, num_splits=8, target="cuda",
                            block_N=64, num_stages=2)
    # Loads by every thread (cp.async), the softmax's reductions across warps
    # taking turns over two scratch regions (tile-merge-barriers erases the
    # barriers between them): multi-head and grouped-query.
    # With tl.pipeline_reuse_slots too (two K/V slots, each copy behind the
    # barrier after the gemm that read its slot).
    # With tl.pipeline_group_per_copy on top (a group per copy, each gemm
    # waiting for its own buffer).
    reuse = fd.CP_ASYNC_REUSE
    grouped = dict(reuse, **{"tl.pipeline_group_per_copy": True})
    decode_cp = [fd.FlashDecode(1, 32, kv, 128, max_seq=1000, num_splits=4, target="cuda",
                                pass_configs=pc, **fd.RESIDENT2)
                 for kv in (32, 8) for pc in (fd.CP_ASYNC, reuse, grouped)]
    # With reuse-slots on two warps and on one (64 and 32 threads: the
    # softmax's reductions and P's staging across fewer warps).
    decode_cp += [fd.FlashDecode(1, 32, kv, 128, max_seq=1000, num_splits=4, target="cuda",
                                 pass_configs=reuse, threads=threads, **fd.RESIDENT2)
                  for kv in (32, 8) for threads in (64, 32)]
    bwd = fab.FlashAttnBwd(1, 2, 200, 64, True, target="cuda", block_M=64, block_N=64,
                           threads=256, dq_tma=True)
    overlap = fab.FlashAttnBwd(1, 2, 200, 64, True, target="cuda", block_M=128, block_N=64,
                               threads=256, dq_tma=True, overlap=True)
    # Persistent walks with the Q (forward) and K/V (backward) tiles issued
    # early on two tile slots: 8 tiles over 2 blocks.
    from tilelang_mlir.kernels.attention import flash_attn as fa
    walk = {"tl.persistent_sms": 2}
    fwd = [tl.compile(fa.flash_attn(1, 2, 512, 64, causal), out_idx=[3, 4], target="cuda",
                      pass_configs=dict(fa.PASS_CONFIGS, **walk)) for causal in (False, True)]
    # Three consumer warpgroups, O stored from their registers, causal
    # blocks end-aligned (the first two overlap): 6 tiles over 2 blocks.
    fwd += [tl.compile(fa.flash_attn(1, 2, 500, 64, True, block_M=192, block_N=128,
                                     threads=384, stage_o=False), out_idx=[3, 4],
                       target="cuda", pass_configs=dict(fa.PASS_CONFIGS, **walk))]
    bwd_walk = fab.FlashAttnBwd(1, 2, 512, 64, True, target="cuda", block_M=128, block_N=128,
                                threads=256, dq_tma=True, pass_configs=walk)
    # Launched one block a tile with the tile copies (Q forward, K/V
    # backward) issued by the TMA producer: D=128, a ragged sequence.
    tiles = {"tl.persistent_sms": 0, "tl.producer_tile_copies": True}
    fwd += [tl.compile(fa.flash_attn(1, 2, 500, 128, True), out_idx=[3, 4], target="cuda",
                       pass_configs=dict(fa.PASS_CONFIGS, **tiles))]
    bwd_tiles = fab.FlashAttnBwd(1, 2, 200, 128, True, target="cuda", block_M=128, block_N=64,
                                 threads=256, dq_tma=True, overlap=True, pass_configs=tiles)
    # D=128 as a persistent walk on one K/V slot freed after the loop, dK
    # and dV stored by TMA from their fragments (4 tiles over 2 blocks, a
    # ragged sequence).
    early = {"tl.early_tile_release": True, "tl.enable_loop_thread_index": True,
             "tl.narrow_index": True, "tl.producer_tile_copies": True}
    bwd_early = fab.FlashAttnBwd(1, 2, 200, 128, False, target="cuda", block_M=128, block_N=64,
                                 threads=256, dq_tma=True, dkv_tile=True,
                                 pass_configs=dict(early, **walk))
    if not torch.cuda.is_available():
        print("compiled only: no GPU here (AOT prepare)")
        return
    parts = torch.randn(6, 5, 32, 64, device="cuda")
    total = torch.zeros(80, 64, device="cuda")
    bulk(parts, total)
    ref = torch.zeros(80, 64, device="cuda", dtype=torch.float64)
    for blk in range(6):
        for step in range(5):
            r = ((blk + step) % 3) * 32
            ref[r:r + 32] += 2 * parts[blk, step, :80 - r].double()
    q, k, v, lens, _ = fd.make_inputs(1, 32, 8, 128, [1000], device="cuda", seed=0)
    o = decode(q, k, v, lens)
    cp_inputs = [fd.make_inputs(1, 32, kv, 128, [1000], device="cuda", seed=1)[:4]
                 for kv in (32, 8) for _ in range(3)]
    cp_inputs += [fd.make_inputs(1, 32, kv, 128, [1000], device="cuda", seed=2)[:4]
                  for kv in (32, 8) for _ in range(2)]
    cp_outs = [kernel(*args) for kernel, args in zip(decode_cp, cp_inputs)]
    bq, bk, bv, bdo = (torch.randn(1, 2, 200, 64, device="cuda").half() for _ in range(4))
    bo, blse = fab.forward(bq, bk, bv, True)
    grads = bwd(bq, bk, bv, bo, bdo, blse)
    grads_overlap = overlap(bq, bk, bv, bo, bdo, blse)
    wq, wk, wv, wdo = (torch.randn(1, 2, 512, 64, device="cuda").half() for _ in range(4))
    walked = [kernel(wq, wk, wv) for kernel in fwd[:2]]
    aq, ak, av = (x[:, :, :500].contiguous() for x in (wq, wk, wv))
    aligned, _ = fwd[2](aq, ak, av)
    tq, tk, tv = (torch.randn(1, 2, 500, 128, device="cuda").half() for _ in range(3))
    tiled, _ = fwd[3](tq, tk, tv)
    cq, ck, cv, cdo = (torch.randn(1, 2, 200, 128, device="cuda").half() for _ in range(4))
    co, clse = fab.forward(cq, ck, cv, True)
    tiled_grads = bwd_tiles(cq, ck, cv, co, cdo, clse)
    fo, flse = fab.forward(cq, ck, cv, False)
    early_grads = bwd_early(cq, ck, cv, fo, cdo, flse)
    wo, wlse = fab.forward(wq, wk, wv, True)
    walked_grads = bwd_walk(wq, wk, wv, wo, wdo, wlse)
    torch.cuda.synchronize()
    for (o_walk, _), causal in zip(walked, (False, True)):
        o_ref = torch.nn.functional.scaled_dot_product_attention(
            wq.float(), wk.float(), wv.float(), is_causal=causal)
        assert ((o_walk.float() - o_ref).norm() / o_ref.norm()) < 1e-2
    o_ref = torch.nn.functional.scaled_dot_product_attention(
        aq.float(), ak.float(), av.float(), is_causal=True)
    assert ((aligned.float() - o_ref).norm() / o_ref.norm()) < 1e-2
    # (PyTorch's own float32 kernel at D=128, memory-efficient attention,
    # reports races under racecheck: the math backend instead.)
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        o_ref = torch.nn.functional.scaled_dot_product_attention(
            tq.float(), tk.float(), tv.float(), is_causal=True)
    assert ((tiled.float() - o_ref).norm() / o_ref.norm()) < 1e-2
    for g, r in zip(tiled_grads, fab.reference(cq, ck, cv, cdo, True)):
        assert ((g.float() - r).norm() / r.norm()) < 1e-2
    for g, r in zip(early_grads, fab.reference(cq, ck, cv, cdo, False)):
        assert ((g.float() - r).norm() / r.norm()) < 1e-2
    for g, r in zip(walked_grads, fab.reference(wq, wk, wv, wdo, True)):
        assert ((g.float() - r).norm() / r.norm()) < 1e-2
    assert (total.double() - ref).abs().max() < 1e-4
    o_ref = fd.reference(q, k, v, lens)
    assert ((o.float() - o_ref).norm() / o_ref.norm()) < 1e-2
    for out, args in zip(cp_outs, cp_inputs):
        r = fd.reference(*args)
        assert ((out.float() - r).norm() / r.norm()) < 1e-2
    refs = fab.reference(bq, bk, bv, bdo, True)
    for g, r in zip(grads + grads_overlap, refs + refs):
        assert ((g.float() - r).norm() / r.norm()) < 1e-2
    a = torch.randn(256, 256, device="cuda").half()
    b = torch.randn(256, 256, device="cuda").half()
    c = gemm(a, b)
    ra, rb = torch.randn(200, 72, device="cuda").half(), torch.randn(72, 136, device="cuda").half()
    rc = ragged(ra, rb)
    rc_cp = ragged_cp(ra, rb)
    x = torch.randn(70, 96, device="cuda")
    y = softmax(x)
    torch.cuda.synchronize()
    assert ((c.float() - a.float() @ b.float()).norm() / (a.float() @ b.float()).norm()) < 1e-2
    for out in (rc, rc_cp):
        assert ((out.float() - ra.float() @ rb.float()).norm()
                / (ra.float() @ rb.float()).norm()) < 1e-2
    assert ((y - torch.softmax(x, 1)).abs().max()) < 1e-5
    ea, eb = torch.randn(128, 256, device="cuda").half(), torch.randn(256, 256, device="cuda").half()
    for kernel in explicit:
        ec = kernel(ea, eb).float()
        ref = ea.float() @ eb.float()
        assert ((ec - ref).norm() / ref.norm()) < 1e-2, kernel
    print("kernels ran and matched PyTorch")


if __name__ == "__main__":
    try:
        main()
    except NoCUDADevice:
        print("compiled only: no GPU here (AOT prepare)")
