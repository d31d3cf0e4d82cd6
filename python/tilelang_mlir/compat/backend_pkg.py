"""`tilelang.backend` (0.1.10 on): only `tilelang.backend.target` is served
(determine_target and the target registries, compat/target.py); TileLang's
backend registry over TVM is not."""

from ._pkg import package_getattr

__getattr__ = package_getattr("tilelang.backend")
