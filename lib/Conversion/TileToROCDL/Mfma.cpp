//===- Mfma.cpp - gemms on AMD matrix cores
//---------------------------------===//
//
// Part of tilelang-mlir.
//
// MFMA 32x32x8 (f16, bf16_1k) gemms for wave64 CDNA chips (gfx90a, gfx942,
// gfx950), operands gathered from the LDS per lane.
//
//===----------------------------------------------------------------------===//

#include "ROCDLKernelLowering.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tile;

/// A gemm on AMD matrix cores (MFMA 32x32x8, wave64): waves form a
/// wm x wn grid (the `mfma` attribute), each owning (M / wm) x (N / wn) made
/// of 32x32 blocks. Per K step of 8, lane l holds A[row0 + l % 32][k0 +
/// 4 (l / 32) + i] and B[k0 + 4 (l / 32) + i][col0 + l % 32] (i < 4), and
/// the block's 16 accumulators (column l % 32, rows 8 j + 4 (l / 32) + i) in
/// register order 4 j + i, as layout inference laid them out.
LogicalResult ROCDLKernelLowering::gemmMfma(GemmOp op, OpBuilder &b,
                                            const Buffer &a, const Buffer &bb,
                                            const Buffer &c) {
  auto grid = op->getAttrOfType<DenseI64ArrayAttr>("mfma");
  int64_t wm = grid[0], wn = grid[1];
  int64_t m = op.getM(), n = op.getN(), k = op.getK();
  int64_t tm = m / wm, tn = n / wn, mTiles = tm / 32, nTiles = tn / 32;
  Type elem = a.elementType, acc = c.elementType;
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  if (!(elem.isF16() || elem.isBF16()) || !acc.isF32())
    return op.emitOpError("MFMA gemms support f16/bf16 inputs with an f32 "
                          "accumulator, got ")
           << elem << " -> " << acc;
  if (failed(checkAccumulatorLayout(op, *c.layout, numThreads)))
    return failure();
  Value wave = arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, 64));
  Value lane = arith::RemUIOp::create(b, loc, tid, cIdx(b, loc, 64));
  Value l32 = arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, 32));
  Value kq = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, lane, cIdx(b, loc, 32)),
      cIdx(b, loc, 4));
  auto [rowBase, colBase] = gridTileOrigin(b, loc, wave, wn, tm, tn);
  auto add = [&](Value x, Value y, int64_t cst) -> Value {
    Value v = arith::AddIOp::create(b, loc, x, y);
    return cst ? arith::AddIOp::create(b, loc, v, cIdx(b, loc, cst)).getResult()
               : v;
  };
  // The intrinsics take bf16 as i16.
  Type lanes = elem.isBF16() ? Type(b.getI16Type()) : elem;
  auto operandType = VectorType::get({4}, lanes);
  auto accType = VectorType::get({16}, acc);
  if (op.getClearAccum())
    for (int64_t r = 0; r < c.layout->getNumRegs(); ++r)
      regStore(b, c, r, zeroOf(b, loc, acc));
  auto operand = [&](const Buffer &buf, bool transposed, Value mn, Value kk) {
    SmallVector<Value> elems;
    for (int64_t i = 0; i < 4; ++i) {
      Value ki = arith::AddIOp::create(b, loc, kk, cIdx(b, loc, i));
      Value v = transposed ? loadElement(b, buf, {ki, mn})
                           : loadElement(b, buf, {mn, ki});
      if (elem.isBF16())
        v = arith::BitcastOp::create(b, loc, b.getI16Type(), v);
      elems.push_back(v);
    }
    return vector::FromElementsOp::create(b, loc, operandType, elems);
  };
  Value zero32 = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
  for (int64_t k0 = 0; k0 < k; k0 += 8) {
    Value kk = add(kq, cIdx(b, loc, 0), k0);
    SmallVector<Value> aOps, bOps;
    for (int64_t mt = 0; mt < mTiles; ++mt)
      aOps.push_back(operand(a, ta, add(rowBase, l32, mt * 32), kk));
    for (int64_t nt = 0; nt < nTiles; ++nt)
      // B is K x N (row-major K) unless transposed (stored N x K).
      bOps.push_back(operand(bb, !tb, add(colBase, l32, nt * 32), kk));
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      for (int64_t nt = 0; nt < nTiles; ++nt) {
        int64_t base = (mt * nTiles + nt) * 16;
        SmallVector<Value> cs;
        for (int64_t r = 0; r < 16; ++r)
          cs.push_back(regLoad(b, c, base + r));
        Value cv = vector::FromElementsOp::create(b, loc, accType, cs);
        SmallVector<Value> args = {aOps[mt], bOps[nt], cv,
                                   zero32,   zero32,   zero32};
        Value d =
            elem.isF16()
                ? ROCDL::mfma_f32_32x32x8f16::create(b, loc, accType, args)
                      .getResult()
                : ROCDL::mfma_f32_32x32x8bf16_1k::create(b, loc, accType, args)
                      .getResult();
        for (int64_t r = 0; r < 16; ++r)
          regStore(b, c, base + r,
                   vector::ExtractOp::create(b, loc, d, ArrayRef<int64_t>{r}));
      }
    }
  }
  return success();
}
