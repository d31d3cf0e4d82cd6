"""Pictures and tables of where a compiled kernel keeps its tiles.

After the "layout" stage of a CUDA compile every fragment carries
`#tile.layout<map, threads = T[, replicate = R]>` (which thread and register
hold each element) and every shared buffer `#tile.swizzle<bytes>` (how its
elements are placed). These tools read both off `kernel.mlir("layout")`:

    kernel = tl.compile(matmul(1024, 1024, 1024, 128, 128, 32), target="cuda:sm_90a")
    tl.tools.allocations(kernel)            # the buffers, numbered
    print(tl.tools.layout_text(kernel, 2))  # rows x cols of thread:register
    tl.tools.plot_layout(kernel, 2, "acc.png")

No GPU is needed (`cuda:sm_80` and `cuda:sm_90a` compile anywhere). A buffer
is named by its position in `allocations()` (shared and fragment buffers in
program order, as in the IR) or by its SSA name in the IR ("%4"): the IR
does not keep the Python variable names.

Fragments: the map sends an element index (d0, d1, ...) and, when
`replicate > 1`, a replica index s0 in [0, R) to (thread, register).
Shared buffers: the placement of the compiler's `sharedLinear`: rows wider
than the swizzle span are cut into panels of `span` bytes stored one after
the other, then the XOR swizzle of 16-byte chunks (byte bits [4, 4 + b) ^=
bits [7, 7 + b), b = 3/2/1 for 128/64/32-byte swizzles). A picture colors
each element by the 16-byte chunk of its 128-byte line (which decides its 4
banks) or by its bank.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .affine import AffineMap, parse_affine_map

_ALIAS_RE = re.compile(r"^#([\w$.-]+) = (.*)$", re.M)
_ALLOC_RE = re.compile(
    r"(?P<name>%[\w$.-]+(?:#\d+)?) = tile\.alloc_(?P<scope>shared|fragment)\b"
    r"(?P<attrs>[^:]*): memref<(?P<type>[^,>]+)")
_LAYOUT_RE = re.compile(r"#tile\.layout<(?P<map>affine_map<[^<>]*>|#[\w$.-]+), "
                        r"threads = (?P<threads>\d+)(?:, replicate = (?P<replicate>\d+))?>")
_SWIZZLE_RE = re.compile(r"#tile\.swizzle<(?P<bytes>\d+)(?:, pad = (?P<pad>\d+))?>")

WARPGROUP = 128  # NVIDIA (sm_90a wgmma)
SHARED_BANKS = 32


# ---------------------------------------------------------------------------
# Layouts and placements
# ---------------------------------------------------------------------------


class FragmentLayout:
    """`#tile.layout<map, threads, replicate>`: evaluates the map per element."""

    def __init__(self, map: Union[str, AffineMap], threads: int, replicate: int = 1):
        self.map = parse_affine_map(map) if isinstance(map, str) else map
        self.threads = int(threads)
        self.replicate = int(replicate)
        if len(self.map.results) != 2:
            raise ValueError(f"a fragment layout map has two results (thread, register), "
                             f"got {len(self.map.results)}: {self.map.text}")
        want = 1 if self.replicate > 1 else 0
        if self.map.num_symbols != want:
            raise ValueError(f"a fragment layout with replicate = {self.replicate} takes "
                             f"{want} symbol(s), its map has {self.map.num_symbols}: "
                             f"{self.map.text}")

    def forward(self, index: Sequence[int], replica: int = 0) -> Tuple[int, int]:
        """The (thread, register) holding element `index` (replica `replica`)."""
        syms = (replica,) if self.replicate > 1 else ()
        t, r = self.map(tuple(index), syms)
        return int(t), int(r)

    def table(self, shape: Sequence[int]) -> Tuple[np.ndarray, np.ndarray]:
        """(threads, registers): int arrays of shape (replicate, *shape)."""
        shape = tuple(int(s) for s in shape)
        if len(shape) != self.map.num_dims:
            raise ValueError(f"the layout map takes {self.map.num_dims} dimension(s), the "
                             f"fragment has shape {shape}")
        idx = tuple(np.indices(shape, dtype=np.int64)) if shape else ()
        threads = np.empty((self.replicate,) + shape, np.int64)
        regs = np.empty_like(threads)
        for k in range(self.replicate):
            t, r = self.map(idx, (k,) if self.replicate > 1 else ())
            threads[k] = np.broadcast_to(t, shape)
            regs[k] = np.broadcast_to(r, shape)
        bad = (threads < 0) | (threads >= self.threads) | (regs < 0)
        if bad.any():
            k, *where = (int(x[0]) for x in np.nonzero(bad))
            raise ValueError(f"the layout sends element {tuple(where)} (replica {k}) to "
                             f"thread {threads[(k, *where)]}, register {regs[(k, *where)]}, "
                             f"outside {self.threads} threads")
        return threads, regs

    def __repr__(self) -> str:
        rep = f", replicate = {self.replicate}" if self.replicate > 1 else ""
        return f"#tile.layout<{self.map.text}, threads = {self.threads}{rep}>"


def swizzle_offset(linear: np.ndarray, element_bytes: int, swizzle_bytes: int):
    """The compiler's `swizzleOffset`: byte bits [4, 4 + b) ^= bits [7, 7 + b)
    of the element offset `linear`, b = log2(swizzle_bytes / 16)."""
    bits = {32: 1, 64: 2, 128: 3}.get(swizzle_bytes, 0)
    if bits == 0:
        return linear
    byte = linear * element_bytes
    byte = byte ^ (((byte >> 7) & ((1 << bits) - 1)) << 4)
    return byte // element_bytes


def panel_elements(shape: Sequence[int], element_bytes: int, swizzle_bytes: int) -> int:
    """The panel width in elements when rows are wider than the swizzle span
    (`sharedPanelElements`), else 0."""
    if len(shape) < 2 or swizzle_bytes not in (32, 64, 128):
        return 0
    if shape[-1] * element_bytes <= swizzle_bytes:
        return 0
    return swizzle_bytes // element_bytes


def shared_offsets(shape: Sequence[int], element_bytes: int, swizzle_bytes: int) -> np.ndarray:
    """The element offset of every element of a shared buffer (an int array of
    `shape`), as the compiler's `sharedLinear` places it."""
    shape = tuple(int(s) for s in shape)
    if len(shape) < 2:
        linear = np.arange(shape[0] if shape else 1, dtype=np.int64).reshape(shape)
        return swizzle_offset(linear, element_bytes, swizzle_bytes)
    idx = np.indices(shape, dtype=np.int64)
    rows, cols = shape[-2], shape[-1]
    batch = np.zeros(shape, np.int64)
    for d in range(len(shape) - 2):
        batch = batch * shape[d] + idx[d]
    r, c = idx[-2], idx[-1]
    linear = batch * rows * cols
    span = panel_elements(shape, element_bytes, swizzle_bytes)
    if span:
        linear = linear + (c // span) * rows * span + r * span + c % span
    else:
        linear = linear + r * cols + c
    return swizzle_offset(linear, element_bytes, swizzle_bytes)


# ---------------------------------------------------------------------------
# Reading the IR
# ---------------------------------------------------------------------------


def _element_bits(dtype: str) -> int:
    if dtype == "index":
        return 64
    if dtype.startswith("f8") or dtype.startswith("f4") or dtype.startswith("f6"):
        return int(dtype[1])
    m = re.match(r"^(?:bf|tf|[fiu]|si|ui)(\d+)$", dtype)
    if not m:
        raise ValueError(f"unknown element type {dtype!r}")
    return 19 if dtype == "tf32" else int(m.group(1))


@dataclass
class Allocation:
    """A shared or fragment buffer of a kernel, as the IR after the "layout"
    stage describes it."""

    index: int                # position among the kernel's shared and fragment buffers
    name: str                 # its SSA name in the IR ("%4")
    scope: str                # "shared" or "fragment"
    shape: Tuple[int, ...]
    dtype: str                # the MLIR element type ("f32", "f16", ...)
    layout: Optional[FragmentLayout] = None  # fragments
    swizzle: int = 0          # shared buffers: the swizzle span in bytes
    pad: int = 0              # shared buffers: padding elements per row (no swizzle)

    @property
    def element_bytes(self) -> int:
        return max(1, _element_bits(self.dtype) // 8)

    @property
    def type_text(self) -> str:
        return "x".join(str(s) for s in self.shape + (self.dtype,))

    def describe(self) -> str:
        if self.scope == "fragment":
            if self.layout is None:
                what = "no layout"
            else:
                what = f"{self.layout.threads} threads"
                if self.layout.replicate > 1:
                    what += f", replicate {self.layout.replicate}"
        else:
            what = f"swizzle {self.swizzle} B" if self.swizzle else "no swizzle"
            if self.pad:
                what += f", pad {self.pad}"
        return f"[{self.index}] {self.name} {self.scope} {self.type_text} ({what})"


def _ir_text(kernel) -> Tuple[str, str]:
    """(IR text, what it is) of a Kernel (its "layout" stage) or of IR text."""
    if isinstance(kernel, str):
        return kernel, "the given IR"
    mlir = getattr(kernel, "mlir", None)
    if mlir is None:
        raise TypeError(f"expected a compiled kernel (tl.compile) or IR text, got "
                        f"{type(kernel).__name__}")
    stages = getattr(kernel, "stages", [])
    if "layout" not in stages:
        if not stages:
            raise ValueError(f"kernel {kernel.name!r} keeps no IR (it was loaded from an "
                             "ahead-of-time artifact): compile it to see its layouts")
        raise ValueError(f"kernel {kernel.name!r} (target {kernel.target}) has no \"layout\" "
                         f"stage (stages: {', '.join(stages)}): layouts are chosen for CUDA "
                         "targets only; compile with target=\"cuda:sm_80\" or "
                         "\"cuda:sm_90a\" (no GPU needed)")
    return kernel.mlir("layout"), f"kernel {kernel.name!r}"


def allocations(kernel) -> List[Allocation]:
    """The shared and fragment buffers of a compiled CUDA kernel (or of IR
    text after layout inference), in program order, with their layouts."""
    text, _ = _ir_text(kernel)
    aliases: Dict[str, str] = {m.group(1): m.group(2).strip() for m in _ALIAS_RE.finditer(text)}
    result = []
    for m in _ALLOC_RE.finditer(text):
        *dims, dtype = m.group("type").strip().split("x")
        if any(not d.isdigit() for d in dims):
            raise ValueError(f"allocation {m.group('name')} has a dynamic shape: "
                             f"memref<{m.group('type')}>")
        alloc = Allocation(len(result), m.group("name"), m.group("scope"),
                           tuple(int(d) for d in dims), dtype)
        attrs = m.group("attrs")
        if alloc.scope == "fragment":
            lm = _LAYOUT_RE.search(attrs)
            if lm:
                map_text = lm.group("map")
                if map_text.startswith("#"):
                    if map_text[1:] not in aliases:
                        raise ValueError(f"the layout of {alloc.name} names {map_text}, "
                                         "which the IR does not define")
                    map_text = aliases[map_text[1:]]
                alloc.layout = FragmentLayout(map_text, int(lm.group("threads")),
                                              int(lm.group("replicate") or 1))
        else:
            sm = _SWIZZLE_RE.search(attrs)
            if sm:
                alloc.swizzle = int(sm.group("bytes"))
                alloc.pad = int(sm.group("pad") or 0)
        result.append(alloc)
    return result


def find_allocation(kernel, buffer: Union[int, str]) -> Allocation:
    """The allocation `buffer` (an index into `allocations(kernel)` or an SSA
    name such as "%4") of `kernel`."""
    allocs = allocations(kernel)
    _, what = _ir_text(kernel)
    listing = "\n".join("  " + a.describe() for a in allocs) or "  (none)"
    found = None
    if isinstance(buffer, (int, np.integer)) and not isinstance(buffer, bool):
        if -len(allocs) <= buffer < len(allocs):
            found = allocs[buffer]
    elif isinstance(buffer, str):
        name = buffer if buffer.startswith("%") else "%" + buffer
        found = next((a for a in allocs if a.name == name), None)
    else:
        raise TypeError(f"a buffer is named by its index or its SSA name (\"%4\"), got "
                        f"{type(buffer).__name__}")
    if found is None:
        raise ValueError(f"{what} has no shared or fragment buffer {buffer!r} (the IR does "
                         f"not keep Python variable names; give an index or an SSA name). "
                         f"Its buffers:\n{listing}")
    if found.scope == "fragment" and found.layout is None:
        raise ValueError(f"fragment {found.name} of {what} has no layout (is this IR after "
                         "layout inference?)")
    return found


# ---------------------------------------------------------------------------
# The display grid
# ---------------------------------------------------------------------------


@dataclass
class _Grid:
    """Cells of a picture or table: `cells[r, c]` is the flat element index
    (into the buffer, row-major) shown there, -1 for none."""

    cells: np.ndarray
    row_labels: List[str]
    col_labels: List[str]
    row_breaks: List[int]  # rows after which the leading index changes


def _region_ranges(shape: Sequence[int], region) -> List[range]:
    if region is None:
        return [range(s) for s in shape]
    if not isinstance(region, (tuple, list)):
        region = (region,)
    if len(region) > len(shape):
        raise ValueError(f"region {region!r} has more entries than the buffer has "
                         f"dimensions ({len(shape)})")
    ranges = []
    for d, size in enumerate(shape):
        sel = region[d] if d < len(region) else None
        if sel is None:
            ranges.append(range(size))
            continue
        if isinstance(sel, (int, np.integer)):
            sel = slice(int(sel), int(sel) + 1)
        elif isinstance(sel, (tuple, list)) and len(sel) == 2:
            sel = slice(*sel)
        if not isinstance(sel, slice):
            raise TypeError(f"region entries are ints, slices or (start, stop) pairs, "
                            f"got {sel!r}")
        r = range(size)[sel]
        if len(r) == 0:
            raise ValueError(f"region {region!r} selects nothing of dimension {d} "
                             f"(size {size})")
        ranges.append(r)
    return ranges


def _grid(shape: Sequence[int], region=None, wrap: int = 32) -> _Grid:
    shape = tuple(shape)
    ranges = _region_ranges(shape, region)
    if not shape:
        return _Grid(np.zeros((1, 1), np.int64), [""], [""], [])
    strides = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
    if len(shape) == 1:
        elems = list(ranges[0])
        width = len(elems) if len(elems) <= 2 * wrap else wrap
        rows = -(-len(elems) // width)
        cells = np.full((rows, width), -1, np.int64)
        cells.flat[:len(elems)] = elems
        return _Grid(cells, [str(elems[r * width]) for r in range(rows)],
                     [f"+{c}" if rows > 1 else str(elems[c]) for c in range(width)], [])
    lead = np.array(np.meshgrid(*ranges[:-1], indexing="ij")).reshape(len(shape) - 1, -1).T
    base = lead @ np.array(strides[:-1], np.int64)
    cells = base[:, None] + np.array(list(ranges[-1]), np.int64)[None, :]
    row_labels = [",".join(str(int(x)) for x in row) for row in lead]
    breaks = [i for i in range(1, len(lead)) if (lead[i, :-1] != lead[i - 1, :-1]).any()]
    return _Grid(cells, row_labels, [str(c) for c in ranges[-1]], breaks)


def _fragment_values(alloc: Allocation, replica: int):
    layout = alloc.layout
    if not 0 <= replica < layout.replicate:
        raise ValueError(f"replica {replica} is out of range: {alloc.name} has replicate "
                         f"{layout.replicate}")
    threads, regs = layout.table(alloc.shape)
    return threads, regs


def _replica_summary(threads: np.ndarray) -> str:
    """How the replicas of an element spread over threads (offsets from
    replica 0, when the same for every element)."""
    if threads.shape[0] == 1:
        return ""
    flat = threads.reshape(threads.shape[0], -1)
    offsets = flat - flat[0]
    if not (offsets == offsets[:, :1]).all():
        return f"{threads.shape[0]} replicas of each element"
    offs = [int(x) for x in offsets[:, 0]]
    if len(offs) >= 2 and all(offs[i + 1] - offs[i] == offs[1] - offs[0]
                             for i in range(len(offs) - 1)):
        step = offs[1] - offs[0]
        text = f"thread + {step} * k, k < {len(offs)}" if step != 1 else \
            f"thread + k, k < {len(offs)}"
    else:
        text = "thread + " + "/".join(str(o) for o in offs)
    return f"replica k in {text}"


def _num_registers(regs: np.ndarray) -> int:
    return int(regs.max()) + 1 if regs.size else 0


# ---------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------


def layout_text(kernel, buffer: Union[int, str], region=None, *, show: Optional[str] = None,
                replica: int = 0) -> str:
    """A text table of buffer `buffer` of a compiled CUDA kernel: the first
    line describes the buffer, the second numbers the columns, then one line
    per row (rows of a buffer of rank > 2 are its leading indices, a long 1-D
    buffer wraps at 32 elements).

    Fragments: each cell is `thread:register` (of replica `replica` when the
    layout is replicated). Shared buffers: `show="offset"` (default, the
    element offset after panels and swizzle), "chunk" (the 16-byte chunk of
    its 128-byte line) or "bank" (its 4-byte bank).

    `region` restricts the table to a box of the buffer: one int, slice or
    (start, stop) pair per dimension (missing ones: everything).
    """
    alloc = find_allocation(kernel, buffer)
    grid = _grid(alloc.shape, region)
    if alloc.scope == "fragment":
        if show not in (None, "thread:register"):
            raise ValueError(f"show={show!r}: a fragment's table shows thread:register")
        threads, regs = _fragment_values(alloc, replica)
        t, r = threads[replica].reshape(-1), regs[replica].reshape(-1)
        cell = lambda e: f"{t[e]}:{r[e]}"  # noqa: E731
        title = _fragment_title(alloc, threads, regs, replica) + "; cells are thread:register"
    else:
        show = show or "offset"
        values = _shared_values(alloc, show).reshape(-1)
        cell = lambda e: str(values[e])  # noqa: E731
        title = _shared_title(alloc) + f"; cells are the {_SHARED_SHOW[show]}"
    texts = [[cell(e) if e >= 0 else "" for e in row] for row in grid.cells]
    width = max([len(s) for row in texts for s in row] + [len(c) for c in grid.col_labels])
    lead = max(len(s) for s in grid.row_labels)
    lines = [title, " " * lead + " | " + " ".join(c.rjust(width) for c in grid.col_labels)]
    for label, row in zip(grid.row_labels, texts):
        lines.append(label.rjust(lead) + " | " + " ".join(s.rjust(width) for s in row).rstrip())
    return "\n".join(lines)


_SHARED_SHOW = {"offset": "element offset (panels and swizzle applied)",
                "chunk": "16-byte chunk of the 128-byte line (banks 4c..4c+3)",
                "bank": "4-byte bank (of the element's first byte)"}


def _shared_values(alloc: Allocation, show: str) -> np.ndarray:
    if show not in _SHARED_SHOW:
        raise ValueError(f"show={show!r}: a shared buffer shows one of "
                         f"{', '.join(map(repr, _SHARED_SHOW))}")
    offsets = shared_offsets(alloc.shape, alloc.element_bytes, alloc.swizzle)
    byte = offsets * alloc.element_bytes
    if show == "offset":
        return offsets
    if show == "chunk":
        return (byte // 16) % 8
    return (byte // 4) % SHARED_BANKS


def _fragment_title(alloc: Allocation, threads, regs, replica: int) -> str:
    lay = alloc.layout
    text = (f"{alloc.name} fragment {alloc.type_text}: {lay.threads} threads, "
            f"{_num_registers(regs)} register{'s' if _num_registers(regs) != 1 else ''}/thread")
    if lay.replicate > 1:
        text += (f", replicate {lay.replicate} ({_replica_summary(threads)}; "
                 f"replica {replica} shown)")
    return text


def _shared_title(alloc: Allocation) -> str:
    text = f"{alloc.name} shared {alloc.type_text}: "
    text += f"swizzle {alloc.swizzle} B" if alloc.swizzle else "no swizzle"
    span = panel_elements(alloc.shape, alloc.element_bytes, alloc.swizzle)
    if span:
        text += f", panels of {span} columns"
    if alloc.pad:
        text += f", pad {alloc.pad} (not implemented by the GPU lowerings)"
    return text


# ---------------------------------------------------------------------------
# Pictures
# ---------------------------------------------------------------------------


def _warp_size(kernel) -> int:
    target = getattr(kernel, "target", None)
    return getattr(target, "warp_size", 32)


def _matplotlib():
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("the layout pictures are drawn with matplotlib, which is not "
                          "installed: pip install matplotlib (or tilelang-mlir[tools])") from None
    return Figure


_FRAGMENT_COLORS = ("thread", "warp", "register")
_SHARED_COLORS = ("chunk", "bank")
_LABEL_LIMIT = 1024  # cells: above this a picture has colors only


def _warp_palette(n: int) -> np.ndarray:
    from matplotlib import colormaps

    base = colormaps["tab10"].colors + colormaps["Dark2"].colors
    return np.array([base[i % len(base)][:3] for i in range(n)])


def _shade(rgb: np.ndarray, lane: np.ndarray, warp: int) -> np.ndarray:
    """Lighter for low lanes, darker for high ones."""
    t = (lane / (warp - 1))[..., None]
    light = rgb + (1 - rgb) * np.clip(0.55 - t, 0, None) * 1.2
    return light * (1 - np.clip(t - 0.55, 0, None) * 1.1)


def plot_layout(kernel, buffer: Union[int, str], path: Optional[str] = None, *,
                color_by: Optional[str] = None, labels: Optional[bool] = None, region=None,
                replica: int = 0, warp_size: Optional[int] = None,
                title: Optional[str] = None):
    """Draws buffer `buffer` of a compiled CUDA kernel (see `allocations`) and
    returns the matplotlib Figure; saves it to `path` when given.

    A fragment is a grid of cells, one per element, colored by the thread
    holding it (`color_by="thread"`: one hue per warp, lighter to darker over
    its lanes), by warp ("warp") or by register ("register"); each cell reads
    `T<thread>:R<register>` when the tile is small enough (`labels` forces
    it on or off). A shared buffer's cells are colored by the 16-byte chunk
    of the 128-byte line each element lands in (`color_by="chunk"`) or by its
    bank ("bank"). Rows of a buffer of rank > 2 are its leading indices (lines
    separate them); `region` draws a box of the buffer only (as in
    `layout_text`). `warp_size` defaults to the target's (32; 64 on AMD).
    """
    Figure = _matplotlib()
    from matplotlib.patches import Patch

    alloc = find_allocation(kernel, buffer)
    grid = _grid(alloc.shape, region)
    cells = grid.cells
    rows, cols = cells.shape
    valid = cells >= 0
    flat = np.where(valid, cells, 0)
    legend: List[Tuple[tuple, str]] = []
    colorbar = None
    groups = False  # warpgroup borders
    if alloc.scope == "fragment":
        color_by = color_by or "thread"
        if color_by not in _FRAGMENT_COLORS:
            raise ValueError(f"color_by={color_by!r}: a fragment is colored by one of "
                             f"{', '.join(map(repr, _FRAGMENT_COLORS))}")
        threads, regs = _fragment_values(alloc, replica)
        t = threads[replica].reshape(-1)[flat]
        r = regs[replica].reshape(-1)[flat]
        warp = warp_size or _warp_size(kernel)
        groups = alloc.layout.threads > WARPGROUP and warp == 32
        nwarps = -(-alloc.layout.threads // warp)
        palette = _warp_palette(nwarps)
        if color_by == "register":
            from matplotlib import colormaps

            nregs = max(1, _num_registers(regs))
            rgb = np.array(colormaps["viridis"](r / max(1, nregs - 1)))[..., :3]
            colorbar = ("viridis", nregs, "register")
        else:
            rgb = palette[t // warp]
            if color_by == "thread":
                rgb = _shade(rgb, t % warp, warp)
            shown = sorted(set(int(w) for w in np.unique(t[valid] // warp)))
            if len(shown) <= 16:
                for w in shown:
                    last = min(alloc.layout.threads, (w + 1) * warp) - 1
                    wg = f" (warpgroup {w * warp // WARPGROUP})" if groups else ""
                    legend.append((tuple(palette[w]), f"warp {w}: T{w * warp}-T{last}{wg}"))
        texts = np.char.add(np.char.add("T", t.astype(str)), np.char.add(":R", r.astype(str)))
        head = _fragment_title(alloc, threads, regs, replica)
        how = {"thread": "color: warp, lighter to darker over its lanes",
               "warp": "color: warp", "register": "color: register"}[color_by]
        if groups:
            how += "; thick lines between warpgroups"
    else:
        color_by = color_by or "chunk"
        if color_by not in _SHARED_COLORS:
            raise ValueError(f"color_by={color_by!r}: a shared buffer is colored by one of "
                             f"{', '.join(map(repr, _SHARED_COLORS))}")
        values = _shared_values(alloc, color_by).reshape(-1)[flat]
        if color_by == "chunk":
            from matplotlib import colormaps

            pal = np.array(colormaps["Set2"].colors)[:, :3]
            rgb = pal[values % len(pal)]
            for c in range(8):
                legend.append((tuple(pal[c]), f"chunk {c}: banks {4 * c}-{4 * c + 3}"))
        else:
            from matplotlib import colormaps

            rgb = np.array(colormaps["hsv"](values / SHARED_BANKS))[..., :3]
            colorbar = ("hsv", SHARED_BANKS, "bank")
        texts = values.astype(str)
        head = _shared_title(alloc)
        how = {"chunk": "color: 16-byte chunk of the 128-byte line",
               "bank": "color: 4-byte bank"}[color_by]

    if labels is None:
        labels = rows * cols <= _LABEL_LIMIT and cols <= 32
    label_width = max(len(s) for s in texts.reshape(-1)) if labels else 0
    cw = max(0.32, 0.075 * label_width) if labels else min(0.3, 11.0 / max(rows, cols))
    ch = 0.26 if labels else cw
    width = max(4.5, cols * cw + (1.8 if colorbar else 0.8))
    entry = max((len(text) for _, text in legend), default=1) * 0.055 + 0.5  # inches
    legend_cols = max(1, min(len(legend), int(width // entry)))
    height = rows * ch + 0.8 + (0.2 * (-(-len(legend) // legend_cols)) + 0.1 if legend else 0)
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    ax = fig.add_subplot()
    edge = dict(edgecolors="white", linewidth=0.5) if rows * cols <= 4096 else {}
    rgba = np.concatenate([rgb, valid[..., None].astype(float)], axis=-1)
    ax.pcolormesh(np.arange(cols + 1), np.arange(rows + 1), rgba, **edge)
    if groups:
        _borders(ax, np.where(valid, t // WARPGROUP, -1))
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_aspect("equal" if not labels else "auto")
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    longest = max(len(c) for c in grid.col_labels)
    _ticks(ax.set_xticks, grid.col_labels, cols, (0.07 * longest + 0.2) / cw)
    _ticks(ax.set_yticks, grid.row_labels, rows, 0.25 / ch)
    ax.tick_params(labelsize=7, length=2)
    for b in grid.row_breaks:
        ax.axhline(b, color="black", linewidth=1.2)
    if alloc.scope == "shared":
        span = panel_elements(alloc.shape, alloc.element_bytes, alloc.swizzle)
        cols_shown = [int(c) for c in grid.col_labels] if len(alloc.shape) > 1 else []
        for i in range(1, len(cols_shown)):
            if span and cols_shown[i] % span == 0:
                ax.axvline(i, color="black", linewidth=1.2, linestyle="--")
    if labels:
        size = 6 if label_width <= 8 else 5
        for (rr, cc), e in np.ndenumerate(cells):
            if e >= 0:
                lum = float(rgb[rr, cc] @ np.array([0.299, 0.587, 0.114]))
                ax.text(cc + 0.5, rr + 0.5, texts[rr, cc], ha="center", va="center",
                        fontsize=size, color="black" if lum > 0.5 else "white")
    ax.set_title(title or f"{head}\n{how}", fontsize=9)
    if legend:
        fig.legend(handles=[Patch(facecolor=c, label=l) for c, l in legend],
                   loc="outside lower center", ncols=legend_cols, fontsize=7, frameon=False)
    if colorbar:
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize

        cmap, n, what = colorbar
        sm = ScalarMappable(Normalize(0, n - 1 if what == "register" else n), cmap)
        fig.colorbar(sm, ax=ax, label=what, shrink=0.8)
    if path:
        fig.savefig(path)
    return fig


def _borders(ax, group: np.ndarray) -> None:
    """Thick lines between neighbouring cells of different groups (>= 0)."""
    from matplotlib.collections import LineCollection

    segs = []
    down = (group[1:] != group[:-1]) & (group[1:] >= 0) & (group[:-1] >= 0)
    for r, c in zip(*np.nonzero(down)):
        segs.append([(c, r + 1), (c + 1, r + 1)])
    right = (group[:, 1:] != group[:, :-1]) & (group[:, 1:] >= 0) & (group[:, :-1] >= 0)
    for r, c in zip(*np.nonzero(right)):
        segs.append([(c + 1, r), (c + 1, r + 1)])
    if segs:
        ax.add_collection(LineCollection(segs, colors="black", linewidths=2.0))


def _ticks(setter, labels: List[str], n: int, cells_apart: float) -> None:
    """Ticks at a power-of-two step at least `cells_apart` cells apart."""
    step = 1
    while step < cells_apart and step < n:
        step *= 2
    pos = list(range(0, n, step))
    setter([p + 0.5 for p in pos], [labels[p] for p in pos])


def save_layout_plots(kernel, folder: str) -> List[str]:
    """Writes one PNG per fragment and shared buffer of `kernel` into
    `folder` (`NN-scope-name.png`, NN its index in `allocations`); returns
    the paths. What the pass config `tl.layout_plot_dir` runs."""
    _matplotlib()
    os.makedirs(folder, exist_ok=True)
    paths = []
    for alloc in allocations(kernel):
        if alloc.scope == "fragment" and alloc.layout is None:
            continue
        name = re.sub(r"[^\w.-]", "_", alloc.name.lstrip("%"))
        path = os.path.join(folder, f"{alloc.index:02d}-{alloc.scope}-{name}.png")
        plot_layout(kernel, alloc.index, path)
        paths.append(path)
    return paths
