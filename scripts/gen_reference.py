"""Writes the documentation's generated reference pages (MyST Markdown).

    python scripts/gen_reference.py OUT_DIR

- `language.md`: every public name of `tilelang_mlir.language` (the `T`
  namespace), grouped by the module that defines it, from its docstring;
  the dtypes as one table.
- `host.md`: the host API (`tl.compile`, `tl.jit`, `tl.autotune`, the
  kernel object, the profiler, `tl.load`, ...) from docstrings.
- `pass_configs.md`: every pass config from its record in
  `tilelang_mlir.compiler.pass_config` (the one definition `tl.compile`
  validates against).
- `dialect.md`, `passes.md`: the dialect and pass reference mlir-tblgen
  writes from ODS into docs/generated/ (`make docs` refreshes it first),
  with their headings fitted to the site.

`make docs` runs it (docs/conf.py); test/python/language/test_docs_reference.py runs
it and checks that every public `T.*` name is there with a docstring.
Docstrings are rendered as Markdown inside Sphinx Python-domain directives.
"""

from __future__ import annotations

import argparse
import enum
import inspect
import os
import types
from collections import OrderedDict
from typing import Callable, Iterable, List, Tuple

# The T namespace's sections, in reading order: defining module -> title.
# A module not listed here (a new one) gets a section at the end, titled by
# its name, so no public name is left out.
LANGUAGE_SECTIONS = OrderedDict([
    ("tilelang_mlir.frontend.prim_func", "Tile programs"),
    ("tilelang_mlir.frontend.function", "Tile programs"),
    ("tilelang_mlir.language.eager", "Tile programs"),
    ("tilelang_mlir.language.types", "Tensor parameters"),
    ("tilelang_mlir.language.kernel", "Kernels and the grid"),
    ("tilelang_mlir.language.allocate", "Allocation"),
    ("tilelang_mlir.language.copy", "Data movement"),
    ("tilelang_mlir.language.gemm", "Matrix multiplication"),
    ("tilelang_mlir.language.loops", "Loops"),
    ("tilelang_mlir.language.reduce", "Reductions"),
    ("tilelang_mlir.language.math", "Element-wise math"),
    ("tilelang_mlir.language.values", "Element-wise math"),
    ("tilelang_mlir.language.layout", "Layouts"),
    ("tilelang_mlir.language.annotations", "Annotations, printing and assertions"),
    ("tilelang_mlir.language.roles", "Warp specialization: roles, barriers, asynchronous copies"),
    ("tilelang_mlir.language.distributed", "Across GPUs"),
    ("tilelang_mlir.language.dtypes", "Data types"),
    ("tilelang_mlir.base.dtypes", "Data types"),
    ("tilelang_mlir.language.tir", "TVM script names"),
])


def language_names() -> List[Tuple[str, object]]:
    """Every public name of the T namespace and its object (submodules
    excluded), sorted."""
    import tilelang_mlir.language as T

    return [(n, getattr(T, n)) for n in sorted(dir(T))
            if not n.startswith("_") and not isinstance(getattr(T, n), types.ModuleType)]


def own_doc(obj) -> str:
    """The docstring written for `obj` itself ('' if it has none; a class
    does not inherit its base's)."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) and doc.strip() else ""


def is_dtype(obj) -> bool:
    from tilelang_mlir.base.dtypes import DType

    return isinstance(obj, DType)


def _default(value) -> str:
    if value is inspect.Parameter.empty:
        return ""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, (tuple, list)) and all(isinstance(v, (int, float, str)) for v in value):
        return repr(value)
    return "..."


def signature(obj, drop_builder: bool = False) -> str:
    """The call signature without annotations ('(...)' when Python cannot
    tell it). A T.* builtin's first parameter, the builder, is dropped."""
    target = obj.__init__ if inspect.isclass(obj) and "__init__" in obj.__dict__ else obj
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return "(...)"
    params = list(sig.parameters.values())
    if target is not obj or (inspect.isclass(obj) and params and params[0].name == "self"):
        params = params[1:]
    if drop_builder and params and params[0].name == "b":
        params = params[1:]
    out, star = [], False
    for p in params:
        if p.kind is p.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        if p.kind is p.VAR_POSITIONAL:
            out.append("*" + p.name)
            star = True
        elif p.kind is p.VAR_KEYWORD:
            out.append("**" + p.name)
        else:
            d = _default(p.default)
            out.append(p.name + (f"={d}" if d else ""))
    return "(" + ", ".join(out) + ")"


def _fence(body: str) -> str:
    """A backtick fence longer than any inside `body`."""
    n, run = 3, 0
    for ch in body + "\n":
        run = run + 1 if ch == "`" else 0
        n = max(n, run + 1)
    return "`" * n


def directive(kind: str, name: str, sig: str, doc: str, options: Iterable[str] = ()) -> str:
    body = doc or "(no docstring)"
    fence = _fence(body)
    head = f"{fence}{{py:{kind}}} {name}{sig}\n"
    return head + "".join(f":{o}:\n" for o in options) + "\n" + body + f"\n{fence}\n\n"


def describe(qualname: str, obj, drop_builder: bool = False, members: bool = True) -> str:
    """A directive for a function or class (and its public methods and
    properties)."""
    if inspect.isclass(obj):
        if issubclass(obj, enum.Enum):
            doc = own_doc(obj) + "\n\nMembers: " + ", ".join(
                f"`{m.name}`" for m in obj)
            return directive("class", qualname, "", doc)
        out = directive("class", qualname, signature(obj), own_doc(obj))
        if members:
            for name, member in obj.__dict__.items():
                # public members with a docstring (the class's own says the rest)
                if name.startswith("_") or not own_doc(getattr(member, "__func__", member)):
                    continue
                if isinstance(member, property):
                    out += directive("property", f"{qualname}.{name}", "", own_doc(member))
                elif inspect.isfunction(member) or isinstance(member, (staticmethod,
                                                                       classmethod)):
                    fn = member.__func__ if hasattr(member, "__func__") else member
                    out += directive("method", f"{qualname}.{name}", signature(fn)
                                     .replace("(self, ", "(").replace("(self)", "()"),
                                     own_doc(fn))
        return out
    return directive("function", qualname, signature(obj, drop_builder), own_doc(obj))


def language_page() -> str:
    names = language_names()
    sections: "OrderedDict[str, List[str]]" = OrderedDict((t, []) for t in
                                                          LANGUAGE_SECTIONS.values())
    seen = {}
    dtypes = []
    for name, obj in names:
        if is_dtype(obj):
            dtypes.append((name, obj))
            continue
        if id(obj) in seen:  # an alias: one entry says so
            text = directive("data", f"T.{name}", "", f"The same as `T.{seen[id(obj)]}`.")
        else:
            seen[id(obj)] = name
            text = describe(f"T.{name}", obj,
                            drop_builder=getattr(obj, "__tile_builtin__", False))
        module = getattr(obj, "__module__", "") or ""
        title = LANGUAGE_SECTIONS.get(module, f"More ({module})")
        sections.setdefault(title, []).append(text)
    out = ["# The `T` namespace\n\n",
           "`import tilelang_mlir.language as T`. Every public name, from its docstring "
           "(generated by `scripts/gen_reference.py`). Names and meanings follow TileLang's "
           "where TileLang has the name.\n\n"]
    for title, entries in sections.items():
        if title == "Data types":
            entries = entries + [dtype_table(dtypes)]
        if entries:
            out.append(f"## {title}\n\n")
            out.extend(entries)
    return "".join(out)


def dtype_table(dtypes) -> str:
    rows = ["Each is a `T.dtype` value; `T.Tensor(shape, T.float16)` and "
            "`T.Tensor(shape, \"float16\")` are the same.\n\n",
            "| name | dtype | MLIR type | bits |\n|---|---|---|---|\n"]
    for name, d in dtypes:
        rows.append(f"| `T.{name}` | `{d.name}` | `{d.mlir}` | {d.bits} |\n")
    return "".join(rows) + "\n"


def _module_section(title: str, module, names: Iterable[str], prefix: str) -> str:
    out = [f"## {title}\n\n"]
    doc = own_doc(module)
    if doc:
        out.append(directive("module", module.__name__, "", doc, ["no-index"]))
    for n in names:
        out.append(describe(f"{prefix}.{n}", getattr(module, n)))
    return "".join(out)


def host_page() -> str:
    import tilelang_mlir as tl
    from tilelang_mlir import distributed, library, models, ops, tools
    from tilelang_mlir.base import errors
    from tilelang_mlir.runtime import profiler

    out = ["# Host API\n\n",
           "`import tilelang_mlir as tl`: compiling, tuning, running and saving kernels, "
           "from docstrings (generated by `scripts/gen_reference.py`).\n\n",
           "## Compiling\n\n"]
    for n in ("compile", "jit"):
        out.append(describe(f"tl.{n}", getattr(tl, n)))
    out.append("## Autotuning\n\n")
    for n in ("autotune", "AutotuneResult", "AutotuneError"):
        out.append(describe(f"tl.{n}", getattr(tl, n)))
    out.append("## The kernel object\n\n")
    out.append(describe("tl.Kernel", tl.Kernel))
    out.append("## Ahead-of-time artifacts\n\n")
    out.append(describe("tl.load", tl.load))
    out.append("## The profiler\n\n")
    out.append(describe("Profiler", profiler.Profiler))
    out.append(describe("TensorSupplyType", profiler.TensorSupplyType))
    out.append("## Errors and warnings\n\n")
    for n in ("TileLangError", "CompilationError", "DeviceAssertionError"):
        out.append(describe(f"tl.{n}", getattr(errors, n), members=False))
    out.append(describe("tl.KernelCacheWarning", tl.KernelCacheWarning, members=False))
    out.append(_module_section("Developer tools (`tl.tools`)", tools,
                               ["plot_layout", "layout_text", "allocations",
                                "save_layout_plots", "trace_report", "read_trace"], "tl.tools"))
    out.append(_module_section("PyTorch operators (`tilelang_mlir.ops`)", ops,
                               _own_functions(ops), "tilelang_mlir.ops"))
    out.append(_module_section("Custom operators (`tl.library`)", library, ["custom_op"],
                               "tl.library"))
    out.append(_module_section("Models (`tilelang_mlir.models`)", models,
                               ["use_tilelang", "PagedCache", "CUDAGraphDecoder"],
                               "tilelang_mlir.models"))
    out.append(_module_section("Across GPUs (`tl.distributed`)", distributed,
                               ["empty", "simulate", "run_ranks", "SymmetricTensor"],
                               "tl.distributed"))
    return "".join(out)


def _own_functions(module) -> List[str]:
    return [n for n, o in sorted(vars(module).items())
            if not n.startswith("_") and inspect.isfunction(o)
            and o.__module__ == module.__name__]


def pass_config_page() -> str:
    from tilelang_mlir.compiler.compile import TILELANG_PASS_CONFIGS
    from tilelang_mlir.compiler.pass_config import PASS_CONFIGS

    out = ["# Pass configs\n\n",
           "`tl.compile(func, target=..., pass_configs={key: value})` (also `@tl.jit(pass_configs=)` "
           "and `@tl.autotune` configs). Rendered from the records in "
           "`python/tilelang_mlir/compiler/pass_config.py`, the one definition `tl.compile` "
           "validates against: an unknown key is a `ValueError` that lists the known ones, "
           "a value of the wrong type or range a `ValueError` naming the key.\n\n",
           "| key | type | default | accepted | where |\n|---|---|---|---|---|\n"]
    for name, r in PASS_CONFIGS.items():
        out.append(f"| [`{name}`](#{_anchor(name)}) | {r.type} | {r.default_words()} | "
                   f"{r.accepted()} | {r.targets} |\n")
    out.append("\n")
    for name, r in PASS_CONFIGS.items():
        out.append(f"({_anchor(name)})=\n## `{name}`\n\n{r.meaning}\n\n"
                   f"Type {r.type}; default {r.default_words()}; accepted: {r.accepted()}; "
                   f"effect on: {r.targets}.\n\n")
    out.append("## TileLang's keys\n\n"
               "TileLang's `PassConfigKey` values that are not ours, as `tl.compile` treats "
               "them (`compiler/compile.py`, `TILELANG_PASS_CONFIGS`):\n\n"
               "| key | here |\n|---|---|\n")
    for name, entry in TILELANG_PASS_CONFIGS.items():
        out.append(f"| `{name}` | {entry.words()} |\n")
    return "".join(out)


def _anchor(name: str) -> str:
    return "pass-config-" + name.replace(".", "-").replace("_", "-")


GENERATED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "docs", "generated")


def _ods(name: str, top: int) -> str:
    """docs/generated/NAME.md (mlir-tblgen's output, `make docs` refreshes
    it) with its headings moved so that the first is level `top`, without
    the generator's comment and `[TOC]` marker."""
    with open(os.path.join(GENERATED, name + ".md")) as f:
        lines = [l for l in f.read().splitlines()
                 if not l.startswith("<!-- Autogenerated") and l.strip() != "[TOC]"]
    levels = [len(l) - len(l.lstrip("#")) for l in lines if l.startswith("#") and
              l.lstrip("#").startswith(" ")]
    shift = top - min(levels) if levels else 0
    out, fenced = [], False
    for l in lines:
        if l.startswith("```"):
            fenced = not fenced
        if not fenced and l.startswith("#") and l.lstrip("#").startswith(" "):
            l = "#" * (len(l) - len(l.lstrip("#")) + shift) + l.lstrip("#")
        out.append(l)
    return "\n".join(out).strip() + "\n"


def dialect_page() -> str:
    return _ods("TileDialect", 1)


def passes_page() -> str:
    out = ["# Passes\n\n",
           "Every pass of `tile-opt` that this project defines, from its ODS description "
           "(`tile-opt --help` lists them with the upstream ones).\n\n"]
    for name, title in (("TileTransformPasses", "Tile-level passes"),
                        ("TileConversionPasses", "Conversions"),
                        ("TileNVVMTransformPasses", "NVVM peepholes")):
        out.append(f"## {title}\n\n" + _ods(name, 3) + "\n")
    return "".join(out)


PAGES: "OrderedDict[str, Callable[[], str]]" = OrderedDict([
    ("language.md", language_page),
    ("host.md", host_page),
    ("pass_configs.md", pass_config_page),
    ("dialect.md", dialect_page),
    ("passes.md", passes_page),
])


def write_pages(out_dir: str) -> List[str]:
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, page in PAGES.items():
        path = os.path.join(out_dir, name)
        text = page()
        old = open(path).read() if os.path.exists(path) else None
        if text != old:  # unchanged pages keep their time: Sphinx rebuilds less
            with open(path, "w") as f:
                f.write(text)
        written.append(path)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    args = ap.parse_args()
    for path in write_pages(args.out_dir):
        print(path)


if __name__ == "__main__":
    main()
