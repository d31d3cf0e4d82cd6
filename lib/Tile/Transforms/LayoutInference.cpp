//===- LayoutInference.cpp - choose fragment layouts and swizzles ---------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "KernelChecks.h"
#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Transforms/Passes.h"
#include "dialects/Tile/Utils/BufferUtils.h"
#include "dialects/Tile/Utils/LayoutUtils.h"
#include "dialects/Tile/Utils/ThreadVariance.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Analysis/SliceAnalysis.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tile-layout-inference"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILELAYOUTINFERENCE
#include "dialects/Tile/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

namespace {

/// How a parallel loop indexes a fragment.
struct FragmentAccess {
  Operation *op;     // memref.load or memref.store
  Value buffer;      // the fragment
  bool isWrite;
  /// For each fragment dimension, the loop dimension indexing it; empty when
  /// the indices are not distinct induction variables of the loop.
  SmallVector<int64_t> dims;
  bool isProjection() const { return !dims.empty() || rank == 0; }
  int64_t rank = 0;
  /// For each fragment dimension, how it is computed from a loop variable
  /// (`matchIndexMap`); empty when some index is not of that form. A
  /// projection's maps are all identities.
  SmallVector<IndexMap> maps;
  bool isMapped() const { return !maps.empty() && !isProjection(); }
  /// A read through loop variables some of which are shifted
  /// (`acc[i + s * 16, j]`, matchShiftedAccess); neither a projection nor
  /// mapped. `guarded`: it runs under a condition inside the loop.
  std::shared_ptr<const ShiftedAccess> shifted;
  bool guarded = false;
  /// Some indices are values uniform over the loop (a serial loop's
  /// variable around it: `x[i, j]`, matchUniformAccess); neither a
  /// projection nor mapped.
  std::shared_ptr<const UniformAccess> uniform;
};

/// Whether `(a, b) -> c` can run on mma.sync, and its K step. Turing
/// (`sm75`) has f16 only.
static std::optional<int64_t> mmaKStep(Type a, Type b, Type c, bool sm75) {
  if (a != b)
    return std::nullopt;
  if (a.isF16() && (c.isF32() || c.isF16()))
    return 16;
  if (sm75)
    return std::nullopt;
  if (a.isBF16() && c.isF32())
    return 16;
  if (a.isF32() && c.isF32())
    return 8; // tf32
  if (a.isInteger(8) && c.isInteger(32))
    return 32;
  return std::nullopt;
}

/// Whether `(a, b) -> c` can run on wgmma, and its K step.
static std::optional<int64_t> wgmmaKStep(Type a, Type b, Type c) {
  if (a.isF16() && b.isF16() && c.isF32())
    return 16;
  if (a.isBF16() && b.isBF16() && c.isF32())
    return 16;
  if (a.isF32() && b.isF32() && c.isF32())
    return 8; // tf32
  auto isF8 = [](Type t) {
    return isa<Float8E4M3FNType, Float8E5M2Type>(t);
  };
  if (isF8(a) && isF8(b) && c.isF32())
    return 32;
  if (a.isInteger(8) && b.isInteger(8) && c.isInteger(32))
    return 32;
  return std::nullopt;
}

/// The warpgroup grid of a wgmma gemm: wgM x wgN with warpgroup tiles of
/// 64k rows and at most 256 columns (one instruction's N). Splitting M
/// first keeps N per instruction large (fewer shared-memory reads of B).
/// `replicate` takes the 1 x 1 grid (every warpgroup the whole tile; the
/// layout repeats it over the warpgroups).
static std::optional<std::pair<int64_t, int64_t>>
chooseWarpgroups(int64_t m, int64_t n, int64_t groups, WarpPolicy policy) {
  if (policy == WarpPolicy::replicate) {
    if (m % 64 || n % 8 || n > 256)
      return std::nullopt;
    return std::make_pair(int64_t(1), int64_t(1));
  }
  SmallVector<std::pair<int64_t, int64_t>> candidates;
  for (int64_t gm = 1; gm <= groups; ++gm) {
    if (groups % gm)
      continue;
    int64_t gn = groups / gm;
    if (m % gm || n % gn || (m / gm) % 64 || (n / gn) % 8 || n / gn > 256)
      continue;
    candidates.push_back({gm, gn});
  }
  if (candidates.empty())
    return std::nullopt;
  if (policy == WarpPolicy::full_col)
    return candidates.front();
  return candidates.back();
}

/// The swizzle span a shared operand will have (a user's choice, else the
/// one writeBack picks), or nullopt when it is not an allocation wgmma can
/// read whole: the operand must be the full matrix of its allocation (or
/// of one of its leading-dimension slices) with swizzled rows.
static std::optional<int64_t> wgmmaSwizzle(Value operand);

/// The warp grid of a gemm: warpsM x warpsN with warp tiles that are
/// multiples of the instruction tile, tileM x tileN (16 x 8 for mma.sync,
/// 32 x 32 for MFMA). `square` compares the warp tiles in elements.
static std::optional<std::pair<int64_t, int64_t>>
choosePartition(int64_t m, int64_t n, int64_t warps, WarpPolicy policy,
                int64_t tileM = 16, int64_t tileN = 8) {
  auto fits = [&](int64_t wm, int64_t wn) {
    return wm * wn == warps && m % wm == 0 && n % wn == 0 &&
           (m / wm) % tileM == 0 && (n / wn) % tileN == 0;
  };
  SmallVector<std::pair<int64_t, int64_t>> candidates;
  for (int64_t wm = 1; wm <= warps; ++wm)
    if (warps % wm == 0 && fits(wm, warps / wm))
      candidates.push_back({wm, warps / wm});
  if (candidates.empty())
    return std::nullopt;
  switch (policy) {
  case WarpPolicy::full_row:
    // As many warps along M as possible: each warp owns whole rows.
    return candidates.back();
  case WarpPolicy::full_col:
    // As many warps along N as possible: each warp owns whole columns.
    return candidates.front();
  case WarpPolicy::square:
  case WarpPolicy::replicate: // (a wgmma policy: square for warps)
    break;
  }
  auto cost = [&](std::pair<int64_t, int64_t> p) {
    return std::abs(m / p.first - n / p.second);
  };
  return *llvm::min_element(candidates, [&](auto a, auto b) {
    return cost(a) < cost(b) || (cost(a) == cost(b) && a.first > b.first);
  });
}

static std::optional<int64_t> wgmmaSwizzle(Value operand) {
  AllocSharedOp alloc = sharedAllocOf(operand);
  if (!alloc)
    return std::nullopt;
  MemRefType allocType = alloc.getType();
  auto viewType = cast<MemRefType>(operand.getType());
  if (viewType.getRank() != 2 || allocType.getRank() < 2)
    return std::nullopt;
  // A view of whole rows and some columns (`Q_shared[:, 64 * j:64 * (j + 1)]`,
  // a K slice): the columns must be whole swizzle panels (below).
  std::optional<int64_t> sliceColumn;
  if (viewType.getShape() != allocType.getShape().take_back(2)) {
    // (of a 2-d buffer, or of one stage of a multi-buffered one).
    auto sub = operand.getDefiningOp<memref::SubViewOp>();
    int64_t r = allocType.getRank();
    if (!sub || sub.getSource() != alloc.getResult() ||
        viewType.getDimSize(0) != allocType.getDimSize(r - 2) ||
        llvm::any_of(sub.getStaticSizes().drop_back(2),
                     [](int64_t s) { return s != 1; }) ||
        sub.getStaticOffsets()[r - 2] != 0 ||
        ShapedType::isDynamic(sub.getStaticOffsets()[r - 1]))
      return std::nullopt;
    sliceColumn = sub.getStaticOffsets()[r - 1];
  }
  int64_t eb = allocType.getElementTypeBitWidth() / 8;
  int64_t rowBytes = allocType.getShape().back() * eb;
  int64_t span;
  if (SwizzleAttr s = alloc.getSwizzleAttr()) {
    if (s.getPad())
      return std::nullopt;
    span = s.getBytes();
  } else {
    span = defaultSwizzle(allocType);
  }
  if (span == 0 || rowBytes % span)
    return std::nullopt;
  if (sliceColumn && ((*sliceColumn * eb) % span ||
                      (viewType.getDimSize(1) * eb) % span))
    return std::nullopt;
  return span;
}

class LayoutInference {
public:
  /// Infers the layouts of the fragments and loops of the roles of threads
  /// `range` over those threads; kBlockRange: the kernel's, outside every
  /// role (`homes` gives each fragment's threads).
  LayoutInference(KernelOp kernel, ThreadRange range, FragmentHomes &homes,
                  bool useMma, bool mmaSm75, bool useWgmma, bool useMfma)
      : kernel(kernel), range(range), role(range != kBlockRange),
        homes(homes),
        threads(role ? range.second - range.first : kernel.getNumThreads()),
        useMma(useMma), mmaSm75(mmaSm75), useWgmma(useWgmma),
        useMfma(useMfma) {}

  LogicalResult run();

private:
  LogicalResult setLayout(Value frag, const TileLayout &layout, Operation *by);
  bool hasLayout(Value v) const { return layouts.count(v); }
  LogicalResult collect();
  LogicalResult anchorGemms();
  bool propagate();
  LogicalResult checkCrossThreadWrites();
  LogicalResult checkPackedStores();
  LogicalResult convertNonLocalAccesses();
  LogicalResult checkRegistersPerThread();
  void writeBack();

  bool isLocal(const TileLayout &loop, const FragmentAccess &access) const;

  /// Whether `op` runs on this inference's threads.
  bool inScope(Operation *op) const { return rangeOf(op) == range; }
  /// Whether fragment `frag` lives in this inference's threads.
  bool isHome(Value frag) const {
    auto it = homes.find(frag);
    return (it == homes.end() ? kBlockRange : it->second) == range;
  }

  KernelOp kernel;
  ThreadRange range;
  bool role; // the threads of roles, not the block's
  FragmentHomes &homes;
  int64_t threads;
  bool useMma;
  bool mmaSm75; // Turing: f16 mma.sync only, no mma.sp
  bool useWgmma;
  bool useMfma;
  LogicalResult anchorWgmma(GemmOp gemm, bool &done);
  LogicalResult anchorMfma(GemmOp gemm, bool &done);
  LogicalResult anchorGemmSp(GemmSpOp gemm);
  SmallVector<Value> fragments;
  llvm::MapVector<Value, TileLayout> layouts;
  DenseMap<Value, Operation *> origin;
  SmallVector<ParallelOp> loops;
  llvm::MapVector<Operation *, TileLayout> loopLayouts;
  DenseMap<Operation *, SmallVector<FragmentAccess>> accesses;
};

LogicalResult LayoutInference::setLayout(Value frag, const TileLayout &layout,
                                         Operation *by) {
  auto it = layouts.find(frag);
  if (it != layouts.end()) {
    if (it->second == layout)
      return success();
    InFlightDiagnostic diag = by->emitError()
                              << "needs fragment " << frag
                              << " in the layout " << layout.describe()
                              << ", but it already has the layout "
                              << it->second.describe();
    diag.attachNote(origin[frag]->getLoc()) << "layout required here";
    if (layout.describe() == it->second.describe())
      diag.attachNote() << "the two layouts place elements differently: "
                        << layout.toAttr(by->getContext()) << " and "
                        << it->second.toAttr(by->getContext());
    return failure();
  }
  layouts.insert(std::make_pair(frag, layout));
  origin[frag] = by;
  return success();
}

/// The most elements of a fragment that every thread holds whole because
/// it is read element by element outside T.Parallel.
static constexpr int64_t kReplicatedFragmentElements = 256;

/// Returns the alloc_fragment defining `v`, if any.
static AllocFragmentOp fragmentAlloc(Value v) {
  return v.getDefiningOp<AllocFragmentOp>();
}

LogicalResult LayoutInference::collect() {
  WalkResult result = kernel.walk([&](Operation *op) -> WalkResult {
    if (auto alloc = dyn_cast<AllocFragmentOp>(op)) {
      if (!isHome(alloc.getResult()))
        return WalkResult::advance();
      fragments.push_back(alloc.getResult());
      if (FragmentLayoutAttr attr = alloc.getLayoutAttr()) {
        std::string why;
        FailureOr<TileLayout> layout =
            TileLayout::fromAttr(attr, alloc.getType().getShape(), &why);
        if (failed(layout))
          return alloc.emitOpError("has a layout that is not a digit "
                                   "structure: ")
                 << why;
        if (failed(setLayout(alloc.getResult(), *layout, op)))
          return WalkResult::interrupt();
      }
      return WalkResult::advance();
    }
    if (auto annotate = dyn_cast<AnnotateLayoutOp>(op)) {
      Value buffer = annotate.getBuffer();
      if (auto swizzle = dyn_cast<SwizzleAttr>(annotate.getLayout())) {
        if (role)
          return WalkResult::advance(); // the kernel's inference applies it
        auto alloc = buffer.getDefiningOp<AllocSharedOp>();
        if (!alloc)
          return annotate.emitOpError("the annotated buffer must come from a "
                                      "tile.alloc_shared");
        alloc.setSwizzleAttr(swizzle);
        return WalkResult::advance();
      }
      auto attr = cast<FragmentLayoutAttr>(annotate.getLayout());
      if (!fragmentAlloc(buffer))
        return annotate.emitOpError("the annotated buffer must come from a "
                                    "tile.alloc_fragment");
      if (!isHome(buffer))
        return WalkResult::advance(); // the inference of its threads applies it
      std::string why;
      FailureOr<TileLayout> layout = TileLayout::fromAttr(
          attr, cast<MemRefType>(buffer.getType()).getShape(), &why);
      if (failed(layout))
        return annotate.emitOpError("layout is not a digit structure: ") << why;
      if (failed(setLayout(buffer, *layout, op)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    }
    if (auto loop = dyn_cast<ParallelOp>(op)) {
      if (!inScope(loop))
        return WalkResult::advance();
      if (loop->getParentOfType<ParallelOp>())
        return loop.emitOpError("nested T.Parallel loops are not supported on "
                                "GPU targets; use one T.Parallel over all "
                                "dimensions");
      loops.push_back(loop);
      // T.Parallel(..., loop_layout=T.Fragment(...)): the program places
      // the iterations itself; the fragments follow it where nothing else
      // places them (TileLang's annotated loop layout).
      if (auto attr =
              loop->getAttrOfType<FragmentLayoutAttr>("loop_layout")) {
        std::string why;
        FailureOr<TileLayout> given =
            TileLayout::fromAttr(attr, loop.getExtents(), &why);
        if (failed(given)) {
          loop.emitOpError("loop_layout is not a digit structure: ") << why;
          return WalkResult::interrupt();
        }
        if (given->getNumThreads() != threads) {
          loop.emitOpError("loop_layout is over ")
              << given->getNumThreads() << " threads, the loop runs on "
              << threads;
          return WalkResult::interrupt();
        }
        loopLayouts.insert(std::make_pair(loop.getOperation(), *given));
      }
      Block &body = loop.getBody().front();
      SmallVector<FragmentAccess> &list = accesses[loop];
      loop.getBody().walk([&](Operation *inner) {
        Value memref;
        ValueRange indices;
        bool isWrite = false;
        if (auto load = dyn_cast<memref::LoadOp>(inner)) {
          memref = load.getMemRef();
          indices = load.getIndices();
        } else if (auto store = dyn_cast<memref::StoreOp>(inner)) {
          memref = store.getMemRef();
          indices = store.getIndices();
          isWrite = true;
        } else {
          return;
        }
        if (!fragmentAlloc(memref))
          return;
        FragmentAccess access{inner, memref, isWrite, {}, (int64_t)indices.size()};
        for (Value idx : indices) {
          std::optional<IndexMap> m = matchIndexMap(idx, &body);
          if (!m) {
            access.maps.clear();
            break;
          }
          access.maps.push_back(*m);
        }
        // A projection: every index a distinct loop variable.
        SmallVector<int64_t> dims;
        for (const IndexMap &m : access.maps) {
          if (!m.isIdentity() || llvm::is_contained(dims, m.terms[0].dim))
            break;
          dims.push_back(m.terms[0].dim);
        }
        if (!dims.empty() && dims.size() == indices.size())
          access.dims = dims;
        if (access.maps.empty() && !isWrite) {
          if (std::optional<ShiftedAccess> m = matchShiftedAccess(indices, &body))
            access.shifted = std::make_shared<const ShiftedAccess>(std::move(*m));
          access.guarded = inner->getBlock() != &body;
        }
        if (access.maps.empty() && !access.shifted)
          if (std::optional<UniformAccess> m = matchUniformAccess(indices, &body))
            access.uniform = std::make_shared<const UniformAccess>(std::move(*m));
        list.push_back(access);
      });
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult LayoutInference::anchorGemms() {
  WalkResult result = kernel.walk([&](GemmOp gemm) -> WalkResult {
    if (!inScope(gemm))
      return WalkResult::advance();
    Value c = gemm.getC();
    if (!fragmentAlloc(c))
      return gemm.emitOpError("the accumulator must be a tile.alloc_fragment "
                              "on GPU targets");
    // A grid given in the input is a decision already taken (the lowering
    // checks that the accumulator's layout is the grid's).
    if (gemm->hasAttr("warp_partition") || gemm->hasAttr("wgmma") ||
        gemm->hasAttr("mfma"))
      return WalkResult::advance();
    Type a = gemm.getA().getType().getElementType();
    Type b = gemm.getB().getType().getElementType();
    Type acc = gemm.getC().getType().getElementType();
    bool done = false;
    if (failed(anchorWgmma(gemm, done)) || failed(anchorMfma(gemm, done)))
      return WalkResult::interrupt();
    if (done)
      return WalkResult::advance();
    // T.wgmma_gemm asks for wgmma by name: a tile that no grid of whole
    // warpgroups covers in wgmma's 64-row tiles is refused (as TileLang
    // refuses it) rather than run on mma.sync. Operand forms the wgmma
    // lowering here does not take (float16 accumulators, say) still run on
    // mma.sync, with the same results; targets without wgmma run it as
    // T.gemm.
    if (useWgmma && gemm->hasAttr(kRequireWgmmaAttr) &&
        (threads % 128 || !chooseWarpgroups(gemm.getM(), gemm.getN(),
                                            threads / 128, gemm.getPolicy())))
      return gemm.emitOpError("T.wgmma_gemm() requires Hopper WGMMA "
                              "lowering: no grid of whole warpgroups covers "
                              "this ")
             << gemm.getM() << "x" << gemm.getN() << " tile over " << threads
             << " threads in wgmma's tiles of 64 rows (M a multiple of 64 "
                "per warpgroup, N a multiple of 8 up to 256 per warpgroup); "
                "T.gemm runs it on mma.sync";
    std::optional<int64_t> kStep = mmaKStep(a, b, acc, mmaSm75);
    if (!useMma || !kStep || threads % 32 || gemm.getK() % *kStep)
      return WalkResult::advance(); // SIMT gemm: any accumulator layout
    auto partition = choosePartition(gemm.getM(), gemm.getN(), threads / 32,
                                     gemm.getPolicy());
    if (!partition)
      return WalkResult::advance();
    FailureOr<TileLayout> layout = TileLayout::mmaAccumulator(
        gemm.getM(), gemm.getN(), partition->first, partition->second);
    if (failed(layout))
      return WalkResult::advance();
    Builder builder(gemm.getContext());
    gemm->setAttr("warp_partition", builder.getDenseI64ArrayAttr(
                                        {partition->first, partition->second}));
    if (failed(setLayout(c, *layout, gemm)))
      return WalkResult::interrupt();
    // A free 16-bit fragment A gets the layout mma.sync reads A from
    // registers in: per warp, the m16k16 fragment's pairs of columns, which
    // is the accumulator layout of an M x K gemm with the same warp rows
    // (so P = softmax(S) feeds P @ V without shared memory). Warps along N
    // would each need A's rows: that needs replication, so A is left to
    // the shared-memory staging then.
    Value aBuf = gemm.getA();
    if (fragmentAlloc(aBuf) && !hasLayout(aBuf) && partition->second == 1 &&
        !gemm.getTransposeA() && (a.isF16() || a.isBF16())) {
      FailureOr<TileLayout> aLayout = TileLayout::mmaAccumulator(
          gemm.getM(), gemm.getK(), partition->first, 1);
      if (succeeded(aLayout) && failed(setLayout(aBuf, *aLayout, gemm)))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  result = kernel.walk([&](GemmSpOp gemm) -> WalkResult {
    if (!inScope(gemm))
      return WalkResult::advance();
    return failed(anchorGemmSp(gemm)) ? WalkResult::interrupt()
                                      : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// Anchors a 2:4 sparse gemm on the sparse tensor cores, which it needs (it
/// has no SIMT form on GPUs): `wgmma.mma_async.sp` m64nNk32 where the target
/// has wgmma and the operands fit (whole warpgroups, 64-row warpgroup
/// tiles, swizzled shared A and B, a K-major B's rows at least 64 bytes
/// swizzled since one instruction reads 32 of its K), else `mma.sp`
/// m16n8k32 per warp. The accumulator gets the layout of the dense
/// instruction of the same M x N (the sparse ones share it). The metadata
/// stays in shared memory: the lowering fills each thread's metadata
/// register from it (see gemmSpMetadata in TileToNVVM).
LogicalResult LayoutInference::anchorGemmSp(GemmSpOp gemm) {
  Value c = gemm.getC();
  if (!fragmentAlloc(c))
    return gemm.emitOpError("the accumulator must be a tile.alloc_fragment "
                            "on GPU targets");
  auto shared = [](Value v) {
    return isInScope(cast<MemRefType>(v.getType()), MemoryScope::shared);
  };
  if (!shared(gemm.getA()) || !shared(gemm.getE()) || !shared(gemm.getB()))
    return gemm.emitOpError("on GPU targets A_sparse, E and B must be shared "
                            "buffers (T.alloc_shared)");
  if (useMfma)
    return gemm.emitOpError("is not supported on ROCm targets (it needs "
                            "NVIDIA's sparse tensor cores)");
  if (!gemm.getC().getType().getElementType().isF32())
    return gemm.emitOpError("on GPU targets the accumulator must be float32");
  if (mmaSm75)
    return gemm.emitOpError("needs the sparse tensor cores (mma.sp) of sm_80 "
                            "or newer; the kernel is compiled for sm_75");
  if (!useMma || threads % 32 || gemm.getK() % 32)
    return gemm.emitOpError("needs the sparse tensor cores (sm_80 or newer) "
                            "and K a multiple of 32, got K = ")
           << gemm.getK();
  Builder builder(gemm.getContext());
  if (useWgmma && threads % 128 == 0) {
    std::optional<int64_t> spanA = wgmmaSwizzle(gemm.getA());
    std::optional<int64_t> spanB = wgmmaSwizzle(gemm.getB());
    auto groups = chooseWarpgroups(gemm.getM(), gemm.getN(), threads / 128,
                                   gemm.getPolicy());
    int64_t eb = gemm.getB().getType().getElementTypeBitWidth() / 8;
    bool bFits = spanB && (gemm.getTransposeB()
                               ? *spanB >= 64
                               : groups && (gemm.getN() / groups->second) %
                                                   (*spanB / eb) ==
                                               0);
    if (spanA && bFits && groups) {
      FailureOr<TileLayout> layout = TileLayout::wgmmaAccumulator(
          gemm.getM(), gemm.getN(), groups->first, groups->second);
      if (succeeded(layout)) {
        gemm->setAttr("wgmma", builder.getDenseI64ArrayAttr(
                                   {groups->first, groups->second}));
        return setLayout(c, *layout, gemm);
      }
    }
  }
  auto partition = choosePartition(gemm.getM(), gemm.getN(), threads / 32,
                                   gemm.getPolicy());
  FailureOr<TileLayout> layout =
      partition ? TileLayout::mmaAccumulator(gemm.getM(), gemm.getN(),
                                             partition->first,
                                             partition->second)
                : FailureOr<TileLayout>(failure());
  if (failed(layout))
    return gemm.emitOpError("found no warp partition of the ")
           << gemm.getM() << "x" << gemm.getN() << " tile over "
           << threads / 32 << " warps into 16x8 mma.sp tiles";
  gemm->setAttr("warp_partition", builder.getDenseI64ArrayAttr(
                                      {partition->first, partition->second}));
  return setLayout(c, *layout, gemm);
}

/// Anchors `gemm` on wgmma when the target has it and the gemm fits: shared
/// operands wgmma can read (K-major, or MN-major for 16-bit types), whole
/// warpgroups, 64-row warpgroup tiles. Sets `done` when it did.
LogicalResult LayoutInference::anchorWgmma(GemmOp gemm, bool &done) {
  done = false;
  // Packed int4 runs on mma.sync (wgmma has no 4-bit integers).
  if (!useWgmma || threads % 128 || gemm.getInt4())
    return success();
  Type a = gemm.getA().getType().getElementType();
  Type b = gemm.getB().getType().getElementType();
  Type acc = gemm.getC().getType().getElementType();
  std::optional<int64_t> kStep = wgmmaKStep(a, b, acc);
  if (!kStep || gemm.getK() % *kStep)
    return success();
  // A comes from shared memory (a descriptor) or, for 16-bit types, from
  // registers (the RS form): a fragment that is not transposed.
  bool is16 = a.isF16() || a.isBF16();
  bool registerA = isInScope(gemm.getA().getType(), MemoryScope::fragment);
  if (registerA && (!is16 || gemm.getTransposeA() || !fragmentAlloc(gemm.getA())))
    return success();
  if ((!registerA && !isInScope(gemm.getA().getType(), MemoryScope::shared)) ||
      !isInScope(gemm.getB().getType(), MemoryScope::shared))
    return success();
  // K-major A is (M, K) (not transposed); K-major B is (N, K) (transposed).
  if (!is16 && (gemm.getTransposeA() || !gemm.getTransposeB()))
    return success();
  if ((!registerA && !wgmmaSwizzle(gemm.getA())) || !wgmmaSwizzle(gemm.getB()))
    return success();
  auto groups = chooseWarpgroups(gemm.getM(), gemm.getN(), threads / 128,
                                 gemm.getPolicy());
  if (!groups)
    return success();
  int64_t groupsUsed = groups->first * groups->second;
  int64_t replicas = threads / 128 / groupsUsed;
  // Register A: every warpgroup along N needs its own copy of A's rows: a
  // single band of rows (wgM = 1) replicated over all warpgroups (the
  // layout of a `replicate` gemm's accumulator); and a layout fixed
  // elsewhere must already be the one wgmma reads.
  std::optional<TileLayout> aLayout;
  if (registerA) {
    if (groups->second != 1 && groups->first != 1)
      return success();
    FailureOr<TileLayout> l = TileLayout::wgmmaAccumulator(
        gemm.getM(), gemm.getK(), groups->first, 1,
        threads / 128 / groups->first);
    if (failed(l))
      return success();
    auto it = layouts.find(gemm.getA());
    if (it != layouts.end() && it->second != *l)
      return success();
    aLayout = *l;
  }
  // An MN-major operand split across warpgroups must split at its panels.
  auto panelsSplit = [&](Value operand, int64_t extent, int64_t parts) {
    int64_t span = *wgmmaSwizzle(operand) /
                   (cast<MemRefType>(operand.getType()).getElementTypeBitWidth() / 8);
    return parts == 1 || (extent / parts) % span == 0;
  };
  if ((gemm.getTransposeA() && !panelsSplit(gemm.getA(), gemm.getM(), groups->first)) ||
      (!gemm.getTransposeB() && !panelsSplit(gemm.getB(), gemm.getN(), groups->second)))
    return success();
  FailureOr<TileLayout> layout = TileLayout::wgmmaAccumulator(
      gemm.getM(), gemm.getN(), groups->first, groups->second, replicas);
  if (failed(layout))
    return success();
  Builder builder(gemm.getContext());
  gemm->setAttr("wgmma", builder.getDenseI64ArrayAttr(
                             {groups->first, groups->second}));
  done = true;
  if (aLayout && failed(setLayout(gemm.getA(), *aLayout, gemm)))
    return failure();
  return setLayout(gemm.getC(), *layout, gemm);
}

/// Anchors `gemm` on AMD MFMA 32x32x8 (f16/bf16 into f32) when the target
/// has it: waves of 64 threads split the tile like mma.sync's warps (the
/// warp policy), in 32x32 blocks. Fragment operands go through the LDS in
/// the lowering, like on NVIDIA.
LogicalResult LayoutInference::anchorMfma(GemmOp gemm, bool &done) {
  if (done || !useMfma || threads % 64)
    return success();
  Type a = gemm.getA().getType().getElementType();
  Type b = gemm.getB().getType().getElementType();
  Type acc = gemm.getC().getType().getElementType();
  if (a != b || !(a.isF16() || a.isBF16()) || !acc.isF32() ||
      gemm.getK() % 8)
    return success();
  int64_t waves = threads / 64;
  std::optional<std::pair<int64_t, int64_t>> grid = choosePartition(
      gemm.getM(), gemm.getN(), waves, gemm.getPolicy(), 32, 32);
  if (!grid)
    return success();
  FailureOr<TileLayout> layout = TileLayout::mfmaAccumulator(
      gemm.getM(), gemm.getN(), grid->first, grid->second);
  if (failed(layout))
    return success();
  Builder builder(gemm.getContext());
  gemm->setAttr("mfma", builder.getDenseI64ArrayAttr({grid->first, grid->second}));
  done = true;
  return setLayout(gemm.getC(), *layout, gemm);
}

/// Inverts a permutation projection: the loop layout that makes `dims` (a
/// permutation) an identity access of `frag`.
static TileLayout loopLayoutFrom(const TileLayout &frag,
                                 ArrayRef<int64_t> dims) {
  // frag dimension k is loop dimension dims[k]; the loop's dimension j is
  // the fragment's dimension k with dims[k] = j.
  SmallVector<int64_t> inverse(dims.size());
  for (auto [k, d] : llvm::enumerate(dims))
    inverse[d] = k;
  return frag.project(inverse);
}

/// The fragment index a projection or mapped access reads at loop index
/// `idx`.
static SmallVector<int64_t> mappedIndex(const FragmentAccess &access,
                                        ArrayRef<int64_t> idx) {
  SmallVector<int64_t> fidx;
  if (access.isProjection()) {
    for (int64_t d : access.dims)
      fidx.push_back(idx[d]);
    return fidx;
  }
  for (const IndexMap &m : access.maps)
    fidx.push_back(m.evaluate(idx));
  return fidx;
}

/// Whether a mapped access stays within its fragment for every loop index
/// (a map whose result can exceed the fragment's extent is not a layout
/// the loop induces).
static bool inRange(const TileLayout &loop, const FragmentAccess &access,
                    const TileLayout &frag) {
  for (auto [f, m] : llvm::enumerate(access.maps)) {
    int64_t top = 0; // the largest index
    for (const IndexTerm &t : m.terms) {
      int64_t extent = loop.getShape()[t.dim];
      int64_t q = static_cast<int64_t>(llvm::divideCeil(extent, t.div));
      top += ((t.mod ? std::min(t.mod, q) : q) - 1) * t.mul;
    }
    if (top + 1 != frag.getShape()[f])
      return false;
  }
  return true;
}

/// The layout a loop induces on a fragment it reaches through a uniform
/// access (`x[i, j]` with i a serial loop's variable around the
/// T.Parallel over j): the loop's layout over the other dimensions, and
/// every index of the uniform ones in each thread's registers (outermost),
/// so that each thread holds all rows of its columns. None when the maps
/// do not project the loop's layout, or when it would give a thread more
/// than kUniformRegisters registers (the fragment then takes another
/// layout, and the access a conversion).
static constexpr int64_t kUniformRegisters = 128;

static std::optional<TileLayout> rowsInRegisters(const TileLayout &loop,
                                                 const FragmentAccess &a) {
  ArrayRef<int64_t> shape = cast<MemRefType>(a.buffer.getType()).getShape();
  SmallVector<IndexMap> maps;
  SmallVector<int64_t> rest;
  for (auto [d, m] : llvm::enumerate(a.uniform->maps)) {
    if (llvm::is_contained(a.uniform->uniformDims, static_cast<int64_t>(d)))
      continue;
    maps.push_back(m);
    rest.push_back(shape[d]);
  }
  FailureOr<TileLayout> base = loop.projectMapped(maps, rest);
  if (failed(base))
    return std::nullopt;
  TileLayout l = *base;
  for (int64_t d : a.uniform->uniformDims)
    l = l.insertUnitDim(d);
  SmallVector<LayoutDigit> digits(l.getDigits());
  int64_t regs = l.getNumRegs();
  for (int64_t d : a.uniform->uniformDims) {
    if (shape[d] > 1)
      digits.push_back(LayoutDigit{d, 1, shape[d], /*onThread=*/false, regs});
    regs *= shape[d];
  }
  if (regs > kUniformRegisters)
    return std::nullopt;
  TileLayout out(shape, l.getNumThreads(), digits);
  if (failed(out.verify()))
    return std::nullopt;
  return out;
}

bool LayoutInference::propagate() {
  bool changed = false;
  for (ParallelOp loop : loops) {
    auto &list = accesses[loop];
    int64_t rank = loop.getExtents().size();
    if (!loopLayouts.count(loop)) {
      for (const FragmentAccess &a : list) {
        if (a.dims.size() != static_cast<size_t>(rank) || !hasLayout(a.buffer))
          continue;
        TileLayout l = loopLayoutFrom(layouts.find(a.buffer)->second, a.dims);
        if (SmallVector<int64_t>(l.getShape()) !=
            SmallVector<int64_t>(loop.getExtents()))
          continue; // the loop covers only part of the fragment
        loopLayouts.insert(std::make_pair(loop.getOperation(), l));
        changed = true;
        break;
      }
    }
    if (!loopLayouts.count(loop)) {
      // An access through a mixed-radix map (a reshaped fragment,
      // `s[i, j * 64 + k]`) that covers the fragment: the loop takes the
      // fragment's layout pulled back through it.
      for (const FragmentAccess &a : list) {
        if (!a.isMapped() || !hasLayout(a.buffer))
          continue;
        FailureOr<TileLayout> l = layouts.find(a.buffer)->second.pullBack(
            a.maps, loop.getExtents());
        if (failed(l))
          continue;
        loopLayouts.insert(std::make_pair(loop.getOperation(), *l));
        changed = true;
        break;
      }
    }
    if (!loopLayouts.count(loop)) {
      // A shifted read (`acc[i + s * 16, j]` under `if i < 16`) over the
      // whole fragment: the loop takes the fragment's layout when every
      // thread then holds the elements it reads (rows 16 apart in one
      // thread of an mma accumulator), and no shared-memory copy is needed.
      for (const FragmentAccess &a : list) {
        if (!a.shifted || !hasLayout(a.buffer))
          continue;
        SmallVector<int64_t> dims;
        for (const ShiftedIndex &i : a.shifted->indices)
          dims.push_back(i.dim);
        if (static_cast<int64_t>(dims.size()) != rank)
          continue;
        TileLayout l = loopLayoutFrom(layouts.find(a.buffer)->second, dims);
        if (SmallVector<int64_t>(l.getShape()) !=
                SmallVector<int64_t>(loop.getExtents()) ||
            !isLocal(l, a))
          continue;
        loopLayouts.insert(std::make_pair(loop.getOperation(), l));
        changed = true;
        break;
      }
    }
    auto it = loopLayouts.find(loop);
    if (it == loopLayouts.end())
      continue;
    for (const FragmentAccess &a : list) {
      if (!hasLayout(a.buffer) && a.uniform) {
        if (std::optional<TileLayout> l = rowsInRegisters(it->second, a)) {
          layouts.insert(std::make_pair(a.buffer, *l));
          origin[a.buffer] = loop;
          changed = true;
        }
        continue;
      }
      if (hasLayout(a.buffer) || !(a.isProjection() || a.isMapped()))
        continue;
      if (a.isMapped()) {
        FailureOr<TileLayout> mapped = it->second.projectMapped(
            a.maps, cast<MemRefType>(a.buffer.getType()).getShape());
        if (failed(mapped) || !inRange(it->second, a, *mapped))
          continue;
        layouts.insert(std::make_pair(a.buffer, *mapped));
        origin[a.buffer] = loop;
        changed = true;
        continue;
      }
      TileLayout projected = it->second.project(a.dims);
      if (SmallVector<int64_t>(projected.getShape()) !=
          SmallVector<int64_t>(
              cast<MemRefType>(a.buffer.getType()).getShape()))
        continue;
      layouts.insert(std::make_pair(a.buffer, projected));
      origin[a.buffer] = loop;
      changed = true;
    }
  }
  kernel.walk([&](Operation *op) {
    if (!isa<ReduceOp, CopyOp>(op) || !inScope(op))
      return;
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      Value src = reduce.getSrc(), dst = reduce.getDst();
      if (!fragmentAlloc(src) || !fragmentAlloc(dst) || !hasLayout(src) ||
          hasLayout(dst))
        return;
      int64_t dim = reduce.getDim();
      TileLayout l = layouts.find(src)->second.dropDim(dim);
      auto dstType = cast<MemRefType>(dst.getType());
      if (dstType.getRank() == reduce.getSrc().getType().getRank())
        l = l.insertUnitDim(dim);
      else if (dstType.getRank() == 1 && l.getShape().empty())
        l = l.insertUnitDim(0);
      layouts.insert(std::make_pair(dst, l));
      origin[dst] = op;
      changed = true;
    } else if (auto copy = dyn_cast<CopyOp>(op)) {
      Value src = copy.getSrc(), dst = copy.getDst();
      if (!fragmentAlloc(src) || !fragmentAlloc(dst) ||
          cast<MemRefType>(src.getType()).getShape() !=
              cast<MemRefType>(dst.getType()).getShape())
        return;
      if (hasLayout(src) && !hasLayout(dst)) {
        layouts.insert(std::make_pair(dst, layouts.find(src)->second));
        origin[dst] = op;
        changed = true;
      } else if (hasLayout(dst) && !hasLayout(src)) {
        layouts.insert(std::make_pair(src, layouts.find(dst)->second));
        origin[src] = op;
        changed = true;
      }
    }
  });
  return changed;
}

bool LayoutInference::isLocal(const TileLayout &loop,
                              const FragmentAccess &access) const {
  if (access.shifted) {
    const TileLayout &frag = layouts.find(access.buffer)->second;
    for (size_t c = 0; c < access.shifted->combos.size(); ++c)
      for (int64_t r = 0; r < loop.getNumRegs(); ++r)
        if (!shiftedRegister(frag, loop, *access.shifted, c, r,
                             access.guarded))
          return false;
    return true;
  }
  if (access.uniform) {
    // Local when each thread holds every element its iterations reach for
    // every value of the uniform indices, at registers affine in them (the
    // lowering indexes the registers at run time).
    const TileLayout &frag = layouts.find(access.buffer)->second;
    for (int64_t r = 0; r < loop.getNumRegs(); ++r)
      if (!uniformRegisters(frag, loop, *access.uniform, r))
        return false;
    return true;
  }
  if (!access.isProjection() && !access.isMapped())
    return false;
  const TileLayout &frag = layouts.find(access.buffer)->second;
  for (int64_t r = 0; r < loop.getNumRegs(); ++r) {
    std::optional<int64_t> reg;
    for (int64_t t = 0; t < threads; ++t) {
      SmallVector<int64_t> idx = loop.inverse(t, r);
      if (!loop.inBounds(idx))
        continue;
      SmallVector<int64_t> fidx = mappedIndex(access, idx);
      std::optional<int64_t> got = frag.registerOf(fidx, t);
      if (!got || (reg && *reg != *got))
        return false;
      reg = got;
    }
  }
  return true;
}

/// A write in a parallel loop that does not index by every loop variable
/// stores each element from several iterations. That is well defined when
/// those iterations run on one thread (in order: a per-thread accumulation
/// such as `part[n, c] += w[n, c, i] * x[c, i]` with the loop's width
/// covering i) or when they all store the same value. When they run on
/// different threads and the value depends on a dropped variable or on the
/// element itself, each thread would keep its own partial result: refuse
/// it rather than compute a silently wrong one.
LogicalResult LayoutInference::checkCrossThreadWrites() {
  for (ParallelOp loop : loops) {
    const TileLayout &loopLayout = loopLayouts.find(loop)->second;
    int64_t rank = loop.getExtents().size();
    Block &body = loop.getBody().front();
    for (const FragmentAccess &a : accesses[loop]) {
      if (!a.isWrite || !(a.isProjection() || a.isMapped()) ||
          static_cast<int64_t>(a.dims.size()) == rank)
        continue;
      // The loop dimensions the index does not take whole.
      SmallVector<int64_t> dropped;
      for (int64_t d = 0; d < rank; ++d) {
        bool whole = a.isProjection()
                         ? llvm::is_contained(a.dims, d)
                         : llvm::any_of(a.maps, [&](const IndexMap &m) {
                             return m.isIdentity() && m.terms[0].dim == d;
                           });
        if (!whole)
          dropped.push_back(d);
      }
      if (dropped.empty())
        continue;
      int64_t replicate;
      if (a.isProjection()) {
        replicate = loopLayout.project(a.dims).getReplicate();
      } else {
        FailureOr<TileLayout> mapped = loopLayout.projectMapped(
            a.maps, cast<MemRefType>(a.buffer.getType()).getShape());
        if (failed(mapped))
          continue;
        replicate = mapped->getReplicate();
      }
      if (replicate <= loopLayout.getReplicate())
        continue; // the iterations of one element share a thread
      // Does the stored value depend on a dropped variable or on a load of
      // the written fragment?
      bool varies = false;
      SmallVector<Value> work = {cast<memref::StoreOp>(a.op).getValueToStore()};
      DenseSet<Value> seen;
      while (!work.empty() && !varies) {
        Value v = work.pop_back_val();
        if (!seen.insert(v).second)
          continue;
        if (auto arg = dyn_cast<BlockArgument>(v)) {
          varies = arg.getOwner() == &body &&
                   llvm::is_contained(dropped, arg.getArgNumber());
          continue;
        }
        Operation *def = v.getDefiningOp();
        if (!def || !loop->isProperAncestor(def))
          continue;
        if (auto load = dyn_cast<memref::LoadOp>(def))
          if (load.getMemRef() == a.buffer) {
            varies = true;
            continue;
          }
        llvm::append_range(work, def->getOperands());
      }
      if (!varies)
        continue;
      std::string names;
      llvm::raw_string_ostream os(names);
      llvm::interleaveComma(dropped, os, [&](int64_t d) { os << d + 1; });
      return a.op->emitOpError()
             << "writes a fragment element from iterations on different "
                "threads: the index leaves out (or divides) the T.Parallel's "
                "variable "
             << names << " (of " << rank
             << "), which its layout spreads over threads, "
                "and the stored value depends on it (or on the element "
                "itself). Use T.reduce_* across threads, or give the loop a "
                "coalesced_width that covers those iterations so each thread "
                "owns them whole";
    }
  }
  return success();
}

/// The most iterations of a loop `checkPackedStores` enumerates.
static constexpr int64_t kPackedStoreCheckLimit = int64_t(1) << 22;

/// A store of a packed 4-bit element from a T.Parallel (the frontend marks
/// it `tile.packed_store = [dim, pack]`: the element index along the
/// buffer's last dimension is the loop's variable `dim` plus whole bytes)
/// is a read-modify-write of its byte. The `pack` iterations that write one
/// byte (variable `dim` at pack * b + r) must run on one thread, in turn;
/// on two threads they race. TileLang gives each thread whole bytes the
/// same way; a layout that splits them is refused here.
LogicalResult LayoutInference::checkPackedStores() {
  auto text = [](ArrayRef<int64_t> index) {
    std::string out;
    llvm::raw_string_ostream os(out);
    llvm::interleaveComma(index, os);
    return out;
  };
  for (ParallelOp loop : loops) {
    const TileLayout &layout = loopLayouts.find(loop)->second;
    ArrayRef<int64_t> extents = loop.getExtents();
    int64_t total = 1;
    for (int64_t e : extents)
      total *= e;
    WalkResult result = loop.getBody().walk([&](memref::StoreOp store) {
      auto mark = store->getAttrOfType<DenseI64ArrayAttr>("tile.packed_store");
      if (!mark || mark.size() != 2 ||
          store->getParentOfType<ParallelOp>() != loop)
        return WalkResult::advance();
      int64_t dim = mark[0], pack = mark[1];
      if (dim < 0 || dim >= static_cast<int64_t>(extents.size()) ||
          pack < 2 || extents[dim] % pack) {
        store.emitOpError("has a malformed tile.packed_store ")
            << mark << " for a T.Parallel of " << extents.size()
            << " dimensions (its dimension must be one whose extent the "
            << "pack divides)";
        return WalkResult::interrupt();
      }
      if (total * layout.getReplicate() > kPackedStoreCheckLimit) {
        store.emitOpError("stores packed 4-bit elements from a T.Parallel of ")
            << total << " iterations, too many to check that each byte is "
            << "written by one thread; split the loop";
        return WalkResult::interrupt();
      }
      // Every iteration at pack * b of `dim` against its byte's others.
      for (int64_t flat = 0; flat < total; ++flat) {
        SmallVector<int64_t> idx = delinearize(flat, extents);
        if (idx[dim] % pack)
          continue;
        for (int64_t rep = 0; rep < layout.getReplicate(); ++rep) {
          int64_t thread = layout.forward(idx, rep).first;
          SmallVector<int64_t> other(idx);
          for (int64_t r = 1; r < pack; ++r) {
            other[dim] = idx[dim] + r;
            int64_t t = layout.forward(other, rep).first;
            if (t == thread)
              continue;
            store.emitOpError()
                << "stores packed 4-bit elements (" << pack
                << " a byte) from a T.Parallel whose layout puts iterations ("
                << text(idx) << ") and (" << text(other)
                << "), which write the halves of one byte, on threads "
                << thread << " and " << t << ": they race. The loop's layout "
                << layout.describe()
                << " comes from the fragments it accesses; give each thread "
                << "whole bytes (a layout or coalesced_width holding " << pack
                << " consecutive elements of variable " << dim + 1
                << " on one thread), or write the bytes from T.copy";
            return WalkResult::interrupt();
          }
        }
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
  }
  return success();
}

LogicalResult LayoutInference::convertNonLocalAccesses() {
  OpBuilder builder(kernel.getContext());
  for (ParallelOp loop : loops) {
    const TileLayout &loopLayout = loopLayouts.find(loop)->second;
    // Group the non-local accesses by buffer.
    llvm::MapVector<Value, SmallVector<FragmentAccess>> nonLocal;
    for (const FragmentAccess &a : accesses[loop])
      if (!isLocal(loopLayout, a))
        nonLocal[a.buffer].push_back(a);
    // A buffer the loop writes goes through the conversion whole: its local
    // accesses too. Split, an iteration's register write and its access of
    // the same element through the conversion buffer would see different
    // copies, and the copy back after the loop would drop the register
    // write (two nibble stores into one byte, one index matched and the
    // other not, lost the first).
    for (auto &[buffer, list] : nonLocal) {
      bool writes = llvm::any_of(accesses[loop], [&](const FragmentAccess &a) {
        return a.buffer == buffer && a.isWrite;
      });
      if (!writes)
        continue;
      for (const FragmentAccess &a : accesses[loop])
        if (a.buffer == buffer && isLocal(loopLayout, a))
          list.push_back(a);
    }
    for (auto &[buffer, list] : nonLocal) {
      auto type = cast<MemRefType>(buffer.getType());
      // (A loop over part of the fragment, T.clear(C_local[:, :32]) for one,
      // induces a layout of that part only: the whole fragment goes through
      // shared memory then.)
      bool projection =
          llvm::all_of(list,
                       [&](const FragmentAccess &a) {
                         return a.isProjection() && a.dims == list[0].dims;
                       }) &&
          SmallVector<int64_t>(loopLayout.project(list[0].dims).getShape()) ==
              SmallVector<int64_t>(type.getShape());
      // Every access through the same index maps: a fragment in the layout
      // the maps induce.
      std::optional<TileLayout> mappedLayout;
      if (!projection && llvm::all_of(list, [&](const FragmentAccess &a) {
            return a.isMapped() && a.maps == list[0].maps;
          })) {
        FailureOr<TileLayout> m =
            loopLayout.projectMapped(list[0].maps, type.getShape());
        if (succeeded(m) && inRange(loopLayout, list[0], *m))
          mappedLayout = *m;
      }
      bool reads = llvm::any_of(list, [](auto &a) { return !a.isWrite; });
      bool writes = llvm::any_of(list, [](auto &a) { return a.isWrite; });
      Location loc = loop.getLoc();
      // The conversion buffer: a fragment in the loop's layout when every
      // access is the same projection, else a shared-memory copy.
      builder.setInsertionPointToStart(&kernel.getBody().front());
      Value converted;
      if (projection || mappedLayout) {
        auto alloc = AllocFragmentOp::create(builder, loc, type, nullptr);
        homes[alloc.getResult()] = range;
        TileLayout l = mappedLayout ? *mappedLayout
                                    : loopLayout.project(list[0].dims);
        layouts.insert(std::make_pair(alloc.getResult(), l));
        origin[alloc.getResult()] = loop;
        converted = alloc.getResult();
      } else {
        auto sharedType = MemRefType::get(
            type.getShape(), type.getElementType(), MemRefLayoutAttrInterface(),
            MemoryScopeAttr::get(kernel.getContext(), MemoryScope::shared));
        converted = AllocSharedOp::create(builder, loc, sharedType, nullptr);
      }
      LLVM_DEBUG(llvm::dbgs() << "converting " << buffer << " for " << loop
                              << "\n");
      SmallVector<Value> zeros;
      SmallVector<int64_t> sizes(type.getShape());
      builder.setInsertionPoint(loop);
      for (int64_t i = 0; i < type.getRank(); ++i)
        zeros.push_back(arith::ConstantIndexOp::create(builder, loc, 0));
      auto copy = [&](Value from, Value to) {
        CopyOp::create(builder, loc, from, zeros, to, zeros,
                       builder.getDenseI64ArrayAttr(sizes),
                       builder.getDenseI64ArrayAttr(sizes), false);
      };
      if (reads || !(projection || mappedLayout))
        copy(buffer, converted);
      for (const FragmentAccess &a : list)
        a.op->replaceUsesOfWith(buffer, converted);
      if (writes) {
        builder.setInsertionPointAfter(loop);
        copy(converted, buffer);
      }
    }
  }
  return success();
}

/// The GPU lowerings emit code per register of a layout (each thread's
/// elements of a fragment, iterations of a loop), so a layout that gives a
/// thread thousands of them makes minutes of compile time and gigabytes of
/// IR (a 64x64 gemm over 15 threads replicates the whole tile in every
/// thread: 4096 registers). Past limits::kRegistersPerThread it is an error
/// that says how to fix the program.
LogicalResult LayoutInference::checkRegistersPerThread() {
  for (Value frag : fragments) {
    auto it = layouts.find(frag);
    if (it == layouts.end() ||
        it->second.getNumRegs() <= limits::kRegistersPerThread)
      continue;
    return frag.getDefiningOp()->emitOpError("its layout gives each of the ")
           << threads << " threads " << it->second.getNumRegs()
           << " elements, more than the " << limits::kRegistersPerThread
           << " a thread may hold; use more threads (whole warps) or a "
              "smaller tile";
  }
  for (ParallelOp loop : loops) {
    auto it = loopLayouts.find(loop);
    // A per-thread loop past the limit is lowered as a loop, not unrolled,
    // and so is one whose body touches only memory (a copy between global
    // tensors of a 64 x 8192 loop: 4096 iterations a thread).
    if (it == loopLayouts.end() ||
        it->second.getNumRegs() <= limits::kRegistersPerThread ||
        isPerThreadLoop(loop) ||
        (loop.getVector().value_or(1) == 1 && touchesOnlyMemory(loop)))
      continue;
    return loop.emitOpError("its layout gives each of the ")
           << threads << " threads " << it->second.getNumRegs()
           << " iterations, more than the " << limits::kRegistersPerThread
           << " a thread may run; use more threads (whole warps) or a "
              "smaller tile";
  }
  // A gemm without a tensor-core grid runs on the CUDA cores: each thread
  // computes its accumulator registers over all of K, unrolled.
  WalkResult simt = kernel.walk([&](GemmOp gemm) -> WalkResult {
    if (!inScope(gemm))
      return WalkResult::advance();
    if (gemm->hasAttr("warp_partition") || gemm->hasAttr("wgmma") ||
        gemm->hasAttr("mfma"))
      return WalkResult::advance();
    auto it = layouts.find(gemm.getC());
    if (it == layouts.end())
      return WalkResult::advance();
    int64_t macs = it->second.getNumRegs() * gemm.getK();
    if (macs <= limits::kSimtGemmMacsPerThread)
      return WalkResult::advance();
    gemm.emitOpError("runs without tensor cores here (its ")
        << gemm.getM() << "x" << gemm.getN() << " tile, element types and "
        << threads << " threads fit no mma/wgmma/mfma grid), and each thread "
        << "would do " << macs << " multiply-adds of it (more than "
        << limits::kSimtGemmMacsPerThread
        << "): use a power-of-two number of warps that splits the tile, a "
           "smaller tile or a smaller K step";
    return WalkResult::interrupt();
  });
  return failure(simt.wasInterrupted());
}

void LayoutInference::writeBack() {
  MLIRContext *ctx = kernel.getContext();
  for (auto &[frag, layout] : layouts)
    frag.getDefiningOp<AllocFragmentOp>().setLayoutAttr(layout.toAttr(ctx));
  for (auto &[op, layout] : loopLayouts)
    op->setAttr("layout", layout.toAttr(ctx));
  // The kernel's inference runs last (after its roles'): it finishes the
  // shared buffers and drops the annotations every inference has read.
  if (role)
    return;
  // The buffers of a copy into another block of the cluster stay row-major
  // unless something else asked for a swizzle or a gemm reads them (wgmma
  // descriptors need one): their rows can then go as bulk copies
  // (ClusterCopyOp), and both blocks place them alike anyway.
  llvm::SmallPtrSet<Operation *, 4> clusterCopied, gemmOperands;
  kernel.walk([&](Operation *op) {
    SmallVector<Value> operands;
    if (auto g = dyn_cast<GemmOp>(op))
      operands = {g.getA(), g.getB()};
    else if (auto g = dyn_cast<GemmSpOp>(op))
      operands = {g.getA(), g.getE(), g.getB()};
    else if (auto copy = dyn_cast<ClusterCopyOp>(op))
      for (Value v : {copy.getSrc(), copy.getDst()})
        if (AllocSharedOp alloc = sharedAllocOf(v))
          clusterCopied.insert(alloc);
    for (Value v : operands)
      if (AllocSharedOp alloc = sharedAllocOf(v))
        gemmOperands.insert(alloc);
  });
  for (Operation *g : gemmOperands)
    clusterCopied.erase(g);
  kernel.walk([&](AllocSharedOp alloc) {
    if (!alloc.getSwizzleAttr())
      alloc.setSwizzleAttr(SwizzleAttr::get(
          ctx,
          clusterCopied.contains(alloc) ? 0 : defaultSwizzle(alloc.getType()),
          0));
  });
  SmallVector<AnnotateLayoutOp> annotations;
  kernel.walk([&](AnnotateLayoutOp op) { annotations.push_back(op); });
  for (AnnotateLayoutOp op : annotations)
    op.erase();
}

LogicalResult LayoutInference::run() {
  if (failed(collect()) || failed(anchorGemms()))
    return failure();
  // Each round of propagation gives at least one more loop or fragment a
  // layout and none loses one, so a fixpoint comes within that many rounds;
  // the budget turns a bug in that argument into a diagnostic, not a hang.
  int64_t budget = static_cast<int64_t>(fragments.size() + loops.size()) + 1;
  auto propagateToFixpoint = [&]() -> LogicalResult {
    for (int64_t round = 0; propagate(); ++round)
      if (round > budget)
        return kernel.emitOpError("layout inference did not reach a fixpoint "
                                  "within ")
               << budget << " rounds of propagation";
    return success();
  };
  if (failed(propagateToFixpoint()))
    return failure();
  // A small fragment read element by element outside every T.Parallel (`a =
  // mask_f[i]` in a serial loop) is read whole by each thread: unless
  // something placed it already, every thread holds all of it.
  {
    llvm::SmallPtrSet<Value, 4> readOutside;
    kernel.walk([&](memref::LoadOp load) {
      if (!load->getParentOfType<ParallelOp>() && inScope(load))
        readOutside.insert(viewSource(load.getMemRef()));
    });
    bool seeded = false;
    for (Value frag : fragments) {
      auto type = cast<MemRefType>(frag.getType());
      if (hasLayout(frag) || !readOutside.contains(frag) ||
          type.getNumElements() > kReplicatedFragmentElements)
        continue;
      layouts.insert(std::make_pair(
          frag, TileLayout::replicated(type.getShape(), threads)));
      seeded = true;
    }
    if (seeded && failed(propagateToFixpoint()))
      return failure();
  }
  // Unconstrained loops get a blocked layout (each thread `vector`
  // consecutive innermost elements: 4 unless the loop asks for another
  // width); propagate from them too.
  for (ParallelOp loop : loops) {
    if (loopLayouts.count(loop))
      continue;
    // Per-thread code (only local buffers written, no fragment): every
    // thread runs every iteration on its own copy of its buffers. Shared
    // out like the others, each thread would compute only its share of its
    // own buffer, and a copy of that buffer out would store the rest unset.
    if (isPerThreadLoop(loop)) {
      loopLayouts.insert(std::make_pair(
          loop.getOperation(),
          TileLayout::replicated(loop.getExtents(), threads)));
      continue;
    }
    // A width the loop asks for (coalesced_width) may span its trailing
    // dimensions: each thread then owns whole blocks of them, which is how
    // a program keeps a per-thread chunk (and a reduction over it) local.
    std::optional<int64_t> asked = loop.getVector();
    loopLayouts.insert(std::make_pair(
        loop.getOperation(),
        TileLayout::blocked(loop.getExtents(), threads, asked.value_or(4),
                            /*acrossDims=*/asked.has_value())));
    if (failed(propagateToFixpoint()))
      return failure();
  }
  for (Value frag : fragments)
    if (!hasLayout(frag))
      layouts.insert(std::make_pair(
          frag, TileLayout::blocked(cast<MemRefType>(frag.getType()).getShape(),
                                    threads, 4)));
  if (failed(checkCrossThreadWrites()) || failed(checkPackedStores()) ||
      failed(convertNonLocalAccesses()) ||
      failed(checkRegistersPerThread()))
    return failure();
  writeBack();
  return success();
}

struct TileLayoutInferencePass
    : public tile::impl::TileLayoutInferenceBase<TileLayoutInferencePass> {
  using Base::Base;

  void runOnOperation() override {
    WalkResult result = getOperation().walk([&](KernelOp kernel) {
      // Each role's fragments and loops get layouts over the role's
      // threads, then the rest over the block's.
      FragmentHomes homes;
      if (failed(checkThreadBranches(kernel)) ||
          failed(findFragmentHomes(kernel, homes)))
        return WalkResult::interrupt();
      llvm::SetVector<ThreadRange> ranges;
      kernel.walk([&](RoleOp r) { ranges.insert({r.getBegin(), r.getEnd()}); });
      for (ThreadRange r : ranges)
        if (failed(LayoutInference(kernel, r, homes, mma, mmaSm75, wgmma, mfma).run()))
          return WalkResult::interrupt();
      if (failed(LayoutInference(kernel, kBlockRange, homes, mma, mmaSm75,
                          wgmma, mfma)
                     .run()))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
