//===- KernelLowering.h - lower one tile.kernel to a GPU kernel -*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// Every tile.kernel becomes a gpu.func; its body is re-emitted op by op as
// per-thread code (a "lowering clone"): tile ops expand into loops over the
// registers a thread owns, tensor-core instructions, asynchronous copies,
// shuffles and shared memory; ops of other dialects are cloned, their
// nested regions lowered the same way. The layouts and swizzles come from
// tile-layout-inference.
//
// One KernelLowering lowers one kernel: it holds the state every op family
// shares (buffers, the thread index and role, the shared-memory, scratch
// and barrier plans) and the helpers over it. Its methods are defined by op
// family in lib/Conversion/TileToGPU, one file per family; each family
// registers the ops it lowers in the LoweringTable (LoweringTable.h), which
// lowerOp consults. The vendor op families (tensor-core gemms, TMA,
// mbarriers, warp specialization) are methods of subclasses in
// lib/Conversion/TileToNVVM and lib/Conversion/TileToROCDL
// (NVVMKernelLowering, ROCDLKernelLowering), which the target's
// GPUTargetInfo creates; it registers their ops in the table too.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_CONVERSION_TILETOGPU_KERNELLOWERING_H
#define TILE_CONVERSION_TILETOGPU_KERNELLOWERING_H

#include "dialects/Conversion/TileToGPU/LoweringTable.h"
#include "dialects/Conversion/TileToGPU/TargetInfo.h"
#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Utils/ControlFlowUtils.h"
#include "dialects/Tile/Utils/ConversionUtils.h"
#include "dialects/Tile/Utils/LayoutUtils.h"
#include "dialects/Tile/Utils/ReduceUtils.h"
#include "dialects/Tile/Utils/ThreadVariance.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir {
namespace tile {

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

inline Value cIdx(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

inline Value zeroOf(OpBuilder &b, Location loc, Type type) {
  return arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type));
}

inline int64_t elementBytes(Type t) {
  return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}

/// The bytes of a shared allocation.
inline int64_t sharedBytesOf(AllocSharedOp alloc) {
  MemRefType type = alloc.getType();
  return type.getNumElements() * elementBytes(type.getElementType());
}

/// Where a shared allocation may start: 1 KB for a swizzled buffer (its
/// swizzle is defined on address bits up to 1 KB), 128 bytes otherwise.
inline int64_t sharedAlignment(AllocSharedOp alloc) {
  SwizzleAttr s = alloc.getSwizzleAttr();
  return s && s.getBytes() > 0 ? 1024 : 128;
}

/// `x + cst` (`x` itself when `cst` is 0).
inline Value addConst(OpBuilder &b, Location loc, Value x, int64_t cst) {
  return cst ? arith::AddIOp::create(b, loc, x, cIdx(b, loc, cst)).getResult()
             : x;
}

/// The origin (first row, first column) of tile `unit` in a grid of
/// `tileM` x `tileN` tiles with `gridN` tiles per row (units row-major):
/// how warps, warpgroups and waves find their part of a gemm.
inline std::pair<Value, Value> gridTileOrigin(OpBuilder &b, Location loc,
                                              Value unit, int64_t gridN,
                                              int64_t tileM, int64_t tileN) {
  Value row = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, unit, cIdx(b, loc, gridN)),
      cIdx(b, loc, tileM));
  Value col = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, unit, cIdx(b, loc, gridN)),
      cIdx(b, loc, tileN));
  return {row, col};
}

/// `x && y`, where a null condition is true.
inline Value andOf(OpBuilder &b, Location loc, Value x, Value y) {
  if (!x)
    return y;
  if (!y)
    return x;
  return arith::AndIOp::create(b, loc, x, y);
}

/// The layout of a fragment allocation (none for other buffers, or before
/// layout inference).
std::optional<TileLayout> fragmentLayout(Value v);

/// The registers of a fragment A that a tensor-core gemm reads as they are
/// (see Gemm.cpp); none when A must go through shared memory.
std::optional<SmallVector<int64_t>>
registerOperandA(GemmOp op, const TileLayout &layout, int64_t threads);

/// Checks that a gemm with an instruction grid has that grid's accumulator
/// layout.
LogicalResult checkAccumulatorLayout(GemmOp op, const TileLayout &c,
                                     int64_t threads);

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

enum class BufferKind { Global, Shared, Fragment, Local, Var };

/// How a tile buffer of the source program is reached in the kernel.
struct Buffer {
  BufferKind kind;
  Value memref;               // kernel argument, flat shared view, or alloca
  SmallVector<int64_t> shape; // logical shape (dynamic dims for global)
  Type elementType;
  // Shared: the allocation this buffer views. `allocShape` is its shape,
  // `viewOffsets` the origin of the view in it (one per allocation
  // dimension; null: 0), `viewDims` the allocation dimension of each view
  // dimension (views drop unit dimensions). `swizzle` is the XOR span in
  // bytes; see sharedLinear for the placement.
  SmallVector<int64_t> allocShape;
  SmallVector<Value> viewOffsets;
  SmallVector<int64_t> viewDims;
  int64_t swizzle = 0;
  // Fragment: the layout.
  std::optional<TileLayout> layout;

  int64_t rank() const { return shape.size(); }

  /// A global buffer: `memref` (a kernel argument or a view of one) of the
  /// shape and element type of `type`.
  static Buffer global(Value memref, MemRefType type) {
    Buffer buf;
    buf.kind = BufferKind::Global;
    buf.memref = memref;
    buf.shape.assign(type.getShape().begin(), type.getShape().end());
    buf.elementType = type.getElementType();
    return buf;
  }
};

/// Where code is being emitted: at block level (every thread runs it) or
/// inside an instance of a parallel loop (one register of its layout).
struct Context {
  const TileLayout *loopLayout = nullptr;
  int64_t reg = -1;
  /// Loop dimension values of this instance (the induction variables).
  SmallVector<Value> ivs;
  /// Original parallel body, to recognize induction variables.
  Block *body = nullptr;
  /// i1 true in exactly one copy of a replicated instance (null: all).
  Value leader;
  /// Vectorized shared accesses of a T.Parallel body (see lowerParallel):
  /// loads answered by lane `lane` of a vector loaded once for the group of
  /// registers, stores whose values are collected for one vector store.
  const DenseMap<Operation *, Value> *preloaded = nullptr;
  DenseMap<Operation *, SmallVector<Value>> *pendingStores = nullptr;
  int64_t lane = 0;
  bool inParallel() const { return loopLayout != nullptr; }
};

//===----------------------------------------------------------------------===//
// Kernel lowering
//===----------------------------------------------------------------------===//

class KernelLowering {
public:
  KernelLowering(KernelOp kernel, func::FuncOp func,
                 const GPUTargetInfo &target)
      : kernel(kernel), func(func), target(target), loc(kernel.getLoc()),
        numThreads(kernel.getNumThreads()), warpSize(target.getWarpSize()) {}
  virtual ~KernelLowering() = default;

  LogicalResult run();


  // Set-up (KernelSetup.cpp).
  LogicalResult outline();
  LogicalResult planSharedMemory(OpBuilder &b);
  /// The most scratch one op needs (and scratchUsers: the ops that need
  /// some).
  int64_t kernelScratchNeed();
  int64_t blocksPerProcessor(int64_t sharedBytes) const;
  LogicalResult allocateBuffers(OpBuilder &b);
  void setupBlockIndices(OpBuilder &b);
  Value gridDim(OpBuilder &b, int d);

  // Shared-memory placement (SharedMemoryPlan.cpp).
  int64_t placeShared(DenseMap<Value, int64_t> *offsets);
  /// Places the barriers (first, 8 bytes each); returns where they end.
  int64_t placeBarriers(DenseMap<Value, int64_t> *offsets);
  /// The plan in which buffers whose lifetimes do not overlap share bytes:
  /// records every offset in `offsets` and, in `drains`, the ops before
  /// which bytes change hands; returns where the buffers end, or fails
  /// saying `why` no buffer can share.
  FailureOr<int64_t>
  placeSharedReusing(DenseMap<Value, int64_t> &offsets,
                     llvm::SmallPtrSetImpl<Operation *> &drains,
                     std::string &why);

  // The lowering clone (KernelLowering.cpp).
  LogicalResult lowerBlock(Block &src, OpBuilder &b, IRMapping &map,
                           Context &ctx);
  LogicalResult lowerOp(Operation *op, OpBuilder &b, IRMapping &map,
                        Context &ctx);
  LogicalResult cloneWithRegions(Operation *op, OpBuilder &b, IRMapping &map,
                                 Context &ctx);
  /// A tile.role: its threads run the body, numbered from 0 (`tid`),
  /// `numThreads` of them, synchronizing on a named barrier of their own.
  LogicalResult lowerRole(RoleOp op, OpBuilder &b, IRMapping &map,
                          Context &ctx);
  LogicalResult lowerBarrier(BarrierOp op, OpBuilder &b, Context &ctx);

  // Buffers and element access (BufferAccess.cpp).
  FailureOr<Buffer> bufferOf(Value v, OpBuilder &b, IRMapping &map);
  Value sharedOffset(OpBuilder &b, const Buffer &buf, ArrayRef<Value> idx,
                     bool stageOutside = false);
  int64_t sharedInnerAlignment(const Buffer &buf, Value innerOffset);
  Value loadElement(OpBuilder &b, const Buffer &buf, ArrayRef<Value> idx);
  void storeElement(OpBuilder &b, const Buffer &buf, ArrayRef<Value> idx,
                    Value v);
  Value loadVector(OpBuilder &b, const Buffer &buf, ArrayRef<Value> idx,
                   int64_t width);
  void storeVector(OpBuilder &b, const Buffer &buf, ArrayRef<Value> idx,
                   Value v);
  Value inBounds(OpBuilder &b, const Buffer &buf, ArrayRef<Value> idx,
                 ArrayRef<int64_t> skip = {});
  Value regLoad(OpBuilder &b, const Buffer &frag, int64_t reg);
  void regStore(OpBuilder &b, const Buffer &frag, int64_t reg, Value v);
  LogicalResult lowerAccess(Operation *op, OpBuilder &b, IRMapping &map,
                            Context &ctx);
  std::optional<int64_t> fragmentRegister(const Buffer &frag,
                                          ArrayRef<IndexMap> maps,
                                          const Context &ctx);
  FailureOr<Value> shiftedLoad(OpBuilder &b, const Buffer &frag,
                               const ShiftedAccess &access, Operation *op,
                               IRMapping &map, const Context &ctx);
  Value isThreadZero(OpBuilder &b);
  Value isRoleLeader(OpBuilder &b);
  Value sideEffectGuard(OpBuilder &b, const Context &ctx);
  Value replicaLeader(OpBuilder &b, const TileLayout &layout);
  Value sharedPtr(OpBuilder &b, Value memref, Value byteOffset);
  Value barrierPtr(OpBuilder &b, Value barriers, Value index, IRMapping &map);
  Value globalElementPtr(OpBuilder &b, const Buffer &buf, ArrayRef<Value> idx);
  /// Per-thread storage (promoted to registers), in the target's private
  /// memory space. Always at the top of the kernel: LLVM promotes only
  /// allocas of the entry block, and one emitted where a reduction runs
  /// (after scf-to-cf, some later block) stays a stack object (AMDGPU
  /// scratch) and would grow the stack per iteration inside a loop.
  Value privateAlloca(OpBuilder &b, ArrayRef<int64_t> shape, Type type);
  /// A barrier over the block, or over the role being lowered.
  void barrier(OpBuilder &b) {
    target.emitBarrier(b, loc, roleBarrier, roleThreads);
  }
  /// The byte offset `offset` from the (aligned) base of shared memory.
  Value smemAt(OpBuilder &b, int64_t offset) {
    return smemBase
               ? arith::AddIOp::create(b, loc, smemBase, cIdx(b, loc, offset))
                     .getResult()
               : cIdx(b, loc, offset);
  }

  // Parallel loops (ParallelLoops.cpp).
  LogicalResult lowerParallel(ParallelOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerPerThreadLoop(ParallelOp op, const TileLayout &layout,
                                   OpBuilder &b, IRMapping &map);
  LogicalResult lowerRolledParallel(ParallelOp op, const TileLayout &layout,
                                    OpBuilder &b, IRMapping &map);
  LogicalResult lowerInstance(ParallelOp op, const TileLayout &layout,
                              OpBuilder &b, IRMapping &map, ArrayRef<Value> ivs,
                              ArrayRef<bool> exceeds, int64_t reg, Value leader);

  // Copies (Copies.cpp).
  struct Side {
    Buffer buf;
    SmallVector<Value> offsets;
    SmallVector<int64_t> sizes;
    /// The logical element type (tile.copy's src_element/dst_element: ui8
    /// or i1 over i8 storage); null: the buffer's element type.
    Type logical = {};
    Type logicalType() const { return logical ? logical : buf.elementType; }
  };
  /// `v` (elements of `from`) converted to the elements of `to`.
  Value convertSide(OpBuilder &b, Value v, const Side &from, const Side &to) {
    return convertElements(b, loc, v, from.logicalType(), to.logicalType(),
                           to.buf.elementType);
  }
  /// Whether a copy from `src` to `dst` moves bits unchanged.
  static bool sameElements(const Side &src, const Side &dst) {
    return src.buf.elementType == dst.buf.elementType &&
           !(dst.logicalType().isInteger(1) && !src.logicalType().isInteger(1));
  }
  FailureOr<Side> sideOf(Value buffer, ValueRange offsets,
                         ArrayRef<int64_t> sizes, OpBuilder &b, IRMapping &map);
  SmallVector<Value> sideIndex(OpBuilder &b, const Side &s,
                               ArrayRef<Value> squeezed);
  /// `store` (null: storeVector into `dst`) stores each vector of `dst`'s
  /// elements at its index into `dst` (a cluster copy stores them into
  /// another block's shared memory).
  void copyMemoryToMemory(
      OpBuilder &b, const Side &src, const Side &dst, bool async,
      llvm::function_ref<void(OpBuilder &, ArrayRef<Value>, Value)> store =
          nullptr);
  void asyncCopy(OpBuilder &b, const Buffer &dst, ArrayRef<Value> dstIdx,
                 const Buffer &src, ArrayRef<Value> srcIdx, Value srcOk,
                 int64_t elements);
  void copyFragmentMemory(OpBuilder &b, const Side &frag, const Side &mem,
                          bool toMemory);
  void copyThroughScratch(OpBuilder &b, const Side &src, const Side &dst);
  void copyPerThread(OpBuilder &b, const Side &src, const Side &dst,
                     bool eachThread = false);
  Side scratchSide(OpBuilder &b, ArrayRef<int64_t> shape, Type elementType);
  Buffer scratchBuffer(OpBuilder &b, ArrayRef<int64_t> shape, Type type);
  LogicalResult lowerCopy(CopyOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerCpAsync(CpAsyncOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerFill(FillOp op, OpBuilder &b, IRMapping &map);

  // Gemm dispatch and the SIMT gemm (Gemm.cpp).
  LogicalResult lowerGemm(GemmOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerGemmSp(GemmSpOp op, OpBuilder &b, IRMapping &map);
  FailureOr<Buffer> stageOperand(OpBuilder &b, const Buffer &buf);
  void gemmSimt(GemmOp op, OpBuilder &b, const Buffer &a, const Buffer &bb,
                const Buffer &c);

  // Reductions (Reductions.cpp).
  LogicalResult lowerReduce(ReduceOp op, OpBuilder &b, IRMapping &map);
  void lowerThreadReduce(ReduceOp op, const Buffer &src, const Buffer &dst,
                         OpBuilder &b);
  SmallVector<Value> reduceOwnTerms(ReduceOp op, const Buffer &src,
                                    const Buffer &dst,
                                    const TileLayout &natural,
                                    const ReduceSpec &spec,
                                    OpBuilder &b);
  LogicalResult lowerCumSum(CumSumOp op, OpBuilder &b, IRMapping &map);

  // Lanes, warps and element atomics (ThreadOps.cpp): the ops of
  // TileThreadOps.td; `variance` says which scalar code differs between
  // threads (its stores are each thread's own).
  LogicalResult lowerThreadOp(Operation *op, OpBuilder &b, IRMapping &map,
                              Context &ctx);
  LogicalResult lowerCallExtern(CallExternOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerAtomic(Operation *op, OpBuilder &b, IRMapping &map,
                            Context &ctx);
  /// A tile.make_tensor: the global buffer at its address.
  void tensorAtAddress(MakeTensorOp op, OpBuilder &b, IRMapping &map);
  std::unique_ptr<ThreadVariance> variance;

  // Atomics, printing and assertions (AtomicsAndPrint.cpp).
  bool pairedAtomicAdd(const Buffer &src, const Buffer &dst,
                       ArrayRef<Value> offsets);
  LogicalResult lowerAtomicAdd(AtomicAddOp op, OpBuilder &b, IRMapping &map,
                               Context &ctx);
  LogicalResult lowerPrint(PrintOp op, OpBuilder &b, IRMapping &map,
                           Context &ctx);
  LogicalResult lowerPeer(PeerOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerSignal(SignalOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerWait(WaitOp op, OpBuilder &b, IRMapping &map);
  /// A run-time check at `at`: where `ok` is false the kernel stops with
  /// `msg` (GPUTargetInfo::emitAssertFailure).
  void emitCheck(OpBuilder &b, Location at, StringRef msg, Value ok);
  LogicalResult lowerDeviceAssert(DeviceAssertOp op, OpBuilder &b,
                                  IRMapping &map);
  Value gpuModuleString(OpBuilder &b, StringRef prefix, StringRef value);

  //===--------------------------------------------------------------------===//
  // State
  //===--------------------------------------------------------------------===//

  KernelOp kernel;
  func::FuncOp func;
  const GPUTargetInfo &target;
  /// How each op is lowered (set by lowerTileKernels before run).
  const LoweringTable *lowerings = nullptr;
  Location loc;
  int64_t numThreads;
  int64_t warpSize;

  gpu::GPUModuleOp gpuModule;
  gpu::GPUFuncOp gpuFunc;
  IRMapping outer; // host values -> kernel values
  Value tid;      // the thread's index among those running the current code
  Value blockTid; // the thread's index in the block
  SmallVector<Value> blockIndices;
  DenseMap<Value, Buffer> buffers;        // original buffer values -> buffers
  DenseMap<Value, int64_t> sharedOffsets; // alloc_shared -> byte offset
  // Ops of the kernel before which the lowering waits for the thread's
  // asynchronous work on shared memory and synchronizes the block (or the
  // role): where a buffer starts using bytes that another buffer used
  // before it (see placeSharedReusing). Empty when no bytes are shared.
  llvm::SmallPtrSet<Operation *, 4> drainBefore;
  int64_t sharedBytes = 0;
  int64_t scratchOffset = 0, scratchBytes = 0;
  // Successive ops that stage through scratch take turns over
  // `scratchSlots` regions of `scratchSlotBytes` from `scratchBase` (see
  // GPUTargetInfo::scratchSlots); scratchOffset is the current op's.
  int64_t scratchBase = 0, scratchSlotBytes = 0, scratchSlots = 1,
          scratchTurn = 0;
  llvm::SmallPtrSet<Operation *, 8> scratchUsers;
  Value smem;                  // the dynamic shared memory (i8)
  bool usesAsyncProxy = false; // wgmma reads shared memory
  bool cpAsyncCopies = false;  // per-thread cp.async (tile.cp_async)

  // Warp specialization and TMA (set by NVVMKernelLowering, read by the
  // set-up and the driver: block size, kernel parameters, the launch).
  // Threads added for the producer (0: none) and the
  // role being lowered (its first thread, thread count and named barrier;
  // barrier 0 is the whole block).
  int64_t producerThreads = 0;
  SmallVector<int64_t> clusterDims; // blocks per cluster (empty: none)
  // Epilogue copies that go through the staging buffer and TMA stores
  // (see chooseTmaStores), the staging buffer's size and place.
  llvm::SmallDenseSet<Operation *> tmaStores;
  int64_t stagingBytes = 0, stagingOffset = 0;
  // Shared allocations that TMA reduce-adds read asynchronously (the
  // source tiles of T.atomic_add(..., use_tma=True)): an op that writes one
  // first waits for those reads (GPUTargetInfo::emitBulkReadWait).
  llvm::SmallDenseSet<Value> bulkReadSources;
  bool bulkReadsIssued = false; // a reduce-add was lowered (in program order)
  // Since the last reduce-add (in program order, within the block being
  // lowered) a barrier followed the issuer's wait for its reads: writes to
  // the source tiles need no wait of their own.
  bool bulkReadsSettled = false;
  bool bulkReadsMayBeInFlight(Operation *op) const;
  bool writesBulkReadSource(Operation *op) const;
  int64_t clusterBlocks() const {
    int64_t n = 1;
    for (int64_t d : clusterDims)
      n *= d;
    return n;
  }
  int64_t roleBase = 0, roleThreads = 0, roleBarrier = 0;
  DenseMap<Operation *, int64_t> roleBarriers; // tile.role -> named barrier
  bool setsRegisters = false; // roles change their budgets (setmaxnreg)
  // TMA: the tensor maps the kernel takes first (one per source tensor,
  // box and swizzle), and the map of each copy through a barrier.
  struct TensorMap {
    int64_t param;
    SmallVector<int64_t> box;
    int64_t swizzle;
  };
  SmallVector<TensorMap> tensorMaps;
  DenseMap<Operation *, int64_t> copyTensorMap;
  // Barrier allocations to initialize: (buffer, allocation).
  SmallVector<std::pair<Value, AllocBarrierOp>> barrierInits;
  bool alignBase = false;           // align the base of `smem` to 1 KB
  Value smemBase;                   // byte offset of that base (null: 0)
  SmallVector<Operation *> allocas; // fragment/local/var allocations
};

//===----------------------------------------------------------------------===//
// Checks before lowering (RoleChecks.cpp)
//===----------------------------------------------------------------------===//

/// The named barrier of each tile.role.
using RoleBarriers = DenseMap<Operation *, int64_t>;

/// Gives every tile.role of `kernel` a named barrier of its own: one per
/// range of threads, ids 1 to 15 that the program's T.sync_threads(id, n)
/// do not use. Fails, with the op's error, where a partial barrier names
/// its id at run time beside roles or the 15 ids are not enough.
FailureOr<RoleBarriers> planRoleBarriers(KernelOp kernel);

/// Refuses the role and barrier programs `target` cannot run: roles of
/// tile operations without named barriers, tile operations in roles that
/// are not whole warps, barriers waited on that nothing arrives on or whose
/// arrival count the arriving roles cannot add up to, register budgets
/// (T.set_max_nreg) changed against their direction or beyond the
/// register file.
LogicalResult verifyRoles(KernelOp kernel, const GPUTargetInfo &target);

/// Scratch needed by an op lowered through shared memory, in bytes.
int64_t scratchNeed(Operation *op, int64_t numThreads, int64_t warpSize);

/// float64 exp, exp2, log, log2, log10, sin, cos, tanh and pow of every
/// float type in software (MathF64.cpp: GPUs link no device math library).
void populateF64MathPatterns(RewritePatternSet &patterns);

/// Rewrites math ops of `func` on f16/bf16/f32 into the target's
/// approximate intrinsics, float64 ones into software (MathF64.cpp).
LogicalResult lowerMathToIntrinsics(gpu::GPUFuncOp func,
                                    const GPUTargetInfo &target);

} // namespace tile
} // namespace mlir

#endif // TILE_CONVERSION_TILETOGPU_KERNELLOWERING_H
