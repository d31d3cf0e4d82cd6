//===- PrintLayouts.cpp - inferred layouts as text tables ----------------===//
//
// Part of tilelang-mlir.
//
// The text form of tl.tools.layout_text, without Python: one table per
// fragment (thread:register of each element) and per shared buffer (the
// element offset after panels and swizzle) that carries an inferred layout.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Transforms/Passes.h"
#include "dialects/Tile/Utils/LayoutUtils.h"

#include "mlir/IR/AsmState.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "tile-print-layouts"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILEPRINTLAYOUTS
#include "dialects/Tile/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

namespace {

/// The cells of a table: `cells[r][c]` is the row-major element index shown
/// there (-1: none), with the labels of rows and columns.
struct Grid {
  SmallVector<SmallVector<int64_t>> cells;
  SmallVector<std::string> rowLabels, colLabels;
};

/// Rank 2: rows and columns. Rank > 2: one row per leading index ("i,j").
/// Rank 1: one row, wrapped at 32 elements beyond 64. Rank 0: one cell.
Grid makeGrid(ArrayRef<int64_t> shape) {
  Grid g;
  if (shape.empty()) {
    g.cells.push_back({0});
    g.rowLabels.push_back("");
    g.colLabels.push_back("");
    return g;
  }
  if (shape.size() == 1) {
    int64_t n = shape[0];
    int64_t width = n <= 64 ? n : 32;
    for (int64_t start = 0; start < n; start += width) {
      SmallVector<int64_t> row;
      for (int64_t c = 0; c < width; ++c)
        row.push_back(start + c < n ? start + c : -1);
      g.cells.push_back(row);
      g.rowLabels.push_back(std::to_string(start));
    }
    for (int64_t c = 0; c < width; ++c)
      g.colLabels.push_back(n > width ? "+" + std::to_string(c)
                                      : std::to_string(c));
    return g;
  }
  int64_t cols = shape.back();
  int64_t rows = 1;
  for (int64_t d : shape.drop_back())
    rows *= d;
  for (int64_t r = 0; r < rows; ++r) {
    // The leading index of row r, for its label.
    SmallVector<int64_t> lead(shape.size() - 1);
    int64_t rest = r;
    for (int64_t d = shape.size() - 2; d >= 0; --d) {
      lead[d] = rest % shape[d];
      rest /= shape[d];
    }
    g.rowLabels.push_back(llvm::join(
        llvm::map_range(lead, [](int64_t x) { return std::to_string(x); }),
        ","));
    SmallVector<int64_t> row;
    for (int64_t c = 0; c < cols; ++c)
      row.push_back(r * cols + c);
    g.cells.push_back(row);
  }
  for (int64_t c = 0; c < cols; ++c)
    g.colLabels.push_back(std::to_string(c));
  return g;
}

void printTable(raw_ostream &os, StringRef title, const Grid &grid,
                function_ref<std::string(int64_t)> cell) {
  SmallVector<SmallVector<std::string>> texts;
  size_t width = 0, lead = 0;
  for (const SmallVector<int64_t> &row : grid.cells) {
    SmallVector<std::string> line;
    for (int64_t e : row) {
      line.push_back(e >= 0 ? cell(e) : "");
      width = std::max(width, line.back().size());
    }
    texts.push_back(std::move(line));
  }
  for (const std::string &c : grid.colLabels)
    width = std::max(width, c.size());
  for (const std::string &r : grid.rowLabels)
    lead = std::max(lead, r.size());
  os << title << "\n";
  os.indent(lead) << " |";
  for (const std::string &c : grid.colLabels)
    os << " " << llvm::right_justify(c, width);
  os << "\n";
  for (auto [label, row] : llvm::zip(grid.rowLabels, texts)) {
    std::string line;
    llvm::raw_string_ostream ls(line);
    ls << llvm::right_justify(label, lead) << " |";
    for (const std::string &t : row)
      ls << " " << llvm::right_justify(t, width);
    os << StringRef(line).rtrim() << "\n";
  }
}

std::string typeText(MemRefType type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (int64_t d : type.getShape())
    os << d << "x";
  os << type.getElementType();
  return text;
}

/// How the replicas of each element spread over threads: "thread + S * k"
/// when every element's replica k sits S * k threads after replica 0 (the
/// words of tl.tools.layout_text).
std::string replicaSummary(FragmentLayoutAttr layout, ArrayRef<int64_t> shape,
                           int64_t numElements) {
  int64_t r = layout.getReplicate();
  SmallVector<int64_t> offsets;
  for (int64_t k = 0; k < r; ++k) {
    std::optional<int64_t> common;
    for (int64_t e = 0; e < numElements; ++e) {
      SmallVector<int64_t> idx = delinearize(e, shape);
      auto base = layout.apply(idx, 0), here = layout.apply(idx, k);
      if (!base || !here)
        return std::to_string(r) + " replicas of each element";
      int64_t off = here->first - base->first;
      if (common && *common != off)
        return std::to_string(r) + " replicas of each element";
      common = off;
    }
    offsets.push_back(common.value_or(0));
  }
  int64_t step = r > 1 ? offsets[1] - offsets[0] : 0;
  for (int64_t k = 1; k < r; ++k)
    if (offsets[k] - offsets[k - 1] != step)
      return "replica k in thread + " +
             llvm::join(llvm::map_range(offsets,
                                        [](int64_t x) {
                                          return std::to_string(x);
                                        }),
                        "/");
  std::string scaled = step == 1 ? "k" : std::to_string(step) + " * k";
  return "replica k in thread + " + scaled + ", k < " + std::to_string(r);
}

void printFragment(raw_ostream &os, AllocFragmentOp alloc, AsmState &state) {
  FragmentLayoutAttr layout = alloc.getLayoutAttr();
  MemRefType type = alloc.getType();
  ArrayRef<int64_t> shape = type.getShape();
  int64_t n = type.getNumElements();
  SmallVector<std::pair<int64_t, int64_t>> where;
  int64_t regs = 0;
  for (int64_t k = 0; k < layout.getReplicate(); ++k) {
    for (int64_t e = 0; e < n; ++e) {
      std::optional<std::pair<int64_t, int64_t>> tr =
          layout.apply(delinearize(e, shape), k);
      // The allocation's verifier rejects layouts that divide by zero.
      assert(tr && "layout divides by zero");
      if (k == 0)
        where.push_back(*tr);
      regs = std::max(regs, tr->second + 1);
    }
  }
  std::string title;
  llvm::raw_string_ostream ts(title);
  alloc.getResult().printAsOperand(ts, state);
  ts << " fragment " << typeText(type) << ": " << layout.getThreads()
     << " threads, " << regs << " register" << (regs == 1 ? "" : "s")
     << "/thread";
  if (layout.getReplicate() > 1)
    ts << ", replicate " << layout.getReplicate() << " ("
       << replicaSummary(layout, shape, n) << "; replica 0 shown)";
  ts << "; cells are thread:register";
  printTable(os, title, makeGrid(shape), [&](int64_t e) {
    return std::to_string(where[e].first) + ":" +
           std::to_string(where[e].second);
  });
}

void printShared(raw_ostream &os, AllocSharedOp alloc, AsmState &state) {
  SwizzleAttr swizzle = alloc.getSwizzleAttr();
  MemRefType type = alloc.getType();
  ArrayRef<int64_t> shape = type.getShape();
  int64_t elementBytes =
      std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  int64_t bytes = swizzle.getBytes();
  std::string title;
  llvm::raw_string_ostream ts(title);
  alloc.getResult().printAsOperand(ts, state);
  ts << " shared " << typeText(type) << ": ";
  if (bytes)
    ts << "swizzle " << bytes << " B";
  else
    ts << "no swizzle";
  if (int64_t span = sharedPanelElements(shape, elementBytes, bytes))
    ts << ", panels of " << span << " columns";
  if (swizzle.getPad())
    ts << ", pad " << swizzle.getPad()
       << " (not implemented by the GPU lowerings)";
  ts << "; cells are the element offset (panels and swizzle applied)";
  printTable(os, title, makeGrid(shape), [&](int64_t e) {
    return std::to_string(
        sharedLinear(shape, delinearize(e, shape), elementBytes, bytes));
  });
}

struct TilePrintLayoutsPass
    : public tile::impl::TilePrintLayoutsBase<TilePrintLayoutsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Names as in the printed module (numbered per function).
    AsmState state(func);
    raw_ostream &os = llvm::outs();
    bool header = false;
    func.walk([&](Operation *op) {
      auto fragment = dyn_cast<AllocFragmentOp>(op);
      auto shared = dyn_cast<AllocSharedOp>(op);
      if (!(fragment && fragment.getLayoutAttr()) &&
          !(shared && shared.getSwizzleAttr()))
        return;
      if (!header)
        os << "// tile-print-layouts: @" << func.getName() << "\n";
      header = true;
      if (shared)
        printShared(os, shared, state);
      else
        printFragment(os, fragment, state);
    });
    os.flush();
    markAllAnalysesPreserved();
  }
};

} // namespace
