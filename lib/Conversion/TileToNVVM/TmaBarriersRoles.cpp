//===- TmaBarriersRoles.cpp - TMA, mbarriers, warp-specialized roles -----===//
//
// Part of tilelang-mlir.
//
// NVIDIA's asynchronous data movement (sm_90a): tensor maps and TMA loads
// and stores (the epilogue through a staging buffer), mbarriers (init, wait,
// arrive, across a cluster), and warp-specialized kernels (producer and
// consumer roles, setmaxnreg, named barriers).
//
//===----------------------------------------------------------------------===//

#include "NVVMKernelLowering.h"
#include "dialects/Tile/Utils/BufferUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::tile;

/// Warp specialization, register budgets, proxy fences, named barriers,
/// waits and arrivals on mbarriers (lowered in each instance of a parallel
/// body too), and the copies through TMA.
void mlir::tile::registerTmaBarrierRoleLowerings(LoweringTable &table) {
  table.add<WarpSpecializeOp>(
      [](KernelLowering &kl, WarpSpecializeOp op, OpBuilder &b,
         IRMapping &map, Context &ctx) {
        return nvvmLowering(kl).lowerWarpSpecialize(op, b, map, ctx);
      },
      InParallel::lowered);
  table.add<SetMaxNRegOp>(
      [](KernelLowering &kl, SetMaxNRegOp set, OpBuilder &b, IRMapping &,
         Context &) {
        NVVM::SetMaxRegisterOp::create(
            b, kl.loc, set.getCount(),
            set.getIncrease() ? NVVM::SetMaxRegisterAction::increase
                              : NVVM::SetMaxRegisterAction::decrease);
        return success();
      },
      InParallel::lowered);
  table.add<FenceProxyAsyncOp>(
      [](KernelLowering &kl, FenceProxyAsyncOp, OpBuilder &b, IRMapping &,
         Context &) {
        // Chips without TMA and wgmma have no asynchronous proxy to order.
        if (kl.target.getChipInfo().tma)
          emitSharedProxyFence(b, kl.loc);
        return success();
      },
      InParallel::lowered);
  table.add<NamedBarrierOp>(
      [](KernelLowering &kl, NamedBarrierOp bar, OpBuilder &b, IRMapping &,
         Context &) {
        emitNamedBarrier(b, kl.loc, bar.getId(), bar.getThreads());
        return success();
      },
      InParallel::lowered);
  table.add<BarrierWaitOp>(
      [](KernelLowering &kl, BarrierWaitOp op, OpBuilder &b, IRMapping &map,
         Context &) { return nvvmLowering(kl).lowerBarrierWait(op, b, map); },
      InParallel::lowered);
  table.add<BarrierArriveOp>(
      [](KernelLowering &kl, BarrierArriveOp op, OpBuilder &b, IRMapping &map,
         Context &) {
        return nvvmLowering(kl).lowerBarrierArrive(op, b, map);
      },
      InParallel::lowered);
  table.add<ClusterCopyOp>([](KernelLowering &kl, ClusterCopyOp op,
                              OpBuilder &b, IRMapping &map, Context &) {
    return nvvmLowering(kl).lowerClusterCopy(op, b, map);
  });
  // Copies through a barrier are TMA loads, the epilogue copies that
  // chooseTmaStores picked TMA stores; the others stay the target-neutral
  // lowering's.
  LoweringFn plain = table.get<CopyOp>();
  assert(plain && "the copy family registers first");
  table.add<CopyOp>([plain](KernelLowering &kl, CopyOp op, OpBuilder &b,
                            IRMapping &map, Context &ctx) {
    if (op.getBarrier())
      return nvvmLowering(kl).lowerTmaCopy(op, b, map);
    if (kl.tmaStores.contains(op))
      return nvvmLowering(kl).lowerTmaStore(op, b, map);
    return plain(kl, op, b, map, ctx);
  });
}

/// Polls the barrier until the phase of the given parity completed.
LogicalResult NVVMKernelLowering::lowerBarrierWait(BarrierWaitOp wait,
                                                   OpBuilder &b,
                                                   IRMapping &map) {
  Value ptr = barrierPtr(b, wait.getBarriers(), wait.getIndex(), map);
  Value parity = arith::IndexCastUIOp::create(
      b, loc, b.getI32Type(), map.lookupOrDefault(wait.getParity()));
  // Poll until the phase completed: try_wait (sm_90; it may suspend the
  // thread for a system-defined time), before sm_90 test_wait
  // (mbarrier.test_wait.parity, sm_80), which returns at once.
  // Arrivals from other blocks of the cluster release at cluster scope:
  // the wait acquires at the same scope (what those blocks stored before
  // arriving is then visible here).
  auto scope = arrivedFromCluster(wait.getBarriers())
                   ? NVVM::MemScopeKind::CLUSTER
                   : NVVM::MemScopeKind::CTA;
  auto loop = scf::WhileOp::create(b, loc, TypeRange{}, ValueRange{});
  {
    Block *before = b.createBlock(&loop.getBefore());
    OpBuilder wb = OpBuilder::atBlockEnd(before);
    Value done =
        target.getChipInfo().arch >= 90
            ? NVVM::MBarrierTryWaitOp::create(wb, loc, wb.getI1Type(), ptr,
                                              parity, Value(), scope, false)
                  .getResult()
            : NVVM::MBarrierTestWaitOp::create(wb, loc, wb.getI1Type(), ptr,
                                               parity, scope, false)
                  .getResult();
    Value pending = arith::XOrIOp::create(
        wb, loc, done,
        arith::ConstantIntOp::create(wb, loc, wb.getI1Type(), 1));
    scf::ConditionOp::create(wb, loc, pending, ValueRange{});
    Block *after = b.createBlock(&loop.getAfter());
    OpBuilder ab = OpBuilder::atBlockEnd(after);
    scf::YieldOp::create(ab, loc);
  }
  b.setInsertionPointAfter(loop);
  // Shared memory that other threads' cp.async wrote (generic proxy) and
  // this thread's wgmma reads next (async proxy).
  if (usesAsyncProxy && cpAsyncCopies)
    emitSharedProxyFence(b, loc);
  return success();
}

/// An arrival on a barrier: with its transaction bytes, per thread, or
/// one per warp (across the cluster where asked).
LogicalResult NVVMKernelLowering::lowerBarrierArrive(BarrierArriveOp arrive,
                                                     OpBuilder &b,
                                                     IRMapping &map) {
  Value ptr = barrierPtr(b, arrive.getBarriers(), arrive.getIndex(), map);
  if (std::optional<int64_t> tx = arrive.getExpectTx()) {
    Value bytes = arith::ConstantIntOp::create(b, loc, b.getI32Type(), *tx);
    auto arriveExpect = [&](OpBuilder &gb) {
      NVVM::MBarrierArriveExpectTxOp::create(gb, loc, Type(), ptr, bytes,
                                             NVVM::MemScopeKind::CTA,
                                             /*relaxed=*/false, Value());
    };
    // per_thread (T.mbarrier_arrive_expect_tx): every executing thread
    // arrives and announces the bytes; else one thread of them does.
    if (arrive.getPerThread())
      arriveExpect(b);
    else
      guarded(b, loc, isRoleLeader(b), arriveExpect);
    return success();
  }
  if (arrive.getPerThread()) {
    if (arrive.getCluster() && !clusterDims.empty())
      return arrive.emitOpError("per-thread arrivals on the barriers of a "
                                "cluster are not supported");
    if (arrive.getAfterCopies()) {
      NVVM::CpAsyncMBarrierArriveOp::create(b, loc, ptr, /*noinc=*/true);
      return success();
    }
    // The thread's shared-memory writes before the arrival may be read
    // next through the async proxy (wgmma, a TMA store) by the waiters.
    if (usesAsyncProxy)
      emitSharedProxyFence(b, loc);
    NVVM::MBarrierArriveOp::create(b, loc, b.getI64Type(), ptr, Value());
    return success();
  }
  // One arrival per warp, after its lanes converged.
  NVVM::SyncWarpOp::create(
      b, loc, arith::ConstantIntOp::create(b, loc, b.getI32Type(), -1));
  Value lane0 = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, loc, tid, cIdx(b, loc, 32)), cIdx(b, loc, 0));
  guarded(b, loc, lane0, [&](OpBuilder &gb) {
    if (!arrive.getCluster() || clusterDims.empty()) {
      NVVM::MBarrierArriveOp::create(gb, loc, gb.getI64Type(), ptr, Value());
      return;
    }
    // The same barrier in every block of the cluster.
    auto clusterPtr = LLVM::LLVMPointerType::get(gb.getContext(), 7);
    for (int64_t r = 0; r < clusterBlocks(); ++r) {
      Value remote = NVVM::MapaOp::create(
          gb, loc, clusterPtr, ptr,
          arith::ConstantIntOp::create(gb, loc, gb.getI32Type(), r));
      // Release at CTA scope (as CUTLASS does): consumers only read the
      // slot, through wgmma, which completed before.
      NVVM::MBarrierArriveOp::create(gb, loc, Type(), remote, Value(),
                                     NVVM::MemScopeKind::CTA, false);
    }
  });
  return success();
}

/// Thread 0 initializes every barrier; the fence makes the initialization
/// visible to the async proxy (TMA), the barrier to all threads.
void NVVMKernelLowering::initBarriers(OpBuilder &b) {
  guarded(b, loc, isThreadZero(b), [&](OpBuilder &gb) {
    for (auto [memref, alloc] : barrierInits) {
      int64_t n = cast<MemRefType>(memref.getType()).getNumElements();
      for (int64_t i = 0; i < n; ++i)
        NVVM::MBarrierInitOp::create(
            gb, loc, sharedPtr(gb, memref, cIdx(gb, loc, 8 * i)),
            arith::ConstantIntOp::create(gb, loc, gb.getI32Type(),
                                         alloc.getArrivalsOf(i)),
            Value());
    }
    // (release.cluster: sm_90; before, the block barrier below suffices)
    if (target.getChipInfo().arch >= 90)
      NVVM::FenceMbarrierInitOp::create(gb, loc);
  });
  // The other blocks of a cluster multicast into this block's memory and
  // arrive on its barriers: all must be initialized first.
  if (clusterDims.empty())
    gpu::BarrierOp::create(b, loc);
  else
    clusterSync(b);
}

/// The role's first thread issued the bulk groups (TMA stores and
/// reduce-adds): it waits until they have read shared memory.
void NVVMKernelLowering::leaderWaitsBulkReads(OpBuilder &b) {
  guarded(b, loc, isRoleLeader(b), [&](OpBuilder &gb) {
    NVVM::CpAsyncBulkWaitGroupOp::create(gb, loc, gb.getI32IntegerAttr(0),
                                         gb.getUnitAttr());
  });
}

void NVVMKernelLowering::waitBulkReads(OpBuilder &b, bool withBarrier) {
  leaderWaitsBulkReads(b);
  if (withBarrier)
    barrier(b);
}

void NVVMKernelLowering::clusterSync(OpBuilder &b) {
  NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
  NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
}

/// `op` (a copy, a bulk atomic add) goes through tensor map `m` (one per
/// parameter, box and swizzle).
void NVVMKernelLowering::useTensorMap(Operation *copy, const TensorMap &m) {
  auto it = llvm::find_if(tensorMaps, [&](const TensorMap &t) {
    return t.param == m.param && t.box == m.box && t.swizzle == m.swizzle;
  });
  if (it == tensorMaps.end()) {
    tensorMaps.push_back(m);
    it = std::prev(tensorMaps.end());
  }
  copyTensorMap[copy] = it - tensorMaps.begin();
}

/// One tensor map per (source tensor, box, swizzle) of the copies through
/// barriers. A destination whose rows are wider than its swizzle span is
/// filled panel by panel: the box is one panel wide.
LogicalResult NVVMKernelLowering::collectTensorMaps() {
  WalkResult result = kernel.walk([&](CopyOp copy) -> WalkResult {
    if (!copy.getBarrier())
      return WalkResult::advance();
    auto arg = dyn_cast<BlockArgument>(copy.getSrc());
    if (!arg || arg.getOwner()->getParentOp() != func.getOperation())
      return copy.emitOpError("a TMA copy must read a kernel argument");
    AllocSharedOp alloc = sharedAllocOf(copy.getDst());
    if (!alloc)
      return copy.emitOpError("a TMA copy must write a tile.alloc_shared");
    int64_t swizzle =
        alloc.getSwizzleAttr() ? alloc.getSwizzleAttr().getBytes() : 0;
    int64_t eb = elementBytes(alloc.getType().getElementType());
    int64_t span = sharedPanelElements(alloc.getType().getShape(), eb, swizzle);
    SmallVector<int64_t> box(copy.getSrcSizes());
    if (span)
      box.back() = span;
    if (swizzle && box.back() * eb > swizzle)
      return copy.emitOpError("a TMA box row of ")
             << box.back() * eb << " bytes exceeds the " << swizzle
             << "-byte swizzle of its destination";
    useTensorMap(copy, {arg.getArgNumber(), box, swizzle});
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  // Bulk atomic adds (T.atomic_add(..., use_tma=True)) of a whole shared
  // allocation of rank 1 or 2 into a kernel argument of its element type
  // (float32, float16, bfloat16, int32): boxes of one panel of the tile,
  // its swizzle. Others are added element by element.
  // A destination whose static strides TMA cannot address (rows not a
  // multiple of 16 bytes) is refused here, at the user's line: the launch
  // would refuse its tensor map (runtime/cuda.py's tensormap_encoding), and
  // use_tma=True asks for TMA (TileLang's tensor map fails the same way).
  if (target.getChipInfo().tma) {
    WalkResult adds = kernel.walk([&](AtomicAddOp add) -> WalkResult {
      if (!add.getTma())
        return WalkResult::advance();
      auto arg = dyn_cast<BlockArgument>(add.getDst());
      AllocSharedOp alloc = sharedAllocOf(add.getValue());
      if (!arg || arg.getOwner()->getParentOp() != func.getOperation() ||
          !alloc || alloc.getResult() != add.getValue())
        return WalkResult::advance();
      auto src = cast<MemRefType>(add.getValue().getType());
      auto dst = cast<MemRefType>(add.getDst().getType());
      Type et = dst.getElementType();
      if (!dst.getLayout().isIdentity() || src.getRank() > 2 ||
          !(et.isF32() || et.isF16() || et.isBF16() || et.isInteger(32)))
        return WalkResult::advance();
      int64_t swizzle =
          alloc.getSwizzleAttr() ? alloc.getSwizzleAttr().getBytes() : 0;
      int64_t eb = elementBytes(et);
      SmallVector<int64_t> box(dst.getRank() - src.getRank(), 1);
      llvm::append_range(box, src.getShape());
      int64_t span = sharedPanelElements(src.getShape(), eb, swizzle);
      if (span)
        box.back() = span;
      if ((box.back() * eb) % 16 || (swizzle && box.back() * eb > swizzle) ||
          llvm::any_of(box, [](int64_t e) { return e > 256; }))
        return WalkResult::advance();
      // Each panel is a box whose shared source must start 128-byte
      // aligned: panels rows * span bytes apart ((3, 48) float32: 192-byte
      // rows, 64-byte panels 192 bytes apart) go element by element.
      if (span && (src.getShape()[src.getRank() - 2] * span * eb) % 128)
        return WalkResult::advance();
      if (std::optional<std::pair<int64_t, int64_t>> bad =
              staticTensorMapStrideError(dst))
        return add.emitOpError("use_tma=True: TMA cannot address argument #")
               << arg.getArgNumber() << " of the kernel (counting from 0, "
               << dst << "): its dimension " << bad->first
               << " has a stride of " << bad->second / eb << " elements ("
               << bad->second
               << " bytes), and TMA needs every stride to be a multiple of 16 "
                  "bytes; drop use_tma=True (the adds then go element by "
                  "element) or pad the tensor's rows";
      useTensorMap(add, {arg.getArgNumber(), box, swizzle});
      bulkReadSources.insert(alloc.getResult());
      return WalkResult::advance();
    });
    if (adds.wasInterrupted())
      return failure();
  }
  // Epilogue stores: boxes of one panel of the staging buffer.
  kernel.walk([&](CopyOp copy) {
    if (!tmaStores.contains(copy))
      return;
    auto arg = cast<BlockArgument>(copy.getDst());
    auto type = cast<MemRefType>(copy.getDst().getType());
    int64_t eb = elementBytes(type.getElementType());
    SmallVector<int64_t> box(copy.getDstSizes());
    box.back() = 128 / eb;
    useTensorMap(copy, {arg.getArgNumber(), box, 128});
  });
  return success();
}

/// Epilogues through TMA stores: in the consumer of a warp-specialized
/// kernel, a copy of a whole 2-d fragment to a kernel argument (16-byte
/// rows, 2- or 4-byte elements, at most 256 rows, whole 128-byte panels)
/// when a staging buffer of the fragment's size in the output type fits in
/// shared memory beside everything else. The argument has rank 2, or 3 to
/// 5 for a fragment of 64 rows or more in a persistent kernel (a box of
/// ones but the last two sizes: the attention backward's (batch, head,
/// row, column) dK and dV), where the stores overlap the next tile; a
/// launched kernel's epilogue of such tiles read level with the threads'
/// own stores (the D=128 backward), and decoding's partial outputs of a
/// few heads are not worth the staging tile's shared memory.
void NVVMKernelLowering::chooseTmaStores() {
  WarpSpecializeOp ws;
  kernel.walk([&](WarpSpecializeOp w) { ws = w; });
  if (!ws)
    return;
  int64_t need = 0;
  SmallVector<Operation *> found;
  int64_t maxRank = kernel->hasAttr("tile.persistent") ? 5 : 2;
  ws.getConsumer().walk([&](CopyOp copy) {
    auto frag = copy.getSrc().getDefiningOp<AllocFragmentOp>();
    auto arg = dyn_cast<BlockArgument>(copy.getDst());
    if (!frag || !arg || arg.getOwner()->getParentOp() != func.getOperation())
      return;
    MemRefType src = frag.getType();
    auto dst = cast<MemRefType>(copy.getDst().getType());
    int64_t rank = dst.getRank();
    if (src.getRank() != 2 || rank < 2 || rank > maxRank ||
        !dst.getLayout().isIdentity())
      return;
    ArrayRef<int64_t> dstSizes = copy.getDstSizes();
    if (ArrayRef<int64_t>(copy.getSrcSizes()) != src.getShape() ||
        dstSizes.take_back(2) != src.getShape() ||
        llvm::any_of(dstSizes.drop_back(2), [](int64_t n) { return n != 1; }))
      return;
    for (Value o : copy.getSrcOffsets())
      if (!matchPattern(o, m_Zero()))
        return;
    int64_t eb = elementBytes(dst.getElementType());
    if ((eb != 2 && eb != 4) || !tensorMapStrides(dst))
      return;
    int64_t rows = src.getDimSize(0), cols = src.getDimSize(1);
    if (rows > 256 || cols % (128 / eb) || (rank > 2 && rows < 64))
      return;
    need = std::max(need, rows * cols * eb);
    found.push_back(copy);
  });
  if (found.empty())
    return;
  // The footprint planSharedMemory will give, with the staging buffer.
  int64_t total =
      llvm::alignTo(llvm::alignTo(placeShared(nullptr), 1024) + need, 128) +
      kernelScratchNeed() + 1024;
  if (total > target.getMaxSharedBytes())
    return;
  tmaStores.insert(found.begin(), found.end());
  stagingBytes = need;
}

/// The coordinates of a TMA box at `offsets` (outermost first) moved `c0`
/// along the innermost dimension: i32, innermost first.
static SmallVector<Value> tmaCoordinates(OpBuilder &b, Location loc,
                                         ArrayRef<Value> offsets, int64_t c0) {
  SmallVector<Value> coords;
  for (int64_t d = offsets.size() - 1; d >= 0; --d) {
    Value o = offsets[d];
    if (d == (int64_t)offsets.size() - 1 && c0)
      o = arith::AddIOp::create(b, loc, o, cIdx(b, loc, c0));
    coords.push_back(arith::IndexCastOp::create(b, loc, b.getI32Type(), o));
  }
  return coords;
}

/// The epilogue copy of a fragment through the staging buffer: once the
/// previous TMA stores have read the buffer, the role's threads write the
/// fragment into it (128-byte swizzle, panels), fence it for the async
/// proxy, and one thread issues a TMA store per panel and commits them as
/// one bulk group, left in flight.
LogicalResult NVVMKernelLowering::lowerTmaStore(CopyOp op, OpBuilder &b,
                                                IRMapping &map) {
  FailureOr<Side> src =
      sideOf(op.getSrc(), op.getSrcOffsets(), op.getSrcSizes(), b, map);
  if (failed(src))
    return failure();
  MLIRContext *ctx = b.getContext();
  Type et = cast<MemRefType>(op.getDst().getType()).getElementType();
  int64_t eb = elementBytes(et);
  int64_t rows = src->buf.shape[0], cols = src->buf.shape[1];
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Buffer staging;
  staging.kind = BufferKind::Shared;
  staging.memref = memref::ViewOp::create(
      b, loc,
      MemRefType::get({rows * cols}, et, MemRefLayoutAttrInterface(),
                      workgroup),
      smem, smemAt(b, stagingOffset), ValueRange{});
  staging.shape = {rows, cols};
  staging.elementType = et;
  staging.allocShape = {rows, cols};
  staging.viewOffsets.assign(2, Value());
  staging.viewDims = {0, 1};
  staging.swizzle = 128;
  waitBulkReads(b); // the last epilogue's stores read it
  Side dst{staging, {cIdx(b, loc, 0), cIdx(b, loc, 0)}, {rows, cols}};
  copyFragmentMemory(b, *src, dst, /*toMemory=*/true);
  emitSharedProxyFence(b, loc);
  barrier(b);
  unsigned mapIndex = copyTensorMap.lookup(op);
  Value desc = gpuFunc.getArgument(mapIndex);
  int64_t width = tensorMaps[mapIndex].box.back();
  SmallVector<Value> offsets;
  for (Value o : op.getDstOffsets())
    offsets.push_back(map.lookupOrDefault(o));
  guarded(b, loc, isRoleLeader(b), [&](OpBuilder &gb) {
    for (int64_t c0 = 0; c0 < cols; c0 += width) {
      SmallVector<Value> coords = tmaCoordinates(gb, loc, offsets, c0);
      Value elems =
          emitSharedOffset(gb, loc, staging.allocShape,
                           {cIdx(gb, loc, 0), cIdx(gb, loc, c0)}, eb, 128,
                           /*applySwizzle=*/false);
      Value ptr =
          sharedPtr(gb, staging.memref,
                    arith::MulIOp::create(gb, loc, elems, cIdx(gb, loc, eb)));
      NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
          gb, loc, desc, ptr, coords, Value(),
          NVVM::TMAStoreModeAttr::get(ctx, NVVM::TMAStoreMode::TILE), Value());
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(gb, loc);
  });
  return success();
}

/// A bulk atomic add of a shared tile (see collectTensorMaps): every
/// thread fences its writes to the tile for the async proxy, the threads
/// synchronize, and the role's first thread issues one TMA reduce-add per
/// panel in one bulk group. Nobody waits here: the next op that writes the
/// tile waits for the group's reads first (emitBulkReadWait), so that they
/// overlap whatever comes between.
LogicalResult NVVMKernelLowering::lowerTmaReduce(AtomicAddOp op, OpBuilder &b,
                                                 IRMapping &map) {
  FailureOr<Buffer> src = bufferOf(op.getValue(), b, map);
  if (failed(src))
    return failure();
  unsigned mapIndex = copyTensorMap.lookup(op);
  const TensorMap &tm = tensorMaps[mapIndex];
  Value desc = gpuFunc.getArgument(mapIndex);
  int64_t eb = elementBytes(src->elementType);
  int64_t cols = src->shape.back(), width = tm.box.back();
  SmallVector<Value> offsets;
  for (Value o : op.getOffsets())
    offsets.push_back(map.lookupOrDefault(o));
  emitSharedProxyFence(b, loc);
  barrier(b);
  bulkReadsIssued = true;
  bulkReadsSettled = false;
  guarded(b, loc, isRoleLeader(b), [&](OpBuilder &gb) {
    for (int64_t c0 = 0; c0 < cols; c0 += width) {
      SmallVector<Value> coords = tmaCoordinates(gb, loc, offsets, c0);
      SmallVector<Value> at(src->rank(), cIdx(gb, loc, 0));
      at.back() = cIdx(gb, loc, c0);
      Value elems = emitSharedOffset(gb, loc, src->allocShape, at, eb,
                                     src->swizzle, /*applySwizzle=*/false);
      Value ptr =
          sharedPtr(gb, src->memref,
                    arith::MulIOp::create(gb, loc, elems, cIdx(gb, loc, eb)));
      NVVM::CpAsyncBulkTensorReduceOp::create(
          gb, loc, desc, ptr, NVVM::TMAReduxKind::ADD,
          NVVM::TMAStoreMode::TILE, coords, Value());
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(gb, loc);
  });
  return success();
}

/// A copy through a barrier: the role's first thread issues one TMA load
/// per panel of the destination (see collectTensorMaps); they complete on
/// the barrier's transaction count.
LogicalResult NVVMKernelLowering::lowerTmaCopy(CopyOp op, OpBuilder &b,
                                               IRMapping &map) {
  FailureOr<Buffer> dst = bufferOf(op.getDst(), b, map);
  if (failed(dst))
    return failure();
  const TensorMap &tm = tensorMaps[copyTensorMap.lookup(op)];
  Value desc = gpuFunc.getArgument(copyTensorMap.lookup(op));
  int64_t eb = elementBytes(dst->elementType);
  int64_t cols = op.getSrcSizes().back();
  int64_t width = tm.box.back();
  Value bar = barrierPtr(b, op.getBarrier(), op.getBarrierIndex(), map);
  SmallVector<Value> srcOffsets;
  for (Value o : op.getSrcOffsets())
    srcOffsets.push_back(map.lookupOrDefault(o));
  SmallVector<Value> dstOffsets;
  for (Value o : op.getDstOffsets())
    dstOffsets.push_back(map.lookupOrDefault(o));
  int64_t share = op.getMulticast().value_or(1);
  int64_t boxes = (cols + width - 1) / width;
  if (share > 1 && (clusterBlocks() != share || boxes % share))
    return op.emitOpError("a multicast copy needs a cluster of ")
           << share << " blocks and a multiple of " << share << " boxes";
  // T.copy_cluster(..., cluster_mask=M): the lowest rank of M issues the
  // copy into every block of M, the others of M receive it, the blocks
  // outside M copy their own.
  std::optional<uint64_t> castMask = op.getMulticastMask();
  if (castMask && (clusterDims.empty() ||
                   *castMask >> clusterBlocks() != 0))
    return op.emitOpError("(T.copy_cluster) the cluster mask 0x")
           << llvm::utohexstr(*castMask) << " names blocks beyond the "
           << clusterBlocks() << " of a cluster";
  Value rank;
  if (share > 1 || castMask)
    rank = arith::IndexCastUIOp::create(
        b, loc, b.getIndexType(),
        NVVM::ClusterId::create(b, loc, b.getI32Type()));
  // An L2 eviction priority: a cache policy of that priority for the
  // loaded data (createpolicy), given to the box.
  auto cachePolicy = [&](OpBuilder &pb) -> Value {
    std::optional<Eviction> ev = op.getEviction();
    if (!ev || *ev == Eviction::evict_normal)
      return Value();
    std::string text = std::string("createpolicy.fractional.L2::") +
                       (*ev == Eviction::evict_first ? "evict_first"
                                                     : "evict_last") +
                       ".b64 $0, 1.0;";
    return LLVM::InlineAsmOp::create(
               pb, loc, pb.getI64Type(), ValueRange{}, text, "=l",
               /*has_side_effects=*/false, /*is_align_stack=*/false,
               LLVM::tailcallkind::TailCallKind::None,
               LLVM::AsmDialectAttr::get(pb.getContext(),
                                         LLVM::AsmDialect::AD_ATT),
               ArrayAttr())
        .getRes();
  };
  // The box of columns [c0, c0 + width) (multicast to the blocks of the
  // i16 mask `makeMask` gives, null: none).
  auto emitBox = [&](OpBuilder &gb, int64_t c0,
                     llvm::function_ref<Value(OpBuilder &)> makeMask) {
    SmallVector<Value> coords = tmaCoordinates(gb, loc, srcOffsets, c0);
    // The destination of this panel: element (0, ..., c0) of the view.
    SmallVector<Value> at(dst->viewOffsets.begin(), dst->viewOffsets.end());
    for (auto [k, o] : llvm::enumerate(dstOffsets)) {
      Value v = k + 1 == dstOffsets.size() && c0
                    ? arith::AddIOp::create(gb, loc, o, cIdx(gb, loc, c0))
                          .getResult()
                    : o;
      Value &a = at[dst->viewDims[k]];
      a = a ? arith::AddIOp::create(gb, loc, a, v).getResult() : v;
    }
    for (Value &a : at)
      if (!a)
        a = cIdx(gb, loc, 0);
    Value elems = emitSharedOffset(gb, loc, dst->allocShape, at, eb,
                                   dst->swizzle, /*applySwizzle=*/false);
    Value ptr =
        sharedPtr(gb, dst->memref,
                  arith::MulIOp::create(gb, loc, elems, cIdx(gb, loc, eb)));
    Value cluster = LLVM::AddrSpaceCastOp::create(
        gb, loc, LLVM::LLVMPointerType::get(gb.getContext(), 7), ptr);
    Value mask = makeMask(gb);
    NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
        gb, loc, cluster, desc, coords, bar, ValueRange{}, mask,
        cachePolicy(gb), NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false,
        NVVM::CTAGroupKindAttr(), Value());
  };
  guarded(b, loc, isRoleLeader(b), [&](OpBuilder &lb) {
    // T.tma_copy: the issuing thread announces the bytes of every box
    // (the whole box lands, zeros included), without arriving.
    if (op.getExpectTx()) {
      int64_t boxBytes = eb;
      for (int64_t e : tm.box)
        boxBytes *= e;
      NVVM::MBarrierExpectTxOp::create(
          lb, loc, bar,
          arith::ConstantIntOp::create(lb, loc, lb.getI32Type(),
                                       boxBytes * boxes));
    }
    if (castMask) {
      auto i32 = [&](OpBuilder &ib, int64_t v) {
        return arith::ConstantIntOp::create(ib, loc, ib.getI32Type(), v);
      };
      Value r32 = arith::IndexCastUIOp::create(lb, loc, lb.getI32Type(), rank);
      auto issuer = scf::IfOp::create(
          lb, loc,
          arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::eq, r32,
                                i32(lb, llvm::countr_zero(*castMask))),
          /*withElseRegion=*/true);
      OpBuilder tb = OpBuilder::atBlockTerminator(issuer.thenBlock());
      for (int64_t c0 = 0; c0 < cols; c0 += width)
        emitBox(tb, c0, [&](OpBuilder &mb) -> Value {
          return arith::ConstantIntOp::create(mb, loc, mb.getI16Type(),
                                              (int64_t)*castMask);
        });
      OpBuilder eb2 = OpBuilder::atBlockTerminator(issuer.elseBlock());
      Value bit = arith::AndIOp::create(
          eb2, loc,
          arith::ShRUIOp::create(eb2, loc, i32(eb2, (int64_t)*castMask), r32),
          i32(eb2, 1));
      Value outside = arith::CmpIOp::create(
          eb2, loc, arith::CmpIPredicate::eq, bit, i32(eb2, 0));
      guarded(eb2, loc, outside, [&](OpBuilder &ob) {
        for (int64_t c0 = 0; c0 < cols; c0 += width)
          emitBox(ob, c0, [](OpBuilder &) { return Value(); });
      });
      return;
    }
    for (int64_t c0 = 0; c0 < cols; c0 += width) {
      // With multicast, block rank r issues boxes [r, r + 1) * boxes/share.
      OpBuilder gb = lb;
      scf::IfOp owner;
      if (share > 1) {
        int64_t who = (c0 / width) / (boxes / share);
        owner = scf::IfOp::create(
            lb, loc,
            arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::eq, rank,
                                  cIdx(lb, loc, who)),
            /*withElseRegion=*/false);
        gb = OpBuilder::atBlockTerminator(owner.thenBlock());
      }
      emitBox(gb, c0, [&](OpBuilder &mb) -> Value {
        if (share <= 1)
          return Value();
        return arith::ConstantIntOp::create(mb, loc, mb.getI16Type(),
                                            (1 << share) - 1);
      });
    }
  });
  return success();
}

bool NVVMKernelLowering::arrivedFromCluster(Value barriers) {
  if (clusterDims.empty())
    return false;
  return llvm::any_of(barriers.getUsers(), [&](Operation *user) {
    if (isa<BarrierArriveRankOp>(user))
      return true;
    auto copy = dyn_cast<ClusterCopyOp>(user);
    return copy && copy.getBarrier() == barriers;
  });
}

namespace {
/// A cluster copy as bulk copies: `count` runs of `runBytes` consecutive
/// bytes on both sides. Run k is the element at squeezed position
/// (k's digits over `outer`, 0, ..., 0) of the region, `srcStrides` /
/// `dstStrides` elements apart along the outer squeezed dimensions.
struct BulkRuns {
  int64_t runBytes = 0, count = 1;
  SmallVector<int64_t> outer, srcStrides, dstStrides;
};
} // namespace

/// The element strides of an unswizzled (row-major) allocation.
static SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> st(shape.size(), 1);
  for (int64_t d = (int64_t)shape.size() - 2; d >= 0; --d)
    st[d] = st[d + 1] * shape[d + 1];
  return st;
}

/// The runs of a copy between `src` and `dst` (regions of the same
/// squeezed shape in whole shared allocations, `srcAlloc` and `dstAlloc`):
/// the innermost squeezed dimensions that are consecutive in both form a
/// run, which must be a multiple of 16 bytes and start on 16 bytes in
/// both (cp.async.bulk). None for swizzled buffers (their elements are
/// not placed row-major).
static std::optional<BulkRuns>
bulkRunsOf(const KernelLowering::Side &src, AllocSharedOp srcAlloc,
           const KernelLowering::Side &dst, AllocSharedOp dstAlloc) {
  // The whole of one allocation into the whole of another placed alike (a
  // swizzled one too: a gemm operand): its bytes as they are.
  auto whole = [](const KernelLowering::Side &s, AllocSharedOp a) {
    return ArrayRef<int64_t>(s.sizes) == a.getType().getShape() &&
           llvm::all_of(s.offsets, [](Value o) { return matchPattern(o, m_Zero()); });
  };
  if (srcAlloc && dstAlloc && srcAlloc.getType() == dstAlloc.getType() &&
      srcAlloc.getSwizzleAttr() == dstAlloc.getSwizzleAttr() &&
      whole(src, srcAlloc) && whole(dst, dstAlloc) &&
      sharedBytesOf(srcAlloc) % 16 == 0) {
    BulkRuns r;
    r.runBytes = sharedBytesOf(srcAlloc);
    return r;
  }
  for (AllocSharedOp a : {srcAlloc, dstAlloc})
    if (!a || (a.getSwizzleAttr() && (a.getSwizzleAttr().getBytes() ||
                                      a.getSwizzleAttr().getPad())))
      return std::nullopt;
  int64_t eb = elementBytes(src.buf.elementType);
  // Per side: the strides of the squeezed dimensions, and the divisor
  // known of the region's first element (in bytes).
  struct Squeezed {
    SmallVector<int64_t> extents, strides;
    int64_t align = 1 << 20;
  };
  auto squeeze = [&](const KernelLowering::Side &s, AllocSharedOp a) {
    Squeezed q;
    SmallVector<int64_t> st = rowMajorStrides(a.getType().getShape());
    for (auto [d, size] : llvm::enumerate(s.sizes)) {
      int64_t term = knownDivisor(s.offsets[d]) * st[d] * eb;
      q.align = std::min<int64_t>(q.align, term & -term);
      if (size == 1)
        continue;
      q.extents.push_back(size);
      q.strides.push_back(st[d]);
    }
    return q;
  };
  Squeezed qs = squeeze(src, srcAlloc), qd = squeeze(dst, dstAlloc);
  if (qs.extents != qd.extents || qs.align % 16 || qd.align % 16)
    return std::nullopt;
  int64_t m = qs.extents.size();
  // The run: squeezed dimensions j..m-1, consecutive in both.
  int64_t j = m, run = 1;
  while (j > 0 && qs.strides[j - 1] == run && qd.strides[j - 1] == run) {
    --j;
    run *= qs.extents[j];
  }
  BulkRuns r;
  r.runBytes = run * eb;
  if (r.runBytes % 16)
    return std::nullopt;
  for (int64_t t = 0; t < j; ++t) {
    if ((qs.strides[t] * eb) % 16 || (qd.strides[t] * eb) % 16)
      return std::nullopt;
    r.outer.push_back(qs.extents[t]);
    r.srcStrides.push_back(qs.strides[t]);
    r.dstStrides.push_back(qd.strides[t]);
    r.count *= qs.extents[t];
  }
  return r;
}

/// `ptr` (a shared address of this block) as the 32-bit address of the
/// same place in the block of rank `rank` of the cluster.
static Value clusterAddress(OpBuilder &b, Location loc, Value ptr,
                            Value rank) {
  Value remote = NVVM::MapaOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 7), ptr, rank);
  return LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), remote);
}

/// T.copy_cluster(src, dst, dst_block=rank[, remote_barrier=bar]): see
/// tile.cluster_copy. Through a barrier, runs of 16-byte multiples go as
/// bulk copies that one thread issues after announcing their bytes on the
/// other block's barrier (one arrival); otherwise the threads store the
/// elements into the other block (mapa, st.shared::cluster), then, through
/// a barrier, synchronize and one thread arrives there, releasing their
/// stores at cluster scope.
LogicalResult NVVMKernelLowering::lowerClusterCopy(ClusterCopyOp op,
                                                   OpBuilder &b,
                                                   IRMapping &map) {
  FailureOr<Side> src =
      sideOf(op.getSrc(), op.getSrcOffsets(), op.getSrcSizes(), b, map);
  FailureOr<Side> dst =
      sideOf(op.getDst(), op.getDstOffsets(), op.getDstSizes(), b, map);
  if (failed(src) || failed(dst))
    return failure();
  MLIRContext *ctx = b.getContext();
  Value rank = map.lookupOrDefault(op.getRank());
  int64_t eb = elementBytes(src->buf.elementType);
  Value bar = op.getBarrier()
                  ? barrierPtr(b, op.getBarrier(), op.getBarrierIndex(), map)
                  : Value();
  auto wholeAlloc = [](Value v) {
    AllocSharedOp a = sharedAllocOf(v);
    return a && a.getResult() == v ? a : AllocSharedOp();
  };
  std::optional<BulkRuns> runs;
  if (bar)
    runs = bulkRunsOf(*src, wholeAlloc(op.getSrc()), *dst,
                      wholeAlloc(op.getDst()));
  // Through a barrier, the copy synchronizes the threads itself before it
  // reads the source (tile-insert-barriers leaves it to it); the bulk
  // copies read it through the async proxy, after the threads' writes.
  if (runs)
    emitSharedProxyFence(b, loc);
  if (bar)
    barrier(b);
  if (runs) {
    auto i32 = [&](OpBuilder &ib, int64_t v) {
      return arith::ConstantIntOp::create(ib, loc, ib.getI32Type(), v);
    };
    // The element offset of a region's first element (whole allocations,
    // row-major).
    auto base = [&](OpBuilder &ib, const Side &s) {
      SmallVector<int64_t> st = rowMajorStrides(s.buf.allocShape);
      Value at = cIdx(ib, loc, 0);
      for (auto [o, stride] : llvm::zip(s.offsets, st))
        at = arith::AddIOp::create(
            ib, loc, at,
            arith::MulIOp::create(ib, loc, o, cIdx(ib, loc, stride)));
      return at;
    };
    guarded(b, loc, isRoleLeader(b), [&](OpBuilder &lb) {
      Value remoteBar = NVVM::MapaOp::create(
          lb, loc, LLVM::LLVMPointerType::get(ctx, 7), bar, rank);
      // One arrival on the other block's barrier for the whole copy,
      // announcing all its bytes, before any of them can land there.
      NVVM::MBarrierArriveExpectTxOp::create(
          lb, loc, Type(), remoteBar, i32(lb, runs->runBytes * runs->count),
          NVVM::MemScopeKind::CLUSTER, /*relaxed=*/false, Value());
      Value barAddr =
          LLVM::PtrToIntOp::create(lb, loc, lb.getI32Type(), remoteBar);
      Value srcBase = base(lb, *src), dstBase = base(lb, *dst);
      auto runAt = [&](OpBuilder &rb, Value k) {
        // k's digits over the outer extents, innermost last.
        Value s = srcBase, d = dstBase, rem = k;
        for (int64_t t = (int64_t)runs->outer.size() - 1; t >= 0; --t) {
          Value digit = rem;
          if (t > 0) {
            digit = arith::RemUIOp::create(rb, loc, rem,
                                           cIdx(rb, loc, runs->outer[t]));
            rem = arith::DivUIOp::create(rb, loc, rem,
                                         cIdx(rb, loc, runs->outer[t]));
          }
          s = arith::AddIOp::create(
              rb, loc, s,
              arith::MulIOp::create(rb, loc, digit,
                                    cIdx(rb, loc, runs->srcStrides[t])));
          d = arith::AddIOp::create(
              rb, loc, d,
              arith::MulIOp::create(rb, loc, digit,
                                    cIdx(rb, loc, runs->dstStrides[t])));
        }
        auto bytes = [&](Value elems) {
          return arith::MulIOp::create(rb, loc, elems, cIdx(rb, loc, eb));
        };
        Value srcPtr = sharedPtr(rb, src->buf.memref, bytes(s));
        Value srcAddr =
            LLVM::PtrToIntOp::create(rb, loc, rb.getI32Type(), srcPtr);
        Value dstAddr = clusterAddress(
            rb, loc, sharedPtr(rb, dst->buf.memref, bytes(d)), rank);
        LLVM::InlineAsmOp::create(
            rb, loc, TypeRange{},
            ValueRange{dstAddr, srcAddr, i32(rb, runs->runBytes), barAddr},
            "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::"
            "bytes [$0], [$1], $2, [$3];",
            "r,r,r,r,~{memory}", /*has_side_effects=*/true,
            /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
            LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
            ArrayAttr());
      };
      if (runs->count <= 8) {
        for (int64_t k = 0; k < runs->count; ++k)
          runAt(lb, cIdx(lb, loc, k));
        return;
      }
      auto loop = scf::ForOp::create(lb, loc, cIdx(lb, loc, 0),
                                     cIdx(lb, loc, runs->count),
                                     cIdx(lb, loc, 1));
      OpBuilder inner = OpBuilder::atBlockTerminator(loop.getBody());
      runAt(inner, loop.getInductionVar());
    });
    return success();
  }
  // Element by element: each thread stores its vectors into the other
  // block's buffer at the place they have in this block's.
  copyMemoryToMemory(
      b, *src, *dst, /*async=*/false,
      [&](OpBuilder &gb, ArrayRef<Value> idx, Value v) {
        Value elems = sharedOffset(gb, dst->buf, idx);
        Value ptr = sharedPtr(
            gb, dst->buf.memref,
            arith::MulIOp::create(gb, loc, elems, cIdx(gb, loc, eb)));
        Value remote = NVVM::MapaOp::create(
            gb, loc, LLVM::LLVMPointerType::get(ctx, 7), ptr, rank);
        auto type = cast<VectorType>(v.getType());
        if (type.getNumElements() == 1)
          v = vector::ExtractOp::create(gb, loc, v, ArrayRef<int64_t>{0});
        LLVM::StoreOp::create(gb, loc, v, remote,
                              type.getNumElements() * eb);
      });
  if (bar) {
    // Every thread's stores, then one arrival releasing them to the
    // other block.
    barrier(b);
    guarded(b, loc, isRoleLeader(b), [&](OpBuilder &gb) {
      target.emitRemoteArrive(gb, loc, bar, rank);
    });
  }
  return success();
}

/// The producer warpgroup(s) run one region, the kernel's threads the other;
/// the producer hands its registers to the consumers.
LogicalResult NVVMKernelLowering::lowerWarpSpecialize(WarpSpecializeOp op,
                                                      OpBuilder &b,
                                                      IRMapping &map,
                                                      Context &ctx) {
  int64_t total = numThreads + producerThreads;
  // Registers per thread: the cap at entry is 64K / total in steps of 8
  // (ptxas allocates that much when setmaxnreg is used); the producer keeps
  // `producerRegs` (24 by default: TMA issue needs few, and the consumers of
  // a 384-thread block get 240 instead of the 232 that 40 leaves), and
  // setmaxnreg.inc can only hand the consumers what the block's own
  // producers released: asking for more blocks forever (640 threads: 96 at
  // entry, 112 asked, 104 possible with 40). At most 240 each.
  int64_t entryRegs = (65536 / total) / 8 * 8;
  int64_t consumerRegs = std::min<int64_t>(
      240, (entryRegs +
            (entryRegs - producerRegs) * producerThreads / numThreads) /
               8 * 8);
  // T.no_set_max_nreg() on the kernel: the roles keep the entry split.
  bool adjust = total > 128 && consumerRegs > entryRegs &&
                !kernel->hasAttr("tile.no_set_max_nreg");
  Value isProducer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                           tid, cIdx(b, loc, numThreads));
  auto ifOp = scf::IfOp::create(b, loc, isProducer, /*withElseRegion=*/true);
  LogicalResult status = success();
  int64_t savedBase = roleBase, savedThreads = roleThreads,
          savedBarrier = roleBarrier;
  {
    OpBuilder pb = OpBuilder::atBlockTerminator(ifOp.thenBlock());
    if (adjust)
      NVVM::SetMaxRegisterOp::create(pb, loc, producerRegs,
                                     NVVM::SetMaxRegisterAction::decrease);
    roleBase = numThreads;
    roleThreads = producerThreads;
    roleBarrier = 2;
    if (failed(lowerBlock(op.getProducer().front(), pb, map, ctx)))
      status = failure();
  }
  if (succeeded(status)) {
    OpBuilder cb = OpBuilder::atBlockTerminator(ifOp.elseBlock());
    if (adjust)
      NVVM::SetMaxRegisterOp::create(cb, loc, consumerRegs,
                                     NVVM::SetMaxRegisterAction::increase);
    roleBase = 0;
    roleThreads = numThreads;
    roleBarrier = 1;
    // Warpgroups taking turns at gemms (takesTurns): the last one lets the
    // first go first, and the first takes the last one's final hand-over at
    // the end, so that every arrival on a turn barrier is waited for.
    // A turn spanning two gemms needs both to take turns; otherwise
    // neither does (an unmatched arrival or wait would hang).
    bool spansOk = true;
    op.getConsumer().walk([&](GemmOp g) {
      if ((g->hasAttr("pingpong_begin") || g->hasAttr("pingpong_end")) &&
          !takesTurns(g))
        spansOk = false;
    });
    if (!spansOk)
      op.getConsumer().walk([&](GemmOp g) {
        g->removeAttr("pingpong_begin");
        g->removeAttr("pingpong_end");
      });
    bool turns = false;
    op.getConsumer().walk([&](GemmOp g) { turns |= takesTurns(g); });
    Value wg, isFirst;
    auto i32 = [&](int64_t v) {
      return arith::ConstantIntOp::create(cb, loc, cb.getI32Type(), v);
    };
    if (turns) {
      wg = arith::DivUIOp::create(cb, loc, tid, cIdx(cb, loc, 128));
      isFirst = arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::eq, wg,
                                      cIdx(cb, loc, 0));
      Value isLast =
          arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::eq, wg,
                                cIdx(cb, loc, numThreads / 128 - 1));
      guarded(cb, loc, isLast, [&](OpBuilder &gb) {
        NVVM::BarrierArriveOp::create(gb, loc, i32(kTurnBarrier), i32(256));
      });
    }
    if (failed(lowerBlock(op.getConsumer().front(), cb, map, ctx)))
      status = failure();
    // Shared memory must outlive the TMA stores reading it (the kernel's
    // epilogue waits for reduce-adds).
    if (!tmaStores.empty())
      guarded(cb, loc, isRoleLeader(cb), [&](OpBuilder &gb) {
        NVVM::CpAsyncBulkWaitGroupOp::create(gb, loc, gb.getI32IntegerAttr(0),
                                             UnitAttr());
      });
    if (turns)
      guarded(cb, loc, isFirst, [&](OpBuilder &gb) {
        NVVM::BarrierOp::create(gb, loc, Type(), i32(kTurnBarrier), i32(256),
                                NVVM::BarrierReductionAttr(), Value());
      });
  }
  roleBase = savedBase;
  roleThreads = savedThreads;
  roleBarrier = savedBarrier;
  return status;
}
