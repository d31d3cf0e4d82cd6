//===- FragmentAccess.cpp - how a T.Parallel indexes a fragment -----------===//
//
// Part of tilelang-mlir.
//
// The forms of a fragment index inside a tile.parallel that layout
// inference and the GPU lowering agree on (LayoutUtils.h): maps of the
// loop's variables (matchIndexMap), loop variables shifted by an enclosing
// loop's (matchShiftedAccess), and indices uniform over the loop
// (matchUniformAccess), with the registers each reaches.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/Utils/LayoutUtils.h"
#include "dialects/Tile/Utils/ControlFlowUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::tile;

std::optional<IndexMap> mlir::tile::matchIndexMap(Value index, Block *body) {
  auto constant = [](Value v) -> std::optional<int64_t> {
    APInt c;
    if (matchPattern(v, m_ConstantInt(&c)) && c.getSExtValue() > 0)
      return c.getSExtValue();
    return std::nullopt;
  };
  // x op c for a positive constant c: (x, c); for a commutative op the
  // constant may come first.
  auto splitConstant = [&](Operation *op, bool commutative)
      -> std::optional<std::pair<Value, int64_t>> {
    if (std::optional<int64_t> c = constant(op->getOperand(1)))
      return std::make_pair(op->getOperand(0), *c);
    if (commutative)
      if (std::optional<int64_t> c = constant(op->getOperand(0)))
        return std::make_pair(op->getOperand(1), *c);
    return std::nullopt;
  };
  // One term: ((iv floordiv div) mod mod) * mul.
  auto term = [&](Value v) -> std::optional<IndexTerm> {
    IndexTerm t{0, 1, 0, 1};
    if (auto mul = v.getDefiningOp<arith::MulIOp>()) {
      auto split = splitConstant(mul, /*commutative=*/true);
      if (!split)
        return std::nullopt;
      std::tie(v, t.mul) = *split;
    }
    if (isa_and_nonnull<arith::RemSIOp, arith::RemUIOp>(v.getDefiningOp())) {
      auto split = splitConstant(v.getDefiningOp(), /*commutative=*/false);
      if (!split)
        return std::nullopt;
      std::tie(v, t.mod) = *split;
    } else if (auto sub = v.getDefiningOp<arith::SubIOp>()) {
      // a - (a floordiv c) * c, how the canonicalizer rewrites a % c once
      // a floordiv c exists too.
      auto prod = sub.getRhs().getDefiningOp<arith::MulIOp>();
      auto quot = prod ? splitConstant(prod, /*commutative=*/true) : std::nullopt;
      auto div = quot ? quot->first.getDefiningOp<arith::FloorDivSIOp>() : nullptr;
      auto divisor = div ? splitConstant(div, /*commutative=*/false) : std::nullopt;
      if (!divisor || divisor->first != sub.getLhs() ||
          divisor->second != quot->second)
        return std::nullopt;
      t.mod = quot->second;
      v = sub.getLhs();
    }
    if (isa_and_nonnull<arith::FloorDivSIOp, arith::DivSIOp, arith::DivUIOp>(
            v.getDefiningOp())) {
      auto split = splitConstant(v.getDefiningOp(), /*commutative=*/false);
      if (!split)
        return std::nullopt;
      std::tie(v, t.div) = *split;
    }
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != body)
      return std::nullopt;
    t.dim = arg.getArgNumber();
    return t;
  };
  IndexMap map;
  SmallVector<Value> work = {index};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto add = v.getDefiningOp<arith::AddIOp>()) {
      work.push_back(add.getRhs());
      work.push_back(add.getLhs());
      continue;
    }
    std::optional<IndexTerm> t = term(v);
    if (!t || map.terms.size() >= 8)
      return std::nullopt;
    map.terms.push_back(*t);
  }
  return map;
}

std::optional<ShiftedIndex>
mlir::tile::matchShiftedIndex(Value index, Block *body, int64_t maxTrips) {
  auto constant = [](Value v) -> std::optional<int64_t> {
    APInt c;
    if (matchPattern(v, m_ConstantInt(&c)))
      return c.getSExtValue();
    return std::nullopt;
  };
  ShiftedIndex out{-1};
  // The terms of a sum (addi, and subi of a constant).
  SmallVector<std::pair<Value, int64_t>> work = {{index, 1}};
  while (!work.empty()) {
    auto [v, sign] = work.pop_back_val();
    if (auto add = v.getDefiningOp<arith::AddIOp>()) {
      work.push_back({add.getRhs(), sign});
      work.push_back({add.getLhs(), sign});
      continue;
    }
    if (auto sub = v.getDefiningOp<arith::SubIOp>()) {
      std::optional<int64_t> c = constant(sub.getRhs());
      if (!c)
        return std::nullopt;
      work.push_back({sub.getLhs(), sign});
      out.offset -= sign * *c;
      continue;
    }
    if (std::optional<int64_t> c = constant(v)) {
      out.offset += sign * *c;
      continue;
    }
    if (sign != 1)
      return std::nullopt;
    if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == body) {
      if (out.dim >= 0)
        return std::nullopt;
      out.dim = arg.getArgNumber();
      continue;
    }
    // k * s (or s) for the variable s of an enclosing scf.for.
    int64_t mul = 1;
    if (auto m = v.getDefiningOp<arith::MulIOp>()) {
      std::optional<int64_t> c = constant(m.getRhs());
      Value other = m.getLhs();
      if (!c) {
        c = constant(m.getLhs());
        other = m.getRhs();
      }
      if (!c)
        return std::nullopt;
      mul = *c;
      v = other;
    }
    auto arg = dyn_cast<BlockArgument>(v);
    auto loop = arg ? dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp())
                    : scf::ForOp();
    if (out.iv || !loop || loop.getInductionVar() != arg ||
        !loop->isProperAncestor(body->getParentOp()))
      return std::nullopt;
    std::optional<int64_t> lo = constant(loop.getLowerBound());
    std::optional<int64_t> hi = constant(loop.getUpperBound());
    std::optional<int64_t> step = constant(loop.getStep());
    if (!lo || !hi || !step || *step <= 0 || (*hi - *lo) > maxTrips * *step)
      return std::nullopt;
    out.iv = arg;
    out.mul = mul;
    for (int64_t i = *lo; i < *hi; i += *step)
      out.ivValues.push_back(i);
  }
  if (out.dim < 0 || (!out.iv && out.offset == 0) ||
      (out.iv && out.ivValues.empty()))
    return std::nullopt; // a plain variable is matchIndexMap's
  return out;
}

SmallVector<int64_t> mlir::tile::ShiftedAccess::at(ArrayRef<int64_t> idx,
                                       size_t combo) const {
  SmallVector<int64_t> out;
  for (const ShiftedIndex &s : indices) {
    int64_t v = idx[s.dim] + s.offset;
    if (s.iv)
      v += s.mul * combos[combo][llvm::find(ivs, s.iv) - ivs.begin()];
    out.push_back(v);
  }
  return out;
}

std::optional<ShiftedAccess>
mlir::tile::matchShiftedAccess(ValueRange indices, Block *body,
                               int64_t maxCombos) {
  ShiftedAccess out;
  bool shifted = false;
  SmallVector<int64_t> values; // per iv, how many values
  for (Value index : indices) {
    ShiftedIndex s{-1};
    if (auto arg = dyn_cast<BlockArgument>(index);
        arg && arg.getOwner() == body) {
      s.dim = arg.getArgNumber();
    } else if (std::optional<ShiftedIndex> m = matchShiftedIndex(index, body)) {
      s = *m;
      shifted = true;
    } else {
      return std::nullopt;
    }
    if (llvm::any_of(out.indices,
                     [&](const ShiftedIndex &o) { return o.dim == s.dim; }))
      return std::nullopt;
    if (s.iv && !llvm::is_contained(out.ivs, s.iv)) {
      out.ivs.push_back(s.iv);
      values.push_back(static_cast<int64_t>(s.ivValues.size()));
    }
    out.indices.push_back(std::move(s));
  }
  if (!shifted)
    return std::nullopt;
  int64_t n = 1;
  for (int64_t v : values)
    n *= v;
  if (n > maxCombos)
    return std::nullopt;
  // Every assignment of the variables' values, the first varying slowest.
  for (int64_t c = 0; c < n; ++c) {
    SmallVector<int64_t> combo;
    int64_t rest = c;
    for (size_t k = out.ivs.size(); k-- > 0;) {
      const ShiftedIndex &s = *llvm::find_if(
          out.indices, [&](const ShiftedIndex &o) { return o.iv == out.ivs[k]; });
      combo.push_back(s.ivValues[rest % values[k]]);
      rest /= values[k];
    }
    std::reverse(combo.begin(), combo.end());
    out.combos.push_back(std::move(combo));
  }
  return out;
}

std::optional<int64_t> mlir::tile::shiftedRegister(const TileLayout &frag,
                                                   const TileLayout &loop,
                                                   const ShiftedAccess &access,
                                                   size_t combo, int64_t reg,
                                                   bool guarded) {
  std::optional<int64_t> found;
  ArrayRef<int64_t> shape = frag.getShape();
  for (int64_t t = 0; t < loop.getNumThreads(); ++t) {
    SmallVector<int64_t> idx = loop.inverse(t, reg);
    if (!loop.inBounds(idx))
      continue;
    SmallVector<int64_t> fidx = access.at(idx, combo);
    bool inside = true;
    for (auto [i, n] : llvm::zip(fidx, shape))
      inside = inside && i >= 0 && i < n;
    if (!inside) {
      if (!guarded)
        return std::nullopt;
      continue;
    }
    std::optional<int64_t> r = frag.registerOf(fidx, t);
    if (!r || (found && *found != *r))
      return std::nullopt;
    found = r;
  }
  return found ? found : std::optional<int64_t>(0);
}

std::optional<UniformAccess>
mlir::tile::matchUniformAccess(ValueRange indices, Block *body) {
  Operation *loop = body->getParentOp();
  UniformAccess out;
  for (auto [d, index] : llvm::enumerate(indices)) {
    if (std::optional<IndexMap> m = matchIndexMap(index, body)) {
      out.maps.push_back(*m);
      continue;
    }
    // Defined outside the loop, or computed in it from such values
    // (`m - 1 - i` written in the T.Parallel's body).
    if (!isLoopInvariant(index, loop, /*maxDepth=*/16))
      return std::nullopt; // computed in the loop from something else
    out.maps.push_back(IndexMap{});
    out.uniformDims.push_back(static_cast<int64_t>(d));
    out.uniformValues.push_back(index);
  }
  if (out.uniformDims.empty())
    return std::nullopt;
  return out;
}

/// The register every thread's element of register `reg` of `loop` is in
/// when the uniform indices are `u`; nullopt when threads differ or one
/// does not hold its element.
static std::optional<int64_t> registerAt(const TileLayout &frag,
                                         const TileLayout &loop,
                                         const UniformAccess &access,
                                         ArrayRef<int64_t> u, int64_t reg) {
  std::optional<int64_t> found;
  for (int64_t t = 0; t < loop.getNumThreads(); ++t) {
    SmallVector<int64_t> idx = loop.inverse(t, reg);
    if (!loop.inBounds(idx))
      continue;
    SmallVector<int64_t> fidx;
    for (const IndexMap &m : access.maps)
      fidx.push_back(m.evaluate(idx));
    for (auto [k, d] : llvm::enumerate(access.uniformDims))
      fidx[d] = u[k];
    std::optional<int64_t> r = frag.registerOf(fidx, t);
    if (!r || (found && *found != *r))
      return std::nullopt;
    found = r;
  }
  return found ? found : std::optional<int64_t>(0);
}

std::optional<UniformRegisters>
mlir::tile::uniformRegisters(const TileLayout &frag, const TileLayout &loop,
                             const UniformAccess &access, int64_t reg,
                             int64_t maxCombos) {
  ArrayRef<int64_t> shape = frag.getShape();
  size_t n = access.uniformDims.size();
  int64_t combos = 1;
  for (int64_t d : access.uniformDims) {
    combos *= shape[d];
    if (combos > maxCombos)
      return std::nullopt;
  }
  SmallVector<int64_t> u(n, 0);
  std::optional<int64_t> base = registerAt(frag, loop, access, u, reg);
  if (!base)
    return std::nullopt;
  UniformRegisters out{*base, {}};
  for (size_t k = 0; k < n; ++k) {
    int64_t stride = 0;
    if (shape[access.uniformDims[k]] > 1) {
      u[k] = 1;
      std::optional<int64_t> r = registerAt(frag, loop, access, u, reg);
      u[k] = 0;
      if (!r)
        return std::nullopt;
      stride = *r - *base;
    }
    out.strides.push_back(stride);
  }
  // Every assignment of the uniform indices lands where the strides say.
  for (int64_t c = 0; c < combos; ++c) {
    int64_t rest = c, want = out.base;
    for (size_t k = n; k-- > 0;) {
      int64_t extent = shape[access.uniformDims[k]];
      u[k] = rest % extent;
      rest /= extent;
      want += u[k] * out.strides[k];
    }
    std::optional<int64_t> r = registerAt(frag, loop, access, u, reg);
    if (!r || *r != want)
      return std::nullopt;
  }
  return out;
}
