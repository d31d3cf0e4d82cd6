//===- LayoutUtils.h - fragment layouts as digit structures -----*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// A fragment layout distributes the elements of a tile over the threads of a
// block and the registers of each thread. Every layout tilelang-mlir builds
// is a *digit structure*: each logical index is written in a mixed radix,
// and every digit goes either to the thread index or to the register index
// with a stride (like a CuTe thread-value layout). Replicated layouts have
// extra thread digits that come from the replica index instead of a logical
// dimension. From the digits both directions are closed forms:
//
//   forward:  (index, replica) -> (thread, register)   [#tile.layout map]
//   inverse:  (thread, register) -> index              [code generation]
//
// The attribute prints the forward map as an affine map whose results are
// sums of terms `((d floordiv a) mod b) * c`, one per digit; `fromAttr`
// parses that form back.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UTILS_LAYOUTUTILS_H
#define TILE_UTILS_LAYOUTUTILS_H

#include "dialects/Tile/IR/TileDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir {
namespace tile {

/// One term of a fragment index computed from a parallel loop's variables:
/// ((iv[dim] floordiv div) mod mod) * mul, no modulus when mod is 0.
struct IndexTerm {
  int64_t dim;
  int64_t div = 1;
  int64_t mod = 0;
  int64_t mul = 1;

  bool operator==(const IndexTerm &o) const {
    return dim == o.dim && div == o.div && mod == o.mod && mul == o.mul;
  }
};

/// A fragment index as a sum of terms (`matchIndexMap`): `j`, `j // 16`,
/// `j % 4`, `(j % 4) * 4 + j // 4`. The plain variable is one term
/// {dim, 1, 0, 1}.
struct IndexMap {
  SmallVector<IndexTerm, 1> terms;

  bool isIdentity() const {
    return terms.size() == 1 && terms[0].div == 1 && terms[0].mod == 0 &&
           terms[0].mul == 1;
  }
  /// The index at loop index `idx`.
  int64_t evaluate(ArrayRef<int64_t> idx) const {
    int64_t v = 0;
    for (const IndexTerm &t : terms) {
      int64_t q = idx[t.dim] / t.div;
      v += (t.mod ? q % t.mod : q) * t.mul;
    }
    return v;
  }
  bool operator==(const IndexMap &o) const { return terms == o.terms; }
};

/// Matches `index` as a sum of terms ((iv floordiv c1) mod c2) * c3 of
/// arguments iv of `body` (arith.floordivsi / divsi / divui, remsi / remui
/// and muli by positive constants, addi; loop variables are non-negative).
std::optional<IndexMap> matchIndexMap(Value index, Block *body);

/// A fragment index that is one loop variable of `body` shifted: `j + c`,
/// `j - c`, `j + k * s` where `s` is the induction variable of an enclosing
/// scf.for with constant bounds (`for s in range(2)` around a T.Parallel
/// that reads `acc[i + s * 16, j]`). `shifts` lists the values the shift
/// takes, one per iteration of that loop (one value when it is constant).
struct ShiftedIndex {
  int64_t dim;
  int64_t offset = 0;    // the constant part
  Value iv;              // the enclosing loop's variable, or null
  int64_t mul = 0;       // its multiplier
  SmallVector<int64_t> ivValues; // the values `iv` takes
  /// The shifts, in the order of `ivValues` (one when `iv` is null).
  SmallVector<int64_t> shifts() const {
    if (!iv)
      return {offset};
    SmallVector<int64_t> out;
    for (int64_t v : ivValues)
      out.push_back(offset + mul * v);
    return out;
  }
};

/// Matches `index` as a ShiftedIndex of `body`'s variables; the enclosing
/// loop may run at most `maxTrips` times.
std::optional<ShiftedIndex> matchShiftedIndex(Value index, Block *body,
                                              int64_t maxTrips = 16);

/// One digit of a layout: with `v = (x floordiv dimStride) mod size`, where x
/// is the logical index along `dim` (or the replica index when `dim` is
/// kReplica), the digit adds `v * stride` to the thread index (`onThread`)
/// or to the register index.
struct LayoutDigit {
  static constexpr int64_t kReplica = -1;
  int64_t dim;
  int64_t dimStride;
  int64_t size;
  bool onThread;
  int64_t stride;

  bool isReplica() const { return dim == kReplica; }
  bool operator==(const LayoutDigit &o) const {
    return dim == o.dim && dimStride == o.dimStride && size == o.size &&
           onThread == o.onThread && stride == o.stride;
  }
};

/// A fragment layout of a tile of static `shape` over `numThreads` threads.
class TileLayout {
public:
  TileLayout() = default;
  TileLayout(ArrayRef<int64_t> shape, int64_t numThreads,
             ArrayRef<LayoutDigit> digits);

  //===--------------------------------------------------------------------===//
  // Construction
  //===--------------------------------------------------------------------===//

  /// Threads take consecutive groups of `vector` elements of the innermost
  /// dimension, row-major over the tile; when the tile has fewer groups than
  /// threads the extra threads hold replicas. Padding covers shapes that do
  /// not divide. With `acrossDims` a group may span trailing dimensions
  /// (vector 16 over a ... x 4 x 4 tile gives each thread whole 4 x 4
  /// blocks); otherwise it stops at the innermost extent.
  static TileLayout blocked(ArrayRef<int64_t> shape, int64_t numThreads,
                            int64_t vector = 1, bool acrossDims = false);

  /// Every thread holds every element (a fully replicated tile).
  static TileLayout replicated(ArrayRef<int64_t> shape, int64_t numThreads);

  /// The accumulator layout of a warp-level `mma.sync` with m16n8 tiles over
  /// an M x N tile whose warps form a warpsM x warpsN grid (warp index
  /// warpM * warpsN + warpN). Fails if the warp tiles are not multiples of
  /// 16 x 8.
  static FailureOr<TileLayout> mmaAccumulator(int64_t m, int64_t n,
                                              int64_t warpsM, int64_t warpsN);

  /// The accumulator layout of `wgmma.mma_async` m64nNk over an M x N tile
  /// whose warpgroups form a wgM x wgN grid (warpgroup index wgMi * wgN +
  /// wgNi): within a warpgroup, warp w holds rows [16 w, 16 w + 16) of every
  /// 64-row tile and the registers of one instruction follow wgmma's order
  /// (n8 chunks, then the mma.sync quad order). Fails unless each
  /// warpgroup's tile is a multiple of 64 x 8. With `replicas` > 1 the grid
  /// repeats that many times over the next warpgroups (warpgroup w holds the
  /// tile of warpgroup w mod (wgM wgN)).
  static FailureOr<TileLayout> wgmmaAccumulator(int64_t m, int64_t n,
                                                int64_t wgM, int64_t wgN,
                                                int64_t replicas = 1);

  /// The accumulator layout of AMD MFMA 32x32x8 (wave64) over an M x N tile
  /// whose waves form a wm x wn grid (wave index waveM * wn + waveN): each
  /// wave owns (M / wm) x (N / wn) in 32x32 blocks; lane l holds column
  /// l % 32 and rows 8 j + 4 (l / 32) + i of a block in register 4 j + i.
  static FailureOr<TileLayout> mfmaAccumulator(int64_t m, int64_t n,
                                               int64_t wm, int64_t wn);

  /// The layout of an attribute for a tile of `shape`: its digits parsed
  /// from the map's terms, or else fitted to the map's values (any affine
  /// function whose dimensions add their contributions; a constant offset
  /// is dropped, threads beyond those the map uses become replicas).
  static FailureOr<TileLayout> fromAttr(FragmentLayoutAttr attr,
                                        ArrayRef<int64_t> shape,
                                        std::string *why = nullptr);

  /// Only the first half of `fromAttr`: the digits of the map's terms.
  static FailureOr<TileLayout> parseAttr(FragmentLayoutAttr attr,
                                         ArrayRef<int64_t> shape,
                                         std::string *why = nullptr);

  /// The attribute printing this layout's forward map.
  FragmentLayoutAttr toAttr(MLIRContext *ctx) const;

  //===--------------------------------------------------------------------===//
  // Properties
  //===--------------------------------------------------------------------===//

  ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getNumThreads() const { return numThreads; }
  ArrayRef<LayoutDigit> getDigits() const { return digits; }
  int64_t getNumRegs() const;
  int64_t getReplicate() const;

  /// Checks the mixed-radix invariants; returns a reason on failure.
  LogicalResult verify(std::string *why = nullptr) const;

  bool operator==(const TileLayout &o) const {
    return shape == o.shape && numThreads == o.numThreads &&
           digits == o.digits;
  }
  bool operator!=(const TileLayout &o) const { return !(*this == o); }

  //===--------------------------------------------------------------------===//
  // Evaluation (compile time)
  //===--------------------------------------------------------------------===//

  /// The (thread, register) of `index` for replica `replica`.
  std::pair<int64_t, int64_t> forward(ArrayRef<int64_t> index,
                                      int64_t replica = 0) const;

  /// The logical index held by register `reg` of thread `thread`; it may lie
  /// outside the shape (padding), see `inBounds`.
  SmallVector<int64_t> inverse(int64_t thread, int64_t reg) const;

  bool inBounds(ArrayRef<int64_t> index) const;

  /// Where padding puts register `reg` over threads [0, `threads`):
  /// `exceeds[d]` when some thread's index leaves the shape along
  /// dimension d, `anyInBounds` when some thread's register holds an
  /// element of the tile at all. Code reading operands at a register's
  /// index guards the dimensions in `exceeds` and skips a register no
  /// thread holds an element in.
  struct RegisterPadding {
    SmallVector<bool> exceeds;
    bool anyInBounds = false;
  };
  RegisterPadding padding(int64_t reg, int64_t threads) const;

  /// The register holding `index` in thread `thread`, if that thread holds it.
  std::optional<int64_t> registerOf(ArrayRef<int64_t> index,
                                    int64_t thread) const;

  //===--------------------------------------------------------------------===//
  // Code generation
  //===--------------------------------------------------------------------===//

  /// Emits the logical index held by register `reg` of the thread `tid`
  /// (an index value), as index values.
  SmallVector<Value> emitInverse(OpBuilder &b, Location loc, Value tid,
                                 int64_t reg) const;
  /// The same, with the register an index value (a loop over registers).
  SmallVector<Value> emitInverse(OpBuilder &b, Location loc, Value tid,
                                 Value reg) const;

  //===--------------------------------------------------------------------===//
  // Transformations
  //===--------------------------------------------------------------------===//

  /// The layout of the tile with dimension `dim` removed (what a reduction
  /// along `dim` produces): thread digits of `dim` become replica digits,
  /// register digits of `dim` disappear.
  TileLayout dropDim(int64_t dim) const;

  /// The layout of the tile with a unit dimension inserted at `dim`.
  TileLayout insertUnitDim(int64_t dim) const;

  /// The layout induced on a tile accessed through the projection `dims`
  /// (the accessed tile's dimension k is this layout's dimension dims[k]);
  /// dimensions not in `dims` are dropped as by `dropDim`.
  TileLayout project(ArrayRef<int64_t> dims) const;

  /// The generalization of `project` to indices that divide or wrap a loop
  /// variable (`maps`, one per dimension of the accessed tile, whose shape
  /// is `shape`): digits are split where a map's boundaries cut them, each
  /// piece becomes a digit of the tile dimension it feeds, and pieces that
  /// feed none are dropped (on threads: replicas). Fails when a digit
  /// cannot be split at a boundary or feeds two tile dimensions.
  FailureOr<TileLayout> projectMapped(ArrayRef<IndexMap> maps,
                                      ArrayRef<int64_t> shape) const;

  /// The other direction: the layout of a loop of shape `loopShape` whose
  /// index reaches this tile through `maps` (one per tile dimension), each
  /// a mixed-radix sum of distinct loop variables (`bq * 64 + h`, TileLang's
  /// T.reshape of a fragment) that together cover the tile once. A loop
  /// iteration sits in the thread and register of the element it reaches;
  /// fails for any other kind of map.
  FailureOr<TileLayout> pullBack(ArrayRef<IndexMap> maps,
                                 ArrayRef<int64_t> loopShape) const;

  /// A human-readable description, for diagnostics.
  std::string describe() const;

private:
  void canonicalize();

  SmallVector<int64_t> shape;
  int64_t numThreads = 0;
  SmallVector<LayoutDigit> digits;
};

/// The index of row-major position `flat` in an array of `shape`.
SmallVector<int64_t> delinearize(int64_t flat, ArrayRef<int64_t> shape);

//===----------------------------------------------------------------------===//
// Shared-memory swizzles
//===----------------------------------------------------------------------===//

/// The linear element offset of a row-major element offset `linear` in a
/// buffer with a `swizzleBytes` (0/32/64/128) XOR swizzle on 16-byte chunks,
/// for elements of `elementBytes`: byte bits [4, 4 + b) are XORed with bits
/// [7, 7 + b), b = log2(swizzleBytes / 16) — the TMA/wgmma definition.
int64_t swizzleOffset(int64_t linear, int64_t elementBytes,
                      int64_t swizzleBytes);

/// Shared buffers: the placement of element `index` of an allocation of
/// shape `allocShape`. Leading dimensions are batches of the matrix formed
/// by the last two (rows x cols). Rows wider than the swizzle span are cut
/// into panels of `span` bytes stored one after the other (panel p holds
/// columns [p * span, (p + 1) * span) of every row): the layout TMA boxes
/// and wgmma descriptors read. Within that, the XOR swizzle of
/// `swizzleOffset` applies to the linear offset.
int64_t sharedLinear(ArrayRef<int64_t> allocShape, ArrayRef<int64_t> index,
                     int64_t elementBytes, int64_t swizzleBytes);

/// The panel width in elements of a panelled allocation (rows wider than the
/// swizzle span), 0 otherwise.
int64_t sharedPanelElements(ArrayRef<int64_t> allocShape, int64_t elementBytes,
                            int64_t swizzleBytes);

/// Whether a tensor map can describe global memref `type`: every stride but
/// the innermost a multiple of 16 bytes, known at compile time (every
/// dimension but the outermost static).
bool tensorMapStrides(MemRefType type);

/// The first dimension (and its stride in bytes) of an identity-layout
/// tensor of static inner sizes whose stride is not a multiple of 16 bytes
/// (TMA cannot address it; dimensions of size 1, never stepped, pass); none
/// when every such stride is fine or only known at the launch.
std::optional<std::pair<int64_t, int64_t>>
staticTensorMapStrideError(MemRefType type);

/// The largest power of two known to divide the index value `v` (at most
/// `cap`), from constants, products, sums, shifts, remainders, casts,
/// selects and affine.apply.
int64_t knownDivisor(Value v, int64_t cap = 1 << 20);

/// The swizzle span layout inference gives a shared buffer: the largest of
/// 128/64/32 bytes dividing both its rows and its size (0: none).
unsigned defaultSwizzle(MemRefType type);

/// Block rasterization (use_swizzle): the (major, minor) indices of the
/// `linear`-th block when blocks walk panels of `panel` rows of the major
/// dimension (extent `major`), minor index by minor index within a panel,
/// over a grid whose minor extent is `minor`.
std::pair<Value, Value> emitPanelRaster(OpBuilder &b, Location loc,
                                        Value linear, Value major, Value minor,
                                        int64_t panel);

/// `sharedLinear` as index arithmetic (without the final XOR when
/// `applySwizzle` is false: the address a wgmma descriptor or TMA takes).
/// With `stageOutside`, the leading dimensions' part (a pipeline stage) is
/// added after the XOR when it spans whole swizzle periods (the same
/// address): the swizzled rest is then the same for every stage, and LLVM
/// hoists it out of a loop (fewer instructions a step, more registers live
/// across the loop).
Value emitSharedOffset(OpBuilder &b, Location loc, ArrayRef<int64_t> allocShape,
                       ArrayRef<Value> index, int64_t elementBytes,
                       int64_t swizzleBytes, bool applySwizzle = true,
                       bool stageOutside = false);

/// The same on index values.
Value emitSwizzleOffset(OpBuilder &b, Location loc, Value linear,
                        int64_t elementBytes, int64_t swizzleBytes);

/// A fragment access whose indices are loop variables of a T.Parallel,
/// some shifted (ShiftedIndex): `acc[i + s * 16, j]`. Indices on the same
/// enclosing variable move together: `combos` are the assignments of the
/// enclosing variables `ivs`, one value each.
struct ShiftedAccess {
  SmallVector<ShiftedIndex> indices;
  SmallVector<Value> ivs;
  SmallVector<SmallVector<int64_t>> combos;

  /// The fragment index that loop index `idx` accesses under `combo`.
  SmallVector<int64_t> at(ArrayRef<int64_t> idx, size_t combo) const;
};

/// Matches the indices of an access in `body` (a T.Parallel's) as a
/// ShiftedAccess with at least one shifted index, distinct loop variables
/// and at most `maxCombos` assignments.
std::optional<ShiftedAccess> matchShiftedAccess(ValueRange indices,
                                                Block *body,
                                                int64_t maxCombos = 64);

/// The register of `frag` that register `reg` of the loop layout `loop`
/// reads through `access` under assignment `combo`, when it is the same in
/// every thread and each thread holds its element. Elements outside the
/// fragment's shape are left out (the access must be guarded so that they
/// are never read): nullopt if `guarded` is false and one is. 0 when no
/// thread reads an element.
std::optional<int64_t> shiftedRegister(const TileLayout &frag,
                                       const TileLayout &loop,
                                       const ShiftedAccess &access,
                                       size_t combo, int64_t reg,
                                       bool guarded);

/// A fragment access in `body` (a T.Parallel's) some of whose indices are
/// values defined outside the loop, the same in every iteration: a serial
/// loop's variable around the T.Parallel (`x[i, j]` in `for i in
/// T.serial(m): for j in T.Parallel(n)`, TileLang's row-by-row fill of a
/// fragment). `maps` has an entry per fragment dimension (an empty map for
/// a uniform one); `uniformDims` are the uniform dimensions, `uniformValues`
/// their index values.
struct UniformAccess {
  SmallVector<IndexMap> maps;
  SmallVector<int64_t> uniformDims;
  SmallVector<Value> uniformValues;
};

/// Matches the indices of an access in `body` as a UniformAccess: each a
/// loop-variable map (matchIndexMap) or a value defined outside the loop,
/// at least one of the latter.
std::optional<UniformAccess> matchUniformAccess(ValueRange indices,
                                                Block *body);

/// The registers of `frag` that register `reg` of the loop layout `loop`
/// accesses through `access`, as `base + sum(u[k] * strides[k])` over the
/// uniform indices u, when that holds for every u within the fragment's
/// shape (at most `maxCombos` of them) and every thread holds its element
/// (the same register in every thread). nullopt otherwise.
struct UniformRegisters {
  int64_t base;
  SmallVector<int64_t> strides;
};
std::optional<UniformRegisters> uniformRegisters(const TileLayout &frag,
                                                 const TileLayout &loop,
                                                 const UniformAccess &access,
                                                 int64_t reg,
                                                 int64_t maxCombos = 256);

} // namespace tile
} // namespace mlir

#endif // TILE_UTILS_LAYOUTUTILS_H
