"""`tvm.script.ir_builder.base.IRBuilderFrame`, for TileLang programs that
check what a T.* construct returns: `isinstance(T.serial(0, n), IRBuilderFrame)`
holds for this package's loop and kernel constructs (the objects a tile
program enters with `for` / `with`), but for a `T.serial` whose step is not
1 (TileLang's own stepped-loop object is no TVM frame). The rest of
TVMScript (its parser, printer and IR builders) is out of scope: reading
another name raises an AttributeError that says so."""

from __future__ import annotations

__path__: list = []  # `tvm.script.ir_builder.base` and its parents are this module


class _FrameCheck(type):
    def __instancecheck__(cls, obj) -> bool:
        from ..language import kernel, loops

        frames = (loops.Parallel, loops.Pipelined, loops.Serial, loops.Grid, loops.Persistent,
                  kernel.KernelLaunch)
        if isinstance(obj, loops.Serial):  # T.serial(a, b, step): a frame for step 1 only
            step = obj.step
            return isinstance(step, int) and not isinstance(step, bool) and step == 1
        return isinstance(obj, frames)


class IRBuilderFrame(metaclass=_FrameCheck):
    """`isinstance(x, IRBuilderFrame)`: a loop or kernel construct of a
    tile program (T.serial, T.Parallel, T.Pipelined, T.grid, T.Persistent,
    T.Kernel)."""


def __getattr__(name):
    if name in ("ir_builder", "base"):
        import sys

        return sys.modules[__name__]
    if name.startswith("__"):
        raise AttributeError(name)
    from .refusals import TVM_BUILDER, refusal

    raise AttributeError(refusal(f"tvm.script.{name}", TVM_BUILDER))
