"""`tilelang.contrib`: only `nvcc`'s compute-capability queries (see
contrib_nvcc.py); TVM's other contrib tools are out of scope.

`tilelang.contrib.nvcc` is served through its module path (the compat
finder), not bound here: so the module a program reaches as
`tilelang.contrib.nvcc` always refuses TVM's nvcc internals with the reason
(`nvcc.compile_cuda`, `nvcc.env`), however it was first reached."""

__all__ = ["nvcc"]
