//===- ArithEmitter.h - terse float arithmetic for expansions ---*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// The float operations that the software expansions of math functions and
// rounded arithmetic (RoundingUtils.cpp, MathF64.cpp) are written in, one
// short call each.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UTILS_ARITHEMITTER_H
#define TILE_UTILS_ARITHEMITTER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace tile {

struct ArithEmitter {
  OpBuilder &b;
  Location loc;

  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value fma(Value x, Value y, Value z) {
    return math::FmaOp::create(b, loc, x, y, z);
  }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  Value sel(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  Value andOf(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value orOf(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value notOf(Value x) {
    return arith::XOrIOp::create(
        b, loc, x, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  }
  /// A float constant of type `t`, rounded to it.
  Value cf(Type t, double v) {
    auto ft = cast<FloatType>(t);
    APFloat a(v);
    bool lost;
    a.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return arith::ConstantFloatOp::create(b, loc, ft, a);
  }
};

} // namespace tile
} // namespace mlir

#endif // TILE_UTILS_ARITHEMITTER_H
