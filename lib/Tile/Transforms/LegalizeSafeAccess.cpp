//===- LegalizeSafeAccess.cpp - bounds-safe global element accesses -------===//
//
// Part of tilelang-mlir.
//
// See the description of tile-legalize-safe-access in Passes.td: a load of a
// global buffer element that may lie outside the buffer reads the safe value
// (zero, or the program's T.annotate_safe_value), and such a store is
// dropped. Accesses whose indices are proven in range stay as they are.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/MathExtras.h"

#include <optional>
#include <string>

#define DEBUG_TYPE "tile-legalize-safe-access"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILELEGALIZESAFEACCESS
#include "dialects/Tile/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

namespace {

/// What an index value is known to lie in: [lo, sym + hi], where `sym` is
/// a non-negative runtime size (a buffer dimension, by the key of
/// `extentKey`) or absent (then the upper bound is `hi`).
struct Bound {
  int64_t lo = 0;
  std::string sym;
  int64_t hi = 0;
};

constexpr int kMaxDepth = 24;

class BoundsAnalysis {
public:
  explicit BoundsAnalysis(func::FuncOp fn) : fn(fn) {}

  /// The key of dimension `d` of `memref`: the symbolic size's name for a
  /// function argument whose dimension the frontend named
  /// (`tile.dim_symbols`), else the argument and dimension.
  std::string dimKey(Value memref, int64_t d) {
    if (auto arg = dyn_cast<BlockArgument>(memref);
        arg && arg.getOwner()->getParentOp() == fn.getOperation()) {
      if (auto names = fn.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(),
                                                       "tile.dim_symbols"))
        if (d < static_cast<int64_t>(names.size()))
          if (auto s = dyn_cast<StringAttr>(names[d]); s && !s.getValue().empty())
            return "sym:" + s.getValue().str();
      return "arg:" + std::to_string(arg.getArgNumber()) + ":" +
             std::to_string(d);
    }
    return "val:" +
           std::to_string(reinterpret_cast<uintptr_t>(
               memref.getAsOpaquePointer())) +
           ":" + std::to_string(d);
  }

  /// The key of a runtime size value (a grid extent, a loop bound).
  std::optional<std::string> sizeKey(Value v) {
    if (auto dim = v.getDefiningOp<memref::DimOp>()) {
      APInt c;
      if (matchPattern(dim.getIndex(), m_ConstantInt(&c)))
        return dimKey(dim.getSource(), c.getSExtValue());
    }
    return std::nullopt;
  }

  std::optional<Bound> bound(Value v, int depth = 0) {
    if (depth > kMaxDepth)
      return std::nullopt;
    APInt c;
    if (matchPattern(v, m_ConstantInt(&c))) {
      if (c.getSignificantBits() > 63)
        return std::nullopt;
      int64_t x = c.getSExtValue();
      return Bound{x, "", x};
    }
    if (auto arg = dyn_cast<BlockArgument>(v))
      return argBound(arg, depth);
    Operation *op = v.getDefiningOp();
    if (!op)
      return std::nullopt;
    if (auto size = sizeKey(v))
      return Bound{0, *size, 0};
    if (isa<ThreadIdOp>(op)) {
      auto kernel = op->getParentOfType<KernelOp>();
      if (!kernel)
        return std::nullopt;
      int64_t threads = 1;
      for (int64_t t : kernel.getThreads())
        threads *= t;
      return Bound{0, "", threads - 1};
    }
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
            arith::ExtUIOp>(op)) {
      auto b = bound(op->getOperand(0), depth + 1);
      // A zero-extension of a negative value is large: only non-negative
      // ranges carry over unsigned casts.
      if (b && isa<arith::IndexCastUIOp, arith::ExtUIOp>(op) && b->lo < 0)
        return std::nullopt;
      return b;
    }
    if (auto add = dyn_cast<arith::AddIOp>(op))
      return combineAdd(bound(add.getLhs(), depth + 1),
                        bound(add.getRhs(), depth + 1));
    if (auto sub = dyn_cast<arith::SubIOp>(op)) {
      auto a = bound(sub.getLhs(), depth + 1);
      auto b = bound(sub.getRhs(), depth + 1);
      if (!a || !b || !b->sym.empty())
        return std::nullopt;
      int64_t lo, hi;
      if (!a->sym.empty()) {
        // sym + [a.lo', a.hi] - b: the lower bound of sym is 0.
        if (llvm::SubOverflow(a->lo, b->hi, lo) ||
            llvm::SubOverflow(a->hi, b->lo, hi))
          return std::nullopt;
        return Bound{lo, a->sym, hi};
      }
      if (llvm::SubOverflow(a->lo, b->hi, lo) ||
          llvm::SubOverflow(a->hi, b->lo, hi))
        return std::nullopt;
      return Bound{lo, "", hi};
    }
    if (auto mul = dyn_cast<arith::MulIOp>(op)) {
      for (auto [x, y] : {std::pair(mul.getLhs(), mul.getRhs()),
                          std::pair(mul.getRhs(), mul.getLhs())}) {
        APInt k;
        if (!matchPattern(y, m_ConstantInt(&k)) || k.isNegative())
          continue;
        auto b = bound(x, depth + 1);
        if (!b)
          return std::nullopt;
        int64_t f = k.getSExtValue(), lo, hi;
        if (!b->sym.empty() && f != 1)
          return std::nullopt;
        if (llvm::MulOverflow(b->lo, f, lo) || llvm::MulOverflow(b->hi, f, hi))
          return std::nullopt;
        return Bound{lo, b->sym, hi};
      }
      // Both sides bounded and non-negative, no symbols.
      auto a = bound(mul.getLhs(), depth + 1);
      auto b = bound(mul.getRhs(), depth + 1);
      if (!a || !b || !a->sym.empty() || !b->sym.empty() || a->lo < 0 ||
          b->lo < 0)
        return std::nullopt;
      int64_t lo, hi;
      if (llvm::MulOverflow(a->lo, b->lo, lo) ||
          llvm::MulOverflow(a->hi, b->hi, hi))
        return std::nullopt;
      return Bound{lo, "", hi};
    }
    if (isa<arith::DivUIOp, arith::DivSIOp, arith::FloorDivSIOp,
            arith::CeilDivSIOp, arith::CeilDivUIOp>(op)) {
      APInt k;
      if (!matchPattern(op->getOperand(1), m_ConstantInt(&k)) ||
          !k.isStrictlyPositive())
        return std::nullopt;
      auto b = bound(op->getOperand(0), depth + 1);
      if (!b || !b->sym.empty() || b->lo < 0)
        return std::nullopt;
      int64_t d = k.getSExtValue();
      bool ceil = isa<arith::CeilDivSIOp, arith::CeilDivUIOp>(op);
      return Bound{ceil ? llvm::divideCeil(b->lo, d) : b->lo / d, "",
                   ceil ? llvm::divideCeil(b->hi, d) : b->hi / d};
    }
    if (isa<arith::RemUIOp, arith::RemSIOp>(op)) {
      APInt k;
      if (!matchPattern(op->getOperand(1), m_ConstantInt(&k)) ||
          !k.isStrictlyPositive())
        return std::nullopt;
      int64_t d = k.getSExtValue();
      auto b = bound(op->getOperand(0), depth + 1);
      // remui of anything, or remsi of a non-negative value, is in [0, d).
      if (isa<arith::RemUIOp>(op) || (b && b->lo >= 0)) {
        if (b && b->sym.empty() && b->lo >= 0 && b->hi < d)
          return b;
        return Bound{0, "", d - 1};
      }
      return std::nullopt;
    }
    if (isa<arith::MinSIOp, arith::MinUIOp>(op)) {
      auto a = bound(op->getOperand(0), depth + 1);
      auto b = bound(op->getOperand(1), depth + 1);
      if (isa<arith::MinUIOp>(op) && ((a && a->lo < 0) || (b && b->lo < 0)))
        return std::nullopt;
      if (!a && !b)
        return std::nullopt;
      if (!a || !b) {
        // min(x, y) <= y: the known side's upper bound, but no lower one
        // unless the op is unsigned (min >= 0 then).
        const Bound &k = a ? *a : *b;
        if (isa<arith::MinUIOp>(op))
          return Bound{0, k.sym, k.hi};
        return std::nullopt;
      }
      Bound r{std::min(a->lo, b->lo), "", 0};
      if (a->sym.empty() && b->sym.empty()) {
        r.hi = std::min(a->hi, b->hi);
      } else if (a->sym.empty() != b->sym.empty()) {
        // Keep the symbolic side: a proof against a runtime size needs it.
        const Bound &s = a->sym.empty() ? *b : *a;
        r.sym = s.sym;
        r.hi = s.hi;
      } else if (a->sym == b->sym) {
        r.sym = a->sym;
        r.hi = std::min(a->hi, b->hi);
      } else {
        r.sym = a->sym;
        r.hi = a->hi;
      }
      return r;
    }
    if (isa<arith::MaxSIOp, arith::SelectOp>(op)) {
      Value x = isa<arith::SelectOp>(op) ? op->getOperand(1) : op->getOperand(0);
      Value y = isa<arith::SelectOp>(op) ? op->getOperand(2) : op->getOperand(1);
      auto a = bound(x, depth + 1);
      auto b = bound(y, depth + 1);
      if (!a || !b || a->sym != b->sym)
        return std::nullopt;
      int64_t lo = isa<arith::MaxSIOp>(op) ? std::max(a->lo, b->lo)
                                           : std::min(a->lo, b->lo);
      return Bound{lo, a->sym, std::max(a->hi, b->hi)};
    }
    return std::nullopt;
  }

private:
  std::optional<Bound> combineAdd(std::optional<Bound> a,
                                  std::optional<Bound> b) {
    if (!a || !b || (!a->sym.empty() && !b->sym.empty()))
      return std::nullopt;
    int64_t lo, hi;
    if (llvm::AddOverflow(a->lo, b->lo, lo) ||
        llvm::AddOverflow(a->hi, b->hi, hi))
      return std::nullopt;
    return Bound{lo, a->sym.empty() ? b->sym : a->sym, hi};
  }

  /// An upper bound `ub - 1` of a loop whose upper limit is `ub`.
  std::optional<Bound> belowLimit(Value ub, std::optional<Bound> lower,
                                  int depth) {
    auto u = bound(ub, depth + 1);
    if (!u || !lower || !lower->sym.empty())
      return std::nullopt;
    int64_t hi;
    if (llvm::SubOverflow(u->hi, int64_t(1), hi))
      return std::nullopt;
    return Bound{lower->lo, u->sym, hi};
  }

  std::optional<Bound> argBound(BlockArgument arg, int depth) {
    Operation *owner = arg.getOwner()->getParentOp();
    unsigned n = arg.getArgNumber();
    if (auto par = dyn_cast<ParallelOp>(owner)) {
      ArrayRef<int64_t> extents = par.getExtents();
      if (n < extents.size())
        return Bound{0, "", extents[n] - 1};
      return std::nullopt;
    }
    if (auto kernel = dyn_cast<KernelOp>(owner)) {
      if (n >= kernel.getGrid().size())
        return std::nullopt;
      return belowLimit(kernel.getGrid()[n], Bound{0, "", 0}, depth);
    }
    if (auto loop = dyn_cast<scf::ForOp>(owner)) {
      if (arg != loop.getInductionVar())
        return std::nullopt;
      return belowLimit(loop.getUpperBound(),
                        bound(loop.getLowerBound(), depth + 1), depth);
    }
    if (auto loop = dyn_cast<PipelinedOp>(owner)) {
      if (arg != loop.getInductionVar())
        return std::nullopt;
      return belowLimit(loop.getUpper(), bound(loop.getLower(), depth + 1),
                        depth);
    }
    return std::nullopt;
  }

  func::FuncOp fn;
};

/// Global buffers: kernel arguments and views of them (no memory space).
bool isGlobal(Value memref) {
  auto type = dyn_cast<MemRefType>(memref.getType());
  return type && !type.getMemorySpace() && type.getRank() > 0;
}

struct TileLegalizeSafeAccessPass
    : public tile::impl::TileLegalizeSafeAccessBase<TileLegalizeSafeAccessPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    BoundsAnalysis bounds(fn);
    SmallVector<Operation *> accesses;
    fn.walk([&](KernelOp kernel) {
      kernel.walk([&](Operation *op) {
        if (auto load = dyn_cast<memref::LoadOp>(op)) {
          if (isGlobal(load.getMemRef()) && !op->hasAttr(kGuardedAttr))
            accesses.push_back(op);
        } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
          if (isGlobal(store.getMemRef()) && !op->hasAttr(kGuardedAttr))
            accesses.push_back(op);
        }
      });
    });
    for (Operation *op : accesses)
      if (failed(legalize(op, bounds)))
        return signalPassFailure();
  }

  static constexpr llvm::StringLiteral kGuardedAttr = "tile.guarded";
  static constexpr llvm::StringLiteral kSafeValueAttr = "tile.safe_value";

  /// Whether index `idx` of dimension `d` of `memref` lies in [0, extent).
  static bool inRange(BoundsAnalysis &bounds, Value memref, int64_t d,
                      Value idx) {
    auto b = bounds.bound(idx);
    if (!b || b->lo < 0)
      return false;
    auto type = cast<MemRefType>(memref.getType());
    int64_t extent = type.getDimSize(d);
    if (!ShapedType::isDynamic(extent))
      return b->sym.empty() && b->hi < extent;
    return !b->sym.empty() && b->sym == bounds.dimKey(memref, d) && b->hi <= -1;
  }

  /// The constant an out-of-range load of `elem` gives: the annotation
  /// `safe`, else zero (null after an error).
  static TypedAttr safeValue(Operation *op, Attribute safe, Type elem) {
    OpBuilder b(op->getContext());
    if (safe) {
      auto value = dyn_cast<TypedAttr>(safe);
      if (!value || value.getType() != elem) {
        op->emitOpError("has a safe value ")
            << safe << " that is not a constant of the element type " << elem;
        return {};
      }
      return value;
    }
    TypedAttr zero = b.getZeroAttr(elem);
    if (!zero)
      op->emitOpError("loads elements of type ")
          << elem << ", which has no zero to read out of bounds";
    return zero;
  }

  /// `load` at index 0 of the `unproven` dimensions where `ok` is false,
  /// and the safe value in place of what it read there.
  static LogicalResult clampLoad(memref::LoadOp load, Value ok,
                                 ArrayRef<int64_t> unproven, Attribute safe,
                                 OpBuilder &b) {
    Location loc = load.getLoc();
    TypedAttr value = safeValue(load, safe, load.getType());
    if (!value)
      return failure();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    for (int64_t d : unproven) {
      OpOperand &index = load.getIndicesMutable()[d];
      index.set(
          arith::SelectOp::create(b, loc, ok, index.get(), zero).getResult());
    }
    b.setInsertionPointAfter(load);
    Value fallback = arith::ConstantOp::create(b, loc, value);
    auto select = arith::SelectOp::create(b, loc, ok, load.getResult(), fallback);
    load.getResult().replaceAllUsesExcept(select.getResult(), select);
    return success();
  }

  LogicalResult legalize(Operation *op, BoundsAnalysis &bounds) {
    bool isLoad = isa<memref::LoadOp>(op);
    Value memref = isLoad ? cast<memref::LoadOp>(op).getMemRef()
                          : cast<memref::StoreOp>(op).getMemRef();
    ValueRange indices = isLoad ? cast<memref::LoadOp>(op).getIndices()
                                : cast<memref::StoreOp>(op).getIndices();
    auto type = cast<MemRefType>(memref.getType());
    OpBuilder b(op);
    Location loc = op->getLoc();
    Value ok;
    SmallVector<int64_t> unproven;
    bool dynamicUnproven = false;
    for (auto [d, idx] : llvm::enumerate(indices)) {
      if (inRange(bounds, memref, d, idx))
        continue;
      unproven.push_back(d);
      dynamicUnproven |= ShapedType::isDynamic(type.getDimSize(d));
      Value extent =
          ShapedType::isDynamic(type.getDimSize(d))
              ? memref::DimOp::create(b, loc, memref, d).getResult()
              : arith::ConstantIndexOp::create(b, loc, type.getDimSize(d))
                    .getResult();
      // Unsigned: a negative index is out of range too.
      Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, idx,
                                       extent);
      ok = ok ? arith::AndIOp::create(b, loc, ok, in).getResult() : in;
    }
    op->setAttr(kGuardedAttr, b.getUnitAttr());
    Attribute safe = op->getAttr(kSafeValueAttr);
    op->removeAttr(kSafeValueAttr);
    if (!ok)
      return success();
    // A pipelined loop's statements and the indices that tile copies read
    // are plain loads to the passes that follow; a load whose unchecked
    // dimensions all have static (hence non-zero) extents keeps that form:
    // it reads a clamped position (0 in each unchecked dimension) and
    // selects the safe value. So does a top-level statement of a pipelined
    // loop with a dynamic dimension (only an extent of 0 at run time would
    // make its clamped position fall outside). The rest move into scf.if.
    bool statement = isa<PipelinedOp>(op->getParentOp());
    if (isLoad && (!dynamicUnproven || statement))
      return clampLoad(cast<memref::LoadOp>(op), ok, unproven, safe, b);
    if (!isLoad) {
      auto guard = scf::IfOp::create(b, loc, ok, /*withElseRegion=*/false);
      op->moveBefore(guard.thenBlock()->getTerminator());
      return success();
    }
    auto load = cast<memref::LoadOp>(op);
    Type elem = load.getType();
    TypedAttr value = safeValue(op, safe, elem);
    if (!value)
      return failure();
    auto guard = scf::IfOp::create(b, loc, TypeRange{elem}, ok,
                                   /*withElseRegion=*/true);
    Value result = load.getResult();
    {
      OpBuilder inside = OpBuilder::atBlockBegin(guard.thenBlock());
      op->moveBefore(guard.thenBlock(), guard.thenBlock()->begin());
      inside.setInsertionPointAfter(op);
      scf::YieldOp::create(inside, loc, result);
    }
    {
      OpBuilder inside = OpBuilder::atBlockBegin(guard.elseBlock());
      Value c = arith::ConstantOp::create(inside, loc, value);
      scf::YieldOp::create(inside, loc, c);
    }
    result.replaceAllUsesExcept(guard.getResult(0), guard.thenBlock()->getTerminator());
    return success();
  }
};

} // namespace
