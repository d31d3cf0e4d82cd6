"""`tvm.error` / `tvm.TVMError`: the errors TileLang programs catch from a
compile. This compiler raises `TileLangError` (and its subclasses) for a
program it cannot compile, so `tvm.TVMError` and the `tvm.error` classes are
that class: `except tvm.TVMError` catches what it would catch under
TileLang."""

from __future__ import annotations

from ..base.errors import TileLangError

TVMError = TileLangError
InternalError = TileLangError
DiagnosticError = TileLangError
TVMRuntimeError = TileLangError

__all__ = ["TVMError", "InternalError", "DiagnosticError", "TVMRuntimeError"]
