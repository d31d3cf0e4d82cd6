//===- ControlFlowUtils.cpp - building conditional code -------------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/Utils/ControlFlowUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

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
