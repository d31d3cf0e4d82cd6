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
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SmallSet.h"

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
  table.add<AllocSharedOp, AllocFragmentOp, AllocLocalOp, AllocVarOp,
            AllocBarrierOp, UseSwizzleOp, AnnotateLayoutOp>(
      [](KernelLowering &, Operation *, OpBuilder &, IRMapping &, Context &) {
        return success();
      },
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
  barrier(b);
  if (settles)
    bulkReadsSettled = true;
  return success();
}

//===----------------------------------------------------------------------===//
// Roles
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::assignRoleBarriers() {
  llvm::SmallSet<int64_t, 16> taken;
  kernel.walk([&](NamedBarrierOp op) { taken.insert(op.getId()); });
  // Barriers named at run time: their ids, where known.
  PartialBarrierOp unknown;
  kernel.walk([&](PartialBarrierOp op) {
    std::optional<int64_t> id = getConstantIntValue(op.getId());
    if (id)
      taken.insert(*id);
    else
      unknown = op;
  });
  if (unknown && !kernel.getBody().getOps<RoleOp>().empty()) {
    InFlightDiagnostic diag = unknown.emitOpError(
        "names its barrier at run time, in a kernel whose roles need named "
        "barriers of their own: the ids could collide; name it with a "
        "constant");
    return diag;
  }
  // One barrier per range of threads (roles of one range are the same
  // threads at different points of the program).
  int64_t next = 1;
  DenseMap<std::pair<int64_t, int64_t>, int64_t> byRange;
  WalkResult result = kernel.walk([&](RoleOp role) -> WalkResult {
    auto [it, fresh] = byRange.try_emplace({role.getBegin(), role.getEnd()}, 0);
    if (fresh) {
      while (next <= 15 && taken.contains(next))
        ++next;
      if (next > 15)
        return role.emitOpError("needs a named barrier, but the 15 of a "
                                "block are taken (by the roles and by "
                                "T.sync_threads(id, count))");
      it->second = next++;
    }
    roleBarriers[role] = it->second;
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// Roles that are not whole warps run only scalar code, barrier operations
/// and TMA copies (one thread issues them); the register budgets that roles
/// set must fit in the register file, each change in its direction from the
/// budget at entry.
LogicalResult KernelLowering::checkRoles() {
  if (!target.hasNamedBarriers()) {
    // A role of per-thread code only (scalar code, per-thread stores,
    // shuffles, atomics, an early exit: `if tx < n: ...`) never waits on a
    // barrier of its own; a role running tile operations does.
    WalkResult roles = kernel.walk([&](RoleOp role) {
      WalkResult needs = role.getBody().walk([&](Operation *op) {
        if (!isa<TileDialect>(op->getDialect()) || isPerThreadOp(op) ||
            isa<YieldOp, RoleOp>(op))
          return WalkResult::advance();
        return WalkResult::interrupt();
      });
      if (!needs.wasInterrupted())
        return WalkResult::advance();
      role.emitOpError("gives threads a role of their own, which needs "
                       "barriers over part of the block (named barriers); ")
          << target.getPlatformName() << " targets do not have them here";
      return WalkResult::interrupt();
    });
    if (roles.wasInterrupted())
      return failure();
  }
  int64_t total = kernel.getNumThreads();
  int64_t entry = std::min<int64_t>(256, (65536 / total) / 8 * 8);
  // Each thread's budget: the one its roles set (the last in program order;
  // roles of one range are the same threads at several points).
  SmallVector<int64_t> perThread(total, entry);
  SmallVector<SetMaxNRegOp> sets;
  WalkResult result = kernel.walk([&](RoleOp role) -> WalkResult {
    int64_t n = role.getNumThreads();
    WalkResult inner = role.getBody().walk([&](Operation *op) -> WalkResult {
      if (n % warpSize == 0 || !isa<TileDialect>(op->getDialect()))
        return WalkResult::advance();
      auto copy = dyn_cast<CopyOp>(op);
      if ((copy && copy.getBarrier()) || isPerThreadOp(op) ||
          isa<YieldOp, BarrierWaitOp, BarrierArriveOp, ThreadIdOp, FenceProxyAsyncOp,
              CpAsyncOp, AsyncCommitOp, AsyncWaitOp, PartialBarrierOp>(op))
        return WalkResult::advance();
      op->emitOpError("runs in a role of ")
          << n << " threads; tile operations need whole warps (a multiple "
          << "of " << warpSize << " threads)";
      return WalkResult::interrupt();
    });
    if (inner.wasInterrupted())
      return WalkResult::interrupt();
    role.getBody().walk([&](SetMaxNRegOp set) {
      sets.push_back(set);
      for (int64_t t = role.getBegin(); t < role.getEnd(); ++t)
        perThread[t] = set.getCount();
    });
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  if (failed(checkBarriers()))
    return failure();
  if (sets.empty())
    return success();
  setsRegisters = true;
  int64_t budget = 0;
  for (int64_t r : perThread)
    budget += r;
  for (SetMaxNRegOp set : sets) {
    if (set.getIncrease() && set.getCount() < entry)
      return set.emitOpError("raises the register budget to ")
             << set.getCount() << ", below the " << entry
             << " each of the block's " << total
             << " threads has at entry (use a decrease)";
    if (!set.getIncrease() && set.getCount() > entry)
      return set.emitOpError("lowers the register budget to ")
             << set.getCount() << ", above the " << entry
             << " each of the block's " << total
             << " threads has at entry (use an increase)";
  }
  if (budget > 65536) {
    InFlightDiagnostic diag =
        kernel.emitOpError("its roles' register budgets (T.set_max_nreg) "
                           "add up to ")
        << budget << " registers, more than the 65536 of the register file";
    for (SetMaxNRegOp set : sets) {
      auto role = set->getParentOfType<RoleOp>();
      diag.attachNote(set.getLoc())
          << set.getCount() << " registers for each thread of the role of ["
          << role.getBegin() << ", " << role.getEnd() << ")";
    }
    return diag;
  }
  return success();
}

/// Every barrier a thread waits on gets arrivals; per-thread arrivals
/// (T.barrier_arrive) come from whole roles (or the whole block), so a
/// barrier's arrival count must be a sum of the sizes of the roles that
/// arrive on it.
LogicalResult KernelLowering::checkBarriers() {
  WalkResult result = kernel.walk([&](AllocBarrierOp alloc) -> WalkResult {
    // Waits that could block: a wait on parity 1 of a barrier still in its
    // first phase returns at once (how a producer passes its first round of
    // `empty` slots), so a barrier nothing arrives on is fine as long as
    // every wait on it is on parity 1 -- as in a pipelined loop of one
    // iteration once canonicalize has folded the loop and dropped the
    // consumer's guarded release.
    SmallVector<BarrierWaitOp> waits;
    SmallVector<int64_t> sizes;
    bool arrives = false, perWarp = false;
    for (Operation *user : alloc->getUsers()) {
      if (auto wait = dyn_cast<BarrierWaitOp>(user))
        if (getConstantIntValue(wait.getParity()) != std::optional<int64_t>(1))
          waits.push_back(wait);
      // Arrivals from the blocks of a cluster: their count is the program's.
      if (isa<BarrierArriveRankOp>(user))
        arrives = perWarp = true;
      if (auto arrive = dyn_cast<BarrierArriveOp>(user)) {
        arrives = true;
        if (!arrive.getPerThread())
          perWarp = true;
        else if (!llvm::is_contained(sizes, threadsOf(arrive)))
          sizes.push_back(threadsOf(arrive));
      }
    }
    if (!waits.empty() && !arrives) {
      InFlightDiagnostic diag = waits.front().emitOpError(
          "waits on a barrier that nothing arrives on (a T.tma_copy only "
          "announces bytes; the threads must also T.barrier_arrive): it "
          "would wait forever");
      diag.attachNote(alloc.getLoc()) << "the barrier is allocated here";
      return WalkResult::interrupt();
    }
    if (perWarp || sizes.empty())
      return WalkResult::advance();
    for (int64_t count : alloc.getArrivals()) {
      // Sums of the arriving roles' sizes (each may arrive several times).
      llvm::BitVector reachable(count + 1);
      reachable.set(0);
      for (int64_t v = 1; v <= count; ++v)
        for (int64_t s : sizes)
          if (s <= v && reachable.test(v - s))
            reachable.set(v);
      if (reachable.test(count))
        continue;
      std::string list;
      llvm::raw_string_ostream os(list);
      llvm::interleaveComma(sizes, os);
      alloc.emitOpError("expects ")
          << count << " arrivals per phase, but the threads that arrive on it "
          << "(T.barrier_arrive: every thread of its role) come in groups of "
          << list << ", which cannot add up to " << count;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

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
    if (!target.hasClusters())
      return kernel.emitOpError("runs in thread block clusters "
                                "(cluster_dims), which ")
             << target.getPlatformName() << " target "
             << target.getChipInfo().name
             << " does not have (NVIDIA sm_90 and newer)";
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
  if (failed(assignRoleBarriers()))
    return failure();
  // The target's checks (what the chip can do) come before the roles'.
  variance = std::make_unique<ThreadVariance>(kernel);
  if (failed(target.prepareKernel(*this)) || failed(checkRoles()) ||
      failed(outline()))
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
