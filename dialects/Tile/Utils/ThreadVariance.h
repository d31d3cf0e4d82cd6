//===- ThreadVariance.h - which values differ between threads ---*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// Scalar code of a kernel (outside tile.parallel) is run by every thread of
// the block. Most of it computes the same value in every thread (block
// indices, loop counters, loads at those indices), and the GPU lowerings
// then let one thread make its stores. Code that reads the thread index, a
// lane's shuffle or vote, or a per-thread buffer written with such values,
// differs between threads (TileLang's SIMT style: `tx =
// T.get_thread_binding(); B[tx] = ...`): its stores are every thread's own,
// and tile operations cannot run under its conditions.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UTILS_THREADVARIANCE_H
#define TILE_UTILS_THREADVARIANCE_H

#include "dialects/Tile/IR/TileOps.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir {
namespace tile {

/// Whether `op` gives each thread a value of its own (the thread index,
/// warp shuffles and votes, atomics' previous values, election).
bool producesThreadValue(Operation *op);

/// Whether `op` is one thread's operation, which may run where threads
/// diverge (the per-thread ops of TileThreadOps.td and scalar atomics).
bool isPerThreadOp(Operation *op);

/// Whether the tile.parallel `loop` is per-thread code (TileLang's rule for
/// T.Parallel): it stores into local buffers (tile.alloc_local, at least
/// one), writes no other memory and touches no fragment. Every thread then
/// runs every iteration on its own copy of those buffers, as scalar code
/// does; any other loop shares its iterations out among the threads.
bool isPerThreadLoop(ParallelOp loop);

/// Whether the body of `op` can run with its register index unknown at
/// compile time (the GPU lowering then runs a thread's iterations as a
/// loop): it touches no fragment, and local buffers only at indices that do
/// not vary in the loop.
bool touchesOnlyMemory(ParallelOp op);

/// The values of a kernel that may differ between its threads, found by
/// propagation to a fixed point: through operands, through per-thread
/// buffers (local and var) written with such values or under such
/// conditions, and through the results and loop variables of control flow
/// whose condition or bounds differ.
class ThreadVariance {
public:
  explicit ThreadVariance(KernelOp kernel);

  bool isVarying(Value v) const { return varying.contains(v); }
  /// Whether `op` is nested in control flow (scf.if, scf.for, scf.while)
  /// whose condition or bounds differ between threads.
  bool underVaryingControl(Operation *op) const {
    return varyingControl(op) != nullptr;
  }
  /// Whether `op` is control flow (scf.if, scf.for, scf.while, or another
  /// op with regions) whose condition or bounds differ between threads: not
  /// every thread runs its regions, or not as often.
  bool isVaryingControl(Operation *op) const {
    return varyingOwners.contains(op);
  }
  /// The innermost such control flow `op` is nested in (stopping at a
  /// tile.role), or null.
  Operation *varyingControl(Operation *op) const;
  /// Whether a store or another side effect `op` is each thread's own: one
  /// of its operands differs between threads, or it runs under a
  /// condition that does.
  bool perThread(Operation *op) const;

private:
  bool mark(Value v) { return varying.insert(v).second; }
  bool visit(Operation *op);

  Operation *kernel;
  llvm::DenseSet<Value> varying;
  // Ops whose regions run under a condition that differs between threads.
  llvm::DenseSet<Operation *> varyingOwners;
  // Per-thread allocations holding values that differ between threads.
  llvm::DenseSet<Value> varyingMemory;
};

} // namespace tile
} // namespace mlir

#endif // TILE_UTILS_THREADVARIANCE_H
