"""`@T.prim_func` and `@T.macro`: tile programs as Python functions.

The decorator only records the function; its source is parsed lazily, when
the program is first compiled, and the result is the tile-dialect module plus
the signature the runtime needs to call the kernel.
"""

from __future__ import annotations

import hashlib
import inspect
from typing import Any, Callable, Dict, List, Optional

from ..base import dtypes as dt
from ..base.errors import SourceLocation, TileLangError
from ..base.signature import (RANKS, Param, ScalarType, SymbolicDim, SymExpr,
                              SymmetricTensorType, TensorType, param_dim, peers_param,
                              symbols_of)
from .function import (Macro, TileFunction, _closure_env, _closure_values, _key_values,  # noqa: F401
                       _fingerprint, macro, source_place)
from .source import FunctionSource, parse_function

__all__ = ["Macro", "Param", "PrimFunc", "macro", "prim_func"]


# Members of TVM's PrimFunc that are its IR (refused with the rule's reason).
_TVM_IR_MEMBERS = frozenset({"body", "ret_type", "with_attr", "with_attrs", "with_body",
                             "without_attr", "specialize", "script", "show", "astext",
                             "span", "struct_info"})


class PrimFunc(TileFunction):
    """A tile program: a Python function whose arguments are annotated with
    T.Tensor (or scalar dtypes)."""

    def __init__(self, fn: Callable):
        if not callable(fn):
            raise TypeError("@T.prim_func decorates a function")
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__
        self._source: Optional[FunctionSource] = None
        self._function_attrs = None  # (pass configs, compile flags) annotated in the body
        self.params = self._params()

    # -- TVM's PrimFunc, as far as a signature says it ---------------------------------
    @property
    def buffer_map(self) -> Dict[Param, Param]:
        """TVM's `PrimFunc.buffer_map` for the code that reads a program's
        signature through it (`buffer_map.get(param).dtype`, TileOPs'
        autotuner): each tensor argument of `params` maps to itself, with
        the name, dtype and shape TVM's buffer has (a table of T.ptr
        addresses is an int64 buffer, as TileLang lowers it)."""
        import dataclasses

        return {p: (dataclasses.replace(p, dtype=dt.int64) if p.dtype.name == "handle" else p)
                for p in self.params if p.kind == "tensor" and not p.hidden}

    def __getattr__(self, name):
        if name in _TVM_IR_MEMBERS:
            raise AttributeError(
                f"not supported by tilelang-mlir: PrimFunc.{name} (TVM's IR of the program: "
                "tilelang-mlir builds tile-dialect MLIR, `params` and `buffer_map` give its "
                "signature) (out of scope: TVM's IR and pass APIs)")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- signature ------------------------------------------------------------------
    def _params(self) -> List[Param]:
        sig = inspect.signature(self.fn)
        env = None
        params = []
        for name, p in sig.parameters.items():
            ann = p.annotation
            if ann is inspect.Parameter.empty:
                raise TileLangError(f"argument {name!r} of {self.name!r} needs a type "
                                    "annotation such as T.Tensor((M, N), 'float16')",
                                    self._def_location())
            if isinstance(ann, str) and not isinstance(ann, dt.DType):
                env = env if env is not None else _closure_env(self.fn)
                try:
                    ann = eval(ann, env)  # noqa: S307 (user annotation)
                except Exception as e:
                    raise TileLangError(f"cannot evaluate the annotation of {name!r}: {e}",
                                        self._def_location()) from None
            params.append(self._param(name, ann))
        # Hidden parameters last: workspaces, then the peer tables.
        peers = [peers_param(p.name) for p in params if p.symmetric]
        return params + self._workspaces() + peers

    def _workspaces(self) -> List[Param]:
        """The program's `X = T.alloc_global(shape, dtype)` statements, as
        workspace parameters after the others (shapes and dtypes evaluated
        in the function's globals and closure: they must be compile-time)."""
        if "alloc_global" not in self.fn.__code__.co_names and \
                "alloc_buffer" not in self.fn.__code__.co_names:
            return []
        import ast

        source = self.source()
        env = _closure_env(self.fn)
        found = []
        for stmt in source.body:  # the top level: outside every T.Kernel
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)
                    and isinstance(stmt.value, ast.Call)
                    and isinstance(stmt.value.func, ast.Attribute)):
                continue
            call, name = stmt.value, stmt.targets[0].id
            kwargs = {k.arg: k.value for k in call.keywords}
            if call.func.attr == "alloc_buffer":
                scope = call.args[2] if len(call.args) > 2 else kwargs.get("scope")
                if scope is not None and not (isinstance(scope, ast.Constant)
                                              and scope.value == "global"):
                    continue
            elif call.func.attr != "alloc_global":
                continue
            exprs = list(call.args[:2])
            for key in ("shape", "dtype")[len(exprs):]:
                if key in kwargs:
                    exprs.append(kwargs[key])
            if len(exprs) != 2:
                raise TileLangError("T.alloc_global needs a shape and a dtype",
                                    source.location(stmt))
            try:
                shape, dtype = (eval(compile(ast.Expression(e), source.filename, "eval"), env)  # noqa: S307
                                for e in exprs)
            except Exception as e:  # noqa: BLE001
                raise TileLangError(f"the shape and dtype of T.alloc_global {name!r} must be "
                                    f"known when the program is built ({type(e).__name__}: {e})",
                                    source.location(stmt)) from None
            if isinstance(shape, int):
                shape = (shape,)
            dims = tuple(shape)
            if not dims or any(isinstance(d, bool) or not isinstance(d, int) or d <= 0
                               for d in dims):
                raise TileLangError(f"T.alloc_global {name!r}: the shape must be positive ints, "
                                    f"got {shape!r}", source.location(stmt))
            found.append(Param(name, "tensor", dt.as_dtype(dtype), dims, workspace=True))
        return found

    def _param(self, name: str, ann) -> Param:
        if isinstance(ann, TensorType):
            try:
                return tensor_param(name, ann, symmetric=isinstance(ann, SymmetricTensorType))
            except TileLangError as e:
                raise TileLangError(e.message, self._def_location()) from None
        if isinstance(ann, ScalarType):
            return Param(name, "scalar", ann.dtype)
        try:
            return Param(name, "scalar", dt.as_dtype(ann))
        except TypeError:
            raise TileLangError(f"argument {name!r}: unsupported annotation {ann!r}; use "
                                "T.Tensor(shape, dtype) or a scalar dtype such as T.int32",
                                self._def_location()) from None

    def _def_location(self) -> Optional[SourceLocation]:
        try:
            return SourceLocation(inspect.getsourcefile(self.fn) or "<unknown>",
                                  self.fn.__code__.co_firstlineno, 1)
        except TypeError:
            return None

    def source(self) -> FunctionSource:
        if self._source is None:
            self._source = parse_function(self.fn)
        return self._source

    def fingerprint(self) -> str:
        """Hash of everything that determines the IR: source, where it is
        (file name and first line: device assertions and timed-out waits
        report the user's line from inside the binary, so a program moved
        down its file by an edit above it is another kernel), closure values
        and the signature. The file's directory is left out, so that a kernel
        cache prepared in one checkout serves another."""
        closure = ",".join(f"{k}={_fingerprint(v)}" for k, v in
                           sorted(_key_values(self.fn).items()))
        params = ",".join(f"{p.name}:{p.kind}:{p.dtype}:{p.shape}:{p.strides}" for p in self.params)
        src = self.source()
        text = f"{src.digest()}|{source_place(src)}|{closure}|{params}"
        return hashlib.sha256(text.encode()).hexdigest()

    def symbols(self) -> List[str]:
        """The symbolic sizes of the signature, in order of appearance."""
        return symbols_of(self.params)

    # -- IR emission --------------------------------------------------------------
    def emit(self):
        """Emits this program as a tile-dialect module in the active Context."""
        from .builder import Builder

        source = self.source()
        builder = Builder(source.filename)
        def_loc = source.location(source.node)
        builder.location = def_loc
        with builder.ir_location(def_loc):
            module = self._emit_module(builder, source)
        self._function_attrs = (dict(builder.function_pass_configs),
                                list(builder.function_compile_flags))
        return module

    def function_annotations(self):
        """(pass configs, compile flags) the body annotates with
        T.annotate_pass_configs / T.annotate_compile_flags."""
        if self._function_attrs is None:
            names = self.fn.__code__.co_names
            if "annotate_pass_configs" in names or "annotate_compile_flags" in names:
                self.script()
            else:
                self._function_attrs = ({}, [])
        return self._function_attrs

    @property
    def attrs(self) -> dict:
        """TileLang's function attributes: `global_symbol`, and those the
        program sets: `tilelang_out_idx` (its T.empty outputs, counted from
        the end), `tilelang_pass_configs`, `tilelang_compile_flags`."""
        attrs = {"global_symbol": self.name}
        own = getattr(self, "own_out_idx", None)
        if own:
            n = len([p for p in self.params if not p.hidden])
            attrs["tilelang_out_idx"] = [i - n for i in own]
        configs, flags = self.function_annotations()
        if configs:
            attrs["tilelang_pass_configs"] = dict(configs)
        if flags:
            attrs["tilelang_compile_flags"] = list(flags)
        return attrs

    def _emit_module(self, builder, source):
        from .. import ir
        from ..dialects import func
        from .parser import Parser, run_function
        from ..language.values import Buffer, Scalar, ir_type, storage_ir_type

        module = ir.Module.create()
        arg_types = []
        for p in self.params:
            if p.kind == "tensor":
                arg_types.append(builder.tensor_type(p.shape, p.dtype, p.strides))
            else:
                arg_types.append(ir_type(p.dtype))
        with ir.InsertionPoint(module.body):
            fn_op = func.FuncOp(self.name, (arg_types, []))
            entry = fn_op.add_entry_block()
            parser = Parser(builder, source, _closure_env(self.fn))
            env = parser.scope.vars
            self._symbol_objects()  # two different symbols of one name are an error
            fn_op.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get(_arg_attrs(p))
                                                for p in self.params])
            peers = {p.peers_of: entry.arguments[i] for i, p in enumerate(self.params)
                     if p.peers_of is not None}
            annotations = self._tensor_annotations()
            with ir.InsertionPoint(entry):
                # Symbols bare in some tensor's sizes first: an expression
                # (`n * 4`) of another tensor may use them.
                for i, p in enumerate(self.params):
                    if p.name in annotations:
                        ann = annotations[p.name]
                        builder.bind_symbols(entry.arguments[i], ann.shape, ann.strides,
                                             ann.dtype.pack)
                for i, p in enumerate(self.params):
                    arg = entry.arguments[i]
                    if p.peers_of is not None:  # read through X.peer(r)
                        continue
                    if p.workspace:  # bound by its T.alloc_global statement
                        builder.workspaces.append(Buffer(arg, list(p.shape), p.dtype, "global",
                                                         p.name))
                        continue
                    if p.kind == "scalar":
                        env[p.name] = Scalar(arg, p.dtype)
                        continue
                    ann = annotations[p.name]
                    env[p.name] = builder.tensor_argument(arg, p.name, p.dtype, ann.shape,
                                                          ann.strides)
                    env[p.name].peers = peers.get(p.name)
                run_function(parser, source.body)
                func.ReturnOp([])
            if builder.extern_wrappers:
                module.operation.attributes["tile.extern_sources"] = ir.ArrayAttr.get(
                    [ir.StringAttr.get(s) for s in builder.extern_source_list()])
        return module

    def _tensor_annotations(self) -> Dict[str, TensorType]:
        """The TensorType annotation of each tensor parameter, by name."""
        result = {}
        env = None
        for name, p in inspect.signature(self.fn).parameters.items():
            ann = p.annotation
            if isinstance(ann, str) and not isinstance(ann, dt.DType):
                env = env if env is not None else _closure_env(self.fn)
                ann = eval(ann, env)  # noqa: S307
            if isinstance(ann, TensorType):
                result[name] = ann
        return result

    def _symbol_objects(self) -> Dict[str, SymbolicDim]:
        """The SymbolicDim objects of the annotations, by name."""
        result = {}
        for ann in self._tensor_annotations().values():
            for d in tuple(ann.shape) + tuple(ann.strides or ()):
                if not isinstance(d, SymExpr):
                    continue
                for sym in d.symbol_objects():
                    if sym.name in result and result[sym.name] is not sym:
                        raise TileLangError(
                            f"two different symbolic sizes are named {sym.name!r}",
                            self._def_location())
                    result[sym.name] = sym
        return result

    def script(self) -> str:
        """The tile-dialect IR of this program, as text."""
        from .context import make_context

        with make_context():
            return str(self.emit())

    def __call__(self, *args, **kwargs):
        raise TileLangError(f"{self.name!r} is a tile program: compile it with "
                            "tl.compile(...) (or decorate with @tl.jit) to run it")


def _arg_attrs(p: Param) -> dict:
    """The attributes of a tensor argument: `tile.symmetric`, and
    `tile.dim_symbols` (the symbolic size of each dimension, "" for a static
    one), which tells tile-legalize-safe-access that two tensors' dynamic
    dimensions of one name are equal."""
    from .. import ir

    attrs = {}
    if p.symmetric:
        attrs["tile.symmetric"] = ir.UnitAttr.get()
    if p.kind == "tensor" and any(isinstance(d, str) for d in p.shape):
        attrs["tile.dim_symbols"] = ir.ArrayAttr.get(
            [ir.StringAttr.get(d if isinstance(d, str) else "") for d in p.shape])
    return attrs


def tensor_param(name: str, ann: TensorType, symmetric: bool = False) -> Param:
    """The Param of tensor parameter `name` annotated `ann` (TileLangError
    for what a parameter cannot be)."""
    if ann.dtype is None:
        raise TileLangError(f"tensor argument {name!r} needs a dtype")
    if ann.scope != "global":
        raise TileLangError(f"argument {name!r}: a {ann.scope} buffer type is not an argument "
                            "type; a kernel's tensors are in global memory: use T.Tensor")
    shape = tuple(param_dim(d) for d in ann.shape)
    strides = None if ann.strides is None else tuple(param_dim(d) for d in ann.strides)
    for d in shape + (strides or ()):
        if isinstance(d, str) and RANKS in d:
            raise TileLangError(f"argument {name!r}: the symbolic size name {RANKS!r} is "
                                "reserved (the number of ranks)")
    if symmetric and strides is not None:
        raise TileLangError(f"argument {name!r}: a symmetric tensor cannot have strides")
    return Param(name, "tensor", ann.dtype, shape, symmetric=symmetric, strides=strides)


def prim_func(fn: Callable = None):
    """Decorator: marks a function as a tile program: its parameters
    annotated in the signature (`A: T.Tensor((M, N), T.float16)`) or, in
    TileLang's newer form, by annotation statements at the top of its body
    (`A: T.Tensor[(M, N), T.float16]`), with outputs made by `T.empty` and
    returned."""
    if fn is None:
        return prim_func
    from .eager import eager_prim_func

    program = eager_prim_func(fn)
    return program if program is not None else PrimFunc(fn)
