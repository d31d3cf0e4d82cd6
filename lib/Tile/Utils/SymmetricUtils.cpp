//===- SymmetricUtils.cpp - peer views, signals and waits -----------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/Utils/SymmetricUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tile;

static Value cIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value tile::emitPeerView(OpBuilder &b, Location loc, Value local, Value peers,
                         Value rank, MemRefType resultType) {
  auto type = cast<MemRefType>(local.getType());
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  // The identity layout has offset 0: the aligned pointer is element 0.
  Value here = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, local);
  Value there = memref::LoadOp::create(b, loc, peers, ValueRange{rank});
  there = arith::IndexCastOp::create(b, loc, b.getIndexType(), there);
  Value delta = arith::DivSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, there, here), cIndex(b, loc, bytes));
  SmallVector<OpFoldResult> sizes, strides(type.getRank());
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(type.isDynamicDim(d)
                        ? OpFoldResult(memref::DimOp::create(b, loc, local, d)
                                           .getResult())
                        : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  // Row-major strides, folded where the extents are static.
  OpFoldResult stride = b.getIndexAttr(1);
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    strides[d] = stride;
    auto cs = getConstantIntValue(stride), cz = getConstantIntValue(sizes[d]);
    if (cs && cz)
      stride = b.getIndexAttr(*cs * *cz);
    else
      stride = arith::MulIOp::create(
                   b, loc, getValueOrCreateConstantIndexOp(b, loc, stride),
                   getValueOrCreateConstantIndexOp(b, loc, sizes[d]))
                   .getResult();
  }
  return memref::ReinterpretCastOp::create(b, loc, resultType, local,
                                           OpFoldResult(delta), sizes, strides);
}

Value tile::rankInWorld(OpBuilder &b, Location loc, Value peers, Value rank) {
  Value size = memref::DimOp::create(b, loc, peers, 0);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rank, size);
}

void tile::emitSignal(OpBuilder &b, Location loc, Value flags,
                      ValueRange indices, Value value, SignalMode mode) {
  // The fence makes the update a release of everything the block wrote
  // before it (the GPU lowerings do the same through GPUTargetInfo).
  LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::acq_rel, StringRef());
  auto kind = mode == SignalMode::add ? arith::AtomicRMWKind::addi
                                      : arith::AtomicRMWKind::assign;
  memref::AtomicRMWOp::create(b, loc, kind, value, flags, indices);
}

static arith::CmpIPredicate predicateOf(WaitCompare cmp) {
  switch (cmp) {
  case WaitCompare::eq:
    return arith::CmpIPredicate::eq;
  case WaitCompare::ne:
    return arith::CmpIPredicate::ne;
  case WaitCompare::ge:
    return arith::CmpIPredicate::sge;
  case WaitCompare::gt:
    return arith::CmpIPredicate::sgt;
  case WaitCompare::le:
    return arith::CmpIPredicate::sle;
  case WaitCompare::lt:
    return arith::CmpIPredicate::slt;
  }
  llvm_unreachable("unknown wait comparison");
}

Value tile::emitAtomicRead(OpBuilder &b, Location loc, Value flags,
                           ValueRange indices) {
  auto type = cast<MemRefType>(flags.getType());
  Value zero = arith::ConstantIntOp::create(b, loc, type.getElementType(), 0);
  return memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::ori, zero,
                                     flags, indices);
}

Value tile::emitWaitLoop(OpBuilder &b, Location loc,
                         function_ref<Value(OpBuilder &, Location)> readFlag,
                         Value value, WaitCompare cmp, int64_t timeoutMs,
                         function_ref<Value(OpBuilder &, Location)> nowNs) {
  Type i1 = b.getI1Type(), i64 = b.getI64Type();
  Value start = nowNs(b, loc);
  Value limit = arith::ConstantIntOp::create(b, loc, i64, timeoutMs * 1000000);
  // while (!(flag cmp value) && now - start < limit) {}
  auto loop = scf::WhileOp::create(b, loc, TypeRange{i1}, ValueRange{},
      [&](OpBuilder &wb, Location l, ValueRange) {
        Value flag = readFlag(wb, l);
        Value done = arith::CmpIOp::create(wb, l, predicateOf(cmp), flag, value);
        Value elapsed = arith::SubIOp::create(wb, l, nowNs(wb, l), start);
        Value early = arith::CmpIOp::create(wb, l, arith::CmpIPredicate::slt,
                                            elapsed, limit);
        Value again = arith::AndIOp::create(
            wb, l, arith::XOrIOp::create(
                       wb, l, done, arith::ConstantIntOp::create(wb, l, i1, 1)),
            early);
        scf::ConditionOp::create(wb, l, again, ValueRange{done});
      },
      [&](OpBuilder &wb, Location l, ValueRange) {
        scf::YieldOp::create(wb, l);
      });
  return loop.getResult(0);
}

std::string tile::waitTimeoutMessage(WaitOp op) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  static const char *symbols[] = {"==", "!=", ">=", ">", "<=", "<"};
  os << "T.wait timed out after " << op.getTimeoutMs() << " ms: the flag "
     << "never became " << symbols[static_cast<int>(op.getCmp())]
     << " the value (did a rank not start, or not signal?)";
  return msg;
}
