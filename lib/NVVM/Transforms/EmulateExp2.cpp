//===- EmulateExp2.cpp - part of the exp2s on the FMA pipe ----------------===//
//
// Part of tilelang-mlir.
//
// See the description of tile-emulate-exp2 in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/NVVM/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILEEMULATEEXP2
#include "dialects/NVVM/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kEx2 = "llvm.nvvm.ex2.approx.ftz.f32";

/// 2^f on [0, 1): a cubic with p(0) = 1 fitted for relative error (at
/// most 8.6e-5 in float32 arithmetic; float16 keeps 4.9e-4). Its values
/// lie in [1, 2), so p * 2^j is a normal float for every j in [-126, 127].
constexpr float kPoly[] = {1.0f, 0.6951168179512024f, 0.22764495015144348f,
                           0.077067069709301f};

/// The largest float below 128: floor(x) <= 127.
constexpr float kMax = 127.99999237060547f;

/// 1.5 * 2^23: a float32 sum with it in [2^23, 2^24) has unit spacing, so
/// rounding the sum toward minus infinity leaves floor(x) in its low
/// mantissa bits (two's complement, for |x| < 2^22).
constexpr float kMagic = 12582912.0f;

/// 2^x as the FMA pipe computes it: x clamped to [-126, 128) (NaN stays
/// NaN), j = floor(x) by one add rounded toward minus infinity, f = x - j
/// in [0, 1), p = 2^f by Horner's rule (three FMAs), and p times 2^j, whose
/// bits are j + 127 in the exponent field (a multiply, not an add to p's
/// exponent: NaN propagates).
Value emulate(OpBuilder &b, Location loc, Value x) {
  FloatType f32 = b.getF32Type();
  Type i32 = b.getI32Type();
  auto cf = [&](float v) {
    return arith::ConstantFloatOp::create(b, loc, f32, APFloat(v));
  };
  auto ci = [&](int32_t v) { return arith::ConstantIntOp::create(b, loc, i32, v); };
  x = arith::MaximumFOp::create(b, loc, x, cf(-126.0f));
  x = arith::MinimumFOp::create(b, loc, x, cf(kMax));
  Value t = LLVM::CallIntrinsicOp::create(b, loc, f32,
                                          b.getStringAttr("llvm.nvvm.add.rm.f"),
                                          ValueRange{x, cf(kMagic)})
                .getResult(0);
  Value j = arith::SubFOp::create(b, loc, t, cf(kMagic));
  Value f = arith::SubFOp::create(b, loc, x, j);
  Value p = cf(kPoly[3]);
  for (int k = 2; k >= 0; --k)
    p = LLVM::FMAOp::create(b, loc, p, f, cf(kPoly[k]));
  // (t's low bits are j in two's complement; shifted by 23 the magic
  // number's bits leave the word.)
  Value exponent = arith::AddIOp::create(
      b, loc,
      arith::ShLIOp::create(b, loc, arith::BitcastOp::create(b, loc, i32, t),
                            ci(23)),
      ci(127 << 23));
  return arith::MulFOp::create(b, loc, p,
                               arith::BitcastOp::create(b, loc, f32, exponent));
}

struct TileEmulateExp2Pass
    : public tile::impl::TileEmulateExp2Base<TileEmulateExp2Pass> {
  using TileEmulateExp2Base::TileEmulateExp2Base;

  void runOnOperation() override {
    if (every == 1 || every > 64) {
      getOperation()->emitError("tile-emulate-exp2: every=")
          << static_cast<unsigned>(every) << " must be 0 (off) or 2..64";
      return signalPassFailure();
    }
    if (every == 0)
      return;
    // The exp2s of each block in order (a thread's unrolled elements):
    // the last of every `every` moves to the FMA pipe.
    getOperation()->walk([&](Block *block) {
      unsigned seen = 0;
      for (Operation &op : llvm::make_early_inc_range(*block)) {
        auto call = dyn_cast<LLVM::CallIntrinsicOp>(op);
        // (by name and by type: a call of the name on other types is not
        // the intrinsic's and is left to LLVM's verifier)
        if (!call || call.getIntrin() != kEx2 || call.getArgs().size() != 1 ||
            call.getNumResults() != 1 || !call.getArgs()[0].getType().isF32() ||
            !call.getResult(0).getType().isF32())
          continue;
        if (++seen % every != 0)
          continue;
        OpBuilder b(call);
        Value y = emulate(b, call.getLoc(), call.getArgs()[0]);
        call.getResult(0).replaceAllUsesWith(y);
        call.erase();
      }
    });
  }
};

} // namespace
