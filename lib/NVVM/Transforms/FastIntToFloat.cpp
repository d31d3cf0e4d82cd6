//===- FastIntToFloat.cpp - small integers to f16/bf16 without I2F --------===//
//
// Part of tilelang-mlir.
//
// The "magic number" conversion of integers whose range is narrow (the
// nibbles and bytes of quantized weights): see the description of
// tile-fast-int-to-float in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/NVVM/Transforms/Passes.h"

#include "mlir/Analysis/DataFlow/IntegerRangeAnalysis.h"
#include "mlir/Analysis/DataFlow/Utils.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILEFASTINTTOFLOAT
#include "dialects/NVVM/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;

namespace {

/// A float format for the trick: the bits of 2^p (whose ulp is 1), the
/// integer type of its bits and how many consecutive integers it holds
/// exactly above 2^p (2^p itself).
struct Magic {
  FloatType type;
  IntegerType bits;
  uint64_t base; // bit pattern of 2^p
  int64_t span;  // 2^p
};

/// x (an integer in [lo, lo + span)) as `m.type`, exactly.
Value magicConvert(OpBuilder &b, Location loc, Value x, bool isSigned,
                   int64_t lo, const Magic &m) {
  Type i32 = b.getI32Type();
  // A signed byte spanning [-128, 127]: with the low byte of the base
  // clear, base + (x + 128) is the zero-extended byte with its sign bit
  // flipped, OR the base: one xor instead of a sign extension and an add.
  Value byte = x;
  if (auto ext = x.getDefiningOp<arith::ExtSIOp>())
    byte = ext.getIn();
  if (isSigned && lo == -128 && byte.getType().isInteger(8) &&
      (m.base & 0xFF) == 0) {
    Value z = arith::ExtUIOp::create(b, loc, i32, byte);
    Value mask = arith::ConstantOp::create(
        b, loc, b.getI32IntegerAttr(static_cast<int32_t>(m.base | 0x80)));
    Value bits = arith::XOrIOp::create(b, loc, z, mask);
    if (m.bits.getWidth() < 32)
      bits = arith::TruncIOp::create(b, loc, m.bits, bits);
    Value f = arith::BitcastOp::create(b, loc, m.type, bits);
    Value bias = arith::ConstantOp::create(
        b, loc, b.getFloatAttr(m.type, static_cast<double>(m.span + 128)));
    return arith::SubFOp::create(b, loc, f, bias);
  }
  unsigned width = cast<IntegerType>(x.getType()).getWidth();
  Value wide = x;
  if (width < 32)
    wide = isSigned ? arith::ExtSIOp::create(b, loc, i32, x).getResult()
                    : arith::ExtUIOp::create(b, loc, i32, x).getResult();
  else if (width > 32)
    wide = arith::TruncIOp::create(b, loc, i32, x);
  // bits = base + (x - lo): 2^p + x - lo as a float.
  Value offset = arith::ConstantOp::create(
      b, loc, b.getI32IntegerAttr(static_cast<int32_t>(m.base - lo)));
  Value sum = arith::AddIOp::create(b, loc, wide, offset);
  Value bits = sum;
  if (m.bits.getWidth() < 32)
    bits = arith::TruncIOp::create(b, loc, m.bits, sum);
  Value f = arith::BitcastOp::create(b, loc, m.type, bits);
  // (2^p + x - lo) - (2^p - lo) = x: both operands and the difference are
  // integers the format holds, so the subtraction is exact.
  Value bias = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(m.type, static_cast<double>(m.span - lo)));
  return arith::SubFOp::create(b, loc, f, bias);
}

struct TileFastIntToFloatPass
    : public tile::impl::TileFastIntToFloatBase<TileFastIntToFloatPass> {
  void runOnOperation() override {
    Operation *root = getOperation();
    DataFlowSolver solver;
    dataflow::loadBaselineAnalyses(solver);
    solver.load<dataflow::IntegerRangeAnalysis>();
    if (failed(solver.initializeAndRun(root)))
      return signalPassFailure();

    SmallVector<Operation *> casts;
    root->walk([&](Operation *op) {
      if (isa<arith::SIToFPOp, arith::UIToFPOp>(op))
        casts.push_back(op);
    });
    MLIRContext *ctx = &getContext();
    Magic f16{Float16Type::get(ctx), IntegerType::get(ctx, 16), 0x6400, 1024};
    Magic bf16{BFloat16Type::get(ctx), IntegerType::get(ctx, 16), 0x4300, 128};
    Magic f32{Float32Type::get(ctx), IntegerType::get(ctx, 32), 0x4B000000,
              int64_t(1) << 23};
    for (Operation *op : casts) {
      Value x = op->getOperand(0);
      Type to = op->getResult(0).getType();
      auto intType = dyn_cast<IntegerType>(x.getType());
      if (!intType || !(to.isF16() || to.isBF16() || to.isF32()))
        continue; // vectors, index and other targets stay as they are
      auto *lattice =
          solver.lookupState<dataflow::IntegerValueRangeLattice>(x);
      if (!lattice || lattice->getValue().isUninitialized())
        continue;
      const ConstantIntRanges &range = lattice->getValue().getValue();
      bool isSigned = isa<arith::SIToFPOp>(op);
      APInt loA = isSigned ? range.smin() : range.umin();
      APInt hiA = isSigned ? range.smax() : range.umax();
      if (intType.getWidth() > 32 &&
          (isSigned ? !loA.isSignedIntN(32) || !hiA.isSignedIntN(32)
                    : !hiA.isIntN(31)))
        continue;
      int64_t lo = isSigned ? loA.getSExtValue() : int64_t(loA.getZExtValue());
      int64_t hi = isSigned ? hiA.getSExtValue() : int64_t(hiA.getZExtValue());
      OpBuilder b(op);
      Location loc = op->getLoc();
      Value result;
      if (to.isF16() && hi - lo < f16.span && lo >= -1024 && lo <= 1024) {
        result = magicConvert(b, loc, x, isSigned, lo, f16);
      } else if (to.isBF16() && hi - lo < bf16.span && lo >= -128 &&
                 lo <= 128) {
        result = magicConvert(b, loc, x, isSigned, lo, bf16);
      } else if (to.isF32() && lo >= -(int64_t(1) << 22) &&
                 hi <= (int64_t(1) << 22)) {
        // Within 2^23 integers of each other, all of which f32 holds above
        // 2^23 (the GEMV's f32 dequantization: no I2F per weight).
        result = magicConvert(b, loc, x, isSigned, lo, f32);
      } else if (to.isBF16() && lo >= -256 && hi <= 256) {
        // Through f32: |x| <= 256 has at most 8 significant bits, which
        // bf16 holds, so the truncation is exact.
        result = arith::TruncFOp::create(
            b, loc, to, magicConvert(b, loc, x, isSigned, lo, f32));
      } else {
        continue;
      }
      op->getResult(0).replaceAllUsesWith(result);
      op->erase();
    }
  }
};

} // namespace
