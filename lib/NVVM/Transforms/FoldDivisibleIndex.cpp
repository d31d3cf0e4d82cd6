//===- FoldDivisibleIndex.cpp - a // d and a % d of multiples of d --------===//
//
// Part of tilelang-mlir.
//
// See the description of tile-fold-divisible-index in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/NVVM/Transforms/Passes.h"

#include "mlir/Analysis/DataFlow/IntegerRangeAnalysis.h"
#include "mlir/Analysis/DataFlow/Utils.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
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

  /// Whether `v` has the same value in every iteration of `loop`, as LLVM's
  /// LICM would find: defined outside it, or by a pure op without regions
  /// on such values (a few levels deep).
  static bool invariant(Value v, Operation *loop, int depth = 0) {
    if (!loop->isAncestor(v.getParentBlock()->getParentOp()))
      return true;
    Operation *def = v.getDefiningOp();
    if (!def || depth > 8 || def->getNumRegions() || !isPure(def))
      return false;
    return llvm::all_of(def->getOperands(), [&](Value operand) {
      return invariant(operand, loop, depth + 1);
    });
  }

  LogicalResult matchAndRewrite(arith::AddIOp op,
                                PatternRewriter &rewriter) const override {
    Operation *loop = op->getParentOfType<LoopLikeOpInterface>();
    if (!loop)
      return failure();
    for (auto [x, inner] : {std::pair(op.getLhs(), op.getRhs()),
                            std::pair(op.getRhs(), op.getLhs())}) {
      auto add = inner.getDefiningOp<arith::AddIOp>();
      if (!add || matchPattern(x, m_Constant()) || !invariant(inner, loop))
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

/// Forgets the ranges of erased values: a value created later at the same
/// address must not inherit them.
struct ForgetErased : public RewriterBase::Listener {
  explicit ForgetErased(DataFlowSolver &solver) : solver(solver) {}
  void notifyOperationErased(Operation *op) override {
    solver.eraseState(solver.getProgramPointAfter(op));
    for (Value result : op->getResults())
      solver.eraseState(result);
  }
  DataFlowSolver &solver;
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
    arith::AddIOp::getCanonicalizationPatterns(patterns, &getContext());
    arith::MulIOp::getCanonicalizationPatterns(patterns, &getContext());
    arith::SubIOp::getCanonicalizationPatterns(patterns, &getContext());
    ForgetErased forget(solver);
    GreedyRewriteConfig config;
    config.setListener(&forget);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
