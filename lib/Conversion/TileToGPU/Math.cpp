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
#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::tile;

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
             math::RsqrtOp, math::SinOp, math::CosOp, math::TanhOp>(op) &&
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

LogicalResult mlir::tile::lowerMathToIntrinsics(gpu::GPUFuncOp gpuFunc,
                                                const GPUTargetInfo &target) {
  RewritePatternSet patterns(gpuFunc.getContext());
  patterns.add<MathToGPUIntrinsics>(gpuFunc.getContext(), target);
  if (failed(applyPatternsGreedily(gpuFunc, std::move(patterns))))
    return gpuFunc.emitOpError("math lowering did not converge");
  WalkResult f64 = gpuFunc.walk([&](Operation *op) {
    if (isa<math::MathDialect>(op->getDialect()) &&
        !isa<math::AbsFOp, math::AbsIOp, math::FloorOp, math::CeilOp,
             math::SqrtOp, math::CopySignOp, math::FmaOp>(op)) {
      op->emitError("this math function on ")
          << op->getResult(0).getType() << " is not supported on "
          << target.getPlatformName() << " targets yet";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(f64.wasInterrupted());
}
