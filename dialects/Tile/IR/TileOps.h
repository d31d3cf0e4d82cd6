//===- TileOps.h - tile dialect operations ----------------------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_IR_TILEOPS_H
#define TILE_IR_TILEOPS_H

#include "dialects/Tile/IR/TileDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/Tile/IR/TileOps.h.inc"

#endif // TILE_IR_TILEOPS_H
