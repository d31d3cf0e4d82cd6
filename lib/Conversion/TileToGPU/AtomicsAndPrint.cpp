//===- AtomicsAndPrint.cpp - atomics, printing, assertions
//------------------===//
//
// Part of tilelang-mlir.
//
// tile.atomic_add (scalars, fragments register by register or in pairs,
// shared tiles in bulk where the target can), tile.print (one thread
// prints, tiles gathered in shared memory) and tile.device_assert.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "dialects/Tile/Utils/StringConstants.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::tile;

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
    Value ok =
        dst->kind == BufferKind::Global ? inBounds(ab, *dst, idx) : Value();
    guarded(ab, loc, ok, [&](OpBuilder &gb) {
      if (dst->kind == BufferKind::Shared)
        memref::AtomicRMWOp::create(gb, loc, kind, v, dst->memref,
                                    ValueRange{sharedOffset(gb, *dst, idx)});
      else
        memref::AtomicRMWOp::create(gb, loc, kind, v, dst->memref, idx);
    });
  };
  Value value = map.lookupOrDefault(op.getValue());
  if (!isa<MemRefType>(op.getValue().getType())) {
    // One element: made by every thread that runs it outside a parallel
    // loop (TileLang's scalar atomics), by one copy of each instance in it.
    guarded(b, loc, ctx.inParallel() ? ctx.leader : Value(),
            [&](OpBuilder &gb) {
              atomicAt(gb, offsets, convertElements(gb, loc, value, elem));
            });
    return success();
  }
  FailureOr<Buffer> src = bufferOf(op.getValue(), b, map);
  if (failed(src))
    return failure();
  if (src->kind == BufferKind::Shared && op.getTma()) {
    if (std::optional<LogicalResult> bulk =
            target.lowerBulkAtomicAdd(*this, op, b, map))
      return *bulk;
    // Element by element: thread t adds elements t, t + threads, ... of the
    // tile, between the barriers a bulk add has (InsertBarriers leaves them
    // to this op).
    int64_t lead = dst->rank() - src->rank();
    int64_t count = 1;
    for (int64_t e : src->shape)
      count *= e;
    barrier(b);
    auto loop = scf::ForOp::create(b, loc, tid, cIdx(b, loc, count),
                                   cIdx(b, loc, numThreads));
    {
      OpBuilder lb = OpBuilder::atBlockTerminator(loop.getBody());
      Value rest = loop.getInductionVar();
      SmallVector<Value> sidx(src->rank());
      for (int64_t d = src->rank() - 1; d >= 0; --d) {
        Value extent = cIdx(lb, loc, src->shape[d]);
        sidx[d] = d ? arith::RemUIOp::create(lb, loc, rest, extent).getResult()
                    : rest;
        if (d)
          rest = arith::DivUIOp::create(lb, loc, rest, extent);
      }
      SmallVector<Value> idx(offsets.begin(), offsets.begin() + lead);
      for (int64_t d = 0; d < src->rank(); ++d)
        idx.push_back(
            arith::AddIOp::create(lb, loc, offsets[lead + d], sidx[d]));
      atomicAt(lb, idx,
               convertElements(lb, loc, loadElement(lb, *src, sidx), elem));
    }
    barrier(b);
    return success();
  }
  if (src->kind != BufferKind::Fragment)
    return op.emitOpError("atomic adds of tiles need a fragment value on ")
           << target.getPlatformName() << " targets";
  const TileLayout &layout = *src->layout;
  int64_t lead = dst->rank() - src->rank();
  Value leader = replicaLeader(b, layout);
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
      idx.push_back(
          d < lead ? offsets[d]
                   : arith::AddIOp::create(b, loc, offsets[d], fidx[d - lead])
                         .getResult());
    if (!pairs) {
      guarded(b, loc, cond, [&](OpBuilder &gb) {
        atomicAt(gb, idx, convertElements(gb, loc, regLoad(gb, *src, r), elem));
      });
      continue;
    }
    // Registers r and r + 1 hold elements (.., c) and (.., c + 1), c even:
    // both are in bounds when the first is (the last extent is even).
    cond = andOf(b, loc, cond, inBounds(b, *dst, idx));
    guarded(b, loc, cond, [&](OpBuilder &gb) {
      Value ptr = globalElementPtr(gb, *dst, idx);
      Value lo = convertElements(gb, loc, regLoad(gb, *src, r), elem);
      Value hi = convertElements(gb, loc, regLoad(gb, *src, r + 1), elem);
      target.emitPairedAtomicAdd(gb, loc, ptr, lo, hi);
    });
  }
  return success();
}

/// Whether a fragment atomic add into global float32 memory can go out as
/// pairs of registers (where the target has such a reduction): every even
/// register and the next hold consecutive elements of the last dimension
/// (as in the mma/wgmma accumulator layouts), starting at an even column of
/// a destination whose last extent is even.
bool KernelLowering::pairedAtomicAdd(const Buffer &src, const Buffer &dst,
                                     ArrayRef<Value> offsets) {
  if (!target.hasPairedF32AtomicAdd() || dst.kind != BufferKind::Global ||
      !dst.elementType.isF32() || !src.elementType.isF32() || src.rank() == 0)
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
      Value v =
          i < (int)blockIndices.size() ? blockIndices[i] : cIdx(pb, loc, 0);
      args.push_back(arith::IndexCastOp::create(pb, loc, pb.getI64Type(), v));
    }
    args.push_back(arith::IndexCastOp::create(pb, loc, pb.getI64Type(), tid));
    return args;
  };
  auto formatOf = [&](OpBuilder &pb, Value v, SmallVectorImpl<Value> &args) {
    Type t = v.getType();
    if (isa<FloatType>(t)) {
      args.push_back(convertElements(pb, loc, v, pb.getF64Type()));
      return std::string("%g");
    }
    args.push_back(convertElements(pb, loc, v, pb.getI64Type()));
    return std::string("%lld");
  };
  std::string prefix = "block (%lld, %lld, %lld) thread %lld";
  Value value = map.lookupOrDefault(op.getValue());
  if (!isa<MemRefType>(op.getValue().getType())) {
    // Scalars: the thread that runs it (one per block at block level).
    Value guard = ctx.inParallel() ? ctx.leader : isThreadZero(b);
    guarded(b, loc, guard, [&](OpBuilder &pb) {
      SmallVector<Value> args = blockArgs(pb);
      std::string fmt =
          prefix + escaped + " " + formatOf(pb, value, args) + "\n";
      gpu::PrintfOp::create(pb, loc, pb.getStringAttr(fmt), args);
    });
    return success();
  }
  FailureOr<Buffer> buf = bufferOf(op.getValue(), b, map);
  if (failed(buf))
    return failure();
  // Tiles: gather into shared memory, thread 0 prints every element.
  Buffer view = *buf;
  if (buf->kind == BufferKind::Fragment) {
    Side frag{*buf, {}, buf->shape};
    for (int64_t i = 0; i < buf->rank(); ++i)
      frag.offsets.push_back(cIdx(b, loc, 0));
    Side scratch = scratchSide(b, buf->shape, buf->elementType);
    barrier(b);
    copyFragmentMemory(b, frag, scratch, true);
    view = scratch.buf;
  } else if (buf->kind == BufferKind::Global) {
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
    scf::buildLoopNest(
        pb, loc, lbs, ubs, steps,
        [&](OpBuilder &nb, Location l, ValueRange ivs) {
          SmallVector<Value> eargs;
          std::string fmt = "  [";
          for (auto [i, iv] : llvm::enumerate(ivs)) {
            fmt += i ? ", %lld" : "%lld";
            eargs.push_back(
                arith::IndexCastOp::create(nb, l, nb.getI64Type(), iv));
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
  return getOrCreateStringConstant(b, loc, gpuModule, prefix, value);
}

void KernelLowering::emitCheck(OpBuilder &b, Location at, StringRef msg,
                               Value ok) {
  Value failed = arith::XOrIOp::create(
      b, loc, ok, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  target.emitAssertFailure(*this, at, msg, b, failed);
}

/// A device assert: what a failing one does is the target's
/// (GPUTargetInfo::emitAssertFailure).
LogicalResult KernelLowering::lowerDeviceAssert(DeviceAssertOp op, OpBuilder &b,
                                                IRMapping &map) {
  emitCheck(b, op.getLoc(), op.getMsg(), map.lookupOrDefault(op.getCondition()));
  return success();
}

void mlir::tile::registerAtomicAndPrintLowerings(LoweringTable &table) {
  table.add<AtomicAddOp>([](KernelLowering &kl, AtomicAddOp op, OpBuilder &b,
                            IRMapping &map, Context &ctx) {
    return kl.lowerAtomicAdd(op, b, map, ctx);
  });
  table.add<PrintOp>([](KernelLowering &kl, PrintOp op, OpBuilder &b,
                        IRMapping &map, Context &ctx) {
    if (failed(kl.target.checkSupported(op)))
      return failure();
    return kl.lowerPrint(op, b, map, ctx);
  });
  // Asserts check per element too (each instance of a parallel body).
  table.add<DeviceAssertOp>(
      [](KernelLowering &kl, DeviceAssertOp op, OpBuilder &b, IRMapping &map,
         Context &) { return kl.lowerDeviceAssert(op, b, map); },
      InParallel::lowered);
}
