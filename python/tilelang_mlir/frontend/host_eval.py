"""The evaluation of T.* operations applied outside a tile program
(language/host_expr.py): once, in a scratch function whose parameters stand
for the expression's variables, inside a one-warp kernel, to check the
operands as a program would and to learn the result's dtype."""

from __future__ import annotations

from typing import Any, Callable, Dict, List

from ..base import dtypes as dt
from ..base.errors import TileLangError
from ..language import state
from ..language.values import Scalar, Vector, ir_type
from .context import make_context


def evaluate(fn: Callable, args: tuple, kwargs: dict, refusal: Exception, leaves: List,
             bind: Callable):
    """Runs `fn` once in a scratch function whose parameters are the host
    variables of the arguments; errors of the operation's own checks
    (TypeError, ValueError, IndexError) come through, others are the
    refusal."""
    from .. import ir
    from ..dialects import func
    from .builder import Builder

    lanes = [max(1, getattr(dt.as_dtype(v.dtype), "lanes", 1)) for v in leaves]
    with make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            types = []
            for v, n in zip(leaves, lanes):
                d = dt.as_dtype(v.dtype)
                types += [ir_type(d.element if n > 1 else d)] * n
            fop = func.FuncOp("host_expression", (types, []))
            entry = fop.add_entry_block()
        builder = Builder("<host expression>")
        state.push(builder)
        try:
            with ir.InsertionPoint(entry):
                with builder.kernel((1,), 32):
                    env: Dict[int, Any] = {}
                    params = list(entry.arguments)
                    for v, n in zip(leaves, lanes):
                        d = dt.as_dtype(v.dtype)
                        own, params = params[:n], params[n:]
                        env[id(v)] = Vector([Scalar(a, d.element) for a in own]) if n > 1 \
                            else Scalar(own[0], d)
                    a = [bind(x, env) for x in args]
                    k = {key: bind(x, env) for key, x in kwargs.items()}
                    return fn(*a, **k)
        except (TypeError, ValueError, IndexError) as e:
            if isinstance(e, TileLangError) and "inside `with T.Kernel" in str(e):
                raise refusal from None
            raise
        except TileLangError:
            raise refusal from None
        finally:
            state.pop()


state.host_evaluator = evaluate
