"""Checking kernel arguments and allocating outputs.

Every launch checks its arguments against the kernel's signature before any
device work happens: count, kind (array or scalar), dtype, rank, static sizes,
agreement of symbolic sizes, contiguity and device (for CUDA kernels: the
current CUDA device, where outputs are allocated too). Errors are TypeError
(wrong kind or dtype) or ValueError (wrong shape, layout or device) and name
the argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..base import dtypes as dt
from ..base.signature import dim_symbols, eval_dim, is_input, solve_dim


# TileLang's output conventions (the compat route sets it): a call's outputs
# are torch tensors even when no argument is one, and several of them come
# back as a list (runtime/kernel.py).
TILELANG_OUTPUTS = False


def set_tilelang_outputs(on: bool) -> bool:
    """Turns TileLang's output conventions on or off, on both launch paths
    (the native launcher keeps its own switch); returns the previous
    setting."""
    global TILELANG_OUTPUTS
    was, TILELANG_OUTPUTS = TILELANG_OUTPUTS, bool(on)
    from . import launcher

    launcher.set_tilelang_outputs(bool(on))
    return was


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


@dataclass
class BoundTensor:
    """A tensor argument ready to be passed to a kernel."""

    obj: Any  # the numpy array or torch tensor (kept alive for the call)
    data_ptr: int
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]  # in elements


@dataclass
class Binding:
    values: List[Any]  # BoundTensor or Python scalar, one per parameter
    outputs: List[Any]  # the allocated output arrays, in out_idx order
    symbols: Dict[str, int]
    use_torch: bool


def _shape_str(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


_TORCH_DTYPES: Dict[Any, Any] = {}  # torch dtype -> DType


def _torch_dtype(x):
    got = _TORCH_DTYPES.get(x.dtype)
    if got is None:
        got = _TORCH_DTYPES[x.dtype] = dt.as_dtype(x.dtype)
    return got


def _check_tensor(kernel_name: str, p, x, symbols: Dict[str, int], where: Dict[str, str],
                  device: str, state: Optional[Dict[str, int]] = None) -> BoundTensor:
    # Launch latency matters: the common case (a torch tensor that passes
    # every check) does no string formatting.
    def name():
        return f"argument {p.name!r} of kernel {kernel_name!r}"

    if x is None:
        return _null_tensor(p, symbols)
    if _is_torch(x):
        import torch

        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name()} must be a tensor, got {type(x).__name__}")
        try:
            got = _torch_dtype(x)
        except TypeError:
            raise TypeError(f"{name()} must have dtype {p.dtype}, got {x.dtype}") from None
        shape = tuple(x.shape)
        strides = x.stride()
        contiguous = x.is_contiguous()
        where_is = x.device
        kind = where_is.type
        if device == "cpu" and kind != "cpu":
            raise ValueError(f"{name()} is on {where_is}, but the kernel was compiled for "
                             "the CPU; move it with .cpu() or compile for a CUDA target")
        if device == "cuda":
            if kind != "cuda":
                if not torch.cuda.is_available():
                    from ..base.errors import NoCUDADevice

                    raise NoCUDADevice(f"kernel {kernel_name!r} runs on a CUDA GPU, but this "
                                       "machine has none (kernels compile without a GPU: save "
                                       "one with kernel.save(path) and load it on a GPU machine)")
                raise ValueError(f"{name()} is on {where_is}, but the kernel runs on the GPU; "
                                 "move it with .cuda()")
            state = {} if state is None else state
            current = state.get("device")
            if current is None:
                current = state["device"] = torch.cuda.current_device()
            if where_is.index != current:
                raise ValueError(f"{name()} is on {where_is}, but the current CUDA device is "
                                 f"cuda:{current}; move it with .to('cuda:{current}') or "
                                 f"select its device with torch.cuda.set_device("
                                 f"{where_is.index})")
        ptr = x.data_ptr()
    elif isinstance(x, np.ndarray):
        if device == "cuda":
            raise ValueError(f"{name()} is a NumPy array, but the kernel runs on the GPU; "
                             "pass a CUDA torch tensor")
        try:
            got = dt.from_numpy(x.dtype)
        except TypeError:
            raise TypeError(f"{name()} must have dtype {p.dtype}, got {x.dtype}") from None
        if not x.dtype.isnative:  # kernels read the machine's byte order
            raise TypeError(f"{name()} must have dtype {p.dtype} in the machine's byte order, "
                            f"got {x.dtype.str}; convert it with "
                            "x.astype(x.dtype.newbyteorder('='))")
        shape = tuple(x.shape)
        itemsize = x.dtype.itemsize
        strides = tuple(s // itemsize for s in x.strides)
        contiguous = x.flags["C_CONTIGUOUS"]
        ptr = x.ctypes.data
    else:
        raise TypeError(f"{name()} must be a NumPy array or a torch tensor, got "
                        f"{type(x).__name__}")
    pack = p.dtype.pack
    if pack > 1:
        # A packed 4-bit tensor: any 8-bit storage (int8, uint8,
        # float4_e2m1fn_x2, ...); sizes and strides in its elements.
        if got.bits * got.lanes != 8:
            raise TypeError(f"{name()} holds {p.dtype} elements packed {pack} a byte: it must "
                            f"be a tensor of a one-byte dtype (int8, uint8, "
                            f"float4_e2m1fn_x2), got {got}")
        logical = unpacked_layout(shape, strides, pack)
        if logical is None:
            raise ValueError(f"{name()} holds {p.dtype} elements packed {pack} a byte: its "
                             f"last dimension must be contiguous, got strides {tuple(strides)}")
        bound = BoundTensor(x, ptr, shape, strides)
        shape, strides = logical
        _match_sizes(name, p, shape, strides, contiguous, symbols, where)
        return bound
    if got is not p.dtype and got != p.dtype and not (got.mlir == p.dtype.mlir
                                                      and got.kind == p.dtype.kind):
        # A table of addresses (T.ptr) is a tensor of 64-bit integers.
        if not (p.dtype.name == "handle" and got.name in ("int64", "uint64")):
            raise TypeError(f"{name()} must have dtype {p.dtype}, got {got}")
    _match_sizes(name, p, shape, strides, contiguous, symbols, where)
    return BoundTensor(x, ptr, shape, strides)


def unpacked_layout(shape, strides, pack: int):
    """(logical sizes, logical strides) of a tensor of bytes that packs
    `pack` elements each along its last dimension; None when that
    dimension is not contiguous."""
    if not shape:
        return (), ()
    if shape[-1] > 1 and strides[-1] != 1:
        return None
    sizes = tuple(shape[:-1]) + (shape[-1] * pack,)
    logical = tuple(s * pack for s in strides[:-1]) + (1,)
    return sizes, logical


def _match_sizes(name, p, shape, strides, contiguous, symbols, where) -> None:
    if len(shape) != len(p.shape):
        raise ValueError(f"{name()} must have rank {len(p.shape)} (shape "
                         f"{_shape_str(p.shape)}), got rank {len(shape)} with shape "
                         f"{_shape_str(shape)}")
    if shape != p.shape:
        _match(name, "dimension", p.shape, shape, symbols, where, p.name)
    if p.strides is not None:
        _match(name, "stride", p.strides, strides, symbols, where, p.name)
    elif not contiguous:
        raise ValueError(f"{name()} must be contiguous (row-major); call .contiguous() or "
                         "np.ascontiguousarray() first")


def _match(name, what: str, want: Sequence, have: Sequence, symbols: Dict[str, int],
           where: Dict[str, str], param: str) -> None:
    """Checks a tensor's sizes (or strides) against a signature's: ints must
    match, a symbol takes its first value (later ones must agree), and an
    expression of symbols is solved for its one unbound symbol (`n * 3 + 1`)
    or evaluated."""
    later = []
    for i, (w, h) in enumerate(zip(want, have)):
        if isinstance(w, str) and w.isidentifier():
            if w in symbols and symbols[w] != h:
                raise ValueError(f"{name()}: {what} {i} is the symbolic size {w!r} = {h}, but "
                                 f"{where[w]} gave {w!r} = {symbols[w]}")
            if w not in symbols:
                symbols[w] = h
                where[w] = f"argument {param!r}"
        elif isinstance(w, str):
            later.append((i, w, h))
        elif w != h:
            label = "shape" if what == "dimension" else "strides"
            raise ValueError(f"{name()} must have {label} {_shape_str(want)}, got "
                             f"{_shape_str(have)}")
    for i, w, h in later:
        if any(s not in symbols for s in dim_symbols(w)):
            solved = solve_dim(w, h, symbols)
            if solved is None:
                raise ValueError(f"{name()}: {what} {i} is {w} = {h}, which does not determine "
                                 f"its symbolic sizes {dim_symbols(w)}")
            symbols[solved[0]] = solved[1]
            where[solved[0]] = f"argument {param!r} ({w} = {h})"
        value = eval_dim(w, symbols)
        if value != h:
            raise ValueError(f"{name()}: {what} {i} must be {w} = {value}, got {h}")


def _null_tensor(p, symbols: Dict[str, int]) -> BoundTensor:
    """None for a tensor argument: a null pointer (TileLang's nullptr), for a
    tensor the kernel does not touch (an optional bias it was compiled
    without). Its symbolic sizes are those the other arguments give (0
    where none does); reading or writing it is the caller's error, as in
    TileLang."""
    def size(d):
        try:
            return eval_dim(d, symbols)
        except KeyError:
            return 0

    shape = tuple(size(d) for d in p.shape)
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return BoundTensor(None, 0, shape, tuple(reversed(strides)))


def _check_scalar(kernel_name: str, p, x):
    name = f"argument {p.name!r} of kernel {kernel_name!r}"
    if isinstance(x, np.generic):
        x = x.item()
    if p.dtype.name == "handle":  # T.ptr: an address, or the tensor whose data it is
        if _is_torch(x) and hasattr(x, "data_ptr"):
            return int(x.data_ptr())
        if isinstance(x, np.ndarray):
            return int(x.ctypes.data)
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < 2 ** 64:
            raise TypeError(f"{name} must be an address (an int) or a tensor, got "
                            f"{type(x).__name__}")
        return x
    if _is_torch(x) or isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a scalar of type {p.dtype}, got an array")
    if p.dtype.is_float:
        if not isinstance(x, (int, float)) or isinstance(x, bool):
            raise TypeError(f"{name} must be a number, got {type(x).__name__}")
        return float(x)
    if p.dtype.is_bool:
        if not isinstance(x, (bool, int)):
            raise TypeError(f"{name} must be a bool, got {type(x).__name__}")
        return bool(x)
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"{name} must be an integer, got {type(x).__name__}")
    bits = p.dtype.bits
    lo, hi = (0, 2 ** bits - 1) if p.dtype.is_unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not lo <= x <= hi:
        raise ValueError(f"{name} = {x} does not fit in {p.dtype}")
    return x


def bind(kernel_name: str, params: Sequence, out_idx: Sequence[int], args: Sequence,
         device: str, nullable=frozenset()) -> Binding:
    inputs = [p for i, p in enumerate(params) if is_input(i, p, out_idx)]
    if len(args) != len(inputs):
        names = ", ".join(p.name for p in inputs)
        raise TypeError(f"kernel {kernel_name!r} takes {len(inputs)} argument(s) ({names}), "
                        f"got {len(args)}")
    symbols: Dict[str, int] = {}
    where: Dict[str, str] = {}
    state: Dict[str, int] = {}  # the current CUDA device, looked up once
    values: List[Any] = [None] * len(params)
    use_torch = device == "cuda" or TILELANG_OUTPUTS
    tables: Dict[str, Any] = {}  # symmetric tensor name -> its peer table
    nulls: List[int] = []  # None tensors: bound once the others gave their sizes
    it = iter(args)
    for i, p in enumerate(params):
        if not is_input(i, p, out_idx):
            continue
        x = next(it)
        if p.symmetric:
            x, table = _symmetric_parts(kernel_name, p, x)
        if p.kind == "tensor":
            if _is_torch(x):
                use_torch = True
            if x is None and (p.symmetric or i not in nullable):
                raise TypeError(f"argument {p.name!r} of kernel {kernel_name!r} must be a "
                                "tensor, got None (None, a null pointer, is accepted only for a "
                                "tensor the kernel does not use)")
            if x is None:
                nulls.append(i)
                continue
            values[i] = _check_tensor(kernel_name, p, x, symbols, where, device, state)
            if p.symmetric:  # a plain tensor is a world of one rank: its own address
                tables[p.name] = table if table is not None else \
                    _own_table(x, values[i].data_ptr)
        else:
            values[i] = _check_scalar(kernel_name, p, x)
    # An output's size may be an expression of integer scalar arguments.
    for i, p in enumerate(params):
        if p.kind == "scalar" and p.dtype.is_int and isinstance(values[i], int):
            symbols.setdefault(p.name, values[i])
    for i in nulls:
        values[i] = _null_tensor(params[i], symbols)
    outputs = []
    workspaces = [i for i, p in enumerate(params) if p.workspace]
    for i in list(out_idx) + workspaces:
        p = params[i]
        shape = []
        for d in p.shape:
            try:
                shape.append(eval_dim(d, symbols))
            except KeyError as e:
                raise ValueError(f"cannot allocate output {p.name!r}: its size {d!r} depends "
                                 f"on {e.args[0]!r}, which does not appear in any input") from None
        if p.dtype.pack > 1 and shape:  # bytes holding `pack` elements each
            if shape[-1] % p.dtype.pack:
                raise ValueError(f"cannot allocate output {p.name!r}: its last size "
                                 f"{shape[-1]} is not a multiple of {p.dtype.pack} ({p.dtype} "
                                 "elements are packed that many a byte)")
            shape[-1] //= p.dtype.pack
        if use_torch:
            import torch

            out = torch.empty(shape, dtype=dt.to_torch(p.dtype),
                              device="cuda" if device == "cuda" else "cpu")
            # Outputs are uninitialized; on the CPU, poison float outputs so
            # that elements a kernel forgot to write show up as NaN.
            if device == "cpu" and out.is_floating_point() and p.dtype.bits >= 8:
                out.fill_(float("nan"))
        else:
            out = np.empty(shape, dtype=dt.to_numpy(p.dtype))
            if p.dtype.is_float and p.dtype.bits >= 8:
                out.fill(np.nan)
        if not p.workspace:
            outputs.append(out)
        # Allocated here as the parameter says: bound without checks.
        strides, count = [], 1
        for d in reversed(shape):
            strides.append(count)
            count *= d
        ptr = out.data_ptr() if use_torch else out.ctypes.data
        values[i] = BoundTensor(out, ptr, tuple(shape), tuple(reversed(strides)))
    if tables:
        for i, p in enumerate(params):
            if p.peers_of is not None:
                values[i] = _check_tensor(kernel_name, p, tables[p.peers_of], symbols, where,
                                          device, state)
    return Binding(values, outputs, symbols, use_torch)


def _symmetric_parts(kernel_name: str, p, x):
    """(local tensor, peer table or None) of the value passed for symmetric
    tensor `p`: a `tilelang_mlir.distributed.SymmetricTensor` (anything with
    `__tile_symmetric__`) or a plain tensor (one rank)."""
    parts = getattr(x, "__tile_symmetric__", None)
    if parts is None:
        return x, None
    local, table = parts()
    if str(table.dtype).rsplit(".", 1)[-1] != "int64":  # NumPy's or torch's
        raise TypeError(f"argument {p.name!r} of kernel {kernel_name!r}: its peer table must "
                        f"be int64, got {table.dtype}")
    return local, table


def _own_table(obj, ptr: int):
    """The peer table of a world of one rank: the tensor's own address."""
    if _is_torch(obj):
        import torch

        return torch.tensor([ptr], dtype=torch.int64, device=obj.device)
    return np.array([ptr], dtype=np.int64)
