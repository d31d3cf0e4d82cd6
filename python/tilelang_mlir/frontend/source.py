"""Source of a Python function: its AST and the map back to file positions."""

from __future__ import annotations

import ast
import hashlib
import inspect
import textwrap
from dataclasses import dataclass
from typing import Callable, List

from .errors import SourceLocation, TileLangError


@dataclass
class FunctionSource:
    filename: str
    first_line: int  # file line of the first source line (the decorator)
    indent: int  # columns removed by dedent
    text: str  # dedented source
    node: ast.FunctionDef

    @property
    def body(self) -> List[ast.stmt]:
        return self.node.body

    def location(self, node: ast.AST) -> SourceLocation:
        line = getattr(node, "lineno", self.node.lineno)
        col = getattr(node, "col_offset", 0)
        return SourceLocation(self.filename, self.first_line + line - 1, col + self.indent + 1)

    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def parse_function(fn: Callable) -> FunctionSource:
    """Parses the source of `fn` (which must be a single function)."""
    try:
        lines, first_line = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError) as e:
        raise TileLangError(f"cannot read the source of {fn.__qualname__!r} ({e}); tile "
                            "programs must be defined in a file") from None
    raw = "".join(lines)
    text = textwrap.dedent(raw)
    first = next((l for l in raw.splitlines() if l.strip()), "")
    indent = len(first) - len(first.lstrip())
    module = ast.parse(text)
    defs = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if len(defs) != 1 or isinstance(defs[0], ast.AsyncFunctionDef):
        raise TileLangError(f"{fn.__qualname__!r} must be a single (non-async) function",
                            SourceLocation(filename, first_line, indent + 1))
    # The source is read from the file now, the code was compiled at import:
    # a file edited since then would be parsed at the wrong lines.
    code = getattr(fn, "__code__", None)
    params = [a.arg for a in defs[0].args.posonlyargs + defs[0].args.args]
    if code is not None and (defs[0].name != fn.__name__ or
                             params != list(code.co_varnames[:code.co_argcount])):
        raise TileLangError(f"the source of {fn.__qualname__!r} in {filename} changed since "
                            f"it was imported: line {first_line} now defines "
                            f"{defs[0].name}({', '.join(params)}); reload the module",
                            SourceLocation(filename, first_line, indent + 1))
    return FunctionSource(filename, first_line, indent, text, defs[0])
