"""`T.Layout` and `T.Fragment`: user layouts given as index functions.

`T.Layout(shape, fn)` maps the logical index of a buffer of `shape` to the
index at which the element is stored, in a (possibly different) shape of
the same size: `lambda b, l, h, d: [b, h, l, d]` stores a bshd tensor as
bhld. Annotated on a global tensor with `T.annotate_layout({X: layout})`,
every access of the kernel to X (loads, stores, T.copy, T.atomic_add) goes
to the stored index; the function must be a bijection onto its range.

`T.Fragment(shape, forward_fn=lambda i, j: (thread, register))` (or
`forward_thread_fn` and `forward_index_fn`; with `replicate = R` the
functions take the replica index as a last argument) says which thread and
register hold each element of a fragment; the functions must be affine in
the indices (+, -, * by a constant, //, % by a constant).
"""

from __future__ import annotations

import inspect
from typing import Callable, List, Optional, Sequence

import numpy as np

from ..base.errors import TileLangError
from ._builtin import builtin

# Bijectivity of a constant-shape layout is checked element by element up to
# this many elements.
_CHECK_LIMIT = 1 << 22


class _Range:
    """The values an index expression takes, [lo, hi] (None: unknown), and
    which input it is when it is one unchanged."""

    def __init__(self, lo, hi, var: Optional[int] = None):
        self.lo, self.hi, self.var = lo, hi, var

    @staticmethod
    def of(x) -> "_Range":
        if isinstance(x, _Range):
            return x
        if isinstance(x, int) and not isinstance(x, bool):
            return _Range(x, x)
        raise TypeError(f"a layout function may only combine its indices with integers, got "
                        f"{x!r}")

    def _known(self, o) -> bool:
        return None not in (self.lo, self.hi, o.lo, o.hi)

    def __add__(self, o):
        o = _Range.of(o)
        return _Range(self.lo + o.lo, self.hi + o.hi) if self._known(o) else _Range(None, None)

    __radd__ = __add__

    def __sub__(self, o):
        o = _Range.of(o)
        return _Range(self.lo - o.hi, self.hi - o.lo) if self._known(o) else _Range(None, None)

    def __rsub__(self, o):
        return _Range.of(o) - self

    def __mul__(self, o):
        o = _Range.of(o)
        if not self._known(o):
            return _Range(None, None)
        c = [self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi]
        return _Range(min(c), max(c))

    __rmul__ = __mul__

    def __floordiv__(self, o):
        o = _Range.of(o)
        if o.lo != o.hi or not o.lo:
            raise TypeError("a layout function may only divide by a nonzero constant")
        if not self._known(o):
            return _Range(None, None)
        a, b = self.lo // o.lo, self.hi // o.lo
        return _Range(min(a, b), max(a, b))

    def __mod__(self, o):
        o = _Range.of(o)
        if o.lo != o.hi or o.lo <= 0:
            raise TypeError("a layout function may only take % by a positive constant")
        if self.lo is not None and self.lo >= 0 and self.hi < o.lo:
            return _Range(self.lo, self.hi)
        return _Range(0, o.lo - 1)


def _outputs(result) -> list:
    if isinstance(result, (list, tuple)):
        return list(result)
    return [result]


class Layout:
    """`T.Layout(shape, forward_fn)`: see the module docstring."""

    def __init__(self, shape: Sequence, forward_fn: Callable):
        self.shape = list(shape)
        self.forward_fn = forward_fn
        self._out_shape: Optional[list] = None

    def forward(self, indices: Sequence) -> list:
        """The stored index of logical index `indices` (any values the
        function's operators accept: ints, index expressions, arrays)."""
        out = _outputs(self.forward_fn(*indices))
        if not out:
            raise TileLangError("the T.Layout function returned no index")
        return out

    def output_shape(self, dims: Sequence) -> list:
        """The extents of the stored index, for a buffer whose dimensions
        are `dims` (ints, or None where not known at compile time)."""
        if len(dims) != len(self.shape):
            raise TileLangError(f"T.Layout of rank {len(self.shape)} applied to a buffer of "
                                f"rank {len(dims)}")
        ranges = [_Range(0, d - 1, i) if d is not None else _Range(None, None, i)
                  for i, d in enumerate(dims)]
        try:
            out = self.forward(ranges)
        except TypeError as e:
            raise TileLangError(f"T.Layout: {e}") from None
        shape = []
        for k, r in enumerate(out):
            r = _Range.of(r)
            if r.var is not None:  # an input index passed through: its extent
                shape.append(("dim", r.var))
            elif r.lo is None:
                raise TileLangError(f"T.Layout: output {k} depends on a dimension whose size "
                                    "is not known at compile time (only an index passed "
                                    "through unchanged may)")
            elif r.lo < 0:
                raise TileLangError(f"T.Layout: output {k} can be negative ({r.lo})")
            else:
                shape.append(r.hi + 1)
        return shape

    def check_bijective(self, dims: Sequence[int]) -> None:
        """For a constant shape: the function maps the elements one to one
        onto the stored shape, of the same size."""
        out_shape = [dims[s[1]] if isinstance(s, tuple) else s for s in self.output_shape(dims)]
        size, out_size = int(np.prod(dims)), int(np.prod(out_shape))
        if size != out_size:
            raise TileLangError(f"T.Layout maps a buffer of shape {list(dims)} ({size} elements) "
                                f"into shape {out_shape} ({out_size} elements); the layout "
                                "must be a one-to-one map onto a shape of the same size")
        if size > _CHECK_LIMIT:
            return
        idx = np.indices(dims, dtype=np.int64).reshape(len(dims), -1)
        out = [np.broadcast_to(np.asarray(o, dtype=np.int64), idx.shape[1:])
               for o in self.forward(list(idx))]
        linear = np.zeros(idx.shape[1:], np.int64)
        for o, e in zip(out, out_shape):
            linear = linear * e + o
        if len(np.unique(linear)) != size:
            raise TileLangError("T.Layout: the function sends two elements to the same place; "
                                "a layout must be one-to-one")

    def collision(self, dims: Sequence[int]):
        """For a constant shape: two logical indices the function sends to
        the same coordinates, and those coordinates, or None when it is
        one-to-one (onto any codomain)."""
        size = int(np.prod(dims))
        if size > _CHECK_LIMIT:
            return None
        idx = np.indices(dims, dtype=np.int64).reshape(len(dims), -1)
        out = np.stack([np.broadcast_to(np.asarray(o, dtype=np.int64), idx.shape[1:])
                        for o in self.forward(list(idx))], axis=1)
        seen = {}
        for k, row in enumerate(map(tuple, out)):
            if row in seen:
                first = seen[row]
                return (tuple(int(v) for v in idx[:, first]), tuple(int(v) for v in idx[:, k]),
                        tuple(int(v) for v in row))
            seen[row] = k
        return None

    def __repr__(self) -> str:
        return f"T.Layout({self.shape})"


class _Affine:
    """An affine expression of the fragment's indices being built as text."""

    def __init__(self, text: str, const: Optional[int] = None):
        self.text, self.const = text, const

    @staticmethod
    def of(x) -> "_Affine":
        if isinstance(x, _Affine):
            return x
        if isinstance(x, int) and not isinstance(x, bool):
            return _Affine(str(x) if x >= 0 else f"-{-x}", x)
        raise TypeError(f"a fragment layout function may only combine its indices with "
                        f"integers, got {x!r}")

    def _bin(self, o, op, swap=False):
        o = _Affine.of(o)
        a, b = (o, self) if swap else (self, o)
        return _Affine(f"({a.text} {op} {b.text})")

    def __add__(self, o): return self._bin(o, "+")
    def __radd__(self, o): return self._bin(o, "+", True)
    def __sub__(self, o): return self._bin(o, "-")
    def __rsub__(self, o): return self._bin(o, "-", True)
    def __mul__(self, o): return self._bin(o, "*")
    def __rmul__(self, o): return self._bin(o, "*", True)

    def __floordiv__(self, o):
        if _Affine.of(o).const is None:
            raise TypeError("a fragment layout function may only divide by a constant")
        return self._bin(o, "floordiv")

    def __mod__(self, o):
        if _Affine.of(o).const is None:
            raise TypeError("a fragment layout function may only take % by a constant")
        return self._bin(o, "mod")


class Fragment:
    """`T.Fragment(shape, forward_fn=..., replicate=1)`: see the module
    docstring."""

    def __init__(self, shape: Sequence[int], forward_fn: Optional[Callable] = None,
                 forward_thread_fn: Optional[Callable] = None, replicate: int = 1,
                 forward_index_fn: Optional[Callable] = None):
        self.shape = [int(s) for s in shape]
        self.replicate = int(replicate)
        if self.replicate < 1:
            raise TileLangError(f"T.Fragment: replicate must be positive, got {replicate}")
        if forward_fn is None and forward_thread_fn is None:
            raise TileLangError("T.Fragment needs forward_fn, or forward_thread_fn and "
                                "forward_index_fn")
        self._fns = (forward_fn, forward_thread_fn, forward_index_fn)
        self.map = self._map(1)

    def _apply(self, args, dims):
        """(thread, [index]) of the functions at `args` (the indices, then
        the replica where replicated; `dims` the indices alone)."""
        forward_fn, thread_fn, index_fn = self._fns
        try:
            if forward_fn is not None:
                thread, index = forward_fn(*args)
            elif index_fn is not None:
                thread = thread_fn(*args)
                index = index_fn(*_fit(index_fn, dims, args))
            else:
                thread = thread_fn(*args)
                index = _unused_index(self.shape, thread_fn, self.replicate)
        except (TypeError, ValueError) as e:
            raise TileLangError(f"T.Fragment: {e}") from None
        index = _outputs(index)
        if len(index) != 1:
            raise TileLangError(f"not supported by tilelang-mlir: a T.Fragment whose register "
                                f"index has {len(index)} dimensions (one is supported)")
        return thread, index

    def _map(self, pack: int) -> str:
        """The layout's affine map; with `pack` > 1, the map of the bytes of
        a fragment of packed elements (`pack` a byte along the last
        dimension): byte b of a row is where its first element is, its
        register that element's divided by `pack`."""
        dims = [_Affine(f"d{i}") for i in range(len(self.shape))]
        scaled = dims[:-1] + [dims[-1] * pack] if pack > 1 else dims
        args = scaled + ([_Affine("s0")] if self.replicate > 1 else [])
        thread, index = self._apply(args, scaled)
        reg = _Affine.of(index[0])
        if pack > 1:
            reg = reg // pack
        sym = "[s0]" if self.replicate > 1 else ""
        names = ", ".join(f"d{i}" for i in range(len(self.shape)))
        return f"affine_map<({names}){sym} -> ({_Affine.of(thread).text}, {reg.text})>"

    def _check_packed(self, pack: int, name: str) -> None:
        """The layout of a fragment of packed elements must keep each byte's
        `pack` elements on one thread, in consecutive registers from a
        multiple of `pack` (one register byte); checked at every element."""
        import itertools

        if self._fns[0] is None and self._fns[2] is None:
            raise TileLangError(f"not supported by tilelang-mlir: a T.Fragment given by "
                                f"forward_thread_fn alone on {name!r}, a fragment of packed "
                                f"elements (give forward_fn, or forward_index_fn too)")
        if self.shape[-1] % pack:
            raise TileLangError(f"T.Fragment on {name!r}: its last dimension {self.shape[-1]} is "
                                f"not a multiple of {pack}, the elements of a byte")
        rows = [range(n) for n in self.shape[:-1]] + [range(0, self.shape[-1], pack)]
        for rep in range(self.replicate):
            for idx in itertools.product(*rows):
                first = None
                for r in range(pack):
                    p = list(idx[:-1]) + [idx[-1] + r]
                    thread, index = self._apply(p + ([rep] if self.replicate > 1 else []), p)
                    here = (int(thread), int(index[0]))
                    if first is None:
                        first = here
                        ok = here[1] % pack == 0
                    else:
                        ok = here == (first[0], first[1] + r)
                    if not ok:
                        raise TileLangError(
                            f"T.Fragment on {name!r} ({pack} elements a byte): element "
                            f"{tuple(p)} is on thread {here[0]}, register {here[1]}; the "
                            f"elements of a byte must be on one thread in consecutive "
                            f"registers from a multiple of {pack}")

    def layout_attr(self, threads: int, fmap: Optional[str] = None):
        """The #tile.layout attribute of this layout over `threads` threads."""
        from .. import ir

        rep = f", replicate = {self.replicate}" if self.replicate > 1 else ""
        return ir.Attribute.parse(f"#tile.layout<{fmap or self.map}, threads = {threads}{rep}>")

    def to_attr(self, buf):
        from .. import ir
        from . import state

        b = state.current()
        if buf.scope != "fragment":
            raise b.error(f"a T.Fragment layout applies to fragments, {buf.name!r} is a "
                          f"{buf.scope} buffer")
        if list(buf.shape) != self.shape:
            raise b.error(f"T.Fragment of shape {self.shape} annotated on {buf.name!r} of "
                          f"shape {list(buf.shape)}")
        fmap = self.map
        if buf.pack > 1:  # the layout of its bytes
            try:
                self._check_packed(buf.pack, buf.name)
            except TileLangError as e:
                raise b.error(e.message) from None
            fmap = self._map(buf.pack)
        return self.layout_attr(b.kernel_threads, fmap)

    def __repr__(self) -> str:
        return f"T.Fragment({self.shape}, {self.map})"


def _unused_index(shape, thread_fn, replicate: int) -> "_Affine":
    """TileLang's register index of a fragment given by its thread function
    alone: the parts of the indices the thread does not depend on,
    flattened in order (each index is unused, used, or split at a divisor
    with one part used). Found by evaluating the function; a mapping of
    another form is an error asking for forward_index_fn."""
    import itertools

    def thread_of(idx):
        args = list(idx) + ([0] if replicate > 1 else [])
        return int(thread_fn(*args))

    points = list(itertools.product(*(range(n) for n in shape)))
    threads = {p: thread_of(p) for p in points}

    def depends_only_on(d, key):
        """Whether the thread is the same for indices that agree elsewhere
        and have the same key(index d)."""
        seen = {}
        for p, t in threads.items():
            k = p[:d] + (key(p[d]),) + p[d + 1:]
            if seen.setdefault(k, t) != t:
                return False
        return True

    parts = []  # (affine text, range) of each unused part, in order
    for d, n in enumerate(shape):
        name = f"d{d}"
        if depends_only_on(d, lambda v: 0):
            parts.append((name, n))
            continue
        divisors = [k for k in range(1, n + 1) if n % k == 0]
        low = max(k for k in divisors if depends_only_on(d, lambda v, k=k: v // k))
        high = min(k for k in divisors if depends_only_on(d, lambda v, k=k: v % k))
        if low > 1:  # the thread reads d // low: d mod low is free
            parts.append((f"({name} mod {low})", low))
        elif high < n:  # the thread reads d mod high: d floordiv high is free
            parts.append((f"({name} floordiv {high})", n // high))
    text, size = "0", 1
    for part, n in parts:
        text = part if text == "0" else f"({text} * {n} + {part})"
        size *= n
    # each (thread, index) must name one element
    env = {}
    for p, t in threads.items():
        v = _eval_affine(text, p)
        if env.setdefault((t, v), p) != p:
            raise TileLangError("T.Fragment: the register index cannot be derived from "
                                "forward_thread_fn (two elements would share a thread and an "
                                "index); give forward_index_fn")
    return _Affine(text)


def _eval_affine(text: str, point) -> int:
    expr = text.replace("floordiv", "//").replace("mod", "%")
    return int(eval(expr, {"__builtins__": {}},  # noqa: S307 (our own text)
                    {f"d{i}": v for i, v in enumerate(point)}))


def _fit(fn, dims, args):
    """The arguments `fn` takes: the indices, and the replica if it has room."""
    try:
        n = len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return args
    return args if n >= len(args) else dims


@builtin
def reshape(b, src, shape):
    """`T.reshape(X, shape)`: buffer X (a global tensor, a shared, fragment
    or local buffer) seen in another shape of the same size (row-major);
    loads, stores, T.copy and the tile operations through it reach X's
    elements."""
    return b.view(src, shape, None, "T.reshape")


@builtin
def view(b, src, shape=None, dtype=None):
    """`T.view(X, shape)`: as T.reshape (the shape defaults to X's; another
    dtype is not supported)."""
    return b.view(src, shape, dtype, "T.view")


__all__ = ["Layout", "Fragment", "reshape", "view"]
