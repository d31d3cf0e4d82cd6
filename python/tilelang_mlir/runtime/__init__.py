"""Runtime: launching compiled kernels (needs no MLIR for saved GPU kernels)."""
