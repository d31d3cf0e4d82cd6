"""Grid expressions: the launch grid of a kernel as JSON over its symbolic
sizes and integer scalar arguments.

The compiler reads the grid off the IR as these expressions; the runtime
evaluates them at each launch, and the saved artifacts and the kernel cache
store them. Target-neutral (CUDA and ROCm launches use the same form) and
plain data: bottom layer.

An expression is one of `{"const": 4}`, `{"sym": "M"}` (a symbolic size),
`{"scalar": "n"}` (an integer scalar argument), `{"sms": k}` (the device's
multiprocessors rounded down to a multiple of k, at least k: persistent
kernels) or `{"op": <one of GRID_OPS>, "args": [a, b]}`.
"""

from __future__ import annotations

import operator
from typing import Any, Mapping, Optional, Sequence, Tuple

GRID_OPS = ("add", "sub", "mul", "floordiv", "ceildiv", "mod", "max", "min")


def expr_to_str(expr: Any) -> str:
    """A readable form of a grid expression, for error messages."""
    if isinstance(expr, dict):
        if "const" in expr:
            return str(expr["const"])
        if "sym" in expr:
            return str(expr["sym"])
        if "scalar" in expr:
            return str(expr["scalar"])
        if "sms" in expr:
            return f"SMs rounded down to a multiple of {expr['sms']}"
        if "op" in expr and isinstance(expr.get("args"), (list, tuple)):
            return f"{expr['op']}(" + ", ".join(expr_to_str(a) for a in expr["args"]) + ")"
    return repr(expr)


def check_grid_expr(expr: Any, symbols: Optional[Sequence[str]] = None,
                    scalars: Optional[Sequence[str]] = None) -> None:
    """Checks the structure of one grid expression; raises ValueError.

    When `symbols` / `scalars` are given, the names an expression refers to
    must be among them.
    """
    if not isinstance(expr, dict):
        raise ValueError(f"grid expression {expr!r} must be a JSON object such as "
                         "{'const': 4}, {'sym': 'M'}, {'scalar': 'n'}, {'sms': 2} or "
                         "{'op': 'ceildiv', 'args': [...]}")
    if "const" in expr:
        value = expr["const"]
        if len(expr) != 1 or isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"grid expression {expr!r}: 'const' must be the only key and "
                             "an integer")
    elif "sym" in expr:
        _check_name(expr, "sym", "symbol name", symbols,
                    "the symbolic size {name!r}, which no tensor parameter has (symbols: {known})")
    elif "scalar" in expr:
        _check_name(expr, "scalar", "parameter name", scalars,
                    "{name!r}, which is not an integer scalar parameter (integer scalars: {known})")
    elif "sms" in expr:
        value = expr["sms"]
        if len(expr) != 1 or isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"grid expression {expr!r}: 'sms' must be the only key and a "
                             "positive integer (the multiple the count is rounded down to)")
    elif "op" in expr:
        op, args = expr["op"], expr.get("args")
        if set(expr) != {"op", "args"}:
            raise ValueError(f"grid expression {expr!r}: an operation has exactly the keys "
                             "'op' and 'args'")
        if op not in GRID_OPS:
            raise ValueError(f"grid expression {expr!r}: unknown op {op!r}; expected one of "
                             f"{', '.join(GRID_OPS)}")
        if not isinstance(args, (list, tuple)) or len(args) != 2:
            raise ValueError(f"grid expression {expr!r}: {op!r} takes a list of 2 args")
        for a in args:
            check_grid_expr(a, symbols, scalars)
    else:
        raise ValueError(f"grid expression {expr!r} has none of the keys 'const', 'sym', "
                         "'scalar', 'sms', 'op'")


def _check_name(expr: dict, key: str, what: str, names: Optional[Sequence[str]],
                unknown: str) -> None:
    """A `sym` or `scalar` leaf: one key, a name, and (when `names` is
    given) one of them; `unknown` says what an unknown name is."""
    name = expr[key]
    if len(expr) != 1 or not isinstance(name, str):
        raise ValueError(f"grid expression {expr!r}: {key!r} must be the only key and a {what}")
    if names is not None and name not in names:
        known = ", ".join(repr(s) for s in names) or "none"
        raise ValueError(f"grid expression {expr!r} refers to "
                         + unknown.format(name=name, known=known))


def check_grid(grid: Any, symbols: Optional[Sequence[str]] = None,
               scalars: Optional[Sequence[str]] = None) -> None:
    """Checks a grid: a list of 1 to 3 valid expressions; raises ValueError."""
    if not isinstance(grid, (list, tuple)) or not 1 <= len(grid) <= 3:
        raise ValueError(f"the grid must be a list of 1 to 3 extents, got {grid!r}")
    for e in grid:
        check_grid_expr(e, symbols, scalars)


# What each of GRID_OPS computes (Python's floor division and `%`).
_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "floordiv": operator.floordiv, "ceildiv": lambda a, b: -(-a // b), "mod": operator.mod,
    "max": max, "min": min,
}


def _eval(expr: Any, symbols: Mapping[str, int], scalars: Mapping[str, Any],
          sms: Optional[int]) -> int:
    if "const" in expr:
        return expr["const"]
    if "sms" in expr:
        if sms is None:
            raise ValueError("grid expression refers to the multiprocessor count, which is not "
                             "known here (no device)")
        k = expr["sms"]
        return max(k, sms // k * k)
    if "sym" in expr:
        name = expr["sym"]
        if name not in symbols:
            raise ValueError(f"grid expression refers to the symbolic size {name!r}, which "
                             "is not bound")
        return symbols[name]
    if "scalar" in expr:
        name = expr["scalar"]
        if name not in scalars:
            raise ValueError(f"grid expression refers to the scalar argument {name!r}, which "
                             "is not bound")
        value = scalars[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"grid expression uses the scalar argument {name!r}, which is "
                             f"not an integer ({value!r})")
        return value
    op = expr["op"]
    a = _eval(expr["args"][0], symbols, scalars, sms)
    b = _eval(expr["args"][1], symbols, scalars, sms)
    if b == 0 and op in ("floordiv", "ceildiv", "mod"):
        raise ValueError(f"grid expression {expr_to_str(expr)} divides by zero")
    return _OPS[op](a, b)



def evaluate_grid(grid: Sequence[dict], symbols: Mapping[str, int],
                  scalars: Mapping[str, Any], sms: Optional[int] = None) -> Tuple[int, int, int]:
    """Evaluates a grid (1 to 3 expressions) to three extents, padded with 1.

    `symbols` maps symbolic sizes to their bound values, `scalars` scalar
    parameter names to their values, `sms` is the multiprocessor count of
    the device (`{'sms': k}`: that count rounded down to a multiple of k, at
    least k; persistent kernels launch one block per multiprocessor). Division is Python's floor division,
    `mod` Python's `%`. Raises ValueError for a malformed grid, an unbound
    name, a division by zero or a negative extent; a zero extent is returned
    as is (the launch is skipped).
    """
    check_grid(grid)
    extents = []
    for axis, e in enumerate(grid):
        value = _eval(e, symbols, scalars, sms)
        if value < 0:
            raise ValueError(f"grid extent {'xyz'[axis]} = {expr_to_str(e)} evaluates to "
                             f"{value}, which is negative")
        extents.append(value)
    extents += [1] * (3 - len(extents))
    return tuple(extents)
