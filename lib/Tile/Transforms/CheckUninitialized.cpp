//===- CheckUninitialized.cpp - reads of a thread's buffer before a write -===//
//
// Part of tilelang-mlir.
//
// Fragments, local buffers and vars start undefined: a program that reads
// one before writing it (an accumulation `acc[i] += x` with no T.clear
// first, a T.gemm or T.reduce_* that accumulates into a buffer nothing
// cleared) computes with whatever the registers held. A warning at the
// read names it; the IR is not changed.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILECHECKUNINITIALIZED
#include "dialects/Tile/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

namespace {

/// What `alloc` allocates, in the words of the program (T.alloc_*), or
/// null where it is not a thread's own buffer.
const char *kindOf(Operation *alloc) {
  if (isa<AllocFragmentOp>(alloc))
    return "fragment";
  if (isa<AllocLocalOp>(alloc))
    return "local";
  if (isa<AllocVarOp>(alloc))
    return "var";
  return nullptr;
}

/// Whether `op` sits under an scf.if that is inside the region holding
/// `alloc` (a guarded read).
bool guarded(Operation *op, Operation *alloc) {
  Region *home = alloc->getParentRegion();
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp()) {
    if (isa<scf::IfOp>(p))
      return true;
    if (p->getParentRegion() == home || !p->getParentRegion())
      return false;
    if (p->isProperAncestor(alloc))
      return false;
  }
  return false;
}

/// Whether `op`'s use of `buffer` reads its elements: a load (not the read
/// of a read-modify-write, part of a write), or a tile operation's input:
/// a copy's source, a gemm's operands (its accumulator unless
/// `clear_accum`), a reduction's source (its destination unless `clear`).
/// Other uses (a view, a call, a store) are not reads here.
bool reads(Operation *op, Value buffer) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return load.getMemRef() == buffer && !load->hasAttr(kPartialWriteAttr);
  if (auto copy = dyn_cast<CopyOp>(op))
    return copy.getSrc() == buffer && copy.getDst() != buffer;
  if (auto gemm = dyn_cast<GemmOp>(op))
    return gemm.getA() == buffer || gemm.getB() == buffer ||
           (gemm.getC() == buffer && !gemm.getClearAccum());
  if (auto reduce = dyn_cast<ReduceOp>(op))
    return reduce.getSrc() == buffer ||
           (reduce.getDst() == buffer && !reduce.getClear());
  return false;
}

struct TileCheckUninitializedPass
    : public tile::impl::TileCheckUninitializedBase<
          TileCheckUninitializedPass> {
  using Base::Base;

  void runOnOperation() override {
    // The buffers no use has been seen of yet, in program order.
    llvm::DenseSet<Value> untouched;
    getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) {
      for (Value operand : op->getOperands()) {
        if (!untouched.erase(operand))
          continue;
        Operation *alloc = operand.getDefiningOp();
        if (!reads(op, operand) || guarded(op, alloc))
          continue;
        InFlightDiagnostic diag = op->emitWarning()
                                  << "reads a T.alloc_" << kindOf(alloc)
                                  << " buffer before anything writes it: its "
                                     "elements start undefined (what the "
                                     "registers held); write it first "
                                     "(T.clear / T.fill, or a store)";
        diag.attachNote(alloc->getLoc()) << "allocated here";
      }
      if (kindOf(op))
        untouched.insert(op->getResult(0));
    });
    markAllAnalysesPreserved();
  }
};

} // namespace
