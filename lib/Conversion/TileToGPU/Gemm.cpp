//===- Gemm.cpp - tile.gemm and tile.gemm_sp dispatch
//-----------------------===//
//
// Part of tilelang-mlir.
//
// Stages fragment operands through shared memory where needed and hands
// gemms with a tensor-core grid to the target (mma.sync, wgmma, MFMA); the
// others become a loop of multiply-adds per accumulator register (SIMT).
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToGPU/KernelLowering.h"

using namespace mlir;
using namespace mlir::tile;

/// Copies a fragment operand into shared scratch so that the gemm can read
/// it like a shared operand.
FailureOr<Buffer> KernelLowering::stageOperand(OpBuilder &b,
                                               const Buffer &buf) {
  if (buf.kind == BufferKind::Shared)
    return buf;
  if (buf.kind != BufferKind::Fragment)
    return failure();
  Side frag{buf, {}, buf.shape};
  for (int64_t i = 0; i < buf.rank(); ++i)
    frag.offsets.push_back(cIdx(b, loc, 0));
  // Place A at the start of the scratch and B after it.
  Side scratch = scratchSide(b, buf.shape, buf.elementType);
  copyFragmentMemory(b, frag, scratch, /*toMemory=*/true);
  return scratch.buf;
}

/// The registers of a fragment A (in `layout`) that hold what a tensor-core
/// gemm reads from registers, when each thread already holds the elements
/// it reads, each in the same register in every thread: the gemm then
/// takes them as they are, with no data movement. The result is indexed by
/// slot ((kStep * mTiles + mTile) * 4 + reg) * per + e: `reg` is one of the
/// four 32-bit A registers of an m16 x k instruction (mma.sync, per warp;
/// wgmma m64 repeats it for the warp's 16 rows of each 64), `e` one of the
/// `per` elements packed in it. Element (row, col) of register `reg` for
/// lane l (g = l / 4, t = l % 4): row g + 8 (reg % 2); col 2t + 8 (reg / 2)
/// + e for 16-bit types, t + 4 (reg / 2) for tf32, 4t + 16 (reg / 2) + e
/// for 8-bit (PTX ISA, mma.m16n8k16/k8/k32 fragments).
std::optional<SmallVector<int64_t>>
mlir::tile::registerOperandA(GemmOp op, const TileLayout &layout,
                             int64_t threads) {
  if (op.getTransposeA())
    return std::nullopt;
  Type elem = op.getA().getType().getElementType();
  bool is16 = elem.isF16() || elem.isBF16();
  bool wgmma = op->hasAttr("wgmma");
  int64_t kStep, per;
  if (is16) {
    kStep = 16;
    per = 2;
  } else if (elem.isF32() && !wgmma) {
    kStep = 8;
    per = 1;
  } else if (elem.isInteger(8) && !wgmma) {
    kStep = 32;
    per = 4;
  } else {
    return std::nullopt;
  }
  auto grid =
      op->getAttrOfType<DenseI64ArrayAttr>(wgmma ? "wgmma" : "warp_partition");
  if (!grid || grid.size() != 2)
    return std::nullopt;
  int64_t gm = grid[0], gn = grid[1];
  int64_t unit = wgmma ? 128 : 32; // threads of a warpgroup / warp
  int64_t instRows = wgmma ? 64 : 16;
  int64_t tileRows = op.getM() / gm;
  int64_t mTiles = tileRows / instRows, kSteps = op.getK() / kStep;
  // (A replicated grid repeats over the threads past unit gm gn.)
  if (threads % (unit * gm * gn) || layout.getNumThreads() != threads ||
      tileRows % instRows || op.getK() % kStep)
    return std::nullopt;
  SmallVector<int64_t> regs(kSteps * mTiles * 4 * per, -1);
  for (int64_t t = 0; t < threads; ++t) {
    int64_t lane = t % 32, g = lane / 4, q = lane % 4;
    int64_t rowBase = ((t / unit) % (gm * gn) / gn) * tileRows +
                      (wgmma ? 16 * ((t / 32) % 4) : 0);
    for (int64_t ks = 0; ks < kSteps; ++ks)
      for (int64_t mt = 0; mt < mTiles; ++mt)
        for (int64_t reg = 0; reg < 4; ++reg)
          for (int64_t e = 0; e < per; ++e) {
            int64_t row = rowBase + mt * instRows + g + 8 * (reg % 2);
            int64_t col =
                ks * kStep + (is16       ? 2 * q + 8 * (reg / 2) + e
                              : per == 1 ? q + 4 * (reg / 2)
                                         : 4 * q + 16 * (reg / 2) + e);
            std::optional<int64_t> r = layout.registerOf({row, col}, t);
            if (!r)
              return std::nullopt;
            int64_t &slot = regs[((ks * mTiles + mt) * 4 + reg) * per + e];
            if (slot != -1 && slot != *r)
              return std::nullopt;
            slot = *r;
          }
  }
  return regs;
}

/// The instruction lowerings index the accumulator's registers as the
/// instruction lays them out: a gemm with a grid (`warp_partition`, `wgmma`,
/// `mfma`) must have the accumulator layout of that grid. Layout inference
/// sets both together; IR written by hand may not.
LogicalResult mlir::tile::checkAccumulatorLayout(GemmOp op, const TileLayout &c,
                                                 int64_t threads) {
  int64_t m = op.getM(), n = op.getN();
  FailureOr<TileLayout> expected = failure();
  StringRef name;
  if (auto g = op->getAttrOfType<DenseI64ArrayAttr>("warp_partition")) {
    name = "warp_partition";
    expected = TileLayout::mmaAccumulator(m, n, g[0], g[1]);
  } else if (auto g = op->getAttrOfType<DenseI64ArrayAttr>("wgmma")) {
    name = "wgmma";
    expected = TileLayout::wgmmaAccumulator(m, n, g[0], g[1],
                                            threads / 128 / (g[0] * g[1]));
  } else if (auto g = op->getAttrOfType<DenseI64ArrayAttr>("mfma")) {
    name = "mfma";
    expected = TileLayout::mfmaAccumulator(m, n, g[0], g[1]);
  } else {
    return success();
  }
  if (failed(expected) || *expected != c)
    return op.emitOpError("the accumulator's layout ")
           << c.describe() << " is not the one of its `" << name << "` grid";
  return success();
}

LogicalResult KernelLowering::lowerGemm(GemmOp op, OpBuilder &b,
                                        IRMapping &map) {
  FailureOr<Buffer> a = bufferOf(op.getA(), b, map);
  FailureOr<Buffer> bb = bufferOf(op.getB(), b, map);
  FailureOr<Buffer> c = bufferOf(op.getC(), b, map);
  if (failed(a) || failed(bb) || failed(c))
    return failure();
  if (c->kind != BufferKind::Fragment)
    return op.emitOpError("the accumulator must be a fragment");
  // A fragment A whose layout already puts each element in the thread and
  // register the instruction reads it from feeds the tensor cores directly.
  std::optional<SmallVector<int64_t>> aRegs;
  if (a->kind == BufferKind::Fragment && bb->kind == BufferKind::Shared &&
      (op->hasAttr("wgmma") || op->hasAttr("warp_partition")))
    aRegs = registerOperandA(op, *a->layout, numThreads);
  if (op->hasAttr("wgmma") && a->kind == BufferKind::Fragment && !aRegs)
    return op.emitOpError("a wgmma gemm reads a fragment A from registers "
                          "only in the layout of an M x K wgmma "
                          "accumulator, but A has the layout ")
           << a->layout->describe();
  if (aRegs)
    return target.lowerGemm(*this, op, b, *a, *bb, *c, *aRegs);
  // Other fragment operands go through scratch (A first, B after it).
  bool staged =
      a->kind == BufferKind::Fragment || bb->kind == BufferKind::Fragment;
  if (staged)
    barrier(b);
  int64_t aBytes = 0;
  if (a->kind == BufferKind::Fragment) {
    FailureOr<Buffer> s = stageOperand(b, *a);
    if (failed(s))
      return failure();
    a = s;
    aBytes = llvm::alignTo(
        a->shape[0] * a->shape[1] * elementBytes(a->elementType), 128);
  }
  if (bb->kind == BufferKind::Fragment) {
    int64_t saved = scratchOffset;
    scratchOffset += aBytes;
    FailureOr<Buffer> s = stageOperand(b, *bb);
    scratchOffset = saved;
    if (failed(s))
      return failure();
    bb = s;
  }
  if (staged)
    barrier(b);
  if (a->kind != BufferKind::Shared || bb->kind != BufferKind::Shared)
    return op.emitOpError("gemm operands must be shared buffers or fragments");
  if (op.getInt4() && !op->hasAttr("warp_partition"))
    return op.emitOpError(
        "an int4 gemm runs on mma.sync m16n8k64 only: it needs whole warps "
        "whose tiles are multiples of 16 x 8 and K a multiple of 64 int4 "
        "values (32 bytes), on an NVIDIA target of sm_80 or newer");
  if (op->hasAttr("mfma") || op->hasAttr("wgmma") ||
      op->hasAttr("warp_partition")) {
    if (failed(target.lowerGemm(*this, op, b, *a, *bb, *c, {})))
      return failure();
  } else {
    gemmSimt(op, b, *a, *bb, *c);
  }
  if (staged)
    barrier(b);
  return success();
}

void KernelLowering::gemmSimt(GemmOp op, OpBuilder &b, const Buffer &a,
                              const Buffer &bb, const Buffer &c) {
  Type acc = c.elementType;
  const TileLayout &layout = *c.layout;
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  int64_t k = op.getK();
  for (int64_t r = 0; r < layout.getNumRegs(); ++r) {
    // Padding (a layout of M x N that does not divide over the threads:
    // 336 rows in blocks of 64 rows over 8 register digits): a register
    // no thread holds an element in is skipped, and one whose row or
    // column runs past M or N for some threads computes only where it is
    // in range. Its loads would read A's rows or B's columns past the
    // operands (past the end of shared memory: an illegal address); the
    // padded registers keep whatever they held, which nobody reads.
    TileLayout::RegisterPadding pad = layout.padding(r, numThreads);
    if (!pad.anyInBounds)
      continue;
    SmallVector<Value> idx = layout.emitInverse(b, loc, tid, r);
    Value cond;
    for (int d = 0; d < 2; ++d)
      if (pad.exceeds[d])
        cond = andOf(b, loc, cond,
                     arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           idx[d], cIdx(b, loc, c.shape[d])));
    guarded(b, loc, cond, [&](OpBuilder &gb) {
      Value init =
          op.getClearAccum() ? zeroOf(gb, loc, acc) : regLoad(gb, c, r);
      auto loop = scf::ForOp::create(
          gb, loc, cIdx(gb, loc, 0), cIdx(gb, loc, k), cIdx(gb, loc, 1),
          ValueRange{init},
          [&](OpBuilder &lb, Location l, Value kk, ValueRange args) {
            Value av = loadElement(lb, a,
                                   ta ? SmallVector<Value>{kk, idx[0]}
                                      : SmallVector<Value>{idx[0], kk});
            Value bv = loadElement(lb, bb,
                                   tb ? SmallVector<Value>{idx[1], kk}
                                      : SmallVector<Value>{kk, idx[1]});
            av = convertElements(lb, l, av, acc);
            bv = convertElements(lb, l, bv, acc);
            Value prod =
                isa<FloatType>(acc)
                    ? arith::MulFOp::create(lb, l, av, bv).getResult()
                    : arith::MulIOp::create(lb, l, av, bv).getResult();
            Value sum =
                isa<FloatType>(acc)
                    ? arith::AddFOp::create(lb, l, args[0], prod).getResult()
                    : arith::AddIOp::create(lb, l, args[0], prod).getResult();
            scf::YieldOp::create(lb, l, sum);
          });
      regStore(gb, c, r, loop.getResult(0));
    });
  }
}

LogicalResult KernelLowering::lowerGemmSp(GemmSpOp op, OpBuilder &b,
                                          IRMapping &map) {
  FailureOr<Buffer> a = bufferOf(op.getA(), b, map);
  FailureOr<Buffer> e = bufferOf(op.getE(), b, map);
  FailureOr<Buffer> bb = bufferOf(op.getB(), b, map);
  FailureOr<Buffer> c = bufferOf(op.getC(), b, map);
  if (failed(a) || failed(e) || failed(bb) || failed(c))
    return failure();
  if (failed(target.checkSupported(op)))
    return failure();
  if (c->kind != BufferKind::Fragment || a->kind != BufferKind::Shared ||
      e->kind != BufferKind::Shared || bb->kind != BufferKind::Shared)
    return op.emitOpError("needs shared A_sparse, E and B and a fragment "
                          "accumulator");
  return target.lowerGemmSp(*this, op, b, *a, *e, *bb, *c);
}

void mlir::tile::registerGemmLowerings(LoweringTable &table) {
  table.add<GemmOp>([](KernelLowering &kl, GemmOp op, OpBuilder &b,
                       IRMapping &map, Context &) {
    return kl.lowerGemm(op, b, map);
  });
  table.add<GemmSpOp>([](KernelLowering &kl, GemmSpOp op, OpBuilder &b,
                         IRMapping &map, Context &) {
    return kl.lowerGemmSp(op, b, map);
  });
}
