"""`tilelang.contrib`: only `nvcc`'s compute-capability queries (see
contrib_nvcc.py); TVM's other contrib tools are out of scope."""

from . import contrib_nvcc as nvcc  # noqa: F401

__all__ = ["nvcc"]
