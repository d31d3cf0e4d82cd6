//===- ReduceUtils.cpp - the arithmetic of tile.reduce --------------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/Utils/ReduceUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::tile;

Value mlir::tile::reduceIdentity(OpBuilder &b, Location loc, ReduceKind kind,
                                 Type type) {
  bool isMax = kind == ReduceKind::max, isMin = kind == ReduceKind::min;
  if (!isMax && !isMin)
    return arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type));
  if (auto f = dyn_cast<FloatType>(type))
    return arith::ConstantFloatOp::create(
        b, loc, f, APFloat::getInf(f.getFloatSemantics(), isMax));
  unsigned width = type.getIntOrFloatBitWidth();
  APInt v =
      isMax ? APInt::getSignedMinValue(width) : APInt::getSignedMaxValue(width);
  return arith::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, v));
}

Value mlir::tile::reduceCombine(OpBuilder &b, Location loc, ReduceKind kind,
                                Value acc, Value x) {
  bool isFloat = isa<FloatType>(x.getType());
  switch (kind) {
  case ReduceKind::sum:
  case ReduceKind::abssum:
    return isFloat ? arith::AddFOp::create(b, loc, acc, x).getResult()
                   : arith::AddIOp::create(b, loc, acc, x).getResult();
  case ReduceKind::max:
  case ReduceKind::absmax:
    return isFloat ? arith::MaxNumFOp::create(b, loc, acc, x).getResult()
                   : arith::MaxSIOp::create(b, loc, acc, x).getResult();
  case ReduceKind::min:
    return isFloat ? arith::MinNumFOp::create(b, loc, acc, x).getResult()
                   : arith::MinSIOp::create(b, loc, acc, x).getResult();
  }
  llvm_unreachable("reduce kind");
}

Value mlir::tile::reduceInput(OpBuilder &b, Location loc, ReduceKind kind,
                              Value x) {
  if (kind != ReduceKind::abssum && kind != ReduceKind::absmax)
    return x;
  return isa<FloatType>(x.getType())
             ? math::AbsFOp::create(b, loc, x).getResult()
             : math::AbsIOp::create(b, loc, x).getResult();
}
