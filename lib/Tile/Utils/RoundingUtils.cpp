//===- RoundingUtils.cpp - arithmetic in a chosen rounding ----------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/Utils/RoundingUtils.h"
#include "dialects/Tile/Utils/ArithEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::tile;

namespace {
/// ArithEmitter whose adds, subtracts and multiplies are marked exact.
struct Emitter : ArithEmitter {
  Emitter(OpBuilder &b, Location loc) : ArithEmitter{b, loc} {}

  Value exact(Operation *op) {
    op->setAttr(kExactAttrName, b.getUnitAttr());
    return op->getResult(0);
  }
  Value add(Value x, Value y) {
    return exact(arith::AddFOp::create(b, loc, x, y));
  }
  Value sub(Value x, Value y) {
    return exact(arith::SubFOp::create(b, loc, x, y));
  }
  Value mul(Value x, Value y) {
    return exact(arith::MulFOp::create(b, loc, x, y));
  }
  Value ext(Value x, Type t) {
    return x.getType() == t ? x : arith::ExtFOp::create(b, loc, t, x);
  }
  Value trunc(Value x, Type t) {
    return x.getType() == t ? x : arith::TruncFOp::create(b, loc, t, x);
  }
  Value isFinite(Value x) {
    Value ax = math::AbsFOp::create(b, loc, x);
    return cmp(arith::CmpFPredicate::ONE, ax,
               arith::ConstantFloatOp::create(
                   b, loc, cast<FloatType>(x.getType()),
                   APFloat::getInf(
                       cast<FloatType>(x.getType()).getFloatSemantics())));
  }
  /// s = x + y and its exact error (Knuth's TwoSum).
  std::pair<Value, Value> twoSum(Value x, Value y) {
    Value s = add(x, y);
    Value bb = sub(s, x);
    Value e = add(sub(x, sub(s, bb)), sub(y, bb));
    return {s, e};
  }
};
} // namespace

Value mlir::tile::nextFloat(OpBuilder &b, Location loc, Value x, bool up) {
  auto ft = cast<FloatType>(x.getType());
  unsigned w = ft.getWidth();
  Type it = b.getIntegerType(w);
  Emitter e(b, loc);
  Value bits = arith::BitcastOp::create(b, loc, it, x);
  auto ci = [&](const APInt &v) {
    return arith::ConstantOp::create(b, loc, it, b.getIntegerAttr(it, v));
  };
  Value one = ci(APInt(w, 1));
  Value zero = e.cf(ft, 0.0);
  // Away from zero is +1 on the magnitude bits, toward zero -1; from a
  // zero, the smallest subnormal of the direction's sign.
  Value positive = e.cmp(arith::CmpFPredicate::OGT, x, zero);
  Value negative = e.cmp(arith::CmpFPredicate::OLT, x, zero);
  Value away = up ? positive : negative;
  Value toward = up ? negative : positive;
  Value inc = arith::AddIOp::create(b, loc, bits, one);
  Value dec = arith::SubIOp::create(b, loc, bits, one);
  APInt tiny(w, 1);
  if (!up)
    tiny.setSignBit();
  Value r = e.sel(away, inc, e.sel(toward, dec, bits));
  Value isZero = e.cmp(arith::CmpFPredicate::OEQ, x, zero);
  r = e.sel(isZero, ci(tiny), r);
  // +inf stays when stepping up (it is "away"), as -inf stepping down.
  Value inf = arith::ConstantFloatOp::create(
      b, loc, ft, APFloat::getInf(ft.getFloatSemantics(), /*Negative=*/!up));
  Value atInf = e.cmp(arith::CmpFPredicate::OEQ, x, inf);
  Value out = arith::BitcastOp::create(b, loc, ft, r);
  return e.sel(atInf, x, out);
}

Value mlir::tile::emitRoundedArith(OpBuilder &b, Location loc, IEEEKind kind,
                                   RoundingMode mode, ValueRange operands) {
  Emitter e(b, loc);
  Type t = operands[0].getType();
  SmallVector<Value> x(operands.begin(), operands.end());
  if (kind == IEEEKind::sub) {
    x[1] = e.neg(x[1]);
    kind = IEEEKind::add;
  }
  if (kind == IEEEKind::rcp) {
    x.insert(x.begin(), e.cf(t, 1.0));
    kind = IEEEKind::div;
  }
  // Round to nearest: the operation itself (rsqrt through f64, one
  // rounding at the end; f16 / bf16 come here only).
  Value r;
  switch (kind) {
  case IEEEKind::add:
    r = e.add(x[0], x[1]);
    break;
  case IEEEKind::mul:
    r = e.mul(x[0], x[1]);
    break;
  case IEEEKind::fma:
    r = e.fma(x[0], x[1], x[2]);
    break;
  case IEEEKind::div:
    r = e.div(x[0], x[1]);
    break;
  case IEEEKind::sqrt:
    r = math::SqrtOp::create(b, loc, x[0]);
    break;
  case IEEEKind::rsqrt: {
    Type f64 = b.getF64Type();
    Value w = e.ext(x[0], f64);
    r = e.trunc(e.div(e.cf(f64, 1.0), math::SqrtOp::create(b, loc, w)), t);
    break;
  }
  case IEEEKind::sub:
  case IEEEKind::rcp:
    llvm_unreachable("rewritten above");
  }
  if (mode == RoundingMode::rn)
    return r;

  // The residual (exact result - r): its sign picks the step. f32 works in
  // f64, where products, remainders and TwoSum's parts are exact.
  Type w = t.isF32() ? Type(b.getF64Type()) : t;
  SmallVector<Value> xw;
  for (Value v : x)
    xw.push_back(e.ext(v, w));
  Value rw = e.ext(r, w);
  Value res;
  Value finiteIn = e.isFinite(xw[0]);
  for (Value v : ArrayRef<Value>(xw).drop_front())
    finiteIn = e.andOf(finiteIn, e.isFinite(v));
  switch (kind) {
  case IEEEKind::add: {
    auto [s, err] = e.twoSum(xw[0], xw[1]);
    res = e.add(e.sub(s, rw), err);
    break;
  }
  case IEEEKind::mul:
    res = e.fma(xw[0], xw[1], e.neg(rw));
    break;
  case IEEEKind::fma: {
    // a*b = p + pe exactly; p + c = s + se exactly; residual
    // (s - r) + se + pe (for f32 pe is 0: the f64 product is exact).
    Value p = e.mul(xw[0], xw[1]);
    Value pe = e.fma(xw[0], xw[1], e.neg(p));
    auto [s, se] = e.twoSum(p, xw[2]);
    res = e.add(e.add(e.sub(s, rw), se), pe);
    break;
  }
  case IEEEKind::div: {
    // a - r*b, signed by b: positive when a/b lies above r.
    Value rem = e.fma(e.neg(rw), xw[1], xw[0]);
    Value negB = e.cmp(arith::CmpFPredicate::OLT, xw[1], e.cf(w, 0.0));
    res = e.sel(negB, e.neg(rem), rem);
    // Division by zero is an exact infinity.
    Value zeroB = e.cmp(arith::CmpFPredicate::OEQ, xw[1], e.cf(w, 0.0));
    finiteIn = e.andOf(finiteIn, arith::XOrIOp::create(
                                     b, loc, zeroB,
                                     arith::ConstantIntOp::create(
                                         b, loc, b.getI1Type(), 1)));
    break;
  }
  case IEEEKind::sqrt:
    res = e.fma(e.neg(rw), rw, xw[0]);
    break;
  default:
    llvm_unreachable("rn only");
  }
  // Overflow: a finite exact result rounded to an infinity lies below it.
  Value overflow = e.andOf(finiteIn, e.cmp(arith::CmpFPredicate::OEQ,
                                           math::AbsFOp::create(b, loc, rw),
                                           e.cf(w, INFINITY)));
  res = e.sel(overflow, e.neg(rw), res);
  Value zw = e.cf(w, 0.0);
  Value above = e.cmp(arith::CmpFPredicate::OGT, res, zw);
  Value below = e.cmp(arith::CmpFPredicate::OLT, res, zw);
  Value zt = e.cf(t, 0.0);
  Value up = nextFloat(b, loc, r, true), down = nextFloat(b, loc, r, false);
  switch (mode) {
  case RoundingMode::ru:
    return e.sel(above, up, r);
  case RoundingMode::rd: {
    Value out = e.sel(below, down, r);
    if (kind != IEEEKind::add && kind != IEEEKind::fma)
      return out;
    // An exact zero sum is -0 toward -inf unless both terms are +0:
    // -((-a) + (-b)) under round to nearest gives exactly that.
    Value exactZero =
        e.andOf(e.cmp(arith::CmpFPredicate::OEQ, r, zt),
                e.cmp(arith::CmpFPredicate::OEQ, res, zw));
    Value z = kind == IEEEKind::add
                  ? e.neg(e.add(e.neg(x[0]), e.neg(x[1])))
                  : e.neg(e.fma(e.neg(x[0]), x[1], e.neg(x[2])));
    return e.sel(exactZero, z, out);
  }
  case RoundingMode::rz: {
    Value pos = e.cmp(arith::CmpFPredicate::OGT, r, zt);
    Value neg = e.cmp(arith::CmpFPredicate::OLT, r, zt);
    return e.sel(e.andOf(pos, below), down,
                 e.sel(e.andOf(neg, above), up, r));
  }
  case RoundingMode::rn:
    break;
  }
  llvm_unreachable("rounding mode");
}
