//===- TargetInfo.h - what the GPU lowering asks of a target ----*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// The target-neutral lowering of tile programs (lib/Conversion/TileToGPU)
// never asks which vendor it lowers for: it asks a GPUTargetInfo. A target
// answers three kinds of questions:
//
//   facts      the chip's row of the chip table (dialects/Tile/Utils/
//              Chips.h: the warp size, the shared-memory budget), whether
//              the target has asynchronous copies, which intrinsic computes
//              a math function;
//   emitters   small pieces of IR that differ per vendor (a block barrier,
//              an asynchronous copy, the grid size, a failing assertion);
//   families   op families that only one vendor has: tensor-core gemms
//              (mma.sync, wgmma, MFMA), TMA copies, mbarriers and warp
//              specialization. The target creates the KernelLowering (a
//              subclass with these families, built on its helpers:
//              buffers, registers, scratch), registers the lowerings of
//              its ops in the LoweringTable and gets the KernelLowering
//              back in the hooks.
//
// NVVMTargetInfo (lib/Conversion/TileToNVVM) and ROCDLTargetInfo
// (lib/Conversion/TileToROCDL) implement it; `lowerTileKernels` runs the
// lowering for one of them.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_CONVERSION_TILETOGPU_TARGETINFO_H
#define TILE_CONVERSION_TILETOGPU_TARGETINFO_H

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Utils/Chips.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

#include <memory>
#include <optional>

namespace mlir {
namespace tile {

class KernelLowering;
class LoweringTable;
struct Buffer;
struct Context;

/// Math functions a target may compute with one intrinsic (f32).
enum class MathIntrinsic { exp2, log2, rsqrt, sin, cos, floor, ceil, rcp };

class GPUTargetInfo {
public:
  explicit GPUTargetInfo(const ChipInfo &chip) : chip(chip) {}
  virtual ~GPUTargetInfo();

  //===--------------------------------------------------------------------===//
  // Facts
  //===--------------------------------------------------------------------===//

  /// The target attribute of the kernels' gpu.module.
  virtual Attribute getTargetAttr() const = 0;
  /// The platform, as error messages name it ("CUDA", "ROCm").
  virtual StringRef getPlatformName() const = 0;
  /// The chip's row of the chip table.
  const ChipInfo &getChipInfo() const { return chip; }
  StringRef getChip() const { return chip.name; }
  /// Threads of a warp (wave).
  int64_t getWarpSize() const { return chip.warpSize; }
  /// The most shared memory (LDS) one block may use, in bytes.
  int64_t getMaxSharedBytes() const { return chip.maxSharedBytes; }
  /// The memory space of per-thread allocations (null: the default one).
  virtual Attribute getPrivateMemorySpace(MLIRContext *ctx) const = 0;
  /// Whether element and vector loads from shared memory put the stage
  /// index outside the swizzle (see KernelLowering::loadVector).
  virtual bool stagesOutsideSwizzle() const = 0;
  /// Whether copies marked `async` can be asynchronous (cp.async).
  virtual bool hasAsyncCopy() const = 0;
  /// Barriers over a subset of the block's warps (`bar.sync id, count`),
  /// which roles (tile.role) synchronize on.
  virtual bool hasNamedBarriers() const = 0;
  /// How many scratch regions successive ops staging through shared
  /// scratch take turns over (where shared memory allows, see
  /// KernelLowering::planSharedMemory). With more than one, the barrier
  /// that keeps an op from overwriting scratch the previous op still reads
  /// orders nothing, and a later pass of the target may erase it.
  virtual int64_t scratchSlots() const { return 1; }
  /// Whether pairs of float32 atomic adds into global memory can be one
  /// vector reduction.
  virtual bool hasPairedF32AtomicAdd() const = 0;
  /// The LLVM intrinsic computing `fn` on f32; empty when the target has
  /// none (the math dialect's lowering then handles the op).
  virtual StringRef getMathIntrinsic(MathIntrinsic fn) const = 0;

  //===--------------------------------------------------------------------===//
  // Emitters
  //===--------------------------------------------------------------------===//

  /// The number of blocks of the grid along dimension `d` (0, 1, 2);
  /// `blockSize` is the static block size along it.
  virtual Value emitGridDim(OpBuilder &b, Location loc, int d,
                            int64_t blockSize) const = 0;
  /// tile.ieee `kind` in direction `mode` on `operands`: the target's
  /// instruction of that rounding, or (the default) the round-to-nearest
  /// result stepped by its residual's sign (RoundingUtils.h).
  virtual Value emitRoundedArith(OpBuilder &b, Location loc, IEEEKind kind,
                                 RoundingMode mode, ValueRange operands) const;
  /// e^x of an f32 `x` as the platform's C library computes expf (TileLang's
  /// T.exp), instruction for instruction, so results agree bit for bit;
  /// null where the target has no such sequence (the approximate exp2 of
  /// x log2(e) is used).
  virtual Value emitLibraryExpf(OpBuilder &b, Location loc, Value x) const {
    return Value();
  }
  /// A barrier over the whole block (`id` 0) or over the `threads` threads
  /// of named barrier `id`.
  virtual void emitBarrier(OpBuilder &b, Location loc, int64_t id,
                           int64_t threads) const = 0;
  /// A barrier over the whole block of `threads` threads that the threads
  /// reach at different places of the program (one in each tile.role):
  /// later passes, which merge the barriers of straight-line code, must
  /// keep it. By default the block's barrier.
  virtual void emitDivergentBlockBarrier(OpBuilder &b, Location loc,
                                         int64_t threads) const {
    emitBarrier(b, loc, 0, threads);
  }
  /// An asynchronous copy of `count` of `width` elements (zero-filling the
  /// rest) from `src` at `srcIdx` into shared `dst` at `dstIdx`.
  virtual void emitAsyncCopy(OpBuilder &b, Location loc, Value dst,
                             Value dstIdx, Value src, ValueRange srcIdx,
                             int64_t width, Value count,
                             bool bypassL1) const = 0;
  /// Closes a group of asynchronous copies.
  virtual void emitAsyncCommit(OpBuilder &b, Location loc) const = 0;
  /// Waits until at most `pending` groups of asynchronous copies are left.
  virtual void emitAsyncWait(OpBuilder &b, Location loc,
                             int64_t pending) const = 0;
  /// Orders generic-proxy writes to shared memory before async-proxy reads.
  virtual void emitAsyncProxyFence(OpBuilder &b, Location loc) const = 0;
  /// Atomically adds `lo` and `hi` to the float32 pair at global `ptr`.
  virtual void emitPairedAtomicAdd(OpBuilder &b, Location loc, Value ptr,
                                   Value lo, Value hi) const = 0;
  /// Before an op writes a shared tile that bulk reduce-adds may still be
  /// reading (KernelLowering::bulkReadSources): wait for their reads and
  /// synchronize the threads (`withBarrier` false: the wait alone, before a
  /// barrier the caller emits). Only targets with bulk reduce-adds have any.
  virtual void emitBulkReadWait(KernelLowering &kl, OpBuilder &b,
                                bool withBarrier = true) const {}
  /// Last rewrites of a lowered kernel's body (after the math lowering).
  virtual void finalizeKernel(gpu::GPUFuncOp func) const {}
  /// The thread index `tid` (index) as the body of a loop sees it. The
  /// default is `tid` itself; a target may return a copy that LLVM cannot
  /// hoist, so that addresses derived from it are recomputed in the loop
  /// instead of held in registers across it (see KernelLowering's
  /// cloneWithRegions).
  virtual Value loopThreadIndex(OpBuilder &b, Location loc, Value tid) const {
    return tid;
  }

  //===--------------------------------------------------------------------===//
  // Op families
  //===--------------------------------------------------------------------===//

  /// The lowering of `kernel` (in `func`): a KernelLowering that also has
  /// the target's op families, which the hooks below hand their ops to.
  virtual std::unique_ptr<KernelLowering>
  createLowering(KernelOp kernel, func::FuncOp func) const = 0;
  /// Decisions taken on the whole kernel before it is outlined (TMA
  /// stores, tensor maps).
  virtual LogicalResult prepareKernel(KernelLowering &kl) const = 0;
  /// Attributes of the outlined kernel function.
  virtual void annotateKernel(KernelLowering &kl, OpBuilder &b) const = 0;
  /// Code at the kernel's entry, after the buffers are allocated.
  virtual void emitKernelPrologue(KernelLowering &kl, OpBuilder &b) const = 0;
  /// Code before the kernel returns.
  virtual void emitKernelEpilogue(KernelLowering &kl, OpBuilder &b) const = 0;
  /// Adds to `table` the lowerings of the ops only the target has (warp
  /// specialization, transaction barriers, gemm waits), and replaces the
  /// target-neutral entry of an op it lowers its own way (a tile.copy
  /// through a transaction barrier, an epilogue copy that prepareKernel
  /// chose for a TMA store).
  virtual void registerLowerings(LoweringTable &table) const = 0;
  /// Fails with a message when the target cannot lower `op` at all.
  virtual LogicalResult checkSupported(Operation *op) const = 0;
  /// A bulk atomic add of a shared tile (`tma`) as the target's bulk
  /// reduction, synchronizing the threads before and after it; none where
  /// the target has none or prepareKernel found the tile unfit for it (the
  /// caller then adds element by element).
  virtual std::optional<LogicalResult>
  lowerBulkAtomicAdd(KernelLowering &kl, AtomicAddOp op, OpBuilder &b,
                     IRMapping &map) const {
    return std::nullopt;
  }
  /// A gemm with a tensor-core grid (`warp_partition`, `wgmma`, `mfma`) on
  /// shared operands, or a fragment A in registers (`aRegs`, see
  /// registerOperandA).
  virtual LogicalResult lowerGemm(KernelLowering &kl, GemmOp op, OpBuilder &b,
                                  const Buffer &a, const Buffer &bb,
                                  const Buffer &c,
                                  ArrayRef<int64_t> aRegs) const = 0;
  /// A 2:4 sparse gemm.
  virtual LogicalResult lowerGemmSp(KernelLowering &kl, GemmSpOp op,
                                    OpBuilder &b, const Buffer &a,
                                    const Buffer &e, const Buffer &bb,
                                    const Buffer &c) const = 0;
  /// Waits, in the calling thread, until its asynchronous operations on
  /// shared memory (matrix instructions, asynchronous copies, bulk stores)
  /// are complete and orders its accesses before later ones of any proxy:
  /// what must precede the barrier after which other bytes are written
  /// over the same shared memory (see KernelLowering::placeSharedReusing).
  virtual void emitAsyncDrain(KernelLowering &kl, OpBuilder &b) const = 0;
  /// What a failed run-time check (a device assertion, a timed-out wait)
  /// does when `failed` holds: stop the kernel reporting `msg` and the
  /// source position of `at`.
  virtual void emitAssertFailure(KernelLowering &kl, Location at, StringRef msg,
                                 OpBuilder &b, Value failed) const = 0;
  /// A clock in nanoseconds (i64) for timeouts.
  virtual Value emitTimeNs(OpBuilder &b, Location loc) const = 0;
  /// The releasing update of the integer flag at `ptr` (a global pointer)
  /// at system scope (tile.signal): a system fence, then an atomic store
  /// (`set`) or add. LLVM's atomics by default.
  virtual void emitSignal(OpBuilder &b, Location loc, Value ptr, Value value,
                          SignalMode mode) const;
  /// An acquiring load of the integer at `ptr` at system scope (tile.wait's
  /// poll). LLVM's atomic load by default.
  virtual Value emitAcquireLoad(OpBuilder &b, Location loc, Value ptr,
                                Type type) const;
  /// What every thread runs after a tile.wait's final barrier, before it
  /// reads what the flag released (nothing by default).
  virtual void emitAfterAcquire(OpBuilder &b, Location loc) const {}

  //===--------------------------------------------------------------------===//
  // Lanes and warps (TileThreadOps.td; lowered in ThreadOps.cpp)
  //===--------------------------------------------------------------------===//

  /// LLVM's name of the device scope of atomics and fences.
  virtual StringRef deviceSyncScope() const = 0;
  /// The lane of the executing thread in its warp (i32).
  virtual Value emitLaneId(OpBuilder &b, Location loc) const = 0;
  /// CUDA's `__shfl_*_sync(mask, v, offset, width)` of an i32 (the
  /// semantics of tile.shuffle).
  virtual Value emitShuffle(OpBuilder &b, Location loc, ShuffleKind kind,
                            Value v, Value offset, Value width,
                            Value mask) const = 0;
  /// The bits of the lanes of `mask` whose `pred` is true (i64).
  virtual Value emitBallot(OpBuilder &b, Location loc, Value pred,
                           Value mask) const = 0;
  /// Whether `pred` holds in some (`all`: every) lane of `mask` (i1).
  virtual Value emitVote(OpBuilder &b, Location loc, bool all, Value pred,
                         Value mask) const = 0;
  /// The executing lanes (i64).
  virtual Value emitActiveMask(OpBuilder &b, Location loc) const = 0;
  /// tile.warp_match of a 32- or 64-bit integer (i32); the target's
  /// checkSupported refuses the op where there is none.
  virtual Value emitMatch(OpBuilder &b, Location loc, MatchKind kind,
                          Value v, Value mask) const = 0;
  /// `__syncwarp(mask)`.
  virtual void emitSyncWarp(OpBuilder &b, Location loc, Value mask) const = 0;
  /// A block barrier returning the count (and, or) of `pred` (i32); the
  /// target's checkSupported refuses the op where there is none.
  virtual Value emitBlockVote(OpBuilder &b, Location loc, BlockVoteKind kind,
                              Value pred) const = 0;
  /// True in one executing lane of the warp (i1).
  virtual Value emitElectOne(OpBuilder &b, Location loc) const = 0;
  /// Ends the executing thread (tile.thread_return).
  virtual void emitThreadExit(OpBuilder &b, Location loc) const = 0;
  /// `bar.sync id, threads` (`bar.arrive` with `arrive`; `threads` null:
  /// the block's) with i32 values known at run time; the target's
  /// checkSupported refuses tile.partial_barrier where there is none.
  virtual void emitPartialBarrier(OpBuilder &b, Location loc, Value id,
                                  Value threads, bool arrive) const = 0;
  /// Programmatic dependent launch: let the next kernel start (`trigger`)
  /// or wait for the previous ones; checkSupported refuses the ops where
  /// there is none.
  virtual void emitPdl(OpBuilder &b, Location loc, bool trigger) const = 0;
  /// A barrier of the whole grid of a cooperative launch (tile.grid_sync);
  /// checkSupported refuses it where there is none.
  virtual void emitGridSync(KernelLowering &kl, OpBuilder &b) const = 0;
  /// Whether kernels can run in thread block clusters.
  virtual bool hasClusters() const = 0;
  /// A step of the cluster barrier (tile.cluster_barrier).
  virtual void emitClusterBarrier(OpBuilder &b, Location loc,
                                  ClusterStep step) const = 0;
  /// The block's rank in its cluster (i32).
  virtual Value emitClusterRank(OpBuilder &b, Location loc) const = 0;
  /// The executing thread arrives on the barrier at shared pointer
  /// `barrier`, in the block of rank `rank` of the cluster.
  virtual void emitRemoteArrive(OpBuilder &b, Location loc, Value barrier,
                                Value rank) const = 0;

protected:
  const ChipInfo &chip;
};

/// Lowers the one top-level tile.kernel of every function of `module` for
/// `target`: outlines it into a gpu.func and launches it.
LogicalResult lowerTileKernels(ModuleOp module, const GPUTargetInfo &target);

} // namespace tile
} // namespace mlir

#endif // TILE_CONVERSION_TILETOGPU_TARGETINFO_H
