//===- LayoutUtils.cpp - fragment layouts as digit structures -------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/Utils/LayoutUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <numeric>

using namespace mlir;
using namespace mlir::tile;

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t nextPowerOf2(int64_t x) {
  return x <= 1 ? 1 : static_cast<int64_t>(llvm::PowerOf2Ceil(x));
}

TileLayout::TileLayout(ArrayRef<int64_t> shape, int64_t numThreads,
                       ArrayRef<LayoutDigit> digits)
    : shape(shape), numThreads(numThreads), digits(digits) {
  canonicalize();
}

/// Sorts digits (replica digits first, then by dim and dim stride) and merges
/// neighbours that form one larger digit.
void TileLayout::canonicalize() {
  llvm::erase_if(digits, [](const LayoutDigit &d) { return d.size == 1; });
  llvm::sort(digits, [](const LayoutDigit &a, const LayoutDigit &b) {
    return std::make_tuple(a.dim, a.dimStride) <
           std::make_tuple(b.dim, b.dimStride);
  });
  SmallVector<LayoutDigit> merged;
  for (const LayoutDigit &d : digits) {
    if (!merged.empty()) {
      LayoutDigit &prev = merged.back();
      if (prev.dim == d.dim && prev.onThread == d.onThread &&
          d.dimStride == prev.dimStride * prev.size &&
          d.stride == prev.stride * prev.size) {
        prev.size *= d.size;
        continue;
      }
    }
    merged.push_back(d);
  }
  digits = std::move(merged);
}

int64_t TileLayout::getNumRegs() const {
  int64_t n = 1;
  for (const LayoutDigit &d : digits)
    if (!d.onThread)
      n *= d.size;
  return n;
}

int64_t TileLayout::getReplicate() const {
  int64_t n = 1;
  for (const LayoutDigit &d : digits)
    if (d.isReplica())
      n *= d.size;
  return n;
}

/// Checks that `list` (size, stride) pairs form a mixed radix system from 1
/// whose product is `total` (0: any product).
static bool isMixedRadix(SmallVector<std::pair<int64_t, int64_t>> list,
                         int64_t total) {
  llvm::sort(list, [](auto a, auto b) { return a.second < b.second; });
  int64_t expect = 1;
  for (auto [size, stride] : list) {
    if (stride != expect)
      return false;
    expect *= size;
  }
  return total == 0 || expect == total;
}

LogicalResult TileLayout::verify(std::string *why) const {
  auto fail = [&](const Twine &msg) {
    if (why)
      *why = msg.str();
    return failure();
  };
  SmallVector<std::pair<int64_t, int64_t>> threads, regs, replicas;
  for (const LayoutDigit &d : digits) {
    if (d.size <= 0 || d.stride <= 0 || d.dimStride <= 0)
      return fail("digit sizes and strides must be positive");
    if (d.dim >= static_cast<int64_t>(shape.size()))
      return fail("digit of dimension " + Twine(d.dim) + " for rank " +
                  Twine(shape.size()));
    if (d.isReplica() && !d.onThread)
      return fail("a replica digit must be on the thread index");
    (d.onThread ? threads : regs).push_back({d.size, d.stride});
    if (d.isReplica())
      replicas.push_back({d.size, d.dimStride});
  }
  if (!isMixedRadix(threads, numThreads))
    return fail("thread digits do not cover [0, " + Twine(numThreads) +
                ") exactly once");
  if (!isMixedRadix(regs, 0))
    return fail("register digits are not a mixed radix");
  if (!isMixedRadix(replicas, 0))
    return fail("replica digits are not a mixed radix");
  for (auto [dim, extent] : llvm::enumerate(shape)) {
    SmallVector<std::pair<int64_t, int64_t>> of;
    int64_t product = 1;
    for (const LayoutDigit &d : digits)
      if (d.dim == static_cast<int64_t>(dim)) {
        of.push_back({d.size, d.dimStride});
        product *= d.size;
      }
    if (!isMixedRadix(of, 0))
      return fail("digits of dimension " + Twine(dim) +
                  " are not a mixed radix");
    if (product < extent)
      return fail("digits of dimension " + Twine(dim) + " cover " +
                  Twine(product) + " of " + Twine(extent) + " indices");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Construction
//===----------------------------------------------------------------------===//

namespace {
/// A digit of the linear (row-major) element index, being assigned to
/// dimensions by `TileLayout::blocked`.
struct LinearDigit {
  int64_t size; // 0: unbounded
  bool onThread;
  int64_t stride;
};
} // namespace

TileLayout TileLayout::blocked(ArrayRef<int64_t> shape, int64_t numThreads,
                               int64_t vector, bool acrossDims) {
  SmallVector<int64_t> padded;
  for (int64_t e : shape)
    padded.push_back(nextPowerOf2(e));
  int64_t inner = padded.empty() ? 1 : padded.back();
  if (acrossDims)
    for (int64_t e : ArrayRef<int64_t>(padded).drop_back())
      inner *= e;
  vector = std::max<int64_t>(1, std::min(nextPowerOf2(vector), inner));
  // Linear index = element-in-vector + vector * (thread + threads * q).
  SmallVector<LinearDigit> queue = {{vector, false, 1},
                                    {numThreads, true, 1},
                                    {0, false, vector}};
  SmallVector<LayoutDigit> out;
  // Thread counts that are not powers of two (96 = 32 x 3) leave an odd
  // factor that no padded (power-of-two) extent divides: those threads hold
  // replicas, like the threads left over when the tile is small.
  SmallVector<LinearDigit> leftover;
  size_t head = 0;
  for (int64_t dim = padded.size() - 1; dim >= 0; --dim) {
    int64_t left = padded[dim], dimStride = 1;
    while (left > 1) {
      LinearDigit &q = queue[head];
      if (q.size == 1) {
        ++head;
        continue;
      }
      int64_t take = q.size == 0 ? left : std::gcd(q.size, left);
      if (take == 1) {
        leftover.push_back(q);
        q.size = 1;
        ++head;
        continue;
      }
      out.push_back({dim, dimStride, take, q.onThread, q.stride});
      dimStride *= take;
      left /= take;
      q.stride *= take;
      if (q.size != 0)
        q.size /= take;
    }
  }
  // Threads left over hold replicas.
  for (; head < queue.size(); ++head)
    leftover.push_back(queue[head]);
  int64_t replicaStride = 1;
  for (const LinearDigit &q : leftover) {
    if (q.onThread && q.size > 1) {
      out.push_back({LayoutDigit::kReplica, replicaStride, q.size, true,
                     q.stride});
      replicaStride *= q.size;
    }
  }
  return TileLayout(shape, numThreads, out);
}

TileLayout TileLayout::replicated(ArrayRef<int64_t> shape,
                                  int64_t numThreads) {
  SmallVector<LayoutDigit> out;
  int64_t regStride = 1;
  for (int64_t dim = shape.size() - 1; dim >= 0; --dim) {
    out.push_back({dim, 1, shape[dim], false, regStride});
    regStride *= shape[dim];
  }
  out.push_back({LayoutDigit::kReplica, 1, numThreads, true, 1});
  return TileLayout(shape, numThreads, out);
}

FailureOr<TileLayout> TileLayout::mmaAccumulator(int64_t m, int64_t n,
                                                 int64_t warpsM,
                                                 int64_t warpsN) {
  if (m % warpsM || n % warpsN)
    return failure();
  int64_t wm = m / warpsM, wn = n / warpsN;
  if (wm % 16 || wn % 8)
    return failure();
  int64_t nTiles = wn / 8, mTiles = wm / 16;
  SmallVector<LayoutDigit> d = {
      // rows: lane / 4, then +8 in registers 2-3, then m tiles, then warps
      {0, 1, 8, true, 4},
      {0, 8, 2, false, 2},
      {0, 16, mTiles, false, 4 * nTiles},
      {0, wm, warpsM, true, 32 * warpsN},
      // columns: pairs in registers 0-1, lane % 4, n tiles, warps
      {1, 1, 2, false, 1},
      {1, 2, 4, true, 1},
      {1, 8, nTiles, false, 4},
      {1, wn, warpsN, true, 32},
  };
  return TileLayout({m, n}, 32 * warpsM * warpsN, d);
}

FailureOr<TileLayout> TileLayout::mfmaAccumulator(int64_t m, int64_t n,
                                                  int64_t wm, int64_t wn) {
  if (wm < 1 || wn < 1 || m % wm || n % wn)
    return failure();
  int64_t tm = m / wm, tn = n / wn;
  if (tm % 32 || tn % 32)
    return failure();
  int64_t mTiles = tm / 32, nTiles = tn / 32;
  SmallVector<LayoutDigit> d = {
      // rows: i in registers, lane / 32, j in registers, 32-row blocks, waves
      {0, 1, 4, false, 1},
      {0, 4, 2, true, 32},
      {0, 8, 4, false, 4},
      {0, 32, mTiles, false, 16 * nTiles},
      {0, tm, wm, true, 64 * wn},
      // columns: lane % 32, 32-column blocks, waves
      {1, 1, 32, true, 1},
      {1, 32, nTiles, false, 16},
      {1, tn, wn, true, 64},
  };
  return TileLayout({m, n}, 64 * wm * wn, d);
}

FailureOr<TileLayout> TileLayout::wgmmaAccumulator(int64_t m, int64_t n,
                                                   int64_t wgM, int64_t wgN,
                                                   int64_t replicas) {
  if (wgM < 1 || wgN < 1 || replicas < 1 || m % wgM || n % wgN)
    return failure();
  int64_t tm = m / wgM, tn = n / wgN;
  if (tm % 64 || tn % 8)
    return failure();
  int64_t mTiles = tm / 64, nTiles = tn / 8;
  SmallVector<LayoutDigit> d = {
      // rows: lane / 4, +8 in registers 2-3, the warp of the warpgroup,
      // 64-row tiles (one instruction each), warpgroups along M
      {0, 1, 8, true, 4},
      {0, 8, 2, false, 2},
      {0, 16, 4, true, 32},
      {0, 64, mTiles, false, 4 * nTiles},
      {0, tm, wgM, true, 128 * wgN},
      // columns: pairs in registers 0-1, lane % 4, n8 chunks, warpgroups
      {1, 1, 2, false, 1},
      {1, 2, 4, true, 1},
      {1, 8, nTiles, false, 4},
      {1, tn, wgN, true, 128},
  };
  // Replicas: whole copies of the warpgroup grid.
  if (replicas > 1)
    d.push_back({LayoutDigit::kReplica, 1, replicas, true, 128 * wgM * wgN});
  return TileLayout({m, n}, 128 * wgM * wgN * replicas, d);
}

//===----------------------------------------------------------------------===//
// Attribute round trip
//===----------------------------------------------------------------------===//

static AffineExpr digitTerm(const LayoutDigit &d, ArrayRef<int64_t> shape,
                            int64_t replicate, MLIRContext *ctx) {
  AffineExpr x = d.isReplica() ? getAffineSymbolExpr(0, ctx)
                               : getAffineDimExpr(d.dim, ctx);
  int64_t bound = d.isReplica() ? replicate : shape[d.dim];
  if (d.dimStride != 1)
    x = x.floorDiv(d.dimStride);
  // The top digit of a dimension needs no `mod` when it ends exactly at the
  // extent; a padded one keeps it so that parsing recovers its size.
  if (d.dimStride * d.size != bound)
    x = x % d.size;
  if (d.stride != 1)
    x = x * d.stride;
  return x;
}

FragmentLayoutAttr TileLayout::toAttr(MLIRContext *ctx) const {
  int64_t replicate = getReplicate();
  AffineExpr thread = getAffineConstantExpr(0, ctx);
  AffineExpr reg = getAffineConstantExpr(0, ctx);
  for (const LayoutDigit &d : digits) {
    AffineExpr term = digitTerm(d, shape, replicate, ctx);
    if (d.onThread)
      thread = thread + term;
    else
      reg = reg + term;
  }
  AffineMap map = AffineMap::get(shape.size(), replicate > 1 ? 1 : 0,
                                 {thread, reg}, ctx);
  return FragmentLayoutAttr::get(ctx, AffineMapAttr::get(map), numThreads,
                                 replicate);
}

/// Splits a sum into its terms.
static void flattenSum(AffineExpr e, SmallVectorImpl<AffineExpr> &terms) {
  if (e.getKind() == AffineExprKind::Add) {
    auto bin = cast<AffineBinaryOpExpr>(e);
    flattenSum(bin.getLHS(), terms);
    flattenSum(bin.getRHS(), terms);
    return;
  }
  terms.push_back(e);
}

/// Parses `((x floordiv a) mod b) * c` into a digit (x a dim or symbol 0).
static std::optional<LayoutDigit> parseTerm(AffineExpr e, bool onThread,
                                            ArrayRef<int64_t> shape,
                                            int64_t replicate) {
  int64_t stride = 1, size = -1, dimStride = 1;
  if (e.getKind() == AffineExprKind::Mul) {
    auto bin = cast<AffineBinaryOpExpr>(e);
    auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
    if (!c)
      return std::nullopt;
    stride = c.getValue();
    e = bin.getLHS();
  }
  if (e.getKind() == AffineExprKind::Mod) {
    auto bin = cast<AffineBinaryOpExpr>(e);
    auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
    if (!c)
      return std::nullopt;
    size = c.getValue();
    e = bin.getLHS();
  }
  if (e.getKind() == AffineExprKind::FloorDiv) {
    auto bin = cast<AffineBinaryOpExpr>(e);
    auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
    if (!c)
      return std::nullopt;
    dimStride = c.getValue();
    e = bin.getLHS();
  }
  int64_t dim, bound;
  if (auto d = dyn_cast<AffineDimExpr>(e)) {
    dim = d.getPosition();
    bound = shape[dim];
  } else if (auto s = dyn_cast<AffineSymbolExpr>(e)) {
    if (s.getPosition() != 0)
      return std::nullopt;
    dim = LayoutDigit::kReplica;
    bound = replicate;
  } else {
    return std::nullopt;
  }
  if (size < 0)
    size = ceilDiv(bound, dimStride);
  if (dim == LayoutDigit::kReplica && !onThread)
    return std::nullopt;
  return LayoutDigit{dim, dimStride, size, onThread, stride};
}

/// A layout given as any affine function (TileLang's T.Fragment takes
/// arbitrary index arithmetic): evaluates it at every index and fits digits
/// to the values. Each logical dimension (and the replica index) must add
/// its own contribution, a mixed-radix digit sum, to the thread or to the
/// register. A constant offset only moves the elements between threads or
/// registers (which thread holds an element is not observable: every access
/// goes through the layout), so it is dropped; a layout that uses only the
/// first P of the block's threads (P dividing them) gets the other threads
/// as replicas.
static FailureOr<TileLayout> fitLayout(FragmentLayoutAttr attr,
                                       ArrayRef<int64_t> shape,
                                       std::string *why) {
  auto fail = [&](const Twine &msg) -> FailureOr<TileLayout> {
    if (why)
      *why = msg.str();
    return failure();
  };
  AffineMap map = attr.getMap().getValue();
  if (map.getNumResults() != 2 || map.getNumDims() != shape.size())
    return fail("the layout map must give (thread, register) of each index");
  int64_t rank = shape.size();
  int64_t replicate = attr.getReplicate();
  int64_t points = replicate;
  for (int64_t e : shape) {
    if (e <= 0)
      return fail("the tile shape must be static and positive");
    points *= e;
    if (points > (int64_t(1) << 22))
      return fail("the tile is too large to check the layout element by "
                  "element; write it as a sum of ((i floordiv a) mod b) * c "
                  "terms");
  }
  // (thread, register) of an index; none where the map divides by zero.
  bool undefined = false;
  auto eval = [&](ArrayRef<int64_t> idx, int64_t rep) {
    std::optional<std::pair<int64_t, int64_t>> v = attr.apply(idx, rep);
    undefined |= !v;
    return v.value_or(std::make_pair(int64_t(0), int64_t(0)));
  };
  SmallVector<int64_t> zero(rank, 0);
  auto base = eval(zero, 0);
  // Per axis (dimensions, then the replica index): the contribution of x.
  int64_t axes = rank + 1;
  SmallVector<SmallVector<std::pair<int64_t, int64_t>>> tables(axes);
  SmallVector<LayoutDigit> digits;
  for (int64_t a = 0; a < axes; ++a) {
    bool isRep = a == rank;
    int64_t extent = isRep ? replicate : shape[a];
    auto g = [&](int64_t x) {
      SmallVector<int64_t> idx(rank, 0);
      if (!isRep)
        idx[a] = x;
      auto v = eval(idx, isRep ? x : 0);
      return std::make_pair(v.first - base.first, v.second - base.second);
    };
    std::string axisName =
        isRep ? std::string("the replica index")
              : "dimension " + std::to_string(a);
    SmallVector<LayoutDigit> axisDigits;
    for (int64_t x = 1; x < extent;) {
      auto inc = g(x);
      if ((inc.first != 0) == (inc.second != 0))
        return fail(axisName + " at " + Twine(x) +
                    (inc.first ? " moves both the thread and the register"
                               : " moves neither the thread nor the register"));
      int64_t size = 2;
      while (size * x < extent) {
        auto v = g(size * x);
        if (v.first != size * inc.first || v.second != size * inc.second)
          break;
        ++size;
      }
      if (size * x >= extent)
        size = ceilDiv(extent, x);
      bool onThread = inc.first != 0;
      axisDigits.push_back(
          LayoutDigit{isRep ? LayoutDigit::kReplica : a, x, size, onThread,
                      onThread ? inc.first : inc.second});
      x *= size;
    }
    auto &table = tables[a];
    for (int64_t x = 0; x < extent; ++x) {
      std::pair<int64_t, int64_t> v{0, 0};
      for (const LayoutDigit &d : axisDigits)
        (d.onThread ? v.first : v.second) += (x / d.dimStride) % d.size *
                                             d.stride;
      if (v != g(x))
        return fail(axisName + " is not a mixed-radix digit sum in the layout");
      table.push_back(v);
    }
    digits.append(axisDigits);
  }
  // Every index: the sum of its axes' contributions.
  SmallVector<int64_t> idx(rank, 0);
  for (int64_t p = 0; p < points; ++p) {
    int64_t rest = p;
    int64_t rep = rest % replicate;
    rest /= replicate;
    for (int64_t d = rank - 1; d >= 0; --d) {
      idx[d] = rest % shape[d];
      rest /= shape[d];
    }
    std::pair<int64_t, int64_t> want = base;
    for (int64_t d = 0; d < rank; ++d) {
      want.first += tables[d][idx[d]].first;
      want.second += tables[d][idx[d]].second;
    }
    want.first += tables[rank][rep].first;
    want.second += tables[rank][rep].second;
    if (eval(idx, rep) != want)
      return fail("the dimensions' contributions to the thread and the "
                  "register do not add up (the layout mixes dimensions)");
  }
  if (undefined)
    return fail("the layout map divides by zero at some index");
  // The threads used: [0, P) after the offset; the rest become replicas.
  int64_t numThreads = attr.getThreads();
  int64_t used = 1, replicas = 1;
  for (const LayoutDigit &d : digits) {
    if (d.onThread)
      used *= d.size;
    if (d.isReplica())
      replicas *= d.size;
  }
  if (used > numThreads || numThreads % used != 0)
    return fail("the layout places elements on " + Twine(used) +
                " threads, which does not divide the block's " +
                Twine(numThreads));
  if (used < numThreads)
    digits.push_back(LayoutDigit{LayoutDigit::kReplica, replicas,
                                 numThreads / used, true, used});
  TileLayout layout(shape, numThreads, digits);
  std::string reason;
  if (failed(layout.verify(&reason)))
    return fail(reason);
  return layout;
}

FailureOr<TileLayout> TileLayout::fromAttr(FragmentLayoutAttr attr,
                                           ArrayRef<int64_t> shape,
                                           std::string *why) {
  FailureOr<TileLayout> parsed = parseAttr(attr, shape, why);
  if (succeeded(parsed))
    return parsed;
  std::string fitWhy;
  FailureOr<TileLayout> fitted = fitLayout(attr, shape, &fitWhy);
  if (succeeded(fitted))
    return fitted;
  if (why)
    *why += "; as a function of the indices: " + fitWhy;
  return failure();
}

FailureOr<TileLayout> TileLayout::parseAttr(FragmentLayoutAttr attr,
                                            ArrayRef<int64_t> shape,
                                            std::string *why) {
  AffineMap map = attr.getMap().getValue();
  auto fail = [&](const Twine &msg) -> FailureOr<TileLayout> {
    if (why)
      *why = msg.str();
    return failure();
  };
  if (map.getNumDims() != shape.size())
    return fail("layout rank does not match the tile rank");
  SmallVector<LayoutDigit> digits;
  for (auto [i, result] : llvm::enumerate(map.getResults())) {
    SmallVector<AffineExpr> terms;
    flattenSum(result, terms);
    for (AffineExpr t : terms) {
      if (auto c = dyn_cast<AffineConstantExpr>(t)) {
        if (c.getValue() == 0)
          continue;
        return fail("a constant offset in the layout map is not supported");
      }
      std::optional<LayoutDigit> d =
          parseTerm(t, i == 0, shape, attr.getReplicate());
      if (!d)
        return fail("layout term is not of the form "
                    "((d floordiv a) mod b) * c");
      digits.push_back(*d);
    }
  }
  TileLayout layout(shape, attr.getThreads(), digits);
  std::string reason;
  if (failed(layout.verify(&reason)))
    return fail(reason);
  if (layout.getReplicate() != attr.getReplicate())
    return fail("replica digits do not multiply to replicate = " +
                Twine(attr.getReplicate()));
  return layout;
}

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

std::pair<int64_t, int64_t> TileLayout::forward(ArrayRef<int64_t> index,
                                                int64_t replica) const {
  int64_t thread = 0, reg = 0;
  for (const LayoutDigit &d : digits) {
    int64_t x = d.isReplica() ? replica : index[d.dim];
    int64_t v = (x / d.dimStride) % d.size;
    (d.onThread ? thread : reg) += v * d.stride;
  }
  return {thread, reg};
}

SmallVector<int64_t> TileLayout::inverse(int64_t thread, int64_t reg) const {
  SmallVector<int64_t> index(shape.size(), 0);
  for (const LayoutDigit &d : digits) {
    if (d.isReplica())
      continue;
    int64_t v = ((d.onThread ? thread : reg) / d.stride) % d.size;
    index[d.dim] += v * d.dimStride;
  }
  return index;
}

bool TileLayout::inBounds(ArrayRef<int64_t> index) const {
  for (auto [i, e] : llvm::zip(index, shape))
    if (i < 0 || i >= e)
      return false;
  return true;
}

TileLayout::RegisterPadding TileLayout::padding(int64_t reg,
                                                int64_t threads) const {
  RegisterPadding pad;
  pad.exceeds.assign(shape.size(), false);
  for (int64_t t = 0; t < threads; ++t) {
    SmallVector<int64_t> idx = inverse(t, reg);
    bool ok = true;
    for (auto [d, i] : llvm::enumerate(idx))
      if (i >= shape[d]) {
        pad.exceeds[d] = true;
        ok = false;
      }
    pad.anyInBounds |= ok;
  }
  return pad;
}

std::optional<int64_t> TileLayout::registerOf(ArrayRef<int64_t> index,
                                              int64_t thread) const {
  int64_t reg = 0;
  for (const LayoutDigit &d : digits) {
    if (d.isReplica())
      continue;
    int64_t v = (index[d.dim] / d.dimStride) % d.size;
    if (d.onThread) {
      if ((thread / d.stride) % d.size != v)
        return std::nullopt;
    } else {
      reg += v * d.stride;
    }
  }
  return reg;
}

/// The index value digit `d` contributes, read from `v` (the thread id, or
/// a register index) whose values are below `extent`.
static Value emitDigit(OpBuilder &b, Location loc, Value v,
                       const LayoutDigit &d, int64_t extent) {
  if (d.stride != 1)
    v = arith::DivUIOp::create(b, loc, v,
                               arith::ConstantIndexOp::create(b, loc, d.stride));
  if (d.stride * d.size < extent)
    v = arith::RemUIOp::create(b, loc, v,
                               arith::ConstantIndexOp::create(b, loc, d.size));
  if (d.dimStride != 1)
    v = arith::MulIOp::create(
        b, loc, v, arith::ConstantIndexOp::create(b, loc, d.dimStride));
  return v;
}

SmallVector<Value> TileLayout::emitInverse(OpBuilder &b, Location loc,
                                           Value tid, int64_t reg) const {
  SmallVector<int64_t> constant(shape.size(), 0);
  SmallVector<Value> dynamic(shape.size());
  for (const LayoutDigit &d : digits) {
    if (d.isReplica())
      continue;
    if (!d.onThread) {
      constant[d.dim] += ((reg / d.stride) % d.size) * d.dimStride;
      continue;
    }
    Value v = emitDigit(b, loc, tid, d, numThreads);
    dynamic[d.dim] =
        dynamic[d.dim] ? arith::AddIOp::create(b, loc, dynamic[d.dim], v) : v;
  }
  SmallVector<Value> result;
  for (auto [dyn, c] : llvm::zip(dynamic, constant)) {
    Value cv = arith::ConstantIndexOp::create(b, loc, c);
    if (!dyn)
      result.push_back(cv);
    else if (c == 0)
      result.push_back(dyn);
    else
      result.push_back(arith::AddIOp::create(b, loc, dyn, cv));
  }
  return result;
}

SmallVector<Value> TileLayout::emitInverse(OpBuilder &b, Location loc,
                                           Value tid, Value reg) const {
  SmallVector<Value> dims(shape.size());
  for (const LayoutDigit &d : digits) {
    if (d.isReplica())
      continue;
    Value v = d.onThread ? emitDigit(b, loc, tid, d, numThreads)
                         : emitDigit(b, loc, reg, d, getNumRegs());
    dims[d.dim] = dims[d.dim] ? arith::AddIOp::create(b, loc, dims[d.dim], v) : v;
  }
  for (Value &v : dims)
    if (!v)
      v = arith::ConstantIndexOp::create(b, loc, 0);
  return dims;
}

//===----------------------------------------------------------------------===//
// Transformations
//===----------------------------------------------------------------------===//

/// Recomputes register strides (keeping their order) and replica dim
/// strides (in thread-stride order) after digits were removed or added.
static void repack(SmallVectorImpl<LayoutDigit> &digits) {
  SmallVector<LayoutDigit *> regs, replicas;
  for (LayoutDigit &d : digits) {
    if (!d.onThread)
      regs.push_back(&d);
    else if (d.isReplica())
      replicas.push_back(&d);
  }
  llvm::sort(regs, [](auto *a, auto *b) { return a->stride < b->stride; });
  int64_t stride = 1;
  for (LayoutDigit *d : regs) {
    d->stride = stride;
    stride *= d->size;
  }
  llvm::sort(replicas,
             [](auto *a, auto *b) { return a->stride < b->stride; });
  int64_t dimStride = 1;
  for (LayoutDigit *d : replicas) {
    d->dimStride = dimStride;
    dimStride *= d->size;
  }
}

TileLayout TileLayout::dropDim(int64_t dim) const {
  SmallVector<int64_t> newShape(shape);
  newShape.erase(newShape.begin() + dim);
  SmallVector<LayoutDigit> out;
  for (LayoutDigit d : digits) {
    if (d.dim == dim) {
      if (!d.onThread)
        continue;
      d.dim = LayoutDigit::kReplica;
    } else if (d.dim > dim) {
      --d.dim;
    }
    out.push_back(d);
  }
  repack(out);
  return TileLayout(newShape, numThreads, out);
}

TileLayout TileLayout::insertUnitDim(int64_t dim) const {
  SmallVector<int64_t> newShape(shape);
  newShape.insert(newShape.begin() + dim, 1);
  SmallVector<LayoutDigit> out;
  for (LayoutDigit d : digits) {
    if (d.dim >= dim)
      ++d.dim;
    out.push_back(d);
  }
  return TileLayout(newShape, numThreads, out);
}

TileLayout TileLayout::project(ArrayRef<int64_t> dims) const {
  TileLayout current = *this;
  // Drop the dimensions that are not accessed, highest first.
  SmallVector<int64_t> kept;
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    if (!llvm::is_contained(dims, d))
      current = current.dropDim(d);
  }
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (llvm::is_contained(dims, d))
      kept.push_back(d);
  // `kept[k]` is now dimension k; the accessed tile's dimension j is
  // dims[j], i.e. dimension position(dims[j]) of `current`.
  SmallVector<int64_t> newShape;
  SmallVector<int64_t> toNew(kept.size());
  for (auto [j, d] : llvm::enumerate(dims)) {
    int64_t pos = llvm::find(kept, d) - kept.begin();
    toNew[pos] = j;
    newShape.push_back(shape[d]);
  }
  SmallVector<LayoutDigit> out;
  for (LayoutDigit d : current.digits) {
    if (!d.isReplica())
      d.dim = toNew[d.dim];
    out.push_back(d);
  }
  return TileLayout(newShape, numThreads, out);
}

FailureOr<TileLayout>
TileLayout::projectMapped(ArrayRef<IndexMap> maps,
                          ArrayRef<int64_t> tileShape) const {
  if (maps.size() != tileShape.size())
    return failure();
  // Split digits at every boundary (div, div * mod) of a term of their dim.
  SmallVector<LayoutDigit> work(digits.begin(), digits.end());
  for (const IndexMap &m : maps) {
    for (const IndexTerm &t : m.terms) {
      if (t.dim < 0 || t.dim >= static_cast<int64_t>(shape.size()) ||
          t.div <= 0 || t.mod < 0 || t.mul <= 0)
        return failure();
      SmallVector<int64_t> cuts = {t.div};
      if (t.mod)
        cuts.push_back(t.div * t.mod);
      for (int64_t cut : cuts) {
        SmallVector<LayoutDigit> next;
        for (LayoutDigit d : work) {
          int64_t lo = d.dimStride, hi = d.dimStride * d.size;
          if (d.isReplica() || d.dim != t.dim || cut <= lo || cut >= hi) {
            next.push_back(d);
            continue;
          }
          if (cut % lo || d.size % (cut / lo))
            return failure();
          int64_t inner = cut / lo;
          next.push_back({d.dim, lo, inner, d.onThread, d.stride});
          next.push_back(
              {d.dim, cut, d.size / inner, d.onThread, d.stride * inner});
        }
        work = std::move(next);
      }
    }
  }
  // Each piece feeds the tile dimension of the term whose range holds it,
  // its index stride scaled by the term's multiplier.
  SmallVector<LayoutDigit> out;
  for (LayoutDigit d : work) {
    if (d.isReplica()) {
      out.push_back(d);
      continue;
    }
    int64_t lo = d.dimStride, hi = d.dimStride * d.size;
    bool fed = false;
    LayoutDigit mapped = d;
    for (auto [f, m] : llvm::enumerate(maps)) {
      for (const IndexTerm &t : m.terms) {
        if (t.dim != d.dim || lo < t.div || (t.mod && hi > t.div * t.mod))
          continue;
        if (fed || lo % t.div)
          return failure(); // feeds two terms, or not at a digit boundary
        fed = true;
        mapped.dim = f;
        mapped.dimStride = lo / t.div * t.mul;
      }
    }
    if (fed) {
      out.push_back(mapped);
    } else if (d.onThread) {
      d.dim = LayoutDigit::kReplica;
      out.push_back(d);
    }
  }
  // The registers are the fragment's own to number: the run of consecutive
  // innermost elements (if a register digit holds one) comes first, so
  // that copies of the fragment move it in one vector access.
  int64_t inner = static_cast<int64_t>(tileShape.size()) - 1;
  for (LayoutDigit &d : out)
    if (!d.onThread && d.dim == inner && d.dimStride == 1)
      d.stride = 0;
  repack(out);
  TileLayout result(tileShape, numThreads, out);
  if (failed(result.verify()))
    return failure(); // terms that overlap or leave holes in a dimension
  return result;
}

FailureOr<TileLayout>
TileLayout::pullBack(ArrayRef<IndexMap> maps,
                     ArrayRef<int64_t> loopShape) const {
  if (maps.size() != shape.size())
    return failure();
  // Each tile index is a mixed radix over its loop variables: sorted by
  // multiplier, the first is 1 and each next is the last times its extent;
  // every loop variable appears once, and the tile dimension is covered.
  SmallVector<bool> used(loopShape.size(), false);
  SmallVector<SmallVector<IndexTerm, 1>> sorted;
  for (auto [f, m] : llvm::enumerate(maps)) {
    SmallVector<IndexTerm, 1> terms(m.terms.begin(), m.terms.end());
    llvm::sort(terms, [](const IndexTerm &a, const IndexTerm &b) {
      return a.mul < b.mul;
    });
    int64_t radix = 1;
    for (const IndexTerm &t : terms) {
      if (t.dim < 0 || t.dim >= static_cast<int64_t>(loopShape.size()) ||
          used[t.dim] || t.div != 1 || t.mod != 0 || t.mul != radix)
        return failure();
      used[t.dim] = true;
      radix *= loopShape[t.dim];
    }
    if (radix != shape[f])
      return failure();
    sorted.push_back(std::move(terms));
  }
  if (!llvm::all_of(used, [](bool u) { return u; }))
    return failure();
  // A digit over [lo, hi) of tile dimension f becomes one digit per term
  // whose range [mul, mul * extent) it meets, scaled by the part below.
  SmallVector<LayoutDigit> out;
  for (const LayoutDigit &d : digits) {
    if (d.isReplica()) {
      out.push_back(d);
      continue;
    }
    int64_t lo = d.dimStride, hi = d.dimStride * d.size, covered = 1;
    for (const IndexTerm &t : sorted[d.dim]) {
      int64_t a = std::max(lo, t.mul);
      int64_t b = std::min(hi, t.mul * loopShape[t.dim]);
      if (a >= b)
        continue;
      if (a % lo || a % t.mul || b % a)
        return failure(); // the digit does not split at the term's boundary
      out.push_back(
          {t.dim, a / t.mul, b / a, d.onThread, d.stride * (a / lo)});
      covered *= b / a;
    }
    if (covered != d.size)
      return failure(); // part of the digit lies outside the tile (padding)
  }
  TileLayout result(loopShape, numThreads, out);
  if (failed(result.verify()))
    return failure();
  return result;
}

std::string TileLayout::describe() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleave(shape, os, "x");
  os << "] over " << numThreads << " threads, " << getNumRegs()
     << " registers each";
  if (getReplicate() > 1)
    os << ", replicated " << getReplicate() << "x";
  return s;
}

//===----------------------------------------------------------------------===//
// Swizzles
//===----------------------------------------------------------------------===//

static int64_t swizzleBits(int64_t swizzleBytes) {
  switch (swizzleBytes) {
  case 32:
    return 1;
  case 64:
    return 2;
  case 128:
    return 3;
  default:
    return 0;
  }
}

SmallVector<int64_t> mlir::tile::delinearize(int64_t flat,
                                             ArrayRef<int64_t> shape) {
  SmallVector<int64_t> index(shape.size());
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

int64_t mlir::tile::swizzleOffset(int64_t linear, int64_t elementBytes,
                                  int64_t swizzleBytes) {
  int64_t bits = swizzleBits(swizzleBytes);
  if (bits == 0)
    return linear;
  int64_t byte = linear * elementBytes;
  int64_t mask = (int64_t(1) << bits) - 1;
  byte ^= ((byte >> 7) & mask) << 4;
  return byte / elementBytes;
}

Value mlir::tile::emitSwizzleOffset(OpBuilder &b, Location loc, Value linear,
                                    int64_t elementBytes,
                                    int64_t swizzleBytes) {
  int64_t bits = swizzleBits(swizzleBytes);
  if (bits == 0)
    return linear;
  // In elements: chunk = 16 / elementBytes elements, row = 128 bytes.
  int64_t chunk = 16 / elementBytes, row = 128 / elementBytes;
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  Value rowBits = arith::RemUIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, linear, c(row)), c(1 << bits));
  Value xorTerm = arith::MulIOp::create(b, loc, rowBits, c(chunk));
  return arith::XOrIOp::create(b, loc, linear, xorTerm);
}

int64_t mlir::tile::sharedPanelElements(ArrayRef<int64_t> allocShape,
                                        int64_t elementBytes,
                                        int64_t swizzleBytes) {
  if (allocShape.size() < 2 || swizzleBits(swizzleBytes) == 0)
    return 0;
  if (allocShape.back() * elementBytes <= swizzleBytes)
    return 0;
  return swizzleBytes / elementBytes;
}

bool mlir::tile::tensorMapStrides(MemRefType type) {
  int64_t stride = type.getElementTypeBitWidth() / 8;
  if (stride == 0)
    return false;
  for (int64_t d = type.getRank() - 1; d > 0; --d) {
    if (ShapedType::isDynamic(type.getDimSize(d)))
      return false;
    stride *= type.getDimSize(d);
    if (stride % 16)
      return false;
  }
  return true;
}

std::optional<std::pair<int64_t, int64_t>>
mlir::tile::staticTensorMapStrideError(MemRefType type) {
  int64_t eb = type.getElementTypeBitWidth() / 8;
  if (eb == 0 || !type.getLayout().isIdentity())
    return std::nullopt;
  int64_t stride = eb; // bytes of one step of dimension d
  for (int64_t d = type.getRank() - 1; d > 0; --d) {
    if (ShapedType::isDynamic(type.getDimSize(d)))
      return std::nullopt; // known at the launch only
    stride *= type.getDimSize(d);
    // A dimension of size 1 is never stepped (the launch encodes it so).
    if (type.getDimSize(d - 1) != 1 && stride % 16)
      return std::make_pair(d - 1, stride);
  }
  return std::nullopt;
}

int64_t mlir::tile::sharedLinear(ArrayRef<int64_t> allocShape,
                                 ArrayRef<int64_t> index, int64_t elementBytes,
                                 int64_t swizzleBytes) {
  int64_t rank = allocShape.size();
  int64_t linear = 0;
  if (rank < 2) {
    linear = rank ? index[0] : 0;
  } else {
    int64_t rows = allocShape[rank - 2], cols = allocShape[rank - 1];
    int64_t batch = 0;
    for (int64_t d = 0; d < rank - 2; ++d)
      batch = batch * allocShape[d] + index[d];
    int64_t r = index[rank - 2], c = index[rank - 1];
    linear = batch * rows * cols;
    if (int64_t span = sharedPanelElements(allocShape, elementBytes,
                                           swizzleBytes))
      linear += (c / span) * rows * span + r * span + c % span;
    else
      linear += r * cols + c;
  }
  return swizzleOffset(linear, elementBytes, swizzleBytes);
}

std::pair<Value, Value> mlir::tile::emitPanelRaster(OpBuilder &b, Location loc,
                                                    Value linear, Value major,
                                                    Value minor, int64_t panel) {
  Value p = arith::ConstantIndexOp::create(b, loc, panel);
  Value panelBlocks = arith::MulIOp::create(b, loc, minor, p);
  Value index = arith::DivUIOp::create(b, loc, linear, panelBlocks);
  Value within = arith::RemUIOp::create(b, loc, linear, panelBlocks);
  Value first = arith::MulIOp::create(b, loc, index, p);
  Value height = arith::MinUIOp::create(
      b, loc, p, arith::SubIOp::create(b, loc, major, first));
  Value majorIdx = arith::AddIOp::create(
      b, loc, first, arith::RemUIOp::create(b, loc, within, height));
  Value minorIdx = arith::DivUIOp::create(b, loc, within, height);
  return {majorIdx, minorIdx};
}

Value mlir::tile::emitSharedOffset(OpBuilder &b, Location loc,
                                   ArrayRef<int64_t> allocShape,
                                   ArrayRef<Value> index, int64_t elementBytes,
                                   int64_t swizzleBytes, bool applySwizzle,
                                   bool stageOutside) {
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto mul = [&](Value x, int64_t k) -> Value {
    return k == 1 ? x : arith::MulIOp::create(b, loc, x, c(k)).getResult();
  };
  auto add = [&](Value x, Value y) -> Value {
    return x ? arith::AddIOp::create(b, loc, x, y).getResult() : y;
  };
  int64_t rank = allocShape.size();
  Value linear;
  Value outer; // the stage's part, added after the XOR (stageOutside)
  if (rank == 0) {
    linear = c(0);
  } else if (rank == 1) {
    linear = index[0];
  } else {
    int64_t rows = allocShape[rank - 2], cols = allocShape[rank - 1];
    Value batch;
    for (int64_t d = 0; d < rank - 2; ++d)
      batch = add(batch ? mul(batch, allocShape[d]) : Value(), index[d]);
    // The XOR reads the bits of the 128-byte row index below 2^(7 + bits)
    // bytes; a multiple of that is left alone by it.
    int64_t bits = swizzleBits(swizzleBytes);
    bool wholePeriods = (rows * cols * elementBytes) % (int64_t(128) << bits) == 0;
    if (batch && stageOutside && applySwizzle && wholePeriods)
      outer = mul(batch, rows * cols);
    else if (batch)
      linear = mul(batch, rows * cols);
    Value r = index[rank - 2], col = index[rank - 1];
    if (int64_t span = sharedPanelElements(allocShape, elementBytes,
                                           swizzleBytes)) {
      Value panel = arith::DivUIOp::create(b, loc, col, c(span));
      Value within = arith::RemUIOp::create(b, loc, col, c(span));
      linear = add(linear, mul(panel, rows * span));
      linear = add(linear, mul(r, span));
      linear = add(linear, within);
    } else {
      linear = add(linear, mul(r, cols));
      linear = add(linear, col);
    }
  }
  if (!applySwizzle)
    return linear;
  Value swizzled = emitSwizzleOffset(b, loc, linear, elementBytes, swizzleBytes);
  return outer ? add(outer, swizzled) : swizzled;
}

int64_t mlir::tile::knownDivisor(Value v, int64_t cap) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c))) {
    int64_t x = std::abs(c.getSExtValue());
    return x == 0 ? cap : std::min<int64_t>(cap, x & -x);
  }
  Operation *def = v.getDefiningOp();
  if (!def)
    return 1;
  if (auto mul = dyn_cast<arith::MulIOp>(def))
    return std::min(cap, knownDivisor(mul.getLhs(), cap) *
                             knownDivisor(mul.getRhs(), cap));
  if (auto add = dyn_cast<arith::AddIOp>(def))
    return std::min(knownDivisor(add.getLhs(), cap),
                    knownDivisor(add.getRhs(), cap));
  if (auto sub = dyn_cast<arith::SubIOp>(def))
    return std::min(knownDivisor(sub.getLhs(), cap),
                    knownDivisor(sub.getRhs(), cap));
  if (auto shl = dyn_cast<arith::ShLIOp>(def)) {
    APInt s;
    if (matchPattern(shl.getRhs(), m_ConstantInt(&s)))
      return std::min(cap, knownDivisor(shl.getLhs(), cap)
                               << s.getSExtValue());
  }
  // x mod c: both x and c are multiples of min(divisor(x), divisor(c)).
  if (isa<arith::RemUIOp, arith::RemSIOp>(def))
    return std::min(knownDivisor(def->getOperand(0), cap),
                    knownDivisor(def->getOperand(1), cap));
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
          arith::ExtUIOp>(def))
    return knownDivisor(def->getOperand(0), cap);
  if (auto sel = dyn_cast<arith::SelectOp>(def))
    return std::min(knownDivisor(sel.getTrueValue(), cap),
                    knownDivisor(sel.getFalseValue(), cap));
  if (auto apply = dyn_cast<affine::AffineApplyOp>(def)) {
    AffineMap map = apply.getAffineMap();
    unsigned numDims = map.getNumDims();
    std::function<int64_t(AffineExpr)> of = [&](AffineExpr e) -> int64_t {
      if (auto c = dyn_cast<AffineConstantExpr>(e)) {
        int64_t x = std::abs(c.getValue());
        return x == 0 ? cap : std::min<int64_t>(cap, x & -x);
      }
      if (auto d = dyn_cast<AffineDimExpr>(e))
        return knownDivisor(apply.getOperand(d.getPosition()), cap);
      if (auto sym = dyn_cast<AffineSymbolExpr>(e))
        return knownDivisor(apply.getOperand(numDims + sym.getPosition()),
                            cap);
      auto bin = cast<AffineBinaryOpExpr>(e);
      switch (e.getKind()) {
      case AffineExprKind::Add:
      case AffineExprKind::Mod:
        return std::min(of(bin.getLHS()), of(bin.getRHS()));
      case AffineExprKind::Mul:
        return std::min(cap, of(bin.getLHS()) * of(bin.getRHS()));
      default:
        return 1; // floordiv, ceildiv
      }
    };
    return of(map.getResult(0));
  }
  return 1;
}


unsigned mlir::tile::defaultSwizzle(MemRefType type) {
  if (type.getRank() < 2)
    return 0;
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  if (elementBytes == 0 || elementBytes > 16)
    return 0;
  int64_t rowBytes = type.getShape().back() * elementBytes;
  int64_t totalBytes = type.getNumElements() * elementBytes;
  for (unsigned span : {128u, 64u, 32u})
    if (rowBytes % span == 0 && totalBytes % span == 0)
      return span;
  return 0;
}
