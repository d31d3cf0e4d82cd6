"""Errors of tile programs, pointing at the user's line."""

from __future__ import annotations

import linecache
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class SourceLocation:
    """A position in the user's Python source (1-based line and column)."""

    filename: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}"

    def snippet(self) -> str:
        """The source line with a caret under the column."""
        text = linecache.getline(self.filename, self.line).rstrip("\n")
        if not text:
            return ""
        return f"    {text}\n    {' ' * (self.col - 1)}^"


class TileLangError(Exception):
    """A tile program is wrong: the message says what, the location where."""

    #: True for an error TileLang raises when the program is defined (its
    #: `@T.prim_func` parses the body at once): the compat route builds a
    #: program when it is decorated and raises these there; every other
    #: error waits for the compile, where TileLang raises it.
    at_definition = False

    #: Set by the compat route: the location is repeated as TileLang's
    #: `--> file:line:col` line, which its tests and tools look for.
    arrow_line = False

    def __init__(self, message: str, location: Optional[SourceLocation] = None,
                 notes: tuple = ()):
        self.message = message
        self.location = location
        self.notes = tuple(notes)
        super().__init__(self._format())

    def _format(self) -> str:
        if self.location is None:
            head = f"error: {self.message}"
        else:
            head = f"{self.location}: error: {self.message}"
            snippet = self.location.snippet()
            if snippet:
                head += "\n" + snippet
            if TileLangError.arrow_line:
                head += f"\n  --> {self.location}"
        for note in self.notes:
            head += f"\n  note: {note}"
        return head


class TileLangValueError(TileLangError, ValueError):
    """A bad argument value that TileLang reports as a ValueError (a layout
    that aliases elements, ...): catchable as either."""


class TileLangTypeError(TileLangError, TypeError):
    """An operand of the wrong type where TileLang raises a TypeError (a
    float predicate of a warp vote, an integer operand of a fast-math
    function, ...): catchable as either."""


class TileLangIndexError(TileLangError, IndexError):
    """An index out of its range where TileLang raises an IndexError (a
    lane of T.extract_lane, ...): catchable as either."""


def relocated(e: TileLangError, location) -> TileLangError:
    """`e` at `location`, of the same class (a TileLangValueError stays
    catchable as a ValueError)."""
    try:
        out = type(e)(e.message, location, e.notes)
    except TypeError:
        out = TileLangError(e.message, location, e.notes)
    out.at_definition = e.at_definition
    return out


class TileLangAssertionError(TileLangError, AssertionError):
    """An invalid program that TileLang refuses with a failed `assert`
    (T.reshape to another element count, ...): catchable as either."""


class TileLangRuntimeError(TileLangError, RuntimeError):
    """A launch TileLang refuses at run time (a grid extent that is not
    positive, ...): catchable as either."""


_PYTHON_KINDS = {None: TileLangError, ValueError: TileLangValueError,
                 TypeError: TileLangTypeError, AssertionError: TileLangAssertionError,
                 RuntimeError: TileLangRuntimeError, IndexError: TileLangIndexError}


def program_error(message: str, location: Optional[SourceLocation] = None, notes: tuple = (),
                  kind: Optional[type] = None, at_definition: bool = False) -> TileLangError:
    """A TileLangError that is also the Python exception `kind` (ValueError,
    TypeError, AssertionError, RuntimeError or None), raised by TileLang when
    the program is defined where `at_definition` (see TileLangError)."""
    err = _PYTHON_KINDS[kind](message, location, notes)
    if at_definition:
        err.at_definition = True
    return err


class TileLangWarning(UserWarning):
    """A valid program whose result is not defined somewhere (a buffer read
    before anything writes it): the message says where, as an error's."""

    def __init__(self, message: str, location: Optional[SourceLocation] = None,
                 notes: tuple = ()):
        # (without a location: the text as given, which is also how a warning
        # rebuilt from its text, as pytest-xdist does, reads)
        head = f"{location}: warning: {message}" if location else message
        snippet = location.snippet() if location else ""
        if snippet:
            head += "\n" + snippet
        for note in notes:
            head += f"\n  note: {note}"
        super().__init__(head)
        self.message, self.location, self.notes = message, location, tuple(notes)


class CompilationError(TileLangError):
    """A compiler pass failed or the generated IR does not verify."""


class NoCUDADevice(RuntimeError):
    """A CUDA kernel was launched on a machine without a CUDA GPU."""


class DeviceAssertionError(AssertionError):
    """A `T.device_assert` failed while a kernel ran (the CPU backend raises
    it from the kernel call): the message, the user's file and line, the
    function and the block whose check failed."""

    def __init__(self, message: str, filename: str, line: int, function: str,
                 block: tuple):
        self.message = message
        self.location = SourceLocation(filename, line, 1)
        self.function = function
        self.block = tuple(block)
        text = (f"{filename}:{line}: {function}: block {self.block}: device assertion "
                f"failed: {message}")
        source = linecache.getline(filename, line).strip()
        if source and source != message:
            text += f"\n    {source}"
        super().__init__(text)
