"""Compilation targets: defined in the bottom layer (`base/target.py`, with
the chip table `base/chips.py`) so that the runtime reads them without the
compiler; kept here for the code that imports them from this module."""

from ..base.target import CUDA_ARCHS, ROCM_ARCHS, Target, parse_target  # noqa: F401
