//===- Copies.cpp - tile.copy and tile.fill
//---------------------------------===//
//
// Part of tilelang-mlir.
//
// Copies between memories are cooperative, coalesced and vectorized
// (asynchronous where the target can); copies between fragments and memory
// follow the fragment layout; other combinations go through shared scratch.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::tile;

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
void KernelLowering::copyMemoryToMemory(
    OpBuilder &b, const Side &src, const Side &dst, bool async,
    llvm::function_ref<void(OpBuilder &, ArrayRef<Value>, Value)> store) {
  SmallVector<int64_t> shape = dropUnitDims(src.sizes);
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
      if (s.buf.kind == BufferKind::Global) {
        int64_t last = s.buf.shape.back();
        a = std::min(a, ShapedType::isDynamic(last) ? 1 : (last & -last));
      } else if (s.buf.kind == BufferKind::Shared) {
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
  bool useAsync =
      async && !store && target.hasAsyncCopy() && sameElements(src, dst) &&
      (v * elementBytes(srcElem) == 4 || v * elementBytes(srcElem) == 8 ||
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
    Value srcOk = src.buf.kind == BufferKind::Global ? inBounds(rb, src.buf, si)
                                                     : Value();
    Value dstOk = dst.buf.kind == BufferKind::Global ? inBounds(rb, dst.buf, di)
                                                     : Value();
    if (useAsync) {
      asyncCopy(rb, dst.buf, di, src.buf, si, srcOk, v);
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
    guarded(rb, loc, dstOk, [&](OpBuilder &gb) {
      if (store)
        store(gb, di, value);
      else
        storeVector(gb, dst.buf, di, value);
    });
  };
  auto round = [&](OpBuilder &rb, Value k) {
    Value q = arith::AddIOp::create(
        rb, loc, tid,
        arith::MulIOp::create(rb, loc, k, cIdx(rb, loc, numThreads)));
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
    auto loop = scf::ForOp::create(b, loc, cIdx(b, loc, 0),
                                   cIdx(b, loc, rounds), cIdx(b, loc, 1));
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
  bool fullRegion =
      llvm::all_of(frag.offsets,
                   [](Value o) {
                     APInt c;
                     return matchPattern(o, m_ConstantInt(&c)) && c.isZero();
                   }) &&
      ArrayRef<int64_t>(frag.sizes) == ArrayRef<int64_t>(frag.buf.shape);
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
    if (mem.buf.kind == BufferKind::Global) {
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
  Value leader = toMemory ? replicaLeader(b, layout) : Value();
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
    if (mem.buf.kind == BufferKind::Global)
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
                eb, l,
                arith::ConstantOp::create(eb, l, vt, eb.getZeroAttr(vt))
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
  buf.kind = BufferKind::Shared;
  buf.memref = memref::ViewOp::create(
      b, loc,
      MemRefType::get({n}, type, MemRefLayoutAttrInterface(), workgroup), smem,
      smemAt(b, scratchOffset), ValueRange{});
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
/// region. Writes to global or shared memory come from thread 0 when every
/// thread would store the same values at the same places, else
/// (`eachThread`: the copy is each thread's own, ThreadVariance) from every
/// thread, as TileLang's copy out of a local buffer does.
void KernelLowering::copyPerThread(OpBuilder &b, const Side &src,
                                   const Side &dst, bool eachThread) {
  SmallVector<int64_t> shape = dropUnitDims(src.sizes);
  bool shared =
      dst.buf.kind == BufferKind::Global || dst.buf.kind == BufferKind::Shared;
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
      Value ok = src.buf.kind == BufferKind::Global ? inBounds(nb, src.buf, si)
                                                    : Value();
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
      Value dok = dst.buf.kind == BufferKind::Global ? inBounds(nb, dst.buf, di)
                                                     : Value();
      guarded(nb, l, dok,
              [&](OpBuilder &gb) { storeElement(gb, dst.buf, di, v); });
    };
    if (shape.empty())
      fn(eb, loc, {});
    else
      scf::buildLoopNest(eb, loc, lbs, ubs, steps, fn);
  };
  guarded(b, loc, shared && !eachThread ? isThreadZero(b) : Value(), emit);
}

/// Stages a copy through shared scratch memory: src -> scratch, barrier,
/// scratch -> dst, barrier.
void KernelLowering::copyThroughScratch(OpBuilder &b, const Side &src,
                                        const Side &dst) {
  SmallVector<int64_t> shape = dropUnitDims(src.sizes);
  if (shape.empty())
    shape.push_back(1);
  Side scratch = scratchSide(b, shape, dst.buf.elementType);
  scratch.logical = dst.logical;
  auto move = [&](const Side &from, const Side &to) {
    bool fromFrag = from.buf.kind == BufferKind::Fragment;
    bool toFrag = to.buf.kind == BufferKind::Fragment;
    if (fromFrag)
      copyFragmentMemory(b, from, to, /*toMemory=*/true);
    else if (toFrag)
      copyFragmentMemory(b, to, from, /*toMemory=*/false);
    else if (from.buf.kind == BufferKind::Local ||
             from.buf.kind == BufferKind::Var ||
             to.buf.kind == BufferKind::Local || to.buf.kind == BufferKind::Var)
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

/// One thread's asynchronous copy of `elements` into the (swizzled) shared
/// buffer. A source out of range (`srcOk` false) copies zero bytes (zero
/// fill) from a clamped, valid address. Left unclamped, one thread's copies
/// share a base and differ by constants (13% fewer instructions in the loop
/// of flash decoding's split kernel), but that kernel measured 0-3% slower
/// on the H200 (BENCHMARKS.md 2026-12-03, last), so the clamp stays.
void KernelLowering::asyncCopy(OpBuilder &b, const Buffer &dst,
                               ArrayRef<Value> dstIdx, const Buffer &src,
                               ArrayRef<Value> srcIdx, Value srcOk,
                               int64_t elements) {
  Value count = cIdx(b, loc, elements);
  SmallVector<Value> clamped(srcIdx);
  if (srcOk) {
    count = arith::SelectOp::create(b, loc, srcOk, count, cIdx(b, loc, 0));
    for (Value &i : clamped)
      i = arith::SelectOp::create(b, loc, srcOk, i, cIdx(b, loc, 0));
  }
  target.emitAsyncCopy(b, loc, dst.memref, sharedOffset(b, dst, dstIdx),
                       src.memref, clamped, elements, count,
                       elements * elementBytes(src.elementType) == 16);
}

/// One thread's cp.async of a few elements into the (swizzled) shared
/// buffer; a source past the end of the tensor, or a false predicate,
/// copies zeros.
LogicalResult KernelLowering::lowerCpAsync(CpAsyncOp op, OpBuilder &b,
                                           IRMapping &map) {
  if (!target.hasAsyncCopy())
    return op.emitOpError("needs asynchronous copies (cp.async), which ")
           << target.getPlatformName() << " targets do not have";
  FailureOr<Buffer> src = bufferOf(op.getSrc(), b, map);
  FailureOr<Buffer> dst = bufferOf(op.getDst(), b, map);
  if (failed(src) || failed(dst))
    return failure();
  SmallVector<Value> si, di;
  for (Value i : op.getSrcIndices())
    si.push_back(map.lookupOrDefault(i));
  for (Value i : op.getDstIndices())
    di.push_back(map.lookupOrDefault(i));
  Value copied = inBounds(b, *src, si);
  if (Value predicate = op.getPredicate())
    copied = arith::AndIOp::create(b, loc, copied, map.lookupOrDefault(predicate));
  asyncCopy(b, *dst, di, *src, si, copied, op.getElements());
  return success();
}

LogicalResult KernelLowering::lowerCopy(CopyOp op, OpBuilder &b,
                                        IRMapping &map) {
  FailureOr<Side> src =
      sideOf(op.getSrc(), op.getSrcOffsets(), op.getSrcSizes(), b, map);
  FailureOr<Side> dst =
      sideOf(op.getDst(), op.getDstOffsets(), op.getDstSizes(), b, map);
  if (failed(src) || failed(dst))
    return failure();
  src->logical = op.getSrcLogicalType();
  dst->logical = op.getDstLogicalType();
  BufferKind sk = src->buf.kind, dk = dst->buf.kind;
  auto isMemory = [](BufferKind k) {
    return k == BufferKind::Global || k == BufferKind::Shared;
  };
  auto isPerThread = [](BufferKind k) {
    return k == BufferKind::Local || k == BufferKind::Var;
  };
  if (isMemory(sk) && isMemory(dk)) {
    copyMemoryToMemory(b, *src, *dst, op.getAsync());
    return success();
  }
  if (sk == BufferKind::Fragment && isMemory(dk)) {
    copyFragmentMemory(b, *src, *dst, /*toMemory=*/true);
    return success();
  }
  if (isMemory(sk) && dk == BufferKind::Fragment) {
    copyFragmentMemory(b, *dst, *src, /*toMemory=*/false);
    return success();
  }
  if (sk == BufferKind::Fragment && dk == BufferKind::Fragment &&
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
    copyPerThread(b, *src, *dst, variance && variance->perThread(op));
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
  if (buf->kind == BufferKind::Fragment) {
    for (int64_t r = 0; r < buf->layout->getNumRegs(); ++r)
      regStore(b, *buf, r, v);
    return success();
  }
  if (buf->kind == BufferKind::Var) {
    memref::StoreOp::create(b, loc, v, buf->memref, ValueRange{});
    return success();
  }
  if (buf->kind == BufferKind::Local) {
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
  bool whole =
      buf->kind == BufferKind::Shared &&
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
      Value q =
          arith::AddIOp::create(b, loc, tid, cIdx(b, loc, k * numThreads));
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
  return op.emitOpError("filling this buffer kind is not supported on ")
         << target.getPlatformName() << " targets";
}

/// Copies through a transaction barrier (TMA) and the epilogue copies that
/// prepareKernel chose to write through TMA stores are the target's (its
/// registerLowerings replaces the tile.copy entry where it has them).
void mlir::tile::registerCopyLowerings(LoweringTable &table) {
  table.add<CopyOp>([](KernelLowering &kl, CopyOp op, OpBuilder &b,
                       IRMapping &map, Context &) -> LogicalResult {
    if (op.getBarrier())
      return op.emitOpError("is a copy through a transaction barrier (TMA, "
                            "NVIDIA sm_90a), which ")
             << kl.target.getPlatformName() << " targets do not have";
    return kl.lowerCopy(op, b, map);
  });
  table.add<FillOp>([](KernelLowering &kl, FillOp op, OpBuilder &b,
                       IRMapping &map, Context &) {
    return kl.lowerFill(op, b, map);
  });
  // One thread's copy: in a T.Parallel body, each instance's thread issues
  // its own (TileOPs' `for i, j in T.Parallel(..): T.ptx_cp_async(..)`).
  table.add<CpAsyncOp>(
      [](KernelLowering &kl, CpAsyncOp op, OpBuilder &b, IRMapping &map,
         Context &) { return kl.lowerCpAsync(op, b, map); },
      InParallel::lowered);
}
