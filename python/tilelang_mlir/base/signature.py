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


class SymExpr:
    """An integer expression over symbolic sizes on the host: what
    arithmetic on `T.dynamic` sizes gives outside a tile program
    (`T.Tensor((n * 4,), ...)`, `seq_len * H`, `T.ceildiv(n, 64)`). It is a
    tensor dimension, a grid extent or a value a program uses; the runtime
    binds its symbols from the tensors of each call (a symbol that appears
    only inside expressions is solved from one: `n * 3 + 1` of size 16 gives
    n = 5). No truth value: comparing sizes is a run-time question."""

    __slots__ = ("op", "args")

    def __init__(self, op: str, args: tuple):
        self.op = op
        self.args = args

    # -- arithmetic -----------------------------------------------------------------
    def _bin(op: str, swap: bool = False):  # noqa: N805 (a method factory)
        def method(self, other):
            if isinstance(other, bool) or not isinstance(other, (int, SymExpr)):
                if hasattr(other, "__index__") and not isinstance(other, bool):
                    other = int(other.__index__())
                else:
                    return NotImplemented
            a, b = (other, self) if swap else (self, other)
            return sym_apply(op, a, b)
        return method

    __add__, __radd__ = _bin("add"), _bin("add", True)
    __sub__, __rsub__ = _bin("sub"), _bin("sub", True)
    __mul__, __rmul__ = _bin("mul"), _bin("mul", True)
    __floordiv__, __rfloordiv__ = _bin("floordiv"), _bin("floordiv", True)
    __mod__, __rmod__ = _bin("mod"), _bin("mod", True)
    __and__, __rand__ = _bin("and"), _bin("and", True)
    __or__, __ror__ = _bin("or"), _bin("or", True)
    __xor__, __rxor__ = _bin("xor"), _bin("xor", True)
    __lshift__, __rlshift__ = _bin("shl"), _bin("shl", True)
    __rshift__, __rrshift__ = _bin("shr"), _bin("shr", True)
    # Comparisons give a symbolic truth value (TVM's `a < b` of size
    # variables), decided when the sizes are known; == and != stay Python's
    # (identity: symbols are dictionary keys).
    __lt__, __le__ = _bin("lt"), _bin("le")
    __gt__, __ge__ = _bin("gt"), _bin("ge")
    del _bin

    def __neg__(self):
        return sym_apply("sub", 0, self)

    def __pos__(self):
        return self

    def __truediv__(self, other):
        raise TypeError(f"'/' on the symbolic size {self.text()} is ambiguous: use '//' or "
                        "T.ceildiv")

    __rtruediv__ = __truediv__

    def __bool__(self):
        raise TypeError(f"the symbolic size {self.text()} has no value before the program "
                        "runs; it has no truth value")

    def __index__(self):
        raise TypeError(f"the symbolic size {self.text()} has no value before the program "
                        "runs; it cannot be used as a Python integer")

    # -- reading ----------------------------------------------------------------------
    def symbols(self) -> list:
        """The names of the symbols in this expression, in order."""
        out: list = []
        for a in self.args:
            if isinstance(a, SymExpr):
                for n in a.symbols():
                    if n not in out:
                        out.append(n)
        return out

    def symbol_objects(self) -> list:
        """The SymbolicDim objects in this expression, in order."""
        out: list = []
        for a in self.args:
            if isinstance(a, SymExpr):
                for d in a.symbol_objects():
                    if all(d is not o for o in out):
                        out.append(d)
        return out

    def evaluate(self, lookup, ops=None):
        """The value of this expression with each symbol's value from
        `lookup(symbol)` (ints on the host, index values in a program);
        `ops` overrides an operation's function by name."""
        vals = [a.evaluate(lookup, ops) if isinstance(a, SymExpr) else a for a in self.args]
        fn = (ops or {}).get(self.op) or _SYM_OPS[self.op]
        return fn(*vals)

    def text(self) -> str:
        """The expression as Python source over the symbol names."""
        a = [x.text() if isinstance(x, SymExpr) else str(x) for x in self.args]
        if self.op in _SYM_INFIX:
            return f"({a[0]} {_SYM_INFIX[self.op]} {a[1]})"
        return f"{self.op}({', '.join(a)})"

    def __repr__(self) -> str:
        return self.text()


def _ceildiv(a, b):
    return -(-a // b)


_SYM_OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
    "shl": lambda a, b: a << b, "shr": lambda a, b: a >> b,
    "max": lambda a, b: a if a >= b else b, "min": lambda a, b: a if a <= b else b,
    "ceildiv": _ceildiv,
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}
_SYM_INFIX = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%", "and": "&",
              "or": "|", "xor": "^", "shl": "<<", "shr": ">>", "lt": "<", "le": "<=",
              "gt": ">", "ge": ">="}


def sym_apply(op: str, a, b):
    """`a op b` where one side is a SymExpr (constants fold; x + 0, x * 1
    and x // 1 are x)."""
    if not isinstance(a, SymExpr) and not isinstance(b, SymExpr):
        return _SYM_OPS[op](a, b)
    if op in ("add", "sub", "or", "xor", "shl", "shr") and isinstance(b, int) and b == 0:
        return a
    if op == "add" and isinstance(a, int) and a == 0:
        return b
    if op in ("mul", "floordiv", "ceildiv") and isinstance(b, int) and b == 1:
        return a
    if op == "mul" and isinstance(a, int) and a == 1:
        return b
    if op in ("floordiv", "mod", "ceildiv") and isinstance(b, int) and b == 0:
        raise ZeroDivisionError(f"symbolic size divided by zero: {op}({a!r}, 0)")
    return SymExpr(op, (a, b))


class SymbolicDim(SymExpr):
    """A size known only at run time (`T.dynamic("M")`): a kernel compiled
    once serves every value. Tensors that share a symbol must agree on it.
    Arithmetic on it gives a `SymExpr`."""

    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype="int32"):
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"a symbolic size needs an identifier name, got {name!r}")
        super().__init__("sym", ())
        self.name = name
        self.dtype = dt.as_dtype(dtype)

    def __repr__(self) -> str:
        return f"T.dynamic({self.name!r})"

    def symbols(self) -> list:
        return [self.name]

    def symbol_objects(self) -> list:
        return [self]

    def evaluate(self, lookup, ops=None):
        return lookup(self)

    def text(self) -> str:
        return self.name


def parse_dim(text: str) -> SymExpr:
    """The SymExpr of a dimension's text (`SymExpr.text()`; what a Param's
    shape holds for a dimension that is an expression)."""
    import ast

    symbols: dict = {}

    def conv(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and \
                not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            return symbols.setdefault(node.id, SymbolicDim(node.id))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return sym_apply("sub", 0, conv(node.operand))
        if isinstance(node, ast.BinOp):
            ops = {v: k for k, v in _SYM_INFIX.items()}
            sym = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%",
                   ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<",
                   ast.RShift: ">>"}.get(type(node.op))
            if sym is not None:
                return sym_apply(ops[sym], conv(node.left), conv(node.right))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("max", "min", "ceildiv") and len(node.args) == 2:
            return sym_apply(node.func.id, conv(node.args[0]), conv(node.args[1]))
        raise ValueError(f"not a dimension expression: {text!r}")

    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError(f"not a dimension expression: {text!r}") from None
    return conv(tree.body)


def dim_symbols(d) -> list:
    """The symbol names a Param dimension (int, symbol name or expression
    text) refers to."""
    if isinstance(d, str):
        return [d] if d.isidentifier() else parse_dim(d).symbols()
    return []


def eval_dim(d, symbols) -> int:
    """The value of a Param dimension with the symbols' values; KeyError
    names a symbol that has none."""
    if not isinstance(d, str):
        return d
    if d.isidentifier():
        return symbols[d]
    return parse_dim(d).evaluate(lambda s: symbols[s.name])


def solve_dim(d: str, size: int, symbols) -> Optional[Tuple[str, int]]:
    """(symbol, value) that makes expression dimension `d` equal `size`
    when exactly one of its symbols is unbound in `symbols` and the
    expression is affine in it (`n * 3 + 1`); None otherwise."""
    expr = parse_dim(d)
    unknown = [s for s in expr.symbols() if s not in symbols]
    if len(unknown) != 1:
        return None
    name = unknown[0]

    def at(v):
        env = dict(symbols)
        env[name] = v
        return expr.evaluate(lambda s: env[s.name])

    try:
        b = at(0)
        a = at(1) - b
    except (ZeroDivisionError, ValueError):
        return None
    if a == 0 or (size - b) % a:
        return None
    value = (size - b) // a
    try:
        return (name, value) if at(value) == size else None
    except (ZeroDivisionError, ValueError):
        return None


Dim = Union[int, SymExpr]


def _dims(values, what: str) -> Tuple[Dim, ...]:
    """A shape or strides as a tuple of ints and SymExprs."""
    if isinstance(values, (int, SymExpr)) and not isinstance(values, bool):
        values = (values,)
    try:
        values = tuple(values)
    except TypeError:
        raise TypeError(f"tensor {what} must be a tuple of ints or T.dynamic sizes, got "
                        f"{values!r}") from None
    dims = []
    for d in values:
        if hasattr(d, "__index__") and not isinstance(d, (bool, SymExpr)):
            d = int(d.__index__())
        if isinstance(d, bool) or not isinstance(d, (int, SymExpr)):
            raise TypeError(f"tensor {what} must be ints or T.dynamic sizes (and expressions of "
                            f"them), got {d!r}")
        if isinstance(d, int) and d < 0:
            raise TypeError(f"tensor {what} must not be negative, got {d}")
        dims.append(d)
    return tuple(dims)


class TensorType:
    """`T.Tensor(shape, dtype)`: a global-memory tensor argument (with
    `strides`, `T.StridedTensor`: one whose elements lie at those strides,
    in elements; ints or T.dynamic sizes). `scope` is "global" for
    arguments; T.SharedBuffer, T.FragmentBuffer and T.LocalBuffer give the
    same description of an on-chip buffer (what TileLang's macros use as
    their parameters' annotations)."""

    def __init__(self, shape: Union[Dim, Sequence[Dim]], dtype: Union[str, DType, None] = "float32",
                 strides: Optional[Sequence[Dim]] = None, scope: str = "global"):
        self.shape: Tuple[Dim, ...] = _dims(shape, "dimensions")
        self.dtype: Optional[DType] = None if dtype is None else dt.as_dtype(dtype)
        self.strides: Optional[Tuple[Dim, ...]] = None
        if strides is not None:
            self.strides = _dims(strides, "strides")
            if len(self.strides) != len(self.shape):
                raise ValueError(f"Invalid shape/strides' dimensions: shape {self.shape} has "
                                 f"{len(self.shape)}, strides {self.strides} has "
                                 f"{len(self.strides)}")
        self.scope = scope

    def __repr__(self) -> str:
        if self.strides is not None:
            return f"T.StridedTensor({self.shape}, {self.strides}, {self.dtype})"
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
    # A strided tensor's strides in elements (ints, symbol names, expression
    # texts); None: contiguous (row-major).
    strides: Optional[Tuple[Union[int, str], ...]] = None

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
        if self.strides is not None:
            d["strides"] = list(self.strides)
        return d

    @staticmethod
    def from_json(d: dict) -> "Param":
        return Param(d["name"], d["kind"], dt.as_dtype(d["dtype"]), tuple(d["shape"]),
                     bool(d.get("workspace", False)), bool(d.get("symmetric", False)),
                     d.get("peers_of"),
                     None if d.get("strides") is None else tuple(d["strides"]))


def is_input(index: int, param: Param, out_idx: Sequence[int]) -> bool:
    """Whether the caller passes parameter `index` (not an output, not a
    workspace)."""
    return index not in out_idx and not param.hidden


def symbols_of(params: Sequence[Param]) -> list:
    """The symbolic sizes of the tensor parameters (in their shapes and
    strides), in order of appearance."""
    out: list = []
    for p in params:
        if p.kind != "tensor":
            continue
        for d in tuple(p.shape) + tuple(p.strides or ()):
            for s in dim_symbols(d):
                if s not in out:
                    out.append(s)
    return out


def param_dim(d) -> Union[int, str]:
    """A Param's entry for a dimension or stride: the int, the symbol's
    name, or an expression's text."""
    if isinstance(d, SymbolicDim):
        return d.name
    if isinstance(d, SymExpr):
        return d.text()
    return int(d)


def int_scalars_of(params: Sequence[Param]) -> list:
    """The names of the integer scalar parameters (what a grid may use)."""
    return [p.name for p in params if p.kind == "scalar" and p.dtype.is_int]


def bind_dims(want: Sequence, have: Sequence, symbols: dict) -> None:
    """Binds the symbols of a signature's sizes (or strides) `want` from a
    tensor's `have` into `symbols` (checked arguments: no errors raised),
    solving expressions for a symbol that appears only in them."""
    pending = []
    for w, h in zip(want, have):
        if isinstance(w, str) and w.isidentifier():
            symbols.setdefault(w, h)
        elif isinstance(w, str):
            pending.append((w, h))
    for w, h in pending:
        solved = solve_dim(w, h, symbols)
        if solved is not None:
            symbols.setdefault(*solved)


_GRID_NAMES = {"add": "add", "sub": "sub", "mul": "mul", "floordiv": "floordiv",
               "ceildiv": "ceildiv", "mod": "mod", "max": "max", "min": "min"}


def dim_grid_expr(d) -> dict:
    """A Param dimension (int, symbol name, expression text) as a grid
    expression (base/grid.py); ValueError for an operation grids lack."""
    if not isinstance(d, str):
        return {"const": int(d)}
    if d.isidentifier():
        return {"sym": d}

    def conv(e):
        if isinstance(e, SymbolicDim):
            return {"sym": e.name}
        if not isinstance(e, SymExpr):
            return {"const": int(e)}
        if e.op not in _GRID_NAMES:
            raise ValueError(f"the size {d} uses {e.op}, which a launch grid cannot compute")
        return {"op": _GRID_NAMES[e.op], "args": [conv(a) for a in e.args]}

    return conv(parse_dim(d))
