"""Affine maps as MLIR prints them, parsed and evaluated in Python.

The layout tools read `#tile.layout<affine_map<...>, threads = T>` off the
printed IR; this module turns the map into something that can be evaluated
per element, without MLIR:

    m = parse_affine_map("affine_map<(d0, d1) -> ((d0 mod 8) * 4 + d1 floordiv 2, d1 mod 2)>")
    m((9, 5))                     # (7, 1)
    m((np.arange(16), 3))         # NumPy arrays work too (element-wise)

The subset is what the compiler prints: integer constants, dimensions and
symbols (any names declared in `(...)[...]`), `+`, `-`, `*`, `floordiv`,
`ceildiv`, `mod`, unary minus and parentheses, with MLIR's precedence (the
multiplicative operators bind tighter than `+`/`-`, all left-associative).
`floordiv` rounds towards negative infinity and `mod` is never negative, as
in MLIR (and Python's `//` and `%`).
"""

from __future__ import annotations

import re
from typing import List, Sequence, Tuple

_TOKEN_RE = re.compile(r"\s*(?:(?P<num>\d+)|(?P<id>[A-Za-z_$][\w$.]*)|(?P<op>->|[-+*(),\[\]]))")
_KEYWORDS = ("floordiv", "ceildiv", "mod")


class AffineMapError(ValueError):
    """The text is not an affine map of the supported subset."""


class AffineExpr:
    """A node of an affine expression: evaluates on ints or NumPy arrays."""

    def __init__(self, kind: str, *args):
        # "const", "dim", "sym" (a value or position), "neg" (one operand),
        # "+", "-", "*", "floordiv", "ceildiv", "mod" (two operands).
        self.kind = kind
        self.args = args

    def evaluate(self, dims: Sequence, syms: Sequence = ()):
        k, a = self.kind, self.args
        if k == "const":
            return a[0]
        if k == "dim":
            return dims[a[0]]
        if k == "sym":
            return syms[a[0]]
        if k == "neg":
            return -a[0].evaluate(dims, syms)
        lhs, rhs = a[0].evaluate(dims, syms), a[1].evaluate(dims, syms)
        if k == "+":
            return lhs + rhs
        if k == "-":
            return lhs - rhs
        if k == "*":
            return lhs * rhs
        if k == "floordiv":
            return lhs // rhs
        if k == "ceildiv":
            return -((-lhs) // rhs)
        if k == "mod":
            return lhs % rhs
        raise AssertionError(k)

    def __repr__(self) -> str:
        k, a = self.kind, self.args
        if k == "const":
            return str(a[0])
        if k in ("dim", "sym"):
            return f"{k[0]}{a[0]}"
        if k == "neg":
            return f"-({a[0]!r})"
        return f"({a[0]!r} {k} {a[1]!r})"


class AffineMap:
    """An affine map: `dims` and `symbols` are the declared names, `results`
    the result expressions. Calling it with the dimension values (and symbol
    values) gives the tuple of results."""

    def __init__(self, dims: Sequence[str], symbols: Sequence[str],
                 results: Sequence[AffineExpr], text: str = ""):
        self.dims = tuple(dims)
        self.symbols = tuple(symbols)
        self.results = tuple(results)
        self.text = text

    @property
    def num_dims(self) -> int:
        return len(self.dims)

    @property
    def num_symbols(self) -> int:
        return len(self.symbols)

    def __call__(self, dims: Sequence, syms: Sequence = ()) -> Tuple:
        dims, syms = tuple(dims), tuple(syms)
        if len(dims) != self.num_dims or len(syms) != self.num_symbols:
            raise ValueError(f"affine map {self.text or self!r} takes {self.num_dims} "
                             f"dimension(s) and {self.num_symbols} symbol(s), got "
                             f"{len(dims)} and {len(syms)}")
        return tuple(r.evaluate(dims, syms) for r in self.results)

    def __repr__(self) -> str:
        syms = f"[{', '.join(self.symbols)}]" if self.symbols else ""
        return (f"AffineMap(({', '.join(self.dims)}){syms} -> "
                f"({', '.join(map(repr, self.results))}))")


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens: List[Tuple[str, str]] = []
        pos = 0
        stripped = text.rstrip()
        while pos < len(stripped):
            m = _TOKEN_RE.match(stripped, pos)
            if not m or m.end() == pos:
                raise self.error(f"unexpected character {stripped[pos:].lstrip()[:1]!r}")
            kind = m.lastgroup
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0
        self.names = {}

    def error(self, what: str) -> AffineMapError:
        return AffineMapError(f"cannot parse affine map {self.text!r}: {what}")

    def peek(self) -> Tuple[str, str]:
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", "")

    def take(self, value: str = None) -> Tuple[str, str]:
        tok = self.peek()
        if tok[0] == "end":
            raise self.error(f"expected {value!r}, found the end" if value else
                             "unexpected end")
        if value is not None and tok[1] != value:
            raise self.error(f"expected {value!r}, found {tok[1]!r}")
        self.i += 1
        return tok

    def name_list(self, close: str) -> List[str]:
        names = []
        if self.peek()[1] == close:
            self.take(close)
            return names
        while True:
            kind, value = self.take()
            if kind != "id" or value in _KEYWORDS:
                raise self.error(f"expected a dimension or symbol name, found {value!r}")
            if value in names or value in self.names:
                raise self.error(f"{value!r} is declared twice")
            names.append(value)
            if self.take()[1] == close:
                return names
            self.i -= 1
            self.take(",")

    def parse(self) -> AffineMap:
        self.take("(")
        dims = self.name_list(")")
        self.names = {n: ("dim", i) for i, n in enumerate(dims)}
        syms: List[str] = []
        if self.peek()[1] == "[":
            self.take("[")
            syms = self.name_list("]")
            self.names.update({n: ("sym", i) for i, n in enumerate(syms)})
        self.take("->")
        self.take("(")
        results = [self.expr()]
        while self.peek()[1] == ",":
            self.take(",")
            results.append(self.expr())
        self.take(")")
        if self.peek()[0] != "end":
            raise self.error(f"unexpected {self.peek()[1]!r} after the results")
        return AffineMap(dims, syms, results, self.text)

    def expr(self) -> AffineExpr:
        node = self.term()
        while self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            node = AffineExpr(op, node, self.term())
        return node

    def term(self) -> AffineExpr:
        node = self.factor()
        while self.peek()[1] in ("*",) + _KEYWORDS:
            op = self.take()[1]
            rhs = self.factor()
            if op in _KEYWORDS and rhs.kind == "const" and rhs.args[0] <= 0:
                raise self.error(f"{op} by {rhs.args[0]}: the divisor must be positive")
            node = AffineExpr(op, node, rhs)
        return node

    def factor(self) -> AffineExpr:
        kind, value = self.take()
        if kind == "num":
            return AffineExpr("const", int(value))
        if value == "-":
            return AffineExpr("neg", self.factor())
        if value == "(":
            node = self.expr()
            self.take(")")
            return node
        if kind == "id" and value in self.names:
            return AffineExpr(*self.names[value])
        if kind == "id":
            raise self.error(f"{value!r} is not a declared dimension or symbol")
        raise self.error(f"unexpected {value!r}")


def parse_affine_map(text: str) -> AffineMap:
    """Parses `affine_map<(d0, d1)[s0] -> (...)>` or the bare
    `(d0, d1)[s0] -> (...)`."""
    body = text.strip()
    if body.startswith("affine_map<"):
        if not body.endswith(">"):
            raise AffineMapError(f"cannot parse affine map {text!r}: no closing '>'")
        body = body[len("affine_map<"):-1]
    return _Parser(body).parse()
