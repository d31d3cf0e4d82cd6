"""Moving test data to and from the target of a kernel (see
tilelang_mlir.testing)."""

from tilelang_mlir.testing import to_device as put  # noqa: F401
from tilelang_mlir.testing import to_numpy as get  # noqa: F401
