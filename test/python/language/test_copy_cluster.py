"""T.copy_cluster, TileLang's copies between the blocks of a thread block
cluster (sm_90 and newer):

- `dst_block=R`: a shared region into the same region of block R's shared
  memory. Through `remote_barrier`, rows of whole 16-byte multiples go as
  bulk copies (cp.async.bulk.shared::cluster) announced by one arrival with
  their bytes on block R's barrier; other regions element by element
  (mapa, st.shared::cluster), then one arrival that releases them at
  cluster scope. Without it, element by element (the program orders them
  with T.cluster_sync).
- `cluster_mask=M`: a TMA load multicast by the lowest rank of M into every
  block of M; blocks outside M load their own region.

The code for sm_90a is read here (ptxas assembles it: a compile would fail
otherwise); the `gpu` tests run the same programs against NumPy. Targets
without clusters (sm_80, ROCm, the CPU) refuse them naming T.copy_cluster.
"""

import re

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.bounds import assert_float32_matmul
from tilelang_mlir.base.errors import CompilationError, TileLangError

BULK = "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes"
EXPECT_REMOTE = "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64"
ARRIVE_REMOTE = "mbarrier.arrive.release.cluster.shared::cluster.b64"
WAIT_CLUSTER = "mbarrier.try_wait.parity.acquire.cluster"
MULTICAST = ".multicast::cluster"


# -- programs -------------------------------------------------------------------------


def handoff(n, dtype="float32", barrier=True, clusters=2):
    """In each cluster of 2, block 0 loads its tile of A into s_src and
    copies it into block 1's s_dst; block 1 writes s_dst to its tile of B
    (B's tiles of the blocks of rank 0 stay as they were)."""
    @T.prim_func
    def main(A: T.Tensor((clusters * n,), dtype), B: T.Tensor((2 * clusters * n,), dtype)):
        with T.Kernel(2 * clusters, threads=128, cluster_dims=2) as bx:
            s_src = T.alloc_shared((n,), dtype)
            s_dst = T.alloc_shared((n,), dtype)
            bar = T.alloc_cluster_barrier([1])
            c = bx // 2
            r = T.block_rank_in_cluster()
            if r == 0:
                for i in T.Parallel(n):
                    s_src[i] = A[c * n + i]
                if barrier:
                    T.copy_cluster(s_src, s_dst, dst_block=1, remote_barrier=bar[0])
                else:
                    T.copy_cluster(s_src, s_dst, dst_block=1)
            if not barrier:
                T.cluster_sync()
            if r == 1:
                if barrier:
                    T.mbarrier_wait_parity(bar[0], 0)
                for i in T.Parallel(n):
                    B[bx * n + i] = s_dst[i]

    return main


def handoff_region(src_shape, src_region, dst_shape, dst_region, dtype="float32",
                   threads=128):
    """Block 0 of a cluster of 2 loads A (of s_src's shape) into s_src and
    copies a region of it into a region of block 1's s_dst through a
    barrier; block 1 writes its whole s_dst (zeros outside the region) to
    B."""
    src_sl = tuple(slice(a, b) for a, b in src_region)
    dst_sl = tuple(slice(a, b) for a, b in dst_region)

    @T.prim_func
    def main(A: T.Tensor(src_shape, dtype), B: T.Tensor(dst_shape, dtype)):
        with T.Kernel(2, threads=threads, cluster_dims=2) as bx:
            s_src = T.alloc_shared(src_shape, dtype)
            s_dst = T.alloc_shared(dst_shape, dtype)
            bar = T.alloc_cluster_barrier([1])
            T.clear(s_dst)
            T.cluster_sync()  # block 1's zeros before block 0's copy
            if bx == 0:
                T.copy(A, s_src)
                T.copy_cluster(s_src[src_sl], s_dst[dst_sl], dst_block=1,
                               remote_barrier=bar[0])
            if bx == 1:
                T.mbarrier_wait_parity(bar[0], 0)
                T.copy(s_dst, B)

    return main


def ring(n, dtype="float16", cluster=4, clusters=2):
    """Every block copies its tile into the next block of its cluster (rank
    r + 1 mod 4, known at run time) and writes what it received."""
    @T.prim_func
    def main(A: T.Tensor((cluster * clusters * n,), dtype),
             B: T.Tensor((cluster * clusters * n,), dtype)):
        with T.Kernel(cluster * clusters, threads=128, cluster_dims=cluster) as bx:
            s_src = T.alloc_shared((n,), dtype)
            s_dst = T.alloc_shared((n,), dtype)
            bar = T.alloc_cluster_barrier([1])
            r = T.block_rank_in_cluster()
            T.copy(A[bx * n], s_src)
            T.copy_cluster(s_src, s_dst, dst_block=(r + 1) % cluster, remote_barrier=bar[0])
            T.mbarrier_wait_parity(bar[0], 0)
            T.copy(s_dst, B[bx * n])

    return main


def multicast(mask, M=512, N=512, bm=128, bn=64, dtype="float16", eviction=None):
    """TileLang's multicast demo: clusters of 4 blocks along x, each block
    copies the tile it has in shared memory (multicast or its own) to its
    tile of B."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.ClusterKernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128,
                             cluster_dims=(4, 1, 1)) as (bx, by):
            A_shared = T.alloc_shared((bm, bn), dtype)
            T.copy_cluster(A[by * bm, bx * bn], A_shared, cluster_mask=mask,
                           eviction_policy=eviction)
            T.copy(A_shared, B[by * bm, bx * bn])

    return main


def multicast_loop(mask, K=6, M=256, N=256, bm=64, bn=64, dtype="float16"):
    """The multicast in a loop over K slices: the barrier's parity
    alternates; the cluster synchronizes before the next multicast
    overwrites A_shared."""
    @T.prim_func
    def main(A: T.Tensor((K, M, N), dtype), B: T.Tensor((K, M, N), dtype)):
        with T.ClusterKernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128,
                             cluster_dims=(4, 1, 1)) as (bx, by):
            A_shared = T.alloc_shared((bm, bn), dtype)
            for k in T.serial(K):
                T.copy_cluster(A[k, by * bm, bx * bn], A_shared, cluster_mask=mask)
                T.copy(A_shared, B[k, by * bm, bx * bn])
                T.cluster_sync()

    return main


def gemm_on_received(M=128, N=128, K=64, region=False):
    """Block 0 copies its A tile (a wgmma operand: a swizzled buffer) into
    block 1's A_r; each block multiplies what it has by B. With `region`,
    only the first 64 rows go (then A_r's other rows stay zero)."""
    rows = 64 if region else M

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((2 * M, N), "float32")):
        with T.Kernel(2, threads=128, cluster_dims=2) as bx:
            A_s = T.alloc_shared((M, K), "float16")
            A_r = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((K, N), "float16")
            C_l = T.alloc_fragment((M, N), "float32")
            bar = T.alloc_cluster_barrier([1])
            T.copy(B, B_s)
            T.clear(A_r)
            T.cluster_sync()
            T.clear(C_l)
            if bx == 0:
                T.copy(A, A_s)
                T.copy_cluster(A_s[0:rows, :], A_r[0:rows, :], dst_block=1, remote_barrier=bar[0])
                T.gemm(A_s, B_s, C_l)
            if bx == 1:
                T.mbarrier_wait_parity(bar[0], 0)
                T.gemm(A_r, B_s, C_l)
            T.copy(C_l, C[bx * M, 0])

    return main


def pipelined_multicast(M=256, N=256, K=256, bm=64, bn=64, bk=64, mask=0b11):
    """A gemm whose A tiles come by multicast inside a T.Pipelined loop
    (clusters of 2 along N share A's tiles): the copy and its barrier keep
    their order in the loop (no warp specialization, B's copies prefetched)."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128,
                      cluster_dims=(2, 1, 1)) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy_cluster(A[by * bm, k * bk], A_s, cluster_mask=mask)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
                T.cluster_sync()  # every block of the cluster read A_s
            T.copy(C_l, C[by * bm, bx * bn])

    return main


def multicast_reference(a, mask, bm, bn, cluster=4):
    """B of the multicast programs: block (bx, by) holds the tile of the
    lowest rank of the mask in its cluster when its rank is in the mask,
    else its own."""
    b = np.empty_like(a)
    first = (mask & -mask).bit_length() - 1
    rows, cols = a.shape[-2] // bm, a.shape[-1] // bn
    for by in range(rows):
        for bx in range(cols):
            r = bx % cluster
            src = bx - r + first if (mask >> r) & 1 else bx
            b[..., by * bm:(by + 1) * bm, bx * bn:(bx + 1) * bn] = \
                a[..., by * bm:(by + 1) * bm, src * bn:(src + 1) * bn]
    return b


# -- reading the PTX ------------------------------------------------------------------


def ptx_of(program, target="cuda:sm_90a"):
    kernel = tl.compile(program, target=target)
    # ptxas assembled it (the compile fails where it does not).
    assert "Compiling entry function" in (kernel.ptxas_info or ""), kernel.ptxas_info
    return kernel.get_kernel_source()


def mov_value(ptx, reg):
    """The constant `reg` (`%r4`, `%rs1`) is set to in `ptx`."""
    m = re.search(rf"mov\.b(?:16|32|64)\s+{re.escape(reg)},\s*(-?\d+);", ptx)
    assert m, f"no constant for {reg}"
    return int(m.group(1))


def init_counts(ptx):
    """The arrival count of every mbarrier.init."""
    return [mov_value(ptx, reg) for reg in
            re.findall(r"mbarrier\.init\.shared\.b64\s+\[[^\]]+\],\s*(%r\d+);", ptx)]


def operand(ptx, insn, index):
    """The `index`-th operand (0-based, brackets dropped) of every `insn`."""
    out = []
    for line in ptx.splitlines():
        if insn in line:
            ops = line.split(insn, 1)[1].strip().rstrip(";")
            # split at commas outside brackets and braces
            parts, depth, cur = [], 0, ""
            for ch in ops:
                if ch in "[{":
                    depth += 1
                elif ch in "]}":
                    depth -= 1
                if ch == "," and depth == 0:
                    parts.append(cur.strip())
                    cur = ""
                else:
                    cur += ch
            parts.append(cur.strip())
            out.append(parts[index].strip("[]"))
    return out


def compile_error(program, target):
    with pytest.raises((TileLangError, CompilationError)) as info:
        tl.compile(program, target=target)
    return str(info.value)


# -- sm_90a code ----------------------------------------------------------------------


def test_contiguous_copy_is_one_bulk_copy_announced_on_the_remote_barrier():
    ptx = ptx_of(handoff(128))
    assert ptx.count(BULK) == 1
    assert ptx.count(EXPECT_REMOTE) == 1
    # 128 float32: 512 bytes announced and copied, one arrival on a barrier
    # the program allocated for one
    assert [mov_value(ptx, r) for r in operand(ptx, EXPECT_REMOTE, 2)] == [512]
    assert [mov_value(ptx, r) for r in operand(ptx, BULK, 2)] == [512]
    assert init_counts(ptx) == [1]
    # the bulk copy completes on the barrier the arrival announced it on,
    # both mapped into block 1 of the cluster
    assert operand(ptx, BULK, 3) == operand(ptx, EXPECT_REMOTE, 1)
    assert re.search(r"mapa\.shared::cluster\.u32\s+%r\d+,\s*%r\d+,\s*1;", ptx)
    # the source's writes reach the async proxy first; block 1 waits at
    # cluster scope; no element stores
    assert "fence.proxy.async.shared::cta" in ptx
    assert WAIT_CLUSTER in ptx
    assert "st.shared::cluster" not in ptx and ARRIVE_REMOTE not in ptx


def test_a_copy_not_a_multiple_of_16_bytes_goes_element_by_element():
    ptx = ptx_of(handoff(127))  # 508 bytes
    assert BULK not in ptx and EXPECT_REMOTE not in ptx
    assert "mapa.shared::cluster.u32" in ptx and "st.shared::cluster.b32" in ptx
    # the block synchronizes, then one thread arrives, releasing the
    # stores at cluster scope
    assert ptx.count(ARRIVE_REMOTE) == 1
    assert init_counts(ptx) == [1]
    assert WAIT_CLUSTER in ptx


def test_without_a_barrier_the_threads_store_vectors_into_the_other_block():
    ptx = ptx_of(handoff(128, barrier=False))
    assert "st.shared::cluster.v4.b32" in ptx and "mapa.shared::cluster.u32" in ptx
    for insn in (BULK, EXPECT_REMOTE, ARRIVE_REMOTE, "mbarrier.init"):
        assert insn not in ptx, insn
    ptx16 = ptx_of(handoff(256, "float16", barrier=False))
    assert "st.shared::cluster.v4.b32" in ptx16  # 8 halves a store


@pytest.mark.parametrize("src_shape,src_region,dst_shape,dst_region,runs,row_bytes", [
    # TileLang's non-contiguous 2-D slice: one bulk copy per row
    ((4, 64), [(0, 4), (0, 32)], (4, 64), [(0, 4), (0, 32)], 4, 128),
    # 3-D: a copy per (d, m) row, at other offsets on each side
    ((2, 4, 48), [(0, 2), (0, 4), (8, 40)], (3, 4, 48), [(1, 3), (0, 4), (0, 32)], 8, 128),
    # rows that are whole in both: one run of the rows
    ((8, 32), [(2, 6), (0, 32)], (8, 32), [(4, 8), (0, 32)], 1, 512),
])
def test_row_decomposition(src_shape, src_region, dst_shape, dst_region, runs, row_bytes):
    ptx = ptx_of(handoff_region(src_shape, src_region, dst_shape, dst_region))
    assert ptx.count(BULK) == runs
    assert {mov_value(ptx, r) for r in operand(ptx, BULK, 2)} == {row_bytes}
    # one arrival announces all the rows' bytes: the barrier keeps the
    # program's count of 1 (TileLang rewrites it to the number of rows)
    assert ptx.count(EXPECT_REMOTE) == 1
    assert [mov_value(ptx, r) for r in operand(ptx, EXPECT_REMOTE, 2)] == [runs * row_bytes]
    assert init_counts(ptx) == [1]
    assert len(set(operand(ptx, BULK, 3))) == 1  # every row on that barrier
    assert "st.shared::cluster" not in ptx


@pytest.mark.parametrize("cols", [31, 2])
def test_rows_not_a_multiple_of_16_bytes_go_element_by_element(cols):
    ptx = ptx_of(handoff_region((4, 64), [(0, 4), (0, cols)], (4, 64), [(0, 4), (0, cols)]))
    assert BULK not in ptx and "st.shared::cluster" in ptx
    assert ptx.count(ARRIVE_REMOTE) == 1 and init_counts(ptx) == [1]


def test_the_destination_block_may_be_computed():
    ptx = ptx_of(ring(64))
    assert ptx.count(BULK) == 1
    # mapa of the destination and the barrier by a rank in a register
    assert re.search(r"mapa\.shared::cluster\.u32\s+%r\d+,\s*%r\d+,\s*%r\d+;", ptx)
    assert ".reqnctapercluster 4, 1, 1" in ptx


@pytest.mark.parametrize("mask,issuer", [(0b0011, 0), (0b1010, 1), (0b1111, 0), (0b0100, 2)])
def test_multicast_mask(mask, issuer):
    ptx = ptx_of(multicast(mask))
    # one multicast box (the lowest rank of the mask issues it, with the
    # mask), one plain load for the blocks outside the mask (if any)
    casts = [ln for ln in ptx.splitlines() if MULTICAST in ln]
    assert len(casts) == 1
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in casts[0]
    assert [mov_value(ptx, r) for r in operand(ptx, MULTICAST + " ", 3)] == [mask]
    plain = [ln for ln in ptx.splitlines()
             if "cp.async.bulk.tensor" in ln and MULTICAST not in ln]
    assert len(plain) == (0 if mask == 0b1111 else 1)
    assert "%cluster_ctarank" in ptx
    # the issuer is chosen by its rank
    assert re.search(rf"setp\.(eq|ne)\.b32\s+%p\d+,\s*%r\d+,\s*{issuer};", ptx)
    # every block announces the 128x64 halves it receives (16384 bytes);
    # its 4 warps arrive; barriers are initialized before the cluster syncs
    expects = operand(ptx, "mbarrier.expect_tx.relaxed.cta.shared.b64", 1)
    assert [mov_value(ptx, r) for r in expects] == [16384]
    assert init_counts(ptx) == [4]
    assert ptx.index("fence.mbarrier_init.release.cluster") < \
        ptx.index("barrier.cluster.arrive")


def test_multicast_eviction_policy():
    ptx = ptx_of(multicast(0b0101, eviction="evict_first"))
    assert "createpolicy.fractional.L2::evict_first.b64" in ptx
    assert all(".L2::cache_hint" in ln for ln in ptx.splitlines() if "cp.async.bulk.tensor" in ln)
    assert "createpolicy.fractional.L2::evict_last.b64" in ptx_of(
        multicast(0b0101, eviction="evict_last"))
    assert "createpolicy" not in ptx_of(multicast(0b0101, eviction="evict_normal"))


def test_multicast_in_a_loop_alternates_the_parity():
    ptx = ptx_of(multicast_loop(0b1111, K=4))
    waits = operand(ptx, "mbarrier.try_wait.parity.shared.b64", 2)
    assert [mov_value(ptx, r) for r in waits] == [0, 1, 0, 1]
    assert ptx.count(MULTICAST) == 4


def test_annotations_take_precedence():
    def prog(**kw):
        @T.prim_func
        def main(A: T.Tensor((256,), "float32")):
            with T.Kernel(4, threads=128, cluster_dims=4) as bx:
                s = T.alloc_shared((256,), "float32")
                d = T.alloc_shared((256,), "float32")
                T.copy(A, s)
                T.copy_cluster(s, d, **kw)
                T.cluster_sync()
        return main

    one = ptx_of(prog(dst_block=1))
    three = ptx_of(prog(dst_block=1, annotations={"dst_block": 3}))
    assert re.search(r"mapa\.shared::cluster\.u32\s+%r\d+,\s*%r\d+,\s*1;", one)
    assert re.search(r"mapa\.shared::cluster\.u32\s+%r\d+,\s*%r\d+,\s*3;", three)
    # coalesced_width and loop_layout are hints of the element-wise copy
    assert ptx_of(prog(dst_block=1, coalesced_width=4)) == one
    assert ptx_of(prog(dst_block=1, annotations={"coalesced_width": 2})) == one
    layout = T.Fragment((256,), forward_fn=lambda i: (i % 128, i // 128))
    assert ptx_of(prog(dst_block=1, loop_layout=layout)) == one


def test_a_gemm_operand_keeps_its_swizzle():
    """A buffer a wgmma reads keeps its swizzle: the whole buffer still goes
    as one bulk copy (both blocks place it alike); a part of it goes
    element by element, through the swizzled addresses."""
    ptx = ptx_of(gemm_on_received())
    assert ptx.count(BULK) == 1 and "st.shared::cluster" not in ptx
    assert [mov_value(ptx, r) for r in operand(ptx, BULK, 2)] == [128 * 64 * 2]
    assert "wgmma.mma_async" in ptx
    part = ptx_of(gemm_on_received(region=True))
    assert BULK not in part and "st.shared::cluster.v4.b32" in part
    assert part.count(ARRIVE_REMOTE) == 1


def test_a_multicast_in_a_pipelined_loop_keeps_its_order():
    """The loop is not warp-specialized (its cluster barrier is every
    thread's) and the multicast is not made a prefetched cp.async copy:
    one multicast per iteration, each waited for with its parity."""
    kernel = tl.compile(pipelined_multicast(), target="cuda:sm_90a")
    tile = kernel.mlir("pipelined")
    assert "tile.warp_specialize" not in tile
    assert tile.count("multicast_mask = 3") == tile.count("tile.barrier_wait")
    ptx = kernel.get_kernel_source()
    assert ptx.count(MULTICAST) >= 1 and "cp.async.cg.shared.global" in ptx


# -- refusals -------------------------------------------------------------------------


@pytest.mark.parametrize("program", [handoff(128), handoff(127), multicast(0b0011)],
                         ids=["bulk", "elements", "multicast"])
def test_targets_without_clusters_refuse(program):
    for target, where in (("cuda:sm_80", "sm_80"), ("rocm:gfx942", "gfx942")):
        err = compile_error(program, target)
        assert "T.copy_cluster" in err and "thread block cluster" in err and where in err, err
    err = compile_error(program, "cpu")
    assert "T.copy_cluster" in err and "thread block cluster" in err, err
    assert "compile for a GPU target" in err


@pytest.mark.parametrize("program", [handoff(128), multicast(0b0011)], ids=["bulk", "multicast"])
def test_sm_90_without_a_refuses(program):
    """Clusters are this compiler's on sm_90a (as TMA is), like
    T.cluster_sync's."""
    err = compile_error(program, "cuda:sm_90")
    assert "T.copy_cluster" in err and "thread block cluster" in err and "sm_90" in err, err


def _program(body):
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, threads=128, cluster_dims=2) as bx:
            s = T.alloc_shared((64, 64), "float16")
            d = T.alloc_shared((64, 64), "float16")
            f = T.alloc_shared((64, 64), "float32")
            bar = T.alloc_cluster_barrier([1])
            body(A, B, s, d, f, bar)

    return main


@pytest.mark.parametrize("body,message", [
    (lambda A, B, s, d, f, bar: T.copy_cluster(s, d, dst_block=1, cluster_mask=3),
     "dst_block= (a copy into another block's shared memory) or cluster_mask="),
    (lambda A, B, s, d, f, bar: T.copy_cluster(A, s, cluster_mask=3, loop_layout=object()),
     "loop_layout is the dst_block copy's"),
    (lambda A, B, s, d, f, bar: T.copy_cluster(A, s, cluster_mask=3, coalesced_width=8),
     "coalesced_width is the dst_block copy's"),
    (lambda A, B, s, d, f, bar: T.copy_cluster(A, s, cluster_mask=3, remote_barrier=bar[0]),
     "remote_barrier is the dst_block copy's"),
    (lambda A, B, s, d, f, bar: T.copy_cluster(s, d, dst_block=1, eviction_policy="evict_first"),
     "the eviction priority is the TMA multicast's"),
    (lambda A, B, s, d, f, bar: T.copy_cluster(s, d, remote_barrier=bar[0]),
     "remote_barrier=...) needs dst_block="),
    (lambda A, B, s, d, f, bar: T.copy_cluster(A, s, cluster_mask=0b100),
     "names block ranks beyond the 2 blocks of a cluster"),
    (lambda A, B, s, d, f, bar: T.copy_cluster(A, s[0:32, :], cluster_mask=3),
     "into a whole shared buffer"),
    (lambda A, B, s, d, f, bar: T.copy_cluster(A[0, 0], T.alloc_shared((512, 8), "float16"),
                                               cluster_mask=3),
     "whose box has at most 256 elements along each dimension"),
    (lambda A, B, s, d, f, bar: T.copy_cluster(s, f, dst_block=1),
     "copies elements as they are"),
    (lambda A, B, s, d, f, bar: T.copy_cluster(A, s, dst_block=1),
     "copies between shared buffers; the source 'A' is global"),
    (lambda A, B, s, d, f, bar: T.copy_cluster(s, d, dst_block=2),
     "dst_block 2 is not a block of the cluster"),
    (lambda A, B, s, d, f, bar: T.copy_cluster(s[0:8, :], d[0:16, :], dst_block=1),
     "has shape"),
    (lambda A, B, s, d, f, bar: T.copy_cluster(s, d, dst_block=1, annotations={"disable_tma": 1}),
     "unknown annotation 'disable_tma'"),
    (lambda A, B, s, d, f, bar: T.copy_cluster(s, d, dst_block=1, annotations={"eviction_policy": 7}),
     "not one of TileLang's codes"),
    (lambda A, B, s, d, f, bar: T.copy_cluster(A, s, cluster_mask=1, eviction_policy="evict_most"),
     "eviction_policy must be one of"),
])
def test_meaningless_arguments_are_refused(body, message):
    with pytest.raises(TileLangError) as info:
        tl.compile(_program(body), target="cuda:sm_90a")
    assert message in str(info.value)
    assert "T.copy_cluster" in str(info.value) or "eviction_policy" in str(info.value)


def test_a_kernel_without_clusters_is_refused():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            s = T.alloc_shared((64,), "float32")
            d = T.alloc_shared((64,), "float32")
            T.copy_cluster(s, d, dst_block=1)

    with pytest.raises(TileLangError) as info:
        tl.compile(main, target="cuda:sm_90a")
    assert "T.copy_cluster copies between the blocks of a thread block cluster" in \
        str(info.value)


def test_neither_form_is_a_plain_copy_on_the_cpu(rng):
    """Without dst_block and cluster_mask (or with a mask of no block)
    T.copy_cluster is T.copy, as in TileLang: it runs anywhere."""
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, threads=128) as bx:
            s = T.alloc_shared((32, 64), "float32")
            d = T.alloc_shared((32, 64), "float32")
            T.copy_cluster(A[bx * 32, 0], s, cluster_mask=0)
            T.copy_cluster(s, d)
            T.copy(d, B[bx * 32, 0])

    kernel = tl.compile(main, target="cpu")
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b, a)


# -- on the GPU -----------------------------------------------------------------------


def _cuda(x):
    return torch.from_numpy(np.ascontiguousarray(x)).cuda()


@pytest.mark.gpu
@pytest.mark.parametrize("n,dtype,barrier", [
    (128, "float32", True),     # one bulk copy
    (127, "float32", True),     # 508 bytes: element by element, then one arrival
    (128, "float32", False),    # element by element, T.cluster_sync
    (200, "float16", True),     # 400 bytes: one bulk copy of halves
    (96, "bfloat16", False),
])
def test_handoff_on_gpu(rng, n, dtype, barrier):
    clusters = 3
    kernel = tl.compile(handoff(n, dtype, barrier, clusters), target="cuda")
    a = torch.from_numpy(rng.standard_normal(clusters * n).astype(np.float32)).to(
        getattr(torch, dtype)).cuda()
    b = torch.full((2 * clusters * n,), -7.0, dtype=a.dtype, device="cuda")
    kernel(a, b)
    want = b.clone().cpu()
    for c in range(clusters):
        want[(2 * c + 1) * n:(2 * c + 2) * n] = a[c * n:(c + 1) * n].cpu()
    torch.testing.assert_close(b.cpu(), want, rtol=0, atol=0)


@pytest.mark.gpu
@pytest.mark.parametrize("src_shape,src_region,dst_shape,dst_region", [
    ((4, 64), [(0, 4), (0, 32)], (4, 64), [(0, 4), (0, 32)]),        # 4 bulk rows
    ((4, 64), [(0, 4), (0, 31)], (4, 64), [(0, 4), (0, 31)]),        # 124-byte rows
    ((2, 4, 48), [(0, 2), (0, 4), (8, 40)], (3, 4, 48), [(1, 3), (0, 4), (0, 32)]),
    ((8, 32), [(2, 6), (0, 32)], (8, 32), [(4, 8), (0, 32)]),
    ((16, 40), [(3, 13), (5, 37)], (12, 36), [(1, 11), (2, 34)]),    # odd offsets
])
def test_regions_on_gpu(rng, src_shape, src_region, dst_shape, dst_region):
    kernel = tl.compile(handoff_region(src_shape, src_region, dst_shape, dst_region),
                        target="cuda")
    a = rng.standard_normal(src_shape).astype(np.float32)
    b = torch.full(dst_shape, -7.0, dtype=torch.float32, device="cuda")
    kernel(_cuda(a), b)
    want = np.zeros(dst_shape, np.float32)
    want[tuple(slice(x, y) for x, y in dst_region)] = a[tuple(slice(x, y) for x, y in src_region)]
    np.testing.assert_array_equal(b.cpu().numpy(), want)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [64, 100])
def test_ring_on_gpu(rng, n):
    kernel = tl.compile(ring(n), target="cuda")
    a = rng.standard_normal(8 * n).astype(np.float16)
    b = torch.zeros(8 * n, dtype=torch.float16, device="cuda")
    kernel(_cuda(a), b)
    tiles = a.reshape(2, 4, n)
    want = np.roll(tiles, 1, axis=1).reshape(-1)  # block r got rank r - 1's tile
    np.testing.assert_array_equal(b.cpu().numpy(), want)


@pytest.mark.gpu
@pytest.mark.parametrize("region", [False, True])
def test_gemm_on_received_on_gpu(rng, region):
    kernel = tl.compile(gemm_on_received(region=region), target="cuda")
    a = rng.standard_normal((128, 64)).astype(np.float16)
    b = rng.standard_normal((64, 128)).astype(np.float16)
    c = torch.zeros(256, 128, dtype=torch.float32, device="cuda")
    kernel(_cuda(a), _cuda(b), c)
    got = c.cpu().numpy()
    a_r = a.copy()
    if region:
        a_r[64:] = 0
    assert_float32_matmul(got[:128], a, b, what="block 0's own A")
    assert_float32_matmul(got[128:], a_r, b, what="block 1's received A")


@pytest.mark.gpu
def test_pipelined_multicast_on_gpu(rng):
    kernel = tl.compile(pipelined_multicast(), target="cuda")
    a = rng.standard_normal((256, 256)).astype(np.float16)
    b = rng.standard_normal((256, 256)).astype(np.float16)
    c = torch.zeros(256, 256, dtype=torch.float32, device="cuda")
    kernel(_cuda(a), _cuda(b), c)
    # both blocks of a cluster (one row of tiles) use the same A tile: the
    # product is A @ B whichever of them loaded it
    assert_float32_matmul(c, a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("mask", [0b0011, 0b1010, 0b1111, 0b0100])
@pytest.mark.parametrize("eviction", [None, "evict_first"])
def test_multicast_on_gpu(rng, mask, eviction):
    kernel = tl.compile(multicast(mask, eviction=eviction), target="cuda")
    a = rng.standard_normal((512, 512)).astype(np.float16)
    b = torch.zeros(512, 512, dtype=torch.float16, device="cuda")
    kernel(_cuda(a), b)
    np.testing.assert_array_equal(b.cpu().numpy(), multicast_reference(a, mask, 128, 64))


@pytest.mark.gpu
@pytest.mark.parametrize("mask", [0b0110, 0b1111])
def test_multicast_loop_on_gpu(rng, mask):
    kernel = tl.compile(multicast_loop(mask), target="cuda")
    a = rng.standard_normal((6, 256, 256)).astype(np.float16)
    b = torch.zeros(6, 256, 256, dtype=torch.float16, device="cuda")
    kernel(_cuda(a), b)
    np.testing.assert_array_equal(b.cpu().numpy(), multicast_reference(a, mask, 64, 64))


def tma_copy_multicast_ring(iters=8, slots=4, tile=64, cluster_sync=True):
    """T.tma_copy(..., cluster_mask=0b11) into the slots of a ring: block 0
    loads each tile into both blocks, each block's barrier of the slot
    announces the whole tile (TileLang's split-phase contract: the program
    arrives and waits itself); the ring is cycled twice, so every slot is
    reused under both parities."""
    @T.prim_func
    def main(A: T.Tensor((iters, tile, tile), "float32"),
             B: T.Tensor((2, iters, tile, tile), "float32")):
        with T.Kernel(2, threads=128, cluster_dims=2) as pid:
            a_shared = T.alloc_shared((slots, tile, tile), "float32")
            bars = T.alloc_barrier([128] * slots)
            for k in T.serial(iters):
                slot = k % slots
                T.tma_copy(A[k, :, :], a_shared[slot, :, :], barrier=bars[slot],
                           cluster_mask=0b11)
                T.barrier_arrive(bars[slot])
                T.barrier_wait(bars[slot], (k // slots) % 2)
                T.copy(a_shared[slot, :, :], B[pid, k, :, :])
                if cluster_sync:  # the other block's next load into this slot waits
                    T.cluster_sync()

    return main


def test_tma_copy_multicast_compiles():
    ptx = tl.compile(tma_copy_multicast_ring(), target="cuda:sm_90a").get_kernel_source()
    assert "multicast::cluster" in ptx


def test_tma_copy_multicast_errors():
    @T.prim_func
    def no_cluster(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, threads=128):
            s = T.alloc_shared((64, 64), "float32")
            bar = T.alloc_barrier([128])
            T.tma_copy(A, s, barrier=bar, cluster_mask=0b11)

    with pytest.raises(TileLangError, match="cluster"):
        tl.compile(no_cluster, target="cuda:sm_90a")

    @T.prim_func
    def beyond(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, threads=128, cluster_dims=2):
            s = T.alloc_shared((64, 64), "float32")
            bar = T.alloc_barrier([128])
            T.tma_copy(A, s, barrier=bar, cluster_mask=0b100)

    with pytest.raises(TileLangError, match="block ranks of a cluster"):
        tl.compile(beyond, target="cuda:sm_90a")


@pytest.mark.gpu
def test_tma_copy_multicast_on_gpu(rng):
    iters = 8
    kernel = tl.compile(tma_copy_multicast_ring(iters), target="cuda")
    a = torch.from_numpy(rng.standard_normal((iters, 64, 64)).astype(np.float32)).cuda()
    b = torch.zeros((2, iters, 64, 64), device="cuda")
    kernel(a, b)
    for rank in range(2):
        torch.testing.assert_close(b[rank], a, rtol=0, atol=0)
