"""The AST visitor of tile programs: control flow and scoping.

A `T.prim_func` is not traced: its Python source is parsed once and walked
here. Compile-time Python (constants, closure values, arithmetic on them,
`if` on constants, helper calls) is evaluated as Python; everything that
touches runtime values emits IR through the semantic layer (builder.py and
values.py). Every statement and call runs under the MLIR location of the
user's line, so verifier errors point back at it.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import operator
from typing import Any, Dict, List, Optional

from ..base import dtypes as dt
from ..base.errors import SourceLocation, TileLangError, relocated
from ..language import state
from ..language.values import (Buffer, BufferRef, Equality, IndexExpr, LetVar, Scalar,
                               ThreadRange, Vector, cast,
                               _describe, binary, compare, is_runtime, logical, select,
                               to_index, to_scalar, unary)
from .source import FunctionSource

# T.unroll loops of at most this many trips are unrolled by the frontend.
MAX_UNROLL = 64

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/",
           ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&",
           ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
           ast.NotEq: "!="}


# Buffers whose elements are data (a barrier's element is the barrier);
# shared scopes are matched by prefix.
_DATA_SCOPES = ("global", "fragment", "local", "var")


def _if_then_else():
    from ..language.math import if_then_else

    return if_then_else


def _element(value) -> bool:
    """An element reference (`x[i, j]`, every index a point) of a data
    buffer."""
    return isinstance(value, BufferRef) and (value.buffer.scope in _DATA_SCOPES or
                                             value.buffer.scope.startswith("shared")) and \
        len(value.items) == value.buffer.ndim and \
        not any(isinstance(i, slice) for i in value.items) and not value.is_vector()


class _Return(Exception):
    def __init__(self, value):
        self.value = value


RUNTIME_IF = "runtime `if`"
LOOPS = ("loop", "`while` loop", "T.Parallel loop", "T.Pipelined loop", "T.Persistent loop")


def _is_alloc_call(node: ast.expr) -> bool:
    """Whether `node` is a call of a T.alloc_* function (`T.alloc_var(...)`,
    `alloc_local(...)`)."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name.startswith("alloc_")


class _Stale:
    """A name rebound inside a runtime `if` or a loop that bound it outside,
    as read after that statement: TileLang binds such an assignment for the
    rest of the branch or trip only (TVMScript scoping) and reads the value
    from before the statement afterwards, which a program meaning the
    branch's value would get wrong without a word; reading it is an error
    here."""

    def __init__(self, name: str, node: ast.AST, what: str):
        self.name, self.node, self.what = name, node, what


class Scope:
    """A block of the program. Loop and runtime-`if` bodies are barriers: a
    runtime `if` may rebind a name bound outside for the rest of its branch
    (TileLang's scoping), a loop only where its body has not read the name
    before (the IR is SSA: a value that changes across iterations lives in a
    T.alloc_var); after the statement the name cannot be read (_Stale)."""

    def __init__(self, parent: Optional["Scope"], barrier: bool = False, what: str = ""):
        self.parent = parent
        self.vars: Dict[str, Any] = {}
        self.barrier = barrier
        self.what = what
        # names this block rebinds for itself (they are stale after the
        # runtime `if` around it), and those of the `if` bodies it holds
        # (made stale when that `if` statement ends)
        self.shadowed: Dict[str, ast.AST] = {}
        self.stale_after_if: Dict[str, ast.AST] = {}
        # names bound outside a loop that its body has read (it cannot
        # rebind them: the next trip would read the value from before the loop)
        self.outer_reads: set = set()

    @property
    def loop(self) -> bool:
        return self.barrier and self.what in LOOPS

    def lookup(self, name: str):
        scope = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name], scope
            scope = scope.parent
        raise KeyError(name)


class _LoopExits:
    """The `break` and `continue` flags of a loop (T.alloc_var bools, None
    where the body has no such statement)."""

    def __init__(self, brk, cont):
        self.brk, self.cont = brk, cont

    def live(self):
        """Whether the current trip goes on: neither flag is set."""
        flags = [f[()].load() for f in (self.brk, self.cont) if f is not None]
        live = unary("not", flags[0])
        for f in flags[1:]:
            live = logical("and", live, unary("not", f))
        return live


class Parser:
    """Walks one function (a prim_func or an inlined macro)."""

    def __init__(self, builder, source: FunctionSource, env: Dict[str, Any]):
        self.builder = builder
        self.source = source
        self.env = env  # the function's globals and closure values
        self.scope = Scope(None, what="function")

    # -- locations ---------------------------------------------------------------
    def location_of(self, node: ast.AST) -> SourceLocation:
        return self.source.location(node)

    @contextlib.contextmanager
    def at(self, node: ast.AST):
        """Sets the user's location for errors and for the ops created."""
        saved = self.builder.location
        loc = self.location_of(node)
        self.builder.location = loc
        try:
            with self.builder.ir_location(loc):
                yield
        except TileLangError as e:
            if e.location is None:
                raise relocated(e, loc) from None
            raise
        finally:
            self.builder.location = saved

    def error(self, node: ast.AST, message: str) -> TileLangError:
        return TileLangError(message, self.location_of(node))

    # -- scopes --------------------------------------------------------------------
    @contextlib.contextmanager
    def child_scope(self, barrier: bool, what: str):
        saved = self.scope
        self.scope = child = Scope(saved, barrier, what)
        try:
            yield self.scope
        finally:
            self.scope = saved
            if child.shadowed:
                if what == RUNTIME_IF:  # stale once the whole `if` ends
                    saved.stale_after_if.update(child.shadowed)
                elif child.barrier:
                    self._make_stale(child.shadowed, what)
                else:
                    saved.shadowed.update(child.shadowed)

    def end_runtime_if(self) -> None:
        """After a runtime `if`: the names its branches rebound for
        themselves cannot be read (_Stale)."""
        stale, self.scope.stale_after_if = self.scope.stale_after_if, {}
        self._make_stale(stale, RUNTIME_IF)

    def _make_stale(self, names: Dict[str, ast.AST], what: str) -> None:
        for name, node in names.items():
            try:
                _, owner = self.scope.lookup(name)
            except KeyError:
                continue
            self.scope.vars[name] = _Stale(name, node, what)
            if owner is not self.scope:  # bound further out: stale there too
                self.scope.shadowed[name] = node

    def stale_error(self, node: ast.AST, stale: _Stale) -> TileLangError:
        line = self.location_of(stale.node).line
        where = "its branch" if stale.what == RUNTIME_IF else "its trip"
        return self.error(node, f"{stale.name!r} is read after a {stale.what} that assigned it "
                                f"(line {line}) but was defined before it: TileLang binds that "
                                f"assignment for the rest of {where} only, so this would read "
                                f"the value from before the {stale.what}; to carry the value "
                                f"out, make it a variable: `{stale.name} = T.alloc_var(dtype)` "
                                f"before the {stale.what}")

    def lookup(self, node: ast.Name):
        name = node.id
        try:
            value, owner = self.scope.lookup(name)
            if isinstance(value, _Stale):
                raise self.stale_error(node, value)
            s = self.scope
            while s is not owner:  # read across loops: they cannot rebind it
                if s.loop:
                    s.outer_reads.add(name)
                s = s.parent
        except KeyError:
            if name in self.env:
                value = self.env[name]
            elif hasattr(builtins, name):
                value = getattr(builtins, name)
            else:
                raise self.error(node, f"name {name!r} is not defined") from None
        return self._resolve_symbol(value)

    def _resolve_symbol(self, value):
        from ..base.signature import SymbolicDim, SymExpr

        if isinstance(value, SymbolicDim):
            if value not in self.builder.symbols:
                raise TileLangError(f"symbolic size {value.name!r} does not appear in "
                                    "the shape of any tensor argument",
                                    self.builder.location)
            return self.builder.symbols[value]
        if isinstance(value, SymExpr):  # arithmetic on sizes done on the host
            return self.builder.symbolic_value(value)
        if isinstance(value, LetVar) and value.bound is not None:
            return value.bound
        return value

    # The parameters of an inlined macro passed by reference (T.Ref).
    references = frozenset()

    def bind(self, node: ast.AST, name: str, value) -> None:
        """`name = value`: stores into a var buffer (or, for a T.Ref
        parameter of a macro, the element it refers to), or binds a new
        name."""
        try:
            current, owner = self.scope.lookup(name)
        except KeyError:
            current, owner = None, None
        if name in self.references and isinstance(current, BufferRef) and owner is not None \
                and owner.parent is None:
            current.store(value)
            return
        if isinstance(current, Buffer) and current.scope == "var" and not isinstance(value, Buffer):
            current[()].store(value)
            return
        if isinstance(current, Buffer) and current.scope == "var" and \
                isinstance(value, Buffer) and value.scope == "var" and value is not current \
                and not getattr(self, "_allocates", False):
            # `top2 = top1`, both T.alloc_var: a copy of the value, as in
            # TileLang, where a var's name stands for its value
            # (deepseek-ai/TileKernels' top-2 scan, and its helpers that
            # return a var of their own into a var of the caller's); a
            # `x = T.alloc_var(...)` statement binds x to the new var.
            current[()].store(value[()].load())
            return
        if owner is not None and owner is not self.scope:
            # Crossing a loop or runtime-if barrier?
            # A runtime `if` binds it for the rest of the branch (TileLang's
            # scoping), and so does a loop whose body has not read it (each
            # trip sees its own value); a loop that read it meant the value
            # to carry from trip to trip.
            s, shadow = self.scope, False
            while s is not owner:
                if s.barrier and s.what == RUNTIME_IF:
                    # The branch's own binding: it never reaches the scopes
                    # around the `if` (a loop that read the outer value
                    # keeps reading it on later trips: TileOPs' Mamba scan).
                    shadow = True
                    break
                if s.barrier and is_runtime(value):
                    if not s.loop or name in s.outer_reads:
                        raise self.error(
                            node, f"variable {name!r} is assigned inside a {s.what} but was "
                            f"defined outside it; a value that changes at run time must live "
                            f"in a buffer: `{name} = T.alloc_var(dtype)`")
                    shadow = True
                s = s.parent
            if shadow:
                self.scope.vars[name] = value
                self.scope.shadowed[name] = node
                return
            if is_runtime(value):
                owner.vars[name] = value
                return
        self.scope.vars[name] = value

    # -- statements ----------------------------------------------------------------
    def visit_body(self, body: List[ast.stmt]) -> None:
        for stmt in body:
            with self.at(stmt):
                self.visit_stmt(stmt)

    def visit_stmt(self, node: ast.stmt) -> None:
        handler = getattr(self, "stmt_" + type(node).__name__, None)
        if handler is None:
            raise self.error(node, f"unsupported statement in a tile program: "
                                   f"{type(node).__name__}")
        handler(node)

    def stmt_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        kind = self._loop_exit(node)
        if kind == "break":
            self.stmt_Break(node)
            return
        if kind == "continue":
            self.stmt_Continue(node)
            return
        self.eval(node.value)

    def _loop_exit(self, node: ast.AST) -> Optional[str]:
        """"break" / "continue" for a statement that is a call of
        T.loop_break / T.break_loop / T.continue_loop (bare or inside
        T.evaluate), else None."""
        from ..language.loops import LOOP_EXITS
        from ..language.tir import evaluate

        if not isinstance(node, ast.Expr):
            return None
        call = node.value
        for _ in range(2):
            if not (isinstance(call, ast.Call) and isinstance(call.func, (ast.Name, ast.Attribute))):
                return None
            name = call.func.id if isinstance(call.func, ast.Name) else call.func.attr
            if name not in ("loop_break", "break_loop", "continue_loop", "evaluate"):
                return None
            try:
                fn = self.eval(call.func)
            except TileLangError:
                return None
            if fn is evaluate and len(call.args) == 1 and not call.keywords:
                call = call.args[0]
                continue
            if call.args or call.keywords:
                return None
            return LOOP_EXITS.get(fn)
        return None

    def stmt_Pass(self, node) -> None:
        pass

    def stmt_Assign(self, node: ast.Assign) -> None:
        value = self.eval(node.value)
        # `x = T.alloc_var(...)` written here makes a new var (the name is
        # bound to it); any other var on the right is a value (bind).
        self._allocates = _is_alloc_call(node.value)
        try:
            for target in node.targets:
                self.assign(target, value)
        finally:
            self._allocates = False

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise self.error(node, "a declaration without a value is not supported; "
                                   "use T.alloc_var(dtype)")
        from ..language.tir import unwrap_meta

        value = unwrap_meta(self.eval(node.value))
        ann = self.eval(node.annotation)
        try:
            dtype = dt.as_dtype(ann)
        except TypeError:
            dtype = None
        if dtype is not None:
            value = cast(value, dtype) if dtype.lanes > 1 or isinstance(
                value, Vector) else to_scalar(value, dtype)
        self.assign(node.target, value)

    def _read_now(self, value):
        """The value of an element reference read at this point of the
        program, remembered as read from it (TileLang's let and
        get_let_value); anything else (regions, buffers, vectors, a barrier
        `bars[i]`, Python values) as it is."""
        return self.builder.bind_element(value) if _element(value) else value

    def _names_a_var(self, target: ast.expr) -> bool:
        """Whether `target` is a name bound to a var buffer (T.alloc_var),
        which an assignment stores into."""
        if not isinstance(target, ast.Name):
            return False
        try:
            current, _ = self.scope.lookup(target.id)
        except KeyError:
            return False
        return isinstance(current, Buffer) and current.scope == "var"

    def assign(self, target: ast.expr, value) -> None:
        from ..language.loops import ThreadBinding
        from ..language.tir import unwrap_meta

        value = unwrap_meta(value)  # x = T.meta_var(v): x is v itself
        if isinstance(value, ThreadBinding):  # tx = T.thread_binding(...): its index
            value = value.index
        if isinstance(target, ast.Name):
            if isinstance(value, Buffer) and getattr(value, "unnamed", False):
                # `B_shared = T.alloc_shared(...)`: errors name it B_shared
                value.name = self.builder.unique_name(target.id)
                value.unnamed = False
            # `tmp = x[j]` binds the element's value now (TileLang's let),
            # not the element: `x[j] = x[i]; x[i] = tmp` swaps.
            self.bind(target, target.id, self._read_now(value))
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            if not isinstance(base, Buffer):
                raise self.error(target, f"cannot assign into {_describe(base)}")
            key = self.eval_subscript_key(target.slice)
            base[key].store(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if is_runtime(value) or not isinstance(value, (tuple, list)):
                raise self.error(target, f"cannot unpack {_describe(value)}")
            if len(value) != len(target.elts):
                raise self.error(target, f"cannot unpack {len(value)} values into "
                                         f"{len(target.elts)} names")
            # Python evaluates the whole right side before it assigns: an
            # element read (`A[0], A[1] = A[1], A[0]`) is read now, not after
            # an earlier target of the same statement has been stored.
            # A var (T.alloc_var) stored into by a target of the same
            # statement is read now too: `a, b = b, a` swaps their values.
            value = [self._read_now(v) for v in value]
            value = [v[()].load() if isinstance(v, Buffer) and v.scope == "var" and
                     (isinstance(t, ast.Subscript) or self._names_a_var(t)) else v
                     for t, v in zip(target.elts, value)]
            for t, v in zip(target.elts, value):
                self.assign(t, v)
        else:
            raise self.error(target, f"unsupported assignment target {type(target).__name__}")

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        op = _BINOPS[type(node.op)]
        if isinstance(node.target, ast.Subscript):
            base = self.eval(node.target.value)
            if not isinstance(base, Buffer):
                raise self.error(node.target, f"cannot assign into {_describe(base)}")
            ref = base[self.eval_subscript_key(node.target.slice)]
            ref.store(binary(op, ref.load(), self.eval(node.value)))
            return
        if isinstance(node.target, ast.Name):
            current = self.lookup(node.target)
            self.bind(node.target, node.target.id, binary(op, current, self.eval(node.value)))
            return
        raise self.error(node, "unsupported augmented assignment target")

    def stmt_Return(self, node: ast.Return) -> None:
        s = self.scope
        while s is not None:
            if s.barrier:
                raise self.error(node, f"`return` inside a {s.what} is not supported")
            s = s.parent
        raise _Return(None if node.value is None else self.eval(node.value))

    def stmt_Break(self, node) -> None:
        exits = self._innermost_exits(node, "break")
        exits.brk[()].store(True)

    def stmt_Continue(self, node) -> None:
        exits = self._innermost_exits(node, "continue")
        exits.cont[()].store(True)

    def _innermost_exits(self, node, what: str) -> "_LoopExits":
        if not self.exits or self.exits[-1] is None:
            raise self.error(node, f"`{what}` outside a sequential loop (T.serial, range, "
                                   "T.unroll, `while`, a loop over a list); a T.Parallel or "
                                   "T.Pipelined loop runs its iterations together and has no "
                                   f"`{what}`")
        return self.exits[-1]

    # -- break and continue -----------------------------------------------------
    # A sequential loop whose body may `break` or `continue` keeps a boolean
    # T.alloc_var flag for each: the loop still runs its trips, but every
    # statement after one that may set a flag runs only while neither is
    # set (`continue`'s flag is cleared at the start of each trip); a
    # `while` loop also stops at `break`.

    # The flags of the loops being walked (None: a loop without them, e.g. a
    # T.Parallel, which a `break` cannot leave).
    exits: list = []

    def _exit_kinds(self, body: List[ast.stmt]) -> set:
        """Which of "break" / "continue" the statements of a loop body may
        execute for this loop (not for loops nested in it)."""
        kinds = set()
        stack = list(body)
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Break) or self._loop_exit(n) == "break":
                kinds.add("break")
                continue
            if isinstance(n, ast.Continue) or self._loop_exit(n) == "continue":
                kinds.add("continue")
                continue
            if isinstance(n, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef,
                              ast.Lambda, ast.ClassDef)):
                continue
            stack.extend(c for c in ast.iter_child_nodes(n) if isinstance(c, ast.stmt))
        return kinds

    def _make_exits(self, node: ast.AST, body: List[ast.stmt]) -> Optional["_LoopExits"]:
        """The flags of a sequential loop whose body may break or continue
        (made before the loop), or None."""
        kinds = self._exit_kinds(body)
        if not kinds:
            return None
        if self.builder.kernel_depth == 0:
            raise self.error(node, "`break` / `continue` in a loop outside `with T.Kernel(...)`")
        flags = {}
        for kind in ("break", "continue"):
            if kind in kinds:
                flag = self.builder.alloc((), dt.boolean, "var", self.builder.unique_name(kind))
                flag[()].store(False)
                flags[kind] = flag
        return _LoopExits(flags.get("break"), flags.get("continue"))

    def visit_loop_body(self, body: List[ast.stmt], exits: Optional["_LoopExits"]) -> None:
        """One trip of a sequential loop's body."""
        self.exits = self.exits + [exits]
        try:
            if exits is None:
                self.visit_body(body)
                return
            if exits.cont is not None:
                exits.cont[()].store(False)
            self._while_live(exits, lambda: self._visit_split(body, exits))
        finally:
            self.exits = self.exits[:-1]

    def _visit_split(self, stmts: List[ast.stmt], exits: "_LoopExits") -> None:
        for k, stmt in enumerate(stmts):
            with self.at(stmt):
                self.visit_stmt(stmt)
            if isinstance(stmt, (ast.Break, ast.Continue)) or self._loop_exit(stmt):
                return  # the rest of this block is never reached
            rest = stmts[k + 1:]
            if rest and self._exit_kinds([stmt]):
                self._while_live(exits, lambda: self._visit_split(rest, exits))
                return

    def _while_live(self, exits: "_LoopExits", visit) -> None:
        """Runs `visit` under `if` neither flag is set."""
        from .. import ir
        from ..dialects import scf

        live = exits.live()
        if_op = scf.IfOp(to_scalar(live, dt.boolean).value, [], has_else=False)
        with ir.InsertionPoint(if_op.then_block), self.child_scope(True, "loop"):
            visit()
            scf.YieldOp([])

    def stmt_Assert(self, node: ast.Assert) -> None:
        cond = self.eval(node.test)
        if is_runtime(cond):
            raise self.error(node, "`assert` on a runtime value is not supported; use "
                                   "T.device_assert")
        if not cond:
            msg = self.eval(node.msg) if node.msg is not None else "assertion failed"
            raise self.error(node, str(msg))

    def stmt_FunctionDef(self, node) -> None:
        raise self.error(node, "nested function definitions are not supported in a tile "
                               "program; define a T.macro outside it")

    def eval_condition(self, node: ast.expr):
        """An `if`'s condition: `a == b` of tile values is the comparison."""
        cond = self.eval(node)
        return cond.value() if isinstance(cond, Equality) else cond

    def stmt_If(self, node: ast.If) -> None:
        cond = self.eval_condition(node.test)
        if not is_runtime(cond):
            # A compile-time condition picks a branch; its bindings stay visible.
            self.visit_body(node.body if cond else node.orelse)
            return
        if isinstance(cond, ThreadRange) and self.builder.role_range is None:
            self.role_if(node, cond, (0, self.builder.kernel_threads))
            return
        from ..dialects import scf

        c = to_scalar(cond, dt.boolean)
        if_op = scf.IfOp(c.value, [], has_else=bool(node.orelse))
        from .. import ir

        with ir.InsertionPoint(if_op.then_block), self.child_scope(True, RUNTIME_IF):
            self.visit_body(node.body)
            scf.YieldOp([])
        if node.orelse:
            with ir.InsertionPoint(if_op.else_block), self.child_scope(True, RUNTIME_IF):
                self.visit_body(node.orelse)
                scf.YieldOp([])
        self.end_runtime_if()

    def role_if(self, node: ast.If, cond, avail) -> None:
        """`if` on a thread range: its threads (of `avail`, those the branches
        before left) run the body as a role; the others run the `else` as
        one, an `elif` on a thread range splits them further."""
        lo, hi = max(cond.lo, avail[0]), min(cond.hi, avail[1])
        if lo >= hi:
            raise self.error(node.test, f"no thread of [{avail[0]}, {avail[1]}) (the block's "
                                        "threads not taken by the branches before) satisfies "
                                        "this condition")
        with self.at(node), self.builder.role(lo, hi, "a branch on the thread index"), \
                self.child_scope(True, "role"):
            self.visit_body(node.body)
        if not node.orelse:
            return
        if lo == avail[0]:
            rest = (hi, avail[1])
        elif hi == avail[1]:
            rest = (avail[0], lo)
        else:
            raise self.error(node.test, f"the threads [{lo}, {hi}) of this branch split the "
                                        f"others ([{avail[0]}, {avail[1]})) in two; the `else` "
                                        "of a role must be one range of threads")
        if rest[0] >= rest[1]:
            raise self.error(node.orelse[0], "no thread is left for this branch")
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            elif_ = node.orelse[0]
            with self.at(elif_):
                test = self.eval_condition(elif_.test)
            if isinstance(test, ThreadRange):
                self.role_if(elif_, test, rest)
                return
        with self.at(node.orelse[0]), \
                self.builder.role(rest[0], rest[1], "the `else` of a branch on the thread index"), \
                self.child_scope(True, "role"):
            self.visit_body(node.orelse)

    def stmt_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.error(node, "`while ... else` is not supported")
        from .. import ir
        from ..dialects import scf

        exits = self._make_exits(node, node.body)
        op = scf.WhileOp([], [])
        before = op.before.blocks.append()
        after = op.after.blocks.append()
        with ir.InsertionPoint(before), self.child_scope(True, "`while` loop"):
            cond = self.eval_condition(node.test)
            if not is_runtime(cond) and not (exits is not None and exits.brk is not None):
                raise self.error(node.test, "a `while` condition must depend on runtime "
                                            "values (a constant condition never ends or "
                                            "never runs)")
            if exits is not None and exits.brk is not None:  # `break` ends the loop
                cond = logical("and", cond, unary("not", exits.brk[()].load()))
            scf.ConditionOp(to_scalar(cond, dt.boolean).value, [])
        with ir.InsertionPoint(after), self.child_scope(True, "`while` loop"):
            self.visit_loop_body(node.body, exits)
            scf.YieldOp([])

    def stmt_For(self, node: ast.For) -> None:
        from ..language import loops

        if node.orelse:
            raise self.error(node, "`for ... else` is not supported")
        if self.builder.kernel_depth == 0 and self._binding_call(node.iter) is not None:
            self.explicit_launch(node)
            return
        it = self.eval(node.iter)
        if isinstance(it, range):
            it = loops.serial(it.start, it.stop, it.step)
        if isinstance(it, loops.ParallelFor) and self.builder.parallel_depth:
            it = loops.serial(it.start, it.stop, 1)  # a thread's own loop in a T.Parallel body
        if isinstance(it, (loops.Parallel, loops.ParallelFor)):
            # A perfect nest of parallel loops is one T.Parallel over their
            # extents (TileLang's layout inference takes the nest whole).
            nest = [(node, it)]
            while len(nest[-1][0].body) == 1 and isinstance(nest[-1][0].body[0], ast.For):
                inner = nest[-1][0].body[0]
                bound = {n.id for f, _ in nest for n in ast.walk(f.target)
                         if isinstance(n, ast.Name)}
                call = inner.iter.func if isinstance(inner.iter, ast.Call) else None
                name = getattr(call, "attr", getattr(call, "id", None))
                if inner.orelse or name not in ("Parallel", "parallel") or any(
                        isinstance(n, ast.Name) and n.id in bound for n in ast.walk(inner.iter)):
                    break
                inner_it = self.eval(inner.iter)
                if not isinstance(inner_it, (loops.Parallel, loops.ParallelFor)):
                    break
                nest.append((inner, inner_it))
            extents = [e for _, p in nest for e in p.extents]
            width = next((p.coalesced_width for _, p in reversed(nest)
                          if isinstance(p, loops.Parallel)), None)
            layouts = [p.loop_layout for _, p in nest if p.loop_layout is not None]
            if layouts and (len(nest) > 1 or len(layouts) > 1):
                raise self.error(node, "T.Parallel(..., loop_layout=...) in a nest of parallel "
                                       "loops: give the layout on one T.Parallel over all the "
                                       "dimensions")
            with self.builder.parallel(extents, width,
                                       layouts[0] if layouts else None) as ivs, \
                    self.child_scope(True, "T.Parallel loop"):
                ivs = iter(ivs)
                for f, p in nest:
                    self.bind_loop_target(f.target, [
                        iv if loops.is_zero(s) else iv + s for s, iv in zip(p.starts, ivs)])
                self.visit_loop_body(nest[-1][0].body, None)
            return
        if isinstance(it, loops.Pipelined):
            with self.builder.pipelined(it.start, it.stop, it.num_stages, it.order,
                                        it.stage, it.group) as iv, \
                    self.child_scope(True, "T.Pipelined loop"):
                self.bind_loop_target(node.target, (iv,))
                self.visit_loop_body(node.body, None)
            return
        exits = self._make_exits(node, node.body)
        if isinstance(it, loops.Grid):
            if exits is not None:
                raise self.error(node, "`break` / `continue` in a T.grid loop nest (which loop "
                                       "would it leave?); write the loops one by one")
            with contextlib.ExitStack() as stack:
                ivs = tuple(stack.enter_context(self.builder.serial(0, e, 1))
                            for e in it.extents)
                stack.enter_context(self.child_scope(True, "loop"))
                self.bind_loop_target(node.target, ivs)
                self.visit_loop_body(node.body, None)
            return
        if isinstance(it, loops.Persistent):
            if exits is not None:
                raise self.error(node, "`break` / `continue` in a T.Persistent loop")
            with self.builder.persistent(it.domain, it.wave_size, it.index) as coords, \
                    self.child_scope(True, "T.Persistent loop"):
                self.bind_loop_target(node.target, coords)
                self.visit_loop_body(node.body, None)
            return
        if isinstance(it, loops.Serial) and it.annotation == "tile.unroll":
            # T.unroll over constant bounds: unrolled here, so that the index
            # is a compile-time integer in the body (`clear_accum=(j == 0)`,
            # static slices `X[:, j * 64:(j + 1) * 64]`).
            bounds = [IndexExpr.lift(x) for x in (it.start, it.stop, it.step)]
            if all(x is not None and x.is_const() for x in bounds):
                trips = range(*(x.const for x in bounds))
                if len(trips) <= MAX_UNROLL:
                    for j in trips:
                        self.assign(node.target, j)
                        self.visit_loop_body(node.body, exits)
                    return
        if isinstance(it, loops.Serial) and it.annotation == "tile.vectorize" and \
                getattr(self.builder, "async_scope", False):
            self.async_copies(node, it)
            return
        if isinstance(it, loops.Serial):
            with self.builder.serial(it.start, it.stop, it.step, it.annotation) as iv, \
                    self.child_scope(True, "loop"):
                self.bind_loop_target(node.target, (iv,))
                self.visit_loop_body(node.body, exits)
            return
        if is_runtime(it):
            raise self.error(node.iter, f"cannot iterate over {_describe(it)}")
        # Compile-time iteration (a list or tuple): the body is unrolled.
        try:
            items = list(it)
        except TypeError:
            raise self.error(node.iter, f"cannot iterate over {_describe(it)}") from None
        for item in items:
            self.assign(node.target, item)
            self.visit_loop_body(node.body, exits)

    def _binding_call(self, expr: ast.expr) -> Optional[tuple]:
        """(thread tag, extent) of `T.thread_binding(start, stop, thread=...)`
        when `expr` is such a call, else None; its arguments are evaluated."""
        from ..language import loops

        if self._callee(expr) is not loops.thread_binding:
            return None
        names = ("start", "stop", "thread", "annotations")
        args = dict(zip(names, (self.eval(a) for a in expr.args)))
        args.update((k.arg, self.eval(k.value)) for k in expr.keywords)
        start, stop = args.get("start", 0), args.get("stop")
        if stop is None:
            start, stop = 0, start
        if not loops.is_zero(start):
            raise self.error(expr, "T.thread_binding outside T.Kernel (TVM's explicit launch) "
                                   "starts at 0; the launch's indices run from 0")
        return args.get("thread", ""), stop

    def explicit_launch(self, node: ast.For) -> None:
        """TVM's explicit launch, outside `with T.Kernel`: loops
        `for bx in T.thread_binding(n, thread="blockIdx.x")` (and
        threadIdx.*) are the launch's dimensions, and every statement of the
        body runs on every thread of every block. The kernel opened here has
        the grid of the blockIdx loops and the threads of the threadIdx loops
        anywhere in this loop nest; inside it each such loop reads the
        kernel's own index (as T.Kernel's body does)."""
        extents: Dict[str, Any] = {}
        for n in ast.walk(node):
            if not isinstance(n, ast.For):
                continue
            try:
                bound = self._binding_call(n.iter)
            except (TileLangError, NameError) as e:
                raise self.error(n.iter, "T.thread_binding outside T.Kernel (TVM's explicit "
                                         "launch): its extent must be known when the kernel "
                                         f"opens ({e})") from None
            if bound is None:
                continue
            tag, extent = bound
            if tag not in {f"{k}.{a}" for k in ("blockIdx", "threadIdx") for a in "xyz"}:
                raise self.error(n.iter, f"T.thread_binding(thread={tag!r}): the launch's "
                                         "dimensions are blockIdx.x/y/z and threadIdx.x/y/z")
            have = extents.setdefault(tag, extent)
            same = have is extent or (isinstance(have, int) and have == extent) or (
                isinstance(have, IndexExpr) and have.same(IndexExpr.lift(extent)))
            if not same:
                raise self.error(n.iter, f"T.thread_binding(thread={tag!r}): launched with "
                                         f"{have} and with {extent}; a launch dimension has "
                                         "one extent")
        grid = [extents.get(f"blockIdx.{a}", 1) for a in "xyz"]
        threads = [extents.get(f"threadIdx.{a}", 1) for a in "xyz"]
        for dims in (grid, threads):
            while len(dims) > 1 and isinstance(dims[-1], int) and dims[-1] == 1:
                dims.pop()
        with self.builder.kernel(grid, threads, None), self.child_scope(False, "kernel"):
            self.stmt_For(node)

    def async_copies(self, node: ast.For, it) -> None:
        """A T.vectorized loop inside `T.attr(..., "async_scope", 1)`: each
        of its statements `S[..., f(v)] = G[..., g(v)]` (shared from global,
        consecutive in v on both sides) is one cp.async of the loop's
        elements by the executing thread, as TVM's InjectPTXAsyncCopy."""
        what = "a T.vectorized loop in T.attr(..., 'async_scope', 1)"
        bounds = [IndexExpr.lift(x) for x in (it.start, it.stop, it.step)]
        if not all(x is not None and x.is_const() for x in bounds) or bounds[2].const != 1:
            raise self.error(node.iter, f"{what} needs constant bounds and step 1")
        n = bounds[1].const - bounds[0].const
        if not isinstance(node.target, ast.Name) or node.orelse:
            raise self.error(node, f"{what} binds one name")
        for stmt in node.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and
                    isinstance(stmt.targets[0], ast.Subscript) and
                    isinstance(stmt.value, ast.Subscript)):
                raise self.error(stmt, f"{what} holds element copies `S[...] = G[...]` (from a "
                                       "global tensor into shared memory) only; they are "
                                       "issued as cp.async")

            v = node.target.id

            def uses(e):
                return any(isinstance(x, ast.Name) and x.id == v for x in ast.walk(e))

            def plus_v(e):  # `... + v` (v once, added)
                if isinstance(e, ast.Name):
                    return e.id == v
                if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
                    return (plus_v(e.left) and not uses(e.right)) or \
                        (plus_v(e.right) and not uses(e.left))
                return False

            for side, sub in (("destination", stmt.targets[0]), ("source", stmt.value)):
                idx = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
                if any(uses(e) for e in idx[:-1]) or not plus_v(idx[-1]):
                    raise self.error(sub, f"{what}: the {side}'s last index must add the loop's "
                                          f"variable {v!r} (consecutive elements), the others "
                                          "not use it")
            with self.child_scope(False, "scope"):
                self.scope.vars[v] = IndexExpr(bounds[0].const)
                dst, src = self.eval(stmt.targets[0]), self.eval(stmt.value)
            for ref, side in ((dst, "destination"), (src, "source")):
                if not isinstance(ref, BufferRef):
                    raise self.error(stmt, f"{what}: the {side} is not a buffer element")
            with self.at(stmt):
                self.builder.cp_async(self.builder.access_ptr(dst, "w"),
                                      self.builder.access_ptr(src, "r"), n)

    def bind_loop_target(self, target: ast.expr, ivs) -> None:
        if isinstance(target, ast.Name):
            if len(ivs) == 1:
                self.scope.vars[target.id] = ivs[0]
            else:
                self.scope.vars[target.id] = tuple(ivs)
            return
        if isinstance(target, (ast.Tuple, ast.List)) and all(
                isinstance(e, ast.Name) for e in target.elts):
            if len(target.elts) != len(ivs):
                raise self.error(target, f"the loop has {len(ivs)} induction variables "
                                         f"but {len(target.elts)} names are given")
            for e, iv in zip(target.elts, ivs):
                self.scope.vars[e.id] = iv
            return
        raise self.error(target, "loop variables must be names")

    def stmt_With(self, node: ast.With) -> None:
        from ..language.kernel import KernelLaunch
        from ..language.roles import WarpgroupRole

        if self.tir_frame(node):
            return
        if len(node.items) != 1:
            raise self.error(node, "`with` takes one T.Kernel(...) or T.ws(...)")
        item = node.items[0]
        ctx = self.eval(item.context_expr)
        if hasattr(ctx, "__tile_scope__"):  # a scope of the language (T.attr's reduce scope)
            if item.optional_vars is not None:
                raise self.error(item.optional_vars, f"`with {ctx!r}` binds no name")
            with ctx.__tile_scope__(self.builder), self.child_scope(False, "scope"):
                self.visit_body(node.body)
            return
        if isinstance(ctx, WarpgroupRole):
            if item.optional_vars is not None:
                raise self.error(item.optional_vars, "`with T.ws(...)` binds no name")
            lo, hi = self.builder.warpgroup_range(ctx.ids)
            if self.builder.role_range == (lo, hi):
                # inside a branch on exactly these threads (`if tx >= 128:
                # with T.ws(1):`): the role is already open
                with self.child_scope(True, "role"):
                    self.visit_body(node.body)
                return
            with self.builder.role(lo, hi, f"T.ws{tuple(ctx.ids)}"), \
                    self.child_scope(True, "role"):
                self.visit_body(node.body)
            return
        if not isinstance(ctx, KernelLaunch):
            raise self.error(item.context_expr, "only `with T.Kernel(...)` and `with T.ws(...)` "
                                                "are supported in a tile program")
        with self.builder.kernel(ctx.grid, ctx.thread_dims, ctx.cluster) as indices, \
                self.child_scope(False, "kernel"):
            if item.optional_vars is not None:
                self.bind_loop_target(item.optional_vars, indices)
            self.visit_body(node.body)

    def _callee(self, expr: ast.expr):
        """What `expr` calls, when it is a call whose callee evaluates (only
        the callee is evaluated); None otherwise."""
        if not isinstance(expr, ast.Call):
            return None
        try:
            return self.eval(expr.func)
        except TileLangError:
            return None

    def _frame_of(self, item: ast.withitem):
        """The TIR frame class (T.If, T.Then, T.Else, T.While) a `with` item
        calls, or None; only the callee is evaluated."""
        from ..language import tir

        fn = self._callee(item.context_expr)
        if isinstance(fn, type) and issubclass(fn, tir._Frame):
            if item.optional_vars is not None:
                raise self.error(item.optional_vars, f"`with T.{fn.name}(...)` binds no name")
            return fn
        return None

    def _frame_condition(self, call: ast.Call, name: str) -> ast.expr:
        args = [a for a in call.args]
        kwargs = [k for k in call.keywords if k.arg != "span"]
        if len(args) != 1 or kwargs:
            raise self.error(call, f"T.{name} takes one condition")
        return args[0]

    def tir_frame(self, node: ast.With) -> bool:
        """TVM's builder frames (language/tir.py: _Frame) as the `if` and
        `while` statements they stand for; False for any other `with`."""
        from ..language import tir

        frames = [self._frame_of(item) for item in node.items]
        if not any(frames):
            return False
        first = node.items[0].context_expr
        if frames[0] in (tir.Then, tir.Else):
            raise self.error(first, f"`with T.{frames[0].name}()` goes directly inside "
                                    "`with T.If(...)`")
        if frames[0] is tir.While:
            if len(frames) != 1:
                raise self.error(node, "`with T.While(...)` stands alone in its `with`")
            loop = ast.While(test=self._frame_condition(first, "While"), body=node.body,
                             orelse=[])
            self.stmt_While(ast.copy_location(loop, node))
            return True
        if frames[0] is not tir.If:
            raise self.error(node, "`with` takes one T.Kernel(...) or T.ws(...)")
        test = self._frame_condition(first, "If")
        if frames[1:] == [tir.Then]:  # with T.If(c), T.Then(): body
            body, orelse = node.body, []
        elif len(frames) == 1:
            body = orelse = None
            for stmt in node.body:
                if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and
                                                  isinstance(stmt.value, ast.Constant)):
                    continue
                kind = (self._frame_of(stmt.items[0]) if isinstance(stmt, ast.With) and
                        len(stmt.items) == 1 else None)
                if kind is tir.Then and body is None and orelse is None:
                    body = stmt.body
                elif kind is tir.Else and body is not None and orelse is None:
                    orelse = stmt.body
                else:
                    raise self.error(stmt, "the body of `with T.If(...)` is `with T.Then():` "
                                           "and, after it, `with T.Else():`")
            if body is None:
                raise self.error(node, "`with T.If(...)` has no `with T.Then():`")
            orelse = orelse or []
        else:
            raise self.error(node, "`with T.If(...)` is alone in its `with` or followed by "
                                   "T.Then()")
        self.stmt_If(ast.copy_location(ast.If(test=test, body=body, orelse=orelse), node))
        return True

    # -- expressions ------------------------------------------------------------------
    def eval(self, node: ast.expr):
        handler = getattr(self, "expr_" + type(node).__name__, None)
        if handler is None:
            return self.eval_python(node)
        return handler(node)

    def eval_python(self, node: ast.expr):
        """Evaluates an expression with no runtime values as plain Python
        (comprehensions, lambdas, ...)."""
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        local_env = {}
        for name in names:
            try:
                value, _ = self.scope.lookup(name)
            except KeyError:
                continue
            if isinstance(value, _Stale):
                raise self.stale_error(node, value)
            if is_runtime(value):
                raise self.error(node, f"unsupported expression "
                                       f"({type(node).__name__}) on runtime value {name!r}")
            local_env[name] = value
        code = compile(ast.Expression(body=node), self.source.filename, "eval")
        # The program's names go with the globals: a comprehension or
        # generator has a scope of its own, which sees globals but not the
        # locals of eval (`sum(s // b for s in sizes)` must see b).
        scope = dict(self.env)
        scope.update(local_env)
        try:
            return eval(code, scope)  # noqa: S307 (user code)
        except TileLangError:
            raise
        except Exception as e:
            raise self.error(node, f"{type(e).__name__}: {e}") from None

    def expr_Constant(self, node: ast.Constant):
        return node.value

    def expr_Name(self, node: ast.Name):
        return self.lookup(node)

    def expr_Attribute(self, node: ast.Attribute):
        base = self.eval(node.value)
        try:
            return self._resolve_symbol(getattr(base, node.attr))
        except AttributeError as e:
            if str(e).startswith("not supported by tilelang-mlir"):
                # a refused or missing name of an API this package serves
                # (tilelang_mlir.compat): its own reason, at this line
                raise self.error(node, str(e)) from None
            raise self.error(node, f"{_describe(base)} has no attribute {node.attr!r}") from None

    def expr_Tuple(self, node: ast.Tuple):
        return tuple(self.eval(e) for e in node.elts)

    def expr_List(self, node: ast.List):
        return [self.eval(e) for e in node.elts]

    def expr_Dict(self, node: ast.Dict):
        if any(k is None for k in node.keys):
            raise self.error(node, "`**` in a dict is not supported")
        return {self.eval(k): self.eval(v) for k, v in zip(node.keys, node.values)}

    def expr_BinOp(self, node: ast.BinOp):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"unsupported operator {type(node.op).__name__}")
        return binary(op, self.eval(node.left), self.eval(node.right))

    def expr_UnaryOp(self, node: ast.UnaryOp):
        v = self.eval(node.operand)
        op = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not"}[type(node.op)]
        return unary(op, v)

    def expr_Compare(self, node: ast.Compare):
        left = self.eval(node.left)
        result = None
        for op_node, right_node in zip(node.ops, node.comparators):
            op = _CMPOPS.get(type(op_node))
            right = self.eval(right_node)
            if op is None:
                if is_runtime(left) or is_runtime(right):
                    raise self.error(node, f"unsupported comparison "
                                           f"{type(op_node).__name__} on runtime values")
                fn = {ast.Is: operator.is_, ast.IsNot: operator.is_not,
                      ast.In: lambda a, b: a in b,
                      ast.NotIn: lambda a, b: a not in b}[type(op_node)]
                c = fn(left, right)
            else:
                c = compare(op, left, right)
            result = c if result is None else self._and(result, c)
            left = right
        return result

    @staticmethod
    def _and(a, b):
        if not is_runtime(a):
            return b if a else a
        if not is_runtime(b):
            return a if b else b
        return logical("and", a, b)

    def expr_BoolOp(self, node: ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        result = self.eval(node.values[0])
        for v_node in node.values[1:]:
            if not is_runtime(result):
                # Python short-circuit on compile-time values.
                if is_and and not result:
                    return result
                if not is_and and result:
                    return result
                result = self.eval(v_node)
                continue
            v = self.eval(v_node)
            if not is_runtime(v):
                if is_and and not v:
                    return False
                if not is_and and v:
                    return True
                continue
            result = logical("and" if is_and else "or", result, v)
        return result

    def expr_IfExp(self, node: ast.IfExp):
        cond = self.eval(node.test)
        if not is_runtime(cond):
            return self.eval(node.body if cond else node.orelse)
        then_value, else_value = self._sides(cond, node.body, node.orelse)
        return select(cond, then_value, else_value)

    def _sides(self, cond, then_node: ast.expr, else_node: ast.expr):
        """The two sides of `cond ? a : b`, each evaluated as the side that
        is taken only where it is (TVM's if_then_else, Python's `a if c else
        b`): their shared-memory reads are guarded by the condition (see
        Builder.load_guard)."""
        from ..language.values import Vector, logical

        b = self.builder
        outer = b.load_guard
        if isinstance(cond, Vector):  # lane by lane: both sides read
            return self.eval(then_node), self.eval(else_node)
        c = to_scalar(cond, dt.boolean)
        sides = []
        for guard, n in ((c, then_node), (unary("not", c), else_node)):
            b.load_guard = guard if outer is None else logical("and", outer, guard)
            try:
                v = self.eval(n)
                if _element(v):
                    v = v.load()  # read here, under the guard
                sides.append(v)
            finally:
                b.load_guard = outer
        return sides

    def expr_Subscript(self, node: ast.Subscript):
        base = self.eval(node.value)
        key = self.eval_subscript_key(node.slice)
        if isinstance(base, Buffer):
            return base[key]
        if is_runtime(key):
            raise self.error(node, f"cannot index {_describe(base)} with a runtime value")
        try:
            return base[key]
        except Exception as e:
            raise self.error(node, f"{type(e).__name__}: {e}") from None

    def eval_subscript_key(self, node: ast.expr):
        if isinstance(node, ast.Tuple):
            return tuple(self.eval_subscript_item(e) for e in node.elts)
        return self.eval_subscript_item(node)

    def eval_subscript_item(self, node: ast.expr):
        if isinstance(node, ast.Slice):
            return slice(None if node.lower is None else self.eval(node.lower),
                         None if node.upper is None else self.eval(node.upper),
                         None if node.step is None else self.eval(node.step))
        return self.eval(node)

    def expr_Call(self, node: ast.Call):
        with self.at(node):
            fn = self.eval(node.func)
            if fn is _if_then_else() and len(node.args) == 3 and not node.keywords:
                cond = self.eval(node.args[0])
                if is_runtime(cond):  # each side read only where it is taken
                    return select(cond, *self._sides(cond, node.args[1], node.args[2]))
            args = []
            for a in node.args:
                if isinstance(a, ast.Starred):
                    args.extend(self.eval(a.value))
                else:
                    args.append(self.eval(a))
            kwargs = {}
            for kw in node.keywords:
                if kw.arg is None:
                    kwargs.update(self.eval(kw.value))
                else:
                    kwargs[kw.arg] = self.eval(kw.value)
            return self.call(node, fn, args, kwargs)

    def call(self, node: ast.Call, fn, args, kwargs):
        from ..language import math as tmath
        from .function import BoundMacro, Macro

        if isinstance(fn, Macro):
            return self.inline_macro(node, fn, args, kwargs)
        if inspect.ismethod(fn) and getattr(fn.__func__, "__tile_inline__", False):
            # A T.inline / T.meta_class method: a macro with `self` bound.
            return self.inline_macro(node, BoundMacro(_method_macro(fn.__func__), fn.__self__),
                                     args, kwargs)
        runtime = any(is_runtime(a) for a in args) or any(
            is_runtime(v) for v in kwargs.values())
        # Python builtins on runtime values map to the tile math functions.
        if runtime and fn in (builtins.max, builtins.min, builtins.abs):
            fn = {builtins.max: tmath.max, builtins.min: tmath.min,
                  builtins.abs: tmath.abs}[fn]
        if runtime and fn is builtins.range:  # TileLang's `range` is T.serial
            from ..language import loops

            return loops.serial(*args, **kwargs)
        if runtime and fn in (builtins.int, builtins.float, builtins.bool):
            target = {builtins.int: dt.int32, builtins.float: dt.float32,
                      builtins.bool: dt.boolean}[fn]
            return to_scalar(args[0], target)
        try:
            return fn(*args, **kwargs)
        except TileLangError:
            raise
        except TypeError as e:
            if getattr(fn, "__tile_builtin__", False):
                raise self.error(node, f"{_name(fn)}: {e}") from None
            raise self.error(node, f"{type(e).__name__} in call to {_name(fn)}: {e}") from None
        except Exception as e:
            raise self.error(node, f"{type(e).__name__} in call to {_name(fn)}: {e}") from None

    def inline_macro(self, node: ast.Call, macro, args, kwargs):
        import inspect

        from .function import BoundMacro

        if isinstance(macro, BoundMacro):
            args = [macro.bound_self] + list(args)
        try:
            bound = inspect.signature(macro.fn).bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"macro {macro.name}: {e}") from None
        bound.apply_defaults()
        refs = macro.reference_params()
        source = macro.source()
        sub = Parser(self.builder, source, macro.env())
        for name, value in bound.arguments.items():
            if name in refs and not (isinstance(value, BufferRef) or (
                    isinstance(value, Buffer) and value.scope == "var")):
                raise self.error(node, f"macro {macro.name}: argument {name!r} is annotated "
                                       f"T.Ref (passed by reference), so it must be a "
                                       f"T.alloc_var variable or a buffer element such as "
                                       f"A[i], got {_describe(value)}")
            sub.scope.vars[name] = value
        sub.references = refs
        try:
            sub.visit_body(source.body)
        except _Return as r:
            return r.value
        return None


def _method_macro(fn):
    """The Macro of a T.inline method (made once, kept on the function)."""
    from .function import Macro

    found = fn.__dict__.get("__tile_macro__")
    if found is None:
        found = fn.__tile_macro__ = Macro(fn)
    return found


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def run_function(parser: Parser, body: List[ast.stmt]) -> None:
    """Walks a prim_func body; a bare `return` ends it."""
    state.push(parser.builder)
    try:
        parser.visit_body(body)
    except _Return as r:
        if r.value is not None:
            raise TileLangError("a T.prim_func cannot return a value; write results "
                                "into an output tensor", parser.builder.location) from None
    finally:
        state.pop()
