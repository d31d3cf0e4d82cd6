//===- ParallelLoops.cpp - tile.parallel as per-register code
//---------------===//
//
// Part of tilelang-mlir.
//
// A tile.parallel runs one instance of its body per register of its layout,
// with the logical index computed from the thread id; shared accesses at the
// loop's indices are vectorized over groups of registers.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "dialects/Tile/Utils/BufferUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tile;

/// A per-thread tile.parallel (isPerThreadLoop: only local buffers written,
/// no fragment; its layout replicates every iteration in every thread) as
/// an scf.for nest over its extents in each thread: its body once, not
/// once per register.
LogicalResult KernelLowering::lowerPerThreadLoop(ParallelOp op,
                                                 const TileLayout &layout,
                                                 OpBuilder &b, IRMapping &map) {
  Block &body = op.getBody().front();
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t e : op.getExtents()) {
    lbs.push_back(cIdx(b, loc, 0));
    ubs.push_back(cIdx(b, loc, e));
    steps.push_back(cIdx(b, loc, 1));
  }
  LogicalResult result = success();
  scf::buildLoopNest(
      b, loc, lbs, ubs, steps, [&](OpBuilder &nb, Location, ValueRange ivs) {
        IRMapping inner = map;
        for (auto [arg, v] : llvm::zip(body.getArguments(), ivs))
          inner.map(arg, v);
        Context ctx;
        ctx.loopLayout = &layout;
        ctx.reg = 0;
        ctx.body = &body;
        ctx.ivs.assign(ivs.begin(), ivs.end());
        if (failed(lowerBlock(body, nb, inner, ctx)))
          result = failure();
      });
  return result;
}

/// Registers past which a tile.parallel whose body touches only memory
/// runs its registers as a loop instead of once each (128 unrolled copies
/// of a float64 normal sample took 18 s to compile).
static constexpr int64_t kRolledRegisters = 64;

/// A tile.parallel as an scf.for over the registers of each thread: the
/// body once, its indices computed from the loop's register.
LogicalResult KernelLowering::lowerRolledParallel(ParallelOp op,
                                                  const TileLayout &layout,
                                                  OpBuilder &b,
                                                  IRMapping &map) {
  Value leader = replicaLeader(b, layout);
  // Dimensions that some register of some thread holds out of range.
  SmallVector<bool> exceeds(layout.getShape().size(), false);
  for (int64_t r = 0; r < layout.getNumRegs(); ++r)
    for (auto [d, e] : llvm::enumerate(layout.padding(r, numThreads).exceeds))
      exceeds[d] = exceeds[d] || e;
  auto loop = scf::ForOp::create(b, loc, cIdx(b, loc, 0),
                                 cIdx(b, loc, layout.getNumRegs()),
                                 cIdx(b, loc, 1));
  OpBuilder lb = OpBuilder::atBlockTerminator(loop.getBody());
  // No fragment is accessed: no register index is read (register 0).
  return lowerInstance(op, layout, lb, map,
                       layout.emitInverse(lb, loc, tid, loop.getInductionVar()),
                       exceeds, /*reg=*/0, leader);
}

/// One instance of the body of `op` at indices `ivs` (register `reg` of
/// the loop's layout), guarded by the dimensions that can be out of range.
LogicalResult KernelLowering::lowerInstance(ParallelOp op,
                                            const TileLayout &layout,
                                            OpBuilder &b, IRMapping &map,
                                            ArrayRef<Value> ivs,
                                            ArrayRef<bool> exceeds,
                                            int64_t reg, Value leader) {
  Block &body = op.getBody().front();
  Value cond;
  for (auto [d, exceed] : llvm::enumerate(exceeds))
    if (exceed)
      cond = andOf(
          b, loc, cond,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, ivs[d],
                                cIdx(b, loc, layout.getShape()[d])));
  LogicalResult result = success();
  guarded(b, loc, cond, [&](OpBuilder &gb) {
    IRMapping inner = map;
    for (auto [arg, v] : llvm::zip(body.getArguments(), ivs))
      inner.map(arg, v);
    Context ctx;
    ctx.loopLayout = &layout;
    ctx.reg = reg;
    ctx.body = &body;
    ctx.ivs.assign(ivs.begin(), ivs.end());
    ctx.leader = leader;
    result = lowerBlock(body, gb, inner, ctx);
  });
  return result;
}

LogicalResult KernelLowering::lowerParallel(ParallelOp op, OpBuilder &b,
                                            IRMapping &map) {
  auto attr = op->getAttrOfType<FragmentLayoutAttr>("layout");
  if (!attr)
    return op.emitOpError("has no layout: run tile-layout-inference first");
  FailureOr<TileLayout> layout = TileLayout::fromAttr(attr, op.getExtents());
  if (failed(layout))
    return op.emitOpError("layout is not a digit structure");
  // A per-thread loop (every thread runs every iteration) too long to
  // unroll runs as a loop nest.
  if (layout->getNumRegs() > limits::kRegistersPerThread &&
      isPerThreadLoop(op))
    return lowerPerThreadLoop(op, *layout, b, map);
  if (layout->getNumRegs() > kRolledRegisters && op.getVector().value_or(1) == 1 &&
      touchesOnlyMemory(op))
    return lowerRolledParallel(op, *layout, b, map);
  // The leader of a replicated instance: replica digits all zero.
  Value leader = replicaLeader(b, *layout);
  Block &body = op.getBody().front();
  // Vectorized shared accesses: with `vector = w`, registers r .. r + w - 1
  // of every thread hold w consecutive innermost indices. A shared buffer
  // the body only loads (or only stores) at exactly the loop's indices is
  // then read with one w-wide load before the group's bodies (or written
  // with one w-wide store after them) instead of w scalar accesses, each
  // with its own swizzled address.
  int64_t width = op.getVector().value_or(1);
  SmallVector<std::pair<Operation *, Buffer>, 2> vecLoads, vecStores;
  if (width > 1) {
    DenseMap<Value, int> loaded, stored; // shared root -> count
    auto isIdentity = [&](ValueRange indices) {
      if (indices.size() != body.getNumArguments())
        return false;
      for (auto [d, i] : llvm::enumerate(indices))
        if (i != body.getArgument(d))
          return false;
      return true;
    };
    SmallVector<std::pair<Operation *, Buffer>, 2> loads, stores;
    body.walk([&](Operation *inner) {
      bool isLoad = isa<memref::LoadOp>(inner);
      if (!isLoad && !isa<memref::StoreOp>(inner))
        return;
      Value mem = isLoad ? cast<memref::LoadOp>(inner).getMemRef()
                         : cast<memref::StoreOp>(inner).getMemRef();
      (isLoad ? loaded : stored)[mem]++;
      ValueRange indices = isLoad ? cast<memref::LoadOp>(inner).getIndices()
                                  : cast<memref::StoreOp>(inner).getIndices();
      if (inner->getBlock() != &body || !isIdentity(indices))
        return;
      FailureOr<Buffer> buf = bufferOf(mem, b, map);
      if (failed(buf) || buf->kind != BufferKind::Shared ||
          width * elementBytes(buf->elementType) > 16 ||
          sharedInnerAlignment(*buf, cIdx(b, loc, width)) % width)
        return;
      (isLoad ? loads : stores).push_back({inner, *buf});
    });
    auto memOf = [](Operation *o) {
      return isa<memref::LoadOp>(o) ? cast<memref::LoadOp>(o).getMemRef()
                                    : cast<memref::StoreOp>(o).getMemRef();
    };
    for (auto &l : loads)
      if (!stored.count(memOf(l.first)))
        vecLoads.push_back(l);
    for (auto &st : stores)
      if (!loaded.count(memOf(st.first)))
        vecStores.push_back(st);
  }
  // Does the group of registers r .. r + width - 1 hold `width` consecutive
  // innermost indices, all in range, for every thread?
  auto isGroup = [&](int64_t r) {
    if (vecLoads.empty() && vecStores.empty())
      return false;
    if (r % width || r + width > layout->getNumRegs())
      return false;
    int64_t last = layout->getShape().size() - 1;
    for (int64_t t = 0; t < numThreads; ++t) {
      SmallVector<int64_t> first = layout->inverse(t, r);
      if (first[last] % width)
        return false;
      for (int64_t i = 0; i < width; ++i) {
        SmallVector<int64_t> idx = layout->inverse(t, r + i);
        for (auto [d, v] : llvm::enumerate(idx)) {
          if (v >= layout->getShape()[d])
            return false;
          if (v != first[d] + ((int64_t)d == last ? i : 0))
            return false;
        }
      }
    }
    return true;
  };
  for (int64_t r = 0; r < layout->getNumRegs(); ++r) {
    if (width > 1 && isGroup(r)) {
      SmallVector<Value> ivs0 = layout->emitInverse(b, loc, tid, r);
      DenseMap<Operation *, Value> preloaded;
      DenseMap<Operation *, SmallVector<Value>> pending;
      for (auto &[ld, buf] : vecLoads)
        preloaded[ld] = loadVector(b, buf, ivs0, width);
      for (auto &st : vecStores)
        pending[st.first] = {};
      Context ctx;
      ctx.loopLayout = &*layout;
      ctx.body = &body;
      ctx.leader = leader;
      ctx.preloaded = &preloaded;
      ctx.pendingStores = &pending;
      for (int64_t i = 0; i < width; ++i) {
        IRMapping inner = map;
        SmallVector<Value> ivs = ivs0;
        ivs.back() =
            arith::AddIOp::create(b, loc, ivs0.back(), cIdx(b, loc, i));
        for (auto [arg, v] : llvm::zip(body.getArguments(), ivs))
          inner.map(arg, v);
        ctx.reg = r + i;
        ctx.ivs = ivs;
        ctx.lane = i;
        if (failed(lowerBlock(body, b, inner, ctx)))
          return failure();
      }
      for (auto &[st, buf] : vecStores) {
        SmallVector<Value> &values = pending[st];
        if ((int64_t)values.size() != width)
          return op.emitOpError("internal: a vectorized store ran ")
                 << values.size() << " times for " << width << " lanes";
        Value vec = vector::FromElementsOp::create(
            b, loc, VectorType::get({width}, buf.elementType), values);
        const Buffer &target = buf;
        guarded(b, loc, sideEffectGuard(b, ctx),
                [&](OpBuilder &gb) { storeVector(gb, target, ivs0, vec); });
      }
      r += width - 1;
      continue;
    }
    // Which dimensions can run out of range for some thread (padding)?
    TileLayout::RegisterPadding pad = layout->padding(r, numThreads);
    if (!pad.anyInBounds)
      continue;
    if (failed(lowerInstance(op, *layout, b, map,
                             layout->emitInverse(b, loc, tid, r), pad.exceeds, r,
                             leader)))
      return failure();
  }
  return success();
}

void mlir::tile::registerParallelLowerings(LoweringTable &table) {
  table.add<ParallelOp>([](KernelLowering &kl, ParallelOp op, OpBuilder &b,
                           IRMapping &map, Context &) {
    return kl.lowerParallel(op, b, map);
  });
}
