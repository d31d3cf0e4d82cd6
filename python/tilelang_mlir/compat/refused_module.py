"""Modules of TileLang and TVM that are out of scope, imported without
failing: the refusal comes when a name of theirs is used.

A kernel library imports its modules eagerly: one `from tvm.tirx.stmt_functor
import ir_transform` at the top of an opt-in tracing module (used only when a
flag is on) ended the import of the whole library, and with it every kernel
that never touches TVM's IR. Such a module (a TileLang module path of some
release, compat/surface.json, whose reason is in compat/refusals.py; or one of
TVM's packages) imports as a `RefusedModule`: each of its names is a
`refused` placeholder that raises the module's refusal (NotSupportedByTileLangMLIR,
"... (out of scope: <rule>)") when it is called, instantiated, or used as a
decorator. A class may derive from one (its instances are refused the same
way); `isinstance(x, placeholder)` is False, as no value of this compiler is a
TVM IR node.

A name that no release has (a typo, `tilelang.utils.is_shared` asked for as a
module) still fails at the import, as with TileLang.
"""

from __future__ import annotations

import types
from typing import Dict, Optional

# TVM's packages (a name under `tvm.` that is not served): importing them
# defers the refusal. Below a served TVM module (tvm.tir, tvm.script, ...)
# only these submodules do, so that `from tvm.tir import missing_name` is
# refused at the import, with the name's own reason.
TVM_PACKAGES = frozenset({
    "arith", "auto_scheduler", "autotvm", "contrib", "dlight", "driver", "exec", "ffi",
    "instrument", "ir", "meta_schedule", "relax", "relay", "rpc", "runtime", "s_tir",
    "support", "te", "topi",
})
TVM_SUBMODULES = {
    "tir": frozenset({"analysis", "block_dependence_info", "block_scope", "buffer", "build",
                      "data_layout", "function", "functor", "generic", "ir_builder", "op",
                      "pipeline", "schedule", "stmt", "stmt_functor", "transform", "usmp"}),
    "script": frozenset({"parser", "printer", "tir", "ir", "highlight"}),
    "script.ir_builder": frozenset({"tir", "ir", "relax"}),
    "target": frozenset({"codegen", "datatype", "detect_target", "tag", "x86", "arm_cpu",
                         "virtual_device", "compilation_config"}),
    "transform": frozenset(),
}
TVM_SUBMODULES["tirx"] = TVM_SUBMODULES["tir"]


def _error(label: str, why: str):
    from . import NotSupportedByTileLangMLIR
    from .refusals import refusal

    return NotSupportedByTileLangMLIR(refusal(label, why), name=label)


class _RefusedMeta(type):
    """The type of a refused name: using it raises its refusal."""

    def __call__(cls, *args, **kwargs):
        raise _error(cls._tl_label, cls._tl_why)

    def __getattr__(cls, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return refused(f"{cls._tl_label}.{attr}", cls._tl_why)

    def __repr__(cls):
        return f"<refused by tilelang-mlir: {cls._tl_label}>"


def refused(label: str, why: str) -> type:
    """A placeholder for the out-of-scope name `label` (e.g.
    "tvm.tirx.stmt_functor.ir_transform"): a class whose call, instance,
    subclass instance or attribute's call raises the refusal `why`."""
    return _RefusedMeta(label.rpartition(".")[2] or label, (),
                        {"_tl_label": label, "_tl_why": why, "__module__": label.rpartition(".")[0]})


class RefusedModule(types.ModuleType):
    """An out-of-scope module: every name is a `refused` placeholder, except
    the few in `served` (e.g. `tvm.ir.PrimExpr`)."""

    def __init__(self, name: str, why: str, served: Optional[Dict[str, object]] = None):
        super().__init__(name, f"Out of scope for tilelang-mlir: {why}")
        self.__dict__["_tl_why"] = why
        self.__dict__["__path__"] = []  # a package: its submodules are refused the same way
        self.__dict__.update(served or {})

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return refused(f"{self.__name__}.{attr}", self._tl_why)


def served_names(name: str) -> Dict[str, object]:
    """The names a refused module still serves (TileLang programs check
    values against `tvm.ir.PrimExpr`)."""
    if name == "tvm.ir" or name == "tvm.ir.expr":
        from . import tvm_tir

        return {"PrimExpr": tvm_tir.PrimExpr}
    return {}


def deferred(name: str, known_modules, served_modules) -> bool:
    """Whether the unserved module path `name` imports as a RefusedModule:
    a TileLang module of some release (`known_modules`), or one of TVM's
    packages (by TVM_PACKAGES / TVM_SUBMODULES below the served
    `served_modules`)."""
    if name.startswith("tilelang.tvm."):
        name = name[len("tilelang."):]
    if name.startswith("tilelang."):
        return name in known_modules
    if not name.startswith("tvm."):
        return False
    parts = name.split(".")[1:]
    if parts[0] not in TVM_PACKAGES and ("tvm." + parts[0]) not in served_modules:
        return False
    if parts[0] in TVM_PACKAGES:
        return True
    # below a served TVM module: the first unserved component must be one of its packages
    for i in range(1, len(parts)):
        parent = ".".join(parts[:i])
        if "tvm." + ".".join(parts[:i + 1]) in served_modules:
            continue
        return parts[i] in TVM_SUBMODULES.get(parent, frozenset())
    return False
