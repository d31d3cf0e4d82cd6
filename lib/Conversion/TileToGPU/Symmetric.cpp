//===- Symmetric.cpp - peer views, signals and waits on GPUs --------------===//
//
// Part of tilelang-mlir.
//
// tile.peer becomes a view of the peer's part (a global buffer like the
// kernel arguments: copies and element accesses lower as for those, with
// no tensor maps); tile.signal is a barrier, then one thread's releasing
// update; tile.wait is one thread's acquiring poll with a timeout on the
// target's clock, then a barrier.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "dialects/Tile/Utils/ControlFlowUtils.h"
#include "dialects/Tile/Utils/SymmetricUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::tile;

LogicalResult KernelLowering::lowerPeer(PeerOp op, OpBuilder &b,
                                        IRMapping &map) {
  FailureOr<Buffer> local = bufferOf(op.getBuffer(), b, map);
  FailureOr<Buffer> peers = bufferOf(op.getPeers(), b, map);
  if (failed(local) || failed(peers))
    return failure();
  MemRefType type = op.getResult().getType();
  Value rank = map.lookupOrDefault(op.getRank());
  emitCheck(b, op.getLoc(), kRankOutsideWorld,
            rankInWorld(b, loc, peers->memref, rank));
  Value view = emitPeerView(b, loc, local->memref, peers->memref, rank, type);
  buffers[op.getResult()] = Buffer::global(view, type);
  map.map(op.getResult(), view);
  return success();
}

void GPUTargetInfo::emitSignal(OpBuilder &b, Location loc, Value ptr,
                               Value value, SignalMode mode) const {
  LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::acq_rel, StringRef());
  if (mode == SignalMode::add)
    LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::add, ptr, value,
                              LLVM::AtomicOrdering::release);
  else
    LLVM::StoreOp::create(b, loc, value, ptr,
                          /*alignment=*/value.getType().getIntOrFloatBitWidth() / 8,
                          /*isVolatile=*/false, /*isNonTemporal=*/false,
                          /*isInvariantGroup=*/false,
                          LLVM::AtomicOrdering::release);
}

Value GPUTargetInfo::emitAcquireLoad(OpBuilder &b, Location loc, Value ptr,
                                     Type type) const {
  int64_t bytes = type.getIntOrFloatBitWidth() / 8;
  return LLVM::LoadOp::create(b, loc, type, ptr, bytes, /*isVolatile=*/false,
                              /*isNonTemporal=*/false, /*isInvariant=*/false,
                              /*isInvariantGroup=*/false,
                              LLVM::AtomicOrdering::acquire);
}

/// Runs `body` with the flag element's address in thread 0 of the block.
static LogicalResult
onFlagInThreadZero(KernelLowering &kl, Value flags, ValueRange indices,
                   OpBuilder &b, IRMapping &map,
                   function_ref<void(OpBuilder &, Value)> body) {
  FailureOr<Buffer> buf = kl.bufferOf(flags, b, map);
  if (failed(buf))
    return failure();
  SmallVector<Value> idx;
  for (Value i : indices)
    idx.push_back(map.lookupOrDefault(i));
  guarded(b, kl.loc, kl.isThreadZero(b), [&](OpBuilder &gb) {
    body(gb, kl.globalElementPtr(gb, *buf, idx));
  });
  return success();
}

LogicalResult KernelLowering::lowerSignal(SignalOp op, OpBuilder &b,
                                          IRMapping &map) {
  Value value = map.lookupOrDefault(op.getValue());
  // Every thread's writes are done (and ordered before thread 0's fence).
  barrier(b);
  return onFlagInThreadZero(*this, op.getFlags(), op.getIndices(), b, map,
                            [&](OpBuilder &gb, Value ptr) {
                              target.emitSignal(gb, loc, ptr, value,
                                                op.getMode());
                            });
}

LogicalResult KernelLowering::lowerWait(WaitOp op, OpBuilder &b,
                                        IRMapping &map) {
  Value value = map.lookupOrDefault(op.getValue());
  LogicalResult result = onFlagInThreadZero(
      *this, op.getFlags(), op.getIndices(), b, map,
      [&](OpBuilder &gb, Value ptr) {
        Value done = emitWaitLoop(
            gb, loc,
            [&](OpBuilder &rb, Location l) {
              return target.emitAcquireLoad(rb, l, ptr, value.getType());
            },
            value, op.getCmp(), op.getTimeoutMs(),
            [&](OpBuilder &tb, Location l) { return target.emitTimeNs(tb, l); });
        emitCheck(gb, op.getLoc(), waitTimeoutMessage(op), done);
      });
  // The other threads read what the acquire made visible to thread 0.
  barrier(b);
  target.emitAfterAcquire(b, loc);
  return result;
}

void mlir::tile::registerSymmetricLowerings(LoweringTable &table) {
  table.add<PeerOp>([](KernelLowering &kl, PeerOp op, OpBuilder &b,
                       IRMapping &map, Context &) {
    return kl.lowerPeer(op, b, map);
  });
  table.add<SignalOp>([](KernelLowering &kl, SignalOp op, OpBuilder &b,
                         IRMapping &map, Context &) {
    return kl.lowerSignal(op, b, map);
  });
  table.add<WaitOp>([](KernelLowering &kl, WaitOp op, OpBuilder &b,
                       IRMapping &map, Context &) {
    return kl.lowerWait(op, b, map);
  });
}
