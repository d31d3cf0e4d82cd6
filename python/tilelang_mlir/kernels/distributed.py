"""Tensor-parallel communication written in the language: symmetric buffers
(`T.SymmetricTensor`, `X.peer(r)`) and flags (`T.signal`, `T.wait`).

- `allreduce_oneshot`: every rank pushes its input into every peer's
  buffer, signals, waits for the others and sums: one step, for small
  (decode) tensors.
- `allgather_gemm`: C = all_gather(A) @ B, the column-parallel GEMM. The
  shards are copied into a local gathering buffer by the copy engines
  (AllGatherGemm), each raising its shard's flag; the GEMM starts on the
  local shard and waits for each other shard's flag, so the copies overlap
  the first tiles and the GEMM reads local memory only.
- `gemm_reduce_scatter`: out_r = rows r of sum over ranks of A_q @ B_q, the
  row-parallel GEMM: `gemm_push` computes each output tile and stores it
  into the owning rank's symmetric buffer, signalling it per tile;
  `reduce_finish` (the next kernel on the stream) waits for the world's
  tiles and sums them.

Flags compare with `epoch`, which the caller increments every call (start
at 1 on zeroed flags), so flags are never reset; buffers that peers write
are double-buffered by the epoch's parity, so a fast rank's next call
cannot overwrite what a slow rank still reads. `AllReduce`, `AllGatherGemm`
and `GemmReduceScatter` hold the compiled kernels, the symmetric buffers
and the epoch. `reference_*` are the results of the sequential
collectives.
"""

import math
import threading

import numpy as np

import tilelang_mlir as tl
import tilelang_mlir.language as T

Square = T.GemmWarpPolicy.Square


def allreduce_oneshot(world, N, dtype="float16", block_N=1024, threads=128):
    """Y = sum over ranks of X. buf (2, world, N) receives every rank's X
    (slot epoch % 2); flags (world, blocks): rank r's block b sets
    flags[r, b] of every peer to `epoch` once its part has landed there."""
    blocks = math.ceil(N / block_N)

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), buf: T.SymmetricTensor((2, world, N), dtype),
             flags: T.SymmetricTensor((world, blocks), "int32"), Y: T.Tensor((N,), dtype),
             rank: T.int32, epoch: T.int32):
        with T.Kernel(blocks, threads=threads) as bx:
            slot = epoch % 2
            x = T.alloc_shared((block_N,), dtype)
            part = T.alloc_fragment((block_N,), dtype)
            acc = T.alloc_fragment((block_N,), "float32")
            T.copy(X[bx * block_N], x)
            for r in T.serial(world):
                T.copy(x, buf.peer(r)[slot, rank, bx * block_N])
            for r in T.serial(world):
                T.signal(flags.peer(r)[rank, bx], epoch)
            for r in T.serial(world):
                T.wait(flags[r, bx], epoch, cmp=">=")
            T.clear(acc)
            for r in T.serial(world):
                T.copy(buf[slot, r, bx * block_N], part)
                for i in T.Parallel(block_N):
                    acc[i] += part[i]
            T.copy(acc, Y[bx * block_N])

    return main


def allgather_gemm(world, M, N, K, block_M=64, block_N=64, block_K=32, num_stages=2,
                   threads=128, dtype="float16"):
    """C (M, N) = A @ B with A (M, K) gathered from the ranks' row shards.
    `A` is this rank's gathering buffer (2, M, K), slot epoch % 2: the
    wrapper puts this rank's shard at rows [rank M / world, ...) and the
    copy engines bring every peer's (AllGatherGemm), setting flags[r] to
    the epoch when shard r has landed. Blocks start on this rank's own
    shard (no wait) and go round the ring, waiting for a shard's flag
    before their first tile of it; the GEMM reads local memory only (TMA on
    Hopper). block_M divides M / world."""
    if M % world or (M // world) % block_M:
        raise tl.TileLangError(f"allgather_gemm: M = {M} must split into {world} shards of "
                               f"whole {block_M}-row tiles")
    tiles_m = M // block_M
    per_shard = tiles_m // world

    @T.prim_func
    def main(A: T.SymmetricTensor((2, M, K), dtype), B: T.Tensor((K, N), dtype),
             flags: T.SymmetricTensor((world,), "int32"), C: T.Tensor((M, N), dtype),
             rank: T.int32, epoch: T.int32):
        with T.Kernel(T.ceildiv(N, block_N), tiles_m, threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            tile = (by + rank * per_shard) % tiles_m  # this rank's shard first
            owner = tile // per_shard
            if owner != rank:
                T.wait(flags[owner], epoch, cmp=">=")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[epoch % 2, tile * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f, policy=Square)
            T.copy(C_f, C[tile * block_M, bx * block_N])

    return main


def gemm_push(world, M, N, K, block_M=64, block_N=64, block_K=32, num_stages=2, threads=128,
              dtype="float16"):
    """The first kernel of GEMM + reduce-scatter: this rank's partial
    product tile (A (M, K) @ B (K, N), K this rank's share) goes to the
    rank owning its rows, into parts[slot, rank] of that rank's symmetric
    buffer parts (2, world, M / world, N); then flags[rank, tile] of the
    owner is set to the epoch."""
    if M % world or (M // world) % block_M:
        raise tl.TileLangError(f"gemm_push: M = {M} must split into {world} shards of whole "
                               f"{block_M}-row tiles")
    rows = M // world
    tiles_n = math.ceil(N / block_N)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             parts: T.SymmetricTensor((2, world, rows, N), dtype),
             flags: T.SymmetricTensor((world, rows // block_M, tiles_n), "int32"),
             rank: T.int32, epoch: T.int32):
        with T.Kernel(tiles_n, M // block_M, threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            owner = by * block_M // rows
            tile_m = (by * block_M % rows) // block_M
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f, policy=Square)
            T.copy(C_f, parts.peer(owner)[epoch % 2, rank, tile_m * block_M, bx * block_N])
            T.signal(flags.peer(owner)[rank, tile_m, bx], epoch)

    return main


def reduce_finish(world, M, N, block_M=64, block_N=64, threads=128, dtype="float16"):
    """The second kernel of GEMM + reduce-scatter: out (M / world, N), this
    rank's rows, is the sum of the world's parts once their flags show the
    epoch. Runs after gemm_push on the same stream (so this rank's own
    pushes have been made)."""
    rows = M // world
    tiles_n = math.ceil(N / block_N)

    @T.prim_func
    def main(parts: T.SymmetricTensor((2, world, rows, N), dtype),
             flags: T.SymmetricTensor((world, rows // block_M, tiles_n), "int32"),
             out: T.Tensor((rows, N), dtype), epoch: T.int32):
        with T.Kernel(tiles_n, rows // block_M, threads=threads) as (bx, by):
            part = T.alloc_fragment((block_M, block_N), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            for r in T.serial(world):
                T.wait(flags[r, by, bx], epoch, cmp=">=")
            T.clear(acc)
            for r in T.serial(world):
                T.copy(parts[epoch % 2, r, by * block_M, bx * block_N], part)
                for i, j in T.Parallel(block_M, block_N):
                    acc[i, j] += part[i, j]
            T.copy(acc, out[by * block_M, bx * block_N])

    return main


# --- wrappers ----------------------------------------------------------------------


class _Epochs:
    """The epoch of the next call (flags only grow)."""

    def __init__(self):
        self.epoch = 0

    def next(self) -> int:
        self.epoch += 1
        if self.epoch >= 2 ** 31 - 1:
            raise tl.TileLangError("the flags' epoch overflowed int32; allocate new buffers")
        return self.epoch


def _put(dst: np.ndarray, src) -> None:
    """Copies `src` (NumPy, or a CPU torch tensor: bytes, as NumPy has no
    bfloat16) into the simulated part `dst`."""
    if isinstance(src, np.ndarray):
        dst[...] = src
        return
    import torch

    dst.view(np.uint8)[...] = src.contiguous().view(torch.uint8).numpy().reshape(
        dst.view(np.uint8).shape)


class AllReduce(_Epochs):
    """One-shot all-reduce of (N,) tensors over the ranks of `buffers`: a
    pair of symmetric buffers (data (2, world, N), flags (world, blocks)
    int32, zeroed) from `tl.distributed.empty` or `simulate`; call as
    `ar(x) -> y`. Every rank must call it the same number of times."""

    def __init__(self, buf, flags, N, dtype="float16", target="auto", block_N=1024, **config):
        super().__init__()
        self.buf, self.flags = buf, flags
        self.rank, self.world = buf.rank, buf.world_size
        self.kernel = tl.compile(allreduce_oneshot(self.world, N, dtype, block_N, **config),
                                 out_idx=[3], target=target)

    def __call__(self, x):
        return self.kernel(x, self.buf, self.flags, self.rank, self.next())

    @staticmethod
    def buffer_shapes(world, N, block_N=1024):
        return (2, world, N), (world, math.ceil(N / block_N))


class AllGatherGemm(_Epochs):
    """C = all_gather(A shards) @ B, called as `op(shard, B)` with this
    rank's (M / world, K) shard. `gathered` is a (2, M, K) symmetric
    buffer, `flags` a zeroed (world,) int32 one.

    Each call puts the shard into the gathering buffer, then, off the
    GPU's SMs, waits for every rank to have done the same (a barrier) and
    copies the peers' shards in ring order, raising flags[r] after shard r
    (on GPUs: copy engines and stream memory writes on a side stream; in a
    simulated world: a thread). The GEMM kernel is launched at once and
    overlaps the copies: it starts with the local shard and waits per shard.
    The side stream's work is issued before the GEMM, so that its barrier
    kernel is never queued behind GEMM blocks that wait for it."""

    def __init__(self, gathered, flags, M, N, K, dtype="float16", target="auto", **config):
        super().__init__()
        self.gathered, self.flags = gathered, flags
        self.rank, self.world = gathered.rank, gathered.world_size
        self.rows = M // self.world
        self.kernel = tl.compile(allgather_gemm(self.world, M, N, K, dtype=dtype, **config),
                                 out_idx=[3], target=target)
        self._side = None

    def _peers(self):
        return [(self.rank + step) % self.world for step in range(1, self.world)]

    def __call__(self, shard, B):
        epoch = self.next()
        slot, rows = epoch % 2, self.rows
        own = slice(self.rank * rows, (self.rank + 1) * rows)
        local = self.gathered.local
        if isinstance(local, np.ndarray):  # a simulated world
            _put(local[slot, own], shard)
            copier = threading.Thread(target=self._gather_simulated, args=(slot, epoch))
            copier.start()
            try:
                return self.kernel(self.gathered, B, self.flags, self.rank, epoch)
            finally:
                copier.join()
        import torch

        main = torch.cuda.current_stream()
        if self._side is None:
            self._side = torch.cuda.Stream()
        local[slot, own].copy_(shard)
        self._side.wait_stream(main)
        with torch.cuda.stream(self._side):
            self.gathered.barrier()
            for r in self._peers():
                part = slice(r * rows, (r + 1) * rows)
                local[slot, part].copy_(self.gathered.part(r)[slot, part])
                self.flags.handle.stream_write_value32(self.flags.local, r, epoch)
        C = self.kernel(self.gathered, B, self.flags, self.rank, epoch)
        main.wait_stream(self._side)
        return C

    def _gather_simulated(self, slot, epoch):
        self.gathered.barrier()
        local, rows = self.gathered.local, self.rows
        for r in self._peers():
            part = slice(r * rows, (r + 1) * rows)
            local[slot, part] = self.gathered.part(r)[slot, part]
            self.flags.local[r] = epoch  # after the copy: x86 keeps the order

    @staticmethod
    def buffer_shapes(world, M, K):
        """(gathering buffer, flags) shapes."""
        return (2, M, K), (world,)


class GemmReduceScatter(_Epochs):
    """out = rows `rank` of the sum over ranks of A @ B (each rank's A (M,
    K_r), B (K_r, N)): `parts` a (2, world, M / world, N) symmetric buffer,
    `flags` a zeroed (world, M / world / block_M, ceil(N / block_N)) int32
    one."""

    def __init__(self, parts, flags, M, N, K, dtype="float16", target="auto", block_M=64,
                 block_N=64, **config):
        super().__init__()
        self.parts, self.flags = parts, flags
        self.rank, self.world = parts.rank, parts.world_size
        self.push = tl.compile(gemm_push(self.world, M, N, K, block_M, block_N, dtype=dtype,
                                         **config), target=target)
        self.finish = tl.compile(reduce_finish(self.world, M, N, block_M, block_N, dtype=dtype),
                                 out_idx=[2], target=target)

    def __call__(self, A, B):
        epoch = self.next()
        self.push(A, B, self.parts, self.flags, self.rank, epoch)
        return self.finish(self.parts, self.flags, epoch)

    @staticmethod
    def buffer_shapes(world, M, N, block_M=64, block_N=64):
        rows = M // world
        return (2, world, rows, N), (world, rows // block_M, math.ceil(N / block_N))
