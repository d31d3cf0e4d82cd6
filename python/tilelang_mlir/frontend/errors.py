"""Errors of tile programs (defined in the bottom layer, `base/errors.py`,
so that the runtime raises them without the frontend; kept here for the
code that imports them from this module)."""

from ..base.errors import (CompilationError, DeviceAssertionError, SourceLocation,  # noqa: F401
                           TileLangError)
