//===- ThreadOps.cpp - lanes, warps and atomics of one thread -------------===//
//
// Part of tilelang-mlir.
//
// The ops of TileThreadOps.td: warp shuffles (any 8- to 64-bit value moved
// as 32-bit words), votes, matches, warp reductions (xor-shuffle steps, as
// TileLang's template), block votes, election, and atomics at element level
// (LLVM atomics on the element's address; float max/min as a
// compare-and-swap loop; memory orders as fences around a relaxed update,
// which every target honours).
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "dialects/Tile/Utils/ThreadOpUtils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tile;

static Value i32Const(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
}

/// The bits of a scalar as an integer of its width.
static Value toBits(OpBuilder &b, Location loc, Value v) {
  Type t = v.getType();
  if (isa<IntegerType>(t))
    return v;
  return arith::BitcastOp::create(
      b, loc, b.getIntegerType(t.getIntOrFloatBitWidth()), v);
}

static Value fromBits(OpBuilder &b, Location loc, Value bits, Type t) {
  if (bits.getType() == t)
    return bits;
  return arith::BitcastOp::create(b, loc, t, bits);
}

/// Shuffles a value of 8 to 64 bits as one or two 32-bit words.
static Value shuffleAny(const GPUTargetInfo &target, OpBuilder &b, Location loc,
                        ShuffleKind kind, Value v, Value offset, Value width,
                        Value mask) {
  Type type = v.getType();
  unsigned bits = type.getIntOrFloatBitWidth();
  Type i32 = b.getI32Type();
  Value x = toBits(b, loc, v);
  if (bits <= 32) {
    Value w = bits < 32 ? arith::ExtUIOp::create(b, loc, i32, x).getResult() : x;
    Value r = target.emitShuffle(b, loc, kind, w, offset, width, mask);
    if (bits < 32)
      r = arith::TruncIOp::create(b, loc, b.getIntegerType(bits), r);
    return fromBits(b, loc, r, type);
  }
  Type i64 = b.getI64Type();
  Value lo = arith::TruncIOp::create(b, loc, i32, x);
  Value hi = arith::TruncIOp::create(
      b, loc, i32,
      arith::ShRUIOp::create(b, loc, x,
                             arith::ConstantIntOp::create(b, loc, i64, 32)));
  lo = target.emitShuffle(b, loc, kind, lo, offset, width, mask);
  hi = target.emitShuffle(b, loc, kind, hi, offset, width, mask);
  Value r = arith::OrIOp::create(
      b, loc, arith::ExtUIOp::create(b, loc, i64, lo),
      arith::ShLIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i64, hi),
                            arith::ConstantIntOp::create(b, loc, i64, 32)));
  return fromBits(b, loc, r, type);
}

/// The address of element `idx` of a global or shared buffer.
static Value elementPtr(KernelLowering &kl, OpBuilder &b, const Buffer &buf,
                        ArrayRef<Value> idx) {
  if (buf.kind == BufferKind::Global)
    return kl.globalElementPtr(b, buf, idx);
  Value bytes = arith::MulIOp::create(
      b, kl.loc, kl.sharedOffset(b, buf, idx),
      cIdx(b, kl.loc, elementBytes(buf.elementType)));
  return kl.sharedPtr(b, buf.memref, bytes);
}

/// Fences that give a relaxed update the ordering `order` (C++'s mapping:
/// a releasing fence before, an acquiring one after).
static void fenceBefore(OpBuilder &b, Location loc, StringRef scope,
                        std::optional<MemoryOrder> order) {
  if (!order)
    return;
  if (*order == MemoryOrder::seq_cst)
    LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::seq_cst, scope);
  else if (*order == MemoryOrder::release || *order == MemoryOrder::acq_rel)
    LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::release, scope);
}

static void fenceAfter(OpBuilder &b, Location loc, StringRef scope,
                       std::optional<MemoryOrder> order) {
  if (!order)
    return;
  if (*order == MemoryOrder::consume || *order == MemoryOrder::acquire ||
      *order == MemoryOrder::acq_rel || *order == MemoryOrder::seq_cst)
    LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::acquire, scope);
}

/// The update `kind` of the element at `ptr` by `value`; returns the
/// element as it was.
static Value atomicUpdate(OpBuilder &b, Location loc, StringRef scope,
                          AtomicKind kind, Value ptr, Value value,
                          bool isUnsigned) {
  Type type = value.getType();
  bool fp = isa<FloatType>(type);
  auto rmw = [&](LLVM::AtomicBinOp op) -> Value {
    return LLVM::AtomicRMWOp::create(b, loc, op, ptr, value,
                                     LLVM::AtomicOrdering::monotonic, scope);
  };
  switch (kind) {
  case AtomicKind::add:
    return rmw(fp ? LLVM::AtomicBinOp::fadd : LLVM::AtomicBinOp::add);
  case AtomicKind::BitAnd:
    return rmw(LLVM::AtomicBinOp::_and);
  case AtomicKind::BitOr:
    return rmw(LLVM::AtomicBinOp::_or);
  case AtomicKind::BitXor:
    return rmw(LLVM::AtomicBinOp::_xor);
  case AtomicKind::exchange:
    return rmw(LLVM::AtomicBinOp::xchg);
  case AtomicKind::max:
  case AtomicKind::min:
    if (!fp)
      return rmw(kind == AtomicKind::max
                     ? (isUnsigned ? LLVM::AtomicBinOp::umax
                                   : LLVM::AtomicBinOp::max)
                     : (isUnsigned ? LLVM::AtomicBinOp::umin
                                   : LLVM::AtomicBinOp::min));
    break;
  }
  // Float max/min: replace the element only when `value` wins (a NaN never
  // does), by compare-and-swap on its bits.
  Type bitsType = b.getIntegerType(type.getIntOrFloatBitWidth());
  unsigned align = type.getIntOrFloatBitWidth() / 8;
  Value first = LLVM::LoadOp::create(b, loc, bitsType, ptr, align);
  auto loop = scf::WhileOp::create(
      b, loc, TypeRange{bitsType}, ValueRange{first},
      [&](OpBuilder &bb, Location l, ValueRange args) {
        Value old = fromBits(bb, l, args[0], type);
        Value next = toBits(
            bb, l, atomicCombine(bb, l, kind, old, value, isUnsigned));
        Value pair = LLVM::AtomicCmpXchgOp::create(
            bb, l, ptr, args[0], next, LLVM::AtomicOrdering::monotonic,
            LLVM::AtomicOrdering::monotonic, scope);
        Value seen = LLVM::ExtractValueOp::create(bb, l, pair,
                                                  ArrayRef<int64_t>{0});
        Value done = LLVM::ExtractValueOp::create(bb, l, pair,
                                                  ArrayRef<int64_t>{1});
        Value again = arith::XOrIOp::create(
            bb, l, done, arith::ConstantIntOp::create(bb, l, bb.getI1Type(), 1));
        scf::ConditionOp::create(bb, l, again, ValueRange{seen});
      },
      [&](OpBuilder &ab, Location l, ValueRange args) {
        scf::YieldOp::create(ab, l, args);
      });
  return fromBits(b, loc, loop.getResult(0), type);
}

/// Runs `body` (which returns a value of `type`) where `cond` holds,
/// giving zero elsewhere; `cond` null: always.
static Value guardedValue(OpBuilder &b, Location loc, Value cond, Type type,
                          function_ref<Value(OpBuilder &)> body) {
  if (!cond)
    return body(b);
  auto ifOp = scf::IfOp::create(
      b, loc, cond,
      [&](OpBuilder &tb, Location l) {
        scf::YieldOp::create(tb, l, ValueRange{body(tb)});
      },
      [&](OpBuilder &eb, Location l) {
        scf::YieldOp::create(
            eb, l,
            ValueRange{arith::ConstantOp::create(eb, l, type,
                                                 eb.getZeroAttr(type))});
      });
  return ifOp.getResult(0);
}

LogicalResult KernelLowering::lowerThreadOp(Operation *op, OpBuilder &b,
                                            IRMapping &map, Context &ctx) {
  if (failed(target.checkSupported(op)))
    return failure();
  auto in = [&](Value v) { return map.lookupOrDefault(v); };
  Value fullMask = i32Const(b, loc, -1);
  if (auto o = dyn_cast<WarpSizeOp>(op)) {
    map.map(o.getResult(), cIdx(b, loc, warpSize));
    return success();
  }
  if (auto o = dyn_cast<ShuffleOp>(op)) {
    map.map(o.getResult(),
            shuffleAny(target, b, loc, o.getKind(), in(o.getValue()),
                       in(o.getOffset()), in(o.getWidth()), in(o.getMask())));
    return success();
  }
  if (auto o = dyn_cast<WarpVoteOp>(op)) {
    Value r;
    if (o.getKind() == VoteKind::ballot)
      r = target.emitBallot(b, loc, in(o.getPredicate()), in(o.getMask()));
    else
      r = arith::ExtUIOp::create(
          b, loc, b.getI32Type(),
          target.emitVote(b, loc, o.getKind() == VoteKind::all,
                          in(o.getPredicate()), in(o.getMask())));
    map.map(o.getResult(), r);
    return success();
  }
  if (auto o = dyn_cast<WarpMatchOp>(op)) {
    map.map(o.getResult(),
            target.emitMatch(b, loc, o.getKind(),
                             toBits(b, loc, in(o.getValue())), in(o.getMask())));
    return success();
  }
  if (auto o = dyn_cast<ActiveMaskOp>(op)) {
    map.map(o.getResult(), target.emitActiveMask(b, loc));
    return success();
  }
  if (auto o = dyn_cast<WarpReduceOp>(op)) {
    Value v = in(o.getValue());
    Value width = i32Const(b, loc, warpSize);
    for (int64_t step = warpSize / 2; step >= 1; step /= 2)
      v = warpReduceCombine(
          b, loc, o.getKind(), v,
          shuffleAny(target, b, loc, ShuffleKind::Xor, v,
                     i32Const(b, loc, step), width, fullMask),
          o.getIsUnsigned());
    map.map(o.getResult(), v);
    return success();
  }
  if (auto o = dyn_cast<SyncWarpOp>(op)) {
    target.emitSyncWarp(b, loc, in(o.getMask()));
    return success();
  }
  if (auto o = dyn_cast<BlockVoteOp>(op)) {
    map.map(o.getResult(),
            target.emitBlockVote(b, loc, o.getKind(), in(o.getPredicate())));
    return success();
  }
  if (auto o = dyn_cast<ElectOp>(op)) {
    // One lane of each warp whose index is a multiple of the group's
    // warps (TileLang's tl_shuffle_elect); extent 0: of warp 0 only.
    Value warp = arith::DivUIOp::create(b, loc, blockTid, cIdx(b, loc, warpSize));
    auto extent = static_cast<int64_t>(o.getExtent());
    int64_t group = extent ? llvm::divideCeil(extent, warpSize) : 0;
    Value first =
        group == 1
            ? Value()
            : arith::CmpIOp::create(
                  b, loc, arith::CmpIPredicate::eq,
                  group ? arith::RemUIOp::create(b, loc, warp,
                                                 cIdx(b, loc, group))
                              .getResult()
                        : warp,
                  cIdx(b, loc, 0))
                  .getResult();
    map.map(o.getResult(), andOf(b, loc, target.emitElectOne(b, loc), first));
    return success();
  }
  if (auto o = dyn_cast<PartialBarrierOp>(op)) {
    target.emitPartialBarrier(b, loc, in(o.getId()),
                              o.getThreads() ? in(o.getThreads()) : Value(),
                              o.getArrive());
    return success();
  }
  if (isa<ThreadReturnOp>(op)) {
    target.emitThreadExit(b, loc);
    return success();
  }
  if (auto o = dyn_cast<ClusterBarrierOp>(op)) {
    target.emitClusterBarrier(b, loc, o.getStep());
    return success();
  }
  if (auto o = dyn_cast<ClusterRankOp>(op)) {
    map.map(o.getResult(), clusterDims.empty()
                               ? i32Const(b, loc, 0)
                               : target.emitClusterRank(b, loc));
    return success();
  }
  if (auto o = dyn_cast<BarrierArriveRankOp>(op)) {
    target.emitRemoteArrive(
        b, loc, barrierPtr(b, o.getBarriers(), in(o.getIndex()), map),
        in(o.getRank()));
    return success();
  }
  if (isa<PdlTriggerOp, PdlWaitOp>(op)) {
    target.emitPdl(b, loc, isa<PdlTriggerOp>(op));
    return success();
  }
  if (isa<GridSyncOp>(op)) {
    target.emitGridSync(*this, b);
    return success();
  }
  if (isa<AtomicRMWOp, AtomicLoadOp, AtomicStoreOp>(op))
    return lowerAtomic(op, b, map, ctx);
  if (auto call = dyn_cast<CallExternOp>(op))
    return lowerCallExtern(call, b, map);
  return op->emitOpError("is no per-thread op");
}

/// A call of a device function of the program's CUDA source: an external
/// function of the GPU module, which the CUDA backend links from NVRTC's
/// PTX. Buffers pass generic pointers to their elements (a thread's local
/// copy then lives in local memory, not registers); a result comes back
/// through a private slot passed first.
LogicalResult KernelLowering::lowerCallExtern(CallExternOp op, OpBuilder &b,
                                              IRMapping &map) {
  // The program's name of the function (the callee is its wrapper).
  auto named = op->getAttrOfType<StringAttr>("tile.function");
  StringRef function = named ? named.getValue() : op.getCallee();
  if (target.getPlatformName() != "CUDA")
    return op.emitOpError("calls `")
           << function << "` of the program's CUDA C++ source "
           << "(T.import_source): it runs on CUDA targets only, not on "
           << target.getPlatformName() << " targets";
  MLIRContext *ctx = b.getContext();
  auto generic = LLVM::LLVMPointerType::get(ctx);
  // The private address space of NVPTX (local memory).
  auto local = LLVM::LLVMPointerType::get(ctx, 5);
  auto toGeneric = [&](Value ptr) -> Value {
    if (cast<LLVM::LLVMPointerType>(ptr.getType()).getAddressSpace() == 0)
      return ptr;
    return LLVM::AddrSpaceCastOp::create(b, loc, generic, ptr);
  };
  // A private buffer's address as the callee's generic pointer: an alloca
  // in the generic address space (NVVM's private allocas) already has a
  // generic address; one in the private space is an offset into local
  // memory that cvta.local makes generic.
  auto privatePtr = [&](Value memref, Value linear, Type elem) -> Value {
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    Value addr = arith::AddIOp::create(
        b, loc, base,
        arith::MulIOp::create(b, loc, linear,
                              cIdx(b, loc, elementBytes(elem))));
    Value i64 = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), addr);
    bool inPrivateSpace =
        cast<MemRefType>(memref.getType()).getMemorySpace() != nullptr;
    return toGeneric(LLVM::IntToPtrOp::create(
        b, loc, inPrivateSpace ? local : generic, i64));
  };
  SmallVector<Value> args;
  SmallVector<Type> types;
  Value slot;
  if (Value r = op.getResult()) {
    slot = privateAlloca(b, {}, r.getType());
    memref::StoreOp::create(b, loc, zeroOf(b, loc, r.getType()), slot,
                            ValueRange{});
    args.push_back(privatePtr(slot, cIdx(b, loc, 0), r.getType()));
  }
  ValueRange indices = op.getIndices();
  for (auto [arg, count] : llvm::zip(op.getArgs(), op.getIndexCounts())) {
    if (!isa<MemRefType>(arg.getType())) {
      args.push_back(map.lookupOrDefault(arg));
      continue;
    }
    SmallVector<Value> idx;
    for (Value i : indices.take_front(count))
      idx.push_back(map.lookupOrDefault(i));
    indices = indices.drop_front(count);
    FailureOr<Buffer> buf = bufferOf(arg, b, map);
    if (failed(buf))
      return failure();
    switch (buf->kind) {
    case BufferKind::Global:
      args.push_back(toGeneric(globalElementPtr(b, *buf, idx)));
      break;
    case BufferKind::Shared:
      args.push_back(toGeneric(sharedPtr(
          b, buf->memref,
          arith::MulIOp::create(b, loc, sharedOffset(b, *buf, idx),
                                cIdx(b, loc, elementBytes(buf->elementType))))));
      break;
    case BufferKind::Local:
    case BufferKind::Var: {
      auto type = cast<MemRefType>(buf->memref.getType());
      Value linear = cIdx(b, loc, 0);
      for (auto [d, i] : llvm::enumerate(idx))
        linear = arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(b, loc, linear,
                                  cIdx(b, loc, type.getDimSize(d))),
            i);
      args.push_back(privatePtr(buf->memref, linear, buf->elementType));
      break;
    }
    default:
      return op.emitOpError("passes a fragment to `")
             << function
             << "`: an external function takes local, shared or global "
                "buffers (copy the fragment into a T.alloc_local first)";
    }
  }
  for (Value a : args)
    types.push_back(a.getType());
  auto fn = gpuModule.lookupSymbol<LLVM::LLVMFuncOp>(op.getCallee());
  auto fnType =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), types);
  if (!fn) {
    OpBuilder mb = OpBuilder::atBlockBegin(gpuModule.getBody());
    fn = LLVM::LLVMFuncOp::create(mb, loc, op.getCallee(), fnType);
  } else if (fn.getFunctionType() != fnType) {
    return op.emitOpError("calls `")
           << op.getCallee() << "` with argument types other than before";
  }
  LLVM::CallOp::create(b, loc, fn, args);
  if (slot)
    map.map(op.getResult(),
            memref::LoadOp::create(b, loc, slot, ValueRange{}).getResult());
  return success();
}

LogicalResult KernelLowering::lowerAtomic(Operation *op, OpBuilder &b,
                                          IRMapping &map, Context &ctx) {
  auto in = [&](Value v) { return map.lookupOrDefault(v); };
  Value memref;
  ValueRange offsets;
  std::optional<MemoryOrder> order;
  if (auto o = dyn_cast<AtomicRMWOp>(op)) {
    memref = o.getDst(), offsets = o.getOffsets(), order = o.getMemoryOrder();
  } else if (auto o = dyn_cast<AtomicLoadOp>(op)) {
    memref = o.getSrc(), offsets = o.getOffsets(), order = o.getMemoryOrder();
  } else {
    auto s = cast<AtomicStoreOp>(op);
    memref = s.getDst(), offsets = s.getOffsets(), order = s.getMemoryOrder();
  }
  FailureOr<Buffer> buf = bufferOf(memref, b, map);
  if (failed(buf))
    return failure();
  SmallVector<Value> idx;
  for (Value o : offsets)
    idx.push_back(in(o));
  // Inside a parallel loop, one copy of a replicated instance updates.
  Value cond = ctx.inParallel() ? ctx.leader : Value();
  if (buf->kind == BufferKind::Global)
    cond = andOf(b, loc, cond, inBounds(b, *buf, idx));
  StringRef scope = target.deviceSyncScope();
  Type type = buf->elementType;
  unsigned align = elementBytes(type);
  if (auto load = dyn_cast<AtomicLoadOp>(op)) {
    LLVM::AtomicOrdering ordering = llvmOrdering(order);
    map.map(load.getResult(),
            guardedValue(b, loc, cond, type, [&](OpBuilder &gb) -> Value {
              return LLVM::LoadOp::create(gb, loc, type,
                                          elementPtr(*this, gb, *buf, idx),
                                          align, false, false, false, false,
                                          ordering, scope);
            }));
    return success();
  }
  if (auto store = dyn_cast<AtomicStoreOp>(op)) {
    LLVM::AtomicOrdering ordering = llvmOrdering(order);
    guarded(b, loc, cond, [&](OpBuilder &gb) {
      LLVM::StoreOp::create(gb, loc, in(store.getValue()),
                            elementPtr(*this, gb, *buf, idx), align, false,
                            false, false, ordering, scope);
    });
    return success();
  }
  auto rmw = cast<AtomicRMWOp>(op);
  fenceBefore(b, loc, scope, order);
  auto update = [&](OpBuilder &gb) -> Value {
    return atomicUpdate(gb, loc, scope, rmw.getKind(),
                        elementPtr(*this, gb, *buf, idx), in(rmw.getValue()),
                        rmw.getIsUnsigned());
  };
  if (rmw.getResult())
    map.map(rmw.getResult(), guardedValue(b, loc, cond, type, update));
  else
    guarded(b, loc, cond, [&](OpBuilder &gb) { update(gb); });
  fenceAfter(b, loc, scope, order);
  return success();
}

/// The ops of one thread (isPerThreadOp), and the block votes and partial,
/// grid and cluster barriers; tile.thread_id is the block's
/// (registerKernelLowerings), tile.atomic_add, tile.print and
/// tile.device_assert are AtomicsAndPrint.cpp's.
void mlir::tile::registerThreadOpLowerings(LoweringTable &table) {
  table.add<WarpSizeOp, ShuffleOp, WarpVoteOp, WarpMatchOp, ActiveMaskOp,
            WarpReduceOp, SyncWarpOp, ElectOp, AtomicRMWOp, AtomicLoadOp,
            AtomicStoreOp, PdlTriggerOp, PdlWaitOp, ClusterRankOp,
            BarrierArriveRankOp, ThreadReturnOp, CallExternOp, BlockVoteOp,
            PartialBarrierOp, GridSyncOp, ClusterBarrierOp>(
      [](KernelLowering &kl, Operation *op, OpBuilder &b, IRMapping &map,
         Context &ctx) { return kl.lowerThreadOp(op, b, map, ctx); });
}
