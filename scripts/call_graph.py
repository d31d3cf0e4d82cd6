"""Which C++ files of lib/Conversion call functions defined in which others,
and the circles among them (files that, through their calls, reach back to
themselves).

    .venv/bin/python scripts/call_graph.py              # the circles, if any
    .venv/bin/python scripts/call_graph.py --edges      # every file's callees, with a call each
    .venv/bin/python scripts/call_graph.py --check      # CI: exit 1 on a circle

A file calls another when one of its functions calls, by name, a function
the other defines. Like scripts/longest_functions.py (whose reader finds the
functions) this reads the text, it does not parse C++; it resolves a call
by these rules:

- `Q::f(...)` is a call of the `f` defined as `Q::f`.
- A virtual method (declared `virtual` in a header of lib/ or dialects/, or
  overriding one) is reached through its interface (GPUTargetInfo, in
  TargetInfo.h): a call of it is no call of the file that implements it.
  That is how the target-neutral lowering reaches the vendors' code.
- A function of the calling file (a method of its class, a static helper)
  answers the call before any other file's; `static` functions and those of
  anonymous namespaces are seen only in their own file.
- A bare call `f(...)` in a method of class C is a call of C's (or its base
  classes') method `f` where there is one, otherwise of a free function `f`;
  `x.f(...)` and `x->f(...)` are calls of a method `f` of any class.

A circle is a strongly connected component of the file graph of more than
one file. test/python/test_source_size.py runs the check.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
from collections import defaultdict
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDER = "lib/Conversion"
# Headers whose classes (bases, virtual methods) the rules read.
HEADER_FOLDERS = ("lib", "dialects")

_spec = importlib.util.spec_from_file_location(
    "longest_functions", os.path.join(os.path.dirname(os.path.abspath(__file__)), "longest_functions.py"))
_lf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_lf)

_KEYWORDS = {
    "if", "for", "while", "switch", "return", "sizeof", "alignof", "decltype", "catch",
    "static_assert", "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast",
    "defined", "assert", "new", "delete", "case", "do", "else", "throw", "noexcept",
}
_CALL = re.compile(r"(::|\.|->)?\s*\b([A-Za-z_]\w*)\s*\(")
_QUALIFIED_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*::\s*([A-Za-z_]\w*)\s*\($")
_CLASS = re.compile(r"\b(?:class|struct)\s+(\w+)\s*(?:final\s*)?:\s*([^{;]+)\{")
_VIRTUAL = re.compile(r"\bvirtual\b[^;{]*?\b(~?[A-Za-z_]\w*)\s*\(")
_OVERRIDE = re.compile(r"\b([A-Za-z_]\w*)\s*\([^;{]*\)[^;{(]*\boverride\b")
_NAMESPACES = {"mlir", "tile", "llvm", "mlir::tile"}


class Definition(NamedTuple):
    path: str  # relative to ROOT
    cls: str  # the class of a method ("" for a free function)
    name: str  # unqualified
    local: bool  # static or in an anonymous namespace: seen in its file only
    start: int  # offsets of the body in the blanked text
    end: int


class Call(NamedTuple):
    caller: str  # the calling function, as its file names it
    callee: str  # Class::name or name
    path: str  # the callee's file


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return _lf._blank(f.read())


def _anonymous_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for m in re.finditer(r"\bnamespace\s*\{", text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        spans.append((m.start(), i))
    return spans


def definitions(path: str) -> list[Definition]:
    """The functions `path` (absolute) defines, with their bodies' spans."""
    text = _read(path)
    rel = os.path.relpath(path, ROOT)
    anonymous = _anonymous_spans(text)
    line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    found = []
    for f in _lf.functions(path):
        parts = f.name.split("::")
        name, qual = parts[-1], "::".join(parts[:-1])
        cls = "" if qual in _NAMESPACES or not qual else qual.split("::")[-1]
        begin = line_starts[f.line - 1]
        end = line_starts[min(f.line - 1 + f.lines, len(line_starts) - 1)]
        open_brace = text.find("{", begin)
        # The declaration: from the line before the name (a return type on a
        # line of its own) to the body.
        decl = text[line_starts[max(f.line - 2, 0)]:open_brace]
        static = not cls and re.search(r"(^|[;}\n])\s*(?:inline\s+)?static\b", decl) is not None
        local = static or any(a <= begin <= b for a, b in anonymous)
        found.append(Definition(rel, cls, name, local, open_brace, end))
    return found


class Classes:
    """Bases and virtual methods of the classes declared in headers."""

    def __init__(self, header_paths: list[str]):
        self.bases: dict[str, set[str]] = defaultdict(set)
        self.virtual: dict[str, set[str]] = defaultdict(set)
        for path in header_paths:
            text = _read(path)
            for m in _CLASS.finditer(text):
                for base in m.group(2).split(","):
                    self.bases[m.group(1)].add(base.split()[-1].split("::")[-1].split("<")[0])
            # Virtual methods, attributed to the class whose body holds them.
            for m in re.finditer(r"\b(?:class|struct)\s+(\w+)[^;{]*\{", text):
                depth, i = 0, m.end() - 1
                while i < len(text):
                    depth += {"{": 1, "}": -1}.get(text[i], 0)
                    if depth == 0:
                        break
                    i += 1
                body = text[m.end():i]
                names = {v.group(1) for v in _VIRTUAL.finditer(body)}
                names |= {o.group(1) for o in _OVERRIDE.finditer(body)}
                self.virtual[m.group(1)] |= names

    def ancestry(self, cls: str) -> set[str]:
        seen, todo = set(), [cls]
        while todo:
            c = todo.pop()
            if c not in seen:
                seen.add(c)
                todo.extend(self.bases.get(c, ()))
        return seen

    def is_virtual(self, cls: str, name: str) -> bool:
        return bool(cls) and any(name in self.virtual.get(c, ()) for c in self.ancestry(cls))


def _files(folder: str, exts: tuple[str, ...]) -> list[str]:
    out = []
    for base, _, names in os.walk(os.path.join(ROOT, folder)):
        out.extend(os.path.join(base, n) for n in sorted(names) if n.endswith(exts))
    return sorted(out)


def graph(folder: str = FOLDER, headers: list[str] | None = None) -> dict[str, dict[str, Call]]:
    """file -> {callee file: one call that makes the edge}."""
    if headers is None:
        headers = [p for f in HEADER_FOLDERS for p in _files(f, (".h",))]
    classes = Classes(headers)
    defs = {path: definitions(path) for path in _files(folder, (".cpp",))}
    by_name: dict[str, list[Definition]] = defaultdict(list)
    for ds in defs.values():
        for d in ds:
            if not classes.is_virtual(d.cls, d.name):
                by_name[d.name].append(d)
    edges: dict[str, dict[str, Call]] = {os.path.relpath(p, ROOT): {} for p in defs}
    for path, ds in defs.items():
        rel = os.path.relpath(path, ROOT)
        text = _read(path)
        for d in ds:
            family = classes.ancestry(d.cls) if d.cls else set()
            for m in _CALL.finditer(text, d.start, d.end):
                kind, name = m.group(1), m.group(2)
                if name in _KEYWORDS:
                    continue
                if kind == "::":
                    q = _QUALIFIED_CALL.search(text, 0, m.end())
                    qual = q.group(1) if q else ""
                    if qual in _NAMESPACES:
                        kind, qual = None, ""
                    else:
                        cands = [c for c in _all(defs, name) if c.cls == qual]
                        _add(edges, rel, d, cands)
                        continue
                cands = [c for c in by_name.get(name, ()) if not c.local or c.path == rel]
                if any(c.path == rel for c in cands):
                    continue
                if kind in (".", "->"):
                    cands = [c for c in cands if c.cls]
                elif family and any(c.cls in family for c in cands):
                    cands = [c for c in cands if c.cls in family]
                else:
                    cands = [c for c in cands if not c.cls]
                _add(edges, rel, d, cands)
    return edges


def _all(defs, name):
    return [d for ds in defs.values() for d in ds if d.name == name]


def _add(edges, rel, caller: Definition, cands: list[Definition]):
    for c in cands:
        if c.path != rel and c.path not in edges[rel]:
            who = f"{caller.cls}::{caller.name}" if caller.cls else caller.name
            edges[rel][c.path] = Call(who, f"{c.cls}::{c.name}" if c.cls else c.name, c.path)


def circles(edges: dict[str, dict[str, Call]]) -> list[list[str]]:
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def describe(edges, comp: list[str]) -> list[str]:
    """The calls that hold circle `comp` together."""
    lines = []
    for a in comp:
        for b, call in sorted(edges[a].items()):
            if b in comp:
                lines.append(f"  {a} -> {b}: {call.caller} calls {call.callee}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edges", action="store_true", help="list every file's callees")
    ap.add_argument("--check", action="store_true", help="exit 1 when there is a circle")
    args = ap.parse_args(argv)
    edges = graph()
    if args.edges:
        for a in sorted(edges):
            print(a)
            for b, call in sorted(edges[a].items()):
                print(f"  -> {b}  ({call.caller} calls {call.callee})")
    found = circles(edges)
    for comp in found:
        print(f"circle of {len(comp)} files:", file=sys.stderr if args.check else sys.stdout)
        for line in describe(edges, comp):
            print(line, file=sys.stderr if args.check else sys.stdout)
    if not found:
        print(f"no circle of files calling each other in {FOLDER}")
    return 1 if args.check and found else 0


if __name__ == "__main__":
    sys.exit(main())
