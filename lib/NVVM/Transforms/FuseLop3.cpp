//===- FuseLop3.cpp - (x & M) | C and (x & M) ^ C as one lop3 -------------===//
//
// Part of tilelang-mlir.
//
// See the description of tile-fuse-lop3 in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/NVVM/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include "llvm/Support/Format.h"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILEFUSELOP3
#include "dialects/NVVM/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;

namespace {

/// lop3's truth table for f(a, b, c), a = 0xF0, b = 0xCC, c = 0xAA.
constexpr uint8_t kA = 0xF0, kB = 0xCC, kC = 0xAA;

/// Whether every use of the 32-bit `word` takes one of its 16-bit halves:
/// trunci to i16 (the low half) or shrui by 16 whose only uses are such
/// truncations (the high half).
bool allHalfExtractions(Value word) {
  auto isLowHalf = [](Operation *user) {
    auto trunc = dyn_cast<arith::TruncIOp>(user);
    return trunc && trunc.getType().isInteger(16);
  };
  return !word.use_empty() &&
         llvm::all_of(word.getUsers(), [&](Operation *user) {
           if (isLowHalf(user))
             return true;
           auto shift = dyn_cast<arith::ShRUIOp>(user);
           APInt amount;
           return shift && shift.getLhs() == word &&
                  matchPattern(shift.getRhs(), m_ConstantInt(&amount)) &&
                  amount == 16 && !shift->use_empty() &&
                  llvm::all_of(shift->getUsers(), isLowHalf);
         });
}

struct TileFuseLop3Pass
    : public tile::impl::TileFuseLop3Base<TileFuseLop3Pass> {
  void runOnOperation() override {
    SmallVector<Operation *> candidates;
    getOperation()->walk([&](Operation *op) {
      if (isa<arith::OrIOp, arith::XOrIOp>(op) &&
          op->getResult(0).getType().isInteger(32))
        candidates.push_back(op);
    });
    for (Operation *op : candidates) {
      // outer(and(x, M), C) with M and C constants, the and used only here.
      APInt c, m;
      Value inner;
      if (matchPattern(op->getOperand(1), m_ConstantInt(&c)))
        inner = op->getOperand(0);
      else if (matchPattern(op->getOperand(0), m_ConstantInt(&c)))
        inner = op->getOperand(1);
      else
        continue;
      auto andOp = inner.getDefiningOp<arith::AndIOp>();
      if (!andOp || !andOp->hasOneUse())
        continue;
      Value x;
      if (matchPattern(andOp.getRhs(), m_ConstantInt(&m)))
        x = andOp.getLhs();
      else if (matchPattern(andOp.getLhs(), m_ConstantInt(&m)))
        x = andOp.getRhs();
      else
        continue;
      if (matchPattern(x, m_Constant()))
        continue; // all constant: the folder's business
      // Only at the end of a chain of integer ops: where the result is
      // shifted or combined further, LLVM folds the whole chain (into a
      // prmt or different masks), which the opaque lop3 would prevent.
      // Taking its 16-bit halves apart (a pair of float16 built in one
      // word) does not count: LLVM would narrow the chain into 16-bit lanes
      // and pack them again.
      if (!allHalfExtractions(op->getResult(0)) &&
          llvm::any_of(op->getUsers(), [](Operation *user) {
            return isa<arith::ShLIOp, arith::ShRUIOp, arith::ShRSIOp,
                       arith::AndIOp, arith::OrIOp, arith::XOrIOp,
                       arith::AddIOp, arith::SubIOp, arith::MulIOp,
                       arith::TruncIOp, arith::ExtUIOp, arith::ExtSIOp>(user);
          }))
        continue;
      uint8_t lut = isa<arith::OrIOp>(op) ? ((kA & kB) | kC) : ((kA & kB) ^ kC);
      // The mask is an immediate of the instruction; C goes in a register
      // (a SASS LOP3 has room for one immediate: with both as immediates
      // ptxas emits two LOP3s).
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "lop3.b32 $0, $1, "
         << llvm::format_hex(m.getZExtValue(), 10) << ", $2, "
         << llvm::format_hex(lut, 4) << ";";
      OpBuilder b(op);
      Location loc = op->getLoc();
      Value cValue = arith::ConstantOp::create(
          b, loc, b.getI32IntegerAttr(static_cast<int32_t>(c.getZExtValue())));
      Value fused =
          LLVM::InlineAsmOp::create(
              b, loc, b.getI32Type(), ValueRange{x, cValue}, text, "=r,r,r",
              /*has_side_effects=*/false, /*is_align_stack=*/false,
              LLVM::tailcallkind::TailCallKind::None,
              LLVM::AsmDialectAttr::get(b.getContext(),
                                        LLVM::AsmDialect::AD_ATT),
              ArrayAttr())
              .getRes();
      op->getResult(0).replaceAllUsesWith(fused);
      op->erase();
      andOp->erase();
    }
  }
};

} // namespace
