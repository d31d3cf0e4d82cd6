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

ReduceSpec ReduceSpec::of(ReduceKind kind, Type logicalAcc,
                          bool nanPropagate) {
  ReduceSpec spec{kind, nanPropagate};
  if (auto it = dyn_cast<IntegerType>(logicalAcc)) {
    spec.isUnsigned = it.isUnsigned();
    spec.isBool = it.getWidth() == 1;
  }
  return spec;
}

ReduceSpec ReduceSpec::of(ReduceOp op) {
  return of(op.getKind(), op.getDstLogicalType(), op.getNanPropagate());
}

Value mlir::tile::reduceIdentity(OpBuilder &b, Location loc,
                                 const ReduceSpec &spec, Type type) {
  ReduceKind kind = spec.kind;
  if (kind == ReduceKind::bitAnd) {
    if (spec.isBool)
      return arith::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, 1));
    unsigned width = type.getIntOrFloatBitWidth();
    return arith::ConstantOp::create(
        b, loc, type, b.getIntegerAttr(type, APInt::getAllOnes(width)));
  }
  bool isMax = kind == ReduceKind::max, isMin = kind == ReduceKind::min;
  if (!isMax && !isMin)
    return arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type));
  if (auto f = dyn_cast<FloatType>(type))
    return arith::ConstantFloatOp::create(
        b, loc, f, APFloat::getInf(f.getFloatSemantics(), isMax));
  unsigned width = type.getIntOrFloatBitWidth();
  APInt v = spec.isUnsigned || spec.isBool
                ? (isMax ? APInt::getMinValue(width)
                         : (spec.isBool ? APInt(width, 1)
                                        : APInt::getMaxValue(width)))
                : (isMax ? APInt::getSignedMinValue(width)
                         : APInt::getSignedMaxValue(width));
  return arith::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, v));
}

/// max / min of floats: NaN-ignoring (fmaxf), or NaN-propagating for f16 /
/// bf16 under nan_propagate (TileLang's __hmax_nan; its f32 stays fmaxf).
static Value floatMinMax(OpBuilder &b, Location loc, const ReduceSpec &spec,
                         bool isMax, Value acc, Value x) {
  Type t = getElementTypeOrSelf(x.getType());
  bool propagate = spec.nanPropagate && (t.isF16() || t.isBF16());
  if (isMax)
    return propagate ? arith::MaximumFOp::create(b, loc, acc, x).getResult()
                     : arith::MaxNumFOp::create(b, loc, acc, x).getResult();
  return propagate ? arith::MinimumFOp::create(b, loc, acc, x).getResult()
                   : arith::MinNumFOp::create(b, loc, acc, x).getResult();
}

Value mlir::tile::reduceCombine(OpBuilder &b, Location loc,
                                const ReduceSpec &spec, Value acc, Value x) {
  bool isFloat = isa<FloatType>(getElementTypeOrSelf(x.getType()));
  bool uns = spec.isUnsigned || spec.isBool;
  switch (spec.kind) {
  case ReduceKind::sum:
  case ReduceKind::abssum:
    return isFloat ? arith::AddFOp::create(b, loc, acc, x).getResult()
                   : arith::AddIOp::create(b, loc, acc, x).getResult();
  case ReduceKind::max:
  case ReduceKind::absmax:
    if (isFloat)
      return floatMinMax(b, loc, spec, true, acc, x);
    return uns ? arith::MaxUIOp::create(b, loc, acc, x).getResult()
               : arith::MaxSIOp::create(b, loc, acc, x).getResult();
  case ReduceKind::min:
    if (isFloat)
      return floatMinMax(b, loc, spec, false, acc, x);
    return uns ? arith::MinUIOp::create(b, loc, acc, x).getResult()
               : arith::MinSIOp::create(b, loc, acc, x).getResult();
  case ReduceKind::bitAnd:
    return arith::AndIOp::create(b, loc, acc, x);
  case ReduceKind::bitOr:
    return arith::OrIOp::create(b, loc, acc, x);
  case ReduceKind::bitXor:
    return arith::XOrIOp::create(b, loc, acc, x);
  }
  llvm_unreachable("reduce kind");
}

Type mlir::tile::reduceAccumulatorType(const ReduceSpec &spec,
                                      Type dstElement) {
  if (isa<Float16Type, BFloat16Type>(dstElement) &&
      (spec.kind == ReduceKind::sum || spec.kind == ReduceKind::abssum))
    return Float32Type::get(dstElement.getContext());
  return dstElement;
}

Value mlir::tile::reduceInput(OpBuilder &b, Location loc,
                              const ReduceSpec &spec, Value x) {
  if (spec.kind != ReduceKind::abssum && spec.kind != ReduceKind::absmax)
    return x;
  if (isa<FloatType>(getElementTypeOrSelf(x.getType())))
    return math::AbsFOp::create(b, loc, x).getResult();
  if (spec.isUnsigned || spec.isBool)
    return x;
  return math::AbsIOp::create(b, loc, x).getResult();
}
