//===- Math.cpp - math functions on special-function units
//------------------===//
//
// Part of tilelang-mlir.
//
// Math functions become the target's approximate intrinsics instead of
// device-library calls; what is left must be something the math dialect's
// own lowering handles without a library.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/Matchers.h"
#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "dialects/Tile/Utils/ArithEmitter.h"
#include "dialects/Tile/Utils/RoundingUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

using namespace mlir;
using namespace mlir::tile;

Value GPUTargetInfo::emitRoundedArith(OpBuilder &b, Location loc,
                                      IEEEKind kind, RoundingMode mode,
                                      ValueRange operands) const {
  return tile::emitRoundedArith(b, loc, kind, mode, operands);
}

namespace {
/// Transcendental functions (f16/bf16/f32, computed in f32) on the GPU's
/// special-function units, through the intrinsics the target names
/// (GPUTargetInfo::getMathIntrinsic): NVVM's approximate ones (relative
/// error about 2^-22), or AMDGPU's (and LLVM intrinsics the AMDGPU backend
/// lowers natively; MLIR's ROCDL conversion would send the math dialect's
/// versions to device-library calls, which this build cannot link).
struct MathToGPUIntrinsics : public RewritePattern {
  MathToGPUIntrinsics(MLIRContext *ctx, const GPUTargetInfo &target)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        target(target) {}

  const GPUTargetInfo &target;

  static Value call(PatternRewriter &r, Location loc, StringRef name, Value x) {
    return LLVM::CallIntrinsicOp::create(r, loc, r.getF32Type(),
                                         r.getStringAttr(name), ValueRange{x})
        .getResult(0);
  }
  static Value c(PatternRewriter &r, Location loc, double v) {
    return arith::ConstantFloatOp::create(r, loc, r.getF32Type(),
                                          APFloat((float)v));
  }

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &r) const override {
    if (!isa<math::ExpOp, math::Exp2Op, math::LogOp, math::Log2Op,
             math::Log10Op, math::RsqrtOp, math::SinOp, math::CosOp, math::TanhOp>(op) &&
        !(isa<math::FloorOp>(op) &&
          !target.getMathIntrinsic(MathIntrinsic::floor).empty()) &&
        !(isa<math::CeilOp>(op) &&
          !target.getMathIntrinsic(MathIntrinsic::ceil).empty()))
      return failure();
    Type type = op->getResult(0).getType();
    auto ft = dyn_cast<FloatType>(type);
    if (!ft || ft.getWidth() > 32)
      return r.notifyMatchFailure(op, "only f16/bf16/f32 have approximations");
    Location loc = op->getLoc();
    Value x = op->getOperand(0);
    if (!type.isF32())
      x = arith::ExtFOp::create(r, loc, r.getF32Type(), x);
    // ex2 flushes subnormals (results below 2^-126 become 0): without .ftz,
    // ptxas wraps every MUFU.EX2 in a range test and two multiplies, three
    // extra instructions per element of an attention softmax.
    StringRef ex2 = target.getMathIntrinsic(MathIntrinsic::exp2);
    StringRef lg2 = target.getMathIntrinsic(MathIntrinsic::log2);
    // T.exp: the C library's expf where the target has its sequence;
    // T.__exp (afn) and the rest: the approximate instructions.
    auto fm = dyn_cast<arith::ArithFastMathInterface>(op);
    bool fast = fm && fm.getFastMathFlagsAttr() &&
                arith::bitEnumContainsAll(fm.getFastMathFlagsAttr().getValue(),
                                          arith::FastMathFlags::afn);
    if (isa<math::ExpOp>(op) && !fast) {
      if (Value e = target.emitLibraryExpf(r, loc, x)) {
        r.replaceOp(op, type.isF32() ? e : arith::TruncFOp::create(r, loc, type, e).getResult());
        return success();
      }
    }
    Value y;
    if (isa<math::ExpOp>(op))
      y = call(r, loc, ex2,
               arith::MulFOp::create(r, loc, x, c(r, loc, 1.4426950408889634)));
    else if (isa<math::Exp2Op>(op))
      y = call(r, loc, ex2, x);
    else if (isa<math::LogOp>(op))
      y = arith::MulFOp::create(r, loc, call(r, loc, lg2, x),
                                c(r, loc, 0.6931471805599453));
    else if (isa<math::Log2Op>(op))
      y = call(r, loc, lg2, x);
    else if (isa<math::Log10Op>(op))
      y = arith::MulFOp::create(r, loc, call(r, loc, lg2, x),
                                c(r, loc, 0.30102999566398120));
    else if (isa<math::RsqrtOp>(op))
      y = call(r, loc, target.getMathIntrinsic(MathIntrinsic::rsqrt), x);
    else if (isa<math::SinOp>(op))
      y = call(r, loc, target.getMathIntrinsic(MathIntrinsic::sin), x);
    else if (isa<math::CosOp>(op))
      y = call(r, loc, target.getMathIntrinsic(MathIntrinsic::cos), x);
    else if (isa<math::FloorOp>(op))
      y = call(r, loc, target.getMathIntrinsic(MathIntrinsic::floor), x);
    else if (isa<math::CeilOp>(op))
      y = call(r, loc, target.getMathIntrinsic(MathIntrinsic::ceil), x);
    else {
      // tanh(x) = sign(x) (1 - e) / (1 + e), e = exp(-2|x|); near zero the
      // series x (1 - x^2 / 3) is more accurate.
      Value ax = math::AbsFOp::create(r, loc, x);
      Value e = call(
          r, loc, ex2,
          arith::MulFOp::create(r, loc, ax, c(r, loc, -2.8853900817779268)));
      Value one = c(r, loc, 1.0);
      Value t =
          arith::DivFOp::create(r, loc, arith::SubFOp::create(r, loc, one, e),
                                arith::AddFOp::create(r, loc, one, e));
      t = math::CopySignOp::create(r, loc, t, x);
      Value x2 = arith::MulFOp::create(r, loc, x, x);
      Value series = arith::MulFOp::create(
          r, loc, x,
          arith::SubFOp::create(
              r, loc, one,
              arith::MulFOp::create(r, loc, x2, c(r, loc, 1.0 / 3))));
      Value small = arith::CmpFOp::create(r, loc, arith::CmpFPredicate::OLT, ax,
                                          c(r, loc, 0.04));
      y = arith::SelectOp::create(r, loc, small, series, t);
    }
    if (!type.isF32())
      y = arith::TruncFOp::create(r, loc, type, y);
    r.replaceOp(op, y);
    return success();
  }
};
} // namespace

namespace {
/// TileLang's T.fast_rcp (an arith.divf of 1.0 with the `afn` flag, f32):
/// the target's approximate reciprocal (rcp.approx.ftz.f32 on NVIDIA).
struct FastReciprocal : public OpRewritePattern<arith::DivFOp> {
  FastReciprocal(MLIRContext *ctx, const GPUTargetInfo &target)
      : OpRewritePattern(ctx, /*benefit=*/2), target(target) {}

  const GPUTargetInfo &target;

  LogicalResult matchAndRewrite(arith::DivFOp op,
                                PatternRewriter &r) const override {
    StringRef rcp = target.getMathIntrinsic(MathIntrinsic::rcp);
    FloatAttr one;
    if (rcp.empty() || !op.getType().isF32() ||
        !bitEnumContainsAll(op.getFastmath(), arith::FastMathFlags::afn) ||
        !matchPattern(op.getLhs(), m_Constant(&one)) ||
        !one.getValue().isExactlyValue(1.0))
      return failure();
    r.replaceOp(op, LLVM::CallIntrinsicOp::create(r, op.getLoc(), op.getType(),
                                                  r.getStringAttr(rcp),
                                                  ValueRange{op.getRhs()})
                        .getResult(0));
    return success();
  }
};
} // namespace

namespace {
/// A float32 expansion: `expand` builds the value that replaces the op.
template <typename Op>
struct F32Expansion : public OpRewritePattern<Op> {
  F32Expansion(MLIRContext *ctx) : OpRewritePattern<Op>(ctx, /*benefit=*/2) {}

  virtual Value expand(ArithEmitter &e, Op op) const = 0;

  LogicalResult matchAndRewrite(Op op, PatternRewriter &r) const override {
    if (!op.getType().isF32())
      return failure();
    ArithEmitter e{r, op.getLoc()};
    r.replaceOp(op, expand(e, op));
    return success();
  }
};
} // namespace

namespace {
/// float32 atan, and so atan2 (MLIR's approximation of atan2 divides and
/// leaves a math.atan), asin and acos: |x| is reduced to t in [0, 0.66]
/// (above tan(3 pi / 8): t = -1 / |x| and pi / 2 is added; above 0.66:
/// t = (|x| - 1) / (|x| + 1) and pi / 4), then atan(t) = t + t z P(z) / Q(z),
/// z = t^2, with Cephes' degree 4 / 5 rational, whose Q is monic. MLIR's
/// own approximation (the same reduction and coefficients) leaves out Q's
/// leading z^5 term: up to 40 float32 ulps off just below 0.66 (3.4e-6
/// relative, where CUDA's atanf / atan2f are within 2-3 ulps); this is
/// within 1.3 ulps (float32 emulation of the instructions over [0, 10]).
struct AtanF32 : public F32Expansion<math::AtanOp> {
  using F32Expansion::F32Expansion;

  Value expand(ArithEmitter &e, math::AtanOp op) const override {
    auto c = [&](double v) { return e.cf(e.b.getF32Type(), v); };
    auto gt = [&](Value a, double v) {
      return e.cmp(arith::CmpFPredicate::OGT, a, c(v));
    };
    Value x = op.getOperand();
    Value ax = math::AbsFOp::create(e.b, e.loc, x);
    Value one = c(1.0);
    Value big = gt(ax, 2.414213562373095), mid = gt(ax, 0.66);
    Value num = e.sel(big, c(-1.0), e.sel(mid, e.sub(ax, one), ax));
    Value den = e.sel(big, ax, e.sel(mid, e.add(ax, one), one));
    Value t = e.div(num, den);
    Value z = e.mul(t, t);
    Value p = c(-8.750608600031904122785e-01);
    for (double k : {-1.615753718733365076637e+01, -7.500855792314704667340e+01,
                     -1.228866684490136173410e+02,
                     -6.485021904942025371773e+01})
      p = e.fma(p, z, c(k));
    Value q = e.add(z, c(2.485846490142306297962e+01));
    for (double k : {1.650270098316988542046e+02, 4.328810604912902668951e+02,
                     4.853903996359136964868e+02, 1.945506571482613964425e+02})
      q = e.fma(q, z, c(k));
    Value y = e.fma(e.div(e.mul(z, p), q), t, t);
    Value base = e.sel(big, c(M_PI / 2), e.sel(mid, c(M_PI / 4), c(0.0)));
    return math::CopySignOp::create(e.b, e.loc, e.add(base, y), x);
  }
};
} // namespace

namespace {
/// float32 atan2(y, x) with C's quadrants and special values (as CUDA's
/// atan2f): a = atan(min(|x|, |y|) / max(|x|, |y|)) in [0, pi / 4]
/// (AtanF32), reflected to pi / 2 - a when |y| > |x| and to pi - a when x
/// is negative (-0 included), then given y's sign. Both zero: 0 or pi;
/// both infinite: pi / 4 or 3 pi / 4; a NaN stays NaN. MLIR's
/// approximation chose the half-turn from the sign of atan(y / x), which
/// loses y's sign when y / x is zero: atan2(-1, -inf) and atan2(-0, -1)
/// gave +pi where they are -pi.
struct Atan2F32 : public F32Expansion<math::Atan2Op> {
  using F32Expansion::F32Expansion;

  Value expand(ArithEmitter &e, math::Atan2Op op) const override {
    auto c = [&](double v) { return e.cf(e.b.getF32Type(), v); };
    using P = arith::CmpFPredicate;
    Value y = op.getLhs(), x = op.getRhs();
    Value ax = math::AbsFOp::create(e.b, e.loc, x);
    Value ay = math::AbsFOp::create(e.b, e.loc, y);
    Value steep = e.cmp(P::OGT, ay, ax);
    Value t = e.div(e.sel(steep, ax, ay), e.sel(steep, ay, ax));
    auto both = [&](Value v) { // |x| == v and |y| == v (no NaN)
      return e.andOf(e.cmp(P::OEQ, ax, v), e.cmp(P::OEQ, ay, v));
    };
    t = e.sel(both(c(0.0)), c(0.0), t);
    t = e.sel(both(c(std::numeric_limits<double>::infinity())), c(1.0), t);
    Value a = math::AtanOp::create(e.b, e.loc, t);
    a = e.sel(steep, e.sub(c(M_PI / 2), a), a);
    Value negative =
        e.cmp(P::OLT, math::CopySignOp::create(e.b, e.loc, c(1.0), x), c(0.0));
    a = e.sel(negative, e.sub(c(M_PI), a), a);
    return math::CopySignOp::create(e.b, e.loc, a, y);
  }
};
} // namespace

/// asin(x) = atan2(x, sqrt((1 - x)(1 + x))), acos(x) = atan2(sqrt(..), x):
/// atan2 then takes Atan2F32 (float32, and 16-bit types through float32).
template <typename Op>
struct InverseSineToAtan2 : public OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;

  LogicalResult matchAndRewrite(Op op, PatternRewriter &r) const override {
    Location loc = op.getLoc();
    Value x = op.getOperand();
    auto ft = dyn_cast<FloatType>(x.getType());
    if (!ft)
      return failure();
    Value one = arith::ConstantFloatOp::create(
        r, loc, ft, APFloat(ft.getFloatSemantics(), 1));
    Value side = math::SqrtOp::create(
        r, loc,
        arith::MulFOp::create(r, loc, arith::SubFOp::create(r, loc, one, x),
                              arith::AddFOp::create(r, loc, one, x)));
    if (std::is_same<Op, math::AsinOp>::value)
      r.replaceOpWithNewOp<math::Atan2Op>(op, x, side);
    else
      r.replaceOpWithNewOp<math::Atan2Op>(op, side, x);
    return success();
  }
};

/// Math functions the target has no instruction for: tan and the
/// hyperbolic functions expand into exp, log, sin and cos (which take the
/// intrinsics above), asin and acos into atan2; atan, atan2, erf, erfc,
/// log1p, expm1 and cbrt are MLIR's polynomial approximations, through f32
/// for 16-bit types (atan's polynomial and atan2's quadrants are ours:
/// AtanF32, Atan2F32).
static bool approximatedOnGPU(StringRef name) {
  return llvm::is_contained({"math.atan", "math.atan2", "math.erf",
                             "math.erfc", "math.log1p", "math.expm1",
                             "math.cbrt"},
                            name);
}

LogicalResult mlir::tile::lowerMathToIntrinsics(gpu::GPUFuncOp gpuFunc,
                                                const GPUTargetInfo &target) {
  MLIRContext *ctx = gpuFunc.getContext();
  {
    RewritePatternSet expansions(ctx);
    math::populateExpansionPatterns(
        expansions, {"tan", "sinh", "cosh", "asinh", "acosh", "atanh"});
    expansions.add<InverseSineToAtan2<math::AsinOp>,
                   InverseSineToAtan2<math::AcosOp>, AtanF32, Atan2F32>(ctx);
    populateMathF32ExpansionPatterns(expansions, approximatedOnGPU);
    populateMathPolynomialApproximationPatterns(expansions, approximatedOnGPU);
    if (failed(applyPatternsGreedily(gpuFunc, std::move(expansions))))
      return gpuFunc.emitOpError("math expansion did not converge");
  }
  RewritePatternSet patterns(ctx);
  patterns.add<MathToGPUIntrinsics>(ctx, target);
  patterns.add<FastReciprocal>(ctx, target);
  populateF64MathPatterns(patterns);
  if (failed(applyPatternsGreedily(gpuFunc, std::move(patterns))))
    return gpuFunc.emitOpError("math lowering did not converge");
  WalkResult f64 = gpuFunc.walk([&](Operation *op) {
    if (isa<math::MathDialect>(op->getDialect()) &&
        !isa<math::AbsFOp, math::AbsIOp, math::FloorOp, math::CeilOp,
             math::SqrtOp, math::CopySignOp, math::FmaOp, math::TruncOp,
             math::RoundOp, math::RoundEvenOp, math::CountLeadingZerosOp,
             math::CtPopOp>(op)) {
      op->emitError("this math function on ")
          << op->getResult(0).getType() << " is not supported on "
          << target.getPlatformName() << " targets yet";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(f64.wasInterrupted());
}

/// Rounded arithmetic (tile.ieee) is scalar: each instance of a parallel
/// body computes its own.
void mlir::tile::registerMathLowerings(LoweringTable &table) {
  table.add<IEEEOp>(
      [](KernelLowering &kl, IEEEOp op, OpBuilder &b, IRMapping &map,
         Context &) {
        SmallVector<Value> operands;
        for (Value v : op.getOperands())
          operands.push_back(map.lookupOrDefault(v));
        map.map(op.getResult(),
                kl.target.emitRoundedArith(b, kl.loc, op.getKind(),
                                           op.getMode(), operands));
        return success();
      },
      InParallel::lowered);
}
