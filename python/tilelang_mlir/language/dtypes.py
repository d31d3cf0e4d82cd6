"""Data types of tile programs: defined in the bottom layer
(`base/dtypes.py`), which the runtime imports without the language; kept
here for the code that imports them from this module."""

from ..base.dtypes import *  # noqa: F401,F403
from ..base.dtypes import (ALL, DType, as_dtype, boolean, from_numpy, index,  # noqa: F401
                           to_numpy, to_torch)
