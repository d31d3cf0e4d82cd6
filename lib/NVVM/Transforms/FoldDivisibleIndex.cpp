//===- FoldDivisibleIndex.cpp - a // d and a % d of multiples of d --------===//
//
// Part of tilelang-mlir.
//
// See the description of tile-fold-divisible-index in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/NVVM/Transforms/Passes.h"
#include "dialects/Tile/Utils/ControlFlowUtils.h"

#include "mlir/Analysis/DataFlow/IntegerRangeAnalysis.h"
#include "mlir/Analysis/DataFlow/Utils.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILEFOLDDIVISIBLEINDEX
#include "dialects/NVVM/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;

namespace {

/// An index value as sum_i coefficient_i * term_i + constant, the terms
/// opaque values.
struct LinearForm {
  SmallVector<std::pair<Value, int64_t>> terms;
  int64_t constant = 0;
};

/// Splits `v` (times `scale`) into `form` through addi, subi and muli by
/// constants. Gives up (false) past a small depth or on overflow.
bool decompose(Value v, int64_t scale, LinearForm &form, int depth = 0) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c))) {
    int64_t product;
    if (llvm::MulOverflow(c.getSExtValue(), scale, product) ||
        llvm::AddOverflow(form.constant, product, form.constant))
      return false;
    return true;
  }
  if (depth < 8) {
    if (auto add = v.getDefiningOp<arith::AddIOp>())
      return decompose(add.getLhs(), scale, form, depth + 1) &&
             decompose(add.getRhs(), scale, form, depth + 1);
    if (auto sub = v.getDefiningOp<arith::SubIOp>())
      return decompose(sub.getLhs(), scale, form, depth + 1) &&
             decompose(sub.getRhs(), -scale, form, depth + 1);
    if (auto mul = v.getDefiningOp<arith::MulIOp>()) {
      for (auto [x, k] : {std::pair(mul.getLhs(), mul.getRhs()),
                          std::pair(mul.getRhs(), mul.getLhs())}) {
        int64_t product;
        if (matchPattern(k, m_ConstantInt(&c)) &&
            !llvm::MulOverflow(c.getSExtValue(), scale, product))
          return decompose(x, product, form, depth + 1);
      }
    }
  }
  form.terms.push_back({v, scale});
  return true;
}

int64_t floorDiv(int64_t a, int64_t d) {
  return a / d - ((a % d != 0) && ((a < 0) != (d < 0)));
}

/// floordivsi(a, d) with a = sum k_i * t_i + c, d > 0: the terms whose
/// k_i is a multiple of d divide exactly; the others ("small") must have a
/// known range (integer range analysis) that keeps c plus their sum within
/// one multiple of d, [q0 * d, (q0 + 1) * d). Then a // d is the sum of
/// (k_i / d) * t_i over the divisible terms plus q0, and the remainder
/// a - (a // d) * d (how `%` reaches here) is the small terms plus
/// c - q0 * d; it is folded first, while its pattern is still visible.
struct FoldDivisibleFloorDiv : OpRewritePattern<arith::FloorDivSIOp> {
  FoldDivisibleFloorDiv(MLIRContext *ctx, DataFlowSolver &solver)
      : OpRewritePattern(ctx), solver(solver) {}

  /// The signed range of an index value, if the analysis bounds it.
  std::optional<std::pair<int64_t, int64_t>> range(Value v) const {
    auto *lattice = solver.lookupState<dataflow::IntegerValueRangeLattice>(v);
    if (!lattice || lattice->getValue().isUninitialized())
      return std::nullopt;
    const ConstantIntRanges &r = lattice->getValue().getValue();
    if (!r.smin().isSignedIntN(48) || !r.smax().isSignedIntN(48))
      return std::nullopt;
    return std::make_pair(r.smin().getSExtValue(), r.smax().getSExtValue());
  }

  LogicalResult matchAndRewrite(arith::FloorDivSIOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isIndex())
      return failure();
    APInt divisor;
    if (!matchPattern(op.getRhs(), m_ConstantInt(&divisor)))
      return failure();
    int64_t d = divisor.getSExtValue();
    LinearForm form;
    if (d <= 1 || !decompose(op.getLhs(), 1, form))
      return failure();
    // The small terms' range, added to c.
    int64_t lo = form.constant, hi = form.constant;
    SmallVector<std::pair<Value, int64_t>> divisible, small;
    for (auto [term, k] : form.terms) {
      if (k % d == 0) {
        divisible.push_back({term, k});
        continue;
      }
      std::optional<std::pair<int64_t, int64_t>> r = range(term);
      if (!r || std::abs(k) > (int64_t(1) << 16))
        return failure();
      int64_t a = k * r->first, b = k * r->second;
      lo += std::min(a, b);
      hi += std::max(a, b);
      small.push_back({term, k});
    }
    int64_t q0 = floorDiv(lo, d);
    if (floorDiv(hi, d) != q0)
      return failure();
    Location loc = op.getLoc();
    Type type = op.getType();
    auto constant = [&](int64_t value) -> Value {
      return arith::ConstantOp::create(rewriter, loc, type,
                                       rewriter.getIndexAttr(value));
    };
    auto sum = [&](ArrayRef<std::pair<Value, int64_t>> terms, int64_t scaleDown,
                   int64_t base) {
      Value result = constant(base);
      for (auto [term, k] : terms) {
        Value scaled = k / scaleDown == 1
                           ? term
                           : arith::MulIOp::create(rewriter, loc, term,
                                                   constant(k / scaleDown));
        result = arith::AddIOp::create(rewriter, loc, result, scaled);
      }
      return result;
    };
    // a - (a // d) * d: the users' muli by d, subtracted from a.
    for (Operation *user : llvm::to_vector(op->getUsers())) {
      auto mul = dyn_cast<arith::MulIOp>(user);
      APInt k;
      if (!mul || !(matchPattern(mul.getRhs(), m_ConstantInt(&k)) ||
                    matchPattern(mul.getLhs(), m_ConstantInt(&k))) ||
          k.getSExtValue() != d)
        continue;
      for (Operation *mulUser : llvm::to_vector(mul->getUsers())) {
        auto sub = dyn_cast<arith::SubIOp>(mulUser);
        if (sub && sub.getLhs() == op.getLhs() &&
            sub.getRhs() == mul.getResult()) {
          rewriter.setInsertionPoint(sub);
          rewriter.replaceOp(sub, sum(small, 1, form.constant - q0 * d));
        }
      }
    }
    rewriter.setInsertionPoint(op);
    rewriter.replaceOp(op, sum(divisible, d, q0));
    return success();
  }

  DataFlowSolver &solver;
};

/// In a loop, x + (y + c) with a constant c and y + c the same in every
/// iteration becomes (x + y) + c. A thread's element of a `T.Parallel` is
/// its base plus a constant, and LLVM hoists every loop-invariant value out
/// of the loop and holds it in a register across it: in `k * 64 + j` each
/// element's `base + c` (the causal mask of the attention backward held 16
/// such 64-bit values), and in a shared address `view + (base + c)` each
/// element's sum. With the constant outside, `k * 64 + base` or
/// `view + base` is one value and each element adds its constant (an
/// immediate of the load or store). The loop bodies stay the same size;
/// the D=128 causal backward's spill went from 276 to 84 bytes.
struct ConstantOutermost : OpRewritePattern<arith::AddIOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::AddIOp op,
                                PatternRewriter &rewriter) const override {
    Operation *loop = op->getParentOfType<LoopLikeOpInterface>();
    if (!loop)
      return failure();
    for (auto [x, inner] : {std::pair(op.getLhs(), op.getRhs()),
                            std::pair(op.getRhs(), op.getLhs())}) {
      auto add = inner.getDefiningOp<arith::AddIOp>();
      if (!add || matchPattern(x, m_Constant()) ||
          !tile::isLoopInvariant(inner, loop, /*maxDepth=*/8))
        continue;
      for (auto [y, c] : {std::pair(add.getLhs(), add.getRhs()),
                          std::pair(add.getRhs(), add.getLhs())}) {
        if (!matchPattern(c, m_Constant()) || matchPattern(y, m_Constant()))
          continue;
        // (Wrapping addition is associative; overflow flags are dropped.)
        Value sum = arith::AddIOp::create(rewriter, op.getLoc(), x, y);
        rewriter.replaceOpWithNewOp<arith::AddIOp>(op, sum, c);
        return success();
      }
    }
    return failure();
  }
};

/// `v` as a constant in [0, 2^63), if it is one.
static std::optional<uint64_t> nonNegativeConstant(Value v) {
  APInt c;
  if (!matchPattern(v, m_ConstantInt(&c)) || c.isNegative() ||
      c.getActiveBits() > 63)
    return std::nullopt;
  return c.getZExtValue();
}

/// The bits an index value may have set, from its arithmetic down to
/// constants and values the integer range analysis bounds (a thread id,
/// a lane): a value whose bits are all known to lie in the mask. All ones
/// where nothing is known or the value may be negative. Memoized per value;
/// `forget` drops a value whose op is erased (its address may be reused).
class PossibleBits {
public:
  explicit PossibleBits(DataFlowSolver &solver) : solver(solver) {}

  static constexpr uint64_t all = ~uint64_t(0);

  /// Every bit up to x's highest: the mask of the values 0..x.
  static uint64_t fill(uint64_t x) {
    return x == 0 ? 0 : all >> llvm::countl_zero(x);
  }

  /// The bits of a + b given those of a and b.
  static uint64_t sumBits(uint64_t a, uint64_t b) {
    uint64_t sum;
    if ((a & b) == 0)
      return a | b; // no carries
    if (__builtin_add_overflow(a, b, &sum))
      return all;
    return fill(sum);
  }

  uint64_t of(Value v, int depth = 0) {
    if (auto it = memo.find(v); it != memo.end())
      return it->second;
    uint64_t bits = compute(v, depth);
    // (A value past the depth limit is not memoized: a shallower query
    // may see through it.)
    if (bits != all || depth == 0)
      memo[v] = bits;
    return bits;
  }

  void forget(Value v) { memo.erase(v); }

private:
  uint64_t compute(Value v, int depth) {
    if (!v.getType().isIndex())
      return all;
    if (std::optional<uint64_t> c = nonNegativeConstant(v))
      return *c;
    Operation *def = v.getDefiningOp();
    if (def && depth < 16) {
      auto operand = [&](unsigned i) { return of(def->getOperand(i), depth + 1); };
      std::optional<uint64_t> rhs =
          def->getNumOperands() == 2 ? nonNegativeConstant(def->getOperand(1))
                                     : std::nullopt;
      if (isa<arith::AddIOp>(def))
        return sumBits(operand(0), operand(1));
      if (isa<arith::MulIOp>(def)) {
        std::optional<uint64_t> k =
            rhs ? rhs : nonNegativeConstant(def->getOperand(0));
        if (k) {
          uint64_t x = operand(rhs ? 0 : 1), product;
          if (*k != 0 && llvm::isPowerOf2_64(*k)) {
            unsigned s = llvm::Log2_64(*k);
            return llvm::countl_zero(x) > s ? x << s : all;
          }
          return __builtin_mul_overflow(x, *k, &product) ? all : fill(product);
        }
      }
      if (isa<arith::ShLIOp>(def) && rhs && *rhs < 64) {
        uint64_t x = operand(0);
        return llvm::countl_zero(x) > *rhs ? x << *rhs : all;
      }
      if (isa<arith::DivUIOp>(def) && rhs && *rhs != 0)
        return llvm::isPowerOf2_64(*rhs) ? operand(0) >> llvm::Log2_64(*rhs)
                                         : fill(operand(0) / *rhs);
      if (isa<arith::ShRUIOp>(def) && rhs && *rhs < 64)
        return operand(0) >> *rhs;
      if (isa<arith::RemUIOp>(def) && rhs && *rhs != 0)
        return llvm::isPowerOf2_64(*rhs)
                   ? operand(0) & (*rhs - 1)
                   : fill(std::min(fill(operand(0)), *rhs - 1));
      if (isa<arith::AndIOp>(def))
        return operand(0) & operand(1);
      if (isa<arith::OrIOp, arith::XOrIOp>(def))
        return operand(0) | operand(1);
    }
    auto *lattice = solver.lookupState<dataflow::IntegerValueRangeLattice>(v);
    if (!lattice || lattice->getValue().isUninitialized())
      return all;
    const ConstantIntRanges &r = lattice->getValue().getValue();
    if (r.smin().isNegative() || r.umax().getActiveBits() > 62)
      return all;
    return fill(r.umax().getZExtValue());
  }

  DataFlowSolver &solver;
  DenseMap<Value, uint64_t> memo;
};

/// The constant operand of a binary op, and the other operand.
static std::optional<std::pair<Value, uint64_t>> splitConstant(Operation *op) {
  for (unsigned i : {1u, 0u}) {
    std::optional<uint64_t> c = nonNegativeConstant(op->getOperand(i));
    if (c && !matchPattern(op->getOperand(1 - i), m_Constant()))
      return std::make_pair(op->getOperand(1 - i), *c);
  }
  return std::nullopt;
}

/// `v` as `t + c` with a constant c none of whose bits t may have set:
/// then the sum is `t | c` (no carry), and is `t ^ c` as well. `v` is
/// `t + c` itself, or `a + (y + c)` with t = a + y (built on demand: sums
/// outside loops keep their shape, see ConstantOutermost).
struct DisjointSum {
  Value t, a, y;
  uint64_t c = 0;
  Value build(PatternRewriter &rewriter, Location loc) const {
    return t ? t : arith::AddIOp::create(rewriter, loc, a, y).getResult();
  }
};

static std::optional<DisjointSum> disjointSum(Value v, PossibleBits &bits) {
  auto add = v.getDefiningOp<arith::AddIOp>();
  if (!add || !add.getType().isIndex())
    return std::nullopt;
  if (auto split = splitConstant(add)) {
    if (bits.of(split->first) & split->second)
      return std::nullopt;
    return DisjointSum{split->first, Value(), Value(), split->second};
  }
  for (auto [a, inner] : {std::pair(add.getLhs(), add.getRhs()),
                          std::pair(add.getRhs(), add.getLhs())}) {
    auto innerAdd = inner.getDefiningOp<arith::AddIOp>();
    if (!innerAdd)
      continue;
    auto split = splitConstant(innerAdd);
    if (!split || (PossibleBits::sumBits(bits.of(a), bits.of(split->first)) &
                   split->second))
      continue;
    return DisjointSum{Value(), a, split->first, split->second};
  }
  return std::nullopt;
}

/// A swizzled shared address is `a ^ f(a)`, f reading the bits of the row
/// (emitSwizzleOffset), and a fragment element's `a` is the thread's base
/// plus a constant whose bits the base never sets (another column group,
/// another eight rows). The XOR is linear over such bits, so the element's
/// address is the thread's swizzled base XOR a constant; LLVM otherwise
/// hoists every element's full address out of the loop into a register of
/// its own (the D=128 backward's 16 dQ stores held 16). These patterns move
/// bit-disjoint constants outward through what the swizzle applies:
///   (t + c) udiv 2^s  ->  (t udiv 2^s) + (c >> s)
///   (t + c) urem 2^s  ->  (t urem 2^s) + (c & (2^s - 1))
///   (t + c) * k       ->  t * k + c * k                 (any t, c)
///   (t + c) ^ y       ->  (t ^ y) ^ c
///   (t ^ c) ^ y       ->  (t ^ y) ^ c
/// and last splits `x ^ c` into `(x ^ (c & bits(x))) + (c & ~bits(x))`: the
/// part of c above x's bits adds (an immediate of the access), and only
/// the column bits stay an XOR (one register per distinct value).
struct DisjointConstantOut : RewritePattern {
  DisjointConstantOut(MLIRContext *ctx, PossibleBits &bits)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx), bits(bits) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (op->getNumResults() != 1 || !op->getResult(0).getType().isIndex() ||
        !isa<arith::DivUIOp, arith::RemUIOp, arith::MulIOp, arith::XOrIOp>(op))
      return failure();
    Location loc = op->getLoc();
    Type type = op->getResult(0).getType();
    auto constant = [&](uint64_t value) -> Value {
      return arith::ConstantOp::create(
          rewriter, loc, type, rewriter.getIndexAttr(int64_t(value)));
    };
    if (isa<arith::DivUIOp, arith::RemUIOp>(op)) {
      std::optional<uint64_t> d = nonNegativeConstant(op->getOperand(1));
      if (!d || !llvm::isPowerOf2_64(*d))
        return failure();
      auto sum = disjointSum(op->getOperand(0), bits);
      if (!sum)
        return failure();
      uint64_t k = *d;
      Value t = sum->build(rewriter, loc);
      uint64_t c = sum->c;
      if (isa<arith::DivUIOp>(op)) {
        Value q = arith::DivUIOp::create(rewriter, loc, t, op->getOperand(1));
        rewriter.replaceOpWithNewOp<arith::AddIOp>(op, q, constant(c >> llvm::Log2_64(k)));
      } else {
        Value r = arith::RemUIOp::create(rewriter, loc, t, op->getOperand(1));
        rewriter.replaceOpWithNewOp<arith::AddIOp>(op, r, constant(c & (k - 1)));
      }
      return success();
    }
    if (isa<arith::MulIOp>(op)) {
      auto outer = splitConstant(op);
      if (!outer)
        return failure();
      auto add = outer->first.getDefiningOp<arith::AddIOp>();
      if (!add)
        return failure();
      auto inner = splitConstant(add);
      if (!inner)
        return failure();
      // (Wrapping arithmetic distributes; overflow flags are dropped.)
      Value scaled = arith::MulIOp::create(rewriter, loc, inner->first,
                                           constant(outer->second));
      rewriter.replaceOpWithNewOp<arith::AddIOp>(
          op, scaled, constant(inner->second * outer->second));
      return success();
    }
    // xori.
    for (unsigned i : {0u, 1u}) {
      Value x = op->getOperand(i), y = op->getOperand(1 - i);
      if (matchPattern(y, m_Constant()))
        continue;
      Value base;
      uint64_t c = 0;
      if (std::optional<DisjointSum> sum = disjointSum(x, bits)) {
        base = sum->build(rewriter, loc);
        c = sum->c;
      } else if (auto inner = x.getDefiningOp<arith::XOrIOp>()) {
        if (auto split = splitConstant(inner))
          std::tie(base, c) = *split;
      }
      if (!base)
        continue;
      Value rest = arith::XOrIOp::create(rewriter, loc, base, y);
      rewriter.replaceOpWithNewOp<arith::XOrIOp>(op, rest, constant(c));
      return success();
    }
    auto split = splitConstant(op);
    if (!split)
      return failure();
    auto [x, c] = *split;
    if (auto inner = x.getDefiningOp<arith::XOrIOp>()) {
      if (auto innerSplit = splitConstant(inner)) {
        Value merged = constant(innerSplit->second ^ c);
        rewriter.replaceOpWithNewOp<arith::XOrIOp>(op, innerSplit->first, merged);
        return success();
      }
    }
    uint64_t above = c & ~bits.of(x);
    if (above == 0)
      return failure();
    Value low = (c & ~above) == 0
                    ? x
                    : arith::XOrIOp::create(rewriter, loc, x, constant(c & ~above))
                          .getResult();
    rewriter.replaceOpWithNewOp<arith::AddIOp>(op, low, constant(above));
    return success();
  }

  PossibleBits &bits;
};

/// Forgets the ranges of erased values: a value created later at the same
/// address must not inherit them.
struct ForgetErased : public RewriterBase::Listener {
  ForgetErased(DataFlowSolver &solver, PossibleBits &bits)
      : solver(solver), bits(bits) {}
  void notifyOperationErased(Operation *op) override {
    solver.eraseState(solver.getProgramPointAfter(op));
    for (Value result : op->getResults()) {
      solver.eraseState(result);
      bits.forget(result);
    }
  }
  DataFlowSolver &solver;
  PossibleBits &bits;
};

struct TileFoldDivisibleIndexPass
    : public tile::impl::TileFoldDivisibleIndexBase<
          TileFoldDivisibleIndexPass> {
  void runOnOperation() override {
    // Ranges of the values present now (a thread id's digit, a lane); the
    // values the rewrites create have none and are not folded through.
    DataFlowSolver solver;
    dataflow::loadBaselineAnalyses(solver);
    solver.load<dataflow::IntegerRangeAnalysis>();
    if (failed(solver.initializeAndRun(getOperation())))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldDivisibleFloorDiv>(&getContext(), solver);
    patterns.add<ConstantOutermost>(&getContext());
    PossibleBits bits(solver);
    patterns.add<DisjointConstantOut>(&getContext(), bits);
    arith::AddIOp::getCanonicalizationPatterns(patterns, &getContext());
    arith::MulIOp::getCanonicalizationPatterns(patterns, &getContext());
    arith::SubIOp::getCanonicalizationPatterns(patterns, &getContext());
    ForgetErased forget(solver, bits);
    GreedyRewriteConfig config;
    config.setListener(&forget);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
