//===- BufferAccess.cpp - tile buffers and their elements
//-------------------===//
//
// Part of tilelang-mlir.
//
// How the lowering reaches a buffer of the tile program (a kernel argument,
// a view into dynamic shared memory, a per-thread register array) and loads
// and stores its elements: swizzled shared addresses, vectors, bounds checks,
// fragment registers.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::tile;

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
    if (failed(src) || src->kind != BufferKind::Shared)
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
      origin =
          origin ? arith::AddIOp::create(b, loc, origin, ov).getResult() : ov;
    }
    auto resultType = sub.getType();
    llvm::SmallBitVector dropped = sub.getDroppedDims();
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < src->rank(); ++d)
      if (!dropped.test(d))
        dims.push_back(src->viewDims[d]);
    buf.viewDims = dims;
    buf.shape.assign(resultType.getShape().begin(),
                     resultType.getShape().end());
    return buf;
  }
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner()->getParentOp() == func.getOperation()) {
      return Buffer::global(outer.lookup(v), cast<MemRefType>(v.getType()));
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
  int64_t span = sharedPanelElements(
      buf.allocShape, elementBytes(buf.elementType), buf.swizzle);
  return std::min(a, span ? span : (cols & -cols));
}

Value KernelLowering::loadElement(OpBuilder &b, const Buffer &buf,
                                  ArrayRef<Value> idx) {
  if (buf.kind ==
      BufferKind::Shared) // (stage outside the swizzle: see loadVector)
    return memref::LoadOp::create(
        b, loc, buf.memref,
        ValueRange{sharedOffset(
            b, buf, idx, /*stageOutside=*/target.stagesOutsideSwizzle())});
  return memref::LoadOp::create(b, loc, buf.memref, idx);
}

void KernelLowering::storeElement(OpBuilder &b, const Buffer &buf,
                                  ArrayRef<Value> idx, Value v) {
  if (buf.kind == BufferKind::Shared) {
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
  // attention kernels and gfx950's wave64 kernels lack (the target says
  // which it does: GPUTargetInfo::stagesOutsideSwizzle).
  if (buf.kind == BufferKind::Shared)
    return vector::LoadOp::create(
        b, loc, type, buf.memref,
        ValueRange{sharedOffset(
            b, buf, idx, /*stageOutside=*/target.stagesOutsideSwizzle())},
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
  if (buf.kind == BufferKind::Shared) {
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
    cond = andOf(
        b, loc, cond,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i, bound));
  }
  return cond;
}

Value KernelLowering::regLoad(OpBuilder &b, const Buffer &frag, int64_t reg) {
  return memref::LoadOp::create(b, loc, frag.memref,
                                ValueRange{cIdx(b, loc, reg)});
}

void KernelLowering::regStore(OpBuilder &b, const Buffer &frag, int64_t reg,
                              Value v) {
  memref::StoreOp::create(b, loc, v, frag.memref,
                          ValueRange{cIdx(b, loc, reg)});
}

Value KernelLowering::isThreadZero(OpBuilder &b) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                               cIdx(b, loc, roleBase));
}

Value KernelLowering::isRoleLeader(OpBuilder &b) { return isThreadZero(b); }

/// A !llvm.ptr<3> to byte `byteOffset` of the shared memref `memref`.
Value KernelLowering::sharedPtr(OpBuilder &b, Value memref, Value byteOffset) {
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value addr = byteOffset
                   ? arith::AddIOp::create(b, loc, base, byteOffset).getResult()
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

/// i1 true in one thread of each group of replicas of `layout` (its
/// replica digits all zero); null when the layout has no replicas.
Value KernelLowering::replicaLeader(OpBuilder &b, const TileLayout &layout) {
  Value leader;
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
  return leader;
}

/// The register of `frag` holding the element this parallel instance
/// accesses through the index maps `maps`, if it is the same in every thread.
std::optional<int64_t> KernelLowering::fragmentRegister(const Buffer &frag,
                                                        ArrayRef<IndexMap> maps,
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

/// A fragment read through shifted loop variables (`acc[i + s * 16, j]`):
/// the register each assignment of the enclosing loops' variables reads,
/// chosen by them at run time (a select per assignment beyond the first).
FailureOr<Value> KernelLowering::shiftedLoad(OpBuilder &b, const Buffer &frag,
                                             const ShiftedAccess &access,
                                             Operation *op, IRMapping &map,
                                             const Context &ctx) {
  bool guarded = op->getBlock() != ctx.body;
  SmallVector<int64_t> regs;
  for (size_t c = 0; c < access.combos.size(); ++c) {
    std::optional<int64_t> r = shiftedRegister(*frag.layout, *ctx.loopLayout,
                                               access, c, ctx.reg, guarded);
    if (!r)
      return op->emitError("this thread does not hold the fragment element "
                           "it accesses (layout ")
             << frag.layout->describe()
             << "); tile-layout-inference should have inserted a conversion";
    regs.push_back(*r);
  }
  Value result = regLoad(b, frag, regs.back());
  for (size_t c = regs.size() - 1; c-- > 0;) {
    if (regs[c] == regs.back())
      continue;
    Value cond;
    for (auto [iv, v] : llvm::zip(access.ivs, access.combos[c]))
      cond = andOf(b, loc, cond,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         map.lookupOrDefault(iv),
                                         cIdx(b, loc, v)));
    result = arith::SelectOp::create(b, loc, cond, regLoad(b, frag, regs[c]),
                                     result);
  }
  return result;
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
  if (buf->kind == BufferKind::Fragment) {
    // The register of the thread's private array that holds the element.
    Value reg;
    if (ctx.inParallel()) {
      if (std::optional<UniformAccess> u =
              matchUniformAccess(indices, ctx.body)) {
        // Some indices are uniform over the loop (a serial loop's variable:
        // TileLang's row-by-row fragment fill): the register is affine in
        // them, computed at run time.
        std::optional<UniformRegisters> regs = uniformRegisters(
            *buf->layout, *ctx.loopLayout, *u, ctx.reg);
        if (!regs)
          return op->emitError("this thread does not hold the fragment "
                               "elements it accesses for every value of "
                               "the indices set outside the T.Parallel "
                               "(layout ")
                 << buf->layout->describe()
                 << "); tile-layout-inference should have inserted a "
                    "conversion";
        reg = cIdx(b, loc, regs->base);
        for (auto [v, stride] : llvm::zip(u->uniformValues, regs->strides))
          if (stride)
            reg = arith::AddIOp::create(
                b, loc, reg,
                arith::MulIOp::create(b, loc, map.lookupOrDefault(v),
                                      cIdx(b, loc, stride)));
      } else {
        SmallVector<IndexMap> maps;
        for (Value i : indices) {
          std::optional<IndexMap> m = matchIndexMap(i, ctx.body);
          if (!m && isLoad)
            if (std::optional<ShiftedAccess> shifted =
                    matchShiftedAccess(indices, ctx.body)) {
              FailureOr<Value> v = shiftedLoad(b, *buf, *shifted, op, map, ctx);
              if (failed(v))
                return failure();
              map.map(op->getResult(0), *v);
              return success();
            }
          if (!m)
            return op->emitError(
                "a fragment indexed inside T.Parallel must be "
                "indexed by the loop's variables (or sums of "
                "them divided, wrapped and scaled by "
                "constants: j // c, j % c, (j % 4) * 4 + j // 4)");
          maps.push_back(*m);
        }
        std::optional<int64_t> r = fragmentRegister(*buf, maps, ctx);
        if (!r)
          return op->emitError("this thread does not hold the fragment element "
                               "it accesses (layout ")
                 << buf->layout->describe()
                 << "); tile-layout-inference should have inserted a "
                    "conversion";
        reg = cIdx(b, loc, *r);
      }
    } else {
      // Outside parallel loops every thread must hold the element (every
      // thread of the fragment's: a role reads a block fragment's replicas).
      if (buf->layout->getReplicate() != buf->layout->getNumThreads())
        return op->emitError("a fragment element is accessed outside "
                             "T.Parallel, but its elements are spread over "
                             "the threads (")
               << buf->layout->describe()
               << "); access it inside a T.Parallel loop or copy it to "
                  "shared memory";
      // Replicated: the register is the row-major index.
      for (auto [d, i] : llvm::enumerate(idx)) {
        int64_t stride = 1;
        for (int64_t e = d + 1; e < buf->rank(); ++e)
          stride *= buf->shape[e];
        Value term = arith::MulIOp::create(b, loc, i, cIdx(b, loc, stride));
        reg = reg ? arith::AddIOp::create(b, loc, reg, term) : term;
      }
      if (!reg)
        reg = cIdx(b, loc, 0);
    }
    if (isLoad)
      map.map(op->getResult(0),
              memref::LoadOp::create(b, loc, buf->memref, ValueRange{reg}));
    else
      memref::StoreOp::create(
          b, loc, map.lookupOrDefault(cast<memref::StoreOp>(op).getValue()),
          buf->memref, ValueRange{reg});
    return success();
  }
  if (isLoad) {
    map.map(op->getResult(0), loadElement(b, *buf, idx));
    return success();
  }
  Value v = map.lookupOrDefault(cast<memref::StoreOp>(op).getValue());
  if (buf->kind == BufferKind::Local || buf->kind == BufferKind::Var) {
    storeElement(b, *buf, idx, v);
    return success();
  }
  // Global and shared memory: one copy of a store that every thread makes
  // alike; a store whose element, value or condition differs between
  // threads (ThreadVariance) is each thread's own.
  Value guard = !ctx.inParallel() && variance && variance->perThread(op)
                    ? Value()
                    : sideEffectGuard(b, ctx);
  guarded(b, loc, guard,
          [&](OpBuilder &gb) { storeElement(gb, *buf, idx, v); });
  return success();
}

/// A global (address space 1) pointer to element `idx` of the row-major
/// global buffer `buf`.
Value KernelLowering::globalElementPtr(OpBuilder &b, const Buffer &buf,
                                       ArrayRef<Value> idx) {
  Value linear = cIdx(b, loc, 0);
  auto type = cast<MemRefType>(buf.memref.getType());
  if (!type.getLayout().isIdentity()) {
    // A strided view (a peer's part of a symmetric buffer): its offset and
    // strides, from the descriptor.
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, buf.memref);
    linear = meta.getOffset();
    for (int64_t d = 0; d < buf.rank(); ++d)
      linear = arith::AddIOp::create(
          b, loc, linear,
          arith::MulIOp::create(b, loc, idx[d], meta.getStrides()[d]));
    idx = {};
  }
  for (int64_t d = 0; d < static_cast<int64_t>(idx.size()); ++d) {
    Value extent =
        ShapedType::isDynamic(buf.shape[d])
            ? memref::DimOp::create(b, loc, buf.memref, d).getResult()
            : cIdx(b, loc, buf.shape[d]);
    linear = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, linear, extent), idx[d]);
  }
  Value bytes = arith::MulIOp::create(
      b, loc, linear, cIdx(b, loc, elementBytes(buf.elementType)));
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buf.memref);
  Value addr = arith::IndexCastUIOp::create(
      b, loc, b.getI64Type(), arith::AddIOp::create(b, loc, base, bytes));
  Value generic = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), addr);
  return LLVM::AddrSpaceCastOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), generic);
}

Value KernelLowering::privateAlloca(OpBuilder &b, ArrayRef<int64_t> shape,
                                    Type type) {
  Attribute space = target.getPrivateMemorySpace(b.getContext());
  OpBuilder entry = OpBuilder::atBlockBegin(&gpuFunc.getBody().front());
  // 16 bytes, the widest vector access: T.call_extern callees (TileLang's
  // lop3 decoders) read an int8[4] register array as one uint32 and write
  // a half[8] one as a uint4, as CUDA C++ allows for local arrays; a
  // 1-byte-aligned alloca made those accesses misaligned.
  return memref::AllocaOp::create(
      entry, loc,
      MemRefType::get(shape, type, MemRefLayoutAttrInterface(), space),
      ValueRange(), ValueRange(), b.getI64IntegerAttr(16));
}

/// Element accesses to tile buffers, and the views and sizes of buffers
/// (resolved by bufferOf).
void mlir::tile::registerBufferAccessLowerings(LoweringTable &table) {
  table.add<memref::LoadOp, memref::StoreOp>(
      [](KernelLowering &kl, Operation *op, OpBuilder &b, IRMapping &map,
         Context &ctx) {
        Value m = isa<memref::LoadOp>(op)
                      ? cast<memref::LoadOp>(op).getMemRef()
                      : cast<memref::StoreOp>(op).getMemRef();
        if (isa<MemRefType>(m.getType()))
          return kl.lowerAccess(op, b, map, ctx);
        b.clone(*op, map);
        return success();
      });
  table.addNothing<memref::SubViewOp, memref::CastOp>(); // read by bufferOf
  table.add<memref::DimOp>([](KernelLowering &kl, memref::DimOp dim,
                              OpBuilder &b, IRMapping &map, Context &) {
    FailureOr<Buffer> buf = kl.bufferOf(dim.getSource(), b, map);
    if (failed(buf))
      return failure();
    std::optional<int64_t> d = dim.getConstantIndex();
    if (d && !ShapedType::isDynamic(buf->shape[*d])) {
      map.map(dim.getResult(), cIdx(b, kl.loc, buf->shape[*d]));
      return success();
    }
    map.map(dim.getResult(),
            memref::DimOp::create(b, kl.loc, buf->memref,
                                  map.lookupOrDefault(dim.getIndex())));
    return success();
  });
}
