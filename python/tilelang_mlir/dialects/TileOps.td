//===- TileOps.td - Python bindings of the tile dialect ----*- tablegen -*-===//
//
// Wrapper that tells declare_mlir_dialect_python_bindings where to put
// _tile_ops_gen.py.
//
//===----------------------------------------------------------------------===//

#ifndef PYTHON_BINDINGS_TILE_OPS
#define PYTHON_BINDINGS_TILE_OPS

include "dialects/Tile/IR/TileOps.td"

#endif
