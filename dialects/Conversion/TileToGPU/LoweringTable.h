//===- LoweringTable.h - which function lowers which op ---------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// KernelLowering::lowerOp re-emits the kernel body op by op: it runs the
// steps every op needs first (the drains before reused shared memory, the
// wait for bulk reads, the rule for T.Parallel bodies, the scratch turn),
// then looks the op up here. Each op family of lib/Conversion/TileToGPU
// registers its lowerings (`register...Lowerings`), then the target adds
// its own and replaces some (`GPUTargetInfo::registerLowerings`: mbarriers,
// warp specialization, TMA copies); lowerTileKernels builds the table once
// per pass run. An op without an entry is cloned (ops of other dialects,
// their regions lowered the same way) or refused (tile ops).
//
// The families reach each other only through KernelLowering's shared
// helpers, never through this table, and the driver reaches the families
// only through it: no file of the lowering calls the family it came from.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_CONVERSION_TILETOGPU_LOWERINGTABLE_H
#define TILE_CONVERSION_TILETOGPU_LOWERINGTABLE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/TypeID.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>

namespace mlir {
namespace tile {

class KernelLowering;
struct Context;

/// Lowers `op` at `b` (its operands through `map`; `ctx` says where the
/// code runs).
using LoweringFn = std::function<LogicalResult(
    KernelLowering &kl, Operation *op, OpBuilder &b, IRMapping &map,
    Context &ctx)>;

/// Whether an op may stand in a T.Parallel body. Tile operations there are
/// refused, but for those each thread runs on its own (isPerThreadOp) and
/// those whose entry says they are lowered in each instance of the body.
enum class InParallel { refused, lowered };

struct OpLowering {
  LoweringFn fn;
  InParallel inParallel = InParallel::refused;
};

class LoweringTable {
public:
  /// `fn(kl, OpTy op, b, map, ctx)` lowers every op of the types `OpTys`
  /// (replacing what lowered them before).
  template <typename... OpTys, typename Fn>
  void add(Fn fn, InParallel inParallel = InParallel::refused) {
    (set<OpTys>(fn, inParallel), ...);
  }

  /// Ops of the types `OpTys` that leave nothing to emit (read by the
  /// set-up or by other ops' lowering, or with nothing to do on the
  /// target).
  template <typename... OpTys>
  void addNothing(InParallel inParallel = InParallel::refused) {
    add<OpTys...>([](KernelLowering &, Operation *, OpBuilder &, IRMapping &,
                     Context &) { return success(); },
                  inParallel);
  }

  /// The lowering of ops of type `OpTy` (null: none).
  template <typename OpTy> LoweringFn get() const {
    auto it = entries.find(TypeID::get<OpTy>());
    return it == entries.end() ? LoweringFn() : it->second.fn;
  }

  /// The entry of `op` (null: none).
  const OpLowering *lookup(Operation *op) const {
    auto it = entries.find(op->getName().getTypeID());
    return it == entries.end() ? nullptr : &it->second;
  }

private:
  template <typename OpTy, typename Fn>
  void set(Fn fn, InParallel inParallel) {
    entries[TypeID::get<OpTy>()] = {
        [fn](KernelLowering &kl, Operation *op, OpBuilder &b, IRMapping &map,
             Context &ctx) { return fn(kl, cast<OpTy>(op), b, map, ctx); },
        inParallel};
  }

  DenseMap<TypeID, OpLowering> entries;
};

// The families of lib/Conversion/TileToGPU, one per file.
void registerKernelLowerings(LoweringTable &table);       // KernelLowering.cpp
void registerBufferAccessLowerings(LoweringTable &table); // BufferAccess.cpp
void registerParallelLowerings(LoweringTable &table);     // ParallelLoops.cpp
void registerCopyLowerings(LoweringTable &table);         // Copies.cpp
void registerGemmLowerings(LoweringTable &table);         // Gemm.cpp
void registerReductionLowerings(LoweringTable &table);    // Reductions.cpp
void registerThreadOpLowerings(LoweringTable &table);     // ThreadOps.cpp
void registerAtomicAndPrintLowerings(LoweringTable &table); // AtomicsAndPrint.cpp
void registerSymmetricLowerings(LoweringTable &table);    // Symmetric.cpp
void registerMathLowerings(LoweringTable &table);         // Math.cpp

} // namespace tile
} // namespace mlir

#endif // TILE_CONVERSION_TILETOGPU_LOWERINGTABLE_H
