"""Thin packages of the compat route (`tilelang.cuda`, `tilelang.cpu`,
`tilelang.rocm`, `tilelang.backend`): an attribute is the submodule of that
name, as the compat finder serves it (or its refusal)."""

from __future__ import annotations

import importlib


def package_getattr(tl_name: str):
    def __getattr__(attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        try:
            return importlib.import_module(f"{tl_name}.{attr}")
        except ImportError as e:
            raise AttributeError(str(e)) from None

    return __getattr__
