"""Symmetric buffers for tile programs across GPUs, on torch.distributed.

A kernel parameter annotated `T.SymmetricTensor(shape, dtype)` is the local
part of a buffer every rank of a process group allocates at the same size;
inside the program `X.peer(r)` is rank r's part, and `T.signal` / `T.wait`
order the writes between ranks. The kernel receives, besides the local
part, the peer table (the addresses of every rank's part). What is passed
for such a parameter:

- a `SymmetricTensor` from `empty(shape, dtype, group)`: PyTorch's
  symmetric memory (`torch.distributed._symmetric_memory`, mapped into every
  peer's address space over NVLink), collective over the group. Processes
  and groups are torch.distributed's (`torchrun`, NCCL): there is no
  launcher or transport of our own;
- a `SymmetricTensor` from `simulate(world, shape, dtype)`: the parts of
  `world` ranks as NumPy arrays in one process, for the CPU target (run the
  ranks as threads, `run_ranks`): tests and debugging without GPUs;
- a plain tensor: a world of one rank (its peer table is its own address).

    buf = tl.distributed.empty((world, N), torch.float16, group)
    kernel(x, buf, flags, y, rank, epoch)
"""

from __future__ import annotations

import threading
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from ..base import dtypes as dt
from ..base.errors import TileLangError

__all__ = ["SymmetricTensor", "empty", "simulate", "run_ranks"]

# Peer parts must keep the kernels' 16-byte vector accesses aligned.
_ALIGN = 16


class SymmetricTensor:
    """The local part of a symmetric buffer (`local`, a torch tensor or a
    NumPy array), the peer table (`peers`, int64 addresses of every rank's
    part, on the local part's device), this process's `rank` and the
    `world_size`. `part(r)` is rank r's part as a tensor where the host can
    reach it (the simulation; PyTorch's handle on GPUs)."""

    def __init__(self, local, peers, rank: int, world_size: int,
                 parts: Optional[Sequence[Any]] = None, handle=None,
                 world_barrier: Optional[threading.Barrier] = None):
        self.local, self.peers = local, peers
        self.rank, self.world_size = rank, world_size
        self._parts, self.handle = parts, handle
        self._world_barrier = world_barrier
        self._offset_elements = 0

    def __tile_symmetric__(self):
        return self.local, self.peers

    @property
    def shape(self):
        return tuple(self.local.shape)

    def part(self, r: int):
        if not 0 <= r < self.world_size:
            raise IndexError(f"rank {r} is outside the world of {self.world_size}")
        if self._parts is not None:
            return self._parts[r]
        return self.handle.get_buffer(r, tuple(self.local.shape), self.local.dtype,
                                      self._offset_elements)

    def barrier(self) -> None:
        """Waits until every rank has reached its barrier: on GPUs a device
        barrier over the buffer's group on the current stream (PyTorch's
        handle), in a simulated world the ranks' threads."""
        if self._world_barrier is not None:
            self._world_barrier.wait()
        else:
            self.handle.barrier(channel=0)

    def __repr__(self):
        return (f"SymmetricTensor(rank {self.rank} of {self.world_size}, "
                f"shape {self.shape}, {self.local.dtype})")


def _check_table(addresses: Sequence[int], itemsize: int) -> None:
    for r, a in enumerate(addresses):
        if a % _ALIGN or (a - addresses[0]) % itemsize:
            raise TileLangError(f"symmetric buffer: rank {r}'s part at {a:#x} is not "
                                f"{_ALIGN}-byte aligned")


def empty(shape, dtype, group=None, device=None) -> SymmetricTensor:
    """A symmetric buffer of `shape` and `dtype` (a torch dtype or a name)
    on the current CUDA device (or `device`), allocated with PyTorch's
    symmetric memory and exchanged with the ranks of `group` (default: the
    world group); collective: every rank of the group calls it with the
    same shape and dtype. Its contents are uninitialized."""
    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem

    if not dist.is_initialized():
        raise TileLangError("tl.distributed.empty: torch.distributed is not initialized "
                            "(run under torchrun and call dist.init_process_group('nccl'))")
    group = group if group is not None else dist.group.WORLD
    tdtype = dt.to_torch(dt.as_dtype(dtype)) if not isinstance(dtype, torch.dtype) else dtype
    if isinstance(shape, int):
        shape = (shape,)
    device = torch.device(device) if device is not None else \
        torch.device("cuda", torch.cuda.current_device())
    local = symm_mem.empty(tuple(shape), dtype=tdtype, device=device)
    handle = symm_mem.rendezvous(local, group)
    base = handle.buffer_ptrs[handle.rank]
    offset = local.data_ptr() - base  # where the tensor starts in its buffer
    addresses = [p + offset for p in handle.buffer_ptrs]
    _check_table(addresses, local.element_size())
    peers = torch.tensor(addresses, dtype=torch.int64, device=device)
    sym = SymmetricTensor(local, peers, handle.rank, handle.world_size, handle=handle)
    sym._offset_elements = offset // local.element_size()
    return sym


def simulate(world: int, shape, dtype) -> List[SymmetricTensor]:
    """The `world` ranks' views of one symmetric buffer, in this process:
    element r is rank r's (its local part a zeroed NumPy array, the table
    shared). For kernels compiled for the CPU, run by `run_ranks`."""
    if isinstance(world, bool) or not isinstance(world, int) or world < 1:
        raise TileLangError(f"tl.distributed.simulate: world must be a positive int, got "
                            f"{world!r}")
    npdtype = np.dtype(dt.to_numpy(dt.as_dtype(dtype)))
    if isinstance(shape, int):
        shape = (shape,)
    parts = []
    for _ in range(world):
        # Over-allocate and slice so that every part starts 64-byte aligned.
        count = int(np.prod(shape))
        raw = np.zeros(count * npdtype.itemsize + 64, dtype=np.uint8)
        start = (-raw.ctypes.data) % 64
        parts.append(raw[start:start + count * npdtype.itemsize].view(npdtype).reshape(shape))
    addresses = [p.ctypes.data for p in parts]
    _check_table(addresses, npdtype.itemsize)
    table = np.array(addresses, dtype=np.int64)
    barrier = threading.Barrier(world)
    return [SymmetricTensor(parts[r], table, r, world, parts=parts, world_barrier=barrier)
            for r in range(world)]


def run_ranks(world: int, fn: Callable[[int], Any], timeout: float = 120.0) -> List[Any]:
    """Runs fn(rank) for every rank of a simulated world, each in its own
    thread (a CPU kernel call releases the GIL, so the ranks' kernels run
    at the same time and can wait on each other); returns the results by
    rank and re-raises the first rank's exception."""
    results: List[Any] = [None] * world
    errors: List[Optional[BaseException]] = [None] * world

    def body(r):
        try:
            results[r] = fn(r)
        except BaseException as e:  # noqa: BLE001 (re-raised below)
            errors[r] = e

    threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(world)]
    for t in threads:
        t.start()
    for r, t in enumerate(threads):
        t.join(timeout)
        if t.is_alive():
            raise TileLangError(f"tl.distributed.run_ranks: rank {r} did not finish within "
                                f"{timeout} s")
    for e in errors:
        if e is not None:
            raise e
    return results
