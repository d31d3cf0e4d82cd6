//===- KernelLowering.cpp - lower one tile.kernel to a GPU kernel
//-----------===//
//
// Part of tilelang-mlir.
//
// The driver: outlines the kernel, re-emits its body op by op (each tile op
// handed to the file of its family, vendor ops to the target), lowers math,
// and replaces the kernel by a gpu.launch_func in the host function. See
// KernelLowering.h.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "dialects/Tile/Utils/BufferUtils.h"
#include "dialects/Tile/Utils/ThreadOpUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::tile;

GPUTargetInfo::~GPUTargetInfo() = default;

//===----------------------------------------------------------------------===//
// The lowering clone
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::lowerBlock(Block &src, OpBuilder &b,
                                         IRMapping &map, Context &ctx) {
  for (Operation &op : src.without_terminator())
    if (failed(lowerOp(&op, b, map, ctx)))
      return failure();
  return success();
}

LogicalResult KernelLowering::cloneWithRegions(Operation *op, OpBuilder &b,
                                               IRMapping &map, Context &ctx) {
  Operation *clone = b.cloneWithoutRegions(*op, map);
  // A loop body sees the thread index through the target's
  // loopThreadIndex: what its ops derive from it stays in the loop.
  bool loop = isa<LoopLikeOpInterface>(op);
  Value savedTid = tid;
  for (auto [src, dst] : llvm::zip(op->getRegions(), clone->getRegions())) {
    for (Block &block : src) {
      Block *nb = new Block();
      dst.push_back(nb);
      for (BlockArgument arg : block.getArguments())
        map.map(arg, nb->addArgument(arg.getType(), arg.getLoc()));
    }
    for (auto [sb, db] : llvm::zip(src, dst)) {
      // A nested block starts, and its op ends, with nothing settled: a
      // barrier in one branch or iteration does not cover the others.
      bulkReadsSettled = false;
      OpBuilder inner = OpBuilder::atBlockEnd(&db);
      if (loop && tid)
        tid = target.loopThreadIndex(inner, op->getLoc(), savedTid);
      for (Operation &nested : sb)
        if (failed(lowerOp(&nested, inner, map, ctx))) {
          tid = savedTid;
          return failure();
        }
    }
  }
  tid = savedTid;
  if (op->getNumRegions())
    bulkReadsSettled = false;
  for (auto [o, n] : llvm::zip(op->getResults(), clone->getResults()))
    map.map(o, n);
  return success();
}

/// Whether reduce-adds may be reading their source tiles when `op` runs:
/// the kernel has some, and one was lowered before `op` or `op` is in a loop
/// (the previous iteration's). Before the first reduce-add outside any loop
/// nothing can be in flight.
bool KernelLowering::bulkReadsMayBeInFlight(Operation *op) const {
  return !bulkReadSources.empty() &&
         (bulkReadsIssued || op->getParentOfType<LoopLikeOpInterface>());
}

/// Whether `op` (a whole tile op, or a T.Parallel nest with its stores)
/// writes a shared allocation of bulkReadSources. Loops and branches are
/// not looked into: their ops are checked as they are lowered.
bool KernelLowering::writesBulkReadSource(Operation *op) const {
  if (!bulkReadsMayBeInFlight(op))
    return false;
  auto written = [](Operation *o) -> Value {
    if (auto c = dyn_cast<CopyOp>(o))
      return c.getDst();
    if (auto f = dyn_cast<FillOp>(o))
      return f.getDst();
    if (auto g = dyn_cast<GemmOp>(o))
      return g.getC();
    if (auto a = dyn_cast<AtomicAddOp>(o))
      return a.getDst();
    if (auto s = dyn_cast<memref::StoreOp>(o))
      return s.getMemRef();
    return {};
  };
  auto hit = [&](Operation *o) {
    Value v = written(o);
    AllocSharedOp alloc = v ? sharedAllocOf(v) : AllocSharedOp();
    return alloc && bulkReadSources.contains(alloc.getResult());
  };
  if (!isa<ParallelOp>(op))
    return hit(op);
  return op->walk([&](Operation *inner) {
             return hit(inner) ? WalkResult::interrupt() : WalkResult::advance();
           })
      .wasInterrupted();
}

LogicalResult KernelLowering::lowerOp(Operation *op, OpBuilder &b,
                                      IRMapping &map, Context &ctx) {
  loc = op->getLoc();
  // Bytes used by an earlier buffer start serving this op's buffer.
  if (drainBefore.contains(op)) {
    target.emitAsyncDrain(*this, b);
    barrier(b);
  }
  // A tile that TMA reduce-adds may still be reading is written over only
  // after they have read it (the reduce-add does not wait itself).
  if (!ctx.inParallel() && !bulkReadsSettled && writesBulkReadSource(op)) {
    target.emitBulkReadWait(*this, b);
    bulkReadsSettled = true;
  }
  const OpLowering *entry = lowerings->lookup(op);
  // The ops of one thread (shuffles, votes, element atomics, a scalar
  // atomic add) run where the thread runs: in each instance of a parallel
  // body too, as TileLang's
  // `for i, j in T.Parallel(..): T.atomic_add(C[.., ..], frag[i, j])`.
  // Other tile ops run there only where their entry says so.
  if (ctx.inParallel() && isa<TileDialect>(op->getDialect()) &&
      !isPerThreadOp(op) &&
      !(entry && entry->inParallel == InParallel::lowered))
    return op->emitError("tile operations cannot be nested in T.Parallel on "
                         "GPU targets");
  // An op staging through scratch takes the next scratch region, so that
  // it does not write where the previous one may still read.
  if (scratchSlots > 1 && scratchUsers.contains(op))
    scratchOffset =
        scratchBase + (scratchTurn++ % scratchSlots) * scratchSlotBytes;
  if (entry)
    return entry->fn(*this, op, b, map, ctx);
  if (isa<TileDialect>(op->getDialect()))
    return op->emitOpError("has no lowering for ")
           << target.getPlatformName() << " targets";
  if (op->getNumRegions())
    return cloneWithRegions(op, b, map, ctx);
  b.clone(*op, map);
  return success();
}

/// The global buffer of a tile.make_tensor: its memref, made from the
/// address and sizes as the kernel sees them.
void KernelLowering::tensorAtAddress(MakeTensorOp op, OpBuilder &b,
                                     IRMapping &map) {
  SmallVector<Value> sizes;
  for (Value s : op.getSizes())
    sizes.push_back(map.lookupOrDefault(s));
  MemRefType type = op.getResult().getType();
  Value memref = memrefAtAddress(b, op.getLoc(),
                                 type, map.lookupOrDefault(op.getAddress()),
                                 sizes);
  buffers[op.getResult()] = Buffer::global(memref, type);
}

//===----------------------------------------------------------------------===//
// The block's own ops
//===----------------------------------------------------------------------===//

/// Allocations (placed by the set-up), layout annotations, tensors at an
/// address, roles, the thread index, the block barrier and the groups of
/// asynchronous copies.
void mlir::tile::registerKernelLowerings(LoweringTable &table) {
  // Placed or read by the set-up (planSharedMemory, allocateBuffers) and by
  // bufferOf: nothing left to emit.
  table.addNothing<AllocSharedOp, AllocFragmentOp, AllocLocalOp, AllocVarOp,
                   AllocBarrierOp, UseSwizzleOp, AnnotateLayoutOp>(
      InParallel::lowered);
  table.add<MakeTensorOp>(
      [](KernelLowering &kl, MakeTensorOp op, OpBuilder &b, IRMapping &map,
         Context &) {
        kl.tensorAtAddress(op, b, map);
        return success();
      },
      InParallel::lowered);
  table.add<RoleOp>([](KernelLowering &kl, RoleOp op, OpBuilder &b,
                       IRMapping &map, Context &ctx) {
    return kl.lowerRole(op, b, map, ctx);
  });
  table.add<ThreadIdOp>([](KernelLowering &kl, ThreadIdOp op, OpBuilder &,
                           IRMapping &map, Context &) {
    map.map(op.getResult(), kl.blockTid);
    return success();
  });
  table.add<BarrierOp>([](KernelLowering &kl, BarrierOp op, OpBuilder &b,
                          IRMapping &, Context &ctx) {
    return kl.lowerBarrier(op, b, ctx);
  });
  table.add<AsyncCommitOp>([](KernelLowering &kl, AsyncCommitOp, OpBuilder &b,
                              IRMapping &, Context &) {
    kl.target.emitAsyncCommit(b, kl.loc);
    return success();
  });
  table.add<AsyncWaitOp>([](KernelLowering &kl, AsyncWaitOp wait, OpBuilder &b,
                            IRMapping &, Context &) {
    if (!kl.target.hasAsyncCopy()) // synchronous copies: nothing to wait for
      return success();
    kl.target.emitAsyncWait(b, kl.loc, wait.getPending());
    if (kl.usesAsyncProxy)
      kl.target.emitAsyncProxyFence(
          b, kl.loc); // cp.async writes through the generic proxy
    return success();
  });
}

/// A block barrier (T.sync_threads()).
LogicalResult KernelLowering::lowerBarrier(BarrierOp op, OpBuilder &b,
                                           Context &ctx) {
  // Shared memory written by ordinary stores and read next by wgmma (the
  // async proxy) needs a proxy fence in the writers before the barrier.
  if (usesAsyncProxy)
    target.emitAsyncProxyFence(b, loc);
  // Where reduce-adds may be reading their source tiles, the issuer waits
  // for them before the barrier, so that a write to a source tile later
  // in this block needs no barrier of its own (in the attention
  // backward's loop, the barrier before the dq gemm serves the next dq
  // tile's stores).
  bool settles = !ctx.inParallel() && bulkReadsMayBeInFlight(op);
  if (settles)
    target.emitBulkReadWait(*this, b, /*withBarrier=*/false);
  // The program's barrier of the whole block inside a role: each role
  // reaches its own (__syncthreads() in TileLang's branches).
  if (op.getBlock() && roleBarrier)
    target.emitDivergentBlockBarrier(b, loc, kernel.getNumThreads());
  else
    barrier(b);
  if (settles)
    bulkReadsSettled = true;
  return success();
}

//===----------------------------------------------------------------------===//
// Roles
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::lowerRole(RoleOp op, OpBuilder &b, IRMapping &map,
                                        Context &ctx) {
  int64_t begin = op.getBegin(), end = op.getEnd();
  Value cond;
  if (begin > 0)
    cond = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, blockTid,
                                 cIdx(b, loc, begin));
  if (end < kernel.getNumThreads())
    cond = andOf(b, loc, cond,
                 arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       blockTid, cIdx(b, loc, end)));
  OpBuilder rb = b;
  if (cond) {
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
    rb = OpBuilder::atBlockTerminator(ifOp.thenBlock());
  }
  Value savedTid = tid;
  int64_t savedThreads = numThreads, savedBase = roleBase,
          savedRoleThreads = roleThreads, savedBarrier = roleBarrier;
  tid = begin ? arith::SubIOp::create(rb, loc, blockTid, cIdx(rb, loc, begin))
                    .getResult()
              : blockTid;
  numThreads = end - begin;
  roleBase = 0;
  roleThreads = numThreads;
  roleBarrier = roleBarriers.lookup(op);
  LogicalResult status = lowerBlock(op.getBody().front(), rb, map, ctx);
  tid = savedTid;
  numThreads = savedThreads;
  roleBase = savedBase;
  roleThreads = savedRoleThreads;
  roleBarrier = savedBarrier;
  return status;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::run() {
  kernel.walk([&](WarpSpecializeOp ws) {
    producerThreads = ws.getProducerThreads();
    if (std::optional<ArrayRef<int64_t>> c = ws.getCluster())
      clusterDims.assign(c->begin(), c->end());
  });
  // Clusters the program asked for (T.Kernel(..., cluster_dims=...)).
  if (auto c = kernel->getAttrOfType<DenseI64ArrayAttr>("tile.cluster")) {
    if (!clusterDims.empty() && ArrayRef<int64_t>(clusterDims) != c.asArrayRef())
      return kernel.emitOpError("runs in clusters of the program's shape, "
                                "which warp specialization chose otherwise");
    clusterDims.assign(c.asArrayRef().begin(), c.asArrayRef().end());
    if (!target.hasClusters()) {
      // A copy between the blocks of the cluster is named at its line.
      Operation *copy = nullptr;
      kernel.walk([&](Operation *op) {
        auto c = dyn_cast<CopyOp>(op);
        if (isa<ClusterCopyOp>(op) || (c && c.getMulticastMask())) {
          copy = op;
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (copy)
        return copy->emitOpError("(T.copy_cluster) copies between the blocks "
                                 "of a thread block cluster, which ")
               << target.getPlatformName() << " target "
               << target.getChipInfo().name
               << " does not have (NVIDIA sm_90 and newer)";
      return kernel.emitOpError("runs in thread block clusters "
                                "(cluster_dims), which ")
             << target.getPlatformName() << " target "
             << target.getChipInfo().name
             << " does not have (NVIDIA sm_90 and newer)";
    }
  }
  // Fences before barriers are needed from the start when any gemm reads
  // shared memory through the async proxy.
  kernel.walk([&](Operation *g) {
    if (isa<GemmOp, GemmSpOp>(g) && g->hasAttr("wgmma"))
      usesAsyncProxy = true;
    if (isa<CpAsyncOp>(g))
      cpAsyncCopies = true;
  });
  roleThreads = numThreads;
  FailureOr<RoleBarriers> plan = planRoleBarriers(kernel);
  if (failed(plan))
    return failure();
  roleBarriers = std::move(*plan);
  // The target's checks (what the chip can do) come before the roles'.
  variance = std::make_unique<ThreadVariance>(kernel);
  if (failed(target.prepareKernel(*this)) ||
      failed(verifyRoles(kernel, target)))
    return failure();
  // Roles that change their register budgets: the kernel declares a cap
  // at entry (annotateKernel).
  kernel.walk([&](SetMaxNRegOp set) {
    if (set->getParentOfType<RoleOp>())
      setsRegisters = true;
  });
  if (failed(outline()))
    return failure();
  Block &entry = gpuFunc.getBody().front();
  OpBuilder b = OpBuilder::atBlockEnd(&entry);
  if (failed(planSharedMemory(b)))
    return failure();
  setupBlockIndices(b);
  if (failed(allocateBuffers(b)))
    return failure();
  target.emitKernelPrologue(*this, b);
  // Values of the host function the kernel uses: clone their pure
  // definitions into the kernel.
  SetVector<Value> above;
  getUsedValuesDefinedAbove(kernel.getBody(), above);
  IRMapping map = outer;
  std::function<LogicalResult(Value)> bring = [&](Value v) -> LogicalResult {
    if (map.contains(v))
      return success();
    Operation *def = v.getDefiningOp();
    if (!def || !isMemoryEffectFree(def) || def->getNumRegions())
      return kernel.emitOpError("uses ")
             << v << ", which is computed outside the kernel by an op that "
             << "cannot be recomputed inside it";
    for (Value o : def->getOperands())
      if (failed(bring(o)))
        return failure();
    b.clone(*def, map);
    return success();
  };
  for (Value v : above) {
    if (isa<MemRefType>(v.getType()) && isa<BlockArgument>(v))
      continue; // global tensors: reached through buffers
    if (auto made = v.getDefiningOp<MakeTensorOp>()) {
      // A tensor at an address the host function computed: its address and
      // sizes come into the kernel, the tensor is made at its entry.
      for (Value o : made->getOperands())
        if (failed(bring(o)))
          return failure();
      tensorAtAddress(made, b, map);
      continue;
    }
    if (failed(bring(v)))
      return failure();
  }
  for (auto [arg, idx] :
       llvm::zip(kernel.getBody().front().getArguments(), blockIndices))
    map.map(arg, idx);
  Context ctx;
  if (failed(lowerBlock(kernel.getBody().front(), b, map, ctx)))
    return failure();
  target.emitKernelEpilogue(*this, b);
  gpu::ReturnOp::create(b, kernel.getLoc());
  if (failed(lowerMathToIntrinsics(gpuFunc, target)))
    return failure();
  target.finalizeKernel(gpuFunc);

  // The launch in the host function.
  OpBuilder hb(kernel);
  Location kl = kernel.getLoc();
  SmallVector<Value> grid(kernel.getGrid());
  while (grid.size() < 3)
    grid.push_back(cIdx(hb, kl, 1));
  SmallVector<int64_t> threads(kernel.getThreads());
  threads[0] += producerThreads;
  while (threads.size() < 3)
    threads.push_back(1);
  gpu::KernelDim3 gridDim{grid[0], grid[1], grid[2]};
  gpu::KernelDim3 blockDim{cIdx(hb, kl, threads[0]), cIdx(hb, kl, threads[1]),
                           cIdx(hb, kl, threads[2])};
  Value smemSize =
      arith::ConstantIntOp::create(hb, kl, hb.getI32Type(), sharedBytes);
  // Tensor maps are made by the runtime: placeholders here.
  SmallVector<Value> args;
  for (size_t i = 0; i < tensorMaps.size(); ++i)
    args.push_back(LLVM::ZeroOp::create(
        hb, kl, LLVM::LLVMPointerType::get(hb.getContext())));
  llvm::append_range(args, func.getArguments());
  auto launch = gpu::LaunchFuncOp::create(hb, kl, gpuFunc, gridDim, blockDim,
                                          smemSize, args);
  if (!tensorMaps.empty()) {
    SmallVector<Attribute> maps;
    for (const TensorMap &m : tensorMaps)
      maps.push_back(hb.getDictionaryAttr(
          {hb.getNamedAttr("param", hb.getI64IntegerAttr(m.param)),
           hb.getNamedAttr("box", hb.getDenseI64ArrayAttr(m.box)),
           hb.getNamedAttr("swizzle", hb.getI64IntegerAttr(m.swizzle))}));
    launch->setAttr("tile.tensormaps", hb.getArrayAttr(maps));
  }
  if (Attribute persistent = kernel->getAttr("tile.persistent"))
    launch->setAttr("tile.persistent", persistent);
  // How the runtime launches it: cooperatively (a grid barrier), with
  // programmatic stream serialization (it waits for the kernels before it
  // itself), with an L2 access policy window (T.annotate_l2_hit_ratio).
  SmallVector<NamedAttribute> how;
  if (kernel.walk([](GridSyncOp) { return WalkResult::interrupt(); })
          .wasInterrupted())
    how.push_back(hb.getNamedAttr("cooperative", hb.getUnitAttr()));
  if (kernel.walk([](PdlWaitOp) { return WalkResult::interrupt(); })
          .wasInterrupted())
    how.push_back(hb.getNamedAttr("pdl", hb.getUnitAttr()));
  if (Attribute l2 = kernel->getAttr("tile.l2_hit_ratio"))
    how.push_back(hb.getNamedAttr("l2_hit_ratio", l2));
  if (!how.empty())
    launch->setAttr("tile.launch", hb.getDictionaryAttr(how));
  kernel.erase();
  return success();
}
