"""`tilelang.cuda`: TileLang's CUDA dialect package. Served here:
`tilelang.cuda.language` (the T namespace), `tilelang.cuda.intrinsics` (the
layout helpers, compat/intrinsics.py, and the sparse metadata facts) and
`tilelang.cuda.target`; TileLang's CUDA backend internals (codegen, pass
pipeline, intrinsic emitters over TVM IR) are not."""

from ._pkg import package_getattr

__getattr__ = package_getattr("tilelang.cuda")
