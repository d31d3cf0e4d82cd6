"""`tvm.transform.PassContext`: the pass-config context TileLang programs
open around a compile. `with PassContext(config={...}):` makes its config
the pass configs of every `tilelang.compile` / `@tilelang.jit` compile
inside it (keys given to the compile itself win); `PassContext.current()`
is the innermost one (an empty one outside any). `opt_level` is accepted
(this compiler has one pipeline); pass instruments are TVM's pass API and
are refused."""

from __future__ import annotations

from typing import Any, Dict, Optional

from ._context import ContextStack
from .refusals import refusal

_STACK = ContextStack()


class PassContext:
    def __init__(self, opt_level: int = 2, required_pass=None, disabled_pass=None,
                 instruments=None, config: Optional[Dict[str, Any]] = None,
                 trace=None, trace_stack=None, make_traceable=None, num_evals=0,
                 tuning_api_database=None):
        if instruments:
            raise NotImplementedError(refusal(
                "PassContext(instruments=...)", "TVM's pass instrumentation; the pass config "
                "tl.trace_dir writes the IR after every pass"))
        if required_pass or disabled_pass:
            raise NotImplementedError(refusal(
                "PassContext(required_pass=/disabled_pass=)", "TVM's passes; this compiler's "
                "pipeline is steered by pass configs"))
        self.opt_level = opt_level
        self.config: Dict[str, Any] = {str(getattr(k, "value", k)): v
                                       for k, v in (config or {}).items()}

    def __enter__(self) -> "PassContext":
        _STACK.push(self)
        return self

    def __exit__(self, *exc) -> None:
        _STACK.pop()

    @staticmethod
    def current() -> "PassContext":
        return _STACK.top() or PassContext()


def current_config() -> Dict[str, Any]:
    """The merged configs of the open PassContexts (inner ones win)."""
    merged: Dict[str, Any] = {}
    for ctx in _STACK.all():
        merged.update(ctx.config)
    return merged


__all__ = ["PassContext"]
