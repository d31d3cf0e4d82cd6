"""The longest C++ functions of lib/, by lines (from the line of the
function's name to its closing brace; lambdas count toward the function that
holds them).

    .venv/bin/python scripts/longest_functions.py            # the 20 longest
    .venv/bin/python scripts/longest_functions.py --top 50
    .venv/bin/python scripts/longest_functions.py --check    # CI: exit 1 over the limit

`--check` fails when a function is over LIMIT lines, except those of
ALLOWED, each at most the length it had when it was listed (so that none
grows while it waits for its split). test/python/test_source_size.py runs
the check.

The reader is a brace matcher over the source with comments, strings and
character literals blanked out, not a C++ parser: a `{` outside any function
whose text since the previous `;`, `{` or `}` ends with a parameter list
(`)`, then qualifiers or a trailing return type; a constructor's member
initializers end with `)` too) opens a function; `namespace`, `class`,
`struct`, `union` and `enum` bodies may hold functions.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMIT = 200

# Functions allowed over LIMIT, with the length each may not exceed. Only
# lib/Conversion/TileToGPU/ (the KernelLowering split of issue 45 comes
# later and splits them); a function outside it is split, never listed.
ALLOWED: dict = {}


class Function(NamedTuple):
    path: str  # relative to ROOT
    name: str
    line: int  # of the name
    lines: int


def _blank(text: str) -> str:
    """`text` with comments, string and character literals replaced by
    spaces (newlines kept, so that offsets keep their line numbers)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.compile(r'R"([^(\s]*)\(').match(text, i)
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            out.append(c)
            i += 1
            continue
        out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
        i = j
    return "".join(out)


_SCOPE = re.compile(r"(^|[^\w])(namespace|class|struct|union|enum)([^\w]|$)")
# A parameter list, then qualifiers and a trailing return type, up to `{`.
_FUNCTION_END = re.compile(
    r"\)\s*(?:(?:const|override|final|noexcept|mutable|volatile|&&|&)\s*)*"
    r"(?:->\s*[\w:<>,\s*&]+)?$")
_NAME = re.compile(r"((?:[A-Za-z_]\w*\s*::\s*)*~?(?:operator\s*[^\s(]+|[A-Za-z_]\w*))\s*\(")


def _name(header: str) -> str:
    header = re.sub(r"^\s*template\s*<[^{;]*?>\s*", "", header)
    m = _NAME.search(header)
    return re.sub(r"\s+", "", m.group(1)) if m else "?"


def functions(path: str) -> list[Function]:
    """The functions defined in the C++ file `path` (absolute)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = _blank(f.read())
    rel = os.path.relpath(path, ROOT)
    found = []
    # One entry per open brace: ("scope" | "function" | "block", ...).
    stack: list[tuple] = []
    start = 0  # where the text since the last ; { } begins
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            in_function = any(kind != "scope" for kind, *_ in stack)
            header = text[start:i]
            if in_function:
                stack.append(("block",))
            elif _FUNCTION_END.search(header.rstrip()) and not _SCOPE.search(header.split("(")[0]):
                name = _name(header)
                offset = header.find(name.split("::")[0]) if name != "?" else len(header) - len(header.lstrip())
                first = line - header[max(offset, 0):].count("\n")
                stack.append(("function", name, first))
            else:
                stack.append(("scope",))
            start = i + 1
        elif c == "}":
            if stack:
                entry = stack.pop()
                if entry[0] == "function":
                    found.append(Function(rel, entry[1], entry[2], line - entry[2] + 1))
            start = i + 1
        elif c == ";":
            start = i + 1
    return found


def all_functions(folder: str = "lib") -> list[Function]:
    result = []
    for base, _, files in os.walk(os.path.join(ROOT, folder)):
        for name in sorted(files):
            if name.endswith((".cpp", ".h")):
                result.extend(functions(os.path.join(base, name)))
    return sorted(result, key=lambda f: -f.lines)


def violations(funcs: list[Function]) -> list[str]:
    """What `--check` reports: functions over LIMIT not allowed, allowed
    ones longer than listed, listed ones that no longer exist."""
    problems = []
    seen = set()
    for f in funcs:
        key = (f.path, f.name)
        if key in ALLOWED:
            seen.add(key)
            if f.lines > ALLOWED[key]:
                problems.append(f"{f.path}:{f.line}: {f.name} has {f.lines} lines, "
                                f"more than the {ALLOWED[key]} it is allowed (ALLOWED)")
        elif f.lines > LIMIT:
            problems.append(f"{f.path}:{f.line}: {f.name} has {f.lines} lines (limit {LIMIT}): split it")
    for key in ALLOWED.keys() - seen:
        problems.append(f"{key[0]}: {key[1]} is in ALLOWED but no longer found: remove it from the list")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=20, help="how many to list")
    ap.add_argument("--check", action="store_true", help=f"exit 1 when a function is over {LIMIT} lines")
    args = ap.parse_args(argv)
    funcs = all_functions()
    for f in funcs[: args.top]:
        mark = " (allowed)" if (f.path, f.name) in ALLOWED else ""
        print(f"{f.lines:5d}  {f.path}:{f.line}  {f.name}{mark}")
    if args.check:
        problems = violations(funcs)
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
