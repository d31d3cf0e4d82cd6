"""Signatures of tile programs: the argument types users annotate with
(`T.Tensor`, `T.dynamic`, scalar dtypes) and `Param`, one argument as the
compiler, the saved artifacts and the runtime see it.

Bottom layer: plain data, no MLIR, imported by every layer above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union

from . import dtypes as dt
from .dtypes import DType


class SymbolicDim:
    """A size known only at run time (`T.dynamic("M")`): a kernel compiled
    once serves every value. Tensors that share a symbol must agree on it."""

    def __init__(self, name: str):
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"a symbolic size needs an identifier name, got {name!r}")
        self.name = name

    def __repr__(self) -> str:
        return f"T.dynamic({self.name!r})"

    # Shape arithmetic outside a tile program (e.g. an output twice as long)
    # is not supported: say so instead of failing obscurely.
    def _no_arith(self, *_):
        raise TypeError(f"arithmetic on symbolic size {self.name!r} outside a tile "
                        "program is not supported")

    __add__ = __radd__ = __mul__ = __rmul__ = __sub__ = __rsub__ = _no_arith
    __floordiv__ = __rfloordiv__ = _no_arith


Dim = Union[int, SymbolicDim]


class TensorType:
    """`T.Tensor(shape, dtype)`: a global-memory tensor argument."""

    def __init__(self, shape: Union[Dim, Sequence[Dim]], dtype: Union[str, DType, None] = "float32"):
        if isinstance(shape, (int, SymbolicDim)):
            shape = (shape,)
        dims = []
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, (int, SymbolicDim)):
                raise TypeError(f"tensor dimensions must be ints or T.dynamic sizes, got {d!r}")
            if isinstance(d, int) and d <= 0:
                raise TypeError(f"tensor dimensions must be positive, got {d}")
            dims.append(d)
        self.shape: Tuple[Dim, ...] = tuple(dims)
        self.dtype: Optional[DType] = None if dtype is None else dt.as_dtype(dtype)

    def __repr__(self) -> str:
        return f"T.Tensor({self.shape}, {self.dtype})"


class SymmetricTensorType(TensorType):
    """`T.SymmetricTensor(shape, dtype)`: the local part of a symmetric
    buffer, which every rank of a process group allocates at the same size
    and maps into the others' address spaces (`tilelang_mlir.distributed`).
    In the program, `X.peer(r)` is rank r's part. The kernel also receives
    the peers' addresses (a hidden parameter, `peers_param`)."""

    def __repr__(self) -> str:
        return f"T.SymmetricTensor({self.shape}, {self.dtype})"


# The symbolic size of every peer table: the number of ranks.
RANKS = "__ranks"


def peers_param(name: str) -> "Param":
    """The hidden parameter that carries the peers' addresses of symmetric
    tensor `name`: int64 (ranks,), element r the address of rank r's part."""
    return Param(f"{name}__peers", "tensor", dt.as_dtype("int64"), (RANKS,), peers_of=name)


class ScalarType:
    """A scalar kernel argument: `n: T.int32`."""

    def __init__(self, dtype: DType):
        self.dtype = dt.as_dtype(dtype)


@dataclass(frozen=True)
class Param:
    """One kernel argument: a tensor (shape entries are ints or symbol
    names) or a scalar. A `workspace` tensor (`T.alloc_global` in the
    program) is not passed by the caller: the runtime allocates it for each
    call and drops it after (workspace parameters come last). A `symmetric`
    tensor is a symmetric buffer's local part; its peer table is the hidden
    parameter whose `peers_of` names it (after the workspaces)."""

    name: str
    kind: str  # "tensor" | "scalar"
    dtype: DType
    shape: Tuple[Union[int, str], ...] = ()
    workspace: bool = False
    symmetric: bool = False
    peers_of: Optional[str] = None

    @property
    def hidden(self) -> bool:
        """Not in the caller's argument list (nor a possible output)."""
        return self.workspace or self.peers_of is not None

    def to_json(self) -> dict:
        d = {"name": self.name, "kind": self.kind, "dtype": self.dtype.name,
             "shape": list(self.shape)}
        if self.workspace:
            d["workspace"] = True
        if self.symmetric:
            d["symmetric"] = True
        if self.peers_of is not None:
            d["peers_of"] = self.peers_of
        return d

    @staticmethod
    def from_json(d: dict) -> "Param":
        return Param(d["name"], d["kind"], dt.as_dtype(d["dtype"]), tuple(d["shape"]),
                     bool(d.get("workspace", False)), bool(d.get("symmetric", False)),
                     d.get("peers_of"))


def is_input(index: int, param: Param, out_idx: Sequence[int]) -> bool:
    """Whether the caller passes parameter `index` (not an output, not a
    workspace)."""
    return index not in out_idx and not param.hidden


def symbols_of(params: Sequence[Param]) -> list:
    """The symbolic sizes of the tensor parameters, in order of appearance."""
    return [d for p in params if p.kind == "tensor" for d in p.shape if isinstance(d, str)]


def int_scalars_of(params: Sequence[Param]) -> list:
    """The names of the integer scalar parameters (what a grid may use)."""
    return [p.name for p in params if p.kind == "scalar" and p.dtype.is_int]
