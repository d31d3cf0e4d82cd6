"""The eager program style: `@tilelang.jit` on the tile program itself.

    @tilelang.jit
    def matmul(A, B, block_M, block_N, block_K, dtype=T.float16):
        M, N, K = T.const("M, N, K")
        A: T.Tensor((M, K), dtype)
        B: T.Tensor((K, N), dtype)
        C = T.empty((M, N), dtype)
        with T.Kernel(...):
            ...
        return C

    kernel = matmul.compile(M=1024, N=1024, K=1024, block_M=128, ...)  # kernel(a, b) -> c
    c = matmul(a, b, 128, 128, 32)        # sizes from a and b, compiled once per shape

The parameters named by an annotation statement in the body (`A: T.Tensor`,
`n: T.int32`), or annotated in the signature with a tensor type or dtype,
are the kernel's runtime arguments; every other parameter is a compile-time
value, like the `T.const` sizes. One set of compile-time values and sizes
is one program (`EagerProgram`): the body is walked by the ordinary parser
with the values bound, `T.const` gives the sizes as Python ints (so every
size is static), an annotation statement adds a function argument where it
stands, `T.empty` an output argument and `T.alloc_global` a workspace. The
kernel's arguments are the annotated parameters in the order of the
signature (as TileLang's), then the outputs in the order of their
`T.empty`; the outputs are returned by the kernel in the order of the
`return` statement (as in TileLang, every `T.empty` tensor must be
returned). `@T.prim_func` on such a body is one program of no compile-time
values (`eager_prim_func`); a body that launches its own `T.Kernel` is a
program even with no annotation.

A call with tensors needs the sizes before the program exists. They come
from a probe: the top of the body (up to the first `with`) is walked once
per set of compile-time values with each `T.const` standing for itself, and
each annotation that uses a size directly as a dimension says which tensor
dimension gives it.

Which style a jitted function is written in is read from its source, as
TileLang does: a function that defines an inner `@T.prim_func` is a factory
(the classic style); one that annotates a parameter in its body or calls
`T.const`/`T.empty` is an eager program.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import inspect
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ..base import dtypes as dt
from ..base.errors import TileLangError
from ..base.signature import Param, ScalarType, SymbolicDim, SymExpr, TensorType, param_dim
from ..language import state
from ..runtime.args import unpacked_layout
from .function import TileFunction, _closure_env, _closure_values, _fingerprint, _key_values
from .parser import Parser, _Return
from .prim_func import PrimFunc
from .source import FunctionSource, parse_function

__all__ = ["EagerBinding", "EagerFunction", "EagerProgram", "is_eager_style"]


# ---------------------------------------------------------------------------
# Which style?
# ---------------------------------------------------------------------------


def _body_nodes(node: ast.FunctionDef):
    """The nodes of a function's body, not those of functions nested in it."""
    stack = list(node.body)
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(n))


def _param_names(node: ast.FunctionDef) -> List[str]:
    a = node.args
    return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]


def _annotated_params(node: ast.FunctionDef) -> List[str]:
    """Parameters named by an annotation statement without a value in the
    body (`A: T.Tensor(...)`), in the order of the statements."""
    params = set(_param_names(node))
    found = sorted((n.lineno, n.col_offset, n.target.id) for n in _body_nodes(node)
                   if isinstance(n, ast.AnnAssign) and n.value is None
                   and isinstance(n.target, ast.Name) and n.target.id in params)
    names: List[str] = []
    for _, _, name in found:
        if name not in names:
            names.append(name)
    return names


def _signature_runtime_params(fn: Callable) -> List[str]:
    """Parameters whose annotation in the signature is a tensor type or a
    scalar dtype (`A: T.Tensor[(M, N), T.float16]`, `n: T.int32`): runtime
    arguments, as those annotated in the body. (`dtype: T.dtype` and
    `block: int` annotate compile-time values.)"""
    out = []
    for name, p in inspect.signature(fn).parameters.items():
        if isinstance(p.annotation, (TensorType, dt.DType, ScalarType)):
            out.append(name)
    return out


def _try_eval(node: ast.expr, env: Dict[str, Any]):
    try:
        return eval(compile(ast.Expression(body=node), "<tl>", "eval"), dict(env))  # noqa: S307
    except Exception:  # noqa: BLE001 (anything that does not evaluate is no match)
        return None


def is_eager_style(fn: Callable) -> bool:
    """Whether a function given to `@tilelang.jit` is an eager program (see
    the module docstring); False for a factory and for a function whose
    source cannot be read."""
    from ..language import eager as leager
    from .prim_func import prim_func

    try:
        node = parse_function(fn).node
    except TileLangError:
        return False
    env = _closure_env(fn)
    for n in ast.walk(node):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not node:
            for d in n.decorator_list:
                d = d.func if isinstance(d, ast.Call) else d
                if _try_eval(d, env) is prim_func:
                    return False
    if _annotated_params(node) or _signature_runtime_params(fn):
        return True
    from ..language.kernel import Kernel

    for n in _body_nodes(node):  # a body with its own `with T.Kernel(...)` is a program
        if isinstance(n, ast.With):
            for item in n.items:
                ctx = item.context_expr
                if isinstance(ctx, ast.Call) and _try_eval(ctx.func, env) is Kernel:
                    return True
    for n in _body_nodes(node):
        if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute)):
            name = n.func.id if isinstance(n.func, ast.Name) else n.func.attr
            if name in ("const", "empty") and _try_eval(n.func, env) in (leager.const,
                                                                          leager.empty):
                return True
    return False


def eager_prim_func(fn: Callable):
    """The program of `@T.prim_func` on a function written in the eager
    form (TileLang's frontend v2): parameters declared by annotation
    statements in its body, outputs made by T.empty and returned; None for
    a function that declares its parameters in its signature."""
    from ..language import eager as leager

    try:
        node = parse_function(fn).node
    except TileLangError:
        return None
    sig = inspect.signature(fn)
    bare = [n for n, p in sig.parameters.items() if p.annotation is inspect.Parameter.empty]
    in_body = set(_annotated_params(node))
    if bare and not all(n in in_body for n in bare):
        return None
    env = _closure_env(fn)
    makes_outputs = any(
        isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
        and (n.func.id if isinstance(n.func, ast.Name) else n.func.attr) == "empty"
        and _try_eval(n.func, env) is leager.empty for n in _body_nodes(node))
    if not bare and not makes_outputs:
        return None
    definition = EagerFunction(fn)
    return definition.program(definition.bind((), {}, call=False))


# ---------------------------------------------------------------------------
# The probe's stand-ins for sizes
# ---------------------------------------------------------------------------


class _ProbeStop(Exception):
    """The probe cannot go on (a size's value was needed)."""


class _Probe(SymbolicDim):
    """A `T.const` size while the probe runs: it is accepted as a tensor
    dimension or stride; `a * N + b` of it (integer a, b) is a stand-in
    that remembers the form, so that a tensor's size gives N; other
    arithmetic gives a stand-in of no use, and needing its value stops the
    probe."""

    def __init__(self, name: str, scale: Optional[int] = 1, offset: int = 0):
        super().__init__(name)
        self.scale, self.offset = scale, offset  # scale None: not affine

    @property
    def direct(self) -> bool:
        return self.scale == 1 and self.offset == 0

    def __repr__(self) -> str:
        return f"T.const({self.name!r})"

    def _affine(self, scale, offset):
        return _Probe(self.name, scale, offset)

    def _derive(self, *_):
        return _Probe(self.name, None)

    def _stop(self, *_):
        raise _ProbeStop(self.name)

    def _const(self, other) -> Optional[int]:
        if isinstance(other, (int, np.integer)) and not isinstance(other, bool) \
                and self.scale is not None:
            return int(other)
        return None

    def __add__(self, other):
        c = self._const(other)
        return self._derive() if c is None else self._affine(self.scale, self.offset + c)

    __radd__ = __add__

    def __sub__(self, other):
        c = self._const(other)
        return self._derive() if c is None else self._affine(self.scale, self.offset - c)

    def __rsub__(self, other):
        c = self._const(other)
        return self._derive() if c is None else self._affine(-self.scale, c - self.offset)

    def __mul__(self, other):
        c = self._const(other)
        return self._derive() if c is None else self._affine(self.scale * c, self.offset * c)

    __rmul__ = __mul__

    def __neg__(self):
        return self * -1

    __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = _derive
    __mod__ = __rmod__ = __pow__ = __rpow__ = __lshift__ = __rshift__ = _derive
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _derive
    __pos__ = __abs__ = _derive
    __lt__ = __le__ = __gt__ = __ge__ = _derive
    __bool__ = __index__ = __int__ = __float__ = __eq__ = __ne__ = _stop
    __hash__ = SymbolicDim.__hash__

    def solve(self, size: int) -> Optional[int]:
        """The value of the T.const that makes this stand-in `size`."""
        if not self.scale or (size - self.offset) % self.scale:
            return None
        return (size - self.offset) // self.scale


class _ProbeOutput:
    """A `T.empty` tensor while the probe runs."""


# ---------------------------------------------------------------------------
# What T.const, T.empty and the annotation statements do
# ---------------------------------------------------------------------------


@dataclass
class _Output:
    buffer: Any  # language.values.Buffer
    param_shape: Tuple[Any, ...]
    dtype: dt.DType
    name: str = ""


class _Emitter:
    """Runs the eager declarations of one walk of the body; the builder
    carries it as `builder.eager` (language/eager.py finds it there).
    `consts` is None in the probe."""

    def __init__(self, definition: "EagerFunction", builder, consts: Optional[Dict[str, int]],
                 entry=None):
        self.definition = definition
        self.builder = builder
        self.consts = consts
        self.entry = entry
        self.probe = consts is None
        self.parameters = set(definition.parameters)
        self.declared: List[str] = []
        self.const_names: List[str] = []
        self._probes: Dict[str, _Probe] = {}
        # The probe's findings: T.const name -> [(parameter, dimension)], ranks.
        self.occurrences: Dict[str, List[Tuple[str, int]]] = {}
        self.ranks: Dict[str, int] = {}
        self.packs: Dict[str, int] = {}  # parameter -> elements a byte (float4: 2)
        # The program's arguments.
        self.inputs: List[Param] = []
        self.input_values: List[Any] = []
        self.outputs: List[_Output] = []
        self.workspaces: List[_Output] = []  # T.alloc_global, hidden parameters
        self._scalar_symbols: Dict[Any, SymbolicDim] = {}  # scalar argument -> its symbol

    def error(self, message: str) -> TileLangError:
        return TileLangError(message, self.builder.location)

    def _outside_kernel(self, what: str) -> None:
        if self.builder.kernel_depth:
            raise self.error(f"{what} must come before `with T.Kernel(...)`, at the top of the "
                             f"body of {self.definition.name!r}")

    # -- T.const -------------------------------------------------------------
    def const(self, name: str, dtype: dt.DType):
        if name not in self.const_names:
            self.const_names.append(name)
        if self.probe:
            return self._probes.setdefault(name, _Probe(name))
        if name not in self.consts:
            raise self.error(
                f"T.const {name!r} of {self.definition.name!r} has no value: give it by name "
                f"({self.definition.name}.compile({name}=...)), or call "
                f"{self.definition.name} with tensors whose annotations use {name} directly "
                "as a dimension")
        value = self.consts[name]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise self.error(f"T.const {name!r} must be bound to an integer, got {value!r}")
        return int(value)

    # -- annotation statements ---------------------------------------------------
    def declare(self, name: str, ann):
        self._outside_kernel(f"the annotation of parameter {name!r}")
        if name in self.declared:
            raise self.error(f"parameter {name!r} is annotated twice")
        self.declared.append(name)
        if isinstance(ann, TensorType):
            if ann.dtype is None:
                raise self.error(f"tensor parameter {name!r} needs a dtype")
            if self.probe:
                self.ranks[name] = len(ann.shape)
                pack = getattr(dt.as_dtype(ann.dtype), "pack", 1)
                if pack > 1:
                    self.packs[name] = pack
                for kind, dims in (("shape", ann.shape), ("stride", ann.strides or ())):
                    for i, d in enumerate(dims):
                        if isinstance(d, _Probe) and d.scale:
                            self.occurrences.setdefault(d.name, []).append((name, kind, i, d))
                return ann
            return self._tensor_argument(name, ann)
        if isinstance(ann, ScalarType):
            dtype = ann.dtype
        else:
            try:
                dtype = dt.as_dtype(ann)
            except TypeError:
                raise self.error(f"parameter {name!r}: unsupported annotation {ann!r}; use "
                                 "T.Tensor(shape, dtype) or a scalar dtype such as "
                                 "T.int32") from None
        if self.probe:
            return ann
        from ..language.values import Scalar, ir_type

        arg = self.entry.add_argument(ir_type(dtype), self._loc())
        self.inputs.append(Param(name, "scalar", dtype))
        self.input_values.append(arg)
        return Scalar(arg, dtype)

    def _loc(self):
        return self.builder.ir_location(self.builder.location)

    def _tensor_argument(self, name: str, ann: TensorType):
        from .prim_func import tensor_param

        try:
            param = tensor_param(name, ann)
        except TileLangError as e:
            raise self.error(e.message) from None
        arg = self.entry.add_argument(self.builder.tensor_type(ann.shape, ann.dtype, ann.strides),
                                      self._loc())
        for d in tuple(ann.shape) + tuple(ann.strides or ()):
            if isinstance(d, SymExpr):
                for sym in d.symbol_objects():
                    self._check_symbol_name(sym)
        self.inputs.append(param)
        self.input_values.append(arg)
        return self.builder.tensor_argument(arg, name, ann.dtype, ann.shape, ann.strides)

    def _check_symbol_name(self, d: SymbolicDim) -> None:
        for other in self.builder.symbols:
            if isinstance(other, SymbolicDim) and other.name == d.name and other is not d:
                raise self.error(f"two different symbolic sizes are named {d.name!r}")

    # -- T.empty ---------------------------------------------------------------
    def empty(self, dims: List[Any], dtype: dt.DType):
        self._outside_kernel("T.empty")
        if self.probe:
            return _ProbeOutput()
        buffer, param_shape = self._global_tensor(dims, dtype, "T.empty")
        self.outputs.append(_Output(buffer, tuple(param_shape), dtype))
        return buffer

    def workspace(self, dims: List[Any], dtype: dt.DType):
        """`X = T.alloc_global(shape, dtype)`: a workspace tensor of the
        program (a hidden parameter the runtime allocates for each call)."""
        self._outside_kernel("T.alloc_global")
        if self.probe:
            return _ProbeOutput()
        buffer, param_shape = self._global_tensor(dims, dtype, "T.alloc_global")
        self.workspaces.append(_Output(buffer, tuple(param_shape), dtype))
        return buffer

    def _global_tensor(self, dims: List[Any], dtype: dt.DType, what: str):
        """A new global tensor argument of sizes `dims` (ints, T.const and
        T.dynamic sizes and expressions of them): its Buffer and the sizes
        of its Param."""
        from ..language.values import Buffer, IndexExpr, to_index

        shape, param_shape = [], []
        for i, d in enumerate(dims):
            if isinstance(d, IndexExpr) and d.is_const():
                d = d.const
            if isinstance(d, np.integer):
                d = int(d)
            if isinstance(d, int) and not isinstance(d, bool):
                if d <= 0:
                    raise self.error(f"{what}: dimension {i} must be positive, got {d}")
                shape.append(d)
                param_shape.append(d)
                continue
            if isinstance(d, SymExpr):
                expr = d
            else:
                expr = next((s for s, e in self.builder.symbols.items()
                             if e is d or (isinstance(d, IndexExpr) and e.same(d))), None)
                if expr is None:
                    expr = self._symbolic_form(d)
            if expr is None:
                raise self.error(
                    f"{what}: dimension {i} is {d!r}; its sizes are integers, T.const "
                    "sizes, or T.dynamic sizes (and expressions of them) of tensor parameters "
                    "annotated before it")
            value = to_index(self.builder.symbolic_value(expr, f"dimension {i} of {what}"))
            shape.append(value.const if value.is_const() else value)
            param_shape.append(param_dim(expr))
        arg = self.entry.add_argument(self.builder.tensor_type(param_shape, dtype), self._loc())
        return Buffer(arg, shape, dtype, "global", ""), param_shape

    def _symbolic_form(self, d):
        """The host expression of index value or integer scalar `d`, a
        linear form of the program's symbolic sizes and integer scalar
        arguments (an output's size may be `n * 2` of a scalar n); None if
        it is not one."""
        from ..language.values import IndexExpr, Scalar, _ScalarAtom, symbolic_form

        if isinstance(d, Scalar):
            d = symbolic_form(d)
            if d is None:
                return None
        if not isinstance(d, IndexExpr):
            return None
        scalars = {}
        for p, v in zip(self.inputs, self.input_values):
            if p.kind == "scalar" and p.dtype.is_int:
                scalars[v] = p.name
        terms = []
        for atom, coeff in d.terms.items():
            sym = next((s for s, e in self.builder.symbols.items()
                        if isinstance(s, SymbolicDim) and e.const == 0
                        and list(e.terms.items()) == [(atom, 1)]), None)
            if sym is None and isinstance(atom, _ScalarAtom) and atom.value in scalars:
                sym = self._scalar_symbols.setdefault(atom.value,
                                                      SymbolicDim(scalars[atom.value]))
                self.builder.symbols.setdefault(sym, _index_of_scalar(atom.value))
            if sym is None:
                return None
            terms.append(sym * coeff)
        expr = d.const
        for t in terms:
            expr = t + expr
        return expr if isinstance(expr, SymExpr) else None

    def name_output(self, value, name: str) -> None:
        """`C = T.empty(...)`: the output is called C."""
        for out in self.outputs + self.workspaces:
            if out.buffer is value and not out.name:
                out.name = name
                value.name = name

    # -- the end of the walk ---------------------------------------------------
    def finish(self, fn_op, result, returned_at) -> Tuple[List[Param], List[int], bool]:
        """Moves the outputs behind the inputs, sets the function type, and
        returns (params, out_idx in return order, whether a tuple was
        returned)."""
        from .. import ir

        as_tuple = isinstance(result, (tuple, list))
        values = list(result) if as_tuple else ([] if result is None else [result])
        order = []
        for v in values:
            idx = next((i for i, o in enumerate(self.outputs) if o.buffer is v), None)
            if idx is None:
                raise TileLangError(f"{self.definition.name!r} returns {_describe(v)}; an eager "
                                    "program returns only tensors made by T.empty", returned_at)
            if idx in order:
                raise TileLangError(f"{self.definition.name!r} returns output "
                                    f"{self.outputs[idx].name!r} twice", returned_at)
            order.append(idx)
        missing = [o.name or f"#{i}" for i, o in enumerate(self.outputs) if i not in order]
        if missing:
            raise TileLangError(f"{self.definition.name!r} does not return its T.empty output(s) "
                                f"{', '.join(map(repr, missing))}: an eager program returns "
                                "every tensor it makes with T.empty (`return C` or "
                                "`return C, D`)", returned_at or self.builder.location)
        entry = self.entry
        # The inputs in the order of the signature (they were declared in
        # the order of the annotations), then the outputs and workspaces.
        order_of = {name: i for i, name in enumerate(self.definition.parameters)}
        ranked = sorted(range(len(self.inputs)), key=lambda k: order_of[self.inputs[k].name])
        if ranked != list(range(len(self.inputs))):
            moved = []
            for k in ranked:
                old = ir.BlockArgument(self.input_values[k])
                new = entry.add_argument(old.type, old.location)
                old.replace_all_uses_with(new)
                moved.append((old, new))
            for old, _ in sorted(moved, key=lambda m: -m[0].arg_number):
                entry.erase_argument(old.arg_number)
            self.inputs = [self.inputs[k] for k in ranked]
            self.input_values = [moved[i][1] for i in range(len(ranked))]
        for out in self.outputs + self.workspaces:
            old = ir.BlockArgument(out.buffer.value)
            new = entry.add_argument(old.type, old.location)
            old.replace_all_uses_with(new)
            entry.erase_argument(old.arg_number)
            out.buffer.value = new
        fn_type = ir.FunctionType.get([a.type for a in entry.arguments], [])
        fn_op.attributes["function_type"] = ir.TypeAttr.get(fn_type)
        taken = {p.name for p in self.inputs}
        params = list(self.inputs)
        for i, out in enumerate(self.outputs):
            name = out.name or f"out{i}"
            while name in taken:
                name += "_out"
            taken.add(name)
            params.append(Param(name, "tensor", out.dtype, out.param_shape))
        for i, ws in enumerate(self.workspaces):
            name = ws.name or f"workspace{i}"
            while name in taken:
                name += "_ws"
            taken.add(name)
            params.append(Param(name, "tensor", ws.dtype, ws.param_shape, workspace=True))
        out_idx = [len(self.inputs) + i for i in order]
        return params, out_idx, as_tuple


def _index_of_scalar(value):
    """The index value of integer scalar argument `value` (an SSA value)."""
    from .. import ir
    from ..dialects import arith
    from ..language.values import IndexExpr

    return IndexExpr.of(arith.IndexCastOp(ir.IndexType.get(), value).result)


def _describe(v) -> str:
    from ..language.values import _describe as describe

    return describe(v)


class _EagerParser(Parser):
    """The parser with the eager declarations: an annotation statement of a
    parameter declares it, assignments name T.empty outputs, sizes declared
    with T.dynamic may be used before the tensor that gives them exists
    (they are resolved where a kernel uses them), and the probe skips
    `assert`s (they would need the sizes' values)."""

    def __init__(self, builder, source: FunctionSource, env, emitter: _Emitter):
        super().__init__(builder, source, env)
        self.emitter = emitter
        self.returned_at = None

    def _resolve_symbol(self, value):
        if isinstance(value, SymbolicDim) and (self.builder.raw_symbols
                                               or value not in self.builder.symbols):
            return value
        return super()._resolve_symbol(value)

    def declare_signature(self) -> None:
        """Declares the parameters annotated in the signature with a tensor
        type or dtype (the body may annotate the others)."""
        sig = self.emitter.definition.signature
        with self.at(self.source.node):
            for name in self.emitter.definition.signature_runtime:
                self.scope.vars[name] = self.emitter.declare(name, sig.parameters[name].annotation)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        target = node.target
        if (node.value is None and isinstance(target, ast.Name)
                and target.id in self.emitter.parameters):
            if self.scope.parent is not None:
                raise self.error(node, f"the annotation of parameter {target.id!r} must be at "
                                       "the top of the function body, outside T.Kernel and "
                                       "loops")
            self.builder.raw_symbols += 1
            try:
                ann = self.eval(node.annotation)
            finally:
                self.builder.raw_symbols -= 1
            self.scope.vars[target.id] = self.emitter.declare(target.id, ann)
            return
        super().stmt_AnnAssign(node)

    def bind(self, node, name, value) -> None:
        self.emitter.name_output(value, name)
        super().bind(node, name, value)

    def stmt_Return(self, node: ast.Return) -> None:
        self.returned_at = self.location_of(node)
        super().stmt_Return(node)

    def stmt_Assert(self, node: ast.Assert) -> None:
        if not self.emitter.probe:
            super().stmt_Assert(node)


# ---------------------------------------------------------------------------
# Calls: from arguments to a program
# ---------------------------------------------------------------------------


def is_tensor(x) -> bool:
    """A NumPy array or a torch tensor (what a tensor parameter takes)."""
    if isinstance(x, np.ndarray):
        return True
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr") and hasattr(
        x, "shape")


def _layout_of(t):
    """(shape, strides in elements) of a tensor, or of a tensor type with
    static sizes (`f.get_tir(T.Tensor((128, 128)), ...)`: TileLang's way to
    give a call's shapes without tensors); None for anything else."""
    if isinstance(t, np.ndarray):
        return tuple(t.shape), tuple(s // t.itemsize for s in t.strides)
    if is_tensor(t):
        return tuple(t.shape), tuple(t.stride())
    if isinstance(t, TensorType) and all(isinstance(d, int) for d in t.shape):
        shape = tuple(t.shape)
        if t.strides is not None:
            if not all(isinstance(x, int) for x in t.strides):
                return None
            return shape, tuple(t.strides)
        strides, step = [], 1
        for d in reversed(shape):
            strides.insert(0, step)
            step *= d
        return shape, tuple(strides)
    return None


def _storage_bytes(t) -> int:
    """The bytes of one stored element of a tensor (0: not a tensor)."""
    if isinstance(t, np.ndarray):
        return t.itemsize
    if is_tensor(t):
        return t.element_size()
    return 0


def _freeze(name: str, value):
    """A hashable stand-in for a compile-time argument (part of a cache key)."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_freeze(name, v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple(sorted(((repr(k), _freeze(name, v)) for k, v in value.items()),
                                        key=lambda kv: kv[0]))
    if isinstance(value, (set, frozenset)):
        return ("set",) + tuple(sorted((_freeze(name, v) for v in value), key=repr))
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"compile-time argument {name!r} = {value!r} cannot be part of a "
                        f"cache key ({type(value).__name__} is not hashable)") from None
    return (type(value).__qualname__, value)


@dataclass
class EagerBinding:
    """One call's arguments: the compile-time values by parameter (defaults
    applied), the T.const sizes known (given by name or read from tensors),
    the runtime arguments given (tensors and annotated scalars), and the key
    of the kernel they select."""

    values: Dict[str, Any]
    consts: Dict[str, Any]
    runtime: Dict[str, Any]
    key: tuple


@contextlib.contextmanager
def _scratch_function(builder):
    """An insertion point in a throwaway function (in the active context)."""
    from .. import ir
    from ..dialects import func

    with ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fop = func.FuncOp("eager_probe", ([], []))
            entry = fop.add_entry_block()
        with ir.InsertionPoint(entry):
            yield module


@dataclass
class _ProbeResult:
    occurrences: Dict[str, List[Tuple[str, int]]]
    ranks: Dict[str, int]
    packs: Dict[str, int]


class EagerFunction(TileFunction):
    """The definition of an eager program (see the module docstring)."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.name = fn.__name__
        self.signature = inspect.signature(fn)
        # **kwargs (TileLang's eager functions take one): the keywords that
        # name no parameter, a compile-time dict in the body.
        self.var_keyword = None
        for p in self.signature.parameters.values():
            if p.kind == p.VAR_POSITIONAL:
                raise TileLangError(f"not supported by tilelang-mlir: *args ({p.name!r}) in "
                                    f"the eager-style function {self.name!r}; name every "
                                    "parameter")
            if p.kind == p.VAR_KEYWORD:
                self.var_keyword = p.name
        self._source = parse_function(fn)
        self.parameters = [p for p in self.signature.parameters]
        # The position of each parameter that may be passed by position.
        self.positions = {p.name: i for i, p in enumerate(
            q for q in self.signature.parameters.values()
            if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD))}
        # The runtime arguments, in the order of the signature: the parameters
        # annotated in the body or, with a tensor type or dtype, in the signature.
        self.signature_runtime = _signature_runtime_params(fn)
        runtime = set(_annotated_params(self._source.node)) | set(self.signature_runtime)
        self.annotated = [p for p in self.parameters if p in runtime]
        self._probes: Dict[tuple, _ProbeResult] = {}
        self._lock = threading.Lock()

    def source(self) -> FunctionSource:
        return self._source

    # -- binding ---------------------------------------------------------------
    def bind(self, args: tuple, kwargs: dict, call: bool) -> EagerBinding:
        """Binds a call (`call=True`: tensors required) or a `compile`
        (tensors optional; sizes by name)."""
        params = list(self.signature.parameters.values())
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        what = f"{self.name}()" if call else f"{self.name}.compile()"
        if len(args) > len(positional):
            raise TypeError(f"{what} takes at most {len(positional)} positional arguments, "
                            f"got {len(args)}")
        given: Dict[str, Any] = {p.name: a for p, a in zip(positional, args)}
        extras: Dict[str, Any] = {}
        for k, v in kwargs.items():
            if k in self.signature.parameters:
                if k in given:
                    raise TypeError(f"{what} got multiple values for argument {k!r}")
                given[k] = v
            else:
                extras[k] = v
        values: Dict[str, Any] = {}
        runtime: Dict[str, Any] = {}
        for p in params:
            if p.kind == p.VAR_KEYWORD:
                for k, v in extras.items():
                    if is_tensor(v):
                        raise TypeError(f"{what}: {k!r} is a tensor, but only named "
                                        f"parameters of {self.name!r} take tensors "
                                        f"(**{p.name} holds compile-time values)")
                values[p.name] = dict(extras)
                extras = {}
                continue
            if p.name in self.annotated:
                if p.name in given:
                    runtime[p.name] = given[p.name]
                elif call:
                    raise TypeError(f"{what} is missing the runtime argument {p.name!r}")
                continue
            if p.name in given:
                v = given[p.name]
                if is_tensor(v):
                    raise TileLangError(
                        f"argument {p.name!r} of {self.name!r} is a tensor, but the body of "
                        f"{self.name!r} does not declare it: add an annotation statement "
                        f"`{p.name}: T.Tensor(shape, dtype)` at its top")
                values[p.name] = v
            elif p.default is not p.empty:
                values[p.name] = p.default
            else:
                raise TypeError(f"{what} is missing the argument {p.name!r}")
        for k, v in extras.items():
            if is_tensor(v):
                raise TypeError(f"{what}: {k!r} is not a parameter of {self.name!r}")
        # The probe depends on the compile-time values only (T.const gives
        # stand-ins there), the kernel on the sizes too.
        p1 = tuple(_freeze(n, values[n]) for n in values)
        consts = dict(extras)
        probe = self._probe(p1, values)
        for name, where in probe.occurrences.items():
            if name in consts:
                continue
            first = None
            for param, kind, dim, form in where:
                t = runtime.get(param)
                layout = _layout_of(t)
                if layout is None:
                    continue
                shape, strides = layout
                pack = probe.packs.get(param, 1)
                if pack > 1 and _storage_bytes(t) == 1:
                    # Packed 4-bit elements in a byte tensor (int8, uint8,
                    # float4_e2m1fn_x2): the sizes are of the elements, as
                    # the runtime binds them (a last dimension that is not
                    # contiguous is left to its error).
                    shape, strides = unpacked_layout(shape, strides, pack) or (shape, strides)
                rank = probe.ranks.get(param)
                if rank is not None and len(shape) != rank:
                    raise ValueError(f"argument {param!r} of {self.name!r} must have rank "
                                     f"{rank} (its annotation), got shape {shape}")
                size = int(shape[dim]) if kind == "shape" else int(strides[dim])
                value = form.solve(size)
                what = f"{'dimension' if kind == 'shape' else 'stride'} {dim} of argument {param!r}"
                if value is None:
                    raise ValueError(f"{what} of {self.name!r} is {size}, which is no value of "
                                     f"{name} * {form.scale} + {form.offset}")
                if first is None:
                    first = (what, value)
                    consts[name] = value
                elif value != first[1]:
                    raise ValueError(
                        f"size {name!r} of {self.name!r} is {first[1]} in {first[0]} but "
                        f"{value} in {what}: tensors that share a size must agree")
        key = (p1, tuple(sorted((k, _freeze(k, v)) for k, v in consts.items())))
        return EagerBinding(values, consts, runtime, key)

    def _probe(self, p1: tuple, values: Dict[str, Any]) -> _ProbeResult:
        """Runs the body's leading statements (up to the first `with` or
        `return`) to learn the sizes its T.const declarations take. A
        statement that emits IR on the way (a macro whose body opens a
        T.Kernel) emits it into a scratch function that is thrown away."""
        with self._lock:
            found = self._probes.get(p1)
        if found is not None:
            return found
        from .builder import Builder
        from .context import make_context

        source = self._source
        builder = Builder(source.filename)
        emitter = _Emitter(self, builder, None)
        builder.eager = emitter
        with make_context(), _scratch_function(builder):
            builder.location = source.location(source.node)
            parser = _EagerParser(builder, source, _closure_env(self.fn), emitter)
            parser.scope.vars.update(values)
            state.push(builder)
            try:
                try:
                    parser.declare_signature()
                except Exception:  # noqa: BLE001 (the compile reports it)
                    pass
                for stmt in source.body:
                    if isinstance(stmt, (ast.With, ast.Return)):
                        break
                    try:
                        with parser.at(stmt):
                            parser.visit_stmt(stmt)
                    except Exception:  # noqa: BLE001 (the probe stops; the compile reports)
                        break
            finally:
                state.pop()
        found = _ProbeResult(emitter.occurrences, emitter.ranks, emitter.packs)
        with self._lock:
            self._probes[p1] = found
        return found

    def program(self, binding: EagerBinding) -> "EagerProgram":
        return EagerProgram(self, binding.values, binding.consts)

    def fingerprint(self) -> str:
        """Source and closure values (what the autotuner's cache key takes)."""
        closure = ",".join(f"{k}={_fingerprint(v)}" for k, v in
                           sorted(_key_values(self.fn).items()))
        return f"eager({self._source.digest()},{closure})"

    def factory(self) -> Callable[..., "EagerProgram"]:
        """This definition as a kernel factory: called with the function's
        arguments (tensors may be left out, sizes given by name), it returns
        the program they select (what `@tl.autotune` compiles per config)."""

        def factory(*args, **kwargs):
            return self.program(self.bind(args, kwargs, call=False))

        functools.update_wrapper(factory, self.fn)
        return factory

    def runtime_arguments(self, args: tuple, kwargs: dict) -> Optional[Dict[str, Any]]:
        """The tensors and runtime scalars of a call by name when the call
        gives every one of them (a call that runs), else None (a compile)."""
        try:
            bound = self.signature.bind_partial(*args, **{k: v for k, v in kwargs.items()
                                                          if k in self.signature.parameters})
        except TypeError:
            return None
        given = {n: bound.arguments[n] for n in self.annotated if n in bound.arguments}
        if len(given) != len(self.annotated) or not any(is_tensor(v) for v in given.values()):
            return None
        return given


class EagerProgram(PrimFunc):
    """One program of an eager function: its compile-time values and sizes
    bound. It is a PrimFunc to `tl.compile`; its signature is known once
    the body has been walked (on first use of `params`), and the tile IR of
    that walk (with the user's locations) is what `emit` gives back."""

    def __init__(self, definition: EagerFunction, values: Dict[str, Any], consts: Dict[str, Any]):
        self.definition = definition
        self.fn = definition.fn
        self.name = definition.name
        self.__doc__ = definition.fn.__doc__
        self.values = dict(values)
        self.consts = dict(consts)
        self._source = definition.source()
        self._text: Optional[str] = None
        self._params: List[Param] = []
        self._out_idx: List[int] = []
        self._returns_tuple = False
        self._function_attrs = ({}, [])

    @property
    def params(self) -> List[Param]:  # type: ignore[override]
        self._walk()
        return self._params

    @property
    def out_idx(self) -> List[int]:
        """The outputs' argument indices, in the order of the `return`."""
        self._walk()
        return list(self._out_idx)

    @property
    def own_out_idx(self) -> List[int]:
        """What `tl.compile` takes as this program's out_idx (it has no other)."""
        return self.out_idx

    @property
    def returns_tuple(self) -> bool:
        """Whether the function returns a tuple (`return C, D`)."""
        self._walk()
        return self._returns_tuple

    def _walk(self) -> None:
        if self._text is not None:
            return
        from .. import ir
        from .context import make_context

        with make_context(), ir.Location.unknown():
            module = self._emit_walk()
            self._text = module.operation.get_asm(enable_debug_info=True)

    def _emit_walk(self):
        from .. import ir
        from ..dialects import func
        from .builder import Builder

        source = self._source
        builder = Builder(source.filename)
        def_loc = source.location(source.node)
        builder.location = def_loc
        with builder.ir_location(def_loc):
            module = ir.Module.create()
            with ir.InsertionPoint(module.body):
                fn_op = func.FuncOp(self.name, ([], []))
                entry = fn_op.add_entry_block()
            emitter = _Emitter(self.definition, builder, self.consts, entry)
            builder.eager = emitter
            parser = _EagerParser(builder, source, _closure_env(self.fn), emitter)
            parser.scope.vars.update(self.values)
            result = None
            state.push(builder)
            try:
                with ir.InsertionPoint(entry):
                    try:
                        parser.declare_signature()
                        parser.visit_body(source.body)
                    except _Return as r:
                        result = r.value
                    func.ReturnOp([])
            finally:
                state.pop()
            unknown = [k for k in self.consts if k not in emitter.const_names]
            if unknown:
                raise TileLangError(
                    f"{self.name!r} has no parameter or T.const named "
                    f"{', '.join(map(repr, unknown))} (T.const sizes it declares: "
                    f"{', '.join(emitter.const_names) or 'none'})", def_loc)
            self._params, self._out_idx, self._returns_tuple = emitter.finish(
                fn_op, result, parser.returned_at)
        self._function_attrs = (dict(builder.function_pass_configs),
                                list(builder.function_compile_flags))
        return module

    def function_annotations(self):
        """(pass configs, compile flags) the body annotates."""
        self._walk()
        return self._function_attrs

    def emit(self):
        """The tile-dialect module of this program in the active Context."""
        from .. import ir

        self._walk()
        return ir.Module.parse(self._text)

    def fingerprint(self) -> str:
        """The hash of the program's tile IR (with locations): it determines
        the kernel."""
        self._walk()
        return hashlib.sha256(f"eager|{self.name}|{self._text}".encode()).hexdigest()

    def script(self) -> str:
        self._walk()
        return self._text
