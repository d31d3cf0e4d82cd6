//===- tile-opt.cpp - tile dialect optimizer driver -----------------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/CAPI/Tile.h"

// The driver lives in the C API so that the Python package (which has no
// separate executable) runs the same code: `tile-opt` there calls
// tileOptMain through the `_tile` module.
int main(int argc, char **argv) { return tileOptMain(argc, argv); }
