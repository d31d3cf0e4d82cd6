//===- KernelChecks.h - which threads run what, checked before layouts ---===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TRANSFORMS_KERNELCHECKS_H
#define TILE_TRANSFORMS_KERNELCHECKS_H

#include "dialects/Tile/IR/TileOps.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir {
namespace tile {

/// Threads [begin, end) of a role; {-1, -1}: the block's, outside roles.
/// Roles of the same range (several `with T.ws(0)`) share their fragments.
using ThreadRange = std::pair<int64_t, int64_t>;
inline constexpr ThreadRange kBlockRange = {-1, -1};

/// The threads of the role `op` is in (kBlockRange outside roles).
ThreadRange rangeOf(Operation *op);

/// The threads that hold each fragment (absent: the block's).
using FragmentHomes = DenseMap<Value, ThreadRange>;

/// A fragment lives in the registers of the threads that use it: every op
/// using it (through views) must run in one role, or outside every role.
/// Fills `homes`; an error names the two roles.
LogicalResult findFragmentHomes(KernelOp kernel, FragmentHomes &homes);

/// A tile operation runs on all the threads of its role (or block): an
/// error where only some of them reach it (a branch on a value that
/// differs between threads that is not a role).
LogicalResult checkThreadBranches(KernelOp kernel);

} // namespace tile
} // namespace mlir

#endif // TILE_TRANSFORMS_KERNELCHECKS_H
