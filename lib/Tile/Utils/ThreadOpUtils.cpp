//===- ThreadOpUtils.cpp - the arithmetic of atomics and warp reductions --===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/Utils/ThreadOpUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::tile;

Value mlir::tile::atomicCombine(OpBuilder &b, Location loc, AtomicKind kind,
                                Value old, Value value, bool isUnsigned) {
  bool fp = isa<FloatType>(old.getType());
  switch (kind) {
  case AtomicKind::add:
    return fp ? arith::AddFOp::create(b, loc, old, value).getResult()
              : arith::AddIOp::create(b, loc, old, value).getResult();
  case AtomicKind::max:
  case AtomicKind::min: {
    bool max = kind == AtomicKind::max;
    Value takes;
    if (fp)
      takes = arith::CmpFOp::create(
          b, loc, max ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT,
          value, old);
    else
      takes = arith::CmpIOp::create(
          b, loc,
          max ? (isUnsigned ? arith::CmpIPredicate::ugt
                            : arith::CmpIPredicate::sgt)
              : (isUnsigned ? arith::CmpIPredicate::ult
                            : arith::CmpIPredicate::slt),
          value, old);
    return arith::SelectOp::create(b, loc, takes, value, old);
  }
  case AtomicKind::BitAnd:
    return arith::AndIOp::create(b, loc, old, value);
  case AtomicKind::BitOr:
    return arith::OrIOp::create(b, loc, old, value);
  case AtomicKind::BitXor:
    return arith::XOrIOp::create(b, loc, old, value);
  case AtomicKind::exchange:
    return value;
  }
  llvm_unreachable("atomic kind");
}

bool mlir::tile::isIdempotent(AtomicKind kind) {
  return kind != AtomicKind::add && kind != AtomicKind::BitXor;
}

Value mlir::tile::warpReduceCombine(OpBuilder &b, Location loc,
                                    WarpReduceKind kind, Value x, Value y,
                                    bool isUnsigned) {
  bool fp = isa<FloatType>(x.getType());
  switch (kind) {
  case WarpReduceKind::sum:
    return fp ? arith::AddFOp::create(b, loc, x, y).getResult()
              : arith::AddIOp::create(b, loc, x, y).getResult();
  case WarpReduceKind::max:
    if (fp)
      return arith::MaxNumFOp::create(b, loc, x, y);
    return isUnsigned ? arith::MaxUIOp::create(b, loc, x, y).getResult()
                      : arith::MaxSIOp::create(b, loc, x, y).getResult();
  case WarpReduceKind::min:
    if (fp)
      return arith::MinNumFOp::create(b, loc, x, y);
    return isUnsigned ? arith::MinUIOp::create(b, loc, x, y).getResult()
                      : arith::MinSIOp::create(b, loc, x, y).getResult();
  case WarpReduceKind::BitAnd:
    return arith::AndIOp::create(b, loc, x, y);
  case WarpReduceKind::BitOr:
    return arith::OrIOp::create(b, loc, x, y);
  case WarpReduceKind::BitXor:
    return arith::XOrIOp::create(b, loc, x, y);
  }
  llvm_unreachable("warp reduce kind");
}

LLVM::AtomicOrdering
mlir::tile::llvmOrdering(std::optional<MemoryOrder> order) {
  if (!order)
    return LLVM::AtomicOrdering::monotonic;
  switch (*order) {
  case MemoryOrder::relaxed:
    return LLVM::AtomicOrdering::monotonic;
  case MemoryOrder::consume:
  case MemoryOrder::acquire:
    return LLVM::AtomicOrdering::acquire;
  case MemoryOrder::release:
    return LLVM::AtomicOrdering::release;
  case MemoryOrder::acq_rel:
    return LLVM::AtomicOrdering::acq_rel;
  case MemoryOrder::seq_cst:
    return LLVM::AtomicOrdering::seq_cst;
  }
  llvm_unreachable("memory order");
}

Value mlir::tile::memrefAtAddress(OpBuilder &b, Location loc, MemRefType type,
                                  Value address, ValueRange sizes) {
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  int64_t rank = type.getRank();
  SmallVector<Type> fields = {ptrType, ptrType, i64};
  if (rank) {
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
  }
  auto descType = LLVM::LLVMStructType::getLiteral(ctx, fields);
  Value ptr = LLVM::IntToPtrOp::create(b, loc, ptrType, address);
  Value desc = LLVM::PoisonOp::create(b, loc, descType);
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{0});
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{1});
  desc = LLVM::InsertValueOp::create(
      b, loc, desc, LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(0)),
      ArrayRef<int64_t>{2});
  // Sizes (static ones as constants), then row-major strides.
  SmallVector<Value> extents;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t e = type.getDimSize(d);
    extents.push_back(
        ShapedType::isDynamic(e)
            ? arith::IndexCastOp::create(b, loc, i64, sizes[next++]).getResult()
            : LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(e))
                  .getResult());
  }
  Value stride = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1));
  for (int64_t d = rank - 1; d >= 0; --d) {
    desc = LLVM::InsertValueOp::create(b, loc, desc, extents[d],
                                       ArrayRef<int64_t>{3, d});
    desc = LLVM::InsertValueOp::create(b, loc, desc, stride,
                                       ArrayRef<int64_t>{4, d});
    if (d)
      stride = LLVM::MulOp::create(b, loc, stride, extents[d]);
  }
  return UnrealizedConversionCastOp::create(b, loc, type, desc).getResult(0);
}
