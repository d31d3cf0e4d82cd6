//===- FoldDivisibleIndex.cpp - a // d and a % d of multiples of d --------===//
//
// Part of tilelang-mlir.
//
// See the description of tile-fold-divisible-index in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILEFOLDDIVISIBLEINDEX
#include "dialects/Conversion/Passes.h.inc"
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

/// floordivsi(a, d) with a = sum k_i * t_i + c and every k_i a multiple of
/// d > 0: sum (k_i / d) * t_i + floor(c / d). The remainder a - (a // d) * d
/// (how `%` reaches here) is the constant c mod d; it is folded first,
/// while its pattern is still visible.
struct FoldDivisibleFloorDiv : OpRewritePattern<arith::FloorDivSIOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::FloorDivSIOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isIndex())
      return failure();
    APInt divisor;
    if (!matchPattern(op.getRhs(), m_ConstantInt(&divisor)))
      return failure();
    int64_t d = divisor.getSExtValue();
    LinearForm form;
    if (d <= 1 || !decompose(op.getLhs(), 1, form) ||
        llvm::any_of(form.terms, [&](auto term) { return term.second % d; }))
      return failure();
    Location loc = op.getLoc();
    Type type = op.getType();
    auto constant = [&](int64_t value) -> Value {
      return arith::ConstantOp::create(rewriter, loc, type,
                                       rewriter.getIndexAttr(value));
    };
    // a - (a // d) * d: the users' muli by d, subtracted from a.
    int64_t mod = form.constant - floorDiv(form.constant, d) * d;
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
          rewriter.replaceOp(sub, constant(mod));
        }
      }
    }
    rewriter.setInsertionPoint(op);
    Value result = constant(floorDiv(form.constant, d));
    for (auto [term, k] : form.terms) {
      Value scaled = k / d == 1 ? term
                                : arith::MulIOp::create(rewriter, loc, term,
                                                        constant(k / d));
      result = arith::AddIOp::create(rewriter, loc, result, scaled);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct TileFoldDivisibleIndexPass
    : public tile::impl::TileFoldDivisibleIndexBase<
          TileFoldDivisibleIndexPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldDivisibleFloorDiv>(&getContext());
    arith::AddIOp::getCanonicalizationPatterns(patterns, &getContext());
    arith::MulIOp::getCanonicalizationPatterns(patterns, &getContext());
    arith::SubIOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
