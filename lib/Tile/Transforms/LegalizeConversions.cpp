//===- LegalizeConversions.cpp - the tile rules for casts -----------------===//
//
// Part of tilelang-mlir.
//
// Rewrites the frontend's arith conversions into the forms of
// ConversionUtils.h: saturating float-to-integer conversions and fp8
// conversions in integer arithmetic, so that a cast means the same on every
// target.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Transforms/Passes.h"
#include "dialects/Tile/Utils/ConversionUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

#define DEBUG_TYPE "tile-legalize-conversions"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILELEGALIZECONVERSIONS
#include "dialects/Tile/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

namespace {

/// The unsigned integer type of `t`'s width (for uitofp / fptoui sides).
Type unsignedOf(Type t) {
  auto it = cast<IntegerType>(getElementTypeOrSelf(t));
  return IntegerType::get(t.getContext(), it.getWidth(),
                          IntegerType::Unsigned);
}

struct TileLegalizeConversionsPass
    : public tile::impl::TileLegalizeConversionsBase<
          TileLegalizeConversionsPass> {
  void runOnOperation() override {
    // The first pass of every pipeline also turns away vectors too long
    // for LLVM's lowering (it counts vector elements in 32 bits: 2^32
    // elements assert in upstream verifiers); tile programs use short ones.
    constexpr int64_t kMaxVectorElements = int64_t(1) << 16;
    WalkResult tooLong = getOperation().walk([&](Operation *op) {
      for (Type t : llvm::concat<Type>(llvm::to_vector(op->getOperandTypes()),
                                       llvm::to_vector(op->getResultTypes())))
        if (auto v = dyn_cast<VectorType>(t);
            v && (v.isScalable() || v.getNumElements() > kMaxVectorElements)) {
          op->emitOpError("has the vector type ")
              << v << "; tile programs use fixed vectors of at most "
              << kMaxVectorElements << " elements";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (tooLong.wasInterrupted())
      return signalPassFailure();
    SmallVector<Operation *> conversions;
    getOperation().walk([&](Operation *op) {
      if (isa<arith::FPToSIOp, arith::FPToUIOp>(op) &&
          !op->hasAttr(kSaturatedAttrName))
        conversions.push_back(op);
      else if (isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp,
                   arith::UIToFPOp>(op) &&
               (isStoredFloat8(op->getOperand(0).getType()) ||
                isStoredFloat8(op->getResult(0).getType())))
        conversions.push_back(op);
    });
    for (Operation *op : conversions) {
      OpBuilder b(op);
      Value in = op->getOperand(0);
      Type from = getElementTypeOrSelf(in.getType());
      Type to = getElementTypeOrSelf(op->getResult(0).getType());
      Type toStorage = to;
      if (isa<arith::UIToFPOp>(op))
        from = unsignedOf(in.getType());
      if (isa<arith::FPToUIOp>(op))
        to = unsignedOf(op->getResult(0).getType());
      Value result = convertElements(b, op->getLoc(), in, from, to, toStorage);
      op->getResult(0).replaceAllUsesWith(result);
      op->erase();
    }
  }
};

} // namespace
