//===- TileToNVVM.cpp - lower tile programs to NVIDIA GPU kernels ---------===//
//
// Part of tilelang-mlir.
//
// Every tile.kernel becomes a gpu.func; its body is re-emitted op by op as
// per-thread code (a "lowering clone"): tile ops expand into loops over the
// registers a thread owns, ldmatrix/mma.sync, cp.async, shuffles and shared
// memory; ops of other dialects are cloned, their nested regions lowered the
// same way. The layouts and swizzles come from tile-layout-inference.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToNVVM/TileToNVVM.h"

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Utils/ConversionUtils.h"
#include "dialects/Tile/Utils/LayoutUtils.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>

#define DEBUG_TYPE "convert-tile-to-nvvm"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_CONVERTTILETONVVM
#define GEN_PASS_DEF_CONVERTTILETOROCDL
#define GEN_PASS_DEF_TILEFINALIZEKERNELPARAMS
#include "dialects/Conversion/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

namespace {

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

Value cIdx(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value zeroOf(OpBuilder &b, Location loc, Type type) {
  return arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type));
}

int64_t elementBytes(Type t) {
  return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}

/// Same conversion rules as the CPU backend (the reference).
Value convertScalar(OpBuilder &b, Location loc, Value v, Type to) {
  return convertElements(b, loc, v, to);
}

Value andOf(OpBuilder &b, Location loc, Value x, Value y) {
  if (!x)
    return y;
  if (!y)
    return x;
  return arith::AndIOp::create(b, loc, x, y);
}

/// Runs `fn` under `cond` (always when null).
void guarded(OpBuilder &b, Location loc, Value cond,
             function_ref<void(OpBuilder &)> fn) {
  if (!cond) {
    fn(b);
    return;
  }
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder inner = OpBuilder::atBlockTerminator(ifOp.thenBlock());
  fn(inner);
}

/// The largest power of two dividing the value (statically known), capped.
/// The most dynamic shared memory one block may opt in to on `chip` (CUDA
/// programming guide, compute capabilities table).
int64_t maxSharedBytesPerBlock(StringRef chip) {
  if (chip.starts_with("sm_90") || chip.starts_with("sm_100") ||
      chip.starts_with("sm_103"))
    return 227 * 1024;
  if (chip.starts_with("sm_80") || chip.starts_with("sm_87"))
    return 163 * 1024;
  return 99 * 1024; // sm_86, sm_89, sm_120
}

/// The local data share one workgroup may use on an AMD `chip`.
int64_t maxLdsBytesPerWorkgroup(StringRef chip) {
  return chip.starts_with("gfx950") ? 160 * 1024 : 64 * 1024;
}

SmallVector<int64_t> squeeze(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> out;
  for (int64_t d : shape)
    if (d != 1)
      out.push_back(d);
  return out;
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

enum class Kind { Global, Shared, Fragment, Local, Var };

/// How a tile buffer of the source program is reached in the kernel.
struct Buffer {
  Kind kind;
  Value memref;            // kernel argument, flat shared view, or alloca
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
  KernelLowering(KernelOp kernel, func::FuncOp func, Attribute target,
                 bool amd = false, bool tmaStore = false)
      : kernel(kernel), func(func), target(target), loc(kernel.getLoc()),
        numThreads(kernel.getNumThreads()), amd(amd),
        warpSize(amd ? 64 : 32), tmaStore(tmaStore) {}

  LogicalResult run();

private:
  // Setup.
  LogicalResult outline();
  LogicalResult planSharedMemory(OpBuilder &b);
  int64_t placeShared(DenseMap<Value, int64_t> *offsets);
  int64_t kernelScratchNeed();
  LogicalResult allocateBuffers(OpBuilder &b);
  void setupBlockIndices(OpBuilder &b);

  // The lowering clone.
  LogicalResult lowerBlock(Block &src, OpBuilder &b, IRMapping &map,
                           Context &ctx);
  LogicalResult lowerOp(Operation *op, OpBuilder &b, IRMapping &map,
                        Context &ctx);
  LogicalResult cloneWithRegions(Operation *op, OpBuilder &b, IRMapping &map,
                                 Context &ctx);

  // Buffers and element access.
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
  SmallVector<Value> wgmmaAccumulators(OpBuilder &b, const Buffer &c,
                                       int64_t mTiles, int64_t regsPerTile,
                                       Type acc, bool clear);
  void storeWgmmaAccumulators(OpBuilder &b, const Buffer &c,
                              ArrayRef<Value> accs, int64_t regsPerTile);
  LogicalResult lowerAccess(Operation *op, OpBuilder &b, IRMapping &map,
                            Context &ctx);
  std::optional<int64_t> fragmentRegister(const Buffer &frag,
                                          ArrayRef<IndexMap> maps,
                                          const Context &ctx);
  Value isThreadZero(OpBuilder &b);
  Value sideEffectGuard(OpBuilder &b, const Context &ctx);

  // Tile ops.
  LogicalResult lowerParallel(ParallelOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerCopy(CopyOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerFill(FillOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerGemm(GemmOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerReduce(ReduceOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerCumSum(CumSumOp op, OpBuilder &b, IRMapping &map);
  bool pairedAtomicAdd(const Buffer &src, const Buffer &dst,
                       ArrayRef<Value> offsets);
  Value globalElementPtr(OpBuilder &b, const Buffer &buf, ArrayRef<Value> idx);
  LogicalResult lowerAtomicAdd(AtomicAddOp op, OpBuilder &b, IRMapping &map,
                               Context &ctx);
  LogicalResult lowerPrint(PrintOp op, OpBuilder &b, IRMapping &map,
                           Context &ctx);
  LogicalResult lowerDeviceAssert(DeviceAssertOp op, OpBuilder &b,
                                  IRMapping &map);
  Value gpuModuleString(OpBuilder &b, StringRef prefix, StringRef value);
  Value gridDim(OpBuilder &b, int d);

  // Copies.
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
           !(dst.logicalType().isInteger(1) &&
             !src.logicalType().isInteger(1));
  }
  FailureOr<Side> sideOf(Value buffer, ValueRange offsets,
                         ArrayRef<int64_t> sizes, OpBuilder &b,
                         IRMapping &map);
  SmallVector<Value> sideIndex(OpBuilder &b, const Side &s,
                               ArrayRef<Value> squeezed);
  void copyMemoryToMemory(OpBuilder &b, const Side &src, const Side &dst,
                          bool async);
  void copyFragmentMemory(OpBuilder &b, const Side &frag, const Side &mem,
                          bool toMemory);
  void copyThroughScratch(OpBuilder &b, const Side &src, const Side &dst);
  void copyPerThread(OpBuilder &b, const Side &src, const Side &dst);
  Side scratchSide(OpBuilder &b, ArrayRef<int64_t> shape, Type elementType);
  Buffer scratchBuffer(OpBuilder &b, ArrayRef<int64_t> shape, Type type);
  /// Per-thread storage (promoted to registers); AMD wants it in the
  /// private address space. Always at the top of the kernel: LLVM promotes
  /// only allocas of the entry block, and one emitted where a reduction
  /// runs (after scf-to-cf, some later block) stays a stack object (AMDGPU
  /// scratch) and would grow the stack per iteration inside a loop.
  Value privateAlloca(OpBuilder &b, ArrayRef<int64_t> shape, Type type) {
    Attribute space;
    if (amd)
      space = gpu::AddressSpaceAttr::get(b.getContext(),
                                         gpu::AddressSpace::Private);
    OpBuilder entry = OpBuilder::atBlockBegin(&gpuFunc.getBody().front());
    return memref::AllocaOp::create(
        entry, loc,
        MemRefType::get(shape, type, MemRefLayoutAttrInterface(), space));
  }
  void barrier(OpBuilder &b) {
    if (roleBarrier == 0) {
      gpu::BarrierOp::create(b, loc);
      return;
    }
    auto i32 = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
    };
    NVVM::BarrierOp::create(b, loc, Type(), i32(roleBarrier), i32(roleThreads),
                            NVVM::BarrierReductionAttr(), Value());
  }
  LogicalResult collectTensorMaps();
  void chooseTmaStores();
  LogicalResult lowerTmaStore(CopyOp op, OpBuilder &b, IRMapping &map);
  Value sharedPtr(OpBuilder &b, Value memref, Value byteOffset);
  Value barrierPtr(OpBuilder &b, Value barriers, Value index, IRMapping &map);
  Value isRoleLeader(OpBuilder &b);
  LogicalResult lowerWarpSpecialize(WarpSpecializeOp op, OpBuilder &b,
                                    IRMapping &map, Context &ctx);
  LogicalResult lowerTmaCopy(CopyOp op, OpBuilder &b, IRMapping &map);
  void proxyFence(OpBuilder &b) {
    NVVM::FenceProxyOp::create(b, loc, NVVM::ProxyKind::async_shared,
                               NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
  }
  /// The byte offset `offset` from the (aligned) base of shared memory.
  Value smemAt(OpBuilder &b, int64_t offset) {
    return smemBase ? arith::AddIOp::create(b, loc, smemBase,
                                            cIdx(b, loc, offset)).getResult()
                    : cIdx(b, loc, offset);
  }

  // Gemm helpers.
  LogicalResult gemmMma(GemmOp op, OpBuilder &b, const Buffer &a,
                        const Buffer &bb, const Buffer &c,
                        ArrayRef<int64_t> aRegs = {});
  void gemmSimt(GemmOp op, OpBuilder &b, const Buffer &a, const Buffer &bb,
                const Buffer &c);
  LogicalResult gemmWgmma(GemmOp op, OpBuilder &b, const Buffer &a,
                          const Buffer &bb, const Buffer &c,
                          ArrayRef<int64_t> aRegs = {});
  Value wgmmaRegisterA(OpBuilder &b, Value acc, ArrayRef<Value> aRegs,
                       Value descB, int64_t n, Type elem, bool transB,
                       bool zeroAcc);
  LogicalResult gemmMfma(GemmOp op, OpBuilder &b, const Buffer &a,
                         const Buffer &bb, const Buffer &c);
  /// A descriptor, and the element offset it starts at (see
  /// wgmmaDescriptor).
  struct WgmmaDesc {
    Value desc, elems;
  };
  WgmmaDesc wgmmaDescriptor(OpBuilder &b, const Buffer &buf, bool kMajor,
                            Value row, Value col,
                            const WgmmaDesc *from = nullptr);
  bool takesTurns(GemmOp op);
  Value ldmatrixA16(OpBuilder &b, const Buffer &a, Value m0, Value k0);
  Value ldmatrixB16(OpBuilder &b, const Buffer &bb, bool tb, Value k0,
                    Value n0, int64_t kRows);
  LogicalResult lowerGemmSp(GemmSpOp op, OpBuilder &b, IRMapping &map);
  Value gemmSpMetadata(OpBuilder &b, const Buffer &e, Value row0, int64_t k0,
                       bool pair);
  LogicalResult gemmSpMma(GemmSpOp op, OpBuilder &b, const Buffer &a,
                          const Buffer &e, const Buffer &bb, const Buffer &c);
  LogicalResult gemmSpWgmma(GemmSpOp op, OpBuilder &b, const Buffer &a,
                            const Buffer &e, const Buffer &bb,
                            const Buffer &c);
  /// Named barrier `kTurnBarrier + w` orders the gemms of consumer
  /// warpgroup w after those of warpgroup w - 1 (ids 1 and 2 are the roles').
  static constexpr int64_t kTurnBarrier = 3;
  /// Syncs on (or arrives at) the turn barrier of warpgroup (w + shift) mod
  /// n in consumer warpgroup w. The id is computed (as CUTLASS's named
  /// barriers do): a branch per warpgroup would split the basic block and
  /// keep instruction selection from pairing conversions around it.
  void turnBarrier(OpBuilder &b, int64_t shift, bool arrive) {
    int64_t groups = numThreads / 128;
    Value wg = arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, 128));
    Value group = arith::RemUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, wg, cIdx(b, loc, shift)),
        cIdx(b, loc, groups));
    Value id = arith::IndexCastUIOp::create(
        b, loc, b.getI32Type(),
        arith::AddIOp::create(b, loc, group, cIdx(b, loc, kTurnBarrier)));
    Value count = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 256);
    if (arrive)
      NVVM::BarrierArriveOp::create(b, loc, id, count);
    else
      NVVM::BarrierOp::create(b, loc, Type(), id, count,
                              NVVM::BarrierReductionAttr(), Value());
  }
  FailureOr<Buffer> stageOperand(OpBuilder &b, const Buffer &buf);

  KernelOp kernel;
  func::FuncOp func;
  Attribute target;
  Location loc;
  int64_t numThreads;
  // AMD (ROCDL): wave64, no asynchronous copies, MFMA instead of mma.sync.
  bool amd;
  int64_t warpSize;

  gpu::GPUModuleOp gpuModule;
  gpu::GPUFuncOp gpuFunc;
  IRMapping outer; // host values -> kernel values
  Value tid;
  SmallVector<Value> blockIndices;
  DenseMap<Value, Buffer> buffers; // original buffer values -> buffers
  DenseMap<Value, int64_t> sharedOffsets; // alloc_shared -> byte offset
  int64_t sharedBytes = 0;
  int64_t scratchOffset = 0, scratchBytes = 0;
  Value smem;                      // the dynamic shared memory (i8)
  bool usesAsyncProxy = false;     // wgmma reads shared memory

  // Warp specialization: threads added for the producer (0: none) and the
  // role being lowered (its first thread, thread count and named barrier;
  // barrier 0 is the whole block).
  int64_t producerThreads = 0;
  SmallVector<int64_t> clusterDims; // blocks per cluster (empty: none)
  // Epilogue copies that go through the staging buffer and TMA stores
  // (see chooseTmaStores), the staging buffer's size and place.
  bool tmaStore = false;
  llvm::SmallDenseSet<Operation *> tmaStores;
  int64_t stagingBytes = 0, stagingOffset = 0;
  int64_t clusterBlocks() const {
    int64_t n = 1;
    for (int64_t d : clusterDims)
      n *= d;
    return n;
  }
  void clusterSync(OpBuilder &b) {
    NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
  }
  int64_t roleBase = 0, roleThreads = 0, roleBarrier = 0;
  // TMA: the tensor maps the kernel takes first (one per source tensor,
  // box and swizzle), and the map of each copy through a barrier.
  struct TensorMap {
    int64_t param;
    SmallVector<int64_t> box;
    int64_t swizzle;
  };
  SmallVector<TensorMap> tensorMaps;
  void useTensorMap(CopyOp copy, const TensorMap &m);
  DenseMap<Operation *, int64_t> copyTensorMap;
  // Barrier allocations to initialize: (buffer, arrivals).
  SmallVector<std::pair<Value, int64_t>> barrierInits;
  bool alignBase = false;          // align the base of `smem` to 1 KB
  Value smemBase;                  // byte offset of that base (null: 0)
  SmallVector<Operation *> allocas; // fragment/local/var allocations
};

//===----------------------------------------------------------------------===//
// Setup
//===----------------------------------------------------------------------===//

static std::optional<SmallVector<int64_t>>
registerOperandA(GemmOp op, const TileLayout &layout, int64_t threads);

/// The layout of a fragment allocation (none for other buffers, or before
/// layout inference).
std::optional<TileLayout> fragmentLayout(Value v) {
  auto alloc = v.getDefiningOp<AllocFragmentOp>();
  if (!alloc || !alloc.getLayoutAttr())
    return std::nullopt;
  FailureOr<TileLayout> l =
      TileLayout::fromAttr(alloc.getLayoutAttr(), alloc.getType().getShape());
  if (failed(l))
    return std::nullopt;
  return *l;
}

/// Scratch needed by an op lowered through shared memory, in bytes. What
/// the lowering does in registers (copies between fragments of one layout,
/// register A operands, reductions within a warp into their natural
/// layout) needs none.
int64_t scratchNeed(Operation *op, int64_t numThreads, int64_t warpSize) {
  auto bytesOf = [](MemRefType t) {
    return t.hasStaticShape() ? t.getNumElements() *
                                    std::max<int64_t>(1, t.getElementTypeBitWidth() / 8)
                              : 0;
  };
  auto isFragment = [](Type t) { return isInScope(t, MemoryScope::fragment); };
  auto isPerThread = [](Type t) {
    return isInScope(t, MemoryScope::local) || isInScope(t, MemoryScope::var);
  };
  if (auto copy = dyn_cast<CopyOp>(op)) {
    Type s = copy.getSrc().getType(), d = copy.getDst().getType();
    bool staged = (isFragment(s) && (isFragment(d) || isPerThread(d))) ||
                  (isFragment(d) && isPerThread(s));
    if (!staged)
      return 0;
    std::optional<TileLayout> ls = fragmentLayout(copy.getSrc()),
                              ld = fragmentLayout(copy.getDst());
    if (ls && ld && *ls == *ld &&
        copy.getSrcSizes() == cast<MemRefType>(s).getShape() &&
        copy.getDstSizes() == cast<MemRefType>(d).getShape())
      return 0;
    int64_t elems = 1;
    for (int64_t e : copy.getSrcSizes())
      elems *= e;
    return elems * std::max<int64_t>(1, copy.getDst().getType().getElementTypeBitWidth() / 8);
  }
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    int64_t need = 0;
    std::optional<TileLayout> la = fragmentLayout(gemm.getA());
    bool registerA = la && isInScope(gemm.getB().getType(), MemoryScope::shared) &&
                     registerOperandA(gemm, *la, numThreads);
    if (isFragment(gemm.getA().getType()) && !registerA)
      need += llvm::alignTo(bytesOf(gemm.getA().getType()), 128);
    if (isFragment(gemm.getB().getType()))
      need += bytesOf(gemm.getB().getType());
    return need;
  }
  if (auto r = dyn_cast<ReduceOp>(op)) {
    MemRefType dst = r.getDst().getType();
    int64_t accBytes = std::max<int64_t>(4, dst.getElementTypeBitWidth() / 8);
    std::optional<TileLayout> ls = fragmentLayout(r.getSrc()),
                              ld = fragmentLayout(r.getDst());
    if (ls && ld) { // as lowerReduce: warps combine, then a conversion
      int64_t dim = r.getDim();
      TileLayout natural = ls->dropDim(dim);
      if (dst.getRank() == r.getSrc().getType().getRank())
        natural = natural.insertUnitDim(dim);
      else if (dst.getRank() == 1 && natural.getShape().empty())
        natural = natural.insertUnitDim(0);
      int64_t ways = 1;
      for (const LayoutDigit &d : ls->getDigits()) {
        if (!d.onThread || d.dim != dim || d.stride * d.size <= warpSize)
          continue;
        ways *= d.stride >= warpSize ? d.size : d.size / (warpSize / d.stride);
      }
      int64_t need = ways > 1 ? ways * dst.getNumElements() * accBytes : 0;
      if (natural != *ld)
        need = std::max(need, bytesOf(dst));
      return need;
    }
    return std::max(dst.getNumElements() * accBytes * std::max<int64_t>(1, numThreads / 32 /* any warp size >= 32 */),
                    2 * bytesOf(dst));
  }
  if (auto c = dyn_cast<CumSumOp>(op))
    if (isFragment(c.getSrc().getType()) || isFragment(c.getDst().getType()))
      return bytesOf(c.getDst().getType());
  if (auto p = dyn_cast<PrintOp>(op))
    if (auto t = dyn_cast<MemRefType>(p.getValue().getType()))
      if (isFragment(t))
        return bytesOf(t);
  return 0;
}

/// Places the barriers (first, 8 bytes each) and the shared allocations (in
/// order, 128-byte aligned, 1 KB when swizzled); returns where they end.
/// With `offsets`, records each one's byte offset there.
int64_t KernelLowering::placeShared(DenseMap<Value, int64_t> *offsets) {
  int64_t offset = 0;
  kernel.walk([&](AllocBarrierOp alloc) {
    if (offsets)
      (*offsets)[alloc.getResult()] = offset;
    offset += alloc.getType().getNumElements() * 8;
  });
  kernel.walk([&](AllocSharedOp alloc) {
    MemRefType type = alloc.getType();
    SwizzleAttr s = alloc.getSwizzleAttr();
    offset = llvm::alignTo(offset, s && s.getBytes() > 0 ? 1024 : 128);
    if (offsets)
      (*offsets)[alloc.getResult()] = offset;
    offset += type.getNumElements() * elementBytes(type.getElementType());
  });
  return offset;
}

/// The scratch shared memory the kernel's ops need at most.
int64_t KernelLowering::kernelScratchNeed() {
  int64_t need = 0;
  kernel.walk([&](Operation *op) {
    need = std::max(need, scratchNeed(op, numThreads, warpSize));
  });
  return need;
}

LogicalResult KernelLowering::planSharedMemory(OpBuilder &b) {
  WalkResult result = kernel.walk([&](AllocSharedOp alloc) -> WalkResult {
    MemRefType type = alloc.getType();
    // Padded rows would change every shared address computation (copies,
    // ldmatrix, MFMA operand gathers, the fill of a whole buffer): refuse
    // them rather than place the buffer densely behind the user's back.
    if (SwizzleAttr s = alloc.getSwizzleAttr(); s && s.getPad() > 0)
      return alloc.emitOpError("shared buffer ")
             << type << " asks for " << s.getPad()
             << " elements of padding per row (" << s
             << "), which GPU targets do not implement; drop "
                "T.make_padded_layout for this buffer (layout inference "
                "picks a swizzle against bank conflicts)";
    if (SwizzleAttr s = alloc.getSwizzleAttr(); s && s.getBytes() > 0)
      alignBase = true;
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  int64_t offset = placeShared(&sharedOffsets);
  if (!tmaStores.empty()) {
    offset = llvm::alignTo(offset, 1024);
    stagingOffset = offset;
    offset += stagingBytes;
    alignBase = true;
  }
  scratchBytes = kernelScratchNeed();
  scratchOffset = llvm::alignTo(offset, 128);
  sharedBytes = scratchOffset + scratchBytes;
  // 128-byte swizzles are defined on address bits up to 1 KB: the base is
  // aligned at run time, with up to 1 KB more memory.
  if (alignBase)
    sharedBytes += 1024;
  StringRef chip = amd ? cast<ROCDL::ROCDLTargetAttr>(target).getChip()
                       : cast<NVVM::NVVMTargetAttr>(target).getChip();
  int64_t limit = amd ? maxLdsBytesPerWorkgroup(chip)
                      : maxSharedBytesPerBlock(chip);
  if (sharedBytes > limit)
    return kernel.emitOpError("needs ")
           << sharedBytes << " bytes of shared memory (" << offset
           << " for its shared buffers, " << scratchBytes << " of scratch"
           << (alignBase ? ", 1024 to align swizzled buffers" : "")
           << "), more than the " << limit / 1024 << " KB a block can have on "
           << chip;
  return success();
}

LogicalResult KernelLowering::outline() {
  MLIRContext *ctx = kernel.getContext();
  auto module = func->getParentOfType<ModuleOp>();
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(ctx));
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  std::string name = (func.getName() + "_kernel").str();
  gpuModule = gpu::GPUModuleOp::create(b, loc, name,
                                       ArrayAttr::get(ctx, {target}));
  b.setInsertionPointToStart(gpuModule.getBody());
  FunctionType type = func.getFunctionType();
  // Tensor maps come first (by value, see tile-finalize-kernel-params).
  SmallVector<Type> inputs(tensorMaps.size(), LLVM::LLVMPointerType::get(ctx));
  llvm::append_range(inputs, type.getInputs());
  gpuFunc = gpu::GPUFuncOp::create(b, loc, name,
                                   FunctionType::get(ctx, inputs, {}));
  gpuFunc->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
  SmallVector<int32_t> block;
  for (int64_t t : kernel.getThreads())
    block.push_back(t);
  block[0] += producerThreads;
  while (block.size() < 3)
    block.push_back(1);
  gpuFunc.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(block));
  if (producerThreads) // a register cap at entry, for setmaxnreg
    gpuFunc->setAttr("nvvm.minctasm", b.getI32IntegerAttr(1));
  if (!clusterDims.empty()) {
    SmallVector<int32_t> dims(clusterDims.begin(), clusterDims.end());
    gpuFunc->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                     b.getDenseI32ArrayAttr(dims));
  }
  if (!tensorMaps.empty())
    gpuFunc->setAttr("tile.tensormap_args",
                     b.getI64IntegerAttr(tensorMaps.size()));
  Block &entry = gpuFunc.getBody().front();
  for (auto [host, dev] :
       llvm::zip(func.getArguments(),
                 entry.getArguments().drop_front(tensorMaps.size())))
    outer.map(host, dev);
  return success();
}

/// The number of blocks of the grid along dimension `d` (0, 1, 2). On AMD,
/// MLIR's ROCDL lowering of gpu.grid_dim calls the device library
/// (__ockl_get_num_groups), which is not linked: the HSA dispatch packet
/// holds the grid in work-items (u32 grid_size_x/y/z at bytes 12/16/20), a
/// multiple of the block size, which is static here.
Value KernelLowering::gridDim(OpBuilder &b, int d) {
  gpu::Dimension dims[] = {gpu::Dimension::x, gpu::Dimension::y,
                           gpu::Dimension::z};
  if (!amd)
    return gpu::GridDimOp::create(b, loc, dims[d]);
  auto constant = LLVM::LLVMPointerType::get(b.getContext(), 4);
  Value packet = LLVM::CallIntrinsicOp::create(
                     b, loc, constant,
                     b.getStringAttr("llvm.amdgcn.dispatch.ptr"), ValueRange{})
                     .getResult(0);
  Value field = LLVM::GEPOp::create(b, loc, constant, b.getI8Type(), packet,
                                    ArrayRef<LLVM::GEPArg>{12 + 4 * d});
  Value items = LLVM::LoadOp::create(b, loc, b.getI32Type(), field,
                                     /*alignment=*/4, /*isVolatile=*/false,
                                     /*isNonTemporal=*/false,
                                     /*isInvariant=*/true);
  ArrayRef<int64_t> threads = kernel.getThreads();
  int64_t block = d < static_cast<int>(threads.size()) ? threads[d] : 1;
  Value n = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), items);
  return block == 1 ? n
                    : arith::DivUIOp::create(b, loc, n, cIdx(b, loc, block))
                          .getResult();
}

void KernelLowering::setupBlockIndices(OpBuilder &b) {
  ArrayRef<int64_t> threads = kernel.getThreads();
  Value tx = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  tid = tx;
  if (threads.size() > 1) {
    Value ty = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::y);
    tid = arith::AddIOp::create(
        b, loc, tid, arith::MulIOp::create(b, loc, ty, cIdx(b, loc, threads[0])));
  }
  if (threads.size() > 2) {
    Value tz = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::z);
    tid = arith::AddIOp::create(
        b, loc, tid,
        arith::MulIOp::create(b, loc, tz,
                              cIdx(b, loc, threads[0] * threads[1])));
  }
  gpu::Dimension dims[] = {gpu::Dimension::x, gpu::Dimension::y,
                           gpu::Dimension::z};
  for (size_t i = 0; i < kernel.getGrid().size(); ++i)
    blockIndices.push_back(gpu::BlockIdOp::create(b, loc, dims[i]));
  // Threadblock rasterization (use_swizzle): blocks walk panels of `P` rows
  // (or columns), column by column (row by row) within a panel.
  UseSwizzleOp swizzle;
  kernel.walk([&](UseSwizzleOp op) { swizzle = op; });
  if (!swizzle || !swizzle.getEnable() || blockIndices.size() < 2)
    return;
  bool rowOrder = swizzle.getOrder() == RasterOrder::row;
  int64_t p = swizzle.getPanelSize();
  Value gx = gridDim(b, 0);
  Value gy = gridDim(b, 1);
  Value bx = blockIndices[0], by = blockIndices[1];
  // In clusters, the panels are walked cluster by cluster: the blocks of a
  // cluster keep consecutive indices along the cluster dimension and share
  // the other index (multicast copies depend on it alone). Warp
  // specialization clusters only along a grid dimension that the cluster
  // size divides.
  int64_t cx = clusterDims.size() > 0 ? clusterDims[0] : 1;
  int64_t cy = clusterDims.size() > 1 ? clusterDims[1] : 1;
  Value rankX, rankY;
  if (cx > 1) {
    rankX = arith::RemUIOp::create(b, loc, bx, cIdx(b, loc, cx));
    bx = arith::DivUIOp::create(b, loc, bx, cIdx(b, loc, cx));
    gx = arith::DivUIOp::create(b, loc, gx, cIdx(b, loc, cx));
  }
  if (cy > 1) {
    rankY = arith::RemUIOp::create(b, loc, by, cIdx(b, loc, cy));
    by = arith::DivUIOp::create(b, loc, by, cIdx(b, loc, cy));
    gy = arith::DivUIOp::create(b, loc, gy, cIdx(b, loc, cy));
  }
  Value major = rowOrder ? gy : gx, minor = rowOrder ? gx : gy;
  Value linear = rowOrder ? arith::AddIOp::create(
                                b, loc, bx, arith::MulIOp::create(b, loc, by, gx))
                          : arith::AddIOp::create(
                                b, loc, by, arith::MulIOp::create(b, loc, bx, gy));
  auto [majorIdx, minorIdx] = emitPanelRaster(b, loc, linear, major, minor, p);
  Value newX = rowOrder ? minorIdx : majorIdx;
  Value newY = rowOrder ? majorIdx : minorIdx;
  if (cx > 1)
    newX = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, newX, cIdx(b, loc, cx)), rankX);
  if (cy > 1)
    newY = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, newY, cIdx(b, loc, cy)), rankY);
  blockIndices[0] = newX;
  blockIndices[1] = newY;
}

LogicalResult KernelLowering::allocateBuffers(OpBuilder &b) {
  MLIRContext *ctx = kernel.getContext();
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  smem = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
  if (alignBase) {
    Value addr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, smem);
    Value mis = arith::RemUIOp::create(b, loc, addr, cIdx(b, loc, 1024));
    smemBase = arith::RemUIOp::create(
        b, loc, arith::SubIOp::create(b, loc, cIdx(b, loc, 1024), mis),
        cIdx(b, loc, 1024));
  }
  WalkResult result = kernel.walk([&](Operation *op) -> WalkResult {
    Buffer buf;
    Value result;
    if (auto alloc = dyn_cast<AllocSharedOp>(op)) {
      MemRefType type = alloc.getType();
      buf.kind = Kind::Shared;
      auto flat = MemRefType::get({type.getNumElements()},
                                  type.getElementType(),
                                  MemRefLayoutAttrInterface(), workgroup);
      buf.memref = memref::ViewOp::create(
          b, loc, flat, smem,
          smemAt(b, sharedOffsets.lookup(alloc.getResult())), ValueRange{});
      buf.allocShape.assign(type.getShape().begin(), type.getShape().end());
      buf.viewOffsets.assign(type.getRank(), Value());
      buf.viewDims = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
      if (SwizzleAttr s = alloc.getSwizzleAttr())
        buf.swizzle = s.getBytes();
      result = alloc.getResult();
    } else if (auto alloc = dyn_cast<AllocBarrierOp>(op)) {
      MemRefType type = alloc.getType();
      buf.kind = Kind::Shared;
      buf.memref = memref::ViewOp::create(
          b, loc,
          MemRefType::get({type.getNumElements()}, b.getI64Type(),
                          MemRefLayoutAttrInterface(), workgroup),
          smem, smemAt(b, sharedOffsets.lookup(alloc.getResult())),
          ValueRange{});
      buf.allocShape.assign(type.getShape().begin(), type.getShape().end());
      buf.viewOffsets.assign(1, Value());
      buf.viewDims = {0};
      barrierInits.push_back({buf.memref, alloc.getArrivals()});
      result = alloc.getResult();
    } else if (auto alloc = dyn_cast<AllocFragmentOp>(op)) {
      MemRefType type = alloc.getType();
      FragmentLayoutAttr attr = alloc.getLayoutAttr();
      if (!attr)
        return alloc.emitOpError("has no layout: run tile-layout-inference "
                                 "before convert-tile-to-nvvm");
      std::string why;
      FailureOr<TileLayout> layout =
          TileLayout::fromAttr(attr, type.getShape(), &why);
      if (failed(layout))
        return alloc.emitOpError("layout is not a digit structure: ") << why;
      buf.kind = Kind::Fragment;
      buf.layout = *layout;
      buf.memref = privateAlloca(b, {layout->getNumRegs()}, type.getElementType());
      result = alloc.getResult();
    } else if (auto alloc = dyn_cast<AllocLocalOp>(op)) {
      buf.kind = Kind::Local;
      buf.memref = privateAlloca(b, alloc.getType().getShape(),
                                 alloc.getType().getElementType());
      result = alloc.getResult();
    } else if (auto alloc = dyn_cast<AllocVarOp>(op)) {
      buf.kind = Kind::Var;
      buf.memref = privateAlloca(b, {}, alloc.getType().getElementType());
      result = alloc.getResult();
    } else {
      return WalkResult::advance();
    }
    auto type = cast<MemRefType>(result.getType());
    buf.shape.assign(type.getShape().begin(), type.getShape().end());
    buf.elementType = type.getElementType();
    buffers[result] = buf;
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// Buffers and element access
//===----------------------------------------------------------------------===//

FailureOr<Buffer> KernelLowering::bufferOf(Value v, OpBuilder &b,
                                           IRMapping &map) {
  auto it = buffers.find(v);
  if (it != buffers.end())
    return it->second;
  if (auto cast = v.getDefiningOp<memref::CastOp>())
    return bufferOf(cast.getSource(), b, map);
  if (auto sub = v.getDefiningOp<memref::SubViewOp>()) {
    FailureOr<Buffer> src = bufferOf(sub.getSource(), b, map);
    if (failed(src) || src->kind != Kind::Shared)
      return sub.emitOpError("views are only supported on shared buffers on "
                             "GPU targets"),
             failure();
    if (!llvm::all_of(sub.getStaticStrides(), [](int64_t s) { return s == 1; }))
      return sub.emitOpError("strided views are not supported"), failure();
    Buffer buf = *src;
    // Offsets move the origin; dropped unit dimensions disappear.
    SmallVector<OpFoldResult> offsets = sub.getMixedOffsets();
    for (auto [d, o] : llvm::enumerate(offsets)) {
      std::optional<int64_t> c = getConstantIntValue(o);
      if (c && *c == 0)
        continue;
      Value ov = c ? cIdx(b, loc, *c) : map.lookupOrDefault(cast<Value>(o));
      Value &origin = buf.viewOffsets[src->viewDims[d]];
      origin = origin ? arith::AddIOp::create(b, loc, origin, ov).getResult()
                      : ov;
    }
    auto resultType = sub.getType();
    llvm::SmallBitVector dropped = sub.getDroppedDims();
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < src->rank(); ++d)
      if (!dropped.test(d))
        dims.push_back(src->viewDims[d]);
    buf.viewDims = dims;
    buf.shape.assign(resultType.getShape().begin(), resultType.getShape().end());
    return buf;
  }
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner()->getParentOp() == func.getOperation()) {
      auto type = cast<MemRefType>(v.getType());
      Buffer buf;
      buf.kind = Kind::Global;
      buf.memref = outer.lookup(v);
      buf.shape.assign(type.getShape().begin(), type.getShape().end());
      buf.elementType = type.getElementType();
      return buf;
    }
  }
  return emitError(v.getLoc(), "cannot lower buffer ")
             << v << " for a GPU target: it must be a kernel argument or a "
             << "tile allocation",
         failure();
}

Value KernelLowering::sharedOffset(OpBuilder &b, const Buffer &buf,
                                   ArrayRef<Value> idx, bool stageOutside) {
  SmallVector<Value> at(buf.viewOffsets.begin(), buf.viewOffsets.end());
  for (auto [k, i] : llvm::enumerate(idx)) {
    Value &a = at[buf.viewDims[k]];
    a = a ? arith::AddIOp::create(b, loc, a, i).getResult() : i;
  }
  for (Value &a : at)
    if (!a)
      a = cIdx(b, loc, 0);
  return emitSharedOffset(b, loc, buf.allocShape, at,
                          elementBytes(buf.elementType), buf.swizzle,
                          /*applySwizzle=*/true, stageOutside);
}

int64_t KernelLowering::sharedInnerAlignment(const Buffer &buf,
                                             Value innerOffset) {
  int64_t rank = buf.allocShape.size();
  if (buf.viewDims.empty() || buf.viewDims.back() != rank - 1)
    return 1;
  int64_t a = knownDivisor(innerOffset);
  if (Value o = buf.viewOffsets.back())
    a = std::min(a, knownDivisor(o));
  int64_t cols = buf.allocShape.back();
  int64_t span = sharedPanelElements(buf.allocShape,
                                     elementBytes(buf.elementType),
                                     buf.swizzle);
  return std::min(a, span ? span : (cols & -cols));
}

Value KernelLowering::loadElement(OpBuilder &b, const Buffer &buf,
                                  ArrayRef<Value> idx) {
  if (buf.kind == Kind::Shared) // (stage outside the swizzle: see loadVector)
    return memref::LoadOp::create(
        b, loc, buf.memref,
        ValueRange{sharedOffset(b, buf, idx, /*stageOutside=*/!amd)});
  return memref::LoadOp::create(b, loc, buf.memref, idx);
}

void KernelLowering::storeElement(OpBuilder &b, const Buffer &buf,
                                  ArrayRef<Value> idx, Value v) {
  if (buf.kind == Kind::Shared) {
    memref::StoreOp::create(b, loc, v, buf.memref,
                            ValueRange{sharedOffset(b, buf, idx)});
    return;
  }
  memref::StoreOp::create(b, loc, v, buf.memref, idx);
}

Value KernelLowering::loadVector(OpBuilder &b, const Buffer &buf,
                                 ArrayRef<Value> idx, int64_t width) {
  auto type = VectorType::get({width}, buf.elementType);
  if (width == 1) {
    Value e = loadElement(b, buf, idx);
    return vector::FromElementsOp::create(b, loc, type, ValueRange{e});
  }
  int64_t align = width * elementBytes(buf.elementType);
  // Loads from a staged buffer into registers (a warp-specialized
  // consumer's copy, the decode GEMM's words and scales) swizzle only
  // within a stage; the gemm operand paths (ldmatrix) and AMD keep the
  // stage inside, where the hoisted offsets cost registers that sm_80
  // attention kernels and gfx950's wave64 kernels lack.
  if (buf.kind == Kind::Shared)
    return vector::LoadOp::create(
        b, loc, type, buf.memref,
        ValueRange{sharedOffset(b, buf, idx, /*stageOutside=*/!amd)},
        /*nontemporal=*/false, llvm::MaybeAlign(align));
  return vector::LoadOp::create(b, loc, type, buf.memref, idx, false,
                                llvm::MaybeAlign(align));
}

void KernelLowering::storeVector(OpBuilder &b, const Buffer &buf,
                                 ArrayRef<Value> idx, Value v) {
  auto type = cast<VectorType>(v.getType());
  int64_t width = type.getNumElements();
  if (width == 1) {
    storeElement(b, buf, idx,
                 vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{0}));
    return;
  }
  int64_t align = width * elementBytes(buf.elementType);
  if (buf.kind == Kind::Shared) {
    vector::StoreOp::create(b, loc, v, buf.memref,
                            ValueRange{sharedOffset(b, buf, idx)}, false,
                            llvm::MaybeAlign(align));
    return;
  }
  vector::StoreOp::create(b, loc, v, buf.memref, idx, false,
                          llvm::MaybeAlign(align));
}

/// An i1 that holds when `idx` lies inside `buf` (null: statically true).
/// Dimensions in `skip` are known to be in range.
Value KernelLowering::inBounds(OpBuilder &b, const Buffer &buf,
                               ArrayRef<Value> idx, ArrayRef<int64_t> skip) {
  Value cond;
  for (auto [d, i] : llvm::enumerate(idx)) {
    if (llvm::is_contained(skip, (int64_t)d))
      continue;
    int64_t extent = buf.shape[d];
    Value bound;
    APInt c;
    if (!ShapedType::isDynamic(extent)) {
      if (matchPattern(i, m_ConstantInt(&c)) && c.getSExtValue() >= 0 &&
          c.getSExtValue() < extent)
        continue;
      bound = cIdx(b, loc, extent);
    } else {
      bound = memref::DimOp::create(b, loc, buf.memref, d);
    }
    cond = andOf(b, loc, cond,
                 arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i,
                                       bound));
  }
  return cond;
}

/// The accumulator of a wgmma gemm as one LLVM struct per 64-row tile
/// (`regsPerTile` members of type `acc`, the registers of `c` in order). A
/// cleared accumulator is not read: the first K step ignores it (scale-d =
/// 0), so its registers are left undefined instead of zeroed.
SmallVector<Value> KernelLowering::wgmmaAccumulators(OpBuilder &b,
                                                     const Buffer &c,
                                                     int64_t mTiles,
                                                     int64_t regsPerTile,
                                                     Type acc, bool clear) {
  SmallVector<Type> members(regsPerTile, acc);
  auto structType = LLVM::LLVMStructType::getLiteral(b.getContext(), members);
  SmallVector<Value> accs;
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    Value st = LLVM::UndefOp::create(b, loc, structType);
    if (!clear)
      for (int64_t i = 0; i < regsPerTile; ++i)
        st = LLVM::InsertValueOp::create(
            b, loc, st, regLoad(b, c, mt * regsPerTile + i), i);
    accs.push_back(st);
  }
  return accs;
}

/// Writes the structs of `wgmmaAccumulators` back into the registers of `c`.
void KernelLowering::storeWgmmaAccumulators(OpBuilder &b, const Buffer &c,
                                            ArrayRef<Value> accs,
                                            int64_t regsPerTile) {
  for (auto [mt, st] : llvm::enumerate(accs))
    for (int64_t i = 0; i < regsPerTile; ++i)
      regStore(b, c, mt * regsPerTile + i,
               LLVM::ExtractValueOp::create(b, loc, st, i));
}

Value KernelLowering::regLoad(OpBuilder &b, const Buffer &frag, int64_t reg) {
  return memref::LoadOp::create(b, loc, frag.memref,
                                ValueRange{cIdx(b, loc, reg)});
}

void KernelLowering::regStore(OpBuilder &b, const Buffer &frag, int64_t reg,
                              Value v) {
  memref::StoreOp::create(b, loc, v, frag.memref, ValueRange{cIdx(b, loc, reg)});
}

Value KernelLowering::isThreadZero(OpBuilder &b) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                               cIdx(b, loc, roleBase));
}

Value KernelLowering::isRoleLeader(OpBuilder &b) { return isThreadZero(b); }

/// A !llvm.ptr<3> to byte `byteOffset` of the shared memref `memref`.
Value KernelLowering::sharedPtr(OpBuilder &b, Value memref, Value byteOffset) {
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value addr = byteOffset ? arith::AddIOp::create(b, loc, base, byteOffset)
                                .getResult()
                          : base;
  Value i64 = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), addr);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), i64);
}

Value KernelLowering::barrierPtr(OpBuilder &b, Value barriers, Value index,
                                 IRMapping &map) {
  FailureOr<Buffer> buf = bufferOf(barriers, b, map);
  Value off = arith::MulIOp::create(b, loc, map.lookupOrDefault(index),
                                    cIdx(b, loc, 8));
  return sharedPtr(b, buf->memref, off);
}

/// The condition under which a side effect on global or shared memory
/// happens: one thread at block level, the leader copy in a parallel loop.
Value KernelLowering::sideEffectGuard(OpBuilder &b, const Context &ctx) {
  if (!ctx.inParallel())
    return isThreadZero(b);
  return ctx.leader;
}

/// The register of `frag` holding the element this parallel instance
/// accesses through the index maps `maps`, if it is the same in every thread.
std::optional<int64_t>
KernelLowering::fragmentRegister(const Buffer &frag, ArrayRef<IndexMap> maps,
                                 const Context &ctx) {
  std::optional<int64_t> reg;
  for (int64_t t = 0; t < numThreads; ++t) {
    SmallVector<int64_t> idx = ctx.loopLayout->inverse(t, ctx.reg);
    if (!ctx.loopLayout->inBounds(idx))
      continue;
    SmallVector<int64_t> fidx;
    for (const IndexMap &m : maps)
      fidx.push_back(m.evaluate(idx));
    std::optional<int64_t> r = frag.layout->registerOf(fidx, t);
    if (!r || (reg && *reg != *r))
      return std::nullopt;
    reg = r;
  }
  return reg ? reg : std::optional<int64_t>(0);
}

/// memref.load / memref.store on tile buffers.
LogicalResult KernelLowering::lowerAccess(Operation *op, OpBuilder &b,
                                          IRMapping &map, Context &ctx) {
  bool isLoad = isa<memref::LoadOp>(op);
  if (ctx.preloaded && isLoad) {
    auto it = ctx.preloaded->find(op);
    if (it != ctx.preloaded->end()) {
      map.map(op->getResult(0),
              vector::ExtractOp::create(b, loc, it->second,
                                        ArrayRef<int64_t>{ctx.lane}));
      return success();
    }
  }
  if (ctx.pendingStores && !isLoad) {
    auto it = ctx.pendingStores->find(op);
    if (it != ctx.pendingStores->end()) {
      it->second.push_back(
          map.lookupOrDefault(cast<memref::StoreOp>(op).getValue()));
      return success();
    }
  }
  Value memref = isLoad ? cast<memref::LoadOp>(op).getMemRef()
                        : cast<memref::StoreOp>(op).getMemRef();
  ValueRange indices = isLoad ? cast<memref::LoadOp>(op).getIndices()
                              : cast<memref::StoreOp>(op).getIndices();
  FailureOr<Buffer> buf = bufferOf(memref, b, map);
  if (failed(buf))
    return failure();
  SmallVector<Value> idx;
  for (Value i : indices)
    idx.push_back(map.lookupOrDefault(i));
  if (buf->kind == Kind::Fragment) {
    std::optional<int64_t> reg;
    if (ctx.inParallel()) {
      SmallVector<IndexMap> maps;
      for (Value i : indices) {
        std::optional<IndexMap> m = matchIndexMap(i, ctx.body);
        if (!m)
          return op->emitError("a fragment indexed inside T.Parallel must be "
                               "indexed by the loop's variables (or sums of "
                               "them divided, wrapped and scaled by "
                               "constants: j // c, j % c, (j % 4) * 4 + j // 4)");
        maps.push_back(*m);
      }
      reg = fragmentRegister(*buf, maps, ctx);
      if (!reg)
        return op->emitError("this thread does not hold the fragment element "
                             "it accesses (layout ")
               << buf->layout->describe()
               << "); tile-layout-inference should have inserted a "
                  "conversion";
    } else {
      // Outside parallel loops every thread must hold the element.
      if (buf->layout->getReplicate() != numThreads)
        return op->emitError("a fragment element is accessed outside "
                             "T.Parallel, but its elements are spread over "
                             "the threads (")
               << buf->layout->describe()
               << "); access it inside a T.Parallel loop or copy it to "
                  "shared memory";
      // Replicated: the register is the row-major index.
      Value lin;
      for (auto [d, i] : llvm::enumerate(idx)) {
        int64_t stride = 1;
        for (int64_t e = d + 1; e < buf->rank(); ++e)
          stride *= buf->shape[e];
        Value term = arith::MulIOp::create(b, loc, i, cIdx(b, loc, stride));
        lin = lin ? arith::AddIOp::create(b, loc, lin, term) : term;
      }
      if (!lin)
        lin = cIdx(b, loc, 0);
      if (isLoad) {
        Value v = memref::LoadOp::create(b, loc, buf->memref, ValueRange{lin});
        map.map(op->getResult(0), v);
      } else {
        memref::StoreOp::create(
            b, loc, map.lookupOrDefault(cast<memref::StoreOp>(op).getValue()),
            buf->memref, ValueRange{lin});
      }
      return success();
    }
    if (isLoad)
      map.map(op->getResult(0), regLoad(b, *buf, *reg));
    else
      regStore(b, *buf, *reg,
               map.lookupOrDefault(cast<memref::StoreOp>(op).getValue()));
    return success();
  }
  if (isLoad) {
    map.map(op->getResult(0), loadElement(b, *buf, idx));
    return success();
  }
  Value v = map.lookupOrDefault(cast<memref::StoreOp>(op).getValue());
  if (buf->kind == Kind::Local || buf->kind == Kind::Var) {
    storeElement(b, *buf, idx, v);
    return success();
  }
  // Global and shared memory: one copy of the store, dropped out of bounds
  // (the CPU reference does not check these, but programs written for it
  // guard their stores; keep them cheap and safe here).
  guarded(b, loc, sideEffectGuard(b, ctx),
          [&](OpBuilder &gb) { storeElement(gb, *buf, idx, v); });
  return success();
}

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
  for (auto [src, dst] : llvm::zip(op->getRegions(), clone->getRegions())) {
    for (Block &block : src) {
      Block *nb = new Block();
      dst.push_back(nb);
      for (BlockArgument arg : block.getArguments())
        map.map(arg, nb->addArgument(arg.getType(), arg.getLoc()));
    }
    for (auto [sb, db] : llvm::zip(src, dst)) {
      OpBuilder inner = OpBuilder::atBlockEnd(&db);
      for (Operation &nested : sb)
        if (failed(lowerOp(&nested, inner, map, ctx)))
          return failure();
    }
  }
  for (auto [o, n] : llvm::zip(op->getResults(), clone->getResults()))
    map.map(o, n);
  return success();
}

LogicalResult KernelLowering::lowerOp(Operation *op, OpBuilder &b,
                                      IRMapping &map, Context &ctx) {
  loc = op->getLoc();
  if (isa<AllocSharedOp, AllocFragmentOp, AllocLocalOp, AllocVarOp,
          AllocBarrierOp, UseSwizzleOp, AnnotateLayoutOp>(op))
    return success();
  if (amd && isa<WarpSpecializeOp, BarrierWaitOp, BarrierArriveOp>(op))
    return op->emitError("warp specialization and transaction barriers are "
                         "NVIDIA (sm_90a) features");
  if (auto ws = dyn_cast<WarpSpecializeOp>(op))
    return lowerWarpSpecialize(ws, b, map, ctx);
  if (auto wait = dyn_cast<GemmWaitOp>(op)) {
    if (!usesAsyncProxy)
      return success();
    // ptxas moves a wgmma wait above independent work that the PTX puts
    // before it (the rotated attention loop's softmax); it keeps the order
    // across a nanosleep.
    if (wait->hasAttr("tile.sched_barrier"))
      NVVM::NanosleepOp::create(
          b, loc, arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, wait.getPending());
    return success();
  }
  if (auto wait = dyn_cast<BarrierWaitOp>(op)) {
    Value ptr = barrierPtr(b, wait.getBarriers(), wait.getIndex(), map);
    Value parity = arith::IndexCastUIOp::create(
        b, loc, b.getI32Type(), map.lookupOrDefault(wait.getParity()));
    // Poll try_wait (which may suspend the thread for a system-defined
    // time) until the phase completed.
    auto scope = NVVM::MemScopeKind::CTA;
    auto loop = scf::WhileOp::create(b, loc, TypeRange{}, ValueRange{});
    {
      Block *before = b.createBlock(&loop.getBefore());
      OpBuilder wb = OpBuilder::atBlockEnd(before);
      Value done = NVVM::MBarrierTryWaitOp::create(
          wb, loc, wb.getI1Type(), ptr, parity, Value(), scope, false);
      Value pending = arith::XOrIOp::create(
          wb, loc, done, arith::ConstantIntOp::create(wb, loc, wb.getI1Type(), 1));
      scf::ConditionOp::create(wb, loc, pending, ValueRange{});
      Block *after = b.createBlock(&loop.getAfter());
      OpBuilder ab = OpBuilder::atBlockEnd(after);
      scf::YieldOp::create(ab, loc);
    }
    b.setInsertionPointAfter(loop);
    return success();
  }
  if (auto arrive = dyn_cast<BarrierArriveOp>(op)) {
    Value ptr = barrierPtr(b, arrive.getBarriers(), arrive.getIndex(), map);
    if (std::optional<int64_t> tx = arrive.getExpectTx()) {
      Value bytes = arith::ConstantIntOp::create(b, loc, b.getI32Type(), *tx);
      guarded(b, loc, isRoleLeader(b), [&](OpBuilder &gb) {
        NVVM::MBarrierArriveExpectTxOp::create(gb, loc, Type(), ptr, bytes,
                                               NVVM::MemScopeKind::CTA,
                                               /*relaxed=*/false, Value());
      });
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
  if (isa<memref::LoadOp, memref::StoreOp>(op)) {
    Value m = isa<memref::LoadOp>(op) ? cast<memref::LoadOp>(op).getMemRef()
                                      : cast<memref::StoreOp>(op).getMemRef();
    if (isa<MemRefType>(m.getType()))
      return lowerAccess(op, b, map, ctx);
  }
  if (isa<memref::SubViewOp, memref::CastOp>(op))
    return success(); // resolved by bufferOf
  if (auto dim = dyn_cast<memref::DimOp>(op)) {
    FailureOr<Buffer> buf = bufferOf(dim.getSource(), b, map);
    if (failed(buf))
      return failure();
    std::optional<int64_t> d = dim.getConstantIndex();
    if (d && !ShapedType::isDynamic(buf->shape[*d])) {
      map.map(dim.getResult(), cIdx(b, loc, buf->shape[*d]));
      return success();
    }
    map.map(dim.getResult(),
            memref::DimOp::create(b, loc, buf->memref,
                                  map.lookupOrDefault(dim.getIndex())));
    return success();
  }
  // Asserts check per element too (each instance of a parallel body).
  if (auto o = dyn_cast<DeviceAssertOp>(op))
    return lowerDeviceAssert(o, b, map);
  if (ctx.inParallel() && isa<TileDialect>(op->getDialect()))
    return op->emitError("tile operations cannot be nested in T.Parallel on "
                         "GPU targets");
  if (auto o = dyn_cast<ParallelOp>(op))
    return lowerParallel(o, b, map);
  if (auto o = dyn_cast<CopyOp>(op))
    return o.getBarrier() ? lowerTmaCopy(o, b, map) : lowerCopy(o, b, map);
  if (auto o = dyn_cast<FillOp>(op))
    return lowerFill(o, b, map);
  if (auto o = dyn_cast<GemmOp>(op))
    return lowerGemm(o, b, map);
  if (auto o = dyn_cast<GemmSpOp>(op))
    return lowerGemmSp(o, b, map);
  if (auto o = dyn_cast<ReduceOp>(op))
    return lowerReduce(o, b, map);
  if (auto o = dyn_cast<CumSumOp>(op))
    return lowerCumSum(o, b, map);
  if (auto o = dyn_cast<AtomicAddOp>(op))
    return lowerAtomicAdd(o, b, map, ctx);
  if (auto o = dyn_cast<PrintOp>(op)) {
    if (amd)
      return op->emitError("T.print is not supported on ROCm targets yet "
                           "(device printf needs the ROCm device libraries)");
    return lowerPrint(o, b, map, ctx);
  }
  if (isa<BarrierOp>(op)) {
    // Shared memory written by ordinary stores and read next by wgmma (the
    // async proxy) needs a proxy fence in the writers before the barrier.
    if (usesAsyncProxy)
      proxyFence(b);
    barrier(b);
    return success();
  }
  if (isa<AsyncCommitOp>(op)) {
    if (!amd) // AMD copies are synchronous: nothing to group
      NVVM::CpAsyncCommitGroupOp::create(b, loc);
    return success();
  }
  if (auto wait = dyn_cast<AsyncWaitOp>(op)) {
    if (amd)
      return success();
    NVVM::CpAsyncWaitGroupOp::create(b, loc, wait.getPending());
    if (usesAsyncProxy)
      proxyFence(b); // cp.async writes through the generic proxy
    return success();
  }
  if (isa<TileDialect>(op->getDialect()))
    return op->emitError("cannot lower this op for CUDA targets");
  if (op->getNumRegions())
    return cloneWithRegions(op, b, map, ctx);
  b.clone(*op, map);
  return success();
}

//===----------------------------------------------------------------------===//
// Parallel loops
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::lowerParallel(ParallelOp op, OpBuilder &b,
                                            IRMapping &map) {
  auto attr = op->getAttrOfType<FragmentLayoutAttr>("layout");
  if (!attr)
    return op.emitOpError("has no layout: run tile-layout-inference first");
  FailureOr<TileLayout> layout = TileLayout::fromAttr(attr, op.getExtents());
  if (failed(layout))
    return op.emitOpError("layout is not a digit structure");
  // The leader of a replicated instance: replica digits all zero.
  Value leader;
  for (const LayoutDigit &d : layout->getDigits()) {
    if (!d.isReplica())
      continue;
    Value digit = arith::RemUIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, d.stride)),
        cIdx(b, loc, d.size));
    leader = andOf(b, loc, leader,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         digit, cIdx(b, loc, 0)));
  }
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
      if (failed(buf) || buf->kind != Kind::Shared ||
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
        ivs.back() = arith::AddIOp::create(b, loc, ivs0.back(), cIdx(b, loc, i));
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
    SmallVector<bool> mayExceed(layout->getShape().size(), false);
    bool anyInBounds = false;
    for (int64_t t = 0; t < numThreads; ++t) {
      SmallVector<int64_t> idx = layout->inverse(t, r);
      bool ok = true;
      for (auto [d, i] : llvm::enumerate(idx))
        if (i >= layout->getShape()[d]) {
          mayExceed[d] = true;
          ok = false;
        }
      anyInBounds |= ok;
    }
    if (!anyInBounds)
      continue;
    SmallVector<Value> ivs = layout->emitInverse(b, loc, tid, r);
    Value cond;
    for (auto [d, exceed] : llvm::enumerate(mayExceed))
      if (exceed)
        cond = andOf(b, loc, cond,
                     arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           ivs[d],
                                           cIdx(b, loc, layout->getShape()[d])));
    LogicalResult result = success();
    guarded(b, loc, cond, [&](OpBuilder &gb) {
      IRMapping inner = map;
      for (auto [arg, v] : llvm::zip(body.getArguments(), ivs))
        inner.map(arg, v);
      Context ctx;
      ctx.loopLayout = &*layout;
      ctx.reg = r;
      ctx.body = &body;
      ctx.ivs = ivs;
      ctx.leader = leader;
      result = lowerBlock(body, gb, inner, ctx);
    });
    if (failed(result))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Copies
//===----------------------------------------------------------------------===//

FailureOr<KernelLowering::Side>
KernelLowering::sideOf(Value buffer, ValueRange offsets,
                       ArrayRef<int64_t> sizes, OpBuilder &b, IRMapping &map) {
  FailureOr<Buffer> buf = bufferOf(buffer, b, map);
  if (failed(buf))
    return failure();
  Side s{*buf, {}, SmallVector<int64_t>(sizes)};
  for (Value o : offsets)
    s.offsets.push_back(map.lookupOrDefault(o));
  return s;
}

/// Indices into `s` of the element at `squeezed` (positions along the
/// non-unit dimensions of the region).
SmallVector<Value> KernelLowering::sideIndex(OpBuilder &b, const Side &s,
                                             ArrayRef<Value> squeezed) {
  SmallVector<Value> idx;
  size_t next = 0;
  for (auto [o, size] : llvm::zip(s.offsets, s.sizes)) {
    if (size == 1) {
      idx.push_back(o);
      continue;
    }
    idx.push_back(arith::AddIOp::create(b, loc, o, squeezed[next++]));
  }
  return idx;
}

/// Cooperative copy between memories: threads take consecutive vectors of
/// the innermost dimension (coalesced), bounds-checked on global memory.
void KernelLowering::copyMemoryToMemory(OpBuilder &b, const Side &src,
                                        const Side &dst, bool async) {
  SmallVector<int64_t> shape = squeeze(src.sizes);
  int64_t total = 1;
  for (int64_t e : shape)
    total *= e;
  // Vector width: 16 bytes where both sides' innermost dimension is the
  // copied one, contiguous, and aligned.
  int64_t v = 1;
  if (!shape.empty() && src.sizes.back() != 1 && dst.sizes.back() != 1) {
    int64_t maxBytes = std::max(elementBytes(src.buf.elementType),
                                elementBytes(dst.buf.elementType));
    v = std::min<int64_t>(16 / maxBytes, shape.back());
    auto alignedSide = [&](const Side &s) {
      int64_t a = knownDivisor(s.offsets.back());
      if (s.buf.kind == Kind::Global) {
        int64_t last = s.buf.shape.back();
        a = std::min(a, ShapedType::isDynamic(last) ? 1 : (last & -last));
      } else if (s.buf.kind == Kind::Shared) {
        a = sharedInnerAlignment(s.buf, s.offsets.back());
      } else {
        a = 1;
      }
      return a;
    };
    int64_t align = std::min(alignedSide(src), alignedSide(dst));
    while (v > 1 && (shape.back() % v || align % v))
      v /= 2;
  }
  int64_t vectors = total / v;
  int64_t rounds = (vectors + numThreads - 1) / numThreads;
  Type srcElem = src.buf.elementType, dstElem = dst.buf.elementType;
  bool useAsync = async && !amd && sameElements(src, dst) &&
                  (v * elementBytes(srcElem) == 4 ||
                   v * elementBytes(srcElem) == 8 ||
                   v * elementBytes(srcElem) == 16);
  auto body = [&](OpBuilder &rb, Value q) {
    // q: the vector id; decompose into the squeezed index.
    SmallVector<Value> pos(shape.size());
    Value rem = q;
    for (int64_t d = shape.size() - 1; d >= 0; --d) {
      int64_t extent = d == (int64_t)shape.size() - 1 ? shape[d] / v : shape[d];
      Value digit = arith::RemUIOp::create(rb, loc, rem, cIdx(rb, loc, extent));
      rem = arith::DivUIOp::create(rb, loc, rem, cIdx(rb, loc, extent));
      pos[d] = d == (int64_t)shape.size() - 1
                   ? arith::MulIOp::create(rb, loc, digit, cIdx(rb, loc, v))
                         .getResult()
                   : digit;
    }
    SmallVector<Value> si = sideIndex(rb, src, pos);
    SmallVector<Value> di = sideIndex(rb, dst, pos);
    Value srcOk = src.buf.kind == Kind::Global ? inBounds(rb, src.buf, si)
                                                : Value();
    Value dstOk = dst.buf.kind == Kind::Global ? inBounds(rb, dst.buf, di)
                                                : Value();
    if (useAsync) {
      // Out-of-range sources copy zero bytes (zero fill) from a clamped,
      // valid address.
      Value count = cIdx(rb, loc, v);
      SmallVector<Value> clamped = si;
      if (srcOk) {
        count = arith::SelectOp::create(rb, loc, srcOk, count, cIdx(rb, loc, 0));
        for (Value &i : clamped)
          i = arith::SelectOp::create(rb, loc, srcOk, i, cIdx(rb, loc, 0));
      }
      Value dstOffset = sharedOffset(rb, dst.buf, di);
      auto tokenType = nvgpu::DeviceAsyncTokenType::get(rb.getContext());
      nvgpu::DeviceAsyncCopyOp::create(
          rb, loc, tokenType, dst.buf.memref, ValueRange{dstOffset},
          src.buf.memref, clamped, rb.getIndexAttr(v), count,
          v * elementBytes(srcElem) == 16 ? rb.getUnitAttr() : UnitAttr());
      return;
    }
    Value value;
    if (srcOk) {
      auto ifOp = scf::IfOp::create(
          rb, loc, srcOk,
          [&](OpBuilder &tb, Location l) {
            scf::YieldOp::create(tb, l, loadVector(tb, src.buf, si, v));
          },
          [&](OpBuilder &eb, Location l) {
            auto vt = VectorType::get({v}, srcElem);
            scf::YieldOp::create(
                eb, l,
                arith::ConstantOp::create(eb, l, vt, eb.getZeroAttr(vt))
                    .getResult());
          });
      value = ifOp.getResult(0);
    } else {
      value = loadVector(rb, src.buf, si, v);
    }
    value = convertSide(rb, value, src, dst);
    guarded(rb, loc, dstOk,
            [&](OpBuilder &gb) { storeVector(gb, dst.buf, di, value); });
  };
  auto round = [&](OpBuilder &rb, Value k) {
    Value q = arith::AddIOp::create(
        rb, loc, tid, arith::MulIOp::create(rb, loc, k, cIdx(rb, loc, numThreads)));
    Value cond;
    if (vectors % numThreads)
      cond = arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::ult, q,
                                   cIdx(rb, loc, vectors));
    guarded(rb, loc, cond, [&](OpBuilder &gb) { body(gb, q); });
  };
  if (rounds <= 16) {
    for (int64_t k = 0; k < rounds; ++k)
      round(b, cIdx(b, loc, k));
  } else {
    auto loop = scf::ForOp::create(b, loc, cIdx(b, loc, 0), cIdx(b, loc, rounds),
                                   cIdx(b, loc, 1));
    OpBuilder inner = OpBuilder::atBlockTerminator(loop.getBody());
    round(inner, loop.getInductionVar());
  }
}

/// Copy between a fragment and global/shared memory following the
/// fragment's layout: each thread moves the elements of its registers,
/// vectorized over registers holding consecutive elements.
void KernelLowering::copyFragmentMemory(OpBuilder &b, const Side &frag,
                                        const Side &mem, bool toMemory) {
  const TileLayout &layout = *frag.buf.layout;
  int64_t rank = frag.buf.rank();
  bool fullRegion = llvm::all_of(frag.offsets, [](Value o) {
    APInt c;
    return matchPattern(o, m_ConstantInt(&c)) && c.isZero();
  }) && ArrayRef<int64_t>(frag.sizes) == ArrayRef<int64_t>(frag.buf.shape);
  // Group registers that hold consecutive elements of the last fragment
  // dimension, when it maps onto the memory's last dimension.
  int64_t group = 1;
  if (fullRegion && rank > 0 && frag.sizes.back() != 1 &&
      mem.sizes.back() != 1) {
    for (const LayoutDigit &d : layout.getDigits())
      if (!d.onThread && d.dim == rank - 1 && d.dimStride == 1 && d.stride == 1)
        group = d.size;
    int64_t maxBytes = std::max(elementBytes(frag.buf.elementType),
                                elementBytes(mem.buf.elementType));
    group = std::min<int64_t>(group, 16 / maxBytes);
    int64_t align = knownDivisor(mem.offsets.back());
    if (mem.buf.kind == Kind::Global) {
      int64_t last = mem.buf.shape.back();
      align = std::min(align, ShapedType::isDynamic(last) ? 1 : (last & -last));
    } else {
      align = sharedInnerAlignment(mem.buf, mem.offsets.back());
    }
    while (group > 1 && align % group)
      group /= 2;
    if (group < 1)
      group = 1;
  }
  // Dimensions that padding can push out of range.
  SmallVector<bool> padded(rank, false);
  for (const LayoutDigit &d : layout.getDigits())
    if (!d.isReplica()) {
      int64_t top = 0;
      for (const LayoutDigit &e : layout.getDigits())
        if (e.dim == d.dim)
          top = std::max(top, e.dimStride * e.size);
      padded[d.dim] = top > frag.buf.shape[d.dim];
    }
  // Replicas store once.
  Value leader;
  if (toMemory)
    for (const LayoutDigit &d : layout.getDigits()) {
      if (!d.isReplica())
        continue;
      Value digit = arith::RemUIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, d.stride)),
          cIdx(b, loc, d.size));
      leader = andOf(b, loc, leader,
                     arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           digit, cIdx(b, loc, 0)));
    }
  Type memType = mem.buf.elementType, fragType = frag.buf.elementType;
  for (int64_t r = 0; r < layout.getNumRegs(); r += group) {
    SmallVector<Value> fidx = layout.emitInverse(b, loc, tid, r);
    Value cond = leader;
    for (int64_t d = 0; d < rank; ++d) {
      if (padded[d])
        cond = andOf(b, loc, cond,
                     arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           fidx[d],
                                           cIdx(b, loc, frag.buf.shape[d])));
    }
    // Position inside the region.
    SmallVector<Value> pos;
    for (int64_t d = 0; d < rank; ++d) {
      Value p = arith::SubIOp::create(b, loc, fidx[d], frag.offsets[d]);
      if (!fullRegion)
        cond = andOf(b, loc, cond,
                     arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, p,
                                           cIdx(b, loc, frag.sizes[d])));
      if (frag.sizes[d] != 1)
        pos.push_back(p);
    }
    SmallVector<Value> midx = sideIndex(b, mem, pos);
    if (mem.buf.kind == Kind::Global)
      cond = andOf(b, loc, cond, inBounds(b, mem.buf, midx));
    if (toMemory) {
      guarded(b, loc, cond, [&](OpBuilder &gb) {
        SmallVector<Value> elems;
        for (int64_t g = 0; g < group; ++g)
          elems.push_back(
              convertSide(gb, regLoad(gb, frag.buf, r + g), frag, mem));
        Value vec = vector::FromElementsOp::create(
            gb, loc, VectorType::get({group}, memType), elems);
        storeVector(gb, mem.buf, midx, vec);
      });
      continue;
    }
    // Loads: zero outside the source.
    auto vt = VectorType::get({group}, memType);
    Value vec;
    if (cond) {
      auto ifOp = scf::IfOp::create(
          b, loc, cond,
          [&](OpBuilder &tb, Location l) {
            scf::YieldOp::create(tb, l, loadVector(tb, mem.buf, midx, group));
          },
          [&](OpBuilder &eb, Location l) {
            scf::YieldOp::create(
                eb, l, arith::ConstantOp::create(eb, l, vt, eb.getZeroAttr(vt))
                           .getResult());
          });
      vec = ifOp.getResult(0);
    } else {
      vec = loadVector(b, mem.buf, midx, group);
    }
    for (int64_t g = 0; g < group; ++g) {
      Value e = vector::ExtractOp::create(b, loc, vec, ArrayRef<int64_t>{g});
      Value fv = convertSide(b, e, mem, frag);
      if (!fullRegion && cond) {
        // Registers outside a partial region keep their value.
        Value old = regLoad(b, frag.buf, r + g);
        fv = arith::SelectOp::create(b, loc, cond, fv, old);
      }
      regStore(b, frag.buf, r + g, fv);
    }
  }
}

Buffer KernelLowering::scratchBuffer(OpBuilder &b, ArrayRef<int64_t> shape,
                                     Type type) {
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  int64_t n = 1;
  for (int64_t e : shape)
    n *= e;
  Buffer buf;
  buf.kind = Kind::Shared;
  buf.memref = memref::ViewOp::create(
      b, loc, MemRefType::get({n}, type, MemRefLayoutAttrInterface(), workgroup),
      smem, smemAt(b, scratchOffset), ValueRange{});
  buf.shape.assign(shape.begin(), shape.end());
  buf.elementType = type;
  buf.allocShape = buf.shape;
  buf.viewOffsets.assign(shape.size(), Value());
  buf.viewDims = llvm::to_vector(llvm::seq<int64_t>(0, shape.size()));
  return buf;
}

KernelLowering::Side KernelLowering::scratchSide(OpBuilder &b,
                                                 ArrayRef<int64_t> shape,
                                                 Type elementType) {
  Side s{scratchBuffer(b, shape, elementType), {}, SmallVector<int64_t>(shape)};
  for (size_t i = 0; i < shape.size(); ++i)
    s.offsets.push_back(cIdx(b, loc, 0));
  return s;
}

/// Per-thread copies (local/var on a side): every thread copies the whole
/// region; writes to global or shared memory come from thread 0.
void KernelLowering::copyPerThread(OpBuilder &b, const Side &src,
                                   const Side &dst) {
  SmallVector<int64_t> shape = squeeze(src.sizes);
  bool shared = dst.buf.kind == Kind::Global || dst.buf.kind == Kind::Shared;
  auto emit = [&](OpBuilder &eb) {
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t e : shape) {
      lbs.push_back(cIdx(eb, loc, 0));
      ubs.push_back(cIdx(eb, loc, e));
      steps.push_back(cIdx(eb, loc, 1));
    }
    auto fn = [&](OpBuilder &nb, Location l, ValueRange pos) {
      SmallVector<Value> posv(pos.begin(), pos.end());
      SmallVector<Value> si = sideIndex(nb, src, posv);
      SmallVector<Value> di = sideIndex(nb, dst, posv);
      Value ok = src.buf.kind == Kind::Global ? inBounds(nb, src.buf, si) : Value();
      Value v;
      if (ok) {
        auto ifOp = scf::IfOp::create(
            nb, l, ok,
            [&](OpBuilder &tb, Location il) {
              scf::YieldOp::create(tb, il, loadElement(tb, src.buf, si));
            },
            [&](OpBuilder &fb, Location il) {
              scf::YieldOp::create(fb, il, zeroOf(fb, il, src.buf.elementType));
            });
        v = ifOp.getResult(0);
      } else {
        v = loadElement(nb, src.buf, si);
      }
      v = convertSide(nb, v, src, dst);
      Value dok = dst.buf.kind == Kind::Global ? inBounds(nb, dst.buf, di) : Value();
      guarded(nb, l, dok, [&](OpBuilder &gb) { storeElement(gb, dst.buf, di, v); });
    };
    if (shape.empty())
      fn(eb, loc, {});
    else
      scf::buildLoopNest(eb, loc, lbs, ubs, steps, fn);
  };
  guarded(b, loc, shared ? isThreadZero(b) : Value(), emit);
}

/// Stages a copy through shared scratch memory: src -> scratch, barrier,
/// scratch -> dst, barrier.
void KernelLowering::copyThroughScratch(OpBuilder &b, const Side &src,
                                        const Side &dst) {
  SmallVector<int64_t> shape = squeeze(src.sizes);
  if (shape.empty())
    shape.push_back(1);
  Side scratch = scratchSide(b, shape, dst.buf.elementType);
  scratch.logical = dst.logical;
  auto move = [&](const Side &from, const Side &to) {
    bool fromFrag = from.buf.kind == Kind::Fragment;
    bool toFrag = to.buf.kind == Kind::Fragment;
    if (fromFrag)
      copyFragmentMemory(b, from, to, /*toMemory=*/true);
    else if (toFrag)
      copyFragmentMemory(b, to, from, /*toMemory=*/false);
    else if (from.buf.kind == Kind::Local || from.buf.kind == Kind::Var ||
             to.buf.kind == Kind::Local || to.buf.kind == Kind::Var)
      copyPerThread(b, from, to);
    else
      copyMemoryToMemory(b, from, to, false);
  };
  // Scratch regions are squeezed; give them the other side's unit dims back
  // through sideIndex by matching the squeezed shape only.
  barrier(b);
  move(src, scratch);
  barrier(b);
  move(scratch, dst);
  barrier(b);
}

LogicalResult KernelLowering::lowerCopy(CopyOp op, OpBuilder &b,
                                        IRMapping &map) {
  if (tmaStores.contains(op))
    return lowerTmaStore(op, b, map);
  FailureOr<Side> src = sideOf(op.getSrc(), op.getSrcOffsets(),
                               op.getSrcSizes(), b, map);
  FailureOr<Side> dst = sideOf(op.getDst(), op.getDstOffsets(),
                               op.getDstSizes(), b, map);
  if (failed(src) || failed(dst))
    return failure();
  src->logical = op.getSrcLogicalType();
  dst->logical = op.getDstLogicalType();
  Kind sk = src->buf.kind, dk = dst->buf.kind;
  auto isMemory = [](Kind k) { return k == Kind::Global || k == Kind::Shared; };
  auto isPerThread = [](Kind k) { return k == Kind::Local || k == Kind::Var; };
  if (isMemory(sk) && isMemory(dk)) {
    copyMemoryToMemory(b, *src, *dst, op.getAsync());
    return success();
  }
  if (sk == Kind::Fragment && isMemory(dk)) {
    copyFragmentMemory(b, *src, *dst, /*toMemory=*/true);
    return success();
  }
  if (isMemory(sk) && dk == Kind::Fragment) {
    copyFragmentMemory(b, *dst, *src, /*toMemory=*/false);
    return success();
  }
  if (sk == Kind::Fragment && dk == Kind::Fragment &&
      *src->buf.layout == *dst->buf.layout &&
      ArrayRef<int64_t>(src->sizes) == ArrayRef<int64_t>(src->buf.shape) &&
      ArrayRef<int64_t>(dst->sizes) == ArrayRef<int64_t>(dst->buf.shape)) {
    for (int64_t r = 0; r < src->buf.layout->getNumRegs(); ++r)
      regStore(b, dst->buf, r,
               convertSide(b, regLoad(b, src->buf, r), *src, *dst));
    return success();
  }
  if ((isPerThread(sk) && (isMemory(dk) || isPerThread(dk))) ||
      (isMemory(sk) && isPerThread(dk))) {
    copyPerThread(b, *src, *dst);
    return success();
  }
  copyThroughScratch(b, *src, *dst);
  return success();
}

LogicalResult KernelLowering::lowerFill(FillOp op, OpBuilder &b,
                                        IRMapping &map) {
  FailureOr<Buffer> buf = bufferOf(op.getDst(), b, map);
  if (failed(buf))
    return failure();
  Value v = map.lookupOrDefault(op.getValue());
  if (buf->kind == Kind::Fragment) {
    for (int64_t r = 0; r < buf->layout->getNumRegs(); ++r)
      regStore(b, *buf, r, v);
    return success();
  }
  if (buf->kind == Kind::Var) {
    memref::StoreOp::create(b, loc, v, buf->memref, ValueRange{});
    return success();
  }
  if (buf->kind == Kind::Local) {
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t e : buf->shape) {
      lbs.push_back(cIdx(b, loc, 0));
      ubs.push_back(cIdx(b, loc, e));
      steps.push_back(cIdx(b, loc, 1));
    }
    scf::buildLoopNest(b, loc, lbs, ubs, steps,
                       [&](OpBuilder &nb, Location l, ValueRange ivs) {
                         memref::StoreOp::create(nb, l, v, buf->memref, ivs);
                       });
    return success();
  }
  // Shared or global: a cooperative copy from a register splat. Shared
  // buffers are filled through their flat view (a swizzle permutes within).
  bool whole = buf->kind == Kind::Shared &&
               llvm::all_of(buf->viewOffsets, [](Value o) { return !o; }) &&
               ArrayRef<int64_t>(buf->shape) == ArrayRef<int64_t>(buf->allocShape);
  if (whole) {
    int64_t n = 1;
    for (int64_t e : buf->shape)
      n *= e;
    int64_t width = 16 / elementBytes(buf->elementType);
    while (width > 1 && n % width)
      width /= 2;
    auto vt = VectorType::get({width}, buf->elementType);
    Value splat = vector::BroadcastOp::create(b, loc, vt, v);
    int64_t vectors = n / width;
    for (int64_t k = 0; k * numThreads < vectors; ++k) {
      Value q = arith::AddIOp::create(b, loc, tid, cIdx(b, loc, k * numThreads));
      Value cond;
      if ((k + 1) * numThreads > vectors)
        cond = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, q,
                                     cIdx(b, loc, vectors));
      guarded(b, loc, cond, [&](OpBuilder &gb) {
        Value off = arith::MulIOp::create(gb, loc, q, cIdx(gb, loc, width));
        vector::StoreOp::create(gb, loc, splat, buf->memref, ValueRange{off});
      });
    }
    return success();
  }
  return op.emitOpError("filling this buffer kind is not supported on CUDA "
                        "targets");
}

//===----------------------------------------------------------------------===//
// Gemm
//===----------------------------------------------------------------------===//

/// Copies a fragment operand into shared scratch so that the gemm can read
/// it like a shared operand.
FailureOr<Buffer> KernelLowering::stageOperand(OpBuilder &b,
                                               const Buffer &buf) {
  if (buf.kind == Kind::Shared)
    return buf;
  if (buf.kind != Kind::Fragment)
    return failure();
  Side frag{buf, {}, buf.shape};
  for (int64_t i = 0; i < buf.rank(); ++i)
    frag.offsets.push_back(cIdx(b, loc, 0));
  // Place A at the start of the scratch and B after it.
  static_assert(true, "");
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
static std::optional<SmallVector<int64_t>>
registerOperandA(GemmOp op, const TileLayout &layout, int64_t threads) {
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
            int64_t col = ks * kStep + (is16      ? 2 * q + 8 * (reg / 2) + e
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
static LogicalResult checkAccumulatorLayout(GemmOp op, const TileLayout &c,
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
  if (c->kind != Kind::Fragment)
    return op.emitOpError("the accumulator must be a fragment");
  // A fragment A whose layout already puts each element in the thread and
  // register the instruction reads it from feeds the tensor cores directly.
  std::optional<SmallVector<int64_t>> aRegs;
  if (a->kind == Kind::Fragment && bb->kind == Kind::Shared &&
      (op->hasAttr("wgmma") || op->hasAttr("warp_partition")))
    aRegs = registerOperandA(op, *a->layout, numThreads);
  if (op->hasAttr("wgmma") && a->kind == Kind::Fragment && !aRegs)
    return op.emitOpError("a wgmma gemm reads a fragment A from registers "
                          "only in the layout of an M x K wgmma "
                          "accumulator, but A has the layout ")
           << a->layout->describe();
  if (aRegs) {
    if (op->hasAttr("wgmma"))
      return gemmWgmma(op, b, *a, *bb, *c, *aRegs);
    return gemmMma(op, b, *a, *bb, *c, *aRegs);
  }
  // Other fragment operands go through scratch (A first, B after it).
  bool staged = a->kind == Kind::Fragment || bb->kind == Kind::Fragment;
  if (staged)
    barrier(b);
  int64_t aBytes = 0;
  if (a->kind == Kind::Fragment) {
    FailureOr<Buffer> s = stageOperand(b, *a);
    if (failed(s))
      return failure();
    a = s;
    aBytes = llvm::alignTo(
        a->shape[0] * a->shape[1] * elementBytes(a->elementType), 128);
  }
  if (bb->kind == Kind::Fragment) {
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
  if (a->kind != Kind::Shared || bb->kind != Kind::Shared)
    return op.emitOpError("gemm operands must be shared buffers or fragments");
  if (op->hasAttr("mfma")) {
    if (!amd)
      return op.emitOpError("an MFMA gemm needs an AMD target");
    if (failed(gemmMfma(op, b, *a, *bb, *c)))
      return failure();
  } else if (op->hasAttr("wgmma")) {
    if (failed(gemmWgmma(op, b, *a, *bb, *c)))
      return failure();
  } else if (op->hasAttr("warp_partition")) {
    if (failed(gemmMma(op, b, *a, *bb, *c)))
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
    SmallVector<Value> idx = layout.emitInverse(b, loc, tid, r);
    Value cond;
    for (int d = 0; d < 2; ++d)
      cond = andOf(b, loc, cond,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         idx[d], cIdx(b, loc, c.shape[d])));
    Value init = op.getClearAccum() ? zeroOf(b, loc, acc) : regLoad(b, c, r);
    auto loop = scf::ForOp::create(
        b, loc, cIdx(b, loc, 0), cIdx(b, loc, k), cIdx(b, loc, 1),
        ValueRange{init},
        [&](OpBuilder &lb, Location l, Value kk, ValueRange args) {
          Value av = loadElement(lb, a, ta ? SmallVector<Value>{kk, idx[0]}
                                            : SmallVector<Value>{idx[0], kk});
          Value bv = loadElement(lb, bb, tb ? SmallVector<Value>{idx[1], kk}
                                             : SmallVector<Value>{kk, idx[1]});
          av = convertScalar(lb, l, av, acc);
          bv = convertScalar(lb, l, bv, acc);
          Value prod = isa<FloatType>(acc)
                           ? arith::MulFOp::create(lb, l, av, bv).getResult()
                           : arith::MulIOp::create(lb, l, av, bv).getResult();
          Value sum = isa<FloatType>(acc)
                          ? arith::AddFOp::create(lb, l, args[0], prod).getResult()
                          : arith::AddIOp::create(lb, l, args[0], prod).getResult();
          scf::YieldOp::create(lb, l, sum);
        });
    // Padded registers keep garbage that nobody reads; the guard keeps the
    // loads of out-of-range rows from reading past the operands.
    (void)cond;
    regStore(b, c, r, loop.getResult(0));
  }
}

/// Splits the rows of a fragment vector (vector<R x P x T>) into the 32-bit
/// registers mma.sync takes: f16 pairs stay vector<2xf16>, everything else
/// is bitcast to i32.
SmallVector<Value> mmaRegisters(OpBuilder &b, Location loc, Value frag) {
  auto type = cast<VectorType>(frag.getType());
  Type elem = type.getElementType();
  SmallVector<Value> regs;
  for (int64_t r = 0; r < type.getDimSize(0); ++r) {
    Value row = vector::ExtractOp::create(b, loc, frag, ArrayRef<int64_t>{r});
    if (elem.isF16()) {
      regs.push_back(row);
      continue;
    }
    Value bits = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), row);
    regs.push_back(vector::ExtractOp::create(b, loc, bits, ArrayRef<int64_t>{0}));
  }
  return regs;
}

/// One m16n8k`kStep` mma.sync on four accumulator scalars.
SmallVector<Value> emitMma(OpBuilder &b, Location loc, Value aFrag, Value bFrag,
                           ArrayRef<Value> c, Type elem, Type acc,
                           int64_t kStep) {
  NVVM::MMATypes ptx = elem.isF16()    ? NVVM::MMATypes::f16
                       : elem.isBF16() ? NVVM::MMATypes::bf16
                       : elem.isF32()  ? NVVM::MMATypes::tf32
                                       : NVVM::MMATypes::s8;
  SmallVector<Value> aRegs = mmaRegisters(b, loc, aFrag);
  SmallVector<Value> bRegs = mmaRegisters(b, loc, bFrag);
  SmallVector<Value> cRegs;
  Type resultType;
  MLIRContext *ctx = b.getContext();
  if (acc.isF16()) {
    auto pair = VectorType::get({2}, acc);
    for (int i = 0; i < 2; ++i)
      cRegs.push_back(vector::FromElementsOp::create(b, loc, pair,
                                                     ValueRange{c[2 * i], c[2 * i + 1]}));
    resultType = LLVM::LLVMStructType::getLiteral(ctx, {pair, pair});
  } else {
    cRegs.assign(c.begin(), c.end());
    resultType = LLVM::LLVMStructType::getLiteral(ctx, {acc, acc, acc, acc});
  }
  std::optional<NVVM::MMAIntOverflow> overflow;
  if (ptx == NVVM::MMATypes::s8)
    overflow = NVVM::MMAIntOverflow::wrapped;
  auto mma = NVVM::MmaOp::create(
      b, loc, resultType, aRegs, bRegs, cRegs, {16, 8, kStep}, std::nullopt,
      overflow, std::array<NVVM::MMATypes, 2>{ptx, ptx},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> out;
  if (acc.isF16()) {
    for (int64_t i = 0; i < 2; ++i) {
      Value pair = LLVM::ExtractValueOp::create(b, loc, mma, i);
      for (int64_t j = 0; j < 2; ++j)
        out.push_back(vector::ExtractOp::create(b, loc, pair, ArrayRef<int64_t>{j}));
    }
  } else {
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, mma, i));
  }
  return out;
}

LogicalResult KernelLowering::gemmMma(GemmOp op, OpBuilder &b, const Buffer &a,
                                      const Buffer &bb, const Buffer &c,
                                      ArrayRef<int64_t> aRegs) {
  if (failed(checkAccumulatorLayout(op, *c.layout, numThreads)))
    return failure();
  auto partition = op->getAttrOfType<DenseI64ArrayAttr>("warp_partition");
  int64_t warpsM = partition[0], warpsN = partition[1];
  int64_t m = op.getM(), n = op.getN(), k = op.getK();
  int64_t wm = m / warpsM, wn = n / warpsN;
  int64_t mTiles = wm / 16, nTiles = wn / 8;
  Type elem = a.elementType, acc = c.elementType;
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  bool is16 = elem.isF16() || elem.isBF16();
  bool isTf32 = elem.isF32();
  int64_t kStep = is16 ? 16 : (isTf32 ? 8 : 32);
  MLIRContext *ctx = b.getContext();

  Value warp = arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, 32));
  Value lane = arith::RemUIOp::create(b, loc, tid, cIdx(b, loc, 32));
  Value warpM = arith::DivUIOp::create(b, loc, warp, cIdx(b, loc, warpsN));
  Value warpN = arith::RemUIOp::create(b, loc, warp, cIdx(b, loc, warpsN));
  Value rowBase = arith::MulIOp::create(b, loc, warpM, cIdx(b, loc, wm));
  Value colBase = arith::MulIOp::create(b, loc, warpN, cIdx(b, loc, wn));
  auto add = [&](Value x, int64_t cst) -> Value {
    return cst ? arith::AddIOp::create(b, loc, x, cIdx(b, loc, cst)).getResult()
               : x;
  };
  auto addv = [&](Value x, Value y) -> Value {
    return arith::AddIOp::create(b, loc, x, y);
  };
  Value g = arith::DivUIOp::create(b, loc, lane, cIdx(b, loc, 4)); // groupID
  Value t4 = arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, 4));
  Value l8 = arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, 8));
  Value q = arith::DivUIOp::create(b, loc, lane, cIdx(b, loc, 8)); // 0..3
  Value qHalf = arith::DivUIOp::create(b, loc, q, cIdx(b, loc, 2));
  Value qOdd = arith::RemUIOp::create(b, loc, q, cIdx(b, loc, 2));
  auto times8 = [&](Value x) -> Value {
    return arith::MulIOp::create(b, loc, x, cIdx(b, loc, 8));
  };

  if (op.getClearAccum())
    for (int64_t r = 0; r < c.layout->getNumRegs(); ++r)
      regStore(b, c, r, zeroOf(b, loc, acc));

  // Element (row, col) of the logical A (M x K) / B (K x N).
  auto aAt = [&](Value row, Value col) {
    return ta ? SmallVector<Value>{col, row} : SmallVector<Value>{row, col};
  };
  auto bAt = [&](Value kk, Value col) {
    return tb ? SmallVector<Value>{col, kk} : SmallVector<Value>{kk, col};
  };

  for (int64_t k0 = 0; k0 < k; k0 += kStep) {
    // A fragments, one per m tile.
    SmallVector<Value> aFrags;
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      if (!aRegs.empty()) { // A in registers (see registerOperandA)
        int64_t per = is16 ? 2 : (isTf32 ? 1 : 4);
        int64_t first = ((k0 / kStep) * mTiles + mt) * 4 * per;
        SmallVector<Value> elems;
        for (int64_t i = 0; i < 4 * per; ++i)
          elems.push_back(regLoad(b, a, aRegs[first + i]));
        aFrags.push_back(vector::FromElementsOp::create(
            b, loc, VectorType::get({4, per}, elem), elems));
        continue;
      }
      Value m0 = add(rowBase, mt * 16);
      if (is16 && !ta) {
        aFrags.push_back(ldmatrixA16(b, a, m0, cIdx(b, loc, k0)));
        continue;
      }
      if (is16) {
        // stored K x M: rows k0 + lane % 8 + (q / 2) * 8, cols m0 + (q % 2) * 8
        Value off = sharedOffset(b, a, {add(addv(l8, times8(qHalf)), k0),
                                        addv(m0, times8(qOdd))});
        aFrags.push_back(nvgpu::LdMatrixOp::create(
            b, loc, VectorType::get({4, 2}, elem), a.memref, ValueRange{off},
            /*transpose=*/true, /*numTiles=*/4));
        continue;
      }
      // tf32 / int8: element loads following the mma fragment layout.
      int64_t per = isTf32 ? 1 : 4;
      SmallVector<Value> elems;
      for (int64_t reg = 0; reg < 4; ++reg) {
        Value row = addv(m0, add(g, (reg % 2) * 8));
        for (int64_t e = 0; e < per; ++e) {
          Value col = isTf32
                          ? add(t4, k0 + (reg / 2) * 4)
                          : add(arith::MulIOp::create(b, loc, t4, cIdx(b, loc, 4)),
                                k0 + (reg / 2) * 16 + e);
          elems.push_back(loadElement(b, a, aAt(row, col)));
        }
      }
      aFrags.push_back(vector::FromElementsOp::create(
          b, loc, VectorType::get({4, per}, elem), elems));
    }
    // B fragments, one per n tile.
    SmallVector<Value> bFrags;
    for (int64_t nt = 0; nt < nTiles; ++nt) {
      Value n0 = add(colBase, nt * 8);
      if (is16) {
        bFrags.push_back(ldmatrixB16(b, bb, tb, cIdx(b, loc, k0), n0, 16));
        continue;
      }
      int64_t per = isTf32 ? 1 : 4;
      SmallVector<Value> elems;
      for (int64_t reg = 0; reg < 2; ++reg) {
        Value col = addv(n0, g);
        for (int64_t e = 0; e < per; ++e) {
          Value kk = isTf32
                         ? add(t4, k0 + reg * 4)
                         : add(arith::MulIOp::create(b, loc, t4, cIdx(b, loc, 4)),
                               k0 + reg * 16 + e);
          elems.push_back(loadElement(b, bb, bAt(kk, col)));
        }
      }
      bFrags.push_back(vector::FromElementsOp::create(
          b, loc, VectorType::get({2, per}, elem), elems));
    }
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      for (int64_t nt = 0; nt < nTiles; ++nt) {
        int64_t base = mt * 4 * nTiles + nt * 4;
        SmallVector<Value> cs;
        for (int64_t i = 0; i < 4; ++i)
          cs.push_back(regLoad(b, c, base + i));
        SmallVector<Value> ds = emitMma(b, loc, aFrags[mt], bFrags[nt], cs, elem, acc,
                                        kStep);
        for (int64_t i = 0; i < 4; ++i)
          regStore(b, c, base + i, ds[i]);
      }
    }
  }
  (void)ctx;
  return success();
}

/// The m16 x k16 A fragment of mma.sync (four 32-bit registers of 16-bit
/// pairs) from a shared, row-major A at (m0, k0): one ldmatrix.x4, lanes
/// addressing rows m0 + lane % 16 at columns k0 + (lane / 16) * 8. The
/// sparse instructions read their compressed A (m16 x 16 kept values) the
/// same way.
Value KernelLowering::ldmatrixA16(OpBuilder &b, const Buffer &a, Value m0,
                                  Value k0) {
  Value lane = arith::RemUIOp::create(b, loc, tid, cIdx(b, loc, 32));
  Value row = arith::AddIOp::create(
      b, loc, m0, arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, 16)));
  Value col = arith::AddIOp::create(
      b, loc, k0,
      arith::MulIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, lane, cIdx(b, loc, 16)),
          cIdx(b, loc, 8)));
  return nvgpu::LdMatrixOp::create(
      b, loc, VectorType::get({4, 2}, a.elementType), a.memref,
      ValueRange{sharedOffset(b, a, {row, col})}, /*transpose=*/false,
      /*numTiles=*/4);
}

/// The k`kRows` x n8 B fragment of mma (kRows / 8 registers of 16-bit pairs:
/// register r holds rows 8r + 2 (lane % 4) + {0, 1} of column lane / 4) at
/// (k0, n0) of a shared B stored K x N (a transposing ldmatrix, lanes
/// addressing rows k0 + lane % kRows) or N x K (`tb`: rows n0 + lane % 8 at
/// columns k0 + ((lane / 8) % (kRows / 8)) * 8). kRows is 16 (mma.sync
/// m16n8k16) or 32 (the sparse m16n8k32).
Value KernelLowering::ldmatrixB16(OpBuilder &b, const Buffer &bb, bool tb,
                                  Value k0, Value n0, int64_t kRows) {
  int64_t tiles = kRows / 8;
  Value lane = arith::RemUIOp::create(b, loc, tid, cIdx(b, loc, 32));
  Value off;
  if (!tb) {
    Value row = arith::AddIOp::create(
        b, loc, k0, arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, kRows)));
    off = sharedOffset(b, bb, {row, n0});
  } else {
    Value row = arith::AddIOp::create(
        b, loc, n0, arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, 8)));
    Value tile = arith::RemUIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, lane, cIdx(b, loc, 8)),
        cIdx(b, loc, tiles));
    Value col = arith::AddIOp::create(
        b, loc, k0, arith::MulIOp::create(b, loc, tile, cIdx(b, loc, 8)));
    off = sharedOffset(b, bb, {row, col});
  }
  return nvgpu::LdMatrixOp::create(
      b, loc, VectorType::get({tiles, 2}, bb.elementType), bb.memref,
      ValueRange{off}, /*transpose=*/!tb, /*numTiles=*/tiles);
}

//===----------------------------------------------------------------------===//
// Sparse gemm (2:4)
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::lowerGemmSp(GemmSpOp op, OpBuilder &b,
                                          IRMapping &map) {
  FailureOr<Buffer> a = bufferOf(op.getA(), b, map);
  FailureOr<Buffer> e = bufferOf(op.getE(), b, map);
  FailureOr<Buffer> bb = bufferOf(op.getB(), b, map);
  FailureOr<Buffer> c = bufferOf(op.getC(), b, map);
  if (failed(a) || failed(e) || failed(bb) || failed(c))
    return failure();
  if (amd)
    return op.emitOpError("T.gemm_sp is not supported on ROCm targets");
  if (c->kind != Kind::Fragment || a->kind != Kind::Shared ||
      e->kind != Kind::Shared || bb->kind != Kind::Shared)
    return op.emitOpError("needs shared A_sparse, E and B and a fragment "
                          "accumulator");
  if (op->hasAttr("wgmma"))
    return gemmSpWgmma(op, b, *a, *e, *bb, *c);
  if (op->hasAttr("warp_partition"))
    return gemmSpMma(op, b, *a, *e, *bb, *c);
  return op.emitOpError("was not assigned to the sparse tensor cores by "
                        "layout inference");
}

/// The 32-bit metadata register this thread gives a sparse m16 x k32
/// instruction (mma.sp m16n8k32, or one warp's 16 rows of wgmma.sp
/// m64nNk32) whose rows start at `row0`, for the K step at dense column
/// `k0` of E's tile. PTX: with sparsity selector 0 the metadata comes from
/// threads 0 and 1 of each quad (lanes 4g, 4g + 1), with selector 1 from
/// threads 2 and 3; thread 4g + j holds in bits 0..15 the metadata of row
/// g of columns 16 (j % 2) .. 16 (j % 2) + 15 of the step and in bits
/// 16..31 that of row g + 8, four bits per group of four columns, group i
/// at bits 4i (the row-major E's 16-bit chunks as they are). With `pair`,
/// threads 2 and 3 load the next step's metadata instead of repeating
/// this one's, so one register serves two steps (selectors 0 then 1).
Value KernelLowering::gemmSpMetadata(OpBuilder &b, const Buffer &e, Value row0,
                                     int64_t k0, bool pair) {
  Type i32 = b.getI32Type();
  int64_t bits = e.elementType.getIntOrFloatBitWidth();
  Value lane = arith::RemUIOp::create(b, loc, tid, cIdx(b, loc, 32));
  Value g = arith::DivUIOp::create(b, loc, lane, cIdx(b, loc, 4));
  Value j = arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, 4));
  // 16-bit chunk (16 columns of A) of the row: k0 / 16 + j % 2 (+ 2 (j / 2)).
  Value chunk = arith::AddIOp::create(
      b, loc, cIdx(b, loc, k0 / 16),
      arith::RemUIOp::create(b, loc, j, cIdx(b, loc, 2)));
  if (pair)
    chunk = arith::AddIOp::create(
        b, loc, chunk,
        arith::MulIOp::create(
            b, loc, arith::DivUIOp::create(b, loc, j, cIdx(b, loc, 2)),
            cIdx(b, loc, 2)));
  auto load32 = [&](Value row, Value col) -> Value {
    Value v = loadElement(b, e, {row, col});
    return bits == 32 ? v : arith::ExtUIOp::create(b, loc, i32, v).getResult();
  };
  auto i32c = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  auto chunkOf = [&](Value row) -> Value {
    if (bits == 16)
      return load32(row, chunk);
    if (bits == 32) {
      Value word =
          load32(row, arith::DivUIOp::create(b, loc, chunk, cIdx(b, loc, 2)));
      Value half = arith::IndexCastUIOp::create(
          b, loc, i32, arith::RemUIOp::create(b, loc, chunk, cIdx(b, loc, 2)));
      Value shift = arith::MulIOp::create(b, loc, half, i32c(16));
      return arith::AndIOp::create(
          b, loc, arith::ShRUIOp::create(b, loc, word, shift), i32c(0xFFFF));
    }
    // 8-bit metadata: two elements per chunk, low one first.
    Value col = arith::MulIOp::create(b, loc, chunk, cIdx(b, loc, 2));
    Value lo = load32(row, col);
    Value hi = load32(row, arith::AddIOp::create(b, loc, col, cIdx(b, loc, 1)));
    return arith::OrIOp::create(b, loc, lo,
                                arith::ShLIOp::create(b, loc, hi, i32c(8)));
  };
  Value row = arith::AddIOp::create(b, loc, row0, g);
  Value low = chunkOf(row);
  Value high = chunkOf(arith::AddIOp::create(b, loc, row, cIdx(b, loc, 8)));
  return arith::OrIOp::create(b, loc, low,
                              arith::ShLIOp::create(b, loc, high, i32c(16)));
}

/// A sparse gemm on mma.sp m16n8k32 (sm_80): warps split the tile as for
/// mma.sync (`warp_partition`), the accumulator is in mma's layout. Per K
/// step of 32 the compressed A fragment is the m16k16 fragment of A_sparse
/// (ldmatrix.x4 at column k0 / 2), B's is k32 x n8 (ldmatrix.x4), and the
/// metadata register comes from gemmSpMetadata, one per two steps.
LogicalResult KernelLowering::gemmSpMma(GemmSpOp op, OpBuilder &b,
                                        const Buffer &a, const Buffer &e,
                                        const Buffer &bb, const Buffer &c) {
  auto partition = op->getAttrOfType<DenseI64ArrayAttr>("warp_partition");
  int64_t warpsM = partition[0], warpsN = partition[1];
  int64_t m = op.getM(), n = op.getN(), k = op.getK();
  int64_t wm = m / warpsM, wn = n / warpsN;
  int64_t mTiles = wm / 16, nTiles = wn / 8, steps = k / 32;
  Type elem = a.elementType, acc = c.elementType;
  bool tb = op.getTransposeB();
  NVVM::MMATypes ptx = elem.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
  MLIRContext *ctx = b.getContext();
  Value warp = arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, 32));
  Value rowBase = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, warp, cIdx(b, loc, warpsN)),
      cIdx(b, loc, wm));
  Value colBase = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, warp, cIdx(b, loc, warpsN)),
      cIdx(b, loc, wn));
  auto plus = [&](Value x, int64_t cst) -> Value {
    return cst ? arith::AddIOp::create(b, loc, x, cIdx(b, loc, cst)).getResult()
               : x;
  };
  if (op.getClearAccum())
    for (int64_t r = 0; r < c.layout->getNumRegs(); ++r)
      regStore(b, c, r, zeroOf(b, loc, acc));
  auto resultType = LLVM::LLVMStructType::getLiteral(ctx, {acc, acc, acc, acc});
  SmallVector<Value> meta(mTiles);
  for (int64_t s = 0; s < steps; ++s) {
    int64_t k0 = s * 32;
    // One metadata register per two steps: selector 0, then 1.
    bool pair = s % 2 == 0 && s + 1 < steps;
    if (s % 2 == 0)
      for (int64_t mt = 0; mt < mTiles; ++mt)
        meta[mt] = gemmSpMetadata(b, e, plus(rowBase, mt * 16), k0, pair);
    Value selector =
        arith::ConstantIntOp::create(b, loc, b.getI32Type(), s % 2);
    SmallVector<SmallVector<Value>> aRegs;
    for (int64_t mt = 0; mt < mTiles; ++mt)
      aRegs.push_back(mmaRegisters(
          b, loc,
          ldmatrixA16(b, a, plus(rowBase, mt * 16), cIdx(b, loc, k0 / 2))));
    SmallVector<SmallVector<Value>> bRegs;
    for (int64_t nt = 0; nt < nTiles; ++nt)
      bRegs.push_back(mmaRegisters(
          b, loc,
          ldmatrixB16(b, bb, tb, cIdx(b, loc, k0), plus(colBase, nt * 8), 32)));
    for (int64_t mt = 0; mt < mTiles; ++mt)
      for (int64_t nt = 0; nt < nTiles; ++nt) {
        int64_t base = mt * 4 * nTiles + nt * 4;
        SmallVector<Value> cs;
        for (int64_t i = 0; i < 4; ++i)
          cs.push_back(regLoad(b, c, base + i));
        auto mma = NVVM::MmaSpOp::create(
            b, loc, resultType, aRegs[mt], bRegs[nt], cs, meta[mt], selector,
            {16, 8, 32}, std::nullopt,
            std::array<NVVM::MMATypes, 2>{ptx, ptx});
        for (int64_t i = 0; i < 4; ++i)
          regStore(b, c, base + i, LLVM::ExtractValueOp::create(b, loc, mma, i));
      }
  }
  return success();
}

/// A sparse gemm on wgmma.mma_async.sp m64nNk32 (sm_90a): warpgroups split
/// the tile as for the dense wgmma (`wgmma`); per K step of 32, A_sparse's
/// m64 x 16 kept values and B's k32 x N come through shared-memory
/// descriptors (the same ones as the dense instruction's, A's at column
/// k0 / 2), the metadata from a register per warp's 16 rows, filled before
/// the fence (gemmSpMetadata, one register per two steps). MLIR's NVVM ops
/// have no sparse wgmma, so this is inline PTX with tied accumulators; the
/// instructions form one wgmma group, waited for before the gemm ends.
LogicalResult KernelLowering::gemmSpWgmma(GemmSpOp op, OpBuilder &b,
                                          const Buffer &a, const Buffer &e,
                                          const Buffer &bb, const Buffer &c) {
  auto grid = op->getAttrOfType<DenseI64ArrayAttr>("wgmma");
  int64_t wgM = grid[0], wgN = grid[1];
  int64_t m = op.getM(), n = op.getN(), k = op.getK();
  int64_t tm = m / wgM, tn = n / wgN, mTiles = tm / 64, nTiles = tn / 8;
  int64_t steps = k / 32;
  Type elem = a.elementType, acc = c.elementType;
  bool tb = op.getTransposeB();
  MLIRContext *ctx = b.getContext();
  usesAsyncProxy = true;
  Value wg = arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, 128));
  Value wgRow = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, wg, cIdx(b, loc, wgN)),
      cIdx(b, loc, tm));
  Value wgCol = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, wg, cIdx(b, loc, wgN)),
      cIdx(b, loc, tn));
  // The warp's 16 rows of each 64.
  Value warpRow = arith::MulIOp::create(
      b, loc,
      arith::RemUIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, 32)),
          cIdx(b, loc, 4)),
      cIdx(b, loc, 16));
  auto plus = [&](Value x, int64_t cst) -> Value {
    return cst ? arith::AddIOp::create(b, loc, x, cIdx(b, loc, cst)).getResult()
               : x;
  };
  int64_t regsPerTile = 4 * nTiles;
  bool clear = op.getClearAccum();
  SmallVector<Value> accs =
      wgmmaAccumulators(b, c, mTiles, regsPerTile, acc, clear);
  auto structType = cast<LLVM::LLVMStructType>(accs.front().getType());
  // Metadata registers, [step / 2][mt].
  SmallVector<SmallVector<Value>> meta;
  for (int64_t s = 0; s < steps; s += 2) {
    SmallVector<Value> row;
    for (int64_t mt = 0; mt < mTiles; ++mt)
      row.push_back(gemmSpMetadata(
          b, e, arith::AddIOp::create(b, loc, plus(wgRow, mt * 64), warpRow),
          s * 32, s + 1 < steps));
    meta.push_back(row);
  }
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  std::string type = elem.isBF16() ? "bf16" : "f16";
  int64_t count = regsPerTile;
  for (int64_t s = 0; s < steps; ++s) {
    int64_t k0 = s * 32;
    Value kk = cIdx(b, loc, k0);
    Value descB = (tb ? wgmmaDescriptor(b, bb, true, wgCol, kk)
                      : wgmmaDescriptor(b, bb, false, kk, wgCol))
                      .desc;
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      Value descA = wgmmaDescriptor(b, a, true, plus(wgRow, mt * 64),
                                    cIdx(b, loc, k0 / 2))
                        .desc;
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "{\n.reg .pred p;\nsetp.ne.b32 p, " << (clear && s == 0 ? 0 : 1)
         << ", 0;\nwgmma.mma_async.sp.sync.aligned.m64n" << tn << "k32.f32."
         << type << "." << type << " {";
      for (int64_t i = 0; i < count; ++i)
        os << (i ? ", $" : "$") << i;
      os << "}, $" << count << ", $" << count + 1 << ", $" << count + 2
         << ", " << s % 2 << ", p, 1, 1, 0, " << (tb ? 0 : 1) << ";\n}";
      std::string constraints;
      for (int64_t i = 0; i < count; ++i)
        constraints += "=f,";
      constraints += "l,l,r";
      for (int64_t i = 0; i < count; ++i)
        constraints += "," + std::to_string(i);
      SmallVector<Value> operands{descA, descB, meta[s / 2][mt]};
      for (int64_t i = 0; i < count; ++i)
        operands.push_back(LLVM::ExtractValueOp::create(b, loc, accs[mt], i));
      accs[mt] = LLVM::InlineAsmOp::create(
                     b, loc, structType, operands, text, constraints,
                     /*has_side_effects=*/true, /*is_align_stack=*/false,
                     LLVM::tailcallkind::TailCallKind::None,
                     LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
                     ArrayAttr())
                     .getRes();
    }
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  // Done before the gemm ends, `async` or not: the instructions read the
  // metadata registers while in flight, and whatever comes next (the next
  // K tile's metadata) may reuse them (see tile-warp-specialize, which
  // keeps no sparse gemm in flight).
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  storeWgmmaAccumulators(b, c, accs, regsPerTile);
  return success();
}

/// The wgmma shared-memory matrix descriptor of the operand `buf` starting
/// at view element (row, col). The operand's rows are its strided dimension
/// (M or N when K-major, K when MN-major) and its columns the contiguous one.
/// Rows are `span` bytes apart within a panel (see sharedLinear), so a
/// K-major operand steps 8 * span bytes per 8 rows (stride byte offset) and
/// an MN-major one steps 8 * span bytes per 8 K rows (stride byte offset)
/// and rows * span bytes per panel of MN (leading byte offset).
///
/// With `from` (a descriptor of the same operand) the result is `from`'s
/// plus the distance between the two starts in 16-byte units: the start
/// address field is the low 14 bits (shared addresses stay below 2^18, so
/// the sum never carries out of it), and where the two starts differ only
/// by constants, as the K steps of one gemm do, LLVM folds the distance to
/// a constant: one add per wgmma instead of rebuilding the descriptor from
/// the address (64-bit and, shift and or).
KernelLowering::WgmmaDesc
KernelLowering::wgmmaDescriptor(OpBuilder &b, const Buffer &buf, bool kMajor,
                                Value row, Value col, const WgmmaDesc *from) {
  int64_t eb = elementBytes(buf.elementType);
  int64_t span = buf.swizzle;
  int64_t rows = buf.allocShape[buf.allocShape.size() - 2];
  SmallVector<Value> at(buf.viewOffsets.begin(), buf.viewOffsets.end());
  Value idx[2] = {row, col};
  for (int k = 0; k < 2; ++k) {
    Value &a = at[buf.viewDims[k]];
    a = a ? arith::AddIOp::create(b, loc, a, idx[k]).getResult() : idx[k];
  }
  for (Value &a : at)
    if (!a)
      a = cIdx(b, loc, 0);
  Value elems = emitSharedOffset(b, loc, buf.allocShape, at, eb, span,
                                 /*applySwizzle=*/false);
  Type i64 = b.getI64Type();
  if (from) {
    // Starts are 16-byte aligned, so the byte distance divides exactly.
    Value units = arith::DivSIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc, arith::SubIOp::create(b, loc, elems, from->elems),
            cIdx(b, loc, eb)),
        cIdx(b, loc, 16));
    Value units64 = arith::IndexCastOp::create(b, loc, i64, units);
    return {arith::AddIOp::create(b, loc, from->desc, units64), elems};
  }
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buf.memref);
  Value addr = arith::AddIOp::create(
      b, loc, base, arith::MulIOp::create(b, loc, elems, cIdx(b, loc, eb)));
  Value addr64 = arith::IndexCastUIOp::create(b, loc, i64, addr);
  auto c64 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, v);
  };
  int64_t sbo = 8 * span;
  int64_t lbo = kMajor ? 16 : rows * span;
  int64_t mode = span == 128 ? 1 : span == 64 ? 2 : 3;
  uint64_t fixed = (uint64_t((lbo >> 4) & 0x3FFF) << 16) |
                   (uint64_t((sbo >> 4) & 0x3FFF) << 32) |
                   (uint64_t(mode) << 62);
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, addr64, c64(0x3FFFF)), c64(4));
  return {arith::OrIOp::create(b, loc, start, c64((int64_t)fixed)), elems};
}

/// A gemm on warpgroup MMA (sm_90a): each warpgroup computes its
/// (M / wgM) x (N / wgN) tile as 64-row wgmma.mma_async instructions reading
/// A and B from shared memory through descriptors; the accumulator struct
/// is the fragment's registers in wgmma's order. The instructions of one
/// gemm form one wgmma group, waited for before the gemm ends.
LogicalResult KernelLowering::gemmWgmma(GemmOp op, OpBuilder &b,
                                        const Buffer &a, const Buffer &bb,
                                        const Buffer &c,
                                        ArrayRef<int64_t> aRegs) {
  if (failed(checkAccumulatorLayout(op, *c.layout, numThreads)))
    return failure();
  auto grid = op->getAttrOfType<DenseI64ArrayAttr>("wgmma");
  int64_t wgM = grid[0], wgN = grid[1];
  int64_t m = op.getM(), n = op.getN(), k = op.getK();
  int64_t tm = m / wgM, tn = n / wgN, mTiles = tm / 64, nTiles = tn / 8;
  Type elem = a.elementType, acc = c.elementType;
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  MLIRContext *ctx = b.getContext();
  NVVM::WGMMATypes wt;
  int64_t kStep;
  if (elem.isF16()) {
    wt = NVVM::WGMMATypes::f16;
    kStep = 16;
  } else if (elem.isBF16()) {
    wt = NVVM::WGMMATypes::bf16;
    kStep = 16;
  } else if (elem.isF32()) {
    wt = NVVM::WGMMATypes::tf32;
    kStep = 8;
  } else if (isa<Float8E4M3FNType>(elem)) {
    wt = NVVM::WGMMATypes::e4m3;
    kStep = 32;
  } else if (isa<Float8E5M2Type>(elem)) {
    wt = NVVM::WGMMATypes::e5m2;
    kStep = 32;
  } else if (elem.isInteger(8)) {
    wt = NVVM::WGMMATypes::s8;
    kStep = 32;
  } else {
    return op.emitOpError("wgmma does not support ") << elem;
  }
  NVVM::WGMMATypes dt = acc.isF32()   ? NVVM::WGMMATypes::f32
                        : acc.isF16() ? NVVM::WGMMATypes::f16
                                      : NVVM::WGMMATypes::s32;
  if (dt == NVVM::WGMMATypes::f16)
    return op.emitOpError("wgmma with a float16 accumulator is not supported yet");
  usesAsyncProxy = true;

  Value wg = arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, 128));
  // A replicated grid (policy `replicate`): warpgroup w computes the tile of
  // w mod (wgM wgN).
  if (numThreads / 128 > wgM * wgN)
    wg = arith::RemUIOp::create(b, loc, wg, cIdx(b, loc, wgM * wgN));
  // Warpgroups taking turns: wait for this one's turn; the next one's
  // starts once these instructions are issued (they run in issue order).
  // A turn spans one gemm (`pingpong`) or the gemms from one marked
  // `pingpong_begin` to one marked `pingpong_end` (a rotated loop's pair).
  bool turn = takesTurns(op);
  bool turnStarts = turn && !op->hasAttr("pingpong_end");
  bool turnEnds = turn && !op->hasAttr("pingpong_begin");
  if (turnStarts)
    turnBarrier(b, 0, /*arrive=*/false);
  Value wgRow = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, wg, cIdx(b, loc, wgN)),
      cIdx(b, loc, tm));
  Value wgCol = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, wg, cIdx(b, loc, wgN)),
      cIdx(b, loc, tn));
  auto plus = [&](Value x, int64_t cst) -> Value {
    return cst ? arith::AddIOp::create(b, loc, x, cIdx(b, loc, cst)).getResult()
               : x;
  };

  int64_t regsPerTile = 4 * nTiles;
  bool clear = op.getClearAccum();
  SmallVector<Value> accs =
      wgmmaAccumulators(b, c, mTiles, regsPerTile, acc, clear);
  auto structType = cast<LLVM::LLVMStructType>(accs.front().getType());
  // Register A: pack every 32-bit A register before the fence, which orders
  // the registers' definitions before the asynchronous reads.
  SmallVector<Value> aPacked;
  for (int64_t i = 0; i + 1 < (int64_t)aRegs.size(); i += 2) {
    Value pair = vector::FromElementsOp::create(
        b, loc, VectorType::get({2}, elem),
        ValueRange{regLoad(b, a, aRegs[i]), regLoad(b, a, aRegs[i + 1])});
    Value bits = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), pair);
    aPacked.push_back(
        vector::ExtractOp::create(b, loc, bits, ArrayRef<int64_t>{0}));
  }
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  auto layoutA = ta ? NVVM::MMALayout::col : NVVM::MMALayout::row;
  auto layoutB = tb ? NVVM::MMALayout::col : NVVM::MMALayout::row;
  auto shape = NVVM::MMAShapeAttr::get(ctx, 64, tn, kStep);
  // The first K step's descriptors; the later ones add to them.
  std::optional<WgmmaDesc> firstB;
  SmallVector<WgmmaDesc> firstA;
  for (int64_t k0 = 0; k0 < k; k0 += kStep) {
    // B: K-major is stored (N, K), MN-major (K, N).
    Value kk = cIdx(b, loc, k0);
    const WgmmaDesc *fromB = firstB ? &*firstB : nullptr;
    WgmmaDesc db = tb ? wgmmaDescriptor(b, bb, true, wgCol, kk, fromB)
                      : wgmmaDescriptor(b, bb, false, kk, wgCol, fromB);
    if (!firstB)
      firstB = db;
    Value descB = db.desc;
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      if (!aPacked.empty()) { // A in registers (see registerOperandA)
        int64_t first = ((k0 / kStep) * mTiles + mt) * 4;
        accs[mt] = wgmmaRegisterA(b, accs[mt],
                                  ArrayRef<Value>(aPacked).slice(first, 4),
                                  descB, tn, elem, tb, clear && k0 == 0);
        continue;
      }
      Value row = plus(wgRow, mt * 64);
      const WgmmaDesc *fromA = k0 ? &firstA[mt] : nullptr;
      WgmmaDesc da = ta ? wgmmaDescriptor(b, a, false, kk, row, fromA)
                        : wgmmaDescriptor(b, a, true, row, kk, fromA);
      if (!k0)
        firstA.push_back(da);
      Value descA = da.desc;
      accs[mt] = NVVM::WgmmaMmaAsyncOp::create(
          b, loc, structType, accs[mt], descA, descB, shape,
          NVVM::WGMMATypesAttr::get(ctx, wt), NVVM::WGMMATypesAttr::get(ctx, wt),
          NVVM::WGMMATypesAttr::get(ctx, dt),
          NVVM::WGMMAScaleOutAttr::get(ctx, clear && k0 == 0
                                                ? NVVM::WGMMAScaleOut::zero
                                                : NVVM::WGMMAScaleOut::one),
          NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
          NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
          NVVM::MMALayoutAttr::get(ctx, layoutA),
          NVVM::MMALayoutAttr::get(ctx, layoutB),
          dt == NVVM::WGMMATypes::s32
              ? NVVM::MMAIntOverflowAttr::get(ctx, NVVM::MMAIntOverflow::wrapped)
              : NVVM::MMAIntOverflowAttr());
    }
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  if (turnEnds)
    turnBarrier(b, 1, /*arrive=*/true);
  // An async gemm stays in flight until a tile.gemm_wait.
  if (!op.getAsync())
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  storeWgmmaAccumulators(b, c, accs, regsPerTile);
  return success();
}

/// Whether the consumer warpgroups take turns at `op` (a gemm marked
/// `pingpong` by tile-warp-specialize, or `pingpong_begin`/`pingpong_end`:
/// async gemms of a rotated loop, one turn for the two): a wgmma gemm
/// whose warpgroups each own a band of rows (grid n x 1, n > 1) and read A
/// from shared memory or from their registers as they are, so that nothing
/// between the start and the end of a turn synchronizes the warpgroups.
bool KernelLowering::takesTurns(GemmOp op) {
  auto grid = op->getAttrOfType<DenseI64ArrayAttr>("wgmma");
  int64_t groups = numThreads / 128;
  bool marked = (op->hasAttr("pingpong") && !op.getAsync()) ||
                op->hasAttr("pingpong_begin") || op->hasAttr("pingpong_end");
  if (!marked || producerThreads == 0 ||
      !grid || groups < 2 || grid[0] != groups || grid[1] != 1 ||
      !isInScope(op.getB().getType(), MemoryScope::shared))
    return false;
  if (isInScope(op.getA().getType(), MemoryScope::shared))
    return true;
  std::optional<TileLayout> la = fragmentLayout(op.getA());
  return la && registerOperandA(op, *la, numThreads);
}

/// One wgmma.mma_async with A from registers (the RS form), on the
/// accumulator struct `acc` of an m64 x `n` tile: four 32-bit registers of
/// packed 16-bit A (the m16k16 fragment of each warp), B through `descB`;
/// `zeroAcc` ignores the accumulator's input (scale-d = 0).
/// MLIR's NVVM op has only the shared-memory form, so this is inline PTX;
/// the accumulators are tied operands.
Value KernelLowering::wgmmaRegisterA(OpBuilder &b, Value acc,
                                     ArrayRef<Value> aRegs, Value descB,
                                     int64_t n, Type elem, bool transB,
                                     bool zeroAcc) {
  auto structType = cast<LLVM::LLVMStructType>(acc.getType());
  int64_t count = structType.getBody().size();
  std::string type = elem.isBF16() ? "bf16" : "f16";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "{\n.reg .pred p;\nsetp.ne.b32 p, " << (zeroAcc ? 0 : 1) << ", 0;\n"
     << "wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << type << "."
     << type << " {";
  for (int64_t i = 0; i < count; ++i)
    os << (i ? ", $" : "$") << i;
  os << "}, {$" << count << ", $" << count + 1 << ", $" << count + 2 << ", $"
     << count + 3 << "}, $" << count + 4 << ", p, 1, 1, " << (transB ? 0 : 1)
     << ";\n}";
  std::string constraints;
  for (int64_t i = 0; i < count; ++i)
    constraints += "=f,";
  constraints += "r,r,r,r,l";
  for (int64_t i = 0; i < count; ++i)
    constraints += "," + std::to_string(i);
  SmallVector<Value> operands(aRegs.begin(), aRegs.end());
  operands.push_back(descB);
  for (int64_t i = 0; i < count; ++i)
    operands.push_back(LLVM::ExtractValueOp::create(b, loc, acc, i));
  return LLVM::InlineAsmOp::create(
             b, loc, structType, operands, text, constraints,
             /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None,
             LLVM::AsmDialectAttr::get(b.getContext(),
                                       LLVM::AsmDialect::AD_ATT),
             ArrayAttr())
      .getRes();
}

/// A gemm on AMD matrix cores (MFMA 32x32x8, wave64): waves form a
/// wm x wn grid (the `mfma` attribute), each owning (M / wm) x (N / wn) made
/// of 32x32 blocks. Per K step of 8, lane l holds A[row0 + l % 32][k0 +
/// 4 (l / 32) + i] and B[k0 + 4 (l / 32) + i][col0 + l % 32] (i < 4), and
/// the block's 16 accumulators (column l % 32, rows 8 j + 4 (l / 32) + i) in
/// register order 4 j + i, as layout inference laid them out.
LogicalResult KernelLowering::gemmMfma(GemmOp op, OpBuilder &b,
                                       const Buffer &a, const Buffer &bb,
                                       const Buffer &c) {
  auto grid = op->getAttrOfType<DenseI64ArrayAttr>("mfma");
  int64_t wm = grid[0], wn = grid[1];
  int64_t m = op.getM(), n = op.getN(), k = op.getK();
  int64_t tm = m / wm, tn = n / wn, mTiles = tm / 32, nTiles = tn / 32;
  Type elem = a.elementType, acc = c.elementType;
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  if (!(elem.isF16() || elem.isBF16()) || !acc.isF32())
    return op.emitOpError("MFMA gemms support f16/bf16 inputs with an f32 "
                          "accumulator, got ")
           << elem << " -> " << acc;
  if (failed(checkAccumulatorLayout(op, *c.layout, numThreads)))
    return failure();
  Value wave = arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, 64));
  Value lane = arith::RemUIOp::create(b, loc, tid, cIdx(b, loc, 64));
  Value l32 = arith::RemUIOp::create(b, loc, lane, cIdx(b, loc, 32));
  Value kq = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, lane, cIdx(b, loc, 32)),
      cIdx(b, loc, 4));
  Value rowBase = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, wave, cIdx(b, loc, wn)),
      cIdx(b, loc, tm));
  Value colBase = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, wave, cIdx(b, loc, wn)),
      cIdx(b, loc, tn));
  auto add = [&](Value x, Value y, int64_t cst) -> Value {
    Value v = arith::AddIOp::create(b, loc, x, y);
    return cst ? arith::AddIOp::create(b, loc, v, cIdx(b, loc, cst)).getResult()
               : v;
  };
  // The intrinsics take bf16 as i16.
  Type lanes = elem.isBF16() ? Type(b.getI16Type()) : elem;
  auto operandType = VectorType::get({4}, lanes);
  auto accType = VectorType::get({16}, acc);
  if (op.getClearAccum())
    for (int64_t r = 0; r < c.layout->getNumRegs(); ++r)
      regStore(b, c, r, zeroOf(b, loc, acc));
  auto operand = [&](const Buffer &buf, bool transposed, Value mn, Value kk) {
    SmallVector<Value> elems;
    for (int64_t i = 0; i < 4; ++i) {
      Value ki = arith::AddIOp::create(b, loc, kk, cIdx(b, loc, i));
      Value v = transposed ? loadElement(b, buf, {ki, mn})
                           : loadElement(b, buf, {mn, ki});
      if (elem.isBF16())
        v = arith::BitcastOp::create(b, loc, b.getI16Type(), v);
      elems.push_back(v);
    }
    return vector::FromElementsOp::create(b, loc, operandType, elems);
  };
  Value zero32 = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
  for (int64_t k0 = 0; k0 < k; k0 += 8) {
    Value kk = add(kq, cIdx(b, loc, 0), k0);
    SmallVector<Value> aOps, bOps;
    for (int64_t mt = 0; mt < mTiles; ++mt)
      aOps.push_back(operand(a, ta, add(rowBase, l32, mt * 32), kk));
    for (int64_t nt = 0; nt < nTiles; ++nt)
      // B is K x N (row-major K) unless transposed (stored N x K).
      bOps.push_back(operand(bb, !tb, add(colBase, l32, nt * 32), kk));
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      for (int64_t nt = 0; nt < nTiles; ++nt) {
        int64_t base = (mt * nTiles + nt) * 16;
        SmallVector<Value> cs;
        for (int64_t r = 0; r < 16; ++r)
          cs.push_back(regLoad(b, c, base + r));
        Value cv = vector::FromElementsOp::create(b, loc, accType, cs);
        SmallVector<Value> args = {aOps[mt], bOps[nt], cv, zero32, zero32,
                                   zero32};
        Value d = elem.isF16()
                      ? ROCDL::mfma_f32_32x32x8f16::create(b, loc, accType, args)
                            .getResult()
                      : ROCDL::mfma_f32_32x32x8bf16_1k::create(b, loc, accType,
                                                               args)
                            .getResult();
        for (int64_t r = 0; r < 16; ++r)
          regStore(b, c, base + r,
                   vector::ExtractOp::create(b, loc, d, ArrayRef<int64_t>{r}));
      }
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Warp specialization and TMA
//===----------------------------------------------------------------------===//

/// The shared allocation under views of `v`.
static Operation *sharedAllocOf(Value v) {
  while (true) {
    if (auto sub = v.getDefiningOp<memref::SubViewOp>())
      v = sub.getSource();
    else if (auto cast = v.getDefiningOp<memref::CastOp>())
      v = cast.getSource();
    else
      break;
  }
  return v.getDefiningOp<AllocSharedOp>();
}

/// `copy` goes through tensor map `m` (one per parameter, box and swizzle).
void KernelLowering::useTensorMap(CopyOp copy, const TensorMap &m) {
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
LogicalResult KernelLowering::collectTensorMaps() {
  WalkResult result = kernel.walk([&](CopyOp copy) -> WalkResult {
    if (!copy.getBarrier())
      return WalkResult::advance();
    auto arg = dyn_cast<BlockArgument>(copy.getSrc());
    if (!arg || arg.getOwner()->getParentOp() != func.getOperation())
      return copy.emitOpError("a TMA copy must read a kernel argument");
    auto alloc = dyn_cast_or_null<AllocSharedOp>(sharedAllocOf(copy.getDst()));
    if (!alloc)
      return copy.emitOpError("a TMA copy must write a tile.alloc_shared");
    int64_t swizzle = alloc.getSwizzleAttr() ? alloc.getSwizzleAttr().getBytes() : 0;
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
/// shared memory beside everything else.
void KernelLowering::chooseTmaStores() {
  if (amd || !tmaStore)
    return;
  WarpSpecializeOp ws;
  kernel.walk([&](WarpSpecializeOp w) { ws = w; });
  if (!ws)
    return;
  int64_t need = 0;
  SmallVector<Operation *> found;
  ws.getConsumer().walk([&](CopyOp copy) {
    auto frag = copy.getSrc().getDefiningOp<AllocFragmentOp>();
    auto arg = dyn_cast<BlockArgument>(copy.getDst());
    if (!frag || !arg || arg.getOwner()->getParentOp() != func.getOperation())
      return;
    MemRefType src = frag.getType();
    auto dst = cast<MemRefType>(copy.getDst().getType());
    if (src.getRank() != 2 || dst.getRank() != 2 ||
        !dst.getLayout().isIdentity())
      return;
    if (ArrayRef<int64_t>(copy.getSrcSizes()) != src.getShape() ||
        ArrayRef<int64_t>(copy.getDstSizes()) != src.getShape())
      return;
    for (Value o : copy.getSrcOffsets())
      if (!matchPattern(o, m_Zero()))
        return;
    int64_t eb = elementBytes(dst.getElementType());
    if ((eb != 2 && eb != 4) || ShapedType::isDynamic(dst.getDimSize(1)) ||
        (dst.getDimSize(1) * eb) % 16)
      return;
    int64_t rows = src.getDimSize(0), cols = src.getDimSize(1);
    if (rows > 256 || cols % (128 / eb))
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
  if (total > maxSharedBytesPerBlock(
                  cast<NVVM::NVVMTargetAttr>(target).getChip()))
    return;
  tmaStores.insert(found.begin(), found.end());
  stagingBytes = need;
}

/// The epilogue copy of a fragment through the staging buffer: once the
/// previous TMA stores have read the buffer, the role's threads write the
/// fragment into it (128-byte swizzle, panels), fence it for the async
/// proxy, and one thread issues a TMA store per panel and commits them as
/// one bulk group, left in flight.
LogicalResult KernelLowering::lowerTmaStore(CopyOp op, OpBuilder &b,
                                            IRMapping &map) {
  FailureOr<Side> src =
      sideOf(op.getSrc(), op.getSrcOffsets(), op.getSrcSizes(), b, map);
  if (failed(src))
    return failure();
  MLIRContext *ctx = b.getContext();
  Type et = cast<MemRefType>(op.getDst().getType()).getElementType();
  int64_t eb = elementBytes(et);
  int64_t rows = src->buf.shape[0], cols = src->buf.shape[1];
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Buffer staging;
  staging.kind = Kind::Shared;
  staging.memref = memref::ViewOp::create(
      b, loc,
      MemRefType::get({rows * cols}, et, MemRefLayoutAttrInterface(), workgroup),
      smem, smemAt(b, stagingOffset), ValueRange{});
  staging.shape = {rows, cols};
  staging.elementType = et;
  staging.allocShape = {rows, cols};
  staging.viewOffsets.assign(2, Value());
  staging.viewDims = {0, 1};
  staging.swizzle = 128;
  guarded(b, loc, isRoleLeader(b), [&](OpBuilder &gb) {
    NVVM::CpAsyncBulkWaitGroupOp::create(gb, loc, gb.getI32IntegerAttr(0),
                                         gb.getUnitAttr());
  });
  barrier(b);
  Side dst{staging, {cIdx(b, loc, 0), cIdx(b, loc, 0)}, {rows, cols}};
  copyFragmentMemory(b, *src, dst, /*toMemory=*/true);
  proxyFence(b);
  barrier(b);
  unsigned mapIndex = copyTensorMap.lookup(op);
  Value desc = gpuFunc.getArgument(mapIndex);
  int64_t width = tensorMaps[mapIndex].box.back();
  Value row = map.lookupOrDefault(op.getDstOffsets()[0]);
  Value col = map.lookupOrDefault(op.getDstOffsets()[1]);
  guarded(b, loc, isRoleLeader(b), [&](OpBuilder &gb) {
    for (int64_t c0 = 0; c0 < cols; c0 += width) {
      Value c = c0 ? arith::AddIOp::create(gb, loc, col, cIdx(gb, loc, c0))
                         .getResult()
                   : col;
      SmallVector<Value> coords = {
          arith::IndexCastOp::create(gb, loc, gb.getI32Type(), c),
          arith::IndexCastOp::create(gb, loc, gb.getI32Type(), row)};
      Value elems = emitSharedOffset(
          gb, loc, staging.allocShape,
          {cIdx(gb, loc, 0), cIdx(gb, loc, c0)}, eb, 128,
          /*applySwizzle=*/false);
      Value ptr = sharedPtr(
          gb, staging.memref,
          arith::MulIOp::create(gb, loc, elems, cIdx(gb, loc, eb)));
      NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
          gb, loc, desc, ptr, coords, Value(),
          NVVM::TMAStoreModeAttr::get(ctx, NVVM::TMAStoreMode::TILE), Value());
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(gb, loc);
  });
  return success();
}

/// A copy through a barrier: the role's first thread issues one TMA load
/// per panel of the destination (see collectTensorMaps); they complete on
/// the barrier's transaction count.
LogicalResult KernelLowering::lowerTmaCopy(CopyOp op, OpBuilder &b,
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
  Value rank;
  if (share > 1)
    rank = arith::IndexCastUIOp::create(
        b, loc, b.getIndexType(),
        NVVM::ClusterId::create(b, loc, b.getI32Type()));
  guarded(b, loc, isRoleLeader(b), [&](OpBuilder &lb) {
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
      // Coordinates, innermost first, as i32.
      SmallVector<Value> coords;
      for (int64_t d = srcOffsets.size() - 1; d >= 0; --d) {
        Value o = srcOffsets[d];
        if (d == (int64_t)srcOffsets.size() - 1 && c0)
          o = arith::AddIOp::create(gb, loc, o, cIdx(gb, loc, c0));
        coords.push_back(arith::IndexCastOp::create(gb, loc, gb.getI32Type(), o));
      }
      // The destination of this panel: element (0, ..., c0) of the view.
      SmallVector<Value> at(dst->viewOffsets.begin(), dst->viewOffsets.end());
      for (auto [k, o] : llvm::enumerate(dstOffsets)) {
        Value v = k + 1 == dstOffsets.size() && c0
                      ? arith::AddIOp::create(gb, loc, o, cIdx(gb, loc, c0)).getResult()
                      : o;
        Value &a = at[dst->viewDims[k]];
        a = a ? arith::AddIOp::create(gb, loc, a, v).getResult() : v;
      }
      for (Value &a : at)
        if (!a)
          a = cIdx(gb, loc, 0);
      Value elems = emitSharedOffset(gb, loc, dst->allocShape, at, eb,
                                     dst->swizzle, /*applySwizzle=*/false);
      Value ptr = sharedPtr(gb, dst->memref,
                            arith::MulIOp::create(gb, loc, elems, cIdx(gb, loc, eb)));
      Value cluster = LLVM::AddrSpaceCastOp::create(
          gb, loc, LLVM::LLVMPointerType::get(gb.getContext(), 7), ptr);
      Value mask;
      if (share > 1)
        mask = arith::ConstantIntOp::create(gb, loc, gb.getI16Type(),
                                            (1 << share) - 1);
      NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
          gb, loc, cluster, desc, coords, bar, ValueRange{}, mask, Value(),
          NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false,
          NVVM::CTAGroupKindAttr(), Value());
    }
  });
  return success();
}

/// The producer warpgroup(s) run one region, the kernel's threads the other;
/// the producer hands its registers to the consumers.
LogicalResult KernelLowering::lowerWarpSpecialize(WarpSpecializeOp op,
                                                  OpBuilder &b, IRMapping &map,
                                                  Context &ctx) {
  int64_t total = numThreads + producerThreads;
  // Registers per thread: the cap at entry is 64K / total in steps of 8
  // (ptxas allocates that much when setmaxnreg is used); the producer keeps
  // 40, and setmaxnreg.inc can only hand the consumers what the block's own
  // producers released: asking for more blocks forever (640 threads: 96 at
  // entry, 112 asked, 104 possible). At most 240 each.
  int64_t entryRegs = (65536 / total) / 8 * 8;
  int64_t consumerRegs = std::min<int64_t>(
      240, (entryRegs + (entryRegs - 40) * producerThreads / numThreads) / 8 * 8);
  bool adjust = total > 128 && consumerRegs > entryRegs;
  Value isProducer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                           tid, cIdx(b, loc, numThreads));
  auto ifOp = scf::IfOp::create(b, loc, isProducer, /*withElseRegion=*/true);
  LogicalResult status = success();
  int64_t savedBase = roleBase, savedThreads = roleThreads,
          savedBarrier = roleBarrier;
  {
    OpBuilder pb = OpBuilder::atBlockTerminator(ifOp.thenBlock());
    if (adjust)
      NVVM::SetMaxRegisterOp::create(pb, loc, 40,
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
      Value isLast = arith::CmpIOp::create(
          cb, loc, arith::CmpIPredicate::eq, wg,
          cIdx(cb, loc, numThreads / 128 - 1));
      guarded(cb, loc, isLast, [&](OpBuilder &gb) {
        NVVM::BarrierArriveOp::create(gb, loc, i32(kTurnBarrier), i32(256));
      });
    }
    if (failed(lowerBlock(op.getConsumer().front(), cb, map, ctx)))
      status = failure();
    // Shared memory must outlive the TMA stores reading it.
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

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

Value reduceIdentity(OpBuilder &b, Location loc, ReduceKind kind, Type type) {
  bool isMax = kind == ReduceKind::max, isMin = kind == ReduceKind::min;
  if (!isMax && !isMin)
    return zeroOf(b, loc, type);
  if (auto f = dyn_cast<FloatType>(type))
    return arith::ConstantFloatOp::create(
        b, loc, f, APFloat::getInf(f.getFloatSemantics(), isMax));
  unsigned width = type.getIntOrFloatBitWidth();
  APInt v = isMax ? APInt::getSignedMinValue(width)
                  : APInt::getSignedMaxValue(width);
  return arith::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, v));
}

Value reduceCombine(OpBuilder &b, Location loc, ReduceKind kind, Value acc,
                    Value x) {
  bool isFloat = isa<FloatType>(x.getType());
  switch (kind) {
  case ReduceKind::sum:
  case ReduceKind::abssum:
    return isFloat ? arith::AddFOp::create(b, loc, acc, x).getResult()
                   : arith::AddIOp::create(b, loc, acc, x).getResult();
  case ReduceKind::max:
  case ReduceKind::absmax:
    return isFloat ? arith::MaxNumFOp::create(b, loc, acc, x).getResult()
                   : arith::MaxSIOp::create(b, loc, acc, x).getResult();
  case ReduceKind::min:
    return isFloat ? arith::MinNumFOp::create(b, loc, acc, x).getResult()
                   : arith::MinSIOp::create(b, loc, acc, x).getResult();
  }
  llvm_unreachable("reduce kind");
}

Value absOf(OpBuilder &b, Location loc, ReduceKind kind, Value x) {
  if (kind != ReduceKind::abssum && kind != ReduceKind::absmax)
    return x;
  return isa<FloatType>(x.getType())
             ? math::AbsFOp::create(b, loc, x).getResult()
             : math::AbsIOp::create(b, loc, x).getResult();
}

/// Shuffles a value of any 16/32/64-bit type (others through f32/i32).
Value shuffleXor(OpBuilder &b, Location loc, Value v, int64_t offset,
                 int64_t warpSize) {
  Type type = v.getType();
  Value x = v;
  if (type.getIntOrFloatBitWidth() < 32)
    x = convertScalar(b, loc, v, isa<FloatType>(type) ? Type(b.getF32Type())
                                                      : Type(b.getI32Type()));
  Value off = arith::ConstantIntOp::create(b, loc, b.getI32Type(), offset);
  Value width = arith::ConstantIntOp::create(b, loc, b.getI32Type(), warpSize);
  Value s = gpu::ShuffleOp::create(b, loc, x, off, width, gpu::ShuffleMode::XOR)
                .getShuffleResult();
  return convertScalar(b, loc, s, type);
}

LogicalResult KernelLowering::lowerReduce(ReduceOp op, OpBuilder &b,
                                          IRMapping &map) {
  FailureOr<Buffer> src = bufferOf(op.getSrc(), b, map);
  FailureOr<Buffer> dst = bufferOf(op.getDst(), b, map);
  if (failed(src) || failed(dst))
    return failure();
  ReduceKind kind = op.getKind();
  int64_t dim = op.getDim();
  Type acc = dst->elementType;
  if (src->kind != Kind::Fragment || dst->kind != Kind::Fragment) {
    // From memory (or into memory): stage fragments through scratch, then
    // each thread computes whole rows of the destination.
    return op.emitOpError("reductions are supported between fragments on "
                          "CUDA targets; copy shared data to a fragment "
                          "first");
  }
  const TileLayout &ls = *src->layout;
  // The natural result layout: the source without `dim`.
  TileLayout natural = ls.dropDim(dim);
  if (dst->rank() == src->rank())
    natural = natural.insertUnitDim(dim);
  else if (dst->rank() == 1 && natural.getShape().empty())
    natural = natural.insertUnitDim(0);
  bool direct = natural == *dst->layout;
  // Partials per natural register.
  int64_t nregs = natural.getNumRegs();
  SmallVector<Value> partial(nregs);
  SmallVector<SmallVector<Value>> terms(nregs);
  // The natural register of each source register (the same in every
  // thread), and whether the source register can be padding.
  auto naturalIndex = [&](ArrayRef<int64_t> sidx) {
    SmallVector<int64_t> out(sidx);
    if (dst->rank() == src->rank())
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
    Value x = convertScalar(b, loc, regLoad(b, *src, rs), acc);
    x = absOf(b, loc, kind, x);
    if (mayPad) {
      SmallVector<Value> sidx = ls.emitInverse(b, loc, tid, rs);
      Value ok;
      for (int64_t d = 0; d < src->rank(); ++d)
        ok = andOf(b, loc, ok,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         sidx[d], cIdx(b, loc, src->shape[d])));
      x = arith::SelectOp::create(b, loc, ok, x,
                                  reduceIdentity(b, loc, kind, acc));
    }
    terms[*rd].push_back(x);
  }
  // Each thread combines its own terms as a balanced tree: independent
  // operations the scheduler can overlap, not one dependent chain.
  for (int64_t r = 0; r < nregs; ++r) {
    SmallVector<Value> level = terms[r];
    if (level.empty()) {
      partial[r] = reduceIdentity(b, loc, kind, acc);
      continue;
    }
    while (level.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2)
        next.push_back(reduceCombine(b, loc, kind, level[i], level[i + 1]));
      if (level.size() % 2)
        next.push_back(level.back());
      level = std::move(next);
    }
    partial[r] = level.front();
  }
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
        p = reduceCombine(b, loc, kind, p, shuffleXor(b, loc, p, o, warpSize));
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
      Value safe = arith::MinUIOp::create(b, loc, lins[r],
                                          cIdx(b, loc, elems - 1));
      for (int64_t i = 0; i < ways; ++i) {
        Value x = loadElement(b, scratch, {cIdx(b, loc, i), safe});
        total = total ? reduceCombine(b, loc, kind, total, x) : x;
      }
      partial[r] = total;
    }
    barrier(b);
  }
  if (direct) {
    for (int64_t r = 0; r < nregs; ++r) {
      Value v = partial[r];
      if (!op.getClear())
        v = reduceCombine(b, loc, kind, regLoad(b, *dst, r), v);
      regStore(b, *dst, r, v);
    }
    return success();
  }
  // Convert the natural result to the destination's layout through scratch.
  Buffer tmp = *dst;
  tmp.layout = natural;
  tmp.memref = privateAlloca(b, {nregs}, acc);
  for (int64_t r = 0; r < nregs; ++r)
    regStore(b, tmp, r, partial[r]);
  Side from{tmp, {}, dst->shape}, to{*dst, {}, dst->shape};
  for (int64_t i = 0; i < dst->rank(); ++i) {
    from.offsets.push_back(cIdx(b, loc, 0));
    to.offsets.push_back(cIdx(b, loc, 0));
  }
  if (!op.getClear()) {
    // Combine with the old values: convert those to the natural layout.
    Buffer old = tmp;
    old.memref = privateAlloca(b, {nregs}, acc);
    Side oldSide{old, from.offsets, dst->shape};
    copyThroughScratch(b, to, oldSide);
    for (int64_t r = 0; r < nregs; ++r)
      regStore(b, tmp, r,
               reduceCombine(b, loc, kind, regLoad(b, old, r),
                             regLoad(b, tmp, r)));
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
  auto sideFor = [&](const Buffer &buf) {
    Side s{buf, {}, shape};
    for (size_t i = 0; i < shape.size(); ++i)
      s.offsets.push_back(cIdx(b, loc, 0));
    return s;
  };
  // Work in shared memory: fragments go through scratch.
  Buffer work = *dst;
  bool dstFrag = dst->kind == Kind::Fragment;
  if (src->kind == Kind::Fragment || dstFrag) {
    Side scratch = scratchSide(b, shape, acc);
    work = scratch.buf;
    barrier(b);
    if (src->kind == Kind::Fragment)
      copyFragmentMemory(b, sideFor(*src), scratch, true);
    else
      copyMemoryToMemory(b, sideFor(*src), scratch, false);
  } else if (src->memref != dst->memref) {
    barrier(b);
    copyMemoryToMemory(b, sideFor(*src), sideFor(*dst), false);
  }
  if (work.kind != Kind::Shared)
    return op.emitOpError("cumsum needs shared or fragment buffers on CUDA "
                          "targets");
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
    Value line = arith::AddIOp::create(b, loc, tid, cIdx(b, loc, k * numThreads));
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
          ValueRange{zeroOf(gb, loc, acc)},
          [&](OpBuilder &lb, Location l, Value i, ValueRange args) {
            Value p = op.getReverse()
                          ? arith::SubIOp::create(lb, l, cIdx(lb, l, extent - 1), i)
                                .getResult()
                          : i;
            SmallVector<Value> idx(pos);
            idx[dim] = p;
            Value x = convertScalar(lb, l, loadElement(lb, work, idx), acc);
            Value s = isa<FloatType>(acc)
                          ? arith::AddFOp::create(lb, l, args[0], x).getResult()
                          : arith::AddIOp::create(lb, l, args[0], x).getResult();
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

//===----------------------------------------------------------------------===//
// Atomics and printing
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::lowerAtomicAdd(AtomicAddOp op, OpBuilder &b,
                                             IRMapping &map, Context &ctx) {
  FailureOr<Buffer> dst = bufferOf(op.getDst(), b, map);
  if (failed(dst))
    return failure();
  Type elem = dst->elementType;
  arith::AtomicRMWKind kind = isa<FloatType>(elem) ? arith::AtomicRMWKind::addf
                                                   : arith::AtomicRMWKind::addi;
  SmallVector<Value> offsets;
  for (Value o : op.getOffsets())
    offsets.push_back(map.lookupOrDefault(o));
  auto atomicAt = [&](OpBuilder &ab, ArrayRef<Value> idx, Value v) {
    Value ok = dst->kind == Kind::Global ? inBounds(ab, *dst, idx) : Value();
    guarded(ab, loc, ok, [&](OpBuilder &gb) {
      if (dst->kind == Kind::Shared)
        memref::AtomicRMWOp::create(gb, loc, kind, v, dst->memref,
                                    ValueRange{sharedOffset(gb, *dst, idx)});
      else
        memref::AtomicRMWOp::create(gb, loc, kind, v, dst->memref, idx);
    });
  };
  Value value = map.lookupOrDefault(op.getValue());
  if (!isa<MemRefType>(op.getValue().getType())) {
    guarded(b, loc, sideEffectGuard(b, ctx), [&](OpBuilder &gb) {
      atomicAt(gb, offsets, convertScalar(gb, loc, value, elem));
    });
    return success();
  }
  FailureOr<Buffer> src = bufferOf(op.getValue(), b, map);
  if (failed(src))
    return failure();
  if (src->kind != Kind::Fragment)
    return op.emitOpError("atomic adds of tiles need a fragment value on CUDA "
                          "targets");
  const TileLayout &layout = *src->layout;
  int64_t lead = dst->rank() - src->rank();
  Value leader;
  for (const LayoutDigit &d : layout.getDigits()) {
    if (!d.isReplica())
      continue;
    Value digit = arith::RemUIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, tid, cIdx(b, loc, d.stride)),
        cIdx(b, loc, d.size));
    leader = andOf(b, loc, leader,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, digit,
                                         cIdx(b, loc, 0)));
  }
  bool pairs = pairedAtomicAdd(*src, *dst, offsets);
  for (int64_t r = 0; r < layout.getNumRegs(); r += pairs ? 2 : 1) {
    SmallVector<Value> fidx = layout.emitInverse(b, loc, tid, r);
    Value cond = leader;
    for (int64_t d = 0; d < src->rank(); ++d)
      cond = andOf(b, loc, cond,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         fidx[d], cIdx(b, loc, src->shape[d])));
    SmallVector<Value> idx;
    for (int64_t d = 0; d < dst->rank(); ++d)
      idx.push_back(d < lead ? offsets[d]
                             : arith::AddIOp::create(b, loc, offsets[d],
                                                     fidx[d - lead])
                                   .getResult());
    if (!pairs) {
      guarded(b, loc, cond, [&](OpBuilder &gb) {
        atomicAt(gb, idx, convertScalar(gb, loc, regLoad(gb, *src, r), elem));
      });
      continue;
    }
    // Registers r and r + 1 hold elements (.., c) and (.., c + 1), c even:
    // both are in bounds when the first is (the last extent is even).
    cond = andOf(b, loc, cond, inBounds(b, *dst, idx));
    guarded(b, loc, cond, [&](OpBuilder &gb) {
      Value ptr = globalElementPtr(gb, *dst, idx);
      Value lo = convertScalar(gb, loc, regLoad(gb, *src, r), elem);
      Value hi = convertScalar(gb, loc, regLoad(gb, *src, r + 1), elem);
      LLVM::InlineAsmOp::create(
          gb, loc, TypeRange{}, ValueRange{ptr, lo, hi},
          "red.global.add.v2.f32 [$0], {$1, $2};", "l,f,f",
          /*has_side_effects=*/true, /*is_align_stack=*/false,
          LLVM::tailcallkind::TailCallKind::None,
          LLVM::AsmDialectAttr::get(gb.getContext(), LLVM::AsmDialect::AD_ATT),
          ArrayAttr());
    });
  }
  return success();
}

/// Whether a fragment atomic add into global float32 memory can go out as
/// pairs of registers (`red.global.add.v2.f32`, sm_90 and PTX 8.1): every
/// even register and the next hold consecutive elements of the last
/// dimension (as in the mma/wgmma accumulator layouts), starting at an even
/// column of a destination whose last extent is even.
bool KernelLowering::pairedAtomicAdd(const Buffer &src, const Buffer &dst,
                                     ArrayRef<Value> offsets) {
  auto nvvm = dyn_cast<NVVM::NVVMTargetAttr>(target);
  if (amd || !nvvm || dst.kind != Kind::Global || !dst.elementType.isF32() ||
      !src.elementType.isF32() || src.rank() == 0)
    return false;
  StringRef chip = nvvm.getChip();
  int sm = 0, ptx = 0;
  if (!chip.consume_front("sm_") || chip.take_while(llvm::isDigit).getAsInteger(10, sm) ||
      sm < 90)
    return false;
  StringRef features = nvvm.getFeatures();
  size_t at = features.find("+ptx");
  if (at == StringRef::npos ||
      features.drop_front(at + 4).take_while(llvm::isDigit).getAsInteger(10, ptx) ||
      ptx < 81)
    return false;
  auto type = cast<MemRefType>(dst.memref.getType());
  int64_t last = dst.shape.back();
  if (!type.getLayout().isIdentity() || ShapedType::isDynamic(last) ||
      last % 2 || knownDivisor(offsets.back()) % 2 || src.shape.back() % 2)
    return false;
  const TileLayout &layout = *src.layout;
  if (layout.getNumRegs() % 2)
    return false;
  return llvm::any_of(layout.getDigits(), [&](const LayoutDigit &d) {
    return !d.onThread && d.dim == src.rank() - 1 && d.dimStride == 1 &&
           d.stride == 1 && d.size % 2 == 0;
  });
}

/// A global (address space 1) pointer to element `idx` of the row-major
/// global buffer `buf`.
Value KernelLowering::globalElementPtr(OpBuilder &b, const Buffer &buf,
                                       ArrayRef<Value> idx) {
  Value linear = cIdx(b, loc, 0);
  for (int64_t d = 0; d < buf.rank(); ++d) {
    Value extent = ShapedType::isDynamic(buf.shape[d])
                       ? memref::DimOp::create(b, loc, buf.memref, d).getResult()
                       : cIdx(b, loc, buf.shape[d]);
    linear = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, linear, extent), idx[d]);
  }
  Value bytes = arith::MulIOp::create(
      b, loc, linear, cIdx(b, loc, elementBytes(buf.elementType)));
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buf.memref);
  Value addr = arith::IndexCastUIOp::create(
      b, loc, b.getI64Type(), arith::AddIOp::create(b, loc, base, bytes));
  Value generic = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), addr);
  return LLVM::AddrSpaceCastOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), generic);
}

LogicalResult KernelLowering::lowerPrint(PrintOp op, OpBuilder &b,
                                         IRMapping &map, Context &ctx) {
  std::string msg = op.getMsg() ? (": " + *op.getMsg()).str() : "";
  std::string escaped;
  for (char ch : msg) {
    escaped.push_back(ch);
    if (ch == '%')
      escaped.push_back('%');
  }
  auto blockArgs = [&](OpBuilder &pb) {
    SmallVector<Value> args;
    for (int i = 0; i < 3; ++i) {
      Value v = i < (int)blockIndices.size() ? blockIndices[i] : cIdx(pb, loc, 0);
      args.push_back(arith::IndexCastOp::create(pb, loc, pb.getI64Type(), v));
    }
    args.push_back(arith::IndexCastOp::create(pb, loc, pb.getI64Type(), tid));
    return args;
  };
  auto formatOf = [&](OpBuilder &pb, Value v, SmallVectorImpl<Value> &args) {
    Type t = v.getType();
    if (isa<FloatType>(t)) {
      args.push_back(convertScalar(pb, loc, v, pb.getF64Type()));
      return std::string("%g");
    }
    args.push_back(convertScalar(pb, loc, v, pb.getI64Type()));
    return std::string("%lld");
  };
  std::string prefix = "block (%lld, %lld, %lld) thread %lld";
  Value value = map.lookupOrDefault(op.getValue());
  if (!isa<MemRefType>(op.getValue().getType())) {
    // Scalars: the thread that runs it (one per block at block level).
    Value guard = ctx.inParallel() ? ctx.leader : isThreadZero(b);
    guarded(b, loc, guard, [&](OpBuilder &pb) {
      SmallVector<Value> args = blockArgs(pb);
      std::string fmt = prefix + escaped + " " + formatOf(pb, value, args) + "\n";
      gpu::PrintfOp::create(pb, loc, pb.getStringAttr(fmt), args);
    });
    return success();
  }
  FailureOr<Buffer> buf = bufferOf(op.getValue(), b, map);
  if (failed(buf))
    return failure();
  // Tiles: gather into shared memory, thread 0 prints every element.
  Buffer view = *buf;
  if (buf->kind == Kind::Fragment) {
    Side frag{*buf, {}, buf->shape};
    for (int64_t i = 0; i < buf->rank(); ++i)
      frag.offsets.push_back(cIdx(b, loc, 0));
    Side scratch = scratchSide(b, buf->shape, buf->elementType);
    barrier(b);
    copyFragmentMemory(b, frag, scratch, true);
    view = scratch.buf;
  } else if (buf->kind == Kind::Global) {
    return op.emitOpError("printing a global tensor is not supported; print "
                          "a tile of it");
  }
  barrier(b);
  guarded(b, loc, isThreadZero(b), [&](OpBuilder &pb) {
    SmallVector<Value> args = blockArgs(pb);
    gpu::PrintfOp::create(pb, loc, pb.getStringAttr(prefix + escaped + "\n"),
                          args);
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t e : view.shape) {
      lbs.push_back(cIdx(pb, loc, 0));
      ubs.push_back(cIdx(pb, loc, e));
      steps.push_back(cIdx(pb, loc, 1));
    }
    scf::buildLoopNest(pb, loc, lbs, ubs, steps,
                       [&](OpBuilder &nb, Location l, ValueRange ivs) {
                         SmallVector<Value> eargs;
                         std::string fmt = "  [";
                         for (auto [i, iv] : llvm::enumerate(ivs)) {
                           fmt += i ? ", %lld" : "%lld";
                           eargs.push_back(arith::IndexCastOp::create(
                               nb, l, nb.getI64Type(), iv));
                         }
                         Value x = loadElement(nb, view, SmallVector<Value>(ivs));
                         fmt += "] = " + formatOf(nb, x, eargs) + "\n";
                         gpu::PrintfOp::create(nb, l, nb.getStringAttr(fmt), eargs);
                       });
  });
  barrier(b);
  return success();
}

/// The address of a NUL-terminated string constant of the GPU module (one
/// global per distinct string, named `<prefix>N`).
Value KernelLowering::gpuModuleString(OpBuilder &b, StringRef prefix,
                                      StringRef value) {
  std::string terminated = value.str();
  terminated.push_back('\0');
  std::string name;
  for (unsigned i = 0;; ++i) {
    name = (prefix + Twine(i)).str();
    auto global = gpuModule.lookupSymbol<LLVM::GlobalOp>(name);
    if (!global)
      break;
    auto existing = dyn_cast_or_null<StringAttr>(global.getValueOrNull());
    if (existing && existing.getValue() == terminated)
      return LLVM::AddressOfOp::create(b, loc, global);
  }
  OpBuilder mb = OpBuilder::atBlockBegin(gpuModule.getBody());
  auto type = LLVM::LLVMArrayType::get(mb.getI8Type(), terminated.size());
  auto global = LLVM::GlobalOp::create(mb, loc, type, /*isConstant=*/true,
                                       LLVM::Linkage::Internal, name,
                                       mb.getStringAttr(terminated));
  return LLVM::AddressOfOp::create(b, loc, global);
}

/// A failing device assert: on NVIDIA, CUDA's
/// `__assertfail(message, file, line, function, charSize)` (a ptxas system
/// call: the driver prints "file:line: function: block: [..], thread: [..]
/// Assertion `message` failed." and the launch fails with an assertion
/// error); on AMD a trap (printing needs the device libraries, which are not
/// linked), which aborts the dispatch.
LogicalResult KernelLowering::lowerDeviceAssert(DeviceAssertOp op,
                                                OpBuilder &b, IRMapping &map) {
  Value cond = map.lookupOrDefault(op.getCondition());
  Value failed = arith::XOrIOp::create(
      b, loc, cond, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  if (amd) {
    guarded(b, loc, failed,
            [&](OpBuilder &gb) { LLVM::Trap::create(gb, loc); });
    return success();
  }
  MLIRContext *ctx = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto fail = gpuModule.lookupSymbol<LLVM::LLVMFuncOp>("__assertfail");
  if (!fail) {
    OpBuilder mb = OpBuilder::atBlockBegin(gpuModule.getBody());
    auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                            {ptr, ptr, i32, ptr, i64});
    fail = LLVM::LLVMFuncOp::create(mb, loc, "__assertfail", type);
  }
  auto [file, line] = op.getSourcePosition();
  guarded(b, loc, failed, [&](OpBuilder &gb) {
    SmallVector<Value> args = {
        gpuModuleString(gb, "__tile_assert_msg_", op.getMsg()),
        gpuModuleString(gb, "__tile_assert_file_", file),
        arith::ConstantIntOp::create(gb, loc, i32, line),
        gpuModuleString(gb, "__tile_assert_func_", func.getName()),
        arith::ConstantIntOp::create(gb, loc, i64, 1)};
    LLVM::CallOp::create(gb, loc, fail, args);
  });
  return success();
}

//===----------------------------------------------------------------------===//
// Math: fast hardware approximations instead of libdevice
//===----------------------------------------------------------------------===//

/// math ops on f32 (f16/bf16 go through f32) become the PTX approximate
/// instructions (ex2, lg2, rsqrt, sin, cos: relative error about 2^-22).
/// Transcendental functions (f16/bf16/f32, computed in f32) on the GPU's
/// special-function units: NVVM's approximate intrinsics, or AMDGPU's (and
/// LLVM intrinsics the AMDGPU backend lowers natively; MLIR's ROCDL
/// conversion would send the math dialect's versions to device-library
/// calls, which this build cannot link).
struct MathToGPUIntrinsics : public RewritePattern {
  MathToGPUIntrinsics(MLIRContext *ctx, bool amd)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx), amd(amd) {}

  bool amd;

  static Value call(PatternRewriter &r, Location loc, StringRef name, Value x) {
    return LLVM::CallIntrinsicOp::create(r, loc, r.getF32Type(),
                                         r.getStringAttr(name), ValueRange{x})
        .getResult(0);
  }
  static Value c(PatternRewriter &r, Location loc, double v) {
    return arith::ConstantFloatOp::create(r, loc, r.getF32Type(),
                                          APFloat((float)v));
  }

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &r) const override {
    if (!isa<math::ExpOp, math::Exp2Op, math::LogOp, math::Log2Op,
             math::RsqrtOp, math::SinOp, math::CosOp, math::TanhOp>(op) &&
        !(amd && isa<math::FloorOp, math::CeilOp>(op)))
      return failure();
    Type type = op->getResult(0).getType();
    auto ft = dyn_cast<FloatType>(type);
    if (!ft || ft.getWidth() > 32)
      return r.notifyMatchFailure(op, "only f16/bf16/f32 have approximations");
    Location loc = op->getLoc();
    Value x = op->getOperand(0);
    if (!type.isF32())
      x = arith::ExtFOp::create(r, loc, r.getF32Type(), x);
    // ex2 flushes subnormals (results below 2^-126 become 0): without .ftz,
    // ptxas wraps every MUFU.EX2 in a range test and two multiplies, three
    // extra instructions per element of an attention softmax.
    StringRef ex2 =
        amd ? "llvm.amdgcn.exp2.f32" : "llvm.nvvm.ex2.approx.ftz.f32";
    StringRef lg2 = amd ? "llvm.amdgcn.log.f32" : "llvm.nvvm.lg2.approx.f";
    Value y;
    if (isa<math::ExpOp>(op))
      y = call(r, loc, ex2,
               arith::MulFOp::create(r, loc, x, c(r, loc, 1.4426950408889634)));
    else if (isa<math::Exp2Op>(op))
      y = call(r, loc, ex2, x);
    else if (isa<math::LogOp>(op))
      y = arith::MulFOp::create(r, loc, call(r, loc, lg2, x),
                                c(r, loc, 0.6931471805599453));
    else if (isa<math::Log2Op>(op))
      y = call(r, loc, lg2, x);
    else if (isa<math::RsqrtOp>(op))
      y = call(r, loc, amd ? "llvm.amdgcn.rsq.f32" : "llvm.nvvm.rsqrt.approx.f", x);
    else if (isa<math::SinOp>(op))
      y = call(r, loc, amd ? "llvm.sin.f32" : "llvm.nvvm.sin.approx.f", x);
    else if (isa<math::CosOp>(op))
      y = call(r, loc, amd ? "llvm.cos.f32" : "llvm.nvvm.cos.approx.f", x);
    else if (isa<math::FloorOp>(op))
      y = call(r, loc, "llvm.floor.f32", x);
    else if (isa<math::CeilOp>(op))
      y = call(r, loc, "llvm.ceil.f32", x);
    else {
      // tanh(x) = sign(x) (1 - e) / (1 + e), e = exp(-2|x|); near zero the
      // series x (1 - x^2 / 3) is more accurate.
      Value ax = math::AbsFOp::create(r, loc, x);
      Value e = call(r, loc, ex2,
                     arith::MulFOp::create(r, loc, ax,
                                           c(r, loc, -2.8853900817779268)));
      Value one = c(r, loc, 1.0);
      Value t = arith::DivFOp::create(r, loc,
                                      arith::SubFOp::create(r, loc, one, e),
                                      arith::AddFOp::create(r, loc, one, e));
      t = math::CopySignOp::create(r, loc, t, x);
      Value x2 = arith::MulFOp::create(r, loc, x, x);
      Value series = arith::MulFOp::create(
          r, loc, x,
          arith::SubFOp::create(
              r, loc, one, arith::MulFOp::create(r, loc, x2, c(r, loc, 1.0 / 3))));
      Value small = arith::CmpFOp::create(r, loc, arith::CmpFPredicate::OLT, ax,
                                          c(r, loc, 0.04));
      y = arith::SelectOp::create(r, loc, small, series, t);
    }
    if (!type.isF32())
      y = arith::TruncFOp::create(r, loc, type, y);
    r.replaceOp(op, y);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::run() {
  kernel.walk([&](WarpSpecializeOp ws) {
    producerThreads = ws.getProducerThreads();
    if (std::optional<ArrayRef<int64_t>> c = ws.getCluster())
      clusterDims.assign(c->begin(), c->end());
  });
  // Fences before barriers are needed from the start when any gemm reads
  // shared memory through the async proxy.
  kernel.walk([&](Operation *g) {
    if (isa<GemmOp, GemmSpOp>(g) && g->hasAttr("wgmma"))
      usesAsyncProxy = true;
  });
  roleThreads = numThreads;
  chooseTmaStores();
  if (failed(collectTensorMaps()) || failed(outline()))
    return failure();
  Block &entry = gpuFunc.getBody().front();
  OpBuilder b = OpBuilder::atBlockEnd(&entry);
  if (failed(planSharedMemory(b)))
    return failure();
  setupBlockIndices(b);
  if (failed(allocateBuffers(b)))
    return failure();
  if (!barrierInits.empty()) {
    // Thread 0 initializes every barrier; the fence makes the
    // initialization visible to the async proxy (TMA), the barrier to all
    // threads.
    guarded(b, loc, isThreadZero(b), [&](OpBuilder &gb) {
      for (auto [memref, arrivals] : barrierInits) {
        int64_t n = cast<MemRefType>(memref.getType()).getNumElements();
        Value count = arith::ConstantIntOp::create(gb, loc, gb.getI32Type(),
                                                   arrivals);
        for (int64_t i = 0; i < n; ++i)
          NVVM::MBarrierInitOp::create(
              gb, loc, sharedPtr(gb, memref, cIdx(gb, loc, 8 * i)), count,
              Value());
      }
      NVVM::FenceMbarrierInitOp::create(gb, loc);
    });
    // The other blocks of a cluster multicast into this block's memory and
    // arrive on its barriers: all must be initialized first.
    if (clusterDims.empty())
      gpu::BarrierOp::create(b, loc);
    else
      clusterSync(b);
  }
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
    if (failed(bring(v)))
      return failure();
  }
  for (auto [arg, idx] :
       llvm::zip(kernel.getBody().front().getArguments(), blockIndices))
    map.map(arg, idx);
  Context ctx;
  if (failed(lowerBlock(kernel.getBody().front(), b, map, ctx)))
    return failure();
  // No block of a cluster may leave while another can still write to its
  // shared memory or barriers.
  if (!clusterDims.empty())
    clusterSync(b);
  gpu::ReturnOp::create(b, kernel.getLoc());
  {
    RewritePatternSet patterns(gpuFunc.getContext());
    patterns.add<MathToGPUIntrinsics>(gpuFunc.getContext(), amd);
    if (failed(applyPatternsGreedily(gpuFunc, std::move(patterns))))
      return gpuFunc.emitOpError("math lowering did not converge");
    WalkResult f64 = gpuFunc.walk([&](Operation *op) {
      if (isa<math::MathDialect>(op->getDialect()) &&
          !isa<math::AbsFOp, math::AbsIOp, math::FloorOp, math::CeilOp,
               math::SqrtOp, math::CopySignOp, math::FmaOp>(op)) {
        op->emitError("this math function on ")
            << op->getResult(0).getType()
            << " is not supported on " << (amd ? "ROCm" : "CUDA")
            << " targets yet";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (f64.wasInterrupted())
      return failure();
    // A 16-bit float fma (T.hfma2's pairs) is one instruction; left to the
    // math lowering it would become a float32 libdevice call.
    if (!amd)
      gpuFunc.walk([&](math::FmaOp op) {
        Type element = getElementTypeOrSelf(op.getType());
        if (!element.isF16() && !element.isBF16())
          return;
        OpBuilder b(op);
        op.replaceAllUsesWith(LLVM::FMAOp::create(b, op.getLoc(), op.getA(),
                                                  op.getB(), op.getC())
                                  .getResult());
        op.erase();
      });
    // Float multiplies and adds may contract into fma, as CUDA compiles by
    // default (-fmad=true): the softmax's x * scale - m * scale is one FFMA
    // instead of a rounded multiply and a subtract.
    if (!amd)
      gpuFunc.walk([&](arith::ArithFastMathInterface op) {
        if (!isa<arith::AddFOp, arith::SubFOp, arith::MulFOp>(op))
          return;
        op->setAttr(op.getFastMathAttrName(),
                    arith::FastMathFlagsAttr::get(
                        op->getContext(), op.getFastMathFlagsAttr().getValue() |
                                              arith::FastMathFlags::contract));
      });
  }

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
  Value smemSize = arith::ConstantIntOp::create(hb, kl, hb.getI32Type(),
                                                sharedBytes);
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
  kernel.erase();
  return success();
}

/// Lowers the one top-level tile.kernel of every function of `module` for
/// `target` (`platform` names it in errors: "CUDA" or "ROCm").
static LogicalResult lowerKernels(ModuleOp module, Attribute target,
                                  StringRef platform, bool amd, bool tmaStore) {
  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  for (func::FuncOp func : funcs) {
    SmallVector<KernelOp> kernels;
    func.walk([&](KernelOp k) { kernels.push_back(k); });
    if (kernels.empty())
      continue;
    if (kernels.size() > 1)
      return kernels[1].emitOpError("a tile program for ")
             << platform << " targets may contain one T.Kernel";
    if (kernels[0]->getParentOp() != func.getOperation())
      return kernels[0].emitOpError("must be at the top level of its function on ")
             << platform << " targets";
    if (failed(KernelLowering(kernels[0], func, target, amd, tmaStore).run()))
      return failure();
  }
  return success();
}

/// `features` with its PTX version (`+ptxNN`) raised to at least `version`.
static std::string withPtxAtLeast(StringRef features, int64_t version) {
  SmallVector<StringRef> parts;
  features.split(parts, ',', -1, /*KeepEmpty=*/false);
  std::string out;
  bool found = false;
  for (StringRef part : parts) {
    std::string p = part.str();
    int64_t v;
    if (part.consume_front("+ptx") && !part.getAsInteger(10, v)) {
      found = true;
      p = "+ptx" + std::to_string(std::max(v, version));
    }
    out += (out.empty() ? "" : ",") + p;
  }
  if (!found)
    out += (out.empty() ? "+ptx" : ",+ptx") + std::to_string(version);
  return out;
}

struct ConvertTileToNVVMPass
    : public tile::impl::ConvertTileToNVVMBase<ConvertTileToNVVMPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Sparse wgmma on floating-point types needs PTX ISA 8.2.
    std::string ptx = features;
    module.walk([&](GemmSpOp g) {
      if (g->hasAttr("wgmma"))
        ptx = withPtxAtLeast(ptx, 82);
    });
    std::string text = "#nvvm.target<O = 3, chip = \"" + chip +
                       "\", features = \"" + ptx + "\">";
    Attribute target = parseAttribute(text, &getContext());
    if (!target) {
      module.emitError("invalid NVVM target ") << text;
      return signalPassFailure();
    }
    if (failed(lowerKernels(module, target, "CUDA", /*amd=*/false, tmaStore)))
      signalPassFailure();
  }
};

struct ConvertTileToROCDLPass
    : public tile::impl::ConvertTileToROCDLBase<ConvertTileToROCDLPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Wave64 and MFMA 32x32x8 (bf16_1k) are what the lowering assumes.
    if (!llvm::is_contained({"gfx90a", "gfx942", "gfx950"}, chip)) {
      module.emitError("convert-tile-to-rocdl supports the CDNA chips gfx90a, "
                       "gfx942 and gfx950 (wave64 with MFMA), got ")
          << chip;
      return signalPassFailure();
    }
    std::string text = "#rocdl.target<O = 3, chip = \"" + chip + "\">";
    Attribute target = parseAttribute(text, &getContext());
    if (!target) {
      module.emitError("invalid ROCDL target ") << text;
      return signalPassFailure();
    }
    if (failed(lowerKernels(module, target, "ROCm", /*amd=*/true,
                            /*tmaStore=*/false)))
      signalPassFailure();
  }
};

struct TileFinalizeKernelParamsPass
    : public tile::impl::TileFinalizeKernelParamsBase<
          TileFinalizeKernelParamsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    WalkResult result = getOperation().walk([&](LLVM::LLVMFuncOp fn) {
      auto count = fn->getAttrOfType<IntegerAttr>("tile.tensormap_args");
      if (!count)
        return WalkResult::advance();
      int64_t n = count.getInt();
      if (n < 0 || n > static_cast<int64_t>(fn.getNumArguments())) {
        fn.emitError("tile.tensormap_args = ")
            << n << " must be in [0, " << fn.getNumArguments()
            << "] (the leading pointer arguments that hold tensor maps)";
        return WalkResult::interrupt();
      }
      for (int64_t i = 0; i < n; ++i) {
        if (!isa<LLVM::LLVMPointerType>(fn.getArgumentTypes()[i])) {
          fn.emitError("tile.tensormap_args: argument ")
              << i << " holds a tensor map and must be an !llvm.ptr, got "
              << fn.getArgumentTypes()[i];
          return WalkResult::interrupt();
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        fn.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                      TypeAttr::get(LLVM::LLVMArrayType::get(
                          IntegerType::get(ctx, 8), 128)));
        fn.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                      IntegerAttr::get(IntegerType::get(ctx, 64), 64));
        fn.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                      UnitAttr::get(ctx));
      }
      fn->removeAttr("tile.tensormap_args");
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
