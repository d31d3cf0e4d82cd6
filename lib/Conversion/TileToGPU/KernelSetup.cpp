//===- KernelSetup.cpp - outline a kernel, plan its memory
//------------------===//
//
// Part of tilelang-mlir.
//
// Outlining a tile.kernel into a gpu.func, the plan of its shared memory
// (barriers, buffers, the TMA staging buffer, scratch), the block and thread
// indices (with threadblock rasterization) and the buffers of the kernel.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tile;

/// The layout of a fragment allocation (none for other buffers, or before
/// layout inference).
std::optional<TileLayout> mlir::tile::fragmentLayout(Value v) {
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
int64_t mlir::tile::scratchNeed(Operation *op, int64_t numThreads,
                                int64_t warpSize) {
  auto bytesOf = [](MemRefType t) {
    return t.hasStaticShape()
               ? t.getNumElements() *
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
    return elems * std::max<int64_t>(
                       1, copy.getDst().getType().getElementTypeBitWidth() / 8);
  }
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    int64_t need = 0;
    std::optional<TileLayout> la = fragmentLayout(gemm.getA());
    bool registerA = la &&
                     isInScope(gemm.getB().getType(), MemoryScope::shared) &&
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
    return std::max(
        dst.getNumElements() * accBytes *
            std::max<int64_t>(1, numThreads / 32 /* any warp size >= 32 */),
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

/// The scratch shared memory the kernel's ops need at most; records the
/// ops that need some in scratchUsers.
int64_t KernelLowering::kernelScratchNeed() {
  int64_t need = 0;
  scratchUsers.clear();
  // An op in a role runs on the role's threads.
  kernel.getBody().walk([&](Operation *op) {
    int64_t n = scratchNeed(op, threadsOf(op), warpSize);
    need = std::max(need, n);
    if (n > 0)
      scratchUsers.insert(op);
  });
  return need;
}

/// The blocks of this kernel a multiprocessor can hold as far as shared
/// memory (`bytes` a block) and the block size decide: a multiprocessor
/// has the most a block may use plus the 1 KB the hardware reserves a
/// block (NVIDIA), 2048 threads and 32 blocks.
int64_t KernelLowering::blocksPerProcessor(int64_t bytes) const {
  int64_t limit = target.getMaxSharedBytes();
  return std::min({(limit + 1024) / (bytes + 1024),
                   std::max<int64_t>(1, 2048 / numThreads), int64_t(32)});
}

LogicalResult KernelLowering::planSharedMemory(OpBuilder &b) {
  int64_t limit = target.getMaxSharedBytes();
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
  // The staging buffer and the scratch follow the buffers, which end at
  // `end`; the footprint of the whole plan.
  auto footprint = [&](int64_t end) {
    if (!tmaStores.empty()) {
      end = llvm::alignTo(end, 1024);
      stagingOffset = end;
      end += stagingBytes;
      alignBase = true;
    }
    int64_t need = kernelScratchNeed();
    scratchBase = scratchOffset = llvm::alignTo(end, 128);
    scratchSlotBytes = llvm::alignTo(need, 128);
    // 128-byte swizzles are defined on address bits up to 1 KB: the base
    // is aligned at run time, with up to 1 KB more memory.
    auto total = [&](int64_t scratch) {
      return scratchBase + scratch + (alignBase ? 1024 : 0);
    };
    scratchSlots = 1;
    scratchBytes = need;
    // (Turns need two ops that stage through scratch.)
    int64_t slots = scratchUsers.size() > 1 ? target.scratchSlots() : 1;
    if (slots > 1 && total(slots * scratchSlotBytes) <= limit &&
        blocksPerProcessor(total(slots * scratchSlotBytes)) ==
            blocksPerProcessor(total(need))) {
      scratchSlots = slots;
      scratchBytes = slots * scratchSlotBytes;
    }
    return total(scratchBytes);
  };
  int64_t offset = placeShared(&sharedOffsets);
  sharedBytes = footprint(offset);
  if (sharedBytes <= limit)
    return success();
  // Too large one after the other: buffers whose lifetimes do not overlap
  // share bytes (SharedMemoryPlan.cpp).
  int64_t linearBytes = sharedBytes;
  DenseMap<Value, int64_t> reused;
  llvm::SmallPtrSet<Operation *, 4> drains;
  std::string why;
  FailureOr<int64_t> end = placeSharedReusing(reused, drains, why);
  if (succeeded(end)) {
    sharedBytes = footprint(*end);
    if (sharedBytes <= limit) {
      sharedOffsets = std::move(reused);
      drainBefore = std::move(drains);
      return success();
    }
  }
  InFlightDiagnostic diag =
      kernel.emitOpError("needs ")
      << linearBytes << " bytes of shared memory (" << offset
      << " for its shared buffers, " << scratchBytes << " of scratch"
      << (alignBase ? ", 1024 to align swizzled buffers" : "")
      << "), more than the " << limit / 1024 << " KB a block can have on "
      << target.getChip();
  if (failed(end))
    return diag << "; its shared buffers cannot share bytes: " << why;
  return diag << "; with shared buffers whose lifetimes do not overlap "
                 "sharing bytes, it still needs "
              << sharedBytes << " (" << *end << " for its shared buffers)";
}

LogicalResult KernelLowering::outline() {
  MLIRContext *ctx = kernel.getContext();
  auto module = func->getParentOfType<ModuleOp>();
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(ctx));
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  std::string name = (func.getName() + "_kernel").str();
  gpuModule = gpu::GPUModuleOp::create(
      b, loc, name, ArrayAttr::get(ctx, {target.getTargetAttr()}));
  b.setInsertionPointToStart(gpuModule.getBody());
  FunctionType type = func.getFunctionType();
  // Tensor maps come first (by value, see tile-finalize-kernel-params).
  SmallVector<Type> inputs(tensorMaps.size(), LLVM::LLVMPointerType::get(ctx));
  llvm::append_range(inputs, type.getInputs());
  gpuFunc =
      gpu::GPUFuncOp::create(b, loc, name, FunctionType::get(ctx, inputs, {}));
  gpuFunc->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                   UnitAttr::get(ctx));
  SmallVector<int32_t> block;
  for (int64_t t : kernel.getThreads())
    block.push_back(t);
  block[0] += producerThreads;
  while (block.size() < 3)
    block.push_back(1);
  gpuFunc.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(block));
  target.annotateKernel(*this, b);
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

/// The number of blocks of the grid along dimension `d` (0, 1, 2).
Value KernelLowering::gridDim(OpBuilder &b, int d) {
  ArrayRef<int64_t> threads = kernel.getThreads();
  int64_t block = d < static_cast<int>(threads.size()) ? threads[d] : 1;
  return target.emitGridDim(b, loc, d, block);
}

void KernelLowering::setupBlockIndices(OpBuilder &b) {
  ArrayRef<int64_t> threads = kernel.getThreads();
  Value tx = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  tid = tx;
  if (threads.size() > 1) {
    Value ty = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::y);
    tid = arith::AddIOp::create(
        b, loc, tid,
        arith::MulIOp::create(b, loc, ty, cIdx(b, loc, threads[0])));
  }
  if (threads.size() > 2) {
    Value tz = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::z);
    tid = arith::AddIOp::create(
        b, loc, tid,
        arith::MulIOp::create(b, loc, tz,
                              cIdx(b, loc, threads[0] * threads[1])));
  }
  blockTid = tid;
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
  Value linear =
      rowOrder ? arith::AddIOp::create(b, loc, bx,
                                       arith::MulIOp::create(b, loc, by, gx))
               : arith::AddIOp::create(b, loc, by,
                                       arith::MulIOp::create(b, loc, bx, gy));
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
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
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
      buf.kind = BufferKind::Shared;
      auto flat =
          MemRefType::get({type.getNumElements()}, type.getElementType(),
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
      buf.kind = BufferKind::Shared;
      buf.memref = memref::ViewOp::create(
          b, loc,
          MemRefType::get({type.getNumElements()}, b.getI64Type(),
                          MemRefLayoutAttrInterface(), workgroup),
          smem, smemAt(b, sharedOffsets.lookup(alloc.getResult())),
          ValueRange{});
      buf.allocShape.assign(type.getShape().begin(), type.getShape().end());
      buf.viewOffsets.assign(1, Value());
      buf.viewDims = {0};
      barrierInits.push_back({buf.memref, alloc});
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
      buf.kind = BufferKind::Fragment;
      buf.layout = *layout;
      buf.memref =
          privateAlloca(b, {layout->getNumRegs()}, type.getElementType());
      result = alloc.getResult();
    } else if (auto alloc = dyn_cast<AllocLocalOp>(op)) {
      buf.kind = BufferKind::Local;
      buf.memref = privateAlloca(b, alloc.getType().getShape(),
                                 alloc.getType().getElementType());
      result = alloc.getResult();
    } else if (auto alloc = dyn_cast<AllocVarOp>(op)) {
      buf.kind = BufferKind::Var;
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
