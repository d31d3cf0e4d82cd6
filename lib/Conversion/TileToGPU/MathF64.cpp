//===- MathF64.cpp - float64 math and pow without a device library --------===//
//
// Part of tilelang-mlir.
//
// GPUs have no float64 special-function units and this build links no device
// math library, so float64 exp, exp2, log, log2, log10, sin, cos and tanh are
// computed here from adds, multiplies and fmas: an argument reduction
// (exp: x = k ln2 + r, |r| <= ln2 / 2, ln2 in two parts; log: x = m 2^e,
// m in [sqrt(1/2), sqrt(2)); sin / cos: x = k pi/2 + r, |r| <= pi/4, pi/2 in
// three parts) and a series whose truncation is below 2^-60 of the result
// (exp: Taylor to r^14; log: fdlibm's arrangement of 2 atanh(s), s = f/(2+f),
// to s^21; sin / cos: Taylor to r^17 / r^18). The results are within a few
// ulp; sin and cos lose accuracy past |x| of about 2^30 (no Payne-Hanek
// reduction).
//
// pow (math.powf, every float type) follows C's special cases (pow(x, 0) = 1,
// pow(1, y) = 1, negative bases with integer exponents, zeros and
// infinities) and computes exp(y log |x|) in float64: correctly rounded in
// practice for float32 and narrower, within a few hundred ulp of float64
// near the ends of its range.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/Passes.h"
#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "dialects/Tile/Utils/ArithEmitter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILESOFTWAREMATH
#define GEN_PASS_DEF_TILEPRECISEMATH
#include "dialects/Conversion/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

namespace {
struct F64 : ArithEmitter {
  F64(OpBuilder &b, Location loc) : ArithEmitter{b, loc} {}

  Type f() { return b.getF64Type(); }
  Type i() { return b.getI64Type(); }
  Value c(double v) { return cf(f(), v); }
  Value ci(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
  }
  Value lt(Value x, double v) { return cmp(arith::CmpFPredicate::OLT, x, c(v)); }
  Value gt(Value x, double v) { return cmp(arith::CmpFPredicate::OGT, x, c(v)); }
  Value eq(Value x, double v) { return cmp(arith::CmpFPredicate::OEQ, x, c(v)); }
  Value isNaN(Value x) { return cmp(arith::CmpFPredicate::UNO, x, x); }
  Value roundEven(Value x) { return math::RoundEvenOp::create(b, loc, x); }
  /// floor(x) from the rounded value (no floor intrinsic: ROCDL takes no
  /// llvm.intr.floor of float64 once the math dialect is lowered to LLVM).
  Value floor(Value x) {
    Value r = roundEven(x);
    return sel(cmp(arith::CmpFPredicate::OGT, r, x), sub(r, c(1.0)), r);
  }
  Value bits(Value x) { return arith::BitcastOp::create(b, loc, i(), x); }
  Value fromBits(Value x) { return arith::BitcastOp::create(b, loc, f(), x); }

  /// c[0] + x (c[1] + x (c[2] + ...)).
  Value horner(Value x, ArrayRef<double> coeffs) {
    Value acc = c(coeffs.back());
    for (double k : llvm::reverse(coeffs.drop_back()))
      acc = fma(acc, x, c(k));
    return acc;
  }

  /// 2^k for an integral k of [-1022, 1023] (as i64).
  Value pow2(Value k) {
    return fromBits(arith::ShLIOp::create(
        b, loc, arith::AddIOp::create(b, loc, k, ci(1023)), ci(52)));
  }

  /// p 2^k for an integral float64 k (clamped to [-2100, 2100]: beyond,
  /// every result is 0 or infinite), in two exact steps.
  Value scale(Value p, Value kf) {
    kf = arith::MinimumFOp::create(b, loc,
                                   arith::MaximumFOp::create(b, loc, kf, c(-2100)),
                                   c(2100));
    Value k = arith::FPToSIOp::create(b, loc, i(), kf);
    Value k1 = arith::ShRSIOp::create(b, loc, k, ci(1));
    Value k2 = arith::SubIOp::create(b, loc, k, k1);
    return mul(mul(p, pow2(k1)), pow2(k2));
  }

  /// exp(r) for |r| <= 0.35 (Taylor to r^14).
  Value expSeries(Value r) {
    SmallVector<double> coeffs;
    double fact = 1;
    for (int n = 0; n <= 14; ++n) {
      if (n)
        fact *= n;
      coeffs.push_back(1.0 / fact);
    }
    return horner(r, coeffs);
  }

  Value exp(Value x) {
    Value xc = arith::MinimumFOp::create(
        b, loc, arith::MaximumFOp::create(b, loc, x, c(-746)), c(710));
    Value k = roundEven(mul(xc, c(1.4426950408889634)));
    Value r = fma(neg(k), c(6.93147180369123816490e-01), xc);
    r = fma(neg(k), c(1.90821492927058770002e-10), r);
    Value y = scale(expSeries(r), k);
    y = sel(gt(x, 709.782712893384), c(INFINITY), y);
    y = sel(lt(x, -745.1332191019412), c(0.0), y);
    return sel(isNaN(x), x, y);
  }

  Value exp2(Value x) {
    Value xc = arith::MinimumFOp::create(
        b, loc, arith::MaximumFOp::create(b, loc, x, c(-1076)), c(1025));
    Value k = roundEven(xc);
    Value y = scale(expSeries(mul(sub(xc, k), c(0.6931471805599453))), k);
    y = sel(gt(x, 1024.0), c(INFINITY), y);
    y = sel(lt(x, -1075.0), c(0.0), y);
    return sel(isNaN(x), x, y);
  }

  Value log(Value x) {
    // Subnormals: scale into the normal range first.
    Value tiny = lt(x, 0x1p-1022);
    Value xs = sel(tiny, mul(x, c(0x1p54)), x);
    Value w = bits(xs);
    Value e = arith::SubIOp::create(
        b, loc,
        arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, w, ci(52)),
                              ci(0x7ff)),
        ci(1023));
    e = arith::SubIOp::create(
        b, loc, e, arith::SelectOp::create(b, loc, tiny, ci(54), ci(0)));
    Value mw = arith::OrIOp::create(
        b, loc, arith::AndIOp::create(b, loc, w, ci(0x000FFFFFFFFFFFFFLL)),
        ci(0x3FF0000000000000LL));
    // m in [1, 2) -> [sqrt(1/2), sqrt(2)): above sqrt(2), halve it.
    Value big = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, mw,
                                      ci(0x3FF6A09E667F3BCDLL));
    mw = arith::SelectOp::create(
        b, loc, big, arith::SubIOp::create(b, loc, mw, ci(1LL << 52)), mw);
    e = arith::SelectOp::create(b, loc, big,
                                arith::AddIOp::create(b, loc, e, ci(1)), e);
    Value ef = arith::SIToFPOp::create(b, loc, f(), e);
    Value fr = sub(fromBits(mw), c(1.0));
    Value s = div(fr, add(c(2.0), fr));
    Value z = mul(s, s);
    SmallVector<double> coeffs;
    for (int n = 1; n <= 10; ++n)
      coeffs.push_back(2.0 / (2 * n + 1));
    Value rr = mul(z, horner(z, coeffs));
    Value hfsq = mul(c(0.5), mul(fr, fr));
    Value y = sub(mul(ef, c(6.93147180369123816490e-01)),
                  sub(sub(hfsq, fma(s, add(hfsq, rr),
                                    mul(ef, c(1.90821492927058770002e-10)))),
                      fr));
    y = sel(eq(x, INFINITY), x, y);
    y = sel(eq(x, 0.0), c(-INFINITY), y);
    y = sel(lt(x, 0.0), c(NAN), y);
    return sel(isNaN(x), x, y);
  }

  /// sin (cosine = false) or cos of x: x = k pi/2 + r, the quadrant from k.
  Value sinCos(Value x, bool cosine) {
    Value k = roundEven(mul(x, c(0.6366197723675814)));
    Value r = fma(neg(k), c(1.5707963267948966), x);
    r = fma(neg(k), c(6.123233995736766e-17), r);
    r = fma(neg(k), c(-1.4973849048591698e-33), r);
    Value r2 = mul(r, r);
    SmallVector<double> sc, cc;
    double fact = 1;
    for (int n = 1; n <= 18; ++n) {
      fact *= n;
      double term = ((n / 2) % 2 ? -1.0 : 1.0) / fact;
      (n % 2 ? sc : cc).push_back(term);
    }
    cc.insert(cc.begin(), 1.0);
    Value s = mul(r, horner(r2, sc));
    Value co = horner(r2, cc);
    // The quadrant k mod 4, exactly, as a float.
    Value q = sub(k, mul(c(4.0), floor(mul(k, c(0.25)))));
    if (cosine)
      q = add(q, c(1.0)); // cos(x) = sin(x + pi/2)
    q = sub(q, mul(c(4.0), floor(mul(q, c(0.25)))));
    Value y = sel(eq(q, 0.0), s, sel(eq(q, 1.0), co, sel(eq(q, 2.0), neg(s), neg(co))));
    if (!cosine) // sin(-0) = -0 (the reduction above loses the zero's sign)
      y = sel(eq(x, 0.0), x, y);
    return y;
  }

  /// tanh: em / (em + 2), em = expm1(2x) by its series, below |x| = 1/2;
  /// sign(x) (1 - 2 / (exp(2|x|) + 1)) above.
  Value tanh(Value x) {
    Value t = mul(c(2.0), x);
    SmallVector<double> coeffs;
    double fact = 1;
    for (int n = 1; n <= 20; ++n) {
      fact *= n;
      coeffs.push_back(1.0 / fact);
    }
    Value em = mul(t, horner(t, coeffs));
    Value small = div(em, add(em, c(2.0)));
    Value ax = math::AbsFOp::create(b, loc, x);
    Value large = sub(c(1.0), div(c(2.0), add(exp(mul(c(2.0), ax)), c(1.0))));
    large = math::CopySignOp::create(b, loc, large, x);
    return sel(lt(ax, 0.5), small, large);
  }

  /// Whether y is an odd integer.
  Value isOddInteger(Value y) {
    Value integral = cmp(arith::CmpFPredicate::OEQ, math::TruncOp::create(b, loc, y), y);
    Value half = mul(y, c(0.5));
    Value odd = cmp(arith::CmpFPredicate::ONE, math::TruncOp::create(b, loc, half), half);
    return andOf(andOf(integral, odd), cmp(arith::CmpFPredicate::OLT,
                                           math::AbsFOp::create(b, loc, y),
                                           c(0x1p53)));
  }

  /// C's pow on float64 values.
  Value pow(Value x, Value y) {
    Value ax = math::AbsFOp::create(b, loc, x);
    Value r = exp(mul(y, log(ax)));
    // |x| = 1 with y infinite: 1 (0 * inf is NaN in the formula).
    r = sel(andOf(eq(ax, 1.0), eq(math::AbsFOp::create(b, loc, y), INFINITY)),
            c(1.0), r);
    // Negative bases: odd integer exponents negate, non-integers give NaN.
    Value oddInt = isOddInteger(y);
    Value negBase = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                          bits(x), ci(0)); // the sign bit
    r = sel(andOf(negBase, oddInt), neg(r), r);
    Value integral = cmp(arith::CmpFPredicate::OEQ, math::TruncOp::create(b, loc, y), y);
    Value finiteY = cmp(arith::CmpFPredicate::ONE, math::AbsFOp::create(b, loc, y),
                        c(INFINITY));
    r = sel(andOf(andOf(lt(x, 0.0), finiteY), notOf(integral)), c(NAN), r);
    // pow(x, +-0) = 1 and pow(1, y) = 1, NaN operands included.
    return sel(orOf(eq(y, 0.0), eq(x, 1.0)), c(1.0), r);
  }
};

/// float64 exp, exp2, log, log2, log10, sin and cos.
struct F64Math : public RewritePattern {
  F64Math(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/2, ctx) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &r) const override {
    if (!isa<math::ExpOp, math::Exp2Op, math::LogOp, math::Log2Op,
             math::Log10Op, math::SinOp, math::CosOp, math::TanhOp>(op) ||
        !op->getResult(0).getType().isF64())
      return failure();
    F64 e(r, op->getLoc());
    Value x = op->getOperand(0), y;
    if (isa<math::ExpOp>(op))
      y = e.exp(x);
    else if (isa<math::Exp2Op>(op))
      y = e.exp2(x);
    else if (isa<math::LogOp>(op))
      y = e.log(x);
    else if (isa<math::Log2Op>(op))
      y = e.mul(e.log(x), e.c(1.4426950408889634));
    else if (isa<math::Log10Op>(op))
      y = e.mul(e.log(x), e.c(0.4342944819032518));
    else if (isa<math::TanhOp>(op))
      y = e.tanh(x);
    else
      y = e.sinCos(x, isa<math::CosOp>(op));
    r.replaceOp(op, y);
    return success();
  }
};

/// math.powf of any float type, through float64 (see the file's comment).
struct PowThroughF64 : public OpRewritePattern<math::PowFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::PowFOp op,
                                PatternRewriter &r) const override {
    Type t = op.getType();
    if (!isa<FloatType>(t) || t.getIntOrFloatBitWidth() > 64)
      return failure();
    F64 e(r, op.getLoc());
    auto widen = [&](Value v) {
      return t.isF64() ? v : arith::ExtFOp::create(r, op.getLoc(), e.f(), v).getResult();
    };
    Value y = e.pow(widen(op.getLhs()), widen(op.getRhs()));
    if (!t.isF64())
      y = arith::TruncFOp::create(r, op.getLoc(), t, y);
    r.replaceOp(op, y);
    return success();
  }
};
} // namespace

void mlir::tile::populateF64MathPatterns(RewritePatternSet &patterns) {
  patterns.add<F64Math, PowThroughF64>(patterns.getContext());
}

namespace {
struct TileSoftwareMathPass
    : public tile::impl::TileSoftwareMathBase<TileSoftwareMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateF64MathPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

namespace {
/// float32 / float16 / bfloat16 transcendental functions through float64
/// (tile-precise-math).
struct WidenToF64 : public RewritePattern {
  WidenToF64(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &r) const override {
    bool widen = isa<math::ExpOp, math::Exp2Op, math::LogOp, math::Log2Op,
                     math::Log10Op, math::SinOp, math::CosOp, math::TanhOp>(op);
    if (!widen && !isa<math::RsqrtOp>(op))
      return failure();
    auto ft = dyn_cast<FloatType>(op->getResult(0).getType());
    if (!ft || ft.getWidth() > 32)
      return failure();
    // The fast functions the program asked for by name (T.__exp, ...: afn).
    if (auto fm = dyn_cast<arith::ArithFastMathInterface>(op);
        fm && fm.getFastMathFlagsAttr() &&
        arith::bitEnumContainsAll(fm.getFastMathFlagsAttr().getValue(),
                                  arith::FastMathFlags::afn))
      return failure();
    Location loc = op->getLoc();
    Value x = op->getOperand(0);
    Value wide = arith::ExtFOp::create(r, loc, r.getF64Type(), x);
    if (isa<math::RsqrtOp>(op)) { // 1 / sqrt(x) in float64, rounded once
      Value one = arith::ConstantOp::create(r, loc, r.getF64Type(),
                                            r.getF64FloatAttr(1.0));
      Value y = arith::DivFOp::create(r, loc, one,
                                      math::SqrtOp::create(r, loc, wide));
      r.replaceOpWithNewOp<arith::TruncFOp>(op, ft, y);
      return success();
    }
    OperationState state(loc, op->getName().getStringRef(), ValueRange{wide},
                         TypeRange{r.getF64Type()}, op->getAttrs());
    Value y = r.create(state)->getResult(0);
    r.replaceOpWithNewOp<arith::TruncFOp>(op, ft, y);
    return success();
  }
};

struct TilePreciseMathPass
    : public tile::impl::TilePreciseMathBase<TilePreciseMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<WidenToF64>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
