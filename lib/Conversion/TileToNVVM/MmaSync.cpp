//===- MmaSync.cpp - gemms on mma.sync and mma.sp
//---------------------------===//
//
// Part of tilelang-mlir.
//
// Warp-level tensor-core gemms: ldmatrix + mma.sync for f16/bf16
// (m16n8k16), tf32 (m16n8k8) and int8 (m16n8k32) on sm_80 and later, f16 as
// pairs of m16n8k8 on Turing (sm_75), and the 2:4 sparse mma.sp m16n8k32
// (sm_80 and later) with its metadata registers.
//
//===----------------------------------------------------------------------===//

#include "NVVMKernelLowering.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tile;

/// Splits the rows of a fragment vector (vector<R x P x T>) into the 32-bit
/// registers mma.sync takes: f16 pairs stay vector<2xf16>, everything else
/// is bitcast to i32.
static SmallVector<Value> mmaRegisters(OpBuilder &b, Location loc, Value frag) {
  auto type = cast<VectorType>(frag.getType());
  Type elem = type.getElementType();
  SmallVector<Value> regs;
  for (int64_t r = 0; r < type.getDimSize(0); ++r) {
    Value row = vector::ExtractOp::create(b, loc, frag, ArrayRef<int64_t>{r});
    if (elem.isF16()) {
      regs.push_back(row);
      continue;
    }
    Value bits = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), row);
    regs.push_back(
        vector::ExtractOp::create(b, loc, bits, ArrayRef<int64_t>{0}));
  }
  return regs;
}

static SmallVector<Value> emitMma(OpBuilder &b, Location loc, Value aFrag,
                                  Value bFrag, ArrayRef<Value> c, Type elem,
                                  Type acc, int64_t kStep, bool int4,
                                  bool sm75);

/// Turing (sm_75) has no f16 m16n8k16: the step is two m16n8k8, the first on
/// A's registers 0 and 1 (K 0..7 of rows g and g + 8) and B's register 0,
/// the second on A's 2 and 3 and B's 1 (K 8..15): the k16 fragments are the
/// two k8 fragments side by side.
static SmallVector<Value> emitMmaK8Pair(OpBuilder &b, Location loc,
                                        Value aFrag, Value bFrag,
                                        ArrayRef<Value> c, Type elem,
                                        Type acc) {
  SmallVector<Value> d(c.begin(), c.end());
  for (int64_t half = 0; half < 2; ++half) {
    Value a = vector::ExtractStridedSliceOp::create(
        b, loc, aFrag, ArrayRef<int64_t>{2 * half, 0},
        ArrayRef<int64_t>{2, 2}, ArrayRef<int64_t>{1, 1});
    Value bh = vector::ExtractStridedSliceOp::create(
        b, loc, bFrag, ArrayRef<int64_t>{half, 0}, ArrayRef<int64_t>{1, 2},
        ArrayRef<int64_t>{1, 1});
    d = emitMma(b, loc, a, bh, d, elem, acc, 8, false, false);
  }
  return d;
}

/// One m16n8k`kStep` mma.sync on four accumulator scalars.
/// With `int4`, the i8 fragments hold two 4-bit integers a byte (the
/// m16n8k64 .s4 fragments are the m16n8k32 .s8 ones of the bytes, the
/// lower K index in the low nibble): the instruction is m16n8k(2 kStep).
/// `sm75`: Turing's f16 k16 step as two k8 instructions.
static SmallVector<Value> emitMma(OpBuilder &b, Location loc, Value aFrag,
                                  Value bFrag, ArrayRef<Value> c, Type elem,
                                  Type acc, int64_t kStep, bool int4,
                                  bool sm75) {
  if (sm75 && elem.isF16() && kStep == 16)
    return emitMmaK8Pair(b, loc, aFrag, bFrag, c, elem, acc);
  NVVM::MMATypes ptx = elem.isF16()    ? NVVM::MMATypes::f16
                       : elem.isBF16() ? NVVM::MMATypes::bf16
                       : elem.isF32()  ? NVVM::MMATypes::tf32
                       : int4          ? NVVM::MMATypes::s4
                                       : NVVM::MMATypes::s8;
  SmallVector<Value> aRegs = mmaRegisters(b, loc, aFrag);
  SmallVector<Value> bRegs = mmaRegisters(b, loc, bFrag);
  SmallVector<Value> cRegs;
  Type resultType;
  MLIRContext *ctx = b.getContext();
  if (acc.isF16()) {
    auto pair = VectorType::get({2}, acc);
    for (int i = 0; i < 2; ++i)
      cRegs.push_back(vector::FromElementsOp::create(
          b, loc, pair, ValueRange{c[2 * i], c[2 * i + 1]}));
    resultType = LLVM::LLVMStructType::getLiteral(ctx, {pair, pair});
  } else {
    cRegs.assign(c.begin(), c.end());
    resultType = LLVM::LLVMStructType::getLiteral(ctx, {acc, acc, acc, acc});
  }
  std::optional<NVVM::MMAIntOverflow> overflow;
  if (ptx == NVVM::MMATypes::s8 || ptx == NVVM::MMATypes::s4)
    overflow = NVVM::MMAIntOverflow::wrapped;
  auto mma = NVVM::MmaOp::create(
      b, loc, resultType, aRegs, bRegs, cRegs,
      {16, 8, int4 ? 2 * kStep : kStep}, std::nullopt,
      overflow, std::array<NVVM::MMATypes, 2>{ptx, ptx},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> out;
  if (acc.isF16()) {
    for (int64_t i = 0; i < 2; ++i) {
      Value pair = LLVM::ExtractValueOp::create(b, loc, mma, i);
      for (int64_t j = 0; j < 2; ++j)
        out.push_back(
            vector::ExtractOp::create(b, loc, pair, ArrayRef<int64_t>{j}));
    }
  } else {
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, mma, i));
  }
  return out;
}

LogicalResult NVVMKernelLowering::gemmMma(GemmOp op, OpBuilder &b,
                                          const Buffer &a, const Buffer &bb,
                                          const Buffer &c,
                                          ArrayRef<int64_t> aRegs) {
  if (failed(checkAccumulatorLayout(op, *c.layout, numThreads)))
    return failure();
  auto partition = op->getAttrOfType<DenseI64ArrayAttr>("warp_partition");
  int64_t warpsM = partition[0], warpsN = partition[1];
  int64_t m = op.getM(), n = op.getN(), k = op.getK();
  int64_t wm = m / warpsM, wn = n / warpsN;
  int64_t mTiles = wm / 16, nTiles = wn / 8;
  Type elem = a.elementType, acc = c.elementType;
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  bool is16 = elem.isF16() || elem.isBF16();
  bool isTf32 = elem.isF32();
  int64_t kStep = is16 ? 16 : (isTf32 ? 8 : 32);
  MLIRContext *ctx = b.getContext();

  Value warp = arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, 32));
  Value lane = arith::RemUIOp::create(b, loc, tid, cIdx(b, loc, 32));
  Value warpM = arith::DivUIOp::create(b, loc, warp, cIdx(b, loc, warpsN));
  Value warpN = arith::RemUIOp::create(b, loc, warp, cIdx(b, loc, warpsN));
  Value rowBase = arith::MulIOp::create(b, loc, warpM, cIdx(b, loc, wm));
  Value colBase = arith::MulIOp::create(b, loc, warpN, cIdx(b, loc, wn));
  auto addv = [&](Value x, Value y) -> Value {
    return arith::AddIOp::create(b, loc, x, y);
  };
  Value g = arith::DivUIOp::create(b, loc, lane, cIdx(b, loc, 4)); // groupID
  Value t4 = arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, 4));
  Value l8 = arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, 8));
  Value q = arith::DivUIOp::create(b, loc, lane, cIdx(b, loc, 8)); // 0..3
  Value qHalf = arith::DivUIOp::create(b, loc, q, cIdx(b, loc, 2));
  Value qOdd = arith::RemUIOp::create(b, loc, q, cIdx(b, loc, 2));
  auto times8 = [&](Value x) -> Value {
    return arith::MulIOp::create(b, loc, x, cIdx(b, loc, 8));
  };

  if (op.getClearAccum())
    for (int64_t r = 0; r < c.layout->getNumRegs(); ++r)
      regStore(b, c, r, zeroOf(b, loc, acc));

  // Element (row, col) of the logical A (M x K) / B (K x N).
  auto aAt = [&](Value row, Value col) {
    return ta ? SmallVector<Value>{col, row} : SmallVector<Value>{row, col};
  };
  auto bAt = [&](Value kk, Value col) {
    return tb ? SmallVector<Value>{col, kk} : SmallVector<Value>{kk, col};
  };

  for (int64_t k0 = 0; k0 < k; k0 += kStep) {
    // A fragments, one per m tile.
    SmallVector<Value> aFrags;
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      if (!aRegs.empty()) { // A in registers (see registerOperandA)
        int64_t per = is16 ? 2 : (isTf32 ? 1 : 4);
        int64_t first = ((k0 / kStep) * mTiles + mt) * 4 * per;
        SmallVector<Value> elems;
        for (int64_t i = 0; i < 4 * per; ++i)
          elems.push_back(regLoad(b, a, aRegs[first + i]));
        aFrags.push_back(vector::FromElementsOp::create(
            b, loc, VectorType::get({4, per}, elem), elems));
        continue;
      }
      Value m0 = addConst(b, loc, rowBase, mt * 16);
      if (is16 && !ta) {
        aFrags.push_back(ldmatrixA16(b, a, m0, cIdx(b, loc, k0)));
        continue;
      }
      if (is16) {
        // stored K x M: rows k0 + lane % 8 + (q / 2) * 8, cols m0 + (q % 2) * 8
        Value off = sharedOffset(b, a,
                                 {addConst(b, loc, addv(l8, times8(qHalf)), k0),
                                  addv(m0, times8(qOdd))});
        aFrags.push_back(nvgpu::LdMatrixOp::create(
            b, loc, VectorType::get({4, 2}, elem), a.memref, ValueRange{off},
            /*transpose=*/true, /*numTiles=*/4));
        continue;
      }
      // tf32 / int8: element loads following the mma fragment layout.
      int64_t per = isTf32 ? 1 : 4;
      SmallVector<Value> elems;
      for (int64_t reg = 0; reg < 4; ++reg) {
        Value row = addv(m0, addConst(b, loc, g, (reg % 2) * 8));
        for (int64_t e = 0; e < per; ++e) {
          Value col =
              isTf32
                  ? addConst(b, loc, t4, k0 + (reg / 2) * 4)
                  : addConst(b, loc,
                             arith::MulIOp::create(b, loc, t4, cIdx(b, loc, 4)),
                             k0 + (reg / 2) * 16 + e);
          elems.push_back(loadElement(b, a, aAt(row, col)));
        }
      }
      aFrags.push_back(vector::FromElementsOp::create(
          b, loc, VectorType::get({4, per}, elem), elems));
    }
    // B fragments, one per n tile; 16-bit ones two n tiles to an
    // ldmatrix.x4 where the warp has an even number of them.
    SmallVector<Value> bFrags;
    for (int64_t nt = 0; nt < nTiles; ++nt) {
      Value n0 = addConst(b, loc, colBase, nt * 8);
      if (is16 && nTiles % 2 == 0) {
        if (nt % 2 == 0) {
          Value pair =
              ldmatrixB16(b, bb, tb, cIdx(b, loc, k0), n0, 16, /*pair=*/true);
          for (int64_t half = 0; half < 2; ++half)
            bFrags.push_back(vector::ExtractStridedSliceOp::create(
                b, loc, pair, ArrayRef<int64_t>{2 * half, 0},
                ArrayRef<int64_t>{2, 2}, ArrayRef<int64_t>{1, 1}));
        }
        continue;
      }
      if (is16) {
        bFrags.push_back(ldmatrixB16(b, bb, tb, cIdx(b, loc, k0), n0, 16));
        continue;
      }
      int64_t per = isTf32 ? 1 : 4;
      SmallVector<Value> elems;
      for (int64_t reg = 0; reg < 2; ++reg) {
        Value col = addv(n0, g);
        for (int64_t e = 0; e < per; ++e) {
          Value kk =
              isTf32
                  ? addConst(b, loc, t4, k0 + reg * 4)
                  : addConst(b, loc,
                             arith::MulIOp::create(b, loc, t4, cIdx(b, loc, 4)),
                             k0 + reg * 16 + e);
          elems.push_back(loadElement(b, bb, bAt(kk, col)));
        }
      }
      bFrags.push_back(vector::FromElementsOp::create(
          b, loc, VectorType::get({2, per}, elem), elems));
    }
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      for (int64_t nt = 0; nt < nTiles; ++nt) {
        int64_t base = mt * 4 * nTiles + nt * 4;
        SmallVector<Value> cs;
        for (int64_t i = 0; i < 4; ++i)
          cs.push_back(regLoad(b, c, base + i));
        SmallVector<Value> ds =
            emitMma(b, loc, aFrags[mt], bFrags[nt], cs, elem, acc, kStep,
                    op.getInt4(), target.getChipInfo().arch < 80);
        for (int64_t i = 0; i < 4; ++i)
          regStore(b, c, base + i, ds[i]);
      }
    }
  }
  (void)ctx;
  return success();
}

/// The m16 x k16 A fragment of mma.sync (four 32-bit registers of 16-bit
/// pairs) from a shared, row-major A at (m0, k0): one ldmatrix.x4, lanes
/// addressing rows m0 + lane % 16 at columns k0 + (lane / 16) * 8. The
/// sparse instructions read their compressed A (m16 x 16 kept values) the
/// same way.
Value NVVMKernelLowering::ldmatrixA16(OpBuilder &b, const Buffer &a, Value m0,
                                      Value k0) {
  Value lane = arith::RemUIOp::create(b, loc, tid, cIdx(b, loc, 32));
  Value row = arith::AddIOp::create(
      b, loc, m0, arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, 16)));
  Value col = arith::AddIOp::create(
      b, loc, k0,
      arith::MulIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, lane, cIdx(b, loc, 16)),
          cIdx(b, loc, 8)));
  return nvgpu::LdMatrixOp::create(
      b, loc, VectorType::get({4, 2}, a.elementType), a.memref,
      ValueRange{sharedOffset(b, a, {row, col})}, /*transpose=*/false,
      /*numTiles=*/4);
}

/// The k`kRows` x n8 B fragment of mma (kRows / 8 registers of 16-bit pairs:
/// register r holds rows 8r + 2 (lane % 4) + {0, 1} of column lane / 4) at
/// (k0, n0) of a shared B stored K x N (a transposing ldmatrix, lanes
/// addressing rows k0 + lane % kRows) or N x K (`tb`: rows n0 + lane % 8 at
/// columns k0 + ((lane / 8) % (kRows / 8)) * 8). kRows is 16 (mma.sync
/// m16n8k16) or 32 (the sparse m16n8k32). With `pair` (kRows 16) one
/// ldmatrix.x4 loads the fragments of n tiles n0 and n0 + 8: lanes 16-31
/// address the second (8 columns on, stored K x N; 8 rows on, N x K), and
/// registers 0-1 are the first tile's fragment, 2-3 the second's.
Value NVVMKernelLowering::ldmatrixB16(OpBuilder &b, const Buffer &bb, bool tb,
                                      Value k0, Value n0, int64_t kRows,
                                      bool pair) {
  assert((!pair || kRows == 16) && "paired B fragments are k16");
  int64_t tiles = kRows / 8;
  Value lane = arith::RemUIOp::create(b, loc, tid, cIdx(b, loc, 32));
  if (pair)
    n0 = arith::AddIOp::create(
        b, loc, n0,
        arith::MulIOp::create(
            b, loc, arith::DivUIOp::create(b, loc, lane, cIdx(b, loc, 16)),
            cIdx(b, loc, 8)));
  Value off;
  if (!tb) {
    Value row = arith::AddIOp::create(
        b, loc, k0, arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, kRows)));
    off = sharedOffset(b, bb, {row, n0});
  } else {
    Value row = arith::AddIOp::create(
        b, loc, n0, arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, 8)));
    Value tile = arith::RemUIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, lane, cIdx(b, loc, 8)),
        cIdx(b, loc, tiles));
    Value col = arith::AddIOp::create(
        b, loc, k0, arith::MulIOp::create(b, loc, tile, cIdx(b, loc, 8)));
    off = sharedOffset(b, bb, {row, col});
  }
  int64_t matrices = pair ? 2 * tiles : tiles;
  return nvgpu::LdMatrixOp::create(
      b, loc, VectorType::get({matrices, 2}, bb.elementType), bb.memref,
      ValueRange{off}, /*transpose=*/!tb, /*numTiles=*/matrices);
}

/// The 32-bit metadata register this thread gives a sparse m16 x k32
/// instruction (mma.sp m16n8k32, or one warp's 16 rows of wgmma.sp
/// m64nNk32) whose rows start at `row0`, for the K step at dense column
/// `k0` of E's tile. PTX: with sparsity selector 0 the metadata comes from
/// threads 0 and 1 of each quad (lanes 4g, 4g + 1), with selector 1 from
/// threads 2 and 3; thread 4g + j holds in bits 0..15 the metadata of row
/// g of columns 16 (j % 2) .. 16 (j % 2) + 15 of the step and in bits
/// 16..31 that of row g + 8, four bits per group of four columns, group i
/// at bits 4i (the row-major E's 16-bit chunks as they are). With `pair`,
/// threads 2 and 3 load the next step's metadata instead of repeating
/// this one's, so one register serves two steps (selectors 0 then 1).
Value NVVMKernelLowering::gemmSpMetadata(OpBuilder &b, const Buffer &e,
                                         Value row0, int64_t k0, bool pair) {
  Type i32 = b.getI32Type();
  int64_t bits = e.elementType.getIntOrFloatBitWidth();
  Value lane = arith::RemUIOp::create(b, loc, tid, cIdx(b, loc, 32));
  Value g = arith::DivUIOp::create(b, loc, lane, cIdx(b, loc, 4));
  Value j = arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, 4));
  // 16-bit chunk (16 columns of A) of the row: k0 / 16 + j % 2 (+ 2 (j / 2)).
  Value chunk =
      arith::AddIOp::create(b, loc, cIdx(b, loc, k0 / 16),
                            arith::RemUIOp::create(b, loc, j, cIdx(b, loc, 2)));
  if (pair)
    chunk = arith::AddIOp::create(
        b, loc, chunk,
        arith::MulIOp::create(
            b, loc, arith::DivUIOp::create(b, loc, j, cIdx(b, loc, 2)),
            cIdx(b, loc, 2)));
  auto load32 = [&](Value row, Value col) -> Value {
    Value v = loadElement(b, e, {row, col});
    return bits == 32 ? v : arith::ExtUIOp::create(b, loc, i32, v).getResult();
  };
  auto i32c = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  auto chunkOf = [&](Value row) -> Value {
    if (bits == 16)
      return load32(row, chunk);
    if (bits == 32) {
      Value word =
          load32(row, arith::DivUIOp::create(b, loc, chunk, cIdx(b, loc, 2)));
      Value half = arith::IndexCastUIOp::create(
          b, loc, i32, arith::RemUIOp::create(b, loc, chunk, cIdx(b, loc, 2)));
      Value shift = arith::MulIOp::create(b, loc, half, i32c(16));
      return arith::AndIOp::create(
          b, loc, arith::ShRUIOp::create(b, loc, word, shift), i32c(0xFFFF));
    }
    // 8-bit metadata: two elements per chunk, low one first.
    Value col = arith::MulIOp::create(b, loc, chunk, cIdx(b, loc, 2));
    Value lo = load32(row, col);
    Value hi = load32(row, arith::AddIOp::create(b, loc, col, cIdx(b, loc, 1)));
    return arith::OrIOp::create(b, loc, lo,
                                arith::ShLIOp::create(b, loc, hi, i32c(8)));
  };
  Value row = arith::AddIOp::create(b, loc, row0, g);
  Value low = chunkOf(row);
  Value high = chunkOf(arith::AddIOp::create(b, loc, row, cIdx(b, loc, 8)));
  return arith::OrIOp::create(b, loc, low,
                              arith::ShLIOp::create(b, loc, high, i32c(16)));
}

/// A sparse gemm on mma.sp m16n8k32 (sm_80): warps split the tile as for
/// mma.sync (`warp_partition`), the accumulator is in mma's layout. Per K
/// step of 32 the compressed A fragment is the m16k16 fragment of A_sparse
/// (ldmatrix.x4 at column k0 / 2), B's is k32 x n8 (ldmatrix.x4), and the
/// metadata register comes from gemmSpMetadata, one per two steps.
LogicalResult NVVMKernelLowering::gemmSpMma(GemmSpOp op, OpBuilder &b,
                                            const Buffer &a, const Buffer &e,
                                            const Buffer &bb, const Buffer &c) {
  auto partition = op->getAttrOfType<DenseI64ArrayAttr>("warp_partition");
  int64_t warpsM = partition[0], warpsN = partition[1];
  int64_t m = op.getM(), n = op.getN(), k = op.getK();
  int64_t wm = m / warpsM, wn = n / warpsN;
  int64_t mTiles = wm / 16, nTiles = wn / 8, steps = k / 32;
  Type elem = a.elementType, acc = c.elementType;
  bool tb = op.getTransposeB();
  NVVM::MMATypes ptx =
      elem.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
  MLIRContext *ctx = b.getContext();
  Value warp = arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, 32));
  auto [rowBase, colBase] = gridTileOrigin(b, loc, warp, warpsN, wm, wn);
  if (op.getClearAccum())
    for (int64_t r = 0; r < c.layout->getNumRegs(); ++r)
      regStore(b, c, r, zeroOf(b, loc, acc));
  auto resultType = LLVM::LLVMStructType::getLiteral(ctx, {acc, acc, acc, acc});
  SmallVector<Value> meta(mTiles);
  for (int64_t s = 0; s < steps; ++s) {
    int64_t k0 = s * 32;
    // One metadata register per two steps: selector 0, then 1.
    bool pair = s % 2 == 0 && s + 1 < steps;
    if (s % 2 == 0)
      for (int64_t mt = 0; mt < mTiles; ++mt)
        meta[mt] =
            gemmSpMetadata(b, e, addConst(b, loc, rowBase, mt * 16), k0, pair);
    Value selector =
        arith::ConstantIntOp::create(b, loc, b.getI32Type(), s % 2);
    SmallVector<SmallVector<Value>> aRegs;
    for (int64_t mt = 0; mt < mTiles; ++mt)
      aRegs.push_back(
          mmaRegisters(b, loc,
                       ldmatrixA16(b, a, addConst(b, loc, rowBase, mt * 16),
                                   cIdx(b, loc, k0 / 2))));
    SmallVector<SmallVector<Value>> bRegs;
    for (int64_t nt = 0; nt < nTiles; ++nt)
      bRegs.push_back(
          mmaRegisters(b, loc,
                       ldmatrixB16(b, bb, tb, cIdx(b, loc, k0),
                                   addConst(b, loc, colBase, nt * 8), 32)));
    for (int64_t mt = 0; mt < mTiles; ++mt)
      for (int64_t nt = 0; nt < nTiles; ++nt) {
        int64_t base = mt * 4 * nTiles + nt * 4;
        SmallVector<Value> cs;
        for (int64_t i = 0; i < 4; ++i)
          cs.push_back(regLoad(b, c, base + i));
        auto mma = NVVM::MmaSpOp::create(
            b, loc, resultType, aRegs[mt], bRegs[nt], cs, meta[mt], selector,
            {16, 8, 32}, std::nullopt, std::array<NVVM::MMATypes, 2>{ptx, ptx});
        for (int64_t i = 0; i < 4; ++i)
          regStore(b, c, base + i,
                   LLVM::ExtractValueOp::create(b, loc, mma, i));
      }
  }
  return success();
}
