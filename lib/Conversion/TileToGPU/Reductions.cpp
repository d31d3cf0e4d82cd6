//===- Reductions.cpp - tile.reduce and tile.cumsum
//-------------------------===//
//
// Part of tilelang-mlir.
//
// A reduction combines each thread's registers (a balanced tree), then lanes
// with shuffles, then warps through shared scratch, and converts the result
// to the destination's layout; a cumulative sum scans lines in shared memory.
// Every step accumulates in reduceAccumulatorType (float32 for a float16 /
// bfloat16 sum), and the result is rounded into the destination once.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "dialects/Tile/Utils/ReduceUtils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tile;

/// Shuffles a value of any 16/32/64-bit type (others through f32/i32).
static Value shuffleXor(OpBuilder &b, Location loc, Value v, int64_t offset,
                        int64_t warpSize) {
  Type type = v.getType();
  Value x = v;
  if (type.getIntOrFloatBitWidth() < 32)
    x = convertElements(b, loc, v,
                        isa<FloatType>(type) ? Type(b.getF32Type())
                                             : Type(b.getI32Type()));
  Value off = arith::ConstantIntOp::create(b, loc, b.getI32Type(), offset);
  Value width = arith::ConstantIntOp::create(b, loc, b.getI32Type(), warpSize);
  Value s = gpu::ShuffleOp::create(b, loc, x, off, width, gpu::ShuffleMode::XOR)
                .getShuffleResult();
  return convertElements(b, loc, s, type);
}

/// `v` as a `to` (the accumulator's type and the destination's element
/// type differ only for the float32 sums of 16-bit floats).
static Value asType(OpBuilder &b, Location loc, Value v, Type to) {
  return v.getType() == to ? v : convertElements(b, loc, v, to);
}

/// A reduction within each thread (a local buffer into a local buffer or a
/// var): every thread reduces its own elements, as the CPU lowering does.
void KernelLowering::lowerThreadReduce(ReduceOp op, const Buffer &src,
                                       const Buffer &dst, OpBuilder &b) {
  ReduceSpec spec = ReduceSpec::of(op);
  Type elem = dst.elementType;
  Type acc = reduceAccumulatorType(spec, elem);
  int64_t dim = op.getDim();
  SmallVector<int64_t> outer(src.shape);
  outer.erase(outer.begin() + dim);
  int64_t lines = 1;
  for (int64_t e : outer)
    lines *= e;
  bool keepsDim = dst.rank() == src.rank();
  for (int64_t line = 0; line < lines; ++line) {
    SmallVector<Value> pos;
    for (int64_t d = outer.size() - 1, rem = line; d >= 0; --d) {
      pos.insert(pos.begin(), cIdx(b, loc, rem % outer[d]));
      rem /= outer[d];
    }
    SmallVector<Value> dstIdx(pos);
    if (keepsDim)
      dstIdx.insert(dstIdx.begin() + dim, cIdx(b, loc, 0));
    else if (dstIdx.empty())
      dstIdx.push_back(cIdx(b, loc, 0));
    Value total =
        op.getClear()
            ? reduceIdentity(b, loc, spec, acc)
            : asType(b, loc, loadElement(b, dst, dstIdx), acc);
    for (int64_t i = 0; i < src.shape[dim]; ++i) {
      SmallVector<Value> srcIdx(pos);
      srcIdx.insert(srcIdx.begin() + dim, cIdx(b, loc, i));
      Value x = convertElements(b, loc, loadElement(b, src, srcIdx),
                                op.getSrcLogicalType(), op.getDstLogicalType(),
                                elem);
      x = asType(b, loc, reduceInput(b, loc, spec, x), acc);
      total = reduceCombine(b, loc, spec, total, x);
    }
    storeElement(b, dst, dstIdx, asType(b, loc, total, elem));
  }
}

/// Each thread's partial of every register of the natural result layout:
/// its own source registers (padding counts as the identity) combined as a
/// balanced tree.
SmallVector<Value> KernelLowering::reduceOwnTerms(ReduceOp op,
                                                  const Buffer &src,
                                                  const Buffer &dst,
                                                  const TileLayout &natural,
                                                  const ReduceSpec &spec,
                                                  OpBuilder &b) {
  const TileLayout &ls = *src.layout;
  int64_t dim = op.getDim();
  Type acc = reduceAccumulatorType(spec, dst.elementType);
  int64_t nregs = natural.getNumRegs();
  SmallVector<Value> partial(nregs);
  SmallVector<SmallVector<Value>> terms(nregs);
  // The natural register of each source register (the same in every
  // thread), and whether the source register can be padding.
  auto naturalIndex = [&](ArrayRef<int64_t> sidx) {
    SmallVector<int64_t> out(sidx);
    if (dst.rank() == src.rank())
      out[dim] = 0;
    else
      out.erase(out.begin() + dim);
    if (out.empty())
      out.push_back(0);
    return out;
  };
  for (int64_t rs = 0; rs < ls.getNumRegs(); ++rs) {
    std::optional<int64_t> rd;
    bool mayPad = false, anyIn = false;
    for (int64_t t = 0; t < numThreads; ++t) {
      SmallVector<int64_t> sidx = ls.inverse(t, rs);
      if (!ls.inBounds(sidx)) {
        mayPad = true;
        continue;
      }
      anyIn = true;
      if (!rd)
        rd = natural.registerOf(naturalIndex(sidx), t);
    }
    if (!anyIn || !rd)
      continue;
    // Each element in the destination's type (as the CPU takes it), then
    // in the accumulator's.
    Value x = convertElements(b, loc, regLoad(b, src, rs),
                              op.getSrcLogicalType(), op.getDstLogicalType(),
                              dst.elementType);
    x = asType(b, loc, reduceInput(b, loc, spec, x), acc);
    if (mayPad) {
      SmallVector<Value> sidx = ls.emitInverse(b, loc, tid, rs);
      Value ok;
      for (int64_t d = 0; d < src.rank(); ++d)
        ok = andOf(b, loc, ok,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         sidx[d], cIdx(b, loc, src.shape[d])));
      x = arith::SelectOp::create(b, loc, ok, x,
                                  reduceIdentity(b, loc, spec, acc));
    }
    terms[*rd].push_back(x);
  }
  // Each thread combines its own terms as a balanced tree: independent
  // operations the scheduler can overlap, not one dependent chain.
  for (int64_t r = 0; r < nregs; ++r) {
    SmallVector<Value> level = terms[r];
    if (level.empty()) {
      partial[r] = reduceIdentity(b, loc, spec, acc);
      continue;
    }
    while (level.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2)
        next.push_back(reduceCombine(b, loc, spec, level[i], level[i + 1]));
      if (level.size() % 2)
        next.push_back(level.back());
      level = std::move(next);
    }
    partial[r] = level.front();
  }
  return partial;
}

LogicalResult KernelLowering::lowerReduce(ReduceOp op, OpBuilder &b,
                                          IRMapping &map) {
  FailureOr<Buffer> src = bufferOf(op.getSrc(), b, map);
  FailureOr<Buffer> dst = bufferOf(op.getDst(), b, map);
  if (failed(src) || failed(dst))
    return failure();
  ReduceSpec spec = ReduceSpec::of(op);
  int64_t dim = op.getDim();
  Type elem = dst->elementType;
  Type acc = reduceAccumulatorType(spec, elem);
  bool local = src->kind == BufferKind::Local &&
               (dst->kind == BufferKind::Local || dst->kind == BufferKind::Var);
  if (local) {
    lowerThreadReduce(op, *src, *dst, b);
    return success();
  }
  if (src->kind != BufferKind::Fragment || dst->kind != BufferKind::Fragment) {
    // The frontend stages shared operands through fragments (as TileLang's
    // T.reduce does); IR written by hand may not.
    return op.emitOpError("reductions are supported between fragments, or "
                          "from a local buffer into a local buffer or var, on ")
           << target.getPlatformName()
           << " targets; copy shared data to a fragment first";
  }
  const TileLayout &ls = *src->layout;
  // The natural result layout: the source without `dim`.
  TileLayout natural = ls.dropDim(dim);
  if (dst->rank() == src->rank())
    natural = natural.insertUnitDim(dim);
  else if (dst->rank() == 1 && natural.getShape().empty())
    natural = natural.insertUnitDim(0);
  bool direct = natural == *dst->layout;
  int64_t nregs = natural.getNumRegs();
  SmallVector<Value> partial =
      reduceOwnTerms(op, *src, *dst, natural, spec, b);
  // Threads that hold parts of the same output differ in the thread digits
  // of `dim`: lanes combine with shuffles, warps through shared memory.
  SmallVector<LayoutDigit> laneDigits, warpDigits;
  for (const LayoutDigit &d : ls.getDigits()) {
    if (!d.onThread || d.dim != dim)
      continue;
    if (d.stride < warpSize && d.stride * d.size > warpSize &&
        llvm::isPowerOf2_64(d.size) && llvm::isPowerOf2_64(d.stride)) {
      // A digit spanning lanes and warps: split it at the warp boundary.
      int64_t lanes = warpSize / d.stride;
      laneDigits.push_back({d.dim, d.dimStride, lanes, true, d.stride});
      warpDigits.push_back(
          {d.dim, d.dimStride * lanes, d.size / lanes, true, warpSize});
      continue;
    }
    (d.stride < warpSize ? laneDigits : warpDigits).push_back(d);
  }
  for (const LayoutDigit &d : laneDigits) {
    if (!llvm::isPowerOf2_64(d.size) || !llvm::isPowerOf2_64(d.stride) ||
        d.stride * d.size > warpSize)
      return op.emitOpError("cannot reduce across lanes of this layout (")
             << ls.describe() << ")";
    for (int64_t o = d.stride; o < d.stride * d.size; o *= 2)
      for (Value &p : partial)
        p = reduceCombine(b, loc, spec, p, shuffleXor(b, loc, p, o, warpSize));
  }
  if (!warpDigits.empty()) {
    // scratch[w][e]: partial of output element e from warp-digit value w.
    int64_t ways = 1;
    for (const LayoutDigit &d : warpDigits)
      ways *= d.size;
    int64_t elems = 1;
    for (int64_t e : natural.getShape())
      elems *= e;
    Buffer scratch = scratchBuffer(b, {ways, elems}, acc);
    Value w;
    int64_t radix = 1;
    for (const LayoutDigit &d : warpDigits) {
      Value digit = arith::RemUIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, d.stride)),
          cIdx(b, loc, d.size));
      Value term = arith::MulIOp::create(b, loc, digit, cIdx(b, loc, radix));
      w = w ? arith::AddIOp::create(b, loc, w, term).getResult() : term;
      radix *= d.size;
    }
    auto linear = [&](ArrayRef<Value> idx) {
      Value lin = cIdx(b, loc, 0);
      int64_t stride = 1;
      for (int64_t d = idx.size() - 1; d >= 0; --d) {
        lin = arith::AddIOp::create(
            b, loc, lin,
            arith::MulIOp::create(b, loc, idx[d], cIdx(b, loc, stride)));
        stride *= natural.getShape()[d];
      }
      return lin;
    };
    barrier(b);
    SmallVector<Value> lins;
    for (int64_t r = 0; r < nregs; ++r) {
      SmallVector<Value> idx = natural.emitInverse(b, loc, tid, r);
      Value lin = linear(idx);
      lins.push_back(lin);
      Value ok;
      for (auto [d, i] : llvm::enumerate(idx))
        ok = andOf(b, loc, ok,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i,
                                         cIdx(b, loc, natural.getShape()[d])));
      guarded(b, loc, ok, [&](OpBuilder &gb) {
        storeElement(gb, scratch, {w, lin}, partial[r]);
      });
    }
    barrier(b);
    for (int64_t r = 0; r < nregs; ++r) {
      Value total;
      Value safe =
          arith::MinUIOp::create(b, loc, lins[r], cIdx(b, loc, elems - 1));
      for (int64_t i = 0; i < ways; ++i) {
        Value x = loadElement(b, scratch, {cIdx(b, loc, i), safe});
        total = total ? reduceCombine(b, loc, spec, total, x) : x;
      }
      partial[r] = total;
    }
    barrier(b);
  }
  // The old value joins in the accumulator's type; one rounding into the
  // destination's.
  auto result = [&](Value old, Value v) {
    if (old)
      v = reduceCombine(b, loc, spec, asType(b, loc, old, acc), v);
    return asType(b, loc, v, elem);
  };
  if (direct) {
    for (int64_t r = 0; r < nregs; ++r)
      regStore(b, *dst, r,
               result(op.getClear() ? Value() : regLoad(b, *dst, r),
                      partial[r]));
    return success();
  }
  // Convert the natural result to the destination's layout through scratch.
  Buffer tmp = *dst;
  tmp.layout = natural;
  tmp.memref = privateAlloca(b, {nregs}, elem);
  for (int64_t r = 0; r < nregs; ++r)
    regStore(b, tmp, r, result(Value(), partial[r]));
  Side from{tmp, {}, dst->shape}, to{*dst, {}, dst->shape};
  for (int64_t i = 0; i < dst->rank(); ++i) {
    from.offsets.push_back(cIdx(b, loc, 0));
    to.offsets.push_back(cIdx(b, loc, 0));
  }
  if (!op.getClear()) {
    // Combine with the old values: convert those to the natural layout.
    Buffer old = tmp;
    old.memref = privateAlloca(b, {nregs}, elem);
    Side oldSide{old, from.offsets, dst->shape};
    copyThroughScratch(b, to, oldSide);
    for (int64_t r = 0; r < nregs; ++r)
      regStore(b, tmp, r, result(regLoad(b, old, r), partial[r]));
  }
  copyThroughScratch(b, from, to);
  return success();
}

LogicalResult KernelLowering::lowerCumSum(CumSumOp op, OpBuilder &b,
                                          IRMapping &map) {
  FailureOr<Buffer> src = bufferOf(op.getSrc(), b, map);
  FailureOr<Buffer> dst = bufferOf(op.getDst(), b, map);
  if (failed(src) || failed(dst))
    return failure();
  SmallVector<int64_t> shape = src->shape;
  int64_t dim = op.getDim(), extent = shape[dim];
  Type acc = dst->elementType;
  ReduceSpec spec = ReduceSpec::of(op.getKind(), op.getElement().value_or(acc));
  auto sideFor = [&](const Buffer &buf) {
    Side s{buf, {}, shape};
    for (size_t i = 0; i < shape.size(); ++i)
      s.offsets.push_back(cIdx(b, loc, 0));
    return s;
  };
  // Work in shared memory: fragments go through scratch.
  Buffer work = *dst;
  bool dstFrag = dst->kind == BufferKind::Fragment;
  if (src->kind == BufferKind::Fragment || dstFrag) {
    Side scratch = scratchSide(b, shape, acc);
    work = scratch.buf;
    barrier(b);
    if (src->kind == BufferKind::Fragment)
      copyFragmentMemory(b, sideFor(*src), scratch, true);
    else
      copyMemoryToMemory(b, sideFor(*src), scratch, false);
  } else if (src->memref != dst->memref) {
    barrier(b);
    copyMemoryToMemory(b, sideFor(*src), sideFor(*dst), false);
  }
  if (work.kind != BufferKind::Shared)
    return op.emitOpError("cumsum needs shared or fragment buffers on ")
           << target.getPlatformName() << " targets";
  barrier(b);
  // One thread scans each line.
  int64_t lines = 1;
  SmallVector<int64_t> outer;
  for (auto [d, e] : llvm::enumerate(shape))
    if ((int64_t)d != dim) {
      lines *= e;
      outer.push_back(e);
    }
  for (int64_t k = 0; k * numThreads < lines; ++k) {
    Value line =
        arith::AddIOp::create(b, loc, tid, cIdx(b, loc, k * numThreads));
    Value cond = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, line,
                                       cIdx(b, loc, lines));
    guarded(b, loc, cond, [&](OpBuilder &gb) {
      SmallVector<Value> pos(shape.size());
      Value rem = line;
      for (int64_t d = shape.size() - 1; d >= 0; --d) {
        if (d == dim)
          continue;
        pos[d] = arith::RemUIOp::create(gb, loc, rem, cIdx(gb, loc, shape[d]));
        rem = arith::DivUIOp::create(gb, loc, rem, cIdx(gb, loc, shape[d]));
      }
      scf::ForOp::create(
          gb, loc, cIdx(gb, loc, 0), cIdx(gb, loc, extent), cIdx(gb, loc, 1),
          ValueRange{reduceIdentity(gb, loc, spec, acc)},
          [&](OpBuilder &lb, Location l, Value i, ValueRange args) {
            Value p =
                op.getReverse()
                    ? arith::SubIOp::create(lb, l, cIdx(lb, l, extent - 1), i)
                          .getResult()
                    : i;
            SmallVector<Value> idx(pos);
            idx[dim] = p;
            Value x = convertElements(lb, l, loadElement(lb, work, idx), acc);
            Value s = reduceCombine(lb, l, spec, args[0], x);
            storeElement(lb, work, idx, s);
            scf::YieldOp::create(lb, l, s);
          });
    });
  }
  barrier(b);
  if (dstFrag) {
    copyFragmentMemory(b, sideFor(*dst), sideFor(work), false);
    barrier(b);
  }
  return success();
}

void mlir::tile::registerReductionLowerings(LoweringTable &table) {
  table.add<ReduceOp>([](KernelLowering &kl, ReduceOp op, OpBuilder &b,
                         IRMapping &map, Context &) {
    return kl.lowerReduce(op, b, map);
  });
  table.add<CumSumOp>([](KernelLowering &kl, CumSumOp op, OpBuilder &b,
                         IRMapping &map, Context &) {
    return kl.lowerCumSum(op, b, map);
  });
}
