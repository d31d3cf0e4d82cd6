"""`tvm` (and `tilelang.tvm`) for TileLang programs that import TVM only
for the few names they use: `tvm.DataType`, `tvm.tir` / `tvm.tirx` (`const`,
the `PrimExpr` / `IntImm` / `FloatImm` / `Var` checks), `tvm.target.Target`,
`tvm.transform.PassContext` (its `config`, which compiles inside it use),
`tvm.TVMError`, `tvm.error` and `tvm.testing` (the test markers, as
`tilelang.testing`'s).

`tilelang.tvm` is always this module under the compat route; the top-level
name `tvm` is served only where no real TVM can be imported (or with
`install(force=True)`), as `tilelang` is. The rest of TVM (its IR, passes,
runtime, TE, Relax, ...) is out of scope: importing it raises an
ImportError saying so (compat/refusals.py)."""

from __future__ import annotations

import importlib

from ..base.version import __version__  # noqa: F401
from .dtypes import DataType  # noqa: F401
from .tvm_error import TVMError  # noqa: F401

# A package to the import system: `tvm.target` ... are served by the finder.
__path__: list = []

_SUBMODULES = {"tir": "tvm_tir", "tirx": "tvm_tir", "target": "target",
               "transform": "tvm_transform", "error": "tvm_error", "testing": "testing"}


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__package__}.{_SUBMODULES[name]}")
    from .refused_module import TVM_PACKAGES

    if name in TVM_PACKAGES:  # out of scope, refused at the use of its names
        return importlib.import_module(f"tilelang.tvm.{name}")
    from .refusals import module_reason, refusal

    raise AttributeError(refusal(f"tvm.{name}", module_reason(f"tvm.{name}")))
