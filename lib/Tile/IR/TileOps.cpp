//===- TileOps.cpp - tile dialect operations ------------------------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/IR/TileTypes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tile;

/// Parses `(1, 2, 3)` into a list of integers.
static ParseResult parseIntegerList(OpAsmParser &parser,
                                    SmallVectorImpl<int64_t> &values,
                                    OpAsmParser::Delimiter delimiter) {
  return parser.parseCommaSeparatedList(delimiter, [&]() -> ParseResult {
    int64_t v;
    if (parser.parseInteger(v))
      return failure();
    values.push_back(v);
    return success();
  });
}

/// `128, 128, 256` (tile.alloc_barrier's arrival counts).
static ParseResult parseCounts(OpAsmParser &parser, DenseI64ArrayAttr &counts) {
  SmallVector<int64_t> values;
  if (parseIntegerList(parser, values, OpAsmParser::Delimiter::None))
    return failure();
  counts = parser.getBuilder().getDenseI64ArrayAttr(values);
  return success();
}

static void printCounts(OpAsmPrinter &p, Operation *, DenseI64ArrayAttr counts) {
  llvm::interleaveComma(counts.asArrayRef(), p);
}

#define GET_OP_CLASSES
#include "dialects/Tile/IR/TileOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Formats a shape as "128x32" for diagnostics ("scalar" for rank 0).
static std::string formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string result;
  llvm::raw_string_ostream os(result);
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << "?";
        else
          os << d;
      },
      "x");
  return result;
}

SmallVector<int64_t> mlir::tile::dropUnitDims(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> result;
  for (int64_t d : shape)
    if (d != 1)
      result.push_back(d);
  return result;
}

static bool isTileScope(Type type) { return !isGlobal(type); }

/// Parses `(%a, %b)` block arguments of index type.
static ParseResult
parseIndexArguments(OpAsmParser &parser,
                    SmallVectorImpl<OpAsmParser::Argument> &args) {
  if (parser.parseArgumentList(args, OpAsmParser::Delimiter::Paren))
    return failure();
  Type index = parser.getBuilder().getIndexType();
  for (OpAsmParser::Argument &arg : args)
    arg.type = index;
  return success();
}

static void printIndexArguments(OpAsmPrinter &p, ValueRange args) {
  p << "(";
  llvm::interleaveComma(args, p, [&](Value v) { p.printOperand(v); });
  p << ")";
}

// The loop-like ops (tile.kernel, tile.parallel, tile.pipelined) have one
// region of one block whose arguments are indices and whose terminator,
// tile.yield, the custom syntax leaves implicit.

/// Adds the body to a loop-like op being built: one index argument per
/// location in `argLocs`, then the terminator.
static void buildLoopBody(OpBuilder &builder, OperationState &result,
                          ArrayRef<Location> argLocs) {
  Region *body = result.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Location loc : argLocs)
    block->addArgument(builder.getIndexType(), loc);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(block);
  YieldOp::create(builder, result.location);
}

/// Parses the optional `attributes {...}` and the body, whose block
/// arguments are `args`, of a loop-like op.
template <typename OpTy>
static ParseResult parseLoopBody(OpAsmParser &parser, OperationState &result,
                                 ArrayRef<OpAsmParser::Argument> args) {
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, args))
    return failure();
  OpTy::ensureTerminator(*body, parser.getBuilder(), result.location);
  return success();
}

/// Prints the attributes of a loop-like op other than `elided` (those its
/// syntax spells out), then its body.
static void printLoopBody(OpAsmPrinter &p, Operation *op,
                          ArrayRef<StringRef> elided) {
  p.printOptionalAttrDictWithKeyword(op->getAttrs(), elided);
  p << ' ';
  p.printRegion(op->getRegion(0), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/false);
}

/// Whether `block` has exactly `n` arguments, all of index type.
static bool hasIndexArguments(Block &block, size_t n) {
  return block.getNumArguments() == n &&
         llvm::all_of(block.getArgumentTypes(),
                      [](Type t) { return t.isIndex(); });
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

void KernelOp::build(OpBuilder &builder, OperationState &result,
                     ValueRange grid, ArrayRef<int64_t> threads) {
  result.addOperands(grid);
  result.addAttribute(getThreadsAttrName(result.name),
                      builder.getDenseI64ArrayAttr(threads));
  buildLoopBody(builder, result,
                llvm::map_to_vector(grid, [](Value v) { return v.getLoc(); }));
}

// A launch is an effect of its own, besides its body's: a kernel whose body
// has none still runs (as TileLang's empty kernels do) rather than being
// erased as dead code, which left a program with no launch.
void KernelOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  effects.emplace_back(MemoryEffects::Write::get(), SideEffects::DefaultResource::get());
}

int64_t KernelOp::getNumThreads() {
  int64_t n = 1;
  for (int64_t t : getThreads())
    n *= t;
  return n;
}

ParseResult KernelOp::parse(OpAsmParser &parser, OperationState &result) {
  SmallVector<OpAsmParser::Argument> blockIndices;
  SmallVector<OpAsmParser::UnresolvedOperand> grid;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword("blocks") ||
      parseIndexArguments(parser, blockIndices) || parser.parseKeyword("in") ||
      parser.parseOperandList(grid, OpAsmParser::Delimiter::Paren))
    return failure();
  if (blockIndices.size() != grid.size())
    return parser.emitError(loc)
           << "expected one block index per grid extent, got "
           << blockIndices.size() << " indices and " << grid.size()
           << " extents";
  Type index = parser.getBuilder().getIndexType();
  if (parser.resolveOperands(grid, index, result.operands))
    return failure();
  SmallVector<int64_t> threads;
  if (parser.parseKeyword("threads") ||
      parseIntegerList(parser, threads, OpAsmParser::Delimiter::Paren))
    return failure();
  result.addAttribute(getThreadsAttrName(result.name),
                      parser.getBuilder().getDenseI64ArrayAttr(threads));
  return parseLoopBody<KernelOp>(parser, result, blockIndices);
}

void KernelOp::print(OpAsmPrinter &p) {
  p << " blocks";
  printIndexArguments(p, getBlockIndices());
  p << " in (" << getGrid() << ") threads(";
  llvm::interleaveComma(getThreads(), p);
  p << ")";
  printLoopBody(p, *this, {getThreadsAttrName()});
}

LogicalResult KernelOp::verify() {
  size_t rank = getGrid().size();
  if (rank < 1 || rank > 3)
    return emitOpError("expects 1 to 3 grid dimensions, got ") << rank;
  Block &body = getBody().front();
  if (!hasIndexArguments(body, rank))
    return emitOpError("expects ")
           << rank << " block indices of type index (one per grid dimension), "
           << "got " << body.getNumArguments() << " block arguments";
  ArrayRef<int64_t> threads = getThreads();
  if (threads.empty() || threads.size() > 3)
    return emitOpError("expects 1 to 3 thread extents, got ")
           << threads.size();
  for (int64_t t : threads)
    if (t <= 0 || t > 1024)
      return emitOpError("thread extents must be in [1, 1024], got ") << t;
  if (getNumThreads() > 1024)
    return emitOpError("expects at most 1024 threads per block, got ")
           << getNumThreads();
  if ((*this)->getParentOfType<KernelOp>())
    return emitOpError("cannot be nested in another tile.kernel");
  // Booleans live in buffers as bytes (i8), as in NumPy and PyTorch: no
  // lowering has 1-bit memory (the LLVM memref lowering asserts on it).
  // Float8 values are loaded, stored, copied and converted, and read by
  // gemms; nothing computes on them (LLVM has no fp8 type), so arithmetic
  // on them is refused here rather than left for LLVM to fail on.
  auto computesOnFloat8 = [&](Operation *op) {
    StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace()
                                         : StringRef();
    bool compute = isa<ReduceOp, CumSumOp, AtomicAddOp>(op) ||
                   dialect == "math" ||
                   (dialect == "arith" &&
                    !isa<arith::ConstantOp, arith::BitcastOp, arith::SelectOp,
                         arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp,
                         arith::UIToFPOp, arith::FPToSIOp, arith::FPToUIOp>(
                        op));
    return compute && (llvm::any_of(op->getOperandTypes(), isStoredFloat8) ||
                       llvm::any_of(op->getResultTypes(), isStoredFloat8));
  };
  WalkResult bits = getBody().walk([&](Operation *op) -> WalkResult {
    if (computesOnFloat8(op)) {
      op->emitOpError("computes on float8 values; they can be copied and "
                      "converted but not computed on: convert them to "
                      "float16, bfloat16 or float32 first (a tile.copy into "
                      "a buffer of that type, or a cast)");
      return WalkResult::interrupt();
    }
    for (Value v : op->getOperands())
      if (auto t = dyn_cast<MemRefType>(v.getType());
          t && t.getElementType().isInteger(1)) {
        op->emitOpError("uses a buffer of i1 ")
            << t << "; booleans are stored as bytes (i8) in buffers";
        return WalkResult::interrupt();
      }
    for (Value v : op->getResults())
      if (auto t = dyn_cast<MemRefType>(v.getType());
          t && t.getElementType().isInteger(1)) {
        op->emitOpError("makes a buffer of i1 ")
            << t << "; booleans are stored as bytes (i8) in buffers";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(bits.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// Allocation ops
//===----------------------------------------------------------------------===//

static LogicalResult verifyAlloc(Operation *op, MemRefType type,
                                 MemoryScope scope) {
  // A parallel loop's body runs once per element, on any thread: a buffer
  // of the block there has no meaning (and layout inference cannot place
  // it). Per-thread buffers (local, var) are that iteration's temporaries.
  if ((scope == MemoryScope::shared || scope == MemoryScope::fragment) &&
      op->getParentOfType<ParallelOp>())
    return op->emitOpError("cannot be inside a tile.parallel; allocate the "
                           "buffer in the kernel, outside the loop");
  FailureOr<std::optional<MemoryScope>> actual = getMemoryScope(type);
  if (failed(actual) || !*actual || **actual != scope)
    return op->emitOpError("result must be in #tile.scope<")
           << stringifyMemoryScope(scope) << "> memory, got " << type;
  if (!type.hasStaticShape())
    return op->emitOpError("result must have a static shape, got ") << type;
  if (!type.getLayout().isIdentity())
    return op->emitOpError("result must have the identity layout, got ")
           << type;
  if (scope == MemoryScope::var && type.getRank() != 0)
    return op->emitOpError("result must be a rank-0 memref (a scalar), got "
                           "rank ")
           << type.getRank();
  if (scope != MemoryScope::var && type.getRank() == 0)
    return op->emitOpError("result must have rank at least 1; use "
                           "tile.alloc_var for scalars");
  for (int64_t d : type.getShape())
    if (d <= 0)
      return op->emitOpError("result dimensions must be positive, got ")
             << type;
  // Counted with saturation: a shape such as 2^40 x 2^40 must not wrap.
  int64_t elements = 1;
  for (int64_t d : type.getShape())
    elements = d > (int64_t(1) << 62) / elements ? int64_t(1) << 62
                                                 : elements * d;
  int64_t limit = scope == MemoryScope::shared     ? limits::kSharedElements
                  : scope == MemoryScope::fragment ? limits::kFragmentElements
                  : scope == MemoryScope::local    ? limits::kLocalElements
                                                   : 1;
  if (elements > limit)
    return op->emitOpError("result has ")
           << elements << " elements, more than the " << limit
           << " a #tile.scope<" << stringifyMemoryScope(scope)
           << "> buffer may hold, got " << type;
  return success();
}

LogicalResult AllocSharedOp::verify() {
  return verifyAlloc(*this, getType(), MemoryScope::shared);
}

LogicalResult AllocBarrierOp::verify() {
  if (failed(verifyAlloc(*this, getType(), MemoryScope::shared)))
    return failure();
  if (getType().getRank() != 1 || !getType().getElementType().isInteger(64))
    return emitOpError("must be a one-dimensional memref of i64, got ")
           << getType();
  ArrayRef<int64_t> arrivals = getArrivals();
  if (arrivals.size() != 1 &&
      static_cast<int64_t>(arrivals.size()) != getType().getNumElements())
    return emitOpError("needs one arrival count, or one per barrier (")
           << getType().getNumElements() << "), got " << arrivals.size();
  for (int64_t a : arrivals)
    if (a < 1 || a >= (1 << 20))
      return emitOpError("arrivals must be in [1, 2^20), got ") << a;
  return success();
}

/// Barrier operands: a buffer made by tile.alloc_barrier (through casts).
static LogicalResult verifyBarrierOperand(Operation *op, Value barriers) {
  if (!barriers.getDefiningOp<AllocBarrierOp>())
    return op->emitOpError("barriers must come from a tile.alloc_barrier");
  return success();
}

LogicalResult BarrierWaitOp::verify() {
  return verifyBarrierOperand(*this, getBarriers());
}

LogicalResult BarrierArriveOp::verify() {
  if (failed(verifyBarrierOperand(*this, getBarriers())))
    return failure();
  if (std::optional<int64_t> tx = getExpectTx(); tx && (*tx < 0 || *tx >= (1 << 20)))
    return emitOpError("expect_tx must be in [0, 2^20) bytes, got ") << *tx;
  if (getAfterCopies() && !getPerThread())
    return emitOpError("after_copies arrivals are per-thread (per_thread)");
  if (getAfterCopies() && getExpectTx())
    return emitOpError("after_copies arrivals cannot announce bytes "
                       "(expect_tx)");
  return success();
}

//===----------------------------------------------------------------------===//
// Explicit warp specialization
//===----------------------------------------------------------------------===//

bool KernelOp::hasRoles() {
  return getBody()
      .walk([](RoleOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

int64_t mlir::tile::threadsOf(Operation *op) {
  if (auto role = op->getParentOfType<RoleOp>())
    return role.getNumThreads();
  return op->getParentOfType<KernelOp>().getNumThreads();
}

LogicalResult CpAsyncOp::verify() {
  auto src = cast<MemRefType>(getSrc().getType());
  auto dst = cast<MemRefType>(getDst().getType());
  if (!isGlobal(src) || !isInScope(dst, MemoryScope::shared))
    return emitOpError("copies from global to shared memory, got ")
           << getScopeName(src) << " to " << getScopeName(dst);
  if (src.getElementType() != dst.getElementType())
    return emitOpError("copies bits: the element types differ, ")
           << src.getElementType() << " and " << dst.getElementType();
  if (static_cast<int64_t>(getSrcIndices().size()) != src.getRank() ||
      static_cast<int64_t>(getDstIndices().size()) != dst.getRank())
    return emitOpError("needs one index per dimension of each side");
  int64_t bits = getElements() * src.getElementTypeBitWidth();
  if (getElements() < 1 || (bits != 32 && bits != 64 && bits != 128))
    return emitOpError("copies 4, 8 or 16 bytes, got ")
           << getElements() << " elements of " << src.getElementType();
  return success();
}

LogicalResult RoleOp::verify() {
  auto kernel = (*this)->getParentOfType<KernelOp>();
  int64_t threads = kernel.getNumThreads();
  if (getBegin() < 0 || getEnd() <= getBegin() || getEnd() > threads)
    return emitOpError("needs threads [begin, end) with 0 <= begin < end <= ")
           << threads << " (the kernel's threads), got [" << getBegin() << ", "
           << getEnd() << ")";
  if (kernel.getThreads().size() != 1)
    return emitOpError("needs a kernel with one-dimensional threads");
  if ((*this)->getParentOfType<RoleOp>())
    return emitOpError("roles do not nest: this role is inside another");
  for (Operation *p = (*this)->getParentOp(); p != kernel;
       p = p->getParentOp())
    if (isa<ParallelOp, WarpSpecializeOp>(p))
      return emitOpError("cannot be inside a ")
             << p->getName() << " (roles are statements of the kernel and its "
                               "serial loops and branches)";
  return success();
}

LogicalResult SetMaxNRegOp::verify() {
  int64_t n = getCount();
  if (n < 24 || n > 256 || n % 8)
    return emitOpError("count must be a multiple of 8 in [24, 256], got ") << n;
  auto role = (*this)->getParentOfType<RoleOp>();
  if (!role)
    return emitOpError("sets the register budget of a role's warpgroups: it "
                       "belongs in a tile.role (a branch on the thread index)");
  if (role.getBegin() % 128 || role.getNumThreads() % 128)
    return emitOpError("needs a role of whole warpgroups (threads [128k, "
                       "128m)), got [")
           << role.getBegin() << ", " << role.getEnd() << ")";
  return success();
}

LogicalResult NamedBarrierOp::verify() {
  if (getId() < 1 || getId() > 15)
    return emitOpError("id must be in [1, 15] (barrier 0 is the whole "
                       "block's), got ")
           << getId();
  int64_t threads = getThreads();
  int64_t block = (*this)->getParentOfType<KernelOp>().getNumThreads();
  if (threads < 32 || threads % 32 || threads > block)
    return emitOpError("threads must be a multiple of 32 in [32, ")
           << block << "] (the kernel's threads), got " << threads;
  return success();
}

LogicalResult WarpSpecializeOp::verify() {
  int64_t p = getProducerThreads();
  if (p < 128 || p % 128)
    return emitOpError("producer_threads must be a positive multiple of 128, got ")
           << p;
  auto kernel = (*this)->getParentOfType<KernelOp>();
  if (kernel.getThreads().size() != 1)
    return emitOpError("needs a kernel with one-dimensional threads");
  if (kernel.getNumThreads() % 128)
    return emitOpError("needs kernel threads in whole warpgroups (a multiple "
                       "of 128), got ")
           << kernel.getNumThreads();
  if (kernel.getNumThreads() + p > 1024)
    return emitOpError("makes a block of ")
           << kernel.getNumThreads() + p << " threads, more than 1024";
  return success();
}

/// A fragment layout is over the kernel's threads, or over the threads of a
/// role of the kernel (a fragment used in that role).
static LogicalResult verifyLayoutThreads(Operation *op, int64_t threads) {
  auto kernel = op->getParentOfType<KernelOp>();
  if (threads == kernel.getNumThreads())
    return success();
  bool roleSize = false;
  kernel.walk([&](RoleOp role) { roleSize |= role.getNumThreads() == threads; });
  if (roleSize)
    return success();
  return op->emitOpError("layout is for ")
         << threads << " threads but the kernel has " << kernel.getNumThreads()
         << " (and no role of that many)";
}

LogicalResult AllocFragmentOp::verify() {
  if (failed(verifyAlloc(*this, getType(), MemoryScope::fragment)))
    return failure();
  FragmentLayoutAttr layout = getLayoutAttr();
  if (!layout)
    return success();
  if (failed(layout.verifyForShape(getType().getShape(),
                                   [&]() { return emitOpError(); })))
    return failure();
  return verifyLayoutThreads(*this, layout.getThreads());
}

LogicalResult AllocLocalOp::verify() {
  return verifyAlloc(*this, getType(), MemoryScope::local);
}

LogicalResult AllocVarOp::verify() {
  return verifyAlloc(*this, getType(), MemoryScope::var);
}

//===----------------------------------------------------------------------===//
// CopyOp
//===----------------------------------------------------------------------===//

/// Verifies one side (source or destination) of a region-based op.
static LogicalResult verifyRegionSide(Operation *op, StringRef side,
                                      MemRefType type, size_t numOffsets,
                                      ArrayRef<int64_t> sizes) {
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(numOffsets) != rank)
    return op->emitOpError("expects ")
           << rank << " " << side << " offsets (the " << side
           << " rank), got " << numOffsets;
  if (static_cast<int64_t>(sizes.size()) != rank)
    return op->emitOpError("expects ")
           << rank << " " << side << " sizes (the " << side << " rank), got "
           << sizes.size();
  for (int64_t s : sizes)
    if (s <= 0)
      return op->emitOpError() << side << " sizes must be positive, got ["
                               << formatShape(sizes) << "]";
  // Tile buffers have static shapes: a region larger than the buffer is a
  // bug in the program. Global tensors may be smaller than a tile (ragged
  // edges), which the bounds-safe semantics handle.
  if (isTileScope(type)) {
    for (auto [s, d] : llvm::zip(sizes, type.getShape()))
      if (!ShapedType::isDynamic(d) && s > d)
        return op->emitOpError()
               << side << " region " << formatShape(sizes) << " exceeds the "
               << getScopeName(type) << " buffer of shape "
               << formatShape(type.getShape());
  }
  return success();
}

/// Both sides of a copy (tile.copy, tile.cluster_copy): each region valid
/// for its buffer, and the same shape once unit dimensions are dropped.
static LogicalResult verifyCopyRegions(Operation *op, MemRefType src,
                                       size_t srcOffsets,
                                       ArrayRef<int64_t> srcSizes,
                                       MemRefType dst, size_t dstOffsets,
                                       ArrayRef<int64_t> dstSizes) {
  if (failed(verifyRegionSide(op, "source", src, srcOffsets, srcSizes)) ||
      failed(verifyRegionSide(op, "destination", dst, dstOffsets, dstSizes)))
    return failure();
  if (dropUnitDims(srcSizes) != dropUnitDims(dstSizes))
    return op->emitOpError("source region ")
           << formatShape(srcSizes) << " and destination region "
           << formatShape(dstSizes)
           << " have different shapes (unit dimensions dropped)";
  return success();
}

/// `src_element` / `dst_element` (tile.copy, tile.reduce): each, when
/// present, is a logical type of the elements its buffer stores.
static LogicalResult verifyLogicalElements(Operation *op, TypeAttr src,
                                           MemRefType srcType, TypeAttr dst,
                                           MemRefType dstType) {
  for (auto [side, attr, buffer] :
       {std::make_tuple(StringRef("src_element"), src, srcType),
        std::make_tuple(StringRef("dst_element"), dst, dstType)}) {
    if (!attr)
      continue;
    if (!isLogicalTypeOf(attr.getValue(), buffer.getElementType()))
      return op->emitOpError()
             << side << " " << attr.getValue()
             << " cannot be the logical type of elements stored as "
             << buffer.getElementType()
             << " (expected an unsigned integer of the same width, or i1 "
                "over i8)";
  }
  return success();
}

SmallVector<int64_t> CopyOp::getSqueezedShape() {
  return dropUnitDims(getSrcSizes());
}

Type CopyOp::getSrcLogicalType() {
  if (std::optional<Type> t = getSrcElement())
    return *t;
  return getSrc().getType().getElementType();
}

Type CopyOp::getDstLogicalType() {
  if (std::optional<Type> t = getDstElement())
    return *t;
  return getDst().getType().getElementType();
}

bool CopyOp::convertsElements() {
  if (getSrc().getType().getElementType() !=
      getDst().getType().getElementType())
    return true;
  return getDstLogicalType().isInteger(1) &&
         !getSrcLogicalType().isInteger(1);
}

LogicalResult CopyOp::verify() {
  if (getBarrier()) {
    if (!isGlobal(getSrc().getType()) ||
        !isInScope(getDst().getType(), MemoryScope::shared))
      return emitOpError("only copies from global to shared memory can "
                         "complete on a barrier, got ")
             << getScopeName(getSrc().getType()) << " to "
             << getScopeName(getDst().getType());
    if (!getBarrier().getDefiningOp<AllocBarrierOp>())
      return emitOpError("the barrier must come from a tile.alloc_barrier");
    if (getAsync())
      return emitOpError("a copy through a barrier is already asynchronous; "
                         "drop `async`");
  } else if (getExpectTx()) {
    return emitOpError("expect_tx announces the copy's bytes on its barrier: "
                       "it needs `via` a barrier");
  } else if (getMulticastMask() || getEviction()) {
    return emitOpError("a multicast mask or an eviction priority is a TMA "
                       "copy's: it needs `via` a barrier");
  }
  if (std::optional<uint64_t> mask = getMulticastMask()) {
    if (*mask == 0 || *mask >= (1u << 16))
      return emitOpError("the multicast mask must name block ranks 0 to 15 "
                         "(a non-zero 16-bit mask), got ")
             << *mask;
    if (getMulticast())
      return emitOpError("takes a multicast mask or a multicast share, not "
                         "both");
  }
  if (getAsync() &&
      !(isGlobal(getSrc().getType()) &&
        isInScope(getDst().getType(), MemoryScope::shared)))
    return emitOpError("only copies from global to shared memory can be "
                       "async, got ")
           << getScopeName(getSrc().getType()) << " to "
           << getScopeName(getDst().getType());
  if (failed(verifyCopyRegions(*this, getSrc().getType(), getSrcOffsets().size(),
                               getSrcSizes(), getDst().getType(),
                               getDstOffsets().size(), getDstSizes())))
    return failure();
  // Regions of one rank whose extents differ (a multi-buffered slot
  // [1, 128, 128] filled from [128, 1, 128] of a [S, H, D] tensor) may drop
  // only unit extents that pick one index of a longer dimension: a unit
  // extent over a dimension of extent 1 is a dimension of the tile, and
  // 1x8 into an 8x1 tile would put a row into a column.
  if (getSrcSizes().size() == getDstSizes().size() &&
      getSrcSizes() != getDstSizes()) {
    for (auto [side, sizes, type] :
         {std::make_tuple(StringRef("source"), getSrcSizes(),
                          getSrc().getType()),
          std::make_tuple(StringRef("destination"), getDstSizes(),
                          getDst().getType())})
      for (auto [d, size] : llvm::enumerate(sizes))
        if (size == 1 && type.getDimSize(d) == 1)
          return emitOpError("source region ")
                 << formatShape(getSrcSizes()) << " and destination region "
                 << formatShape(getDstSizes())
                 << " have different shapes: dimension " << d << " of the "
                 << side << " has extent 1 in a buffer of extent 1 (a "
                 << "dimension of the tile, which regions of one rank must "
                    "match)";
  }
  return verifyLogicalElements(*this, getSrcElementAttr(), getSrc().getType(),
                               getDstElementAttr(), getDst().getType());
}

//===----------------------------------------------------------------------===//
// ClusterCopyOp
//===----------------------------------------------------------------------===//

LogicalResult ClusterCopyOp::verify() {
  MemRefType src = getSrc().getType(), dst = getDst().getType();
  if (!isInScope(src, MemoryScope::shared) ||
      !isInScope(dst, MemoryScope::shared))
    return emitOpError("copies between shared buffers, got ")
           << getScopeName(src) << " to " << getScopeName(dst);
  if (src.getElementType() != dst.getElementType())
    return emitOpError("copies elements as they are: the element types "
                       "differ, ")
           << src.getElementType() << " and " << dst.getElementType();
  if (failed(verifyCopyRegions(*this, src, getSrcOffsets().size(),
                               getSrcSizes(), dst, getDstOffsets().size(),
                               getDstSizes())))
    return failure();
  if (static_cast<bool>(getBarrier()) != static_cast<bool>(getBarrierIndex()))
    return emitOpError("a barrier needs its index");
  if (getBarrier() && !getBarrier().getDefiningOp<AllocBarrierOp>())
    return emitOpError("the barrier must come from a tile.alloc_barrier");
  if ((*this)->getParentOfType<ParallelOp>())
    return emitOpError("is a copy of the whole block; it cannot stand in a "
                       "parallel loop");
  if (!(*this)->getParentOfType<KernelOp>()->hasAttr("tile.cluster"))
    return emitOpError("copies into another block of the cluster, but the "
                       "kernel runs without clusters (T.Kernel(..., "
                       "cluster_dims=...))");
  return success();
}

//===----------------------------------------------------------------------===//
// AsyncWaitOp
//===----------------------------------------------------------------------===//

LogicalResult GemmWaitOp::verify() {
  if (getPending() < 0)
    return emitOpError("pending must be non-negative, got ") << getPending();
  return success();
}

LogicalResult AsyncWaitOp::verify() {
  if (getPending() < 0)
    return emitOpError("pending must be non-negative, got ") << getPending();
  return success();
}

//===----------------------------------------------------------------------===//
// FillOp
//===----------------------------------------------------------------------===//

LogicalResult FillOp::verify() {
  Type elementType = getDst().getType().getElementType();
  if (getValue().getType() != elementType)
    return emitOpError("fill value type ")
           << getValue().getType() << " does not match the element type "
           << elementType << " of the buffer";
  return success();
}

//===----------------------------------------------------------------------===//
// AtomicAddOp
//===----------------------------------------------------------------------===//

LogicalResult AtomicAddOp::verify() {
  MemRefType dstType = getDst().getType();
  if (!isGlobal(dstType) && !isInScope(dstType, MemoryScope::shared))
    return emitOpError("destination must be in global or shared memory, got ")
           << getScopeName(dstType);
  if (static_cast<int64_t>(getOffsets().size()) != dstType.getRank())
    return emitOpError("expects ")
           << dstType.getRank() << " offsets (the destination rank), got "
           << getOffsets().size();
  Type valueType = getValue().getType();
  if (auto tileType = dyn_cast<MemRefType>(valueType)) {
    if (!tileType.hasStaticShape())
      return emitOpError("value tile must have a static shape, got ")
             << tileType;
    if (tileType.getRank() > dstType.getRank())
      return emitOpError("value tile of rank ")
             << tileType.getRank()
             << " cannot be added into a destination of rank "
             << dstType.getRank();
    if (getTma() && (!isInScope(tileType, MemoryScope::shared) ||
                     !isGlobal(dstType) ||
                     tileType.getElementType() != dstType.getElementType()))
      return emitOpError("a bulk (TMA) add needs a shared tile of the "
                         "destination's element type and a global "
                         "destination, got ")
             << tileType << " into " << dstType;
    return success();
  }
  if (getTma())
    return emitOpError("a bulk (TMA) add needs a shared tile value, got ")
           << valueType;
  if (!valueType.isIntOrIndexOrFloat())
    return emitOpError("value must be a scalar or a tile buffer, got ")
           << valueType;
  if (valueType != dstType.getElementType())
    return emitOpError("value type ")
           << valueType << " does not match the destination element type "
           << dstType.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// PeerOp, SignalOp, WaitOp
//===----------------------------------------------------------------------===//

MemRefType PeerOp::viewType(MemRefType buffer) {
  SmallVector<int64_t> strides(buffer.getRank(), 1);
  for (int64_t d = buffer.getRank() - 2; d >= 0; --d)
    strides[d] = ShapedType::isDynamic(strides[d + 1]) ||
                         ShapedType::isDynamic(buffer.getDimSize(d + 1))
                     ? ShapedType::kDynamic
                     : strides[d + 1] * buffer.getDimSize(d + 1);
  auto layout = StridedLayoutAttr::get(buffer.getContext(),
                                       ShapedType::kDynamic, strides);
  return MemRefType::get(buffer.getShape(), buffer.getElementType(), layout);
}

Value tile::symmetricRoot(Value v) {
  if (auto peer = v.getDefiningOp<PeerOp>())
    return peer.getBuffer();
  return v;
}

/// The index of `v` among the arguments of its enclosing function, if it
/// is one.
static std::optional<unsigned> functionArgument(Operation *op, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  auto fn = op->getParentOfType<FunctionOpInterface>();
  if (!arg || !fn || arg.getOwner() != &fn.getFunctionBody().front())
    return std::nullopt;
  return arg.getArgNumber();
}

LogicalResult PeerOp::verify() {
  MemRefType type = getBuffer().getType();
  std::optional<unsigned> index = functionArgument(*this, getBuffer());
  auto fn = (*this)->getParentOfType<FunctionOpInterface>();
  if (!index || !fn.getArgAttr(*index, kSymmetricAttrName))
    return emitOpError("views a rank's part of a symmetric buffer, but its "
                       "operand is not one: it must be a kernel argument "
                       "marked `")
           << kSymmetricAttrName
           << "` (T.SymmetricTensor, allocated by every rank)";
  if (!isGlobal(type) || !type.getLayout().isIdentity())
    return emitOpError("symmetric buffer must be a global buffer with the "
                       "identity layout, got ")
           << type;
  if (!functionArgument(*this, getPeers()) || !isGlobal(getPeers().getType()))
    return emitOpError("peer table must be a kernel argument in global "
                       "memory (the i64 addresses of every rank's part)");
  MemRefType expected = viewType(type);
  if (getResult().getType() != expected)
    return emitOpError("result type must be ")
           << expected << " (the buffer's with a dynamic offset), got "
           << getResult().getType();
  return success();
}

/// What tile.signal and tile.wait share: a global integer flag of the
/// value's type, one index per dimension, block level.
static LogicalResult verifyFlag(Operation *op, Value value, Value flags,
                                ValueRange indices) {
  auto type = cast<MemRefType>(flags.getType());
  if (!isGlobal(type))
    return op->emitOpError("flag must be in global memory, got ")
           << getScopeName(type);
  if (type.getElementType() != value.getType())
    return op->emitOpError("value type ")
           << value.getType() << " does not match the flag type "
           << type.getElementType();
  if (static_cast<int64_t>(indices.size()) != type.getRank())
    return op->emitOpError("expects ")
           << type.getRank() << " indices (the flag buffer's rank), got "
           << indices.size();
  if (op->getParentOfType<ParallelOp>() || op->getParentOfType<RoleOp>())
    return op->emitOpError("synchronizes the whole block: it cannot be "
                           "nested in a T.Parallel loop or a role");
  return success();
}

LogicalResult SignalOp::verify() {
  return verifyFlag(*this, getValue(), getFlags(), getIndices());
}

LogicalResult WaitOp::verify() {
  if (failed(verifyFlag(*this, getValue(), getFlags(), getIndices())))
    return failure();
  if (getTimeoutMs() <= 0 || getTimeoutMs() > limits::kWaitTimeoutMs)
    return emitOpError("timeout must be positive and at most ")
           << limits::kWaitTimeoutMs
           << " ms (the poll counts int64 nanoseconds: 292 years), got "
           << getTimeoutMs() << " ms";
  // A symmetric buffer's flags are signalled by the peers' kernels too
  // (e.g. the push kernel before a reduction); any other flag must be
  // signalled in this kernel.
  auto kernel = (*this)->getParentOfType<KernelOp>();
  Value root = symmetricRoot(getFlags());
  auto fn = (*this)->getParentOfType<FunctionOpInterface>();
  if (std::optional<unsigned> index = functionArgument(*this, root))
    if (fn.getArgAttr(*index, kSymmetricAttrName))
      return success();
  bool signaled = false;
  kernel.walk([&](SignalOp s) {
    signaled |= symmetricRoot(s.getFlags()) == root;
  });
  if (!signaled)
    return emitOpError("waits on a flag buffer that nothing in the kernel "
                       "signals (tile.signal on it, or on a peer's part) and "
                       "that is not symmetric (signalled by peers' kernels): "
                       "the wait could only time out");
  return success();
}

//===----------------------------------------------------------------------===//
// GemmOp
//===----------------------------------------------------------------------===//

/// True if (a, b) -> c is a supported combination of gemm element types.
static bool isSupportedGemmTypes(Type a, Type b, Type c) {
  auto isF8 = [](Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); };
  if (isF8(a) && isF8(b))
    return c.isF32() || c.isF16();
  if (a != b)
    return false;
  if (a.isF16())
    return c.isF32() || c.isF16();
  if (a.isBF16())
    return c.isF32();
  if (a.isF32())
    return c.isF32();
  if (a.isF64())
    return c.isF64();
  if (a.isInteger(8))
    return c.isInteger(32);
  return false;
}

static constexpr StringLiteral kSupportedGemmTypes =
    "f16 -> f16/f32, bf16 -> f32, f32 -> f32, f64 -> f64, i8 -> i32, "
    "f8E4M3FN/f8E5M2 -> f16/f32";

/// Checks that `type` is a 2-D tile operand of a gemm in an allowed scope.
static LogicalResult verifyGemmOperand(Operation *op, StringRef name,
                                       MemRefType type, bool isAccumulator) {
  if (type.getRank() != 2)
    return op->emitOpError("operand ")
           << name << " must be a 2-D tile, got rank " << type.getRank();
  if (isAccumulator) {
    if (!isInScope(type, MemoryScope::fragment))
      return op->emitOpError("accumulator ")
             << name << " must be a fragment, got " << getScopeName(type);
    return success();
  }
  if (!isInScope(type, MemoryScope::shared) &&
      !isInScope(type, MemoryScope::fragment))
    return op->emitOpError("operand ")
           << name << " must be in shared memory or a fragment, got "
           << getScopeName(type);
  return success();
}

int64_t GemmOp::getM() {
  ArrayRef<int64_t> a = getA().getType().getShape();
  return getTransposeA() ? a[1] : a[0];
}

int64_t GemmOp::getK() {
  ArrayRef<int64_t> a = getA().getType().getShape();
  return getTransposeA() ? a[0] : a[1];
}

int64_t GemmOp::getN() {
  ArrayRef<int64_t> b = getB().getType().getShape();
  return getTransposeB() ? b[0] : b[1];
}

/// The grid layout inference writes on a gemm for the GPU lowerings
/// (`warp_partition`: warps of mma.sync, `wgmma`: warpgroups, `mfma`: AMD
/// waves) is trusted by them: at most one, two positive counts that split
/// the M x N tile into the instruction's tiles and fit in the kernel.
static LogicalResult verifyGemmGrid(Operation *op, int64_t m, int64_t n) {
  struct GridKind {
    StringRef name;
    int64_t threads, rows, cols; // per unit; the instruction's tile
  };
  const GridKind kinds[] = {{"warp_partition", 32, 16, 8},
                            {"wgmma", 128, 64, 8},
                            {"mfma", 64, 32, 32}};
  StringRef seen;
  for (const GridKind &k : kinds) {
    Attribute attr = op->getAttr(k.name);
    if (!attr)
      continue;
    if (!seen.empty())
      return op->emitOpError("has both `")
             << seen << "` and `" << k.name << "`; a gemm has one grid";
    seen = k.name;
    auto grid = dyn_cast<DenseI64ArrayAttr>(attr);
    if (!grid || grid.size() != 2 || grid[0] < 1 || grid[1] < 1 ||
        grid[0] > 1024 || grid[1] > 1024)
      return op->emitOpError("`")
             << k.name << "` must be two positive counts, got " << attr;
    if (m % (grid[0] * k.rows) || n % (grid[1] * k.cols))
      return op->emitOpError("`")
             << k.name << "` = [" << grid[0] << ", " << grid[1]
             << "] does not split the " << m << "x" << n << " tile into "
             << k.rows << "x" << k.cols << " instruction tiles";
    auto kernel = op->getParentOfType<KernelOp>();
    if (kernel && grid[0] * grid[1] * k.threads > kernel.getNumThreads())
      return op->emitOpError("`")
             << k.name << "` = [" << grid[0] << ", " << grid[1] << "] needs "
             << grid[0] * grid[1] * k.threads << " threads, the kernel has "
             << kernel.getNumThreads();
  }
  return success();
}

LogicalResult GemmOp::verify() {
  MemRefType a = getA().getType(), b = getB().getType(), c = getC().getType();
  if (failed(verifyGemmOperand(*this, "A", a, false)) ||
      failed(verifyGemmOperand(*this, "B", b, false)) ||
      failed(verifyGemmOperand(*this, "C", c, true)))
    return failure();
  int64_t kB = getTransposeB() ? b.getDimSize(1) : b.getDimSize(0);
  if (getK() != kB)
    return emitOpError("A is ")
           << formatShape(a.getShape())
           << (getTransposeA() ? " (KxM)" : " (MxK)") << " and B is "
           << formatShape(b.getShape())
           << (getTransposeB() ? " (NxK)" : " (KxN)")
           << ": the K dimensions " << getK() << " and " << kB << " differ";
  if (c.getDimSize(0) != getM() || c.getDimSize(1) != getN())
    return emitOpError("C must be ")
           << getM() << "x" << getN() << " (MxN), got "
           << formatShape(c.getShape());
  if (!isSupportedGemmTypes(a.getElementType(), b.getElementType(),
                            c.getElementType()))
    return emitOpError("unsupported element types: A ")
           << a.getElementType() << ", B " << b.getElementType() << ", C "
           << c.getElementType() << " (supported: " << kSupportedGemmTypes
           << ")";
  if (getKPack() < 1)
    return emitOpError("k_pack must be positive, got ") << getKPack();
  if (getInt4()) {
    if (!a.getElementType().isInteger(8) || !c.getElementType().isInteger(32))
      return emitOpError("an int4 gemm takes i8 operands (two 4-bit integers "
                         "a byte) and an i32 accumulator");
    if (getTransposeA() || !getTransposeB())
      return emitOpError("an int4 gemm needs A as M x K and B as N x K "
                         "(transpose_b): the packed nibbles run along K");
    if (!isInScope(a, MemoryScope::shared) || !isInScope(b, MemoryScope::shared))
      return emitOpError("an int4 gemm reads A and B from shared memory");
  }
  return verifyGemmGrid(*this, getM(), getN());
}

namespace {
/// `fill C, 0` right before `gemm A, B, C` (with only pure ops in between)
/// is a gemm that overwrites its accumulator.
struct FoldZeroFillIntoGemm : public OpRewritePattern<GemmOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GemmOp gemm,
                                PatternRewriter &rewriter) const override {
    if (gemm.getClearAccum())
      return rewriter.notifyMatchFailure(gemm, "already clears its accumulator");
    Operation *prev = gemm->getPrevNode();
    while (prev && isMemoryEffectFree(prev) && prev->getNumRegions() == 0)
      prev = prev->getPrevNode();
    auto fill = dyn_cast_or_null<FillOp>(prev);
    if (!fill || fill.getDst() != gemm.getC())
      return rewriter.notifyMatchFailure(
          gemm, "not preceded by a fill of its accumulator");
    if (!matchPattern(fill.getValue(), m_AnyZeroFloat()) &&
        !matchPattern(fill.getValue(), m_Zero()))
      return rewriter.notifyMatchFailure(gemm, "the fill value is not zero");
    rewriter.modifyOpInPlace(gemm, [&]() { gemm.setClearAccum(true); });
    rewriter.eraseOp(fill);
    return success();
  }
};
} // namespace

void GemmOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<FoldZeroFillIntoGemm>(context);
}

//===----------------------------------------------------------------------===//
// GemmSpOp
//===----------------------------------------------------------------------===//

int64_t GemmSpOp::getM() { return getA().getType().getDimSize(0); }

int64_t GemmSpOp::getK() { return 2 * getA().getType().getDimSize(1); }

int64_t GemmSpOp::getN() {
  ArrayRef<int64_t> b = getB().getType().getShape();
  return getTransposeB() ? b[0] : b[1];
}

LogicalResult GemmSpOp::verify() {
  MemRefType a = getA().getType(), e = getE().getType(), b = getB().getType(),
             c = getC().getType();
  if (failed(verifyGemmOperand(*this, "A", a, false)) ||
      failed(verifyGemmOperand(*this, "E", e, false)) ||
      failed(verifyGemmOperand(*this, "B", b, false)) ||
      failed(verifyGemmOperand(*this, "C", c, true)))
    return failure();
  Type aType = a.getElementType();
  if (!aType.isF16() && !aType.isBF16())
    return emitOpError("sparse A must be f16 or bf16, got ") << aType;
  if (b.getElementType() != aType)
    return emitOpError("B element type ")
           << b.getElementType() << " must match A's " << aType;
  if (!c.getElementType().isF32() &&
      !(aType.isF16() && c.getElementType().isF16()))
    return emitOpError("unsupported accumulator type ")
           << c.getElementType() << " for " << aType << " inputs";
  auto eType = dyn_cast<IntegerType>(e.getElementType());
  if (!eType || (eType.getWidth() != 8 && eType.getWidth() != 16 &&
                 eType.getWidth() != 32))
    return emitOpError("metadata E must have i8, i16 or i32 elements, got ")
           << e.getElementType();
  int64_t m = a.getDimSize(0), kHalf = a.getDimSize(1);
  int64_t k = getTransposeB() ? b.getDimSize(1) : b.getDimSize(0);
  int64_t n = getTransposeB() ? b.getDimSize(0) : b.getDimSize(1);
  if (2 * kHalf != k)
    return emitOpError("sparse A must be MxK/2 = ")
           << m << "x" << k / 2 << " for B with K = " << k << ", got "
           << formatShape(a.getShape());
  int64_t bits = eType.getWidth();
  if (k % bits != 0 || e.getDimSize(0) != m || e.getDimSize(1) != k / bits)
    return emitOpError("metadata E must be MxK/")
           << bits << " = " << m << "x" << k / bits << " for " << bits
           << "-bit metadata, got " << formatShape(e.getShape());
  if (c.getDimSize(0) != m || c.getDimSize(1) != n)
    return emitOpError("C must be ")
           << m << "x" << n << " (MxN), got " << formatShape(c.getShape());
  return verifyGemmGrid(*this, m, n);
}

//===----------------------------------------------------------------------===//
// ReduceOp / CumSumOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyNotGlobal(Operation *op, StringRef name,
                                     MemRefType type) {
  if (isGlobal(type))
    return op->emitOpError()
           << name << " must be a fragment, shared or local buffer, got global";
  return success();
}

/// What tile.reduce and tile.cumsum check alike: neither buffer is global and
/// `dim` (the `<mnemonic> dim` in messages) is a dimension of `src`.
static LogicalResult verifyAlongDim(Operation *op, StringRef mnemonic,
                                    MemRefType src, MemRefType dst,
                                    int64_t dim) {
  if (failed(verifyNotGlobal(op, "source", src)) ||
      failed(verifyNotGlobal(op, "destination", dst)))
    return failure();
  if (dim < 0 || dim >= src.getRank())
    return op->emitOpError()
           << mnemonic << " dim " << dim << " is out of range for a rank-"
           << src.getRank() << " source";
  return success();
}

LogicalResult ReduceOp::verify() {
  MemRefType src = getSrc().getType(), dst = getDst().getType();
  int64_t dim = getDim();
  if (failed(verifyAlongDim(*this, "reduce", src, dst, dim)))
    return failure();
  SmallVector<int64_t> removed(src.getShape());
  removed.erase(removed.begin() + dim);
  SmallVector<int64_t> kept(src.getShape());
  kept[dim] = 1;
  ArrayRef<int64_t> actual = dst.getShape();
  bool ok = actual == ArrayRef<int64_t>(removed) ||
            actual == ArrayRef<int64_t>(kept) ||
            (removed.empty() && actual == ArrayRef<int64_t>{1});
  if (!ok)
    return emitOpError("destination shape must be ")
           << formatShape(removed) << " (source shape with dim " << dim
           << " removed) or " << formatShape(kept) << ", got "
           << formatShape(actual);
  if (failed(verifyLogicalElements(*this, getSrcElementAttr(), src,
                                   getDstElementAttr(), dst)))
    return failure();
  ReduceKind kind = getKind();
  bool bitwise = kind == ReduceKind::bitAnd || kind == ReduceKind::bitOr ||
                 kind == ReduceKind::bitXor;
  if (bitwise) {
    for (auto [side, type] : {std::make_pair(StringRef("source"), src),
                              std::make_pair(StringRef("destination"), dst)})
      if (!isa<IntegerType>(type.getElementType()))
        return emitOpError("reduce ")
               << stringifyReduceKind(kind) << " needs integer or boolean "
               << side << " elements, got " << type.getElementType();
  }
  if (getNanPropagate() && kind != ReduceKind::max &&
      kind != ReduceKind::min && kind != ReduceKind::absmax)
    return emitOpError("nan_propagate applies to max, min and absmax "
                       "reductions, not ")
           << stringifyReduceKind(kind);
  return success();
}

Type ReduceOp::getSrcLogicalType() {
  if (std::optional<Type> t = getSrcElement())
    return *t;
  return getSrc().getType().getElementType();
}

Type ReduceOp::getDstLogicalType() {
  if (std::optional<Type> t = getDstElement())
    return *t;
  return getDst().getType().getElementType();
}

LogicalResult IEEEOp::verify() {
  IEEEKind kind = getKind();
  unsigned want = 2;
  if (kind == IEEEKind::fma)
    want = 3;
  else if (kind == IEEEKind::rcp || kind == IEEEKind::sqrt ||
           kind == IEEEKind::rsqrt)
    want = 1;
  if (getOperands().size() != want)
    return emitOpError() << stringifyIEEEKind(kind) << " takes " << want
                         << " operands, got " << getOperands().size();
  Type t = getType();
  for (Value v : getOperands())
    if (v.getType() != t)
      return emitOpError("operands and result must have one type, got ")
             << v.getType() << " and " << t;
  if (!(t.isF16() || t.isBF16() || t.isF32() || t.isF64()))
    return emitOpError("computes on f16, bf16, f32 or f64, got ") << t;
  if ((t.isF16() || t.isBF16()) && getMode() != RoundingMode::rn)
    return emitOpError("IEEE ")
           << stringifyIEEEKind(kind) << " with rounding mode '"
           << stringifyRoundingMode(getMode()) << "' is not supported for " << t
           << ": Only rounding mode 'rn' is available for half precision";
  if (kind == IEEEKind::rsqrt && getMode() != RoundingMode::rn)
    return emitOpError("rsqrt rounds to nearest only");
  if (kind == IEEEKind::rsqrt && t.isF64())
    return emitOpError("IEEE frsqrt is not supported for float64 (as in "
                       "TileLang): use ieee_fsqrt followed by ieee_frcp");
  return success();
}

LogicalResult CumSumOp::verify() {
  MemRefType src = getSrc().getType(), dst = getDst().getType();
  if (failed(verifyAlongDim(*this, "cumsum", src, dst, getDim())))
    return failure();
  if (src.getShape() != dst.getShape())
    return emitOpError("source shape ")
           << formatShape(src.getShape()) << " and destination shape "
           << formatShape(dst.getShape()) << " differ";
  if (getKind() != ReduceKind::sum && getKind() != ReduceKind::max)
    return emitOpError("scans are sums or maxima, not ")
           << stringifyReduceKind(getKind());
  if (getElementAttr() &&
      !isLogicalTypeOf(getElementAttr().getValue(), dst.getElementType()))
    return emitOpError("element ")
           << getElementAttr().getValue()
           << " cannot be the logical type of elements stored as "
           << dst.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// ParallelOp
//===----------------------------------------------------------------------===//

void ParallelOp::build(OpBuilder &builder, OperationState &result,
                       ArrayRef<int64_t> extents) {
  result.addAttribute(getExtentsAttrName(result.name),
                      builder.getDenseI64ArrayAttr(extents));
  buildLoopBody(builder, result,
                SmallVector<Location>(extents.size(), result.location));
}

ParseResult ParallelOp::parse(OpAsmParser &parser, OperationState &result) {
  SmallVector<OpAsmParser::Argument> ivs;
  SmallVector<int64_t> extents;
  SMLoc loc = parser.getCurrentLocation();
  if (parseIndexArguments(parser, ivs) || parser.parseKeyword("in") ||
      parseIntegerList(parser, extents, OpAsmParser::Delimiter::Paren))
    return failure();
  if (ivs.size() != extents.size())
    return parser.emitError(loc)
           << "expected one induction variable per extent, got " << ivs.size()
           << " variables and " << extents.size() << " extents";
  result.addAttribute(getExtentsAttrName(result.name),
                      parser.getBuilder().getDenseI64ArrayAttr(extents));
  return parseLoopBody<ParallelOp>(parser, result, ivs);
}

void ParallelOp::print(OpAsmPrinter &p) {
  p << " ";
  printIndexArguments(p, getInductionVars());
  p << " in (";
  llvm::interleaveComma(getExtents(), p);
  p << ")";
  printLoopBody(p, *this, {getExtentsAttrName()});
}

LogicalResult ParallelOp::verify() {
  ArrayRef<int64_t> extents = getExtents();
  if (extents.empty())
    return emitOpError("expects at least one extent");
  int64_t iterations = 1;
  for (int64_t e : extents) {
    if (e <= 0)
      return emitOpError("extents must be positive, got ") << e;
    if (e > limits::kParallelIterations ||
        iterations * e > limits::kParallelIterations)
      return emitOpError("iteration space (")
             << formatShape(extents) << ") has more than "
             << limits::kParallelIterations
             << " iterations; a tile.parallel covers a tile (use a serial "
                "loop or more blocks for larger extents)";
    iterations *= e;
  }
  if (std::optional<int64_t> vector = getVector())
    if (*vector <= 0 || !llvm::isPowerOf2_64(*vector))
      return emitOpError("expects `vector` to be a positive power of two, got ")
             << *vector;
  Block &body = getBody().front();
  if (!hasIndexArguments(body, extents.size()))
    return emitOpError("expects ")
           << extents.size() << " induction variables of type index, got "
           << body.getNumArguments() << " block arguments";
  return success();
}

namespace {
/// A parallel loop or pipelined loop whose body holds only its terminator
/// does nothing.
template <typename LoopOp>
struct EraseEmptyLoop : public OpRewritePattern<LoopOp> {
  using OpRewritePattern<LoopOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(LoopOp op,
                                PatternRewriter &rewriter) const override {
    if (!llvm::hasSingleElement(op.getBody().front()))
      return rewriter.notifyMatchFailure(op, "the body is not empty");
    rewriter.eraseOp(op);
    return success();
  }
};

/// A pipelined loop whose constant bounds give no iteration does nothing.
struct EraseZeroTripPipelined : public OpRewritePattern<PipelinedOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(PipelinedOp op,
                                PatternRewriter &rewriter) const override {
    APInt lower, upper;
    if (!matchPattern(op.getLower(), m_ConstantInt(&lower)) ||
        !matchPattern(op.getUpper(), m_ConstantInt(&upper)))
      return rewriter.notifyMatchFailure(op, "bounds are not constant");
    if (lower.slt(upper))
      return rewriter.notifyMatchFailure(op, "the loop runs at least once");
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void ParallelOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                             MLIRContext *context) {
  results.add<EraseEmptyLoop<ParallelOp>>(context);
}

//===----------------------------------------------------------------------===//
// PipelinedOp
//===----------------------------------------------------------------------===//

void PipelinedOp::build(OpBuilder &builder, OperationState &result,
                        Value lower, Value upper, Value step,
                        int64_t numStages) {
  result.addOperands({lower, upper, step});
  result.addAttribute(getNumStagesAttrName(result.name),
                      builder.getI64IntegerAttr(numStages));
  buildLoopBody(builder, result, {result.location});
}

SmallVector<Operation *> PipelinedOp::getStatements() {
  SmallVector<Operation *> statements;
  for (Operation &op : getBody().front().without_terminator())
    if (!isMemoryEffectFree(&op))
      statements.push_back(&op);
  return statements;
}

ParseResult PipelinedOp::parse(OpAsmParser &parser, OperationState &result) {
  OpAsmParser::Argument iv;
  OpAsmParser::UnresolvedOperand lower, upper, step;
  Type index = parser.getBuilder().getIndexType();
  if (parser.parseArgument(iv) || parser.parseEqual() ||
      parser.parseOperand(lower) || parser.parseKeyword("to") ||
      parser.parseOperand(upper) || parser.parseKeyword("step") ||
      parser.parseOperand(step) ||
      parser.resolveOperand(lower, index, result.operands) ||
      parser.resolveOperand(upper, index, result.operands) ||
      parser.resolveOperand(step, index, result.operands))
    return failure();
  iv.type = index;
  int64_t numStages;
  if (parser.parseKeyword("num_stages") || parser.parseEqual() ||
      parser.parseInteger(numStages))
    return failure();
  Builder &b = parser.getBuilder();
  result.addAttribute(getNumStagesAttrName(result.name),
                      b.getI64IntegerAttr(numStages));
  for (StringRef key : {"order", "stage"}) {
    if (failed(parser.parseOptionalKeyword(key)))
      continue;
    SmallVector<int64_t> values;
    if (parser.parseEqual() ||
        parseIntegerList(parser, values, OpAsmParser::Delimiter::Square))
      return failure();
    result.addAttribute(key, b.getDenseI64ArrayAttr(values));
  }
  if (succeeded(parser.parseOptionalKeyword("group"))) {
    SmallVector<Attribute> groups;
    if (parser.parseEqual() ||
        parser.parseCommaSeparatedList(
            OpAsmParser::Delimiter::Square, [&]() -> ParseResult {
              SmallVector<int64_t> members;
              if (parseIntegerList(parser, members,
                                   OpAsmParser::Delimiter::Square))
                return failure();
              groups.push_back(b.getDenseI64ArrayAttr(members));
              return success();
            }))
      return failure();
    result.addAttribute(getGroupAttrName(result.name), b.getArrayAttr(groups));
  }
  return parseLoopBody<PipelinedOp>(parser, result, {iv});
}

void PipelinedOp::print(OpAsmPrinter &p) {
  p << " " << getInductionVar() << " = " << getLower() << " to " << getUpper()
    << " step " << getStep() << " num_stages = " << getNumStages();
  if (std::optional<ArrayRef<int64_t>> order = getOrder()) {
    p << " order = [";
    llvm::interleaveComma(*order, p);
    p << "]";
  }
  if (std::optional<ArrayRef<int64_t>> stage = getStage()) {
    p << " stage = [";
    llvm::interleaveComma(*stage, p);
    p << "]";
  }
  if (ArrayAttr groups = getGroupAttr()) {
    p << " group = [";
    llvm::interleaveComma(groups, p, [&](Attribute g) {
      p << "[";
      llvm::interleaveComma(cast<DenseI64ArrayAttr>(g).asArrayRef(), p);
      p << "]";
    });
    p << "]";
  }
  printLoopBody(p, *this,
                {getNumStagesAttrName(), getOrderAttrName(), getStageAttrName(),
                 getGroupAttrName()});
}

LogicalResult PipelinedOp::verify() {
  int64_t numStages = getNumStages();
  if (numStages < 0 || numStages > limits::kPipelineStages)
    return emitOpError("num_stages must be in [0, ")
           << limits::kPipelineStages << "], got " << numStages;
  if (!hasIndexArguments(getBody().front(), 1))
    return emitOpError("expects one induction variable of type index");
  size_t numStatements = getStatements().size();
  auto checkLength = [&](StringRef name,
                         ArrayRef<int64_t> values) -> LogicalResult {
    if (values.size() != numStatements)
      return emitOpError()
             << name << " has " << values.size()
             << " entries but the loop body has " << numStatements
             << " statements (ops with memory effects)";
    return success();
  };
  if (std::optional<ArrayRef<int64_t>> stage = getStage()) {
    if (failed(checkLength("stage", *stage)))
      return failure();
    for (int64_t s : *stage)
      if (s < 0 || s > numStages)
        return emitOpError("stage entries must be in [0, ")
               << numStages << "], got " << s;
  }
  if (std::optional<ArrayRef<int64_t>> order = getOrder()) {
    if (failed(checkLength("order", *order)))
      return failure();
    SmallVector<int64_t> sorted(*order);
    llvm::sort(sorted);
    for (size_t i = 0; i < sorted.size(); ++i)
      if (sorted[i] != static_cast<int64_t>(i))
        return emitOpError("order must be a permutation of 0..")
               << static_cast<int64_t>(numStatements) - 1;
  }
  if (ArrayAttr groups = getGroupAttr()) {
    llvm::SmallSet<int64_t, 8> seen;
    for (Attribute g : groups) {
      auto members = dyn_cast<DenseI64ArrayAttr>(g);
      if (!members)
        return emitOpError("group entries must be arrays of statement indices");
      for (int64_t m : members.asArrayRef()) {
        if (m < 0 || m >= static_cast<int64_t>(numStatements))
          return emitOpError("group refers to statement ")
                 << m << " but the loop body has " << numStatements
                 << " statements";
        if (!seen.insert(m).second)
          return emitOpError("statement ")
                 << m << " appears in more than one group";
      }
    }
  }
  return success();
}

void PipelinedOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<EraseEmptyLoop<PipelinedOp>, EraseZeroTripPipelined>(context);
}

//===----------------------------------------------------------------------===//
// AnnotateLayoutOp, UseSwizzleOp, PrintOp, DeviceAssertOp
//===----------------------------------------------------------------------===//

LogicalResult AnnotateLayoutOp::verify() {
  MemRefType type = getBuffer().getType();
  Attribute layout = getLayout();
  if (isInScope(type, MemoryScope::fragment)) {
    auto fragmentLayout = dyn_cast<FragmentLayoutAttr>(layout);
    if (!fragmentLayout)
      return emitOpError("a fragment takes a #tile.layout, got ") << layout;
    if (failed(fragmentLayout.verifyForShape(type.getShape(), [&]() {
          return emitOpError();
        })))
      return failure();
    return verifyLayoutThreads(*this, fragmentLayout.getThreads());
  }
  if (isInScope(type, MemoryScope::shared)) {
    if (!isa<SwizzleAttr>(layout))
      return emitOpError("a shared buffer takes a #tile.swizzle, got ")
             << layout;
    return success();
  }
  return emitOpError("applies to fragments and shared buffers, got a ")
         << getScopeName(type) << " buffer";
}

LogicalResult UseSwizzleOp::verify() {
  if (getPanelSize() < 1)
    return emitOpError("panel_size must be positive, got ") << getPanelSize();
  auto kernel = (*this)->getParentOfType<KernelOp>();
  if (kernel.getGrid().size() < 2)
    return emitOpError("needs a kernel grid of at least 2 dimensions, got ")
           << kernel.getGrid().size();
  return success();
}

LogicalResult PrintOp::verify() {
  Type type = getValue().getType();
  if (!type.isIntOrIndexOrFloat() && !isa<MemRefType>(type))
    return emitOpError("takes a scalar or a tile buffer, got ") << type;
  return success();
}

LogicalResult DeviceAssertOp::verify() {
  StringRef msg = getMsg();
  if (msg.empty())
    return emitOpError("needs a message: it is what a failing kernel reports");
  // The lowerings pass the message as a C string.
  if (msg.contains('\0'))
    return emitOpError("message must not contain NUL characters (it becomes a "
                       "C string), got one at offset ")
           << msg.find('\0');
  return success();
}

std::pair<StringRef, unsigned> DeviceAssertOp::getSourcePosition() {
  return sourcePositionOf(getLoc());
}

std::pair<StringRef, unsigned> tile::sourcePositionOf(Location at) {
  std::pair<StringRef, unsigned> found("<unknown>", 0);
  // The first file position, also inside name, call-site and fused locations.
  at->walk([&](Location loc) {
    if (auto file = dyn_cast<FileLineColLoc>(loc)) {
      found = {file.getFilename().getValue(), file.getLine()};
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

