//===- ControlFlowUtils.cpp - building conditional code -------------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/Utils/ControlFlowUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

void mlir::tile::guarded(OpBuilder &b, Location loc, Value cond,
                         function_ref<void(OpBuilder &)> fn) {
  if (!cond) {
    fn(b);
    return;
  }
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder inner = OpBuilder::atBlockTerminator(ifOp.thenBlock());
  fn(inner);
}

static bool invariantAt(Value v, Operation *loop, int depth, int maxDepth) {
  if (!loop->isAncestor(v.getParentBlock()->getParentOp()))
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || depth > maxDepth || def->getNumRegions() || !isPure(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return invariantAt(operand, loop, depth + 1, maxDepth);
  });
}

bool mlir::tile::isLoopInvariant(Value v, Operation *loop, int maxDepth) {
  return invariantAt(v, loop, 0, maxDepth);
}
