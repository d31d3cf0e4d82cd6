//===- SymmetricUtils.h - peer views, signals and waits ----------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// What every backend emits for tile.peer, tile.signal and tile.wait: the
// view of a peer's part of a symmetric buffer, the releasing update of a
// flag and the acquiring poll with a timeout. The backends add who runs
// them (one thread of the block on GPUs) and what a timeout does.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UTILS_SYMMETRICUTILS_H
#define TILE_UTILS_SYMMETRICUTILS_H

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace tile {

/// Rank `rank`'s part of the symmetric buffer `local` (a global memref
/// with the identity layout), given the peer table `peers` (i64 addresses
/// of every rank's part): `local` reinterpreted at the offset, in elements,
/// from its own address to `peers[rank]`. The result has `resultType`
/// (PeerOp::viewType).
Value emitPeerView(OpBuilder &b, Location loc, Value local, Value peers,
                   Value rank, MemRefType resultType);

/// Whether `rank` indexes the peer table `peers` (i1), and what a device
/// assert says when it does not.
Value rankInWorld(OpBuilder &b, Location loc, Value peers, Value rank);
constexpr const char *kRankOutsideWorld =
    "X.peer(rank): rank outside the world (the peer table)";

/// The releasing update of `flags[indices]` with memref atomics (the CPU
/// backend): a fence, then an atomic exchange or add.
void emitSignal(OpBuilder &b, Location loc, Value flags, ValueRange indices,
                Value value, SignalMode mode);

/// An atomic read of `flags[indices]` with memref atomics (or-ing in zero:
/// LLVM cannot hoist it out of a polling loop).
Value emitAtomicRead(OpBuilder &b, Location loc, Value flags,
                     ValueRange indices);

/// Polls the flag `readFlag` reads until `flag <cmp> value` holds or
/// `timeoutMs` have passed on the clock `nowNs` (nanoseconds, i64);
/// returns whether the condition held (i1).
Value emitWaitLoop(OpBuilder &b, Location loc,
                   function_ref<Value(OpBuilder &, Location)> readFlag,
                   Value value, WaitCompare cmp, int64_t timeoutMs,
                   function_ref<Value(OpBuilder &, Location)> nowNs);

/// The message of a timed-out wait.
std::string waitTimeoutMessage(WaitOp op);

} // namespace tile
} // namespace mlir

#endif // TILE_UTILS_SYMMETRICUTILS_H
