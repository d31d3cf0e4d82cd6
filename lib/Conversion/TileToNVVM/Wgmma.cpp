//===- Wgmma.cpp - gemms on warpgroup MMA (sm_90a)
//--------------------------===//
//
// Part of tilelang-mlir.
//
// wgmma.mma_async on shared-memory descriptors (or A in registers), the
// accumulator structs, warpgroups taking turns at their gemms, and the 2:4
// sparse wgmma.mma_async.sp.
//
//===----------------------------------------------------------------------===//

#include "NVVMKernelLowering.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tile;

/// The accumulator of a wgmma gemm as one LLVM struct per 64-row tile
/// (`regsPerTile` members of type `acc`, the registers of `c` in order). A
/// cleared accumulator is not read: the first K step ignores it (scale-d =
/// 0), so its registers are left undefined instead of zeroed.
SmallVector<Value> NVVMKernelLowering::wgmmaAccumulators(OpBuilder &b,
                                                         const Buffer &c,
                                                         int64_t mTiles,
                                                         int64_t regsPerTile,
                                                         Type acc, bool clear) {
  SmallVector<Type> members(regsPerTile, acc);
  auto structType = LLVM::LLVMStructType::getLiteral(b.getContext(), members);
  SmallVector<Value> accs;
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    Value st = LLVM::UndefOp::create(b, loc, structType);
    if (!clear)
      for (int64_t i = 0; i < regsPerTile; ++i)
        st = LLVM::InsertValueOp::create(
            b, loc, st, regLoad(b, c, mt * regsPerTile + i), i);
    accs.push_back(st);
  }
  return accs;
}

/// Writes the structs of `wgmmaAccumulators` back into the registers of `c`.
void NVVMKernelLowering::storeWgmmaAccumulators(OpBuilder &b, const Buffer &c,
                                                ArrayRef<Value> accs,
                                                int64_t regsPerTile) {
  for (auto [mt, st] : llvm::enumerate(accs))
    for (int64_t i = 0; i < regsPerTile; ++i)
      regStore(b, c, mt * regsPerTile + i,
               LLVM::ExtractValueOp::create(b, loc, st, i));
}

/// The wgmma shared-memory matrix descriptor of the operand `buf` starting
/// at view element (row, col). The operand's rows are its strided dimension
/// (M or N when K-major, K when MN-major) and its columns the contiguous one.
/// Rows are `span` bytes apart within a panel (see sharedLinear), so a
/// K-major operand steps 8 * span bytes per 8 rows (stride byte offset) and
/// an MN-major one steps 8 * span bytes per 8 K rows (stride byte offset)
/// and rows * span bytes per panel of MN (leading byte offset).
///
/// With `from` (a descriptor of the same operand) the result is `from`'s
/// plus the distance between the two starts in 16-byte units: the start
/// address field is the low 14 bits (shared addresses stay below 2^18, so
/// the sum never carries out of it), and where the two starts differ only
/// by constants, as the K steps of one gemm do, LLVM folds the distance to
/// a constant: one add per wgmma instead of rebuilding the descriptor from
/// the address (64-bit and, shift and or).
NVVMKernelLowering::WgmmaDesc
NVVMKernelLowering::wgmmaDescriptor(OpBuilder &b, const Buffer &buf,
                                    bool kMajor, Value row, Value col,
                                    const WgmmaDesc *from) {
  int64_t eb = elementBytes(buf.elementType);
  int64_t span = buf.swizzle;
  int64_t rows = buf.allocShape[buf.allocShape.size() - 2];
  SmallVector<Value> at(buf.viewOffsets.begin(), buf.viewOffsets.end());
  Value idx[2] = {row, col};
  for (int k = 0; k < 2; ++k) {
    Value &a = at[buf.viewDims[k]];
    a = a ? arith::AddIOp::create(b, loc, a, idx[k]).getResult() : idx[k];
  }
  for (Value &a : at)
    if (!a)
      a = cIdx(b, loc, 0);
  Value elems = emitSharedOffset(b, loc, buf.allocShape, at, eb, span,
                                 /*applySwizzle=*/false);
  Type i64 = b.getI64Type();
  if (from) {
    // Starts are 16-byte aligned, so the byte distance divides exactly.
    Value units = arith::DivSIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc,
                              arith::SubIOp::create(b, loc, elems, from->elems),
                              cIdx(b, loc, eb)),
        cIdx(b, loc, 16));
    Value units64 = arith::IndexCastOp::create(b, loc, i64, units);
    return {arith::AddIOp::create(b, loc, from->desc, units64), elems};
  }
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buf.memref);
  Value addr = arith::AddIOp::create(
      b, loc, base, arith::MulIOp::create(b, loc, elems, cIdx(b, loc, eb)));
  Value addr64 = arith::IndexCastUIOp::create(b, loc, i64, addr);
  auto c64 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, v);
  };
  int64_t sbo = 8 * span;
  int64_t lbo = kMajor ? 16 : rows * span;
  int64_t mode = span == 128 ? 1 : span == 64 ? 2 : 3;
  uint64_t fixed = (uint64_t((lbo >> 4) & 0x3FFF) << 16) |
                   (uint64_t((sbo >> 4) & 0x3FFF) << 32) |
                   (uint64_t(mode) << 62);
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, addr64, c64(0x3FFFF)), c64(4));
  Value desc = arith::OrIOp::create(b, loc, start, c64((int64_t)fixed));
  // Kept where the gemm is: LLVM would hoist every K step's descriptor of
  // a gemm in a loop (a 64-bit value each, dozens per gemm) out of it as a
  // loop invariant and run the registers out; ptxas keeps the base and the
  // adds in uniform registers when they stay in the loop.
  desc = LLVM::InlineAsmOp::create(
             b, loc, i64, ValueRange{desc}, "mov.b64 $0, $1;", "=l,l",
             /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None,
             LLVM::AsmDialectAttr::get(b.getContext(),
                                       LLVM::AsmDialect::AD_ATT),
             ArrayAttr())
             .getRes();
  return {desc, elems};
}

/// The origin (first row, first column) of this thread's warpgroup tile
/// in a gemm on a wgM x wgN grid of tm x tn tiles. A replicated grid
/// (policy `replicate`): warpgroup w computes the tile of w mod (wgM wgN).
/// With `waitTurn`, waits for the warpgroup's turn first (see takesTurns).
static std::pair<Value, Value> wgmmaTileOrigin(NVVMKernelLowering &kl,
                                               OpBuilder &b, int64_t wgM,
                                               int64_t wgN, int64_t tm,
                                               int64_t tn, bool waitTurn) {
  Location loc = kl.loc;
  Value wg = arith::DivUIOp::create(b, loc, kl.tid, cIdx(b, loc, 128));
  if (kl.numThreads / 128 > wgM * wgN)
    wg = arith::RemUIOp::create(b, loc, wg, cIdx(b, loc, wgM * wgN));
  if (waitTurn)
    kl.turnBarrier(b, 0, /*arrive=*/false);
  return gridTileOrigin(b, loc, wg, wgN, tm, tn);
}

/// One wgmma instruction as inline PTX (for the forms MLIR's NVVM op lacks:
/// A in registers, sparse A) on the accumulator struct `acc`, whose members
/// are tied to the results: `instr` names the instruction, `printOperands`
/// writes what follows the accumulator list (operands numbered from the
/// accumulator count, which it gets), `constraints` are those of
/// `operands`. `zeroAcc` ignores the accumulator's input (scale-d = 0).
static Value
emitWgmmaAsm(OpBuilder &b, Location loc, Value acc, const Twine &instr,
             function_ref<void(raw_ostream &, int64_t)> printOperands,
             StringRef constraints, ArrayRef<Value> operands, bool zeroAcc) {
  auto structType = cast<LLVM::LLVMStructType>(acc.getType());
  int64_t count = structType.getBody().size();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "{\n.reg .pred p;\nsetp.ne.b32 p, " << (zeroAcc ? 0 : 1) << ", 0;\n"
     << instr << " {";
  for (int64_t i = 0; i < count; ++i)
    os << (i ? ", $" : "$") << i;
  os << "}, ";
  printOperands(os, count);
  os << ";\n}";
  std::string allConstraints;
  for (int64_t i = 0; i < count; ++i)
    allConstraints += "=f,";
  allConstraints += constraints;
  for (int64_t i = 0; i < count; ++i)
    allConstraints += "," + std::to_string(i);
  SmallVector<Value> all(operands);
  for (int64_t i = 0; i < count; ++i)
    all.push_back(LLVM::ExtractValueOp::create(b, loc, acc, i));
  return LLVM::InlineAsmOp::create(
             b, loc, structType, all, text, allConstraints,
             /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None,
             LLVM::AsmDialectAttr::get(b.getContext(),
                                       LLVM::AsmDialect::AD_ATT),
             ArrayAttr())
      .getRes();
}

/// A gemm on warpgroup MMA (sm_90a): each warpgroup computes its
/// (M / wgM) x (N / wgN) tile as 64-row wgmma.mma_async instructions reading
/// A and B from shared memory through descriptors; the accumulator struct
/// is the fragment's registers in wgmma's order. The instructions of one
/// gemm form one wgmma group, waited for before the gemm ends.
LogicalResult NVVMKernelLowering::gemmWgmma(GemmOp op, OpBuilder &b,
                                            const Buffer &a, const Buffer &bb,
                                            const Buffer &c,
                                            ArrayRef<int64_t> aRegs) {
  if (failed(checkAccumulatorLayout(op, *c.layout, numThreads)))
    return failure();
  auto grid = op->getAttrOfType<DenseI64ArrayAttr>("wgmma");
  int64_t wgM = grid[0], wgN = grid[1];
  int64_t m = op.getM(), n = op.getN(), k = op.getK();
  int64_t tm = m / wgM, tn = n / wgN, mTiles = tm / 64, nTiles = tn / 8;
  Type elem = a.elementType, acc = c.elementType;
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  MLIRContext *ctx = b.getContext();
  NVVM::WGMMATypes wt;
  int64_t kStep;
  if (elem.isF16()) {
    wt = NVVM::WGMMATypes::f16;
    kStep = 16;
  } else if (elem.isBF16()) {
    wt = NVVM::WGMMATypes::bf16;
    kStep = 16;
  } else if (elem.isF32()) {
    wt = NVVM::WGMMATypes::tf32;
    kStep = 8;
  } else if (isa<Float8E4M3FNType>(elem)) {
    wt = NVVM::WGMMATypes::e4m3;
    kStep = 32;
  } else if (isa<Float8E5M2Type>(elem)) {
    wt = NVVM::WGMMATypes::e5m2;
    kStep = 32;
  } else if (elem.isInteger(8)) {
    wt = NVVM::WGMMATypes::s8;
    kStep = 32;
  } else {
    return op.emitOpError("wgmma does not support ") << elem;
  }
  NVVM::WGMMATypes dt = acc.isF32()   ? NVVM::WGMMATypes::f32
                        : acc.isF16() ? NVVM::WGMMATypes::f16
                                      : NVVM::WGMMATypes::s32;
  if (dt == NVVM::WGMMATypes::f16)
    return op.emitOpError(
        "wgmma with a float16 accumulator is not supported yet");
  usesAsyncProxy = true;

  // Warpgroups taking turns: wait for this one's turn; the next one's
  // starts once these instructions are issued (they run in issue order).
  // A turn spans one gemm (`pingpong`) or the gemms from one marked
  // `pingpong_begin` to one marked `pingpong_end` (a rotated loop's pair).
  bool turn = takesTurns(op);
  bool turnStarts = turn && !op->hasAttr("pingpong_end");
  bool turnEnds = turn && !op->hasAttr("pingpong_begin");
  auto [wgRow, wgCol] =
      wgmmaTileOrigin(*this, b, wgM, wgN, tm, tn, /*waitTurn=*/turnStarts);

  int64_t regsPerTile = 4 * nTiles;
  bool clear = op.getClearAccum();
  SmallVector<Value> accs =
      wgmmaAccumulators(b, c, mTiles, regsPerTile, acc, clear);
  auto structType = cast<LLVM::LLVMStructType>(accs.front().getType());
  // Register A: pack every 32-bit A register before the fence, which orders
  // the registers' definitions before the asynchronous reads.
  SmallVector<Value> aPacked;
  for (int64_t i = 0; i + 1 < (int64_t)aRegs.size(); i += 2) {
    Value pair = vector::FromElementsOp::create(
        b, loc, VectorType::get({2}, elem),
        ValueRange{regLoad(b, a, aRegs[i]), regLoad(b, a, aRegs[i + 1])});
    Value bits = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), pair);
    aPacked.push_back(
        vector::ExtractOp::create(b, loc, bits, ArrayRef<int64_t>{0}));
  }
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  auto layoutA = ta ? NVVM::MMALayout::col : NVVM::MMALayout::row;
  auto layoutB = tb ? NVVM::MMALayout::col : NVVM::MMALayout::row;
  auto shape = NVVM::MMAShapeAttr::get(ctx, 64, tn, kStep);
  // The first K step's descriptors; the later ones add to them.
  std::optional<WgmmaDesc> firstB;
  SmallVector<WgmmaDesc> firstA;
  for (int64_t k0 = 0; k0 < k; k0 += kStep) {
    // B: K-major is stored (N, K), MN-major (K, N).
    Value kk = cIdx(b, loc, k0);
    const WgmmaDesc *fromB = firstB ? &*firstB : nullptr;
    WgmmaDesc db = tb ? wgmmaDescriptor(b, bb, true, wgCol, kk, fromB)
                      : wgmmaDescriptor(b, bb, false, kk, wgCol, fromB);
    if (!firstB)
      firstB = db;
    Value descB = db.desc;
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      if (!aPacked.empty()) { // A in registers (see registerOperandA)
        int64_t first = ((k0 / kStep) * mTiles + mt) * 4;
        accs[mt] = wgmmaRegisterA(b, accs[mt],
                                  ArrayRef<Value>(aPacked).slice(first, 4),
                                  descB, tn, elem, tb, clear && k0 == 0);
        continue;
      }
      Value row = addConst(b, loc, wgRow, mt * 64);
      const WgmmaDesc *fromA = k0 ? &firstA[mt] : nullptr;
      WgmmaDesc da = ta ? wgmmaDescriptor(b, a, false, kk, row, fromA)
                        : wgmmaDescriptor(b, a, true, row, kk, fromA);
      if (!k0)
        firstA.push_back(da);
      Value descA = da.desc;
      accs[mt] = NVVM::WgmmaMmaAsyncOp::create(
          b, loc, structType, accs[mt], descA, descB, shape,
          NVVM::WGMMATypesAttr::get(ctx, wt),
          NVVM::WGMMATypesAttr::get(ctx, wt),
          NVVM::WGMMATypesAttr::get(ctx, dt),
          NVVM::WGMMAScaleOutAttr::get(ctx, clear && k0 == 0
                                                ? NVVM::WGMMAScaleOut::zero
                                                : NVVM::WGMMAScaleOut::one),
          NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
          NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
          NVVM::MMALayoutAttr::get(ctx, layoutA),
          NVVM::MMALayoutAttr::get(ctx, layoutB),
          dt == NVVM::WGMMATypes::s32 ? NVVM::MMAIntOverflowAttr::get(
                                            ctx, NVVM::MMAIntOverflow::wrapped)
                                      : NVVM::MMAIntOverflowAttr());
    }
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  if (turnEnds)
    turnBarrier(b, 1, /*arrive=*/true);
  // An async gemm stays in flight until a tile.gemm_wait.
  if (!op.getAsync())
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  storeWgmmaAccumulators(b, c, accs, regsPerTile);
  return success();
}

/// Whether the consumer warpgroups take turns at `op` (a gemm marked
/// `pingpong` by tile-warp-specialize, or `pingpong_begin`/`pingpong_end`:
/// async gemms of a rotated loop, one turn for the two): a wgmma gemm
/// whose warpgroups each own a band of rows (grid n x 1, n > 1) and read A
/// from shared memory or from their registers as they are, so that nothing
/// between the start and the end of a turn synchronizes the warpgroups.
bool NVVMKernelLowering::takesTurns(GemmOp op) {
  auto grid = op->getAttrOfType<DenseI64ArrayAttr>("wgmma");
  int64_t groups = numThreads / 128;
  bool marked = (op->hasAttr("pingpong") && !op.getAsync()) ||
                op->hasAttr("pingpong_begin") || op->hasAttr("pingpong_end");
  if (!marked || producerThreads == 0 || !grid || groups < 2 ||
      grid[0] != groups || grid[1] != 1 ||
      !isInScope(op.getB().getType(), MemoryScope::shared))
    return false;
  if (isInScope(op.getA().getType(), MemoryScope::shared))
    return true;
  std::optional<TileLayout> la = fragmentLayout(op.getA());
  return la && registerOperandA(op, *la, numThreads);
}

/// One wgmma.mma_async with A from registers (the RS form), on the
/// accumulator struct `acc` of an m64 x `n` tile: four 32-bit registers of
/// packed 16-bit A (the m16k16 fragment of each warp), B through `descB`;
/// `zeroAcc` ignores the accumulator's input (scale-d = 0).
/// MLIR's NVVM op has only the shared-memory form, so this is inline PTX;
/// the accumulators are tied operands.
Value NVVMKernelLowering::wgmmaRegisterA(OpBuilder &b, Value acc,
                                         ArrayRef<Value> aRegs, Value descB,
                                         int64_t n, Type elem, bool transB,
                                         bool zeroAcc) {
  std::string type = elem.isBF16() ? "bf16" : "f16";
  SmallVector<Value> operands(aRegs.begin(), aRegs.end());
  operands.push_back(descB);
  return emitWgmmaAsm(
      b, loc, acc,
      "wgmma.mma_async.sync.aligned.m64n" + Twine(n) + "k16.f32." + type + "." +
          type,
      [&](raw_ostream &os, int64_t count) {
        os << "{$" << count << ", $" << count + 1 << ", $" << count + 2 << ", $"
           << count + 3 << "}, $" << count + 4 << ", p, 1, 1, "
           << (transB ? 0 : 1);
      },
      "r,r,r,r,l", operands, zeroAcc);
}

/// warpgroup w after those of warpgroup w - 1 (ids 1 and 2 are the roles').
static constexpr int64_t kTurnBarrier = 3;
/// Syncs on (or arrives at) the turn barrier of warpgroup (w + shift) mod
/// n in consumer warpgroup w. The id is computed (as CUTLASS's named
/// barriers do): a branch per warpgroup would split the basic block and
/// keep instruction selection from pairing conversions around it.
void NVVMKernelLowering::turnBarrier(OpBuilder &b, int64_t shift, bool arrive) {
  int64_t groups = numThreads / 128;
  Value wg = arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, 128));
  Value group = arith::RemUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, wg, cIdx(b, loc, shift)),
      cIdx(b, loc, groups));
  Value id = arith::IndexCastUIOp::create(
      b, loc, b.getI32Type(),
      arith::AddIOp::create(b, loc, group, cIdx(b, loc, kTurnBarrier)));
  Value count = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 256);
  if (arrive)
    NVVM::BarrierArriveOp::create(b, loc, id, count);
  else
    NVVM::BarrierOp::create(b, loc, Type(), id, count,
                            NVVM::BarrierReductionAttr(), Value());
}
FailureOr<Buffer> stageOperand(OpBuilder &b, const Buffer &buf);

KernelOp kernel;
func::FuncOp func;

/// A sparse gemm on wgmma.mma_async.sp m64nNk32 (sm_90a): warpgroups split
/// the tile as for the dense wgmma (`wgmma`); per K step of 32, A_sparse's
/// m64 x 16 kept values and B's k32 x N come through shared-memory
/// descriptors (the same ones as the dense instruction's, A's at column
/// k0 / 2), the metadata from a register per warp's 16 rows, filled before
/// the fence (gemmSpMetadata, one register per two steps). MLIR's NVVM ops
/// have no sparse wgmma, so this is inline PTX with tied accumulators; the
/// instructions form one wgmma group, waited for before the gemm ends.
LogicalResult NVVMKernelLowering::gemmSpWgmma(GemmSpOp op, OpBuilder &b,
                                              const Buffer &a, const Buffer &e,
                                              const Buffer &bb,
                                              const Buffer &c) {
  auto grid = op->getAttrOfType<DenseI64ArrayAttr>("wgmma");
  int64_t wgM = grid[0], wgN = grid[1];
  int64_t m = op.getM(), n = op.getN(), k = op.getK();
  int64_t tm = m / wgM, tn = n / wgN, mTiles = tm / 64, nTiles = tn / 8;
  int64_t steps = k / 32;
  Type elem = a.elementType, acc = c.elementType;
  bool tb = op.getTransposeB();
  usesAsyncProxy = true;
  auto [wgRow, wgCol] =
      wgmmaTileOrigin(*this, b, wgM, wgN, tm, tn, /*waitTurn=*/false);
  // The warp's 16 rows of each 64.
  Value warpRow = arith::MulIOp::create(
      b, loc,
      arith::RemUIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, 32)),
          cIdx(b, loc, 4)),
      cIdx(b, loc, 16));
  int64_t regsPerTile = 4 * nTiles;
  bool clear = op.getClearAccum();
  SmallVector<Value> accs =
      wgmmaAccumulators(b, c, mTiles, regsPerTile, acc, clear);
  // Metadata registers, [step / 2][mt].
  SmallVector<SmallVector<Value>> meta;
  for (int64_t s = 0; s < steps; s += 2) {
    SmallVector<Value> row;
    for (int64_t mt = 0; mt < mTiles; ++mt)
      row.push_back(
          gemmSpMetadata(b, e,
                         arith::AddIOp::create(
                             b, loc, addConst(b, loc, wgRow, mt * 64), warpRow),
                         s * 32, s + 1 < steps));
    meta.push_back(row);
  }
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  std::string type = elem.isBF16() ? "bf16" : "f16";
  for (int64_t s = 0; s < steps; ++s) {
    int64_t k0 = s * 32;
    Value kk = cIdx(b, loc, k0);
    Value descB = (tb ? wgmmaDescriptor(b, bb, true, wgCol, kk)
                      : wgmmaDescriptor(b, bb, false, kk, wgCol))
                      .desc;
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      Value descA =
          wgmmaDescriptor(b, a, true, addConst(b, loc, wgRow, mt * 64),
                          cIdx(b, loc, k0 / 2))
              .desc;
      // A, B, metadata, sparsity selector (one metadata register per two
      // steps), scale-d, scale-a, scale-b, negate-a... and B's layout.
      accs[mt] = emitWgmmaAsm(
          b, loc, accs[mt],
          "wgmma.mma_async.sp.sync.aligned.m64n" + Twine(tn) + "k32.f32." +
              type + "." + type,
          [&](raw_ostream &os, int64_t count) {
            os << "$" << count << ", $" << count + 1 << ", $" << count + 2
               << ", " << s % 2 << ", p, 1, 1, 0, " << (tb ? 0 : 1);
          },
          "l,l,r", {descA, descB, meta[s / 2][mt]}, clear && s == 0);
    }
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  // Done before the gemm ends, `async` or not: the instructions read the
  // metadata registers while in flight, and whatever comes next (the next
  // K tile's metadata) may reuse them (see tile-warp-specialize, which
  // keeps no sparse gemm in flight).
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  storeWgmmaAccumulators(b, c, accs, regsPerTile);
  return success();
}

/// The wait for the wgmma groups in flight (none when no gemm is a wgmma).
void mlir::tile::registerWgmmaLowerings(LoweringTable &table) {
  table.add<GemmWaitOp>(
      [](KernelLowering &kl, GemmWaitOp wait, OpBuilder &b, IRMapping &,
         Context &) {
        if (!kl.usesAsyncProxy)
          return success();
        // ptxas moves a wgmma wait above independent work that the PTX puts
        // before it (the rotated attention loop's softmax); it keeps the
        // order across a nanosleep.
        if (wait->hasAttr("tile.sched_barrier"))
          NVVM::NanosleepOp::create(
              b, kl.loc,
              arith::ConstantIntOp::create(b, kl.loc, b.getI32Type(), 0));
        NVVM::WgmmaWaitGroupSyncOp::create(b, kl.loc, wait.getPending());
        return success();
      },
      InParallel::lowered);
}
