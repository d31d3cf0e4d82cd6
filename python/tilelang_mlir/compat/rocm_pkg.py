"""`tilelang.rocm`: TileLang's ROCm dialect package; `tilelang.rocm.language`
is the T namespace and `tilelang.rocm.target` the target queries; TileLang's
MFMA/WMMA emitters over TVM IR are not served (T.gemm emits MFMA on rocm
targets)."""

from ._pkg import package_getattr

__getattr__ = package_getattr("tilelang.rocm")
