"""Running pass pipelines, with the lower trace and errors at the user's line.

Passes run one at a time so that a failure names the failing pass and keeps
its input IR. With tracing on (pass config `tl.trace_dir` or the environment
variable TILELANG_MLIR_TRACE=<dir>) the IR after every pass is written,
numbered, into that folder; the dumps of an earlier compile there are
removed first.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from ..base.errors import CompilationError, SourceLocation, TileLangError

_LOC_RE = re.compile(r'loc\("(?P<file>[^"]+)":(?P<line>\d+):(?P<col>\d+)')


def source_location(loc) -> Optional[SourceLocation]:
    """The Python source position of an MLIR location, if it has one."""
    m = _LOC_RE.search(str(loc))
    if not m:
        return None
    return SourceLocation(m.group("file"), int(m.group("line")), int(m.group("col")))


def _short(text: str, max_lines: int = 12) -> str:
    lines = text.splitlines()
    if len(lines) <= max_lines:
        return text
    return "\n".join(lines[:max_lines] + [f"... ({len(lines) - max_lines} more lines)"])


def _located(diag) -> str:
    """A diagnostic's message, after its source position when it has one."""
    loc = source_location(diag.location)
    return f"{loc}: {diag.message}" if loc else diag.message


def diagnostics_error(err, what: str, cls=TileLangError) -> TileLangError:
    """Turns an MLIRError into an error at the user's line."""
    diags = list(getattr(err, "error_diagnostics", []) or [])
    if not diags:
        return cls(f"{what}: {err}")
    first = diags[0]
    notes = [_short(_located(n)) for n in getattr(first, "notes", []) or []]
    notes += [_short(_located(d)) for d in diags[1:]]
    return cls(first.message, source_location(first.location), tuple(notes))


def warn_program(warned) -> None:
    """Warnings about the program (message, SourceLocation or None, notes)
    as Python warnings at its lines: a pass's, or those a cached kernel
    kept from its compile."""
    import warnings

    from ..base.errors import TileLangWarning

    for message, location, notes in warned:
        w = TileLangWarning(message, location, tuple(notes))
        if location is None:
            warnings.warn(w, stacklevel=3)
        else:  # reported at the program's line, once per line and message
            warnings.warn_explicit(w, TileLangWarning, location.filename, location.line)


def translate_to_llvmir(operation, context, what: str = "") -> str:
    """LLVM IR text of an LLVM-dialect `operation` (a module, a gpu.module);
    a failure raises CompilationError with the diagnostics MLIR emitted."""
    from .._mlir_libs import _tile

    messages = []

    def collect(diag):
        messages.append(f"{diag.location}: {diag.message}")
        return True

    handler = context.attach_diagnostic_handler(collect)
    try:
        return _tile.translate_to_llvmir(operation)
    except ValueError:
        of = f" of {what}" if what else ""
        raise CompilationError(f"translation{of} to LLVM IR failed", None,
                               tuple(messages)) from None
    finally:
        handler.detach()


@dataclass
class Stage:
    """A named group of passes; the IR after it is kept as `kernel.mlir(name)`."""

    name: str
    passes: Sequence[str]


def safe_access(pass_configs: Optional[dict]) -> List[str]:
    """TileLang's bounds-safe global element accesses (tile-legalize-safe-access),
    on every target unless `tl.disable_safe_memory_legalize` turns them off."""
    if (pass_configs or {}).get("tl.disable_safe_memory_legalize"):
        return []
    return ["func.func(tile-legalize-safe-access)", "canonicalize", "cse"]


def trace_dir(pass_configs: Optional[dict]) -> Optional[str]:
    d = (pass_configs or {}).get("tl.trace_dir") or os.environ.get("TILELANG_MLIR_TRACE")
    return d or None


class PipelineRunner:
    def __init__(self, trace: Optional[str] = None):
        self.trace = trace
        self.step = 0
        self.last_path: Optional[str] = None
        if trace:
            os.makedirs(trace, exist_ok=True)
            _clear_trace(trace)

    def dump(self, module, label: str) -> None:
        if not self.trace:
            return
        path = os.path.join(self.trace, f"{self.step:02d}-{label}.mlir")
        with open(path, "w") as f:
            f.write(str(module))
        self.last_path = path
        self.step += 1

    def run(self, module, stages: List[Stage]) -> Dict[str, str]:
        from .. import ir
        from ..passmanager import PassManager

        snapshots: Dict[str, str] = {}
        for stage in stages:
            for p in stage.passes:
                anchor = p if p.startswith("builtin.module(") else f"builtin.module({p})"
                pm = PassManager.parse(anchor)
                before = str(module) if not self.trace else None
                warned = []

                def collect(diag, warned=warned):
                    # A pass's warnings (errors go on to the MLIRError)
                    if diag.severity != ir.DiagnosticSeverity.WARNING:
                        return False
                    # (MLIR's own note "see current operation": the op, in IR)
                    notes = [_located(n) for n in diag.notes
                             if not n.message.startswith("see current operation")]
                    warned.append((diag.message, source_location(diag.location), tuple(notes)))
                    return True

                handler = module.context.attach_diagnostic_handler(collect)
                try:
                    pm.run(module.operation)
                except ir.MLIRError as e:
                    path = self._keep_input(before, module, p)
                    err = diagnostics_error(e, f"pass {p!r} failed", CompilationError)
                    raise CompilationError(
                        f"pass '{_flag(p)}' failed: {err.message}", err.location,
                        err.notes + (f"the input IR of the failing pass is in {path}",)
                    ) from None
                finally:
                    handler.detach()
                warn_program(warned)
                self.dump(module, _flag(p))
            snapshots[stage.name] = str(module)
        return snapshots

    def _keep_input(self, before: Optional[str], module, p: str) -> str:
        if self.trace and self.last_path:
            return self.last_path  # the numbered dump before this step
        fd, path = tempfile.mkstemp(prefix=f"tilelang-{_flag(p)}-input-", suffix=".mlir")
        with os.fdopen(fd, "w") as f:
            f.write(before if before is not None else str(module))
        return path


# The numbered dumps of a trace (tools/trace.py reads the same names).
_TRACE_FILE_RE = re.compile(r"^\d+-.+\.mlir$")


def _clear_trace(folder: str) -> None:
    """Removes the dumps of an earlier compile from a trace folder, so that
    it holds one compile's steps; other files stay."""
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if _TRACE_FILE_RE.match(name) and os.path.isfile(path):
            try:
                os.remove(path)
            except FileNotFoundError:  # another process cleared it first
                pass


def _flag(p: str) -> str:
    """The pass flag of a pipeline element ("func.func(canonicalize)" -> canonicalize)."""
    m = re.match(r"(?:[\w.]+\()?([\w-]+)", p)
    return m.group(1) if m else p
