"""Loop constructs: `for ... in T.Parallel / T.Pipelined / T.serial / ...`."""

from __future__ import annotations

from typing import Optional, Sequence


class Parallel:
    """`for i, j in T.Parallel(M, N)`: an elementwise loop nest over a tile;
    its iterations are shared by the threads of the block.

    `coalesced_width`: how many consecutive innermost elements each thread
    takes when nothing else (a gemm, an annotation) fixes the layout; 8 for
    16-bit and 16 for 8-bit data give 16-byte accesses (default 4).
    An extent may be a run-time value (`T.Parallel(n)` with n a scalar or a
    symbolic size): the loop then runs over the largest extent the program
    gives it where it can be known (`T.min(n, 128)`), or over each block's
    threads repeatedly, and skips the iterations past `n`.
    `loop_layout` (a T.Fragment over the loop's extents): which thread runs
    each iteration, and in which of its registers; the fragments the loop
    accesses follow it where nothing else places them. `prefer_async` and
    `annotations` (TileLang's hints for its own passes) are accepted and
    not needed here."""

    def __init__(self, *extents, coalesced_width: Optional[int] = None, loop_layout=None,
                 prefer_async=None, annotations: Optional[dict] = None):
        if not extents:
            raise TypeError("T.Parallel needs at least one extent")
        self.extents = extents
        self.starts = (0,) * len(extents)
        self.coalesced_width = coalesced_width
        self.loop_layout = loop_layout


class Pipelined:
    """`for k in T.Pipelined(n, num_stages=3)`: a serial loop whose copies into
    shared memory the compiler overlaps with compute."""

    def __init__(self, start, stop=None, num_stages: int = 0,
                 order: Optional[Sequence[int]] = None,
                 stage: Optional[Sequence[int]] = None,
                 sync=None, group: Optional[Sequence[Sequence[int]]] = None,
                 annotations: Optional[dict] = None):
        if stop is None:
            start, stop = 0, start
        self.start, self.stop = start, stop
        if not num_stages and stage:
            # A manual schedule without num_stages: as deep as its latest
            # stage (TileLang infers the depth from `stage`).
            num_stages = max(0, *(int(s) for s in stage))
        self.num_stages = num_stages
        self.order, self.stage, self.group = order, stage, group


class Serial:
    """`for k in T.Serial(n)`: TileLang's alias of T.serial (`annotations`,
    TVM loop annotations, are accepted and not used). A constant negative
    step counts down (`T.serial(10, 0, -1)`: 10, 9, ..., 1)."""

    def __init__(self, start, stop=None, step=1, annotation: Optional[str] = None, *,
                 annotations: Optional[dict] = None):
        if stop is None:
            start, stop = 0, start
        self.start, self.stop = start, stop
        self.step = 1 if step is None else step
        self.annotation = annotation


def Unroll(start, stop=None, step=None, *, explicit: bool = False, unroll_factor=None,
           annotations: Optional[dict] = None) -> Serial:  # noqa: N802 (TileLang's name)
    """TileLang's alias of T.unroll."""
    return unroll(start, stop, step, explicit=explicit, unroll_factor=unroll_factor)


def Vectorized(start, stop=None, *, annotations: Optional[dict] = None) -> Serial:  # noqa: N802
    """TileLang's alias of T.vectorized."""
    return vectorized(start, stop)


def is_zero(x) -> bool:
    """Whether `x` is the integer 0 (not a symbolic start)."""
    return isinstance(x, int) and not isinstance(x, bool) and x == 0


class ParallelFor:
    """TVM's `for i in T.parallel(start, stop)` (a loop of kind parallel),
    which TileLang's layout inference takes as a tile parallel loop: at the
    kernel's level (a nest of them, perfectly nested, is one T.Parallel over
    their extents) its iterations are shared by the threads; inside a
    T.Parallel body it is each thread's sequential loop."""

    coalesced_width = None
    loop_layout = None

    def __init__(self, start, stop):
        self.start, self.stop = start, stop
        self.starts = (start,)
        self.extents = (stop if is_zero(start) else stop - start,)


def parallel(start, stop=None, *, annotations: Optional[dict] = None) -> ParallelFor:
    """TVM's `T.parallel(n)` loop (ParallelFor)."""
    if stop is None:
        start, stop = 0, start
    return ParallelFor(start, stop)


def grid(*extents):
    """`for i, j in T.grid(M, N)`: TVM's nest of sequential loops over the
    extents (the last index fastest)."""
    if not extents:
        raise TypeError("T.grid needs at least one extent")
    return Grid(extents)


class Grid:
    """The loop nest of T.grid (see there)."""

    def __init__(self, extents):
        self.extents = tuple(extents)


class Persistent:
    """`for bx, by in T.Persistent([m, n], wave_size, index)`: a persistent
    loop over the tiles of `domain` (row-major, the last coordinate
    fastest). A kernel launched with `wave_size` blocks runs it with its block
    index as `index`: in wave w it takes tile `w * wave_size + index` and
    skips it past the last tile, so that every tile runs exactly once.
    (`group_size`, TileLang's grouping of tiles for L2 reuse, is accepted;
    the order of the tiles does not change the result.)"""

    def __init__(self, domain: Sequence, wave_size, index, group_size=8):
        if isinstance(domain, (list, tuple)):
            domain = list(domain)
        else:
            domain = [domain]
        if not domain:
            raise TypeError("T.Persistent needs a domain of at least one extent")
        self.domain, self.wave_size, self.index = domain, wave_size, index
        self.group_size = group_size


class ThreadBinding:
    """TVM's thread loop inside `with T.Kernel(...)` (T.thread_binding): its
    variable is the kernel's own thread (or block) index plus `start`.
    `for i in T.thread_binding(...)` runs the body once, in every thread,
    with `i` bound to it; `i = T.thread_binding(...)` binds `i` for the rest
    of the kernel, as TileLang's frame assignment does."""

    def __init__(self, index):
        self.index = index

    def __iter__(self):
        return iter((self.index,))


def thread_binding(start, stop=None, thread: str = "", annotations=None) -> ThreadBinding:
    """TVM's `T.thread_binding(start, stop, thread="threadIdx.x")` inside
    T.Kernel: the index along `thread` (threadIdx.* or blockIdx.*), whose
    extent `stop - start` must be the kernel's along it (T.launch_thread)."""
    if stop is None:
        start, stop = 0, start
    extent = stop - start if isinstance(start, int) and isinstance(stop, int) else None
    index = launch_thread(thread, extent)
    return ThreadBinding(index if is_zero(start) else index + start)


def launch_thread(thread: str, extent=None):
    """TVM's launch of a thread or block index, inside `with T.Kernel(...)`:
    `T.launch_thread("threadIdx.x", n)` is the kernel's thread index along x
    when the kernel has n threads along x (likewise y, z and the block
    indices `blockIdx.*` with the grid's extents). Launching another extent
    is refused: the kernel's threads and grid are T.Kernel's."""
    from ..base.errors import TileLangError
    from . import state

    kinds = {f"{k}.{a}": (k, i) for k in ("threadIdx", "blockIdx")
             for i, a in enumerate("xyz")}
    how = ("write `with T.Kernel(grid, threads=n)` and read the indices with "
           "T.get_thread_binding() / T.get_block_binding()")
    where = state.current().source_location() if state.active() else None
    if thread not in kinds or not state.active() or not state.current().kernel_depth:
        raise TileLangError(f"not supported by tilelang-mlir: T.launch_thread({thread!r}, ...) "
                            f"outside `with T.Kernel(...)` (TVM's explicit launch); {how}", where)
    from . import kernel as _kernel
    from .roles import get_thread_binding

    kind, dim = kinds[thread]
    extents = _kernel.get_thread_extents() if kind == "threadIdx" else \
        _kernel.get_block_extents()
    have = extents[dim] if dim < len(extents) else 1
    if extent is not None and not (isinstance(have, int) and isinstance(extent, int)
                                   and have == extent) and have is not extent:
        raise TileLangError(f"T.launch_thread({thread!r}, {extent!r}): the kernel has {have} "
                            f"along {thread}; a launch inside T.Kernel reads the kernel's "
                            f"own index, so its extent must be the kernel's ({how})", where)
    if kind == "threadIdx":
        return get_thread_binding(dim)
    return _kernel.get_block_binding(dim)


def serial(start, stop=None, step=None, *, annotations: Optional[dict] = None) -> Serial:
    """A sequential loop (`range` in a tile program means the same); a
    constant negative step counts down."""
    return Serial(start, stop, step)


def unroll(start, stop=None, step=None, *, explicit: bool = False, unroll_factor=None,
           annotations: Optional[dict] = None) -> Serial:
    """A sequential loop the compiler should unroll (`explicit` and
    `unroll_factor`, TileLang's unrolling hints, are accepted)."""
    return Serial(start, stop, step, "tile.unroll")


def vectorized(start, stop=None, step=None, *, annotations: Optional[dict] = None) -> Serial:
    """A sequential loop the compiler should vectorize."""
    return Serial(start, stop, step, "tile.vectorize")


def _exit_statement_error(name: str, keyword: str):
    from ..base.errors import TileLangError

    return TileLangError(f"T.{name}() is a statement in the body of a sequential loop "
                         f"(as `{keyword}`), not a value")


def loop_break():
    """`T.loop_break()`: TileLang's `break` of the innermost sequential loop
    (a statement of its body, as `break` itself)."""
    raise _exit_statement_error("loop_break", "break")


def break_loop():
    """`T.break_loop()` (TVM's break intrinsic, also as
    `T.evaluate(T.break_loop())`): `break` of the innermost sequential loop,
    a statement of its body, as `break` itself."""
    raise _exit_statement_error("break_loop", "break")


def continue_loop():
    """`T.continue_loop()` (TVM's continue intrinsic, also as
    `T.evaluate(T.continue_loop())`): `continue` of the innermost sequential
    loop, a statement of its body, as `continue` itself."""
    raise _exit_statement_error("continue_loop", "continue")


# The statement calls that exit a loop, and which exit each is (the parser
# reads them as `break` / `continue`).
LOOP_EXITS = {loop_break: "break", break_loop: "break", continue_loop: "continue"}
