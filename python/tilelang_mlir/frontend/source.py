"""Source of a Python function: its AST and the map back to file positions."""

from __future__ import annotations

import __future__
import ast
import hashlib
import importlib.machinery
import inspect
import keyword
import linecache
import os
import textwrap
import types
import weakref
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from ..base.errors import SourceLocation, TileLangError


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
    # An edit that kept the lines in place passes the check above, and the
    # kernel would be compiled from text that is not the code Python runs
    # (nor the one the user tested): an error, not a warning.
    if code is not None and not _is_the_loaded_code(fn, raw, filename):
        last = first_line + len(lines) - 1
        raise TileLangError(f"the source of {fn.__qualname__!r} in {filename} (lines "
                            f"{first_line}-{last}) changed since it was imported: the file no "
                            "longer holds the code Python loaded, so the kernel would not be "
                            "the function that runs; reload the module (importlib.reload) or "
                            "restart", SourceLocation(filename, first_line, indent + 1))
    return FunctionSource(filename, first_line, indent, text, defs[0])


# ---------------------------------------------------------------------------
# Is the text in the file the function Python loaded?
#
# The frontend reads a function's source when it first parses it, not when
# Python imported it. The rule: compile the text now in the file as Python
# compiled the function and compare the code objects, recursively, without
# line and column tables: bytecode, constants, names and arguments. Equal
# code is the same function whatever the line numbers; an edit that changes
# what runs changes the code.
#
# How Python compiled a function depends on its file around it: free
# variables are cells of the enclosing function (LOAD_DEREF, not
# LOAD_GLOBAL), `T.f(...)` is not a method call when `T` is imported at the
# top of the module, __future__ imports set flags. The fast way compiles the
# function's lines alone, with an enclosing function for its free variables
# and an import for each global that is a module; where that differs, the
# whole file is compiled (once per file text) and the function's code found
# by qualified name and first line: that is exactly what the importer did.
# Only files are checked (a notebook cell or exec'd text cannot change under
# the function), and only modules compiled by the standard loader can be
# told stale: one compiled from a transformed text (pytest rewrites asserts)
# may differ without an edit. The result is kept per code object and text:
# a factory's programs pay the check once (a fraction of a millisecond for
# a kernel; a few milliseconds more for a file the fast way does not match).
# ---------------------------------------------------------------------------

_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag

_CHECKED: "weakref.WeakKeyDictionary[types.CodeType, str]" = weakref.WeakKeyDictionary()
_FILES: Dict[str, Tuple[str, types.CodeType]] = {}  # filename -> (text, module code)


def _is_the_loaded_code(fn: Callable, raw: str, filename: str) -> bool:
    code = fn.__code__
    if _CHECKED.get(code) == raw:
        return True
    if not os.path.isfile(filename):
        return True
    try:
        same = _same_code(code, _compile_alone(fn, raw, filename))
        if not same:
            found = _compile_in_file(fn, filename)
            if found is None:
                return True  # nothing to compare with: parsed as before
            same = _same_code(code, found)
    except (SyntaxError, ValueError):
        return True  # the file does not compile now: cannot tell, parsed as before
    if same:
        _CHECKED[code] = raw
        return True
    return not _standard_loader(fn)


def _compile_alone(fn: Callable, raw: str, filename: str) -> Optional[types.CodeType]:
    """The code object of the function in `raw` (its source lines, as in the
    file) compiled alone, in a context like its module's; None where that
    cannot be arranged."""
    code = fn.__code__
    first = next((line for line in raw.splitlines() if line.strip()), "")
    indent = first[:len(first) - len(first.lstrip())]
    modules = sorted(name for name in _global_names(code)
                     if isinstance(fn.__globals__.get(name), types.ModuleType)
                     and name.isidentifier() and not keyword.iskeyword(name))
    header = "".join(f"import _ as {name}\n" for name in modules)  # compiled, never run
    free = code.co_freevars
    if free:
        if not indent:
            return None
        header += "def __tl_enclosing__():\n" + indent + " = ".join(free) + " = None\n"
    elif indent:
        header += "if 1:\n"
    module = compile(header + raw, filename, "exec", flags=code.co_flags & _FUTURE_FLAGS,
                     dont_inherit=True)
    scope = module
    if free:
        scope = next(c for c in module.co_consts
                     if isinstance(c, types.CodeType) and c.co_name == "__tl_enclosing__")
    found = [c for c in scope.co_consts
             if isinstance(c, types.CodeType) and c.co_name == code.co_name]
    return found[0] if len(found) == 1 else None


def _global_names(code: types.CodeType) -> set:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names


def _compile_in_file(fn: Callable, filename: str) -> Optional[types.CodeType]:
    """The code object of the function in the whole file as it is now,
    compiled as the importer compiles it; None if the file has no function
    of that qualified name at that first line."""
    code = fn.__code__
    text = "".join(linecache.getlines(filename, fn.__globals__))
    cached = _FILES.get(filename)
    if cached is None or cached[0] != text:
        if len(_FILES) >= 8:
            _FILES.pop(next(iter(_FILES)))
        cached = _FILES[filename] = (text, compile(text, filename, "exec", dont_inherit=True))
    qualname = getattr(code, "co_qualname", code.co_name)
    found = []

    def visit(c: types.CodeType) -> None:
        for inner in c.co_consts:
            if isinstance(inner, types.CodeType):
                if (getattr(inner, "co_qualname", inner.co_name) == qualname
                        and inner.co_firstlineno == code.co_firstlineno):
                    found.append(inner)
                visit(inner)

    visit(cached[1])
    return found[0] if len(found) == 1 else None


def _same_code(a: types.CodeType, b: Optional[types.CodeType]) -> bool:
    """Equal code, ignoring line numbers, positions, file and qualified name
    (and CO_NESTED: the fast check compiles at another depth)."""
    if b is None:
        return False
    if (a.co_code != b.co_code or a.co_names != b.co_names or a.co_varnames != b.co_varnames
            or a.co_freevars != b.co_freevars or a.co_cellvars != b.co_cellvars
            or a.co_name != b.co_name or a.co_argcount != b.co_argcount
            or a.co_posonlyargcount != b.co_posonlyargcount
            or a.co_kwonlyargcount != b.co_kwonlyargcount
            or (a.co_flags ^ b.co_flags) & ~inspect.CO_NESTED
            or getattr(a, "co_exceptiontable", b"") != getattr(b, "co_exceptiontable", b"")):
        return False
    return _same_constants(a.co_consts, b.co_consts)


def _same_constants(xs, ys) -> bool:
    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys):
        if type(x) is not type(y):
            return False
        if isinstance(x, types.CodeType):
            same = _same_code(x, y)
        elif isinstance(x, tuple):
            same = _same_constants(x, y)
        elif isinstance(x, (float, complex)):
            same = repr(x) == repr(y)  # -0.0 and 0.0, nan
        else:
            same = x == y
        if not same:
            return False
    return True


def _standard_loader(fn: Callable) -> bool:
    """Whether the module of `fn` was compiled from its file's text as it
    was (the standard source loader), so that other code means an edit."""
    loader = getattr(fn, "__globals__", {}).get("__loader__")
    standard = importlib.machinery.SourceFileLoader
    return (isinstance(loader, standard)
            and type(loader).source_to_code is standard.source_to_code)
