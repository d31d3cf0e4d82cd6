//===- TileToSCF.cpp - lower tile programs to serial loops ----------------===//
//
// Part of tilelang-mlir.
//
// The CPU backend and the semantic reference of the tile dialect. A thread
// block runs as one iteration of the grid loop nest; tile ops become loop
// nests over their tiles. Every choice made here (bounds-safe copies, the
// accumulation type of gemm, reduction identities, the 2:4 metadata encoding)
// is the meaning that GPU backends must reproduce.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToSCF/TileToSCF.h"

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Utils/ControlFlowUtils.h"
#include "dialects/Tile/Utils/ConversionUtils.h"
#include "dialects/Tile/Utils/ReduceUtils.h"
#include "dialects/Tile/Utils/RoundingUtils.h"
#include "dialects/Tile/Utils/StringConstants.h"
#include "dialects/Tile/Utils/SymmetricUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "convert-tile-to-scf"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_CONVERTTILETOSCF
#include "dialects/Conversion/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

//===----------------------------------------------------------------------===//
// Scalar helpers
//===----------------------------------------------------------------------===//

static Value constIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// The zero of a scalar type.
static Value zeroOf(OpBuilder &b, Location loc, Type type) {
  return arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type));
}

static Value add(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::AddFOp::create(b, loc, x, y);
  return arith::AddIOp::create(b, loc, x, y);
}

static Value mul(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::MulFOp::create(b, loc, x, y);
  return arith::MulIOp::create(b, loc, x, y);
}

//===----------------------------------------------------------------------===//
// Loop and region helpers
//===----------------------------------------------------------------------===//

/// Builds a loop nest over `shape` (zero loops for an empty shape) and calls
/// `body` with the induction variables in the innermost loop.
static void
buildNest(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
          function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  if (shape.empty()) {
    body(b, loc, {});
    return;
  }
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t extent : shape) {
    lbs.push_back(constIndex(b, loc, 0));
    ubs.push_back(constIndex(b, loc, extent));
    steps.push_back(constIndex(b, loc, 1));
  }
  scf::buildLoopNest(b, loc, lbs, ubs, steps, body);
}

/// One side of a region-based op: the buffer, where the region starts and
/// its extents. Unit extents are dimensions the iteration space skips.
struct RegionSide {
  Value buffer;
  ValueRange offsets;
  ArrayRef<int64_t> sizes;

  /// Maps the induction variables of the squeezed iteration space to indices
  /// into the buffer.
  SmallVector<Value> indices(OpBuilder &b, Location loc,
                             ValueRange ivs) const {
    SmallVector<Value> result;
    size_t next = 0;
    for (auto [offset, size] : llvm::zip(offsets, sizes)) {
      if (size == 1) {
        result.push_back(offset);
        continue;
      }
      result.push_back(arith::AddIOp::create(b, loc, offset, ivs[next++]));
    }
    return result;
  }

  /// An i1 that is true when `idx` lies inside the buffer, or a null value
  /// when the region provably lies inside it (static shape, constant
  /// offsets).
  Value inBounds(OpBuilder &b, Location loc, ArrayRef<Value> idx) const {
    auto type = cast<MemRefType>(buffer.getType());
    Value cond;
    for (auto [d, index] : llvm::enumerate(idx)) {
      int64_t dimSize = type.getDimSize(d);
      APInt offset;
      if (!ShapedType::isDynamic(dimSize) &&
          matchPattern(offsets[d], m_ConstantInt(&offset)) &&
          offset.getSExtValue() >= 0 &&
          offset.getSExtValue() + sizes[d] <= dimSize)
        continue;
      Value bound = ShapedType::isDynamic(dimSize)
                        ? memref::DimOp::create(b, loc, buffer, d).getResult()
                        : constIndex(b, loc, dimSize);
      // Unsigned compare: a negative index is out of bounds too.
      Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       index, bound);
      cond = cond ? arith::AndIOp::create(b, loc, cond, ok).getResult() : ok;
    }
    return cond;
  }
};

/// Loads `idx` from `buffer`, or zero when `inBounds` is false.
static Value loadOrZero(OpBuilder &b, Location loc, Value buffer,
                        ArrayRef<Value> idx, Value inBounds) {
  Type elementType = cast<MemRefType>(buffer.getType()).getElementType();
  if (!inBounds)
    return memref::LoadOp::create(b, loc, buffer, idx);
  auto ifOp = scf::IfOp::create(
      b, loc, inBounds,
      [&](OpBuilder &tb, Location l) {
        Value v = memref::LoadOp::create(tb, l, buffer, idx);
        scf::YieldOp::create(tb, l, v);
      },
      [&](OpBuilder &eb, Location l) {
        scf::YieldOp::create(eb, l, zeroOf(eb, l, elementType));
      });
  return ifOp.getResult(0);
}

//===----------------------------------------------------------------------===//
// Type conversion
//===----------------------------------------------------------------------===//

void mlir::tile::populateTileToSCFTypeConversion(TypeConverter &converter) {
  converter.addConversion([](Type type) { return type; });
  converter.addConversion([](MemRefType type) -> Type {
    if (!isa_and_nonnull<MemoryScopeAttr>(type.getMemorySpace()))
      return type;
    return MemRefType::get(type.getShape(), type.getElementType(),
                           type.getLayout());
  });
}

namespace {

//===----------------------------------------------------------------------===//
// Kernel, allocation, loops
//===----------------------------------------------------------------------===//

/// Formats a scalar for printf: returns the format directive and the value
/// extended to what C varargs expect.
static std::pair<StringRef, Value> printfArgument(OpBuilder &b, Location loc,
                                                  Value v) {
  Type type = v.getType();
  if (isa<FloatType>(type))
    return {"%g", convertElements(b, loc, v, b.getF64Type())};
  if (type.isInteger(1))
    return {"%d", arith::ExtUIOp::create(b, loc, b.getI32Type(), v)};
  return {"%lld", convertElements(b, loc, v, b.getI64Type())};
}

/// Returns the `printf` declaration of the module, creating it if needed.
static LLVM::LLVMFuncOp getOrCreatePrintf(OpBuilder &b, ModuleOp module) {
  if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>("printf"))
    return fn;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  MLIRContext *ctx = module.getContext();
  auto type = LLVM::LLVMFunctionType::get(IntegerType::get(ctx, 32),
                                          {LLVM::LLVMPointerType::get(ctx)},
                                          /*isVarArg=*/true);
  return LLVM::LLVMFuncOp::create(b, module.getLoc(), "printf", type);
}

/// Emits one printf call with a fresh format-string global.
static void emitPrintf(OpBuilder &b, Location loc, ModuleOp module,
                       StringRef format, ValueRange args) {
  LLVM::LLVMFuncOp printf = getOrCreatePrintf(b, module);
  std::string name;
  for (unsigned i = 0;; ++i) {
    name = "__tile_print_fmt_" + std::to_string(i);
    if (!module.lookupSymbol(name))
      break;
  }
  std::string terminated = format.str();
  terminated.push_back('\0');
  Value fmt = LLVM::createGlobalString(loc, b, name, terminated,
                                       LLVM::Linkage::Internal);
  SmallVector<Value> operands{fmt};
  operands.append(args.begin(), args.end());
  LLVM::CallOp::create(b, loc, printf, operands);
}

/// Replaces a tile.print by printf calls that name the block that printed
/// (`blockIndices`, padded to three dimensions) and thread 0, the one thread
/// a CPU block has.
static void lowerPrint(RewriterBase &rewriter, PrintOp op,
                       ValueRange blockIndices) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  auto module = op->getParentOfType<ModuleOp>();
  std::string prefix = "block (%lld, %lld, %lld) thread 0";
  SmallVector<Value> header;
  for (int i = 0; i < 3; ++i) {
    Value idx = i < static_cast<int>(blockIndices.size())
                    ? blockIndices[i]
                    : constIndex(rewriter, loc, 0);
    header.push_back(
        convertElements(rewriter, loc, idx, rewriter.getI64Type()));
  }
  std::string msg = op.getMsg() ? (": " + *op.getMsg()).str() : "";
  // printf's format must not interpret the user's message.
  std::string escaped;
  for (char c : msg) {
    escaped.push_back(c);
    if (c == '%')
      escaped.push_back('%');
  }
  Value value = op.getValue();
  if (auto type = dyn_cast<MemRefType>(value.getType())) {
    emitPrintf(rewriter, loc, module, prefix + escaped + "\n", header);
    buildNest(rewriter, loc, type.getShape(),
              [&](OpBuilder &b, Location l, ValueRange ivs) {
                Value v = memref::LoadOp::create(b, l, value, ivs);
                auto [directive, arg] = printfArgument(b, l, v);
                std::string format = "  [";
                SmallVector<Value> args;
                for (auto [i, iv] : llvm::enumerate(ivs)) {
                  format += i ? ", %lld" : "%lld";
                  args.push_back(convertElements(b, l, iv, b.getI64Type()));
                }
                format += "] = " + directive.str() + "\n";
                args.push_back(arg);
                emitPrintf(b, l, module, format, args);
              });
  } else {
    auto [directive, arg] = printfArgument(rewriter, loc, value);
    SmallVector<Value> args(header);
    args.push_back(arg);
    emitPrintf(rewriter, loc, module,
               prefix + escaped + " " + directive.str() + "\n", args);
  }
  rewriter.eraseOp(op);
}

/// Replaces a tile.device_assert by a call of the runtime's
/// `__tile_assert_fail(msg, file, line, function, bx, by, bz)` when the
/// condition is false. The runtime (tilelang_mlir.runtime.cpu) does not
/// return from it: the kernel call raises DeviceAssertionError.
static void lowerDeviceAssert(RewriterBase &rewriter, DeviceAssertOp op,
                              ValueRange blockIndices) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  auto module = op->getParentOfType<ModuleOp>();
  MLIRContext *ctx = rewriter.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Type i32 = rewriter.getI32Type(), i64 = rewriter.getI64Type();
  auto fail = module.lookupSymbol<LLVM::LLVMFuncOp>("__tile_assert_fail");
  if (!fail) {
    OpBuilder::InsertionGuard moduleGuard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    auto type = LLVM::LLVMFunctionType::get(
        LLVM::LLVMVoidType::get(ctx), {ptr, ptr, i32, ptr, i64, i64, i64});
    fail = LLVM::LLVMFuncOp::create(rewriter, module.getLoc(),
                                    "__tile_assert_fail", type);
  }
  auto [file, line] = op.getSourcePosition();
  auto func = op->getParentOfType<func::FuncOp>();
  Value failed = arith::XOrIOp::create(
      rewriter, loc, op.getCondition(),
      arith::ConstantIntOp::create(rewriter, loc, rewriter.getI1Type(), 1));
  auto ifOp =
      scf::IfOp::create(rewriter, loc, failed, /*withElseRegion=*/false);
  rewriter.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  SmallVector<Value> args = {
      getOrCreateStringConstant(rewriter, loc, module, "__tile_assert_msg_",
                                op.getMsg()),
      getOrCreateStringConstant(rewriter, loc, module, "__tile_assert_file_",
                                file),
      arith::ConstantIntOp::create(rewriter, loc, i32, line),
      getOrCreateStringConstant(rewriter, loc, module, "__tile_assert_func_",
                                func ? func.getName() : "kernel")};
  for (int i = 0; i < 3; ++i) {
    Value idx = i < static_cast<int>(blockIndices.size())
                    ? blockIndices[i]
                    : constIndex(rewriter, loc, 0);
    args.push_back(convertElements(rewriter, loc, idx, i64));
  }
  LLVM::CallOp::create(rewriter, loc, fail, args);
  rewriter.eraseOp(op);
}

/// tile.kernel -> allocations hoisted before a loop nest over the grid (one
/// iteration per block, z outermost), deallocated after it.
struct KernelLowering : public OpConversionPattern<KernelOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(KernelOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Block &body = op.getBody().front();

    SmallVector<PrintOp> prints;
    op.walk([&](PrintOp p) { prints.push_back(p); });
    for (PrintOp p : prints)
      lowerPrint(rewriter, p, body.getArguments());
    SmallVector<DeviceAssertOp> asserts;
    op.walk([&](DeviceAssertOp a) { asserts.push_back(a); });
    for (DeviceAssertOp a : asserts)
      lowerDeviceAssert(rewriter, a, body.getArguments());

    // Blocks run one after the other, so one buffer per allocation serves
    // every block.
    SmallVector<Operation *> allocs;
    op.walk([&](Operation *nested) {
      if (isa<AllocSharedOp, AllocFragmentOp, AllocLocalOp, AllocVarOp>(
              nested))
        allocs.push_back(nested);
    });
    for (Operation *alloc : allocs)
      rewriter.moveOpBefore(alloc, op);

    SmallVector<Value> lbs, ubs, steps;
    ValueRange grid = adaptor.getGrid();
    for (int i = grid.size() - 1; i >= 0; --i) {
      lbs.push_back(constIndex(rewriter, loc, 0));
      ubs.push_back(grid[i]);
      steps.push_back(constIndex(rewriter, loc, 1));
    }
    scf::LoopNest nest = scf::buildLoopNest(rewriter, loc, lbs, ubs, steps);
    SmallVector<Value> blockIndices;
    for (int i = nest.loops.size() - 1; i >= 0; --i)
      blockIndices.push_back(nest.loops[i].getInductionVar());
    Block *inner = nest.loops.back().getBody();
    rewriter.eraseOp(body.getTerminator());
    rewriter.inlineBlockBefore(&body, inner->getTerminator(), blockIndices);

    rewriter.setInsertionPoint(op);
    for (Operation *alloc : allocs)
      memref::DeallocOp::create(rewriter, loc, alloc->getResult(0));
    rewriter.eraseOp(op);
    return success();
  }
};

template <typename AllocOpTy>
struct AllocLowering : public OpConversionPattern<AllocOpTy> {
  using OpConversionPattern<AllocOpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AllocOpTy op, typename AllocOpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = dyn_cast_or_null<MemRefType>(
        this->getTypeConverter()->convertType(op.getType()));
    if (!type)
      return rewriter.notifyMatchFailure(op, "cannot convert the buffer type");
    rewriter.replaceOpWithNewOp<memref::AllocOp>(
        op, type, /*alignment=*/rewriter.getI64IntegerAttr(64));
    return success();
  }
};

/// Replaces a region op (parallel, pipelined) by `loops` and moves its body
/// into the innermost one.
static void inlineBodyInto(ConversionPatternRewriter &rewriter, Region &region,
                           Block *inner, ValueRange ivs) {
  Block &body = region.front();
  rewriter.eraseOp(body.getTerminator());
  rewriter.inlineBlockBefore(&body, inner->getTerminator(), ivs);
}

struct ParallelLowering : public OpConversionPattern<ParallelOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ParallelOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t extent : op.getExtents()) {
      lbs.push_back(constIndex(rewriter, loc, 0));
      ubs.push_back(constIndex(rewriter, loc, extent));
      steps.push_back(constIndex(rewriter, loc, 1));
    }
    scf::LoopNest nest = scf::buildLoopNest(rewriter, loc, lbs, ubs, steps);
    SmallVector<Value> ivs;
    for (scf::ForOp loop : nest.loops)
      ivs.push_back(loop.getInductionVar());
    inlineBodyInto(rewriter, op.getBody(), nest.loops.back().getBody(), ivs);
    rewriter.eraseOp(op);
    return success();
  }
};

struct PipelinedLowering : public OpConversionPattern<PipelinedOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PipelinedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // Stages only matter where copies can overlap compute; on the CPU the
    // loop runs in program order.
    auto loop =
        scf::ForOp::create(rewriter, op.getLoc(), adaptor.getLower(),
                           adaptor.getUpper(), adaptor.getStep());
    inlineBodyInto(rewriter, op.getBody(), loop.getBody(),
                   loop.getInductionVar());
    rewriter.eraseOp(op);
    return success();
  }
};

/// Ops that only guide GPU code generation: no effect on the CPU.
template <typename OpTy>
struct EraseLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

struct CopyLowering : public OpConversionPattern<CopyOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CopyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RegionSide src{adaptor.getSrc(), adaptor.getSrcOffsets(),
                   op.getSrcSizes()};
    RegionSide dst{adaptor.getDst(), adaptor.getDstOffsets(),
                   op.getDstSizes()};
    Type dstElement = op.getDst().getType().getElementType();
    buildNest(rewriter, op.getLoc(), op.getSqueezedShape(),
              [&](OpBuilder &b, Location loc, ValueRange ivs) {
                SmallVector<Value> srcIdx = src.indices(b, loc, ivs);
                SmallVector<Value> dstIdx = dst.indices(b, loc, ivs);
                Value v = loadOrZero(b, loc, src.buffer, srcIdx,
                                     src.inBounds(b, loc, srcIdx));
                v = convertElements(b, loc, v, op.getSrcLogicalType(),
                                    op.getDstLogicalType(), dstElement);
                guarded(
                    b, loc, dst.inBounds(b, loc, dstIdx), [&](OpBuilder &gb) {
                      memref::StoreOp::create(gb, loc, v, dst.buffer, dstIdx);
                    });
              });
    rewriter.eraseOp(op);
    return success();
  }
};

struct FillLowering : public OpConversionPattern<FillOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(FillOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value dst = adaptor.getDst();
    Value value = adaptor.getValue();
    auto type = cast<MemRefType>(dst.getType());
    if (!type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic fills are unsupported");
    buildNest(rewriter, op.getLoc(), type.getShape(),
              [&](OpBuilder &b, Location loc, ValueRange ivs) {
                memref::StoreOp::create(b, loc, value, dst, ivs);
              });
    rewriter.eraseOp(op);
    return success();
  }
};

struct AtomicAddLowering : public OpConversionPattern<AtomicAddOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AtomicAddOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value dst = adaptor.getDst();
    auto dstType = cast<MemRefType>(dst.getType());
    Type element = dstType.getElementType();
    arith::AtomicRMWKind kind = isa<FloatType>(element)
                                    ? arith::AtomicRMWKind::addf
                                    : arith::AtomicRMWKind::addi;
    Value value = adaptor.getValue();
    auto valueType = dyn_cast<MemRefType>(value.getType());
    // The updated region: a scalar updates one element; a tile updates a
    // region of its shape, aligned with the trailing dimensions of dst.
    SmallVector<int64_t> sizes(dstType.getRank(), 1);
    if (valueType)
      llvm::copy(valueType.getShape(),
                 sizes.begin() + (dstType.getRank() - valueType.getRank()));
    RegionSide side{dst, adaptor.getOffsets(), sizes};
    SmallVector<int64_t> iteration =
        valueType ? SmallVector<int64_t>(valueType.getShape())
                  : SmallVector<int64_t>();
    buildNest(rewriter, op.getLoc(), iteration,
              [&](OpBuilder &b, Location loc, ValueRange ivs) {
                Value v = valueType
                              ? memref::LoadOp::create(b, loc, value, ivs)
                              : value;
                v = convertElements(b, loc, v, element);
                // Unit dims of the value tile are iterated too: map all of
                // its dims (not only the non-unit ones) onto dst.
                SmallVector<Value> idx;
                size_t lead = dstType.getRank() - ivs.size();
                for (auto [d, offset] : llvm::enumerate(side.offsets)) {
                  if (d < lead) {
                    idx.push_back(offset);
                    continue;
                  }
                  idx.push_back(
                      arith::AddIOp::create(b, loc, offset, ivs[d - lead]));
                }
                guarded(b, loc, side.inBounds(b, loc, idx), [&](OpBuilder &gb) {
                  memref::AtomicRMWOp::create(gb, loc, kind, v, dst, idx);
                });
              });
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

/// Zeroes `c` (static shape) with a loop nest.
static void zeroFill(OpBuilder &b, Location loc, Value c) {
  auto type = cast<MemRefType>(c.getType());
  Value zero = zeroOf(b, loc, type.getElementType());
  buildNest(b, loc, type.getShape(), [&](OpBuilder &nb, Location l,
                                         ValueRange ivs) {
    memref::StoreOp::create(nb, l, zero, c, ivs);
  });
}

/// One element of op(A) inside a gemm's loop nest: its row `m`, the index
/// `k` along K of the B row it multiplies, and its value.
struct GemmAElement {
  Value m, k, value;
};

/// C[m, n] += A(m, k) * B(k, n), accumulating in C's element type (operands
/// convert element by element, float8 included: ConversionUtils.h decodes
/// it); `clear` zeroes C first. The loops over `outer` pick the elements of
/// A, which `loadA` loads (dense: outer is {M, K}; 2:4 sparse: the kept
/// values, whose K index comes from the metadata); an inner loop over N
/// walks rows of B and C contiguously.
/// The signed 4-bit integer of byte `byte` (i8) holding logical K index `k`
/// (TileLang's packing: even k in the low nibble), as an i8.
static Value int4Nibble(OpBuilder &b, Location loc, Value byte, Value k) {
  Type i8 = b.getI8Type();
  Value four = arith::ConstantIntOp::create(b, loc, i8, 4);
  Value low = arith::ShRSIOp::create(
      b, loc, arith::ShLIOp::create(b, loc, byte, four), four);
  Value high = arith::ShRSIOp::create(b, loc, byte, four);
  Value odd = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne,
      arith::RemUIOp::create(b, loc, k, constIndex(b, loc, 2)),
      constIndex(b, loc, 0));
  return arith::SelectOp::create(b, loc, odd, high, low);
}

static void
lowerGemm(OpBuilder &builder, Location loc, ArrayRef<int64_t> outer,
          function_ref<GemmAElement(OpBuilder &, Location, ValueRange)> loadA,
          Value b, bool tb, Value c, bool clear, bool int4 = false) {
  auto cType = cast<MemRefType>(c.getType());
  Type accType = cType.getElementType();
  if (clear)
    zeroFill(builder, loc, c);
  buildNest(
      builder, loc, outer, [&](OpBuilder &mb, Location l, ValueRange ivs) {
        GemmAElement a = loadA(mb, l, ivs);
        Value m = a.m, k = a.k;
        Value av = convertElements(mb, l, a.value, accType);
        buildNest(mb, l, {cType.getDimSize(1)},
                  [&](OpBuilder &nb, Location nl, ValueRange nIv) {
                    Value n = nIv[0];
                    Value kb = int4 ? arith::DivUIOp::create(
                                          nb, nl, k, constIndex(nb, nl, 2))
                                    : k;
                    Value bv = memref::LoadOp::create(
                        nb, nl, b, tb ? ValueRange{n, kb} : ValueRange{kb, n});
                    if (int4)
                      bv = int4Nibble(nb, nl, bv, k);
                    bv = convertElements(nb, nl, bv, accType);
                    Value cv =
                        memref::LoadOp::create(nb, nl, c, ValueRange{m, n});
                    cv = add(nb, nl, cv, mul(nb, nl, av, bv));
                    memref::StoreOp::create(nb, nl, cv, c, ValueRange{m, n});
                  });
      });
}

struct GemmLowering : public OpConversionPattern<GemmOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value a = adaptor.getA();
    bool ta = op.getTransposeA();
    // m, k, n order: A[m, k] (A[k, m] with transpose_a) at each (m, k).
    // Packed int4: K counts bytes, two products each.
    bool int4 = op.getInt4();
    auto loadA = [&](OpBuilder &builder, Location l, ValueRange mk) {
      Value m = mk[0], k = mk[1];
      Value ka = int4 ? arith::DivUIOp::create(builder, l, k,
                                               constIndex(builder, l, 2))
                      : k;
      Value av = memref::LoadOp::create(
          builder, l, a, ta ? ValueRange{ka, m} : ValueRange{m, ka});
      if (int4)
        av = int4Nibble(builder, l, av, k);
      return GemmAElement{m, k, av};
    };
    lowerGemm(rewriter, op.getLoc(),
              {op.getM(), int4 ? 2 * op.getK() : op.getK()}, loadA,
              adaptor.getB(), op.getTransposeB(), adaptor.getC(),
              op.getClearAccum(), int4);
    rewriter.eraseOp(op);
    return success();
  }
};

/// 2:4 sparse gemm: the dense lowering over the kept values of A. Metadata
/// encoding (the dialect's logical one): group g of row m (elements
/// 4g..4g+3 of K) is described by 4 bits at bit offset 4 * (g mod (b/4)) of
/// E[m, g / (b/4)] for b-bit metadata elements; the low two bits give the
/// position in the group of the first kept value (A[m, 2g]), the high two
/// bits that of the second (A[m, 2g+1]).
struct GemmSpLowering : public OpConversionPattern<GemmSpOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GemmSpOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value a = adaptor.getA(), e = adaptor.getE();
    auto aType = op.getA().getType();
    auto eType = cast<IntegerType>(op.getE().getType().getElementType());
    int64_t m = aType.getDimSize(0), groups = aType.getDimSize(1) / 2;
    int64_t groupsPerElement = eType.getWidth() / 4;
    // m, g, j order: the j-th kept value A[m, 2g + j] of group g multiplies
    // row 4g + pos of B, pos read from the metadata.
    auto loadA = [&](OpBuilder &builder, Location l, ValueRange ivs) {
      Value mi = ivs[0], g = ivs[1], j = ivs[2];
      Value perElement = constIndex(builder, l, groupsPerElement);
      Value eCol = arith::DivUIOp::create(builder, l, g, perElement);
      Value eRaw = memref::LoadOp::create(builder, l, e, ValueRange{mi, eCol});
      Value eWide =
          arith::ExtUIOp::create(builder, l, builder.getI64Type(), eRaw);
      // shift = 4 * (g mod groupsPerElement) + 2 * j
      Value within = arith::RemUIOp::create(builder, l, g, perElement);
      Value shift = arith::AddIOp::create(
          builder, l,
          arith::MulIOp::create(builder, l, within, constIndex(builder, l, 4)),
          arith::MulIOp::create(builder, l, j, constIndex(builder, l, 2)));
      Value shift64 =
          arith::IndexCastOp::create(builder, l, builder.getI64Type(), shift);
      Value bits = arith::AndIOp::create(
          builder, l, arith::ShRUIOp::create(builder, l, eWide, shift64),
          arith::ConstantIntOp::create(builder, l, builder.getI64Type(), 3));
      Value pos =
          arith::IndexCastOp::create(builder, l, builder.getIndexType(), bits);
      Value k = arith::AddIOp::create(
          builder, l,
          arith::MulIOp::create(builder, l, g, constIndex(builder, l, 4)), pos);
      Value aCol = arith::AddIOp::create(
          builder, l,
          arith::MulIOp::create(builder, l, g, constIndex(builder, l, 2)), j);
      Value av = memref::LoadOp::create(builder, l, a, ValueRange{mi, aCol});
      return GemmAElement{mi, k, av};
    };
    lowerGemm(rewriter, op.getLoc(), {m, groups, 2}, loadA, adaptor.getB(),
              op.getTransposeB(), adaptor.getC(), op.getClearAccum());
    rewriter.eraseOp(op);
    return success();
  }
};

struct ReduceLowering : public OpConversionPattern<ReduceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value src = adaptor.getSrc(), dst = adaptor.getDst();
    auto srcType = cast<MemRefType>(src.getType());
    auto dstType = cast<MemRefType>(dst.getType());
    Type accType = dstType.getElementType();
    int64_t dim = op.getDim();
    ReduceSpec spec = ReduceSpec::of(op);
    Type srcLogical = op.getSrcLogicalType(), dstLogical = op.getDstLogicalType();
    SmallVector<int64_t> outer(srcType.getShape());
    outer.erase(outer.begin() + dim);
    bool keepsDim = dstType.getRank() == srcType.getRank();
    // A float16 / bfloat16 sum runs in float32 and is rounded once at the
    // store: the CPU sums one element after another, where a GPU block
    // sums a tree of partials; a 16-bit running sum over a long row loses
    // more than either (the summed elements are in the 16-bit type).
    Type loopType = reduceAccumulatorType(spec, accType);
    buildNest(
        rewriter, loc, outer, [&](OpBuilder &b, Location l, ValueRange ivs) {
          SmallVector<Value> dstIdx(ivs.begin(), ivs.end());
          if (keepsDim)
            dstIdx.insert(dstIdx.begin() + dim, constIndex(b, l, 0));
          else if (dstType.getRank() == 1 && ivs.empty())
            dstIdx.push_back(constIndex(b, l, 0));
          Value init = op.getClear()
                           ? reduceIdentity(b, l, spec, loopType)
                           : convertElements(
                                 b, l, memref::LoadOp::create(b, l, dst, dstIdx),
                                 loopType);
          auto loop = scf::ForOp::create(
              b, l, constIndex(b, l, 0),
              constIndex(b, l, srcType.getDimSize(dim)), constIndex(b, l, 1),
              ValueRange{init},
              [&](OpBuilder &lb, Location ll, Value iv, ValueRange acc) {
                SmallVector<Value> srcIdx(ivs.begin(), ivs.end());
                srcIdx.insert(srcIdx.begin() + dim, iv);
                Value x = memref::LoadOp::create(lb, ll, src, srcIdx);
                x = convertElements(lb, ll, x, srcLogical, dstLogical, accType);
                x = convertElements(lb, ll, reduceInput(lb, ll, spec, x),
                                    loopType);
                scf::YieldOp::create(lb, ll,
                                     reduceCombine(lb, ll, spec, acc[0], x));
              });
          memref::StoreOp::create(
              b, l, convertElements(b, l, loop.getResult(0), accType), dst,
              dstIdx);
        });
    rewriter.eraseOp(op);
    return success();
  }
};

/// tile.ieee: the round-to-nearest operation and a step by the residual's
/// sign (RoundingUtils.h); x86 has no per-instruction rounding.
struct IEEELowering : public OpConversionPattern<IEEEOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(IEEEOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, emitRoundedArith(rewriter, op.getLoc(), op.getKind(),
                                            op.getMode(),
                                            adaptor.getOperands()));
    return success();
  }
};

struct CumSumLowering : public OpConversionPattern<CumSumOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CumSumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value src = adaptor.getSrc(), dst = adaptor.getDst();
    auto srcType = cast<MemRefType>(src.getType());
    Type accType = cast<MemRefType>(dst.getType()).getElementType();
    int64_t dim = op.getDim();
    int64_t extent = srcType.getDimSize(dim);
    SmallVector<int64_t> outer(srcType.getShape());
    outer.erase(outer.begin() + dim);
    bool reverse = op.getReverse();
    ReduceSpec spec = ReduceSpec::of(
        op.getKind(), op.getElement().value_or(accType));
    buildNest(
        rewriter, loc, outer, [&](OpBuilder &b, Location l, ValueRange ivs) {
          Value zero = reduceIdentity(b, l, spec, accType);
          scf::ForOp::create(
              b, l, constIndex(b, l, 0), constIndex(b, l, extent),
              constIndex(b, l, 1), ValueRange{zero},
              [&](OpBuilder &lb, Location ll, Value iv, ValueRange acc) {
                Value pos = iv;
                if (reverse)
                  pos = arith::SubIOp::create(
                      lb, ll, constIndex(lb, ll, extent - 1), iv);
                SmallVector<Value> idx(ivs.begin(), ivs.end());
                idx.insert(idx.begin() + dim, pos);
                Value x = memref::LoadOp::create(lb, ll, src, idx);
                Value sum = reduceCombine(lb, ll, spec, acc[0],
                                          convertElements(lb, ll, x, accType));
                memref::StoreOp::create(lb, ll, sum, dst, idx);
                scf::YieldOp::create(lb, ll, sum);
              });
        });
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Everything else: strip tile memory spaces from operand and result types.
//===----------------------------------------------------------------------===//

struct ConvertAnyOpTypes : public ConversionPattern {
  ConvertAnyOpTypes(const TypeConverter &converter, MLIRContext *ctx)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {
  }

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (isa<TileDialect>(op->getDialect()))
      return rewriter.notifyMatchFailure(op, "tile ops have their own pattern");
    SmallVector<Type> resultTypes;
    if (failed(getTypeConverter()->convertTypes(op->getResultTypes(),
                                                resultTypes)))
      return rewriter.notifyMatchFailure(op, "cannot convert result types");
    OperationState state(op->getLoc(), op->getName(), operands, resultTypes,
                         op->getAttrs(), op->getSuccessors());
    for (Region &region : op->getRegions()) {
      Region *newRegion = state.addRegion();
      rewriter.inlineRegionBefore(region, *newRegion, newRegion->end());
      if (failed(rewriter.convertRegionTypes(newRegion, *getTypeConverter())))
        return rewriter.notifyMatchFailure(op, "cannot convert region types");
    }
    Operation *newOp = rewriter.create(state);
    rewriter.replaceOp(op, newOp->getResults());
    return success();
  }
};

} // namespace

void mlir::tile::populateTileToSCFPatterns(TypeConverter &converter,
                                           RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<KernelLowering, AllocLowering<AllocSharedOp>,
               AllocLowering<AllocFragmentOp>, AllocLowering<AllocLocalOp>,
               AllocLowering<AllocVarOp>, ParallelLowering, PipelinedLowering,
               EraseLowering<AnnotateLayoutOp>, EraseLowering<UseSwizzleOp>,
               EraseLowering<AsyncCommitOp>, EraseLowering<AsyncWaitOp>,
               EraseLowering<GemmWaitOp>,
               EraseLowering<BarrierOp>, EraseLowering<NamedBarrierOp>,
               // No asynchronous proxy reads shared memory here.
               EraseLowering<FenceProxyAsyncOp>,
               CopyLowering, FillLowering, AtomicAddLowering, GemmLowering,
               GemmSpLowering, ReduceLowering, CumSumLowering, IEEELowering>(converter,
                                                                   ctx);
  patterns.add<ConvertAnyOpTypes>(converter, ctx);
}

namespace {
/// Replaces tile.peer, tile.signal and tile.wait in place (a block runs as
/// one thread of control: no barriers). A wait that times out fails a
/// tile.device_assert; the clock is the runtime's `__tile_time_ns`.
void expandSymmetricOps(ModuleOp module) {
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (isa<PeerOp, SignalOp, WaitOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    if (auto peer = dyn_cast<PeerOp>(op)) {
      DeviceAssertOp::create(b, loc, rankInWorld(b, loc, peer.getPeers(),
                                                 peer.getRank()),
                             b.getStringAttr(kRankOutsideWorld));
      Value view = emitPeerView(b, loc, peer.getBuffer(), peer.getPeers(),
                                peer.getRank(), peer.getResult().getType());
      peer.getResult().replaceAllUsesWith(view);
    } else if (auto signal = dyn_cast<SignalOp>(op)) {
      emitSignal(b, loc, signal.getFlags(), signal.getIndices(),
                 signal.getValue(), signal.getMode());
    } else {
      auto wait = cast<WaitOp>(op);
      auto clock = module.lookupSymbol<LLVM::LLVMFuncOp>("__tile_time_ns");
      if (!clock) {
        OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
        clock = LLVM::LLVMFuncOp::create(
            mb, module.getLoc(), "__tile_time_ns",
            LLVM::LLVMFunctionType::get(mb.getI64Type(), {}));
      }
      Value done = emitWaitLoop(
          b, loc,
          [&](OpBuilder &rb, Location l) {
            return emitAtomicRead(rb, l, wait.getFlags(), wait.getIndices());
          },
          wait.getValue(), wait.getCmp(), wait.getTimeoutMs(),
          [&](OpBuilder &cb, Location l) {
            return LLVM::CallOp::create(cb, l, clock, ValueRange{}).getResult();
          });
      DeviceAssertOp::create(b, loc, done,
                             b.getStringAttr(waitTimeoutMessage(wait)));
    }
    op->erase();
  }
}

/// Puts a tile.device_assert before every memref.load / memref.store in a
/// kernel (the program's own element accesses; tile ops lower to guarded
/// accesses later): the indices must lie inside the buffer's extents.
void insertBoundsChecks(ModuleOp module) {
  SmallVector<Operation *> accesses;
  module.walk([&](KernelOp kernel) {
    kernel.walk([&](Operation *op) {
      if (isa<memref::LoadOp, memref::StoreOp>(op))
        accesses.push_back(op);
    });
  });
  for (Operation *op : accesses) {
    Value memref;
    ValueRange indices;
    bool isLoad = false;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      memref = load.getMemRef();
      indices = load.getIndices();
      isLoad = true;
    } else {
      auto store = cast<memref::StoreOp>(op);
      memref = store.getMemRef();
      indices = store.getIndices();
    }
    if (indices.empty())
      continue;
    auto type = cast<MemRefType>(memref.getType());
    OpBuilder b(op);
    Location loc = op->getLoc();
    Value ok;
    std::string shape;
    for (auto [d, index] : llvm::enumerate(indices)) {
      int64_t extent = type.getDimSize(d);
      APInt c;
      // In range by construction: a constant inside a static extent, or
      // the variable of a parallel loop whose extent fits.
      if (!ShapedType::isDynamic(extent)) {
        if (matchPattern(index, m_ConstantInt(&c)) && c.getSExtValue() >= 0 &&
            c.getSExtValue() < extent)
          continue;
        if (auto arg = dyn_cast<BlockArgument>(index))
          if (auto loop = dyn_cast<ParallelOp>(arg.getOwner()->getParentOp()))
            if (loop.getExtents()[arg.getArgNumber()] <= extent)
              continue;
      }
      Value bound = ShapedType::isDynamic(extent)
                        ? memref::DimOp::create(b, loc, memref, d).getResult()
                        : constIndex(b, loc, extent);
      // Unsigned: negative indices are out of bounds too.
      Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       index, bound);
      ok = ok ? arith::AndIOp::create(b, loc, ok, in).getResult() : in;
    }
    if (!ok)
      continue;
    for (auto [d, extent] : llvm::enumerate(type.getShape())) {
      if (d)
        shape += ", ";
      shape += ShapedType::isDynamic(extent) ? std::string("?")
                                             : std::to_string(extent);
    }
    if (type.getRank() == 1)
      shape += ",";
    DeviceAssertOp::create(
        b, loc, ok,
        b.getStringAttr(std::string("index out of bounds: ") +
                        (isLoad ? "load from" : "store to") +
                        " a buffer of shape (" + shape + ")"));
  }
}

/// Integer division on the host traps (SIGFPE) for a zero divisor and for
/// the smallest signed value by -1, which would end the Python process
/// running the kernel. Before every such division in a kernel whose divisor
/// is not a constant: a tile.device_assert that the divisor is not zero,
/// and for signed division a divisor of 1 in place of -1 where the dividend
/// is the smallest value (the quotient then wraps to itself and the
/// remainder is 0, as two's complement arithmetic gives them; GPUs do not
/// trap there).
void guardIntegerDivisions(ModuleOp module) {
  SmallVector<Operation *> divisions;
  module.walk([&](KernelOp kernel) {
    kernel.walk([&](Operation *op) {
      if (isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
              arith::FloorDivSIOp, arith::CeilDivSIOp, arith::CeilDivUIOp>(
              op) &&
          !matchPattern(op->getOperand(1), m_Constant()))
        divisions.push_back(op);
    });
  });
  for (Operation *op : divisions) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    Type type = rhs.getType();
    if (isa<VectorType>(type))
      continue; // the frontend's divisions are scalar
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
    Value nonzero =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, rhs, zero);
    DeviceAssertOp::create(b, loc, nonzero,
                           b.getStringAttr("integer division by zero"));
    if (!isa<arith::DivSIOp, arith::RemSIOp, arith::FloorDivSIOp,
             arith::CeilDivSIOp>(op))
      continue;
    unsigned width = isa<IndexType>(type)
                         ? IndexType::kInternalStorageBitWidth
                         : type.getIntOrFloatBitWidth();
    Value smallest = arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(type, APInt::getSignedMinValue(width)));
    Value minusOne = arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(type, APInt::getAllOnes(width)));
    Value one =
        arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, 1));
    Value overflow = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lhs, smallest),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rhs, minusOne));
    Value safe = arith::SelectOp::create(b, loc, overflow, one, rhs);
    op->setOperand(1, safe);
  }
}

struct ConvertTileToSCFPass
    : public tile::impl::ConvertTileToSCFBase<ConvertTileToSCFPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // In a block of one thread, that thread's index is 0.
    getOperation().walk([&](ThreadIdOp op) {
      auto kernel = op->getParentOfType<KernelOp>();
      int64_t threads = 1;
      for (int64_t t : kernel.getThreads())
        threads *= t;
      if (threads != 1)
        return;
      OpBuilder b(op);
      op.replaceAllUsesWith(
          arith::ConstantIndexOp::create(b, op.getLoc(), 0).getResult());
      op.erase();
    });
    // Copies between the blocks of a cluster (T.copy_cluster) first: the
    // barriers they bring are refused below in words that do not name it.
    WalkResult cluster = getOperation().walk([&](Operation *op) {
      auto copy = dyn_cast<CopyOp>(op);
      if (!isa<ClusterCopyOp>(op) && !(copy && copy.getMulticastMask()))
        return WalkResult::advance();
      op->emitOpError("(T.copy_cluster) copies between the blocks of a "
                      "thread block cluster, which the CPU backend (blocks "
                      "run one after another) cannot run: compile for a GPU "
                      "target with thread block clusters (NVIDIA sm_90 and "
                      "newer)");
      return WalkResult::interrupt();
    });
    if (cluster.wasInterrupted())
      return signalPassFailure();
    // Roles run concurrently and wait on each other; the CPU runs a block's
    // tile program as one thread of control.
    WalkResult roles = getOperation().walk([&](Operation *op) {
      if (auto role = dyn_cast<RoleOp>(op)) {
        role.emitOpError("gives threads [")
            << role.getBegin() << ", " << role.getEnd()
            << ") a role of their own; roles run concurrently and synchronize "
               "through barriers, which the CPU backend (one thread of "
               "control per block) cannot run: compile for a GPU target";
        return WalkResult::interrupt();
      }
      if (isa<ThreadIdOp>(op)) {
        op->emitOpError("reads the thread index, which has no meaning on the "
                        "CPU backend (one thread of control per block): "
                        "compile for a GPU target");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (roles.wasInterrupted())
      return signalPassFailure();
    // The synchronization of threads with each other and the GPU's
    // asynchronous copies: nothing the CPU's one thread of control per
    // block can run (the same words as the roles', which come first).
    WalkResult sync = getOperation().walk([&](Operation *op) {
      if (isa<AllocBarrierOp, BarrierArriveOp, BarrierWaitOp>(op)) {
        op->emitOpError("uses a transaction barrier (T.alloc_barrier, an "
                        "mbarrier): threads arrive on it and wait for each "
                        "other, which the CPU backend (one thread of control "
                        "per block) cannot run: mbarriers need a GPU target");
        return WalkResult::interrupt();
      }
      // (A named barrier with no roles -- refused above -- is every
      // thread's: the one thread of control has nothing to wait for, and
      // it is erased below.)
      if (isa<CpAsyncOp, SetMaxNRegOp, WarpSpecializeOp>(op)) {
        op->emitOpError("synchronizes or copies per thread or per warp, "
                        "which has no meaning on the CPU backend (one thread "
                        "of control per block): compile for a GPU target");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (sync.wasInterrupted())
      return signalPassFailure();
    expandSymmetricOps(getOperation());
    if (boundsCheck)
      insertBoundsChecks(getOperation());
    if (failed(expandThreadOpsForCPU(getOperation())))
      return signalPassFailure();
    guardIntegerDivisions(getOperation());
    TypeConverter converter;
    populateTileToSCFTypeConversion(converter);

    ConversionTarget target(*ctx);
    target.addIllegalDialect<TileDialect>();
    auto isLegal = [&](Operation *op) {
      if (!converter.isLegal(op->getOperandTypes()) ||
          !converter.isLegal(op->getResultTypes()))
        return false;
      for (Region &region : op->getRegions())
        for (Block &block : region)
          if (!converter.isLegal(block.getArgumentTypes()))
            return false;
      return true;
    };
    target.markUnknownOpDynamicallyLegal(isLegal);

    RewritePatternSet patterns(ctx);
    populateTileToSCFPatterns(converter, patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    // tile-legalize-safe-access's marks have served: no tile attribute
    // outlives the tile dialect.
    getOperation().walk([](Operation *op) {
      op->removeAttr("tile.guarded");
      op->removeAttr("tile.safe_value");
    });
  }
};
} // namespace
