//===- ThreadOps.cpp - verifiers of the per-thread and atomic ops ---------===//
//
// Part of tilelang-mlir.
//
// The ops of TileThreadOps.td: warp shuffles, votes and reductions, block
// votes, election and atomics.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/IR/TileOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tile;

/// The bits of a scalar value type.
static unsigned scalarBits(Type t) { return t.getIntOrFloatBitWidth(); }

LogicalResult ShuffleOp::verify() {
  unsigned bits = scalarBits(getValue().getType());
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
    return emitOpError("shuffles values of 8, 16, 32 or 64 bits, got ")
           << getValue().getType();
  APInt width;
  if (matchPattern(getWidth(), m_ConstantInt(&width))) {
    int64_t w = width.getSExtValue();
    if (w < 1 || w > 32 || !llvm::isPowerOf2_64(w))
      return emitOpError("width must be a power of two in [1, 32], got ") << w;
  }
  return success();
}

LogicalResult WarpVoteOp::verify() {
  Type want = IntegerType::get(getContext(),
                               getKind() == VoteKind::ballot ? 64 : 32);
  if (getResult().getType() != want)
    return emitOpError("a ")
           << stringifyVoteKind(getKind()) << " vote gives " << want
           << ", got " << getResult().getType();
  return success();
}

LogicalResult WarpMatchOp::verify() {
  unsigned bits = scalarBits(getValue().getType());
  if (bits != 32 && bits != 64)
    return emitOpError("matches values of 32 or 64 bits, got ")
           << getValue().getType();
  return success();
}

/// Bitwise kinds need integers.
static LogicalResult checkBitwise(Operation *op, bool bitwise, Type type,
                                  StringRef kind) {
  if (bitwise && !isa<IntegerType>(type))
    return op->emitOpError("'") << kind << "' needs an integer value, got "
                                << type;
  return success();
}

LogicalResult WarpReduceOp::verify() {
  WarpReduceKind k = getKind();
  bool bitwise = k == WarpReduceKind::BitAnd || k == WarpReduceKind::BitOr ||
                 k == WarpReduceKind::BitXor;
  return checkBitwise(*this, bitwise, getValue().getType(),
                      stringifyWarpReduceKind(k));
}

LogicalResult BlockVoteOp::verify() {
  if ((*this)->getParentOfType<RoleOp>() ||
      (*this)->getParentOfType<ParallelOp>())
    return emitOpError("is a barrier of the whole block: every thread must "
                       "execute it, not only a role's or a parallel loop's");
  return success();
}

LogicalResult ElectOp::verify() {
  // (I64Attr reads as uint64_t.)
  auto extent = static_cast<int64_t>(getExtent());
  if (extent < 0)
    return emitOpError("extent must be non-negative, got ") << extent;
  return success();
}

/// Atomics update global or shared memory, at one element of the buffer.
static LogicalResult checkAtomicBuffer(Operation *op, MemRefType type,
                                       size_t offsets, StringRef what) {
  if (!isGlobal(type) && !isInScope(type, MemoryScope::shared))
    return op->emitOpError(what) << " must be in global or shared memory, got "
                                 << getScopeName(type);
  if (static_cast<int64_t>(offsets) != type.getRank())
    return op->emitOpError("expects ")
           << type.getRank() << " offsets (the " << what << " rank), got "
           << offsets;
  return success();
}

LogicalResult AtomicRMWOp::verify() {
  MemRefType dst = getDst().getType();
  if (failed(checkAtomicBuffer(*this, dst, getOffsets().size(), "destination")))
    return failure();
  Type elem = dst.getElementType();
  if (getValue().getType() != elem)
    return emitOpError("value type ")
           << getValue().getType()
           << " does not match the destination element type " << elem;
  if (getResult() && getResult().getType() != elem)
    return emitOpError("the previous value has the destination element type ")
           << elem << ", got " << getResult().getType();
  AtomicKind k = getKind();
  bool bitwise = k == AtomicKind::BitAnd || k == AtomicKind::BitOr ||
                 k == AtomicKind::BitXor;
  return checkBitwise(*this, bitwise, elem, stringifyAtomicKind(k));
}

LogicalResult AtomicLoadOp::verify() {
  MemRefType src = getSrc().getType();
  if (failed(checkAtomicBuffer(*this, src, getOffsets().size(), "source")))
    return failure();
  if (getResult().getType() != src.getElementType())
    return emitOpError("loads the source element type ")
           << src.getElementType() << ", got " << getResult().getType();
  MemoryOrder o = getMemoryOrder();
  if (o == MemoryOrder::release || o == MemoryOrder::acq_rel)
    return emitOpError("an atomic load cannot have memory order ")
           << stringifyMemoryOrder(o)
           << " (relaxed, consume, acquire or seq_cst)";
  return success();
}

LogicalResult AtomicStoreOp::verify() {
  MemRefType dst = getDst().getType();
  if (failed(checkAtomicBuffer(*this, dst, getOffsets().size(), "destination")))
    return failure();
  if (getValue().getType() != dst.getElementType())
    return emitOpError("value type ")
           << getValue().getType()
           << " does not match the destination element type "
           << dst.getElementType();
  MemoryOrder o = getMemoryOrder();
  if (o != MemoryOrder::relaxed && o != MemoryOrder::release &&
      o != MemoryOrder::seq_cst)
    return emitOpError("an atomic store cannot have memory order ")
           << stringifyMemoryOrder(o) << " (relaxed, release or seq_cst)";
  return success();
}

LogicalResult PartialBarrierOp::verify() {
  APInt c;
  if (matchPattern(getId(), m_ConstantInt(&c)) &&
      (c.getSExtValue() < 0 || c.getSExtValue() > 15))
    return emitOpError("id must be in [0, 15], got ") << c.getSExtValue();
  int64_t block = (*this)->getParentOfType<KernelOp>().getNumThreads();
  if (getThreads() && matchPattern(getThreads(), m_ConstantInt(&c))) {
    int64_t n = c.getSExtValue();
    if (n < 32 || n % 32 || n > block)
      return emitOpError("threads must be a multiple of 32 in [32, ")
             << block << "] (the kernel's threads), got " << n;
  }
  if (getArrive() && !getThreads())
    return emitOpError("an arrival names the threads of the barrier");
  return success();
}

LogicalResult GridSyncOp::verify() {
  if ((*this)->getParentOfType<RoleOp>() ||
      (*this)->getParentOfType<ParallelOp>())
    return emitOpError("is a barrier of the whole grid: every thread must "
                       "execute it, not only a role's or a parallel loop's");
  return success();
}

LogicalResult MakeTensorOp::verify() {
  MemRefType type = getResult().getType();
  if (!isGlobal(type))
    return emitOpError("makes a global tensor, got one in ")
           << getScopeName(type) << " memory";
  if (!type.getLayout().isIdentity())
    return emitOpError("makes a row-major (contiguous) tensor, got ") << type;
  if (static_cast<int64_t>(getSizes().size()) != type.getNumDynamicDims())
    return emitOpError("expects ")
           << type.getNumDynamicDims()
           << " sizes (the dynamic dimensions of the result), got "
           << getSizes().size();
  return success();
}

LogicalResult ClusterBarrierOp::verify() {
  if ((*this)->getParentOfType<RoleOp>() ||
      (*this)->getParentOfType<ParallelOp>())
    return emitOpError("is a barrier of the cluster's blocks: every thread "
                       "must execute it, not only a role's or a parallel "
                       "loop's");
  if (!(*this)->getParentOfType<KernelOp>()->hasAttr("tile.cluster"))
    return emitOpError("synchronizes the blocks of a cluster, but the kernel "
                       "runs without clusters (T.Kernel(..., cluster_dims=...))");
  return success();
}

LogicalResult CallExternOp::verify() {
  ArrayRef<int64_t> counts = getIndexCounts(), access = getAccess();
  if (counts.size() != getArgs().size() || access.size() != getArgs().size())
    return emitOpError("needs one index_counts and one access entry per "
                       "argument (")
           << getArgs().size() << " arguments)";
  int64_t indices = 0;
  for (auto [i, arg] : llvm::enumerate(getArgs())) {
    Type t = arg.getType();
    if (auto memref = dyn_cast<MemRefType>(t)) {
      if (counts[i] != memref.getRank())
        return emitOpError("argument ")
               << i << " is a buffer of rank " << memref.getRank()
               << " addressed with " << counts[i] << " indices";
      if (access[i] < 1 || access[i] > 3)
        return emitOpError("argument ")
               << i << ": access is 1 (read), 2 (write) or 3, got "
               << access[i];
      indices += counts[i];
      continue;
    }
    unsigned width = t.getIntOrFloatBitWidth();
    if (!(isa<IntegerType>(t) || t.isF32() || t.isF64()) ||
        (width != 32 && width != 64))
      return emitOpError("argument ")
             << i << " has type " << t
             << ": scalars passed to an external function are 32- or 64-bit "
                "integers or floats";
    if (counts[i] != 0 || access[i] != 0)
      return emitOpError("argument ")
             << i << " is a scalar: its index_counts and access are 0";
  }
  if (indices != static_cast<int64_t>(getIndices().size()))
    return emitOpError("has ")
           << getIndices().size() << " indices, its buffers need " << indices;
  if (getCallee().empty())
    return emitOpError("needs a callee name");
  return success();
}
