"""The bottom layer: what every other layer reads and nothing here needs
MLIR, the frontend or the compiler.

- `dtypes`: element types (`T.float16`, ...) and their NumPy/torch twins;
- `signature`: argument types (`T.Tensor`, `T.dynamic`) and `Param`;
- `chips`: one description of every chip (warp size, shared memory, PTX
  version, instruction families), read by every layer and printed for C++
  by cmake/gen_chip_table.py;
- `target`: compilation targets (`cuda:sm_90a`) over the chip table;
- `grid`: launch grids as expressions over sizes and scalar arguments;
- `artifact`: `CompiledArtifact`, the record the compiler hands the runtime;
- `errors`: the errors every layer raises.
"""
