//===- ThreadOpUtils.h - the arithmetic of atomics and warp reductions -*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// One meaning for each kind of tile.atomic_rmw and tile.warp_reduce, shared
// by the CPU lowering and the GPU lowerings (their compare-and-swap loops
// and shuffle steps).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UTILS_THREADOPUTILS_H
#define TILE_UTILS_THREADOPUTILS_H

#include "dialects/Tile/IR/TileOps.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace tile {

/// The element an atomic `kind` leaves where `old` was, given `value`:
/// max (min) takes `value` only when it is greater (smaller) than `old`
/// (a NaN never is: C++'s atomic fetch_max), integers compared unsigned
/// when `isUnsigned`.
Value atomicCombine(OpBuilder &b, Location loc, AtomicKind kind, Value old,
                    Value value, bool isUnsigned);

/// Whether applying the atomic `kind` twice with one value leaves what
/// applying it once does (max, min, and, or, exchange): the CPU then need
/// not repeat a block's update once per thread.
bool isIdempotent(AtomicKind kind);

/// `kind` of two lanes' values (float max/min ignore a NaN: fmaxf, as
/// TileLang's warp reductions do).
Value warpReduceCombine(OpBuilder &b, Location loc, WarpReduceKind kind,
                        Value x, Value y, bool isUnsigned);

/// The LLVM atomic ordering of a memory order (none or relaxed: monotonic;
/// consume: acquire).
LLVM::AtomicOrdering llvmOrdering(std::optional<MemoryOrder> order);

/// The row-major memref of `type` whose data start at the i64 address
/// `address` (tile.make_tensor), `sizes` its dynamic dimensions: an LLVM
/// memref descriptor cast to the memref type, which the memref lowering's
/// casts cancel.
Value memrefAtAddress(OpBuilder &b, Location loc, MemRefType type,
                      Value address, ValueRange sizes);

} // namespace tile
} // namespace mlir

#endif // TILE_UTILS_THREADOPUTILS_H
