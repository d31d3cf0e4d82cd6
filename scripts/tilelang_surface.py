#!/usr/bin/env python3
"""TileLang's public surface, read statically from a pinned checkout, and
where tilelang-mlir stands on each name.

    # refresh the list of names (needs a TileLang checkout with its tags)
    python scripts/tilelang_surface.py extract --tilelang /tmp/tilelang \
        --tvm /tmp/tilelang-wheel/tilelang/3rdparty/tvm/python \
        --wheel /tmp/tilelang-wheel/tilelang
    # our side of every listed name; the table in docs/compat.md
    python scripts/tilelang_surface.py report --md docs/compat.md

`extract` never imports TileLang or TVM: it walks the modules' source
(`ast`), follows `from X import *` and `__all__` through the packages
(evaluating the list-building statements of a module with no imports and
only pure builtins), and reads class bodies for the members of
`PassConfigKey`, `JITKernel`, the object `@tilelang.jit` returns
(`JITImpl`), `Profiler`, `AutoTuner` and the `env` settings object. The
`tilelang.language` names that come from TVM's TIR script parser are read
from TVM's Python package (`--tvm`). It writes the names (names only, no
TileLang text) to python/tilelang_mlir/compat/surface.json, with every
module path of each release (`--releases`, git tags of the checkout, plus
the unpacked wheel of `--wheel`), so that the compat route can be checked
against all of them.

`report` runs `python -m tilelang_mlir.compat.surface` (our side: each name
is implemented, refused with a reason from compat/refusals.py, or pending
in compat/pending.py) and writes the table between the markers
`<!-- surface:begin -->` and `<!-- surface:end -->` of the markdown file.
test/python/compat/test_compat_surface.py checks the same without a checkout.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import json
import os
import subprocess
import sys
from typing import Dict, List, Optional, Set

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SURFACE_JSON = os.path.join(ROOT, "python", "tilelang_mlir", "compat", "surface.json")

# The releases whose module paths the compat route is checked against (tags
# of tile-ai/tilelang; v0.1.14 and v0.1.15 are not tagged in the checkout:
# the 0.1.15 wheel stands for them).
RELEASES = ["v0.1.6.post1", "v0.1.7", "v0.1.8", "v0.1.9", "v0.1.10", "v0.1.11", "v0.1.12",
            "v0.1.13"]

# The module surfaces: name of the surface -> the module whose public names
# it lists. A module that the pin no longer has is read at the newest
# release that has it (`_newest_with`).
MODULE_SURFACES = ["tilelang", "tilelang.language", "tilelang.profiler", "tilelang.testing",
                   "tilelang.utils", "tilelang.carver", "tilelang.layout", "tilelang.intrinsics",
                   "tilelang.tools", "tilelang.math", "tilelang.autotuner", "tilelang.jit",
                   "tilelang.cache", "tilelang.env"]

# The class surfaces: surface name -> (module, class) whose public members
# it lists.
CLASS_SURFACES = {
    "tilelang.PassConfigKey": ("tilelang.transform.pass_config", "PassConfigKey"),
    "tilelang.JITKernel": ("tilelang.jit.kernel", "JITKernel"),
    "tilelang.jit()": ("tilelang.jit", "JITImpl"),
    "tilelang.Profiler": ("tilelang.profiler", "Profiler"),
    "tilelang.autotuner.AutoTuner": ("tilelang.autotuner.tuner", "AutoTuner"),
    "tilelang.env.env": ("tilelang.env", "Environment"),
}


# ---------------------------------------------------------------------------
# reading sources: a git ref of a checkout, or a plain folder
# ---------------------------------------------------------------------------


class Tree:
    """The Python files of one version of a package root (the folder that
    holds `tilelang/` or `tvm/`)."""

    def __init__(self, root: str, ref: Optional[str] = None):
        self.root, self.ref = root, ref
        self._files: Optional[Set[str]] = None

    def files(self) -> Set[str]:
        if self._files is None:
            if self.ref:
                out = subprocess.run(["git", "-C", self.root, "ls-tree", "-r", "--name-only",
                                      self.ref], capture_output=True, text=True, check=True)
                self._files = {f for f in out.stdout.splitlines() if f.endswith(".py")}
            else:
                found = set()
                for d, _, names in os.walk(self.root):
                    for n in names:
                        if n.endswith(".py"):
                            found.add(os.path.relpath(os.path.join(d, n), self.root))
                self._files = found
        return self._files

    def read(self, rel: str) -> str:
        if self.ref:
            return subprocess.run(["git", "-C", self.root, "show", f"{self.ref}:{rel}"],
                                  capture_output=True, text=True, check=True).stdout
        with open(os.path.join(self.root, rel)) as f:
            return f.read()

    def module_file(self, module: str) -> Optional[str]:
        base = module.replace(".", "/")
        for rel in (base + "/__init__.py", base + ".py"):
            if rel in self.files():
                return rel
        return None

    def modules(self, top: str) -> List[str]:
        """Every module path under the package `top`."""
        out = set()
        for rel in self.files():
            if not rel.startswith(top + "/") or "/3rdparty/" in rel or "/_" in rel.replace(
                    "/__init__.py", ""):
                continue
            mod = rel[:-3].replace("/", ".")
            if mod.endswith(".__init__"):
                mod = mod[:-len(".__init__")]
            out.add(mod)
        return sorted(out)


# ---------------------------------------------------------------------------
# a static evaluator of module top levels
# ---------------------------------------------------------------------------


class Opaque:
    """A value the evaluator does not compute (a function, a TVM object, a
    module it does not read): any use of it fails the statement."""

    def __init__(self, what: str):
        self.what = what

    def __repr__(self):
        return f"<opaque {self.what}>"


_PURE_BUILTINS = {n: getattr(builtins, n)
                  for n in ("tuple", "list", "dict", "set", "frozenset", "sorted", "len", "range",
                            "str", "int", "enumerate", "zip", "reversed", "any", "all", "min",
                            "max", "isinstance", "bool", "float", "map", "filter", "True",
                            "False", "None", "NotImplemented", "Exception", "ImportError",
                            "AttributeError", "ValueError", "TypeError", "KeyError", "object")}


class _LinuxSys:
    platform = "linux"
    version_info = (3, 12, 0)


class ModuleRef:
    """`import X as m`: m.__all__ and m.NAME read module X."""

    def __init__(self, reader: "Reader", name: str):
        self._reader, self._name = reader, name

    def __getattr__(self, attr):
        if attr.startswith("__") and attr != "__all__":
            raise AttributeError(attr)
        if attr == "__all__":
            return list(self._reader.exports(self._name))
        return self._reader.value(self._name, attr)


class Reader:
    """Exports of modules of TileLang (and TVM) read from source trees."""

    def __init__(self, trees: Dict[str, Tree]):
        self.trees = trees  # top package -> Tree
        self._env: Dict[str, dict] = {}
        self._stack: List[str] = []
        # Per module, the names its imports bind from outside TileLang
        # (stdlib, typing, torch, ...): not part of its surface when it has
        # no __all__. TileLang's top-level package re-exports TVM on purpose
        # (`tilelang.tvm`, `tilelang.DataType`): those count.
        self._foreign: Dict[str, Set[str]] = {}
        self._tainted: Set[str] = set()
        self.warnings: List[str] = []

    def tree(self, module: str) -> Optional[Tree]:
        return self.trees.get(module.split(".")[0])

    def exists(self, module: str) -> bool:
        t = self.tree(module)
        return t is not None and t.module_file(module) is not None

    def parse(self, module: str) -> Optional[ast.Module]:
        t = self.tree(module)
        rel = t.module_file(module) if t else None
        if rel is None:
            return None
        return ast.parse(t.read(rel))

    def is_package(self, module: str) -> bool:
        t = self.tree(module)
        return bool(t and (t.module_file(module) or "").endswith("__init__.py"))

    def env(self, module: str) -> dict:
        """The module's top-level namespace as far as it can be computed."""
        if module in self._env:
            return self._env[module]
        if module in self._stack:
            # An import cycle: the modules imported since `module` began see
            # it unfinished, so their namespaces are not kept (they are read
            # again when asked for outside the cycle).
            self._tainted.update(self._stack[self._stack.index(module) + 1:])
            return {}
        tree = self.parse(module)
        if tree is None:
            return {}
        self._stack.append(module)
        env: dict = {"__name__": module, "__builtins__": _PURE_BUILTINS}
        try:
            self._run(module, tree.body, env)
        finally:
            self._stack.pop()
        self._env[module] = env
        if not self._stack:
            self._settle()
        return env

    def _settle(self) -> None:
        """Reads the modules that saw an unfinished module (an import cycle)
        again, now that the modules of the cycle are read, until nothing
        changes."""
        for _ in range(4):
            redo, self._tainted = sorted(self._tainted), set()
            if not redo:
                return
            before = {m: _shape(self._env.get(m, {})) for m in redo}
            for m in redo:
                self._env.pop(m, None)
            for m in redo:
                self._stack.append(m)
                try:
                    env = {"__name__": m, "__builtins__": _PURE_BUILTINS}
                    self._run(m, self.parse(m).body, env)
                finally:
                    self._stack.pop()
                self._env[m] = env
            if all(_shape(self._env[m]) == before[m] for m in redo):
                return

    def exports(self, module: str) -> List[str]:
        """What `from module import *` binds."""
        env = self.env(module)
        names = env.get("__all__")
        if isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names):
            return list(dict.fromkeys(names))
        foreign = self._foreign.get(module, set())
        return [n for n in env if not n.startswith("_") and n not in foreign]

    def value(self, module: str, name: str):
        env = self.env(module)
        if name in env:
            return env[name]
        sub = f"{module}.{name}"
        if self.exists(sub):
            return ModuleRef(self, sub)
        return Opaque(f"{module}.{name}")

    def _absolute(self, module: str, level: int, target: Optional[str]) -> str:
        if level == 0:
            return target or ""
        pkg = module if self.is_package(module) else module.rpartition(".")[0]
        for _ in range(level - 1):
            pkg = pkg.rpartition(".")[0]
        return f"{pkg}.{target}" if target else pkg

    def _bind_import(self, module: str, node, env: dict) -> None:
        own = {"tilelang", "tvm"} if module == "tilelang" else {"tilelang"}
        foreign = self._foreign.setdefault(module, set())
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] not in own:
                    foreign.add(a.asname or a.name.split(".")[0])
                if a.name == "sys":
                    # Platform branches are read as on Linux.
                    env[a.asname or "sys"] = _LinuxSys()
                    continue
                if a.asname:
                    env[a.asname] = ModuleRef(self, a.name) if self.tree(a.name) else \
                        Opaque(a.name)
                else:
                    top = a.name.split(".")[0]
                    env[top] = ModuleRef(self, top) if self.tree(top) else Opaque(top)
            return
        src = self._absolute(module, node.level, node.module)
        known = self.tree(src) is not None
        if src.split(".")[0] not in own and src != "__future__":
            foreign.update(a.asname or a.name for a in node.names if a.name != "*")
        if src == "__future__":
            foreign.update(a.name for a in node.names)
        for a in node.names:
            if a.name == "*":
                if not known:
                    # Third-party packages (tvm_ffi, ...) are not read.
                    continue
                for n in self.exports(src):
                    env[n] = self.value(src, n)
                continue
            env[a.asname or a.name] = self.value(src, a.name) if known else \
                Opaque(f"{src}.{a.name}")

    def _run(self, module: str, body, env: dict) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self._bind_import(module, node, env)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                env[node.name] = Opaque(f"{module}.{node.name}")
            elif isinstance(node, ast.If):
                try:
                    test = eval(compile(ast.Expression(node.test), module, "eval"), env)
                    if isinstance(test, Opaque):
                        raise TypeError
                    self._run(module, node.body if test else node.orelse, env)
                except Exception:
                    self._run(module, node.body, env)
                    self._run(module, node.orelse, env)
            elif isinstance(node, ast.Try):
                self._run(module, node.body, env)
                self._run(module, node.orelse, env)
                for h in node.handlers:
                    before = set(env)
                    scratch = dict(env)
                    self._run(module, h.body, scratch)
                    for n in set(scratch) - before:
                        env[n] = scratch[n]
                self._run(module, node.finalbody, env)
            elif isinstance(node, ast.With):
                self._run(module, node.body, env)
            else:
                self._exec(module, node, env)

    def _exec(self, module: str, node, env: dict) -> None:
        try:
            exec(compile(ast.Module([node], []), module, "exec"), env)
        except Exception:
            for target in _assigned(node):
                env.setdefault(target, Opaque(f"{module}.{target}"))


def _shape(env: dict):
    """What of a namespace can change between readings: which names are
    bound to values that were computed."""
    return {k: not isinstance(v, Opaque) for k, v in env.items()}


def _assigned(node) -> List[str]:
    targets = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    names = []
    for t in targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Name):
                names.append(n.id)
    return names


# ---------------------------------------------------------------------------
# class members
# ---------------------------------------------------------------------------


def _find_class(reader: Reader, module: str, cls: str, depth: int = 0):
    """(module, ClassDef) where `cls` is defined, following imports."""
    tree = reader.parse(module)
    if tree is None or depth > 6:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return module, node
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                if (a.asname or a.name) == cls:
                    src = reader._absolute(module, node.level, node.module)
                    return _find_class(reader, src, a.name, depth + 1)
    return None


def class_members(reader: Reader, module: str, cls: str) -> List[str]:
    """Public members of a class: methods, properties, class attributes and
    annotations, enum members, `self.X = ...` of its methods, and those of
    its bases defined in the same source trees."""
    found = _find_class(reader, module, cls)
    if found is None:
        raise SystemExit(f"class {cls} not found from {module}")
    where, node = found
    names: List[str] = []
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(item.name)
            for sub in ast.walk(item):
                if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store) and \
                        isinstance(sub.value, ast.Name) and sub.value.id == "self":
                    names.append(sub.attr)
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            names.extend(_assigned(item))
    for base in node.bases:
        if isinstance(base, ast.Subscript):
            base = base.value
        if isinstance(base, ast.Name) and base.id not in ("Generic", "object", "str", "Enum",
                                                           "IntEnum"):
            try:
                names.extend(class_members(reader, where, base.id))
            except SystemExit:
                pass
    return sorted({n for n in names if not n.startswith("_")})


# ---------------------------------------------------------------------------
# extract
# ---------------------------------------------------------------------------


def _newest_with(trees: List[tuple], module: str):
    """(label, reader) of the newest tree that has `module`."""
    for label, reader in trees:
        if reader.exists(module):
            return label, reader
    return None, None


def extract(args) -> dict:
    tvm = Tree(args.tvm) if args.tvm else None

    def reader_for(tl_tree: Tree) -> Reader:
        trees = {"tilelang": tl_tree}
        if tvm is not None:
            trees["tvm"] = tvm
        return Reader(trees)

    pin = reader_for(Tree(args.tilelang, args.ref))
    releases = [(tag, reader_for(Tree(args.tilelang, tag))) for tag in args.releases]
    if args.wheel:
        releases.append(("0.1.15-wheel", reader_for(Tree(os.path.dirname(args.wheel)))))
    # Newest first, the pin first of all.
    ordered = [(args.ref, pin)] + list(reversed(releases))

    surfaces = {}
    for mod in MODULE_SURFACES:
        label, reader = _newest_with(ordered, mod)
        if reader is None:
            raise SystemExit(f"no version has module {mod}")
        names = reader.exports(mod)
        if "__all__" in reader.env(mod) and not isinstance(reader.env(mod)["__all__"],
                                                           (list, tuple)):
            raise SystemExit(f"{mod}: its __all__ could not be computed statically")
        surfaces[mod] = {"kind": "module", "read_at": label, "names": sorted(set(names))}
    for name, (mod, cls) in CLASS_SURFACES.items():
        label, reader = _newest_with(ordered, mod)
        surfaces[name] = {"kind": "class", "read_at": label,
                          "names": class_members(reader, mod, cls)}
    # PassConfigKey: the members of every release (programs pin older ones).
    keys = set(surfaces["tilelang.PassConfigKey"]["names"])
    older = {}
    for label, reader in releases:
        mod = "tilelang.transform.pass_config"
        if reader.exists(mod):
            for k in class_members(reader, mod, "PassConfigKey"):
                if k not in keys:
                    older.setdefault(k, label)
    surfaces["tilelang.PassConfigKey"]["names"] = sorted(keys | set(older))
    surfaces["tilelang.PassConfigKey"]["older_releases_only"] = dict(sorted(older.items()))

    modules: Dict[str, List[str]] = {}
    for label, reader in ordered:
        for m in reader.trees["tilelang"].modules("tilelang"):
            modules.setdefault(m, []).append(label)
    for w in sorted(set(pin.warnings)):
        print("warning:", w, file=sys.stderr)
    return {
        "tilelang_commit": args.ref,
        "tvm": args.tvm_label,
        "releases": [label for label, _ in ordered],
        "surfaces": surfaces,
        "modules": dict(sorted(modules.items())),
    }


# ---------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------


def our_side() -> dict:
    out = subprocess.run([sys.executable, "-m", "tilelang_mlir.compat.surface", "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"tilelang_mlir.compat.surface failed:\n{out.stderr}")
    return json.loads(out.stdout)


def write_markdown(result: dict, path: str) -> None:
    import re

    from tilelang_mlir.compat.surface import markdown

    body = "<!-- surface:begin -->\n" + markdown(result) + "\n<!-- surface:end -->"
    text = open(path).read() if os.path.exists(path) else "# TileLang compatibility\n"
    if "<!-- surface:begin -->" in text:
        text = re.sub(r"<!-- surface:begin -->.*<!-- surface:end -->", lambda _: body, text,
                      flags=re.S)
    else:
        text = text.rstrip() + "\n\n" + body + "\n"
    with open(path, "w") as f:
        f.write(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("extract", help="read the names from a TileLang checkout")
    ex.add_argument("--tilelang", required=True, help="a git checkout of tile-ai/tilelang")
    ex.add_argument("--ref", default="a35008a42", help="the pinned commit (default a35008a42)")
    ex.add_argument("--releases", nargs="*", default=RELEASES,
                    help="release tags whose module paths and pass configs are listed too")
    ex.add_argument("--wheel", help="an unpacked TileLang wheel's tilelang/ folder (a release "
                                    "newer than the tags)")
    ex.add_argument("--tvm", help="TVM's python/ folder (the TIR script parser's names)")
    ex.add_argument("--tvm-label", default="TVM python package bundled with the TileLang "
                                           "0.1.15 wheel",
                    help="how the report names the TVM that --tvm points at")
    ex.add_argument("--out", default=SURFACE_JSON)
    rp = sub.add_parser("report", help="our side of every name")
    rp.add_argument("--md", help="write the table into this markdown file")
    rp.add_argument("--json", help="write our side as JSON here")
    args = ap.parse_args()
    if args.cmd == "extract":
        data = extract(args)
        with open(args.out, "w") as f:
            json.dump(data, f, indent=1, sort_keys=False)
            f.write("\n")
        counts = ", ".join(f"{k} {len(v['names'])}" for k, v in data["surfaces"].items())
        print(f"wrote {args.out}: {counts}; {len(data['modules'])} module paths")
        return 0
    result = our_side()
    from tilelang_mlir.compat.surface import summary_lines

    for line in summary_lines(result):
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if args.md:
        write_markdown(result, args.md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
