"""Compiled kernels as PyTorch custom operators (torch.library).

    op = tl.library.custom_op("mylib::scale", cpu_kernel, cuda_kernel)
    y = op(x)                       # or torch.ops.mylib.scale(x)

A kernel is a `tl.compile` result, a `@tl.jit` prim_func (compiled for its
target), or a `@tl.jit` factory's kernel, `factory.compile(args)`.

`custom_op` defines the operator from the kernels' signature: the
parameters the caller passes (not `out_idx`, not workspaces) become its
arguments (`Tensor` for tensors, `int`/`float`/`bool` for scalars, by the
parameter names), the `out_idx` parameters its results. Each kernel is
registered for its device type (a CPU kernel for "cpu", a CUDA kernel for
"cuda"; the kernels of one op must share the signature). The fake
(meta) implementation is derived from the same signature: each result has
its parameter's dtype and a shape whose static sizes are the program's and
whose dynamic sizes (`T.dynamic` / symbolic dims) are read off the inputs
that carry the same symbol, on the inputs' device. So `torch.compile`
(fullgraph, dynamic shapes included) traces through the op without running
it, and `torch.library.opcheck` can check it.

Launches go on torch's current CUDA stream (runtime/cuda.py), so the op is
usable under CUDA-graph capture as any kernel launch is. The op has no
autograd formula of its own: attach one with `torch.library.register_autograd`.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from ..base import dtypes as dt
from ..base.errors import TileLangError
from ..base.signature import is_input

# The torch.library.Library objects of the defined ops must outlive them.
_LIBRARIES: Dict[str, object] = {}
_DISPATCH = {"cpu": "CPU", "cuda": "CUDA"}


def one_device(op: str, tensors: dict):
    """The device of the tensors among `tensors` (argument name -> value;
    other values are skipped), or None; an error naming `op` and the first
    argument on another device than the first tensor's. Operators check
    it in their fake implementations too: torch dispatches a call with one
    meta tensor among CPU or CUDA ones to the fake implementation, which
    would otherwise return an uninitialized result on the first input's
    device."""
    import torch

    first = None
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            continue
        if first is None:
            first = (name, t.device)
        elif t.device != first[1]:
            raise TileLangError(f"{op}: {name} is on {t.device} but {first[0]} on {first[1]}; "
                                "all tensor arguments must be on one device")
    return first[1] if first else None


def _scalar_schema(param) -> str:
    d = param.dtype
    if d.is_bool:
        return "bool"
    if d.is_int:
        return "int"
    if d.is_float:
        return "float"
    raise TileLangError(f"tl.library.custom_op: scalar parameter {param.name!r} of dtype "
                        f"{d.name} has no torch schema type")


def _signature(kernel) -> Tuple[List, List]:
    """(the caller's parameters, the result parameters) of `kernel`."""
    inputs = [p for i, p in enumerate(kernel.params) if is_input(i, p, kernel.out_idx)]
    outputs = [kernel.params[i] for i in kernel.out_idx]
    return inputs, outputs


def _schema(op: str, inputs, outputs) -> str:
    args = ", ".join(f"Tensor {p.name}" if p.kind == "tensor" else f"{_scalar_schema(p)} {p.name}"
                     for p in inputs)
    if not outputs:
        raise TileLangError(f"tl.library.custom_op({op!r}): the kernel has no outputs (out_idx); "
                            "an operator that only writes its arguments is not supported")
    rets = "Tensor" if len(outputs) == 1 else "(" + ", ".join("Tensor" for _ in outputs) + ")"
    return f"{op}({args}) -> {rets}"


def _key(param) -> tuple:
    return (param.name, param.kind, param.dtype.name, tuple(param.shape))


def _kernel(name, k):
    """A compiled kernel from what custom_op was given: a kernel, or a
    @tl.jit prim_func (compiled here, for its target)."""
    from ..compiler.compile import JITFunction

    if not isinstance(k, JITFunction):
        return k
    if k.style == "prim_func":
        return k.compile()
    raise TileLangError(f"tl.library.custom_op({name!r}): {k.__name__!r} is a @tl.jit "
                        f"{'factory' if k.style == 'factory' else 'eager-style program'}, "
                        "which makes one kernel per set of arguments; pass "
                        f"{k.__name__}.compile(<its arguments>) (with T.dynamic sizes, one "
                        "kernel serves every size)")


def custom_op(name: str, *kernels):
    """Defines the torch operator `name` ("namespace::op") from compiled
    kernels (`tl.compile` results, a @tl.jit prim_func, or a @tl.jit
    factory's `.compile(...)`; one per device type) and returns it
    (`torch.ops.namespace.op`)."""
    import torch

    if not isinstance(name, str) or name.count("::") != 1 or not all(name.split("::")):
        raise TileLangError(f"tl.library.custom_op: the name must be 'namespace::op', got {name!r}")
    if not kernels:
        raise TileLangError(f"tl.library.custom_op({name!r}): give at least one compiled kernel")
    ns, op = name.split("::")
    kernels = [_kernel(name, k) for k in kernels]
    if name in _LIBRARIES:
        raise TileLangError(f"tl.library.custom_op: {name!r} is already defined")
    inputs, outputs = _signature(kernels[0])
    devices = set()
    for k in kernels:
        ins, outs = _signature(k)
        if [_key(p) for p in ins + outs] != [_key(p) for p in inputs + outputs]:
            raise TileLangError(f"tl.library.custom_op({name!r}): kernel {k.name!r} for "
                                f"{k.device} has another signature than the first kernel")
        if k.device not in _DISPATCH:
            raise TileLangError(f"tl.library.custom_op({name!r}): no torch device type for "
                                f"a {k.device} kernel")
        if k.device in devices:
            raise TileLangError(f"tl.library.custom_op({name!r}): two kernels for {k.device}")
        devices.add(k.device)
    # Where each symbolic size of a result comes from: (input position, dim).
    origin: Dict[str, Tuple[int, int]] = {}
    for pos, p in enumerate(inputs):
        for d, s in enumerate(p.shape if p.kind == "tensor" else ()):
            if isinstance(s, str):
                origin.setdefault(s, (pos, d))
    for p in outputs:
        for s in p.shape:
            if isinstance(s, str) and s not in origin:
                raise TileLangError(
                    f"tl.library.custom_op({name!r}): the size {s!r} of result {p.name!r} is "
                    f"not the size of any input, so the operator's result shape is unknown "
                    f"before it runs")

    lib = torch.library.Library(ns, "FRAGMENT")
    lib.define(_schema(op, inputs, outputs))

    names = [p.name for p in inputs]

    def make_impl(kernel):
        def impl(*args):
            one_device(name, dict(zip(names, args)))
            out = kernel(*args)
            return tuple(out) if isinstance(out, (tuple, list)) else out
        return impl

    for k in kernels:
        lib.impl(op, make_impl(k), _DISPATCH[k.device])

    def fake(*args):
        device = one_device(name, dict(zip(names, args)))
        results = []
        for p in outputs:
            shape = [args[origin[s][0]].shape[origin[s][1]] if isinstance(s, str) else s
                     for s in p.shape]
            results.append(torch.empty(shape, dtype=dt.to_torch(p.dtype), device=device))
        return results[0] if len(results) == 1 else tuple(results)

    torch.library.register_fake(name, lib=lib)(fake)
    _LIBRARIES[name] = lib
    return getattr(getattr(torch.ops, ns), op)
