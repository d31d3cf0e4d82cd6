//===- WarpSpecialize.cpp - producer/consumer pipelines ---------------------===//
//
// Part of tilelang-mlir.
//
// Hopper pipelining: a `tile.pipelined` loop whose copies from global to
// shared memory can run on the tensor memory accelerator becomes a ring of
// `num_stages` shared-memory slots guarded by two arrays of transaction
// barriers, with one added warpgroup (the producer) issuing the copies and
// the kernel's threads (the consumers) computing:
//
//   producer, iteration i (slot s = i mod S, round r = i / S):
//     wait empty[s] for parity (r mod 2) xor 1   (round 0 passes at once)
//     arrive on full[s] expecting the bytes of the copies
//     copy ... via full[s]
//   consumer, iteration i:
//     wait full[s] for parity r mod 2
//     the loop's other statements, on slot s
//     arrive on empty[s]  (one arrival per consumer warp)
//
// Everything else of the kernel body moves into the consumer region; the
// producer recomputes the copy offsets from pure ops.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Transforms/Passes.h"
#include "dialects/Tile/Transforms/PipelineUtils.h"
#include "dialects/Tile/Utils/LayoutUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tile-warp-specialize"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILEWARPSPECIALIZE
#include "dialects/Tile/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

namespace {

/// Why a loop is left to the generic pipeliner (for debugging output).
#define SKIP(why)                                                              \
  do {                                                                         \
    LLVM_DEBUG(llvm::dbgs() << "tile-warp-specialize: skip: " << why << "\n");  \
    return failure();                                                          \
  } while (false)

class Specializer {
public:
  Specializer(KernelOp kernel, PipelinedOp loop)
      : kernel(kernel), loop(loop), body(&loop.getBody().front()),
        loc(loop.getLoc()), top(kernel.getContext()) {}

  /// Checks the loop; on success `run` rewrites the kernel.
  LogicalResult analyze();
  void run();

private:
  bool isTmaCopy(CopyOp copy);
  bool recomputable(Value v);
  bool dependsOn(Value v, Value arg);
  void chooseCluster();
  void choosePersistent();
  int64_t boxesOf(CopyOp copy);
  struct TileLoop {
    scf::ForOp forOp;
    SmallVector<Value> coords; // the block indices of the tile
    Value base;      // the loop iterations of the block's earlier tiles
    Value iteration; // which tile of this block (0, 1, ...)
  };
  TileLoop buildTileLoop(OpBuilder &b, Location loc);
  void endTile(TileLoop &tiles, Value trips);
  Value cloneForProducer(OpBuilder &b, Value v, IRMapping &map);

  KernelOp kernel;
  PipelinedOp loop;
  Block *body;
  SmallVector<CopyOp> producers;
  llvm::SmallSetVector<Value, 4> buffers; // the produced allocations
  int64_t txBytes = 0;
  bool overlap = false; // consumer gemms stay in flight across iterations
  // Clusters of `clusterSize` blocks along grid dimension `clusterDim`
  // (-1: none) share the copies in `multicast`.
  int64_t clusterDim = -1;
  llvm::SmallDenseSet<Operation *> multicast;

  // Persistent: `numClusters` clusters of `clusterSize` blocks (one block
  // each without clusters) walk the tiles of the constant `grid`.
  bool persistent = false;
  SmallVector<int64_t> grid;
  int64_t numClusters = 0, clusterTiles = 0;
  // The walk's order of the tiles (uniform: the grid dimensions the loop's
  // bounds do not depend on; varying: those they do, the tile's work):
  // groups of `groupSize` uniform indices one after the other, each walked
  // with its uniform index fastest and the varying ones in launch order
  // (a causal kernel's longest blocks first), so that the tiles in flight
  // share the few heads of a group (their K and V stay in L2) while the
  // work of a round descends. `zigzag` (varying work): the blocks take the
  // rounds in alternating directions and even out.
  SmallVector<unsigned> uniformDims, varyingDims;
  int64_t groupSize = 1;
  bool zigzag = false;
  // A persistent block's tile copies: TMA copies before the loop (the
  // query tile of attention) that the producer issues for the next tile
  // while the consumers finish this one, on a ring of `tileSlots` tile
  // slots: two where they fit; with `earlyTileRelease`, one where only one
  // does and nothing uses the buffers after the loop (the backward's K and
  // V with dK and dV stored from their fragments), so that the next tile's
  // copies land during this tile's epilogue. `releaseAfterLoop`: the
  // consumers free the slot right after the loop, not at the end of the
  // tile.
  void findTileCopies();
  bool tilesDeadAfterLoop();
  SmallVector<CopyOp> tileCopies;
  int64_t tileBytes = 0;
  bool prefetchTiles = false;
  int64_t tileSlots = 2;
  bool releaseAfterLoop = false;

public:
  /// A kernel that is not persistent has the producer issue its tile
  /// copies too, once, before its loop (see `tilesOnce` in `run`).
  bool producerTileCopies = false;
  /// Tile copies dead after the loop free their slot there; one slot may
  /// do (see `tileSlots`).
  bool earlyTileRelease = false;
  int64_t clusterSize = 1;
  int64_t persistentSms = 0;
  /// Consumer warpgroups may take turns at their gemms (see `pingpong`).
  bool allowPingpong = true;
  /// The loop's gemms are marked `pingpong`: two or more synchronous gemms
  /// with other work between them (attention: S = Q K^T, softmax, O += P V)
  /// on two or more consumer warpgroups.
  bool pingpong = false;
  /// The consumer may rotate an attention-like loop (see `rotate`).
  bool allowRotate = false;
  /// The consumer loop is rotated: iteration k issues S_k = Q K_k^T and
  /// the previous iteration's O += P V together, runs the part of the
  /// softmax that leaves O and P alone while O += P V is on the tensor
  /// cores, and waits for it only before rescaling O and writing P.
  bool rotate = false;
  /// The rotated loop's wait for O += P V is marked `tile.sched_barrier`.
  bool schedBarrier = false;
  /// The consumer warpgroups of a rotated loop take turns at the pair of
  /// gemms an iteration issues (`pingpong_begin` .. `pingpong_end`).
  bool rotatePingpong = false;

private:
  bool analyzeRotation();
  // The rotated loop body: the statements before the first gemm, the first
  // gemm, the statements between the gemms that leave the second gemm's
  // operands alone (`middle`) and those that do not or depend on them
  // (`late`), the second gemm (the last statement).
  SmallVector<Operation *> early, middle, late;
  GemmOp first, second;
  // Rotated: the copies into the second gemm's shared operand (V) have a
  // ring of barriers of their own (`splitRing`), so slot k - 1's V and slot
  // k's K are held, not two whole slots: V is freed after O += P V, K once
  // S = Q K^T is done (`freeFirstEarly`: nothing after the first gemm reads
  // the other copies' buffers) or at the end of the iteration.
  void analyzeSplitRing();
  bool splitRing = false, freeFirstEarly = false;
  llvm::SmallDenseSet<Operation *> secondCopies;
  int64_t secondBytes = 0;

  // The steps of `run` (in this order) and their helpers.
  void allocateRings();
  void createRegions();
  void buildTileLoops();
  void allocateTileRings();
  void prefetchTileCopies();
  void produceTileCopiesOnce();
  void buildProducer();
  void buildRotatedConsumer();
  void buildRotatedIteration(scf::ForOp forOp, Value base);
  void buildConsumer();
  void releaseOverlapped(scf::ForOp forOp, Value slot, Value trips,
                         Value base);
  void finish();
  Value ringOf(Value buf, int64_t slots);
  MemRefType barriersOf(int64_t slots);
  std::pair<Value, Value> slotAndParity(OpBuilder &b, Value iv, Value lower,
                                        Value step, Value base);
  Value slotView(OpBuilder &b, Value old, Value slot);
  void produceCopy(OpBuilder &b, CopyOp p, Value bar, Value slot,
                   IntegerAttr cast, Value dst = Value());
  IRMapping iterationMap(OpBuilder &b, Value iv, Value slot);

  // The state the steps share.
  Location loc;
  OpBuilder top; // the allocations, at the top of the kernel body
  int64_t stages = 1, consumerWarps = 0, blocks = 1;
  // The produced buffers' rings, and the tile copies' (`prefetchTiles`).
  llvm::MapVector<Value, Value> slotted, tileSlotted;
  // The ring's barriers; the second gemm's (`splitRing`), else the same.
  Value full, empty, fullV, emptyV;
  UnitAttr remote; // arrivals on every block of the cluster
  Block *producer = nullptr, *consumer = nullptr;
  SmallVector<Operation *> moved; // the statements of the consumer region
  IRMapping pmap;                 // consumer values -> the producer's
  TileLoop pTiles, cTiles;        // persistent: the tile loops
};

/// The bytes a produced copy writes (its whole destination allocation).
static int64_t copyBytes(CopyOp copy) {
  MemRefType type = copy.getDst().getType();
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

/// The swizzle of a shared allocation (its own, or the default the ring
/// and the TMA copies give it).
static int64_t swizzleOf(AllocSharedOp alloc) {
  return alloc.getSwizzleAttr() ? alloc.getSwizzleAttr().getBytes()
                                : defaultSwizzle(alloc.getType());
}

/// The bytes between two panels of a `shape` allocation of `eb`-byte
/// elements under a `swizzle`-byte swizzle (its rows times the span; see
/// sharedLinear), 0 without panels.
static int64_t panelBytes(ArrayRef<int64_t> shape, int64_t eb,
                          int64_t swizzle) {
  if (!sharedPanelElements(shape, eb, swizzle))
    return 0;
  return shape[shape.size() - 2] * swizzle;
}

/// The shape of one slot of a ring of `type` tiles under a `swizzle`-byte
/// swizzle: the tile's shape, its outermost dimension padded so that every
/// TMA destination in the slot starts 128-byte aligned (cp.async.bulk.tensor
/// faults with a misaligned address otherwise): the slot (a ring of (1, 8)
/// float32 tiles would put its slots 32 bytes apart) and, for a tile of
/// rank 2 filled panel by panel, each panel (rows times the span: (3, 48)
/// float16 rows have 32-byte panels of 96 bytes). The padding leaves the
/// rows (and so the swizzle and the panels' count) as they are; slot views
/// keep their type (strides of the tile, an offset).
static SmallVector<int64_t> ringSlotShape(MemRefType type, int64_t swizzle) {
  SmallVector<int64_t> shape(type.getShape());
  int64_t eb = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  if (shape.empty())
    return shape;
  int64_t inner = eb; // bytes of one step of the outermost dimension
  for (int64_t d : ArrayRef<int64_t>(shape).drop_front())
    inner *= d;
  int64_t step = 128 / std::gcd<int64_t>(inner, 128);
  if (shape.size() == 2 && panelBytes(shape, eb, swizzle))
    step = std::lcm<int64_t>(step, 128 / std::gcd<int64_t>(swizzle, 128));
  shape.front() = llvm::alignTo(shape.front(), step);
  return shape;
}

/// The bytes of one ring slot of the allocation `alloc` (ringSlotShape).
static int64_t ringSlotBytes(AllocSharedOp alloc) {
  MemRefType type = alloc.getType();
  int64_t n = 1;
  for (int64_t d : ringSlotShape(type, swizzleOf(alloc)))
    n *= d;
  return n * type.getElementTypeBitWidth() / 8;
}

/// Whether TMA can fill the allocation `type` (under a `swizzle`-byte
/// swizzle) panel by panel where it stands, not on a ring: every panel
/// starts 128-byte aligned.
static bool panelsAligned(MemRefType type, int64_t swizzle) {
  int64_t eb = type.getElementTypeBitWidth() / 8;
  return eb == 0 || panelBytes(type.getShape(), eb, swizzle) % 128 == 0;
}

/// A copy TMA can do: from a kernel argument (a global tensor of the
/// enclosing function) into a whole shared allocation of the kernel body,
/// same element type, boxes of at most 256 per dimension, whose innermost
/// extent and start are multiples of 16 bytes.
bool Specializer::isTmaCopy(CopyOp copy) {
  if (copy.getAsync() || copy.getBarrier())
    return false;
  auto arg = dyn_cast<BlockArgument>(copy.getSrc());
  if (!arg || !isa<func::FuncOp>(arg.getOwner()->getParentOp()))
    return false;
  auto alloc = copy.getDst().getDefiningOp<AllocSharedOp>();
  if (!alloc || alloc->getBlock() != &kernel.getBody().front())
    return false;
  MemRefType src = copy.getSrc().getType(), dst = alloc.getType();
  if (copy.convertsElements() || src.getRank() > 5 ||
      !src.getLayout().isIdentity())
    return false;
  if (ArrayRef<int64_t>(copy.getDstSizes()) != dst.getShape())
    return false;
  for (Value o : copy.getDstOffsets())
    if (!matchPattern(o, m_Zero()))
      return false;
  int64_t eb = src.getElementTypeBitWidth() / 8;
  if (eb == 0 || !tensorMapStrides(src))
    return false;
  // A destination whose rows are wider than its swizzle span is filled one
  // panel at a time (a box one span wide), so only the boxes must fit the
  // 256-element limit: the 64 x 512 latent tile of MLA is eight boxes.
  int64_t inner = copy.getSrcSizes().back();
  int64_t span = (alloc.getSwizzleAttr() ? alloc.getSwizzleAttr().getBytes()
                                         : defaultSwizzle(dst)) /
                 eb;
  for (int64_t s : copy.getSrcSizes().drop_back())
    if (s < 1 || s > 256)
      return false;
  if (inner < 1 || (inner > 256 && (!span || inner % span)))
    return false;
  if ((inner * eb) % 16)
    return false;
  if ((knownDivisor(copy.getSrcOffsets().back()) * eb) % 16)
    return false;
  if (AllocSharedOp a = alloc; a.getSwizzleAttr() && a.getSwizzleAttr().getPad())
    return false;
  // A box is one panel wide and spans every other dimension: panels of a
  // tile of rank 3 or more hold one batch each (see sharedLinear), which
  // such a box would write across; and their starts, rows times the span
  // apart, must be 128-byte aligned, which a ring pads (ringSlotShape)
  // only for tiles of rank 2.
  if (dst.getRank() > 2 && panelBytes(dst.getShape(), eb, swizzleOf(alloc))) {
    int64_t batch = 1;
    for (int64_t d : dst.getShape().drop_back(2))
      batch *= d;
    if (batch > 1 || !panelsAligned(dst, swizzleOf(alloc)))
      return false;
  }
  return true;
}

/// Whether `memref` is an argument of the enclosing function that the kernel
/// only reads (element loads and copy sources): a block table or the
/// sequence lengths of paged attention, which every role may load itself.
static bool isReadOnlyArgument(Value memref, KernelOp kernel) {
  auto arg = dyn_cast<BlockArgument>(memref);
  if (!arg || !isa<func::FuncOp>(arg.getOwner()->getParentOp()))
    return false;
  return llvm::all_of(arg.getUses(), [&](OpOperand &use) {
    Operation *user = use.getOwner();
    if (!kernel->isAncestor(user) || isa<memref::LoadOp>(user))
      return true;
    auto copy = dyn_cast<CopyOp>(user);
    return copy && copy.getDst() != memref;
  });
}

/// Whether `v` can be recomputed in the producer: defined outside the
/// kernel, a block argument of the kernel or the loop, the result of a
/// pure op (no regions) whose operands are recomputable, or a load from a
/// read-only kernel argument at recomputable indices (the page of a paged
/// KV cache read from its block table).
bool Specializer::recomputable(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return true; // block arguments (grid indices, the loop's iv, ...)
  if (!kernel->isAncestor(def))
    return true;
  if (auto load = dyn_cast<memref::LoadOp>(def))
    return isReadOnlyArgument(load.getMemRef(), kernel) &&
           llvm::all_of(load.getIndices(),
                        [&](Value o) { return recomputable(o); });
  if (def->getNumRegions() || !isMemoryEffectFree(def))
    return false;
  return llvm::all_of(def->getOperands(),
                      [&](Value o) { return recomputable(o); });
}

bool Specializer::dependsOn(Value v, Value arg) {
  if (v == arg)
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || !kernel->isAncestor(def))
    return false;
  return llvm::any_of(def->getOperands(),
                      [&](Value o) { return dependsOn(o, arg); });
}

/// The TMA boxes of a copy: its destination's panels (one box per panel of
/// a swizzle span; see sharedLinear), or one.
int64_t Specializer::boxesOf(CopyOp copy) {
  auto alloc = copy.getDst().getDefiningOp<AllocSharedOp>();
  MemRefType type = alloc.getType();
  int64_t span = alloc.getSwizzleAttr() ? alloc.getSwizzleAttr().getBytes()
                                        : defaultSwizzle(type);
  int64_t rowBytes = type.getShape().back() * type.getElementTypeBitWidth() / 8;
  return span && rowBytes > span ? rowBytes / span : 1;
}

/// Clusters of blocks along a grid dimension whose index some copies do not
/// depend on: those copies are the same for every block of the cluster and
/// are multicast, each block issuing its share of the boxes. The grid
/// extent must be a constant multiple of the cluster size (no padding
/// blocks). A block-order remap (use_swizzle) is lowered cluster by
/// cluster, which keeps the members of a cluster together.
void Specializer::chooseCluster() {
  if (clusterSize < 2)
    return;
  int64_t bestBytes = 0;
  Block &kbody = kernel.getBody().front();
  for (auto [d, extent] : llvm::enumerate(kernel.getGrid())) {
    std::optional<int64_t> n = getConstantIntValue(extent);
    if (!n || *n % clusterSize || *n < clusterSize)
      continue;
    Value arg = kbody.getArgument(d);
    // Every block of a cluster issues a share of the multicast copies of
    // every iteration: all must run the same iterations (not so for a
    // causal attention loop bounded by the query block's index).
    if (dependsOn(loop.getLower(), arg) || dependsOn(loop.getUpper(), arg) ||
        dependsOn(loop.getStep(), arg))
      continue;
    int64_t bytes = 0;
    SmallVector<Operation *> shared;
    for (CopyOp p : producers) {
      bool independent = llvm::none_of(
          p.getSrcOffsets(), [&](Value o) { return dependsOn(o, arg); });
      if (!independent || boxesOf(p) % clusterSize)
        continue;
      shared.push_back(p);
      bytes += copyBytes(p);
    }
    if (bytes > bestBytes) {
      bestBytes = bytes;
      clusterDim = d;
      multicast.clear();
      multicast.insert(shared.begin(), shared.end());
    }
  }
}

Value Specializer::cloneForProducer(OpBuilder &b, Value v, IRMapping &map) {
  if (Value m = map.lookupOrNull(v))
    return m;
  Operation *def = v.getDefiningOp();
  if (!def || !kernel->isAncestor(def))
    return v;
  for (Value o : def->getOperands())
    cloneForProducer(b, o, map);
  b.clone(*def, map);
  return map.lookup(v);
}

LogicalResult Specializer::analyze() {
  if (loop.getOrder() || loop.getStage())
    SKIP("the loop has a user schedule");
  if (loop->getBlock() != &kernel.getBody().front())
    SKIP("the loop is nested");
  if (!recomputable(loop.getLower()) || !recomputable(loop.getUpper()) ||
      !recomputable(loop.getStep()))
    SKIP("the loop bounds are not pure");
  ArrayRef<int64_t> threads = kernel.getThreads();
  if (threads.size() != 1 || threads[0] % 128 || threads[0] + 128 > 1024)
    SKIP("threads are not whole warpgroups");
  // Every thread of every block of the cluster reaches a cluster barrier,
  // the producer's too; the program's own barriers and copies between the
  // blocks of the cluster keep their order with the loop's other work.
  if (loop.getBody()
          .walk([](Operation *op) {
            auto copy = dyn_cast<CopyOp>(op);
            return isa<ClusterBarrierOp, ClusterCopyOp, BarrierWaitOp,
                       BarrierArriveOp, BarrierArriveRankOp>(op) ||
                           (copy && copy.getBarrier())
                       ? WalkResult::interrupt()
                       : WalkResult::advance();
          })
          .wasInterrupted())
    SKIP("the loop synchronizes through the cluster or barriers of its own");
  for (Operation &op : body->without_terminator()) {
    auto copy = dyn_cast<CopyOp>(&op);
    if (!copy || !isTmaCopy(copy))
      continue;
    if (!llvm::all_of(copy.getSrcOffsets(),
                      [&](Value o) { return recomputable(o); }) ||
        !llvm::all_of(copy.getDstOffsets(),
                      [&](Value o) { return recomputable(o); }))
      continue;
    producers.push_back(copy);
    buffers.insert(copy.getDst());
  }
  if (producers.empty())
    SKIP("no copy can use TMA");
  // One producer per buffer; the buffers are used only in the loop, where
  // nothing else writes them.
  llvm::SmallDenseSet<Value> seen;
  for (CopyOp p : producers) {
    if (!seen.insert(p.getDst()).second)
      SKIP("two copies fill one buffer");
    txBytes += copyBytes(p);
  }
  for (Value buf : buffers) {
    for (OpOperand &use : buf.getUses()) {
      Operation *user = use.getOwner();
      if (!loop->isAncestor(user))
        SKIP("a produced buffer is used outside the loop");
      if (llvm::is_contained(producers, dyn_cast<CopyOp>(user)))
        continue;
      // Reads only: gemm operands, copy sources, loads, reduction sources.
      bool read = false;
      if (auto g = dyn_cast<GemmOp>(user))
        read = use.get() != g.getC();
      else if (auto g = dyn_cast<GemmSpOp>(user))
        read = use.get() != g.getC();
      else if (auto c = dyn_cast<CopyOp>(user))
        read = use.get() == c.getSrc() && use.get() != c.getDst();
      else if (isa<memref::LoadOp>(user))
        read = true;
      else if (auto r = dyn_cast<ReduceOp>(user))
        read = use.get() == r.getSrc();
      if (!read)
        SKIP("a produced buffer is used by something other than a reader");
    }
  }
  if (txBytes >= (1 << 20))
    SKIP("too many bytes per stage");
  // Packed int4 gemms run on mma.sync, fed by the cp.async pipeline.
  for (Operation &op : body->without_terminator())
    if (auto g = dyn_cast<GemmOp>(&op); g && g.getInt4())
      SKIP("an int4 gemm (mma.sync)");
  // The consumer can keep its gemms in flight across iterations when the
  // loop does nothing but gemms with accumulators no other statement of the
  // loop touches.
  overlap = true;
  bool anyGemm = false;
  for (Operation &op : body->without_terminator()) {
    if (auto copy = dyn_cast<CopyOp>(&op);
        copy && llvm::is_contained(producers, copy))
      continue;
    if (isa<GemmSpOp>(&op)) {
      // Never with a sparse gemm: wgmma.mma_async.sp reads its metadata
      // register while in flight, and the next iteration's metadata loads
      // may land in the same physical register before a wgmma.wait_group
      // covers it (the hazard the ISA names for A fragments in registers).
      // Kept in flight, part of a tile used another K step's metadata
      // (issue 8: 3-17% wrong results with block_K = 128, where every copy
      // is a TMA and the loop overlapped). CUTLASS's sm90 sparse mainloop
      // keeps no MMA in flight across k-tiles for the same reason.
      overlap = false;
      continue;
    }
    if (isa<GemmOp>(&op)) {
      anyGemm = true;
      Value c = cast<GemmOp>(op).getC();
      for (Operation *user : c.getUsers())
        if (loop->isAncestor(user) && !isa<GemmOp, GemmSpOp>(user))
          overlap = false;
      continue;
    }
    if (!isMemoryEffectFree(&op))
      overlap = false;
  }
  // With one slot the producer cannot run ahead: the slot must be released
  // in the iteration that read it (keeping the gemm in flight and releasing
  // it one iteration later deadlocks: TileLang's num_stages=0/1 GEMMs).
  overlap &= anyGemm && loop.getNumStages() >= 2;
  int64_t gemms = llvm::count_if(body->without_terminator(),
                                 [](Operation &op) { return isa<GemmOp>(op); });
  rotate = allowRotate && !overlap && analyzeRotation();
  if (rotate)
    analyzeSplitRing();
  rotatePingpong = rotate && allowPingpong && kernel.getThreads()[0] >= 256;
  // (A rotated loop's turns span the two gemms an iteration issues.)
  pingpong = allowPingpong && !overlap && !rotate && gemms >= 2 &&
             kernel.getThreads()[0] >= 256;
  chooseCluster();
  findTileCopies();
  choosePersistent();
  return success();
}

/// The buffer (or value) an operand stands for: views traced to their
/// source.
static Value rootOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    v = view.getViewSource();
  }
  return v;
}

/// Every value `op` (and the statements nested in it) reads or writes that
/// is defined outside it, views traced to their buffers.
static llvm::SmallDenseSet<Value> touchedBy(Operation *op) {
  llvm::SmallDenseSet<Value> out;
  op->walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      if (!op->isAncestor(v.getParentBlock()->getParentOp()))
        out.insert(rootOf(v));
  });
  return out;
}

/// Whether the consumer's statements (the loop without the produced
/// copies) are [early...] gemm [between...] gemm, the second gemm's
/// operands other than its shared B untouched before the first gemm, and
/// its A and accumulator in registers (attention: S = Q K^T, the softmax,
/// O += P V); splits the statements between the gemms into `middle` and
/// `late` (those that touch the second gemm's A or C, or anything a late
/// statement touched or defined: moving them after the middle ones keeps
/// every dependence).
bool Specializer::analyzeRotation() {
  SmallVector<Operation *> ops;
  for (Operation &op : body->without_terminator())
    if (auto copy = dyn_cast<CopyOp>(&op);
        !copy || !llvm::is_contained(producers, copy))
      ops.push_back(&op);
  SmallVector<GemmOp> gemms;
  for (Operation *op : ops)
    if (auto g = dyn_cast<GemmOp>(op))
      gemms.push_back(g);
  if (gemms.size() != 2 || ops.back() != gemms[1].getOperation() ||
      kernel.getThreads()[0] < 128)
    return false;
  first = gemms[0];
  second = gemms[1];
  if (first.getAsync() || second.getAsync() ||
      !isInScope(second.getA().getType(), MemoryScope::fragment) ||
      !isInScope(second.getC().getType(), MemoryScope::fragment) ||
      !isInScope(first.getC().getType(), MemoryScope::fragment))
    return false;
  // The second gemm runs one iteration late: it may read nothing the loop
  // defines but its own operands.
  for (Value v : second->getOperands())
    if (Operation *def = v.getDefiningOp(); def && body->findAncestorOpInBlock(*def))
      return false;
  llvm::SmallDenseSet<Value> lateSet = {rootOf(second.getA()),
                                        rootOf(second.getC())};
  early.clear();
  middle.clear();
  late.clear();
  bool between = false;
  for (Operation *op : ops) {
    if (op == second.getOperation())
      break;
    if (op == first.getOperation()) {
      between = true;
      continue;
    }
    llvm::SmallDenseSet<Value> touched = touchedBy(op);
    bool isLate = llvm::any_of(touched, [&](Value v) { return lateSet.contains(v); });
    if (!between) {
      if (isLate)
        return false; // the in-flight O += P V would see it
      early.push_back(op);
      continue;
    }
    if (!isLate) {
      middle.push_back(op);
      continue;
    }
    late.push_back(op);
    lateSet.insert(touched.begin(), touched.end());
    for (Value r : op->getResults())
      lateSet.insert(r);
  }
  // The first gemm's accumulator is in flight during the second gemm.
  if (lateSet.contains(rootOf(first.getA())) ||
      lateSet.contains(rootOf(first.getB())))
    return false;
  return true;
}

void Specializer::analyzeSplitRing() {
  Value b = rootOf(second.getB());
  secondCopies.clear();
  secondBytes = 0;
  for (CopyOp p : producers)
    if (p.getDst() == b) {
      secondCopies.insert(p);
      secondBytes += copyBytes(p);
    }
  if (secondCopies.empty() || secondCopies.size() == producers.size())
    return;
  // The second gemm alone reads its operand's buffer.
  for (OpOperand &use : b.getUses())
    if (use.getOwner() != second.getOperation() &&
        !secondCopies.contains(use.getOwner()))
      return;
  splitRing = true;
  freeFirstEarly = true;
  for (ArrayRef<Operation *> ops : {ArrayRef(middle), ArrayRef(late)})
    for (Operation *op : ops)
      for (Value v : touchedBy(op))
        if (buffers.contains(v))
          freeFirstEarly = false;
}

/// The bytes of a kernel's shared allocations once specialized.
struct SharedFootprint {
  /// Every allocation: the produced buffers times the stages, the tile
  /// copies' buffers times the tile slots, the others once.
  int64_t total = 0;
  /// The produced buffers' stages.
  int64_t ring = 0;
  /// The buffers used only after the loop (a tile written in the epilogue).
  int64_t afterLoop = 0;
};

static SharedFootprint
sharedFootprint(KernelOp kernel, PipelinedOp loop, int64_t stages,
                const llvm::SmallSetVector<Value, 4> &buffers,
                ArrayRef<CopyOp> tileCopies, int64_t tileSlots) {
  SharedFootprint f;
  Block &kbody = kernel.getBody().front();
  kernel.walk([&](AllocSharedOp alloc) {
    MemRefType type = alloc.getType();
    int64_t plain = type.getNumElements() * type.getElementTypeBitWidth() / 8;
    bool produced = buffers.contains(alloc.getResult());
    bool tile = llvm::any_of(
        tileCopies, [&](CopyOp c) { return c.getDst() == alloc.getResult(); });
    if (produced) {
      // A ring's slots are padded (ringSlotShape).
      int64_t slot = ringSlotBytes(alloc);
      f.total += llvm::alignTo(slot * stages, 128);
      f.ring += llvm::alignTo(slot, 128) * stages;
      return;
    }
    f.total += llvm::alignTo(tile ? ringSlotBytes(alloc) * tileSlots : plain,
                             128);
    bool onlyAfter =
        !alloc->getUsers().empty() &&
        llvm::all_of(alloc->getUsers(), [&](Operation *user) {
          Operation *top = kbody.findAncestorOpInBlock(*user);
          return top && loop->isBeforeInBlock(top);
        });
    if (onlyAfter)
      f.afterLoop += llvm::alignTo(plain, 128);
  });
  return f;
}

/// Whether `op` writes buffer `v`: a copy into it, or an op that declares a
/// write of it among its memory effects.
static bool writesBuffer(Operation *op, Value v) {
  if (auto c = dyn_cast<CopyOp>(op))
    return c.getDst() == v;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  return llvm::any_of(list, [&](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Write>(e.getEffect()) && e.getValue() == v;
  });
}

/// TMA copies of the kernel body before the loop into buffers of their own
/// (not produced in the loop, filled by no other copy) whose offsets the
/// producer can recompute: per tile, the consumers read them in the loop
/// and may reuse them after it (the forward's O staged in the Q tile), but
/// nothing adds them into global memory by TMA (a bulk read the release
/// would have to wait for).
void Specializer::findTileCopies() {
  Block &kbody = kernel.getBody().front();
  for (Operation *op = &kbody.front(); op && op != loop.getOperation();
       op = op->getNextNode()) {
    auto copy = dyn_cast<CopyOp>(op);
    if (!copy || !isTmaCopy(copy) || buffers.contains(copy.getDst()))
      continue;
    // Without a ring (see `tilesOnce` in `run`) the buffer stays where it
    // is: its panels must start 128-byte aligned as they are.
    auto alloc = copy.getDst().getDefiningOp<AllocSharedOp>();
    if (!panelsAligned(alloc.getType(), swizzleOf(alloc)))
      continue;
    if (!llvm::all_of(copy.getSrcOffsets(),
                      [&](Value o) { return recomputable(o); }))
      continue;
    Value dst = copy.getDst();
    bool own = llvm::all_of(dst.getUses(), [&](OpOperand &use) {
      Operation *user = use.getOwner();
      if (user == copy.getOperation())
        return true;
      if (isa<AtomicAddOp>(user))
        return false;
      Operation *top = kbody.findAncestorOpInBlock(*user);
      if (!top)
        return false;
      // Nothing else writes it before the loop or in it (a copy of a
      // fragment into it in the loop body: TileOPs' DeltaNet recurrence);
      // after the loop it may be reused.
      if (writesBuffer(user, dst) &&
          (top == loop.getOperation() || top->isBeforeInBlock(loop)))
        return false;
      return top == loop.getOperation() || copy->isBeforeInBlock(top);
    });
    if (!own)
      continue;
    tileCopies.push_back(copy);
    tileBytes += copyBytes(copy);
  }
}

/// Whether every use of the tile copies' buffers is the copy or in the
/// loop: the loop's last iteration is their last reader.
bool Specializer::tilesDeadAfterLoop() {
  Block &kbody = kernel.getBody().front();
  return llvm::all_of(tileCopies, [&](CopyOp copy) {
    return llvm::all_of(copy.getDst().getUses(), [&](OpOperand &use) {
      Operation *user = use.getOwner();
      return user == copy.getOperation() ||
             kbody.findAncestorOpInBlock(*user) == loop.getOperation();
    });
  });
}

/// A persistent kernel when the constant grid (of up to three dimensions)
/// has more tiles than blocks fit (`persistentSms`). The ring's count runs
/// on from tile to tile, so the loop's trip count may depend on the tile
/// (a causal attention block's): each region counts the iterations its
/// earlier tiles ran.
void Specializer::choosePersistent() {
  if (persistentSms <= 0)
    return;
  OperandRange extents = kernel.getGrid();
  if (extents.empty() || extents.size() > 3)
    return;
  grid.clear();
  int64_t tiles = 1;
  for (Value e : extents) {
    std::optional<int64_t> n = getConstantIntValue(e);
    if (!n || *n < 1)
      return;
    grid.push_back(*n);
    tiles *= *n;
  }
  int64_t blocks = clusterDim >= 0 ? clusterSize : 1;
  if (tiles <= persistentSms || persistentSms < blocks)
    return;
  int64_t swizzles = 0;
  bool swizzled = false;
  kernel.walk([&](UseSwizzleOp op) {
    ++swizzles;
    swizzled |= op.getEnable();
  });
  if (swizzles > 1)
    return;
  Block &kbody = kernel.getBody().front();
  SmallVector<unsigned> uniform, varying;
  for (unsigned d = 0; d < grid.size(); ++d) {
    Value arg = kbody.getArgument(d);
    bool varies = llvm::any_of(
        ValueRange{loop.getLower(), loop.getUpper(), loop.getStep()},
        [&](Value bound) { return dependsOn(bound, arg); });
    (varies ? varying : uniform).push_back(d);
  }
  // The panel order of use_swizzle is over a uniform two-dimensional grid.
  if (swizzled && (grid.size() != 2 || !varying.empty()))
    return;
  // The tile copies go to the producer when their second slots fit (227 KB
  // on sm_90, 8 KB left for barriers, scratch and staging). A grid of three
  // dimensions or tiles of differing work are persistent only so: without
  // the next tile's copies issued early, the static walk measured no
  // faster than the hardware's own block order, and slower where the work
  // differs (BENCHMARKS.md 2026-12-03, persistent attention).
  int64_t stages = std::max<int64_t>(loop.getNumStages(), 1);
  auto footprint = [&](int64_t slots) {
    return sharedFootprint(kernel, loop, stages, buffers, tileCopies, slots);
  };
  auto fits = [&](int64_t slots) {
    return footprint(slots).total <= 232448 - 8192;
  };
  // Shared buffers that fit only when a tile written after the loop takes
  // the bytes of the loop's stages (TileLang's gemm_sp epilogue: C_shared
  // of 128 KB beside two stages of 82 KB) keep one tile a block: in a
  // persistent block the producer fills the next tile's stages while the
  // consumers still write that tile.
  if (!fits(1) && loop->getBlock() == &kbody) {
    SharedFootprint f = footprint(1);
    if (f.total - std::min(f.afterLoop, f.ring) <= 232448 - 8192)
      return;
  }
  releaseAfterLoop =
      earlyTileRelease && !tileCopies.empty() && tilesDeadAfterLoop();
  prefetchTiles = !tileCopies.empty() && fits(2);
  if (!prefetchTiles && releaseAfterLoop && fits(1)) {
    prefetchTiles = true;
    tileSlots = 1;
  }
  if ((grid.size() == 3 || !varying.empty()) && !prefetchTiles)
    return;
  uniformDims = uniform;
  varyingDims = varying;
  zigzag = !varying.empty();
  clusterTiles = tiles / blocks;
  numClusters = std::min(persistentSms / blocks, clusterTiles);
  // About two rounds of tiles a group.
  int64_t u = 1, v = 1;
  for (unsigned d : uniform)
    u *= d == (unsigned)clusterDim ? grid[d] / blocks : grid[d];
  for (unsigned d : varying)
    v *= grid[d];
  groupSize = u;
  for (int64_t g = 1; g <= u; ++g)
    if (u % g == 0 && g * v >= 2 * numClusters) {
      groupSize = g;
      break;
    }
  persistent = true;
}

/// The block's tiles: `for t = cluster; t < clusterTiles; t += C` (C = G /
/// blocks clusters, G the launch's grid: `numClusters` clusters at compile
/// time, fewer on a device with fewer multiprocessors), or with `zigzag`
/// round k's tile k C + (k odd ? C - 1 - cluster : cluster), over the rounds
/// that have one for this cluster. The loop carries the iterations of the
/// earlier tiles (`base`; its yield is set by `endTile`). The block indices
/// of tile t: in the use_swizzle panel order, else mixed-radix over the
/// grid of clusters (x fastest; with varying work in the group order of
/// `uniformDims` / `varyingDims`); the cluster dimension adds the block's
/// rank.
Specializer::TileLoop Specializer::buildTileLoop(OpBuilder &b, Location loc) {
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  int64_t blocks = clusterDim >= 0 ? clusterSize : 1;
  Value pid = kernel.getBody().front().getArgument(0);
  Value cluster = pid, rank;
  if (blocks > 1) {
    cluster = arith::DivUIOp::create(b, loc, pid, c(blocks));
    rank = arith::RemUIOp::create(b, loc, pid, c(blocks));
  }
  Value clusters = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
  if (blocks > 1)
    clusters = arith::DivUIOp::create(b, loc, clusters, c(blocks));
  auto yieldBase = [](OpBuilder &ib, Location l, Value, ValueRange args) {
    scf::YieldOp::create(ib, l, args);
  };
  TileLoop tl;
  if (!zigzag) {
    tl.forOp = scf::ForOp::create(b, loc, cluster, c(clusterTiles), clusters,
                                  ValueRange{c(0)}, yieldBase);
  } else {
    // Full rounds, and the last partial one where it reaches this cluster
    // (from the front in even rounds, from the back in odd ones).
    Value full = arith::DivUIOp::create(b, loc, c(clusterTiles), clusters);
    Value rest = arith::RemUIOp::create(b, loc, c(clusterTiles), clusters);
    Value odd = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, loc, full, c(1)), c(0));
    Value fromFront =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, cluster, rest);
    Value fromBack = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::uge, cluster,
        arith::SubIOp::create(b, loc, clusters, rest));
    Value extra = arith::SelectOp::create(b, loc, odd, fromBack, fromFront);
    Value rounds = arith::AddIOp::create(
        b, loc, full,
        arith::IndexCastUIOp::create(b, loc, b.getIndexType(), extra));
    tl.forOp = scf::ForOp::create(b, loc, c(0), rounds, c(1), ValueRange{c(0)},
                                  yieldBase);
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(tl.forOp.getBody());
  Value t = tl.forOp.getInductionVar();
  tl.base = tl.forOp.getRegionIterArgs().front();
  tl.iteration = zigzag ? t
                        : arith::DivUIOp::create(
                              b, loc, arith::SubIOp::create(b, loc, t, cluster),
                              clusters)
                              .getResult();
  if (zigzag) {
    Value k = t;
    Value back = arith::SubIOp::create(
        b, loc, arith::SubIOp::create(b, loc, clusters, c(1)), cluster);
    Value odd = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                      arith::AndIOp::create(b, loc, k, c(1)),
                                      c(0));
    t = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, k, clusters),
        arith::SelectOp::create(b, loc, odd, back, cluster));
  }
  SmallVector<int64_t> cg = grid;
  if (clusterDim >= 0)
    cg[clusterDim] /= blocks;
  tl.coords.assign(cg.size(), Value());
  UseSwizzleOp swizzle;
  kernel.walk([&](UseSwizzleOp op) { swizzle = op; });
  if (cg.size() == 2 && swizzle && swizzle.getEnable()) {
    bool rowOrder = swizzle.getOrder() == RasterOrder::row;
    int64_t p = swizzle.getPanelSize();
    int64_t major = rowOrder ? cg[1] : cg[0], minor = rowOrder ? cg[0] : cg[1];
    auto [majorIdx, minorIdx] =
        emitPanelRaster(b, loc, t, c(major), c(minor), p);
    tl.coords[0] = rowOrder ? minorIdx : majorIdx;
    tl.coords[1] = rowOrder ? majorIdx : minorIdx;
  } else {
    // Mixed radix over `dims`, fastest first.
    auto decompose = [&](Value linear, ArrayRef<unsigned> dims) {
      for (auto [i, d] : llvm::enumerate(dims)) {
        if (i + 1 == dims.size()) {
          tl.coords[d] = linear;
          break;
        }
        tl.coords[d] = arith::RemUIOp::create(b, loc, linear, c(cg[d]));
        linear = arith::DivUIOp::create(b, loc, linear, c(cg[d]));
      }
    };
    if (varyingDims.empty()) {
      decompose(t, uniformDims);
    } else {
      int64_t v = 1;
      for (unsigned d : varyingDims)
        v *= cg[d];
      Value inGroup = arith::RemUIOp::create(b, loc, t, c(groupSize));
      Value rest = arith::DivUIOp::create(b, loc, t, c(groupSize));
      decompose(arith::RemUIOp::create(b, loc, rest, c(v)), varyingDims);
      Value group = arith::DivUIOp::create(b, loc, rest, c(v));
      if (!uniformDims.empty()) {
        Value first = arith::MulIOp::create(b, loc, group, c(groupSize));
        decompose(arith::AddIOp::create(b, loc, first, inGroup), uniformDims);
      }
    }
  }
  if (clusterDim >= 0)
    tl.coords[clusterDim] = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, tl.coords[clusterDim], c(blocks)),
        rank);
  return tl;
}

/// Ends a tile of `tiles`: the next tile's ring count starts `trips` on.
void Specializer::endTile(TileLoop &tiles, Value trips) {
  Operation *yield = tiles.forOp.getBody()->getTerminator();
  OpBuilder b(yield);
  yield->setOperand(
      0, arith::AddIOp::create(b, yield->getLoc(), tiles.base, trips));
}

//===----------------------------------------------------------------------===//
// The rewrite, in steps sharing the state of `Specializer`: ring allocation
// (`allocateRings`), the two regions (`createRegions`; `buildTileLoops` for a
// persistent kernel), the tile copies (`allocateTileRings`,
// `prefetchTileCopies`, `produceTileCopiesOnce`), the producer region
// (`buildProducer`), the consumer region (`buildRotatedConsumer` or
// `buildConsumer`) and the epilogue (`finish`).
//===----------------------------------------------------------------------===//

/// The ops that stay at the top of the kernel body: allocations and their
/// annotations.
static bool staysAtTop(Operation *op) {
  return isa<AllocSharedOp, AllocFragmentOp, AllocLocalOp, AllocVarOp,
             AllocBarrierOp, UseSwizzleOp, AnnotateLayoutOp>(op);
}

/// The loop's trip count (0 when it does not run: a persistent block's
/// count of ring iterations must not jump).
static Value tripCount(OpBuilder &ib, Location loc, Value lower, Value upper,
                       Value step) {
  Value span = arith::SubIOp::create(ib, loc, upper, lower);
  Value up = arith::SubIOp::create(
      ib, loc, arith::AddIOp::create(ib, loc, span, step),
      arith::ConstantIndexOp::create(ib, loc, 1));
  Value n = arith::DivUIOp::create(ib, loc, up, step);
  Value runs = arith::CmpIOp::create(ib, loc, arith::CmpIPredicate::slt,
                                     lower, upper);
  return arith::SelectOp::create(ib, loc, runs, n,
                                 arith::ConstantIndexOp::create(ib, loc, 0))
      .getResult();
}

/// The slot of use `i` of a ring of `slots` and the parity of its round.
static std::pair<Value, Value> ringPosition(OpBuilder &ib, Location loc,
                                            Value i, int64_t slots) {
  Value s = arith::ConstantIndexOp::create(ib, loc, slots);
  Value slot = arith::RemUIOp::create(ib, loc, i, s);
  Value round = arith::DivUIOp::create(ib, loc, i, s);
  Value parity = arith::RemUIOp::create(
      ib, loc, round, arith::ConstantIndexOp::create(ib, loc, 2));
  return std::make_pair(slot, parity);
}

static void cloneAll(OpBuilder &ib, ArrayRef<Operation *> ops, IRMapping &m) {
  for (Operation *op : ops)
    ib.clone(*op, m);
}

/// `slots` copies of the buffer `buf` (its swizzle, or the default), at the
/// top of the kernel body, each slot 128-byte aligned (ringSlotShape).
Value Specializer::ringOf(Value buf, int64_t slots) {
  auto alloc = buf.getDefiningOp<AllocSharedOp>();
  MemRefType type = alloc.getType();
  SmallVector<int64_t> shape = {slots};
  llvm::append_range(shape, ringSlotShape(type, swizzleOf(alloc)));
  auto ringType =
      MemRefType::get(shape, type.getElementType(), MemRefLayoutAttrInterface(),
                      type.getMemorySpace());
  SwizzleAttr swizzle = alloc.getSwizzleAttr();
  if (!swizzle)
    swizzle = SwizzleAttr::get(kernel.getContext(), defaultSwizzle(type), 0);
  return AllocSharedOp::create(top, alloc.getLoc(), ringType, swizzle)
      .getResult();
}

MemRefType Specializer::barriersOf(int64_t slots) {
  return MemRefType::get(
      {slots}, top.getI64Type(), MemRefLayoutAttrInterface(),
      MemoryScopeAttr::get(kernel.getContext(), MemoryScope::shared));
}

/// The slot and the parity of iteration `iv` (counted from `base`, the
/// iterations of the block's earlier tiles, when there is one).
std::pair<Value, Value> Specializer::slotAndParity(OpBuilder &ib, Value iv,
                                                   Value lower, Value step,
                                                   Value base) {
  Value i = arith::DivUIOp::create(
      ib, loc, arith::SubIOp::create(ib, loc, iv, lower), step);
  if (base)
    i = arith::AddIOp::create(ib, loc, i, base);
  return ringPosition(ib, loc, i, stages);
}

/// Slot `slot` of the ring of the buffer `old` (a loop copy's or a tile
/// copy's).
Value Specializer::slotView(OpBuilder &ib, Value old, Value slot) {
  Value ring = slotted.lookup(old);
  if (!ring)
    ring = tileSlotted.lookup(old);
  return ringSlotView(ib, loc, ring, slot, cast<MemRefType>(old.getType()));
}

/// The producer's copy `p` into slot `slot` of its ring (or into `dst`
/// when given), through barrier `bar` (multicast to `cast` blocks when
/// given), offsets recomputed.
void Specializer::produceCopy(OpBuilder &ib, CopyOp p, Value bar, Value slot,
                              IntegerAttr cast, Value dst) {
  SmallVector<Value> srcOffsets, dstOffsets;
  for (Value o : p.getSrcOffsets())
    srcOffsets.push_back(cloneForProducer(ib, o, pmap));
  for (Value o : p.getDstOffsets())
    dstOffsets.push_back(cloneForProducer(ib, o, pmap));
  CopyOp::create(ib, p.getLoc(), p.getSrc(), srcOffsets,
                 dst ? dst : slotView(ib, p.getDst(), slot), dstOffsets, bar,
                 slot, p.getSrcSizesAttr(), p.getDstSizesAttr(), UnitAttr(),
                 cast, p.getSrcElementAttr(), p.getDstElementAttr(),
                 /*expect_tx=*/UnitAttr(), /*multicast_mask=*/IntegerAttr(),
                 /*eviction=*/EvictionAttr());
}

/// The statements of iteration `iv` read slot `slot` of the ring.
IRMapping Specializer::iterationMap(OpBuilder &ib, Value iv, Value slot) {
  IRMapping m;
  m.map(loop.getInductionVar(), iv);
  for (auto &[old, ring] : slotted)
    m.map(old, slotView(ib, old, slot));
  return m;
}

void Specializer::run() {
  stages = std::max<int64_t>(loop.getNumStages(), 1);
  consumerWarps = kernel.getNumThreads() / 32;
  blocks = clusterDim >= 0 ? clusterSize : 1;
  allocateRings();
  createRegions();
  if (persistent)
    buildTileLoops();
  // Not persistent: the producer issues the tile copies (attention's K and
  // V in the backward, Q in the forward) once, on a barrier of their own,
  // before its loop's; the consumers wait for them where the copies were.
  // Without this the consumers' threads copy them (global loads and shared
  // stores) while the producer's loop copies wait for nothing.
  bool tilesOnce = !persistent && producerTileCopies && !tileCopies.empty();
  prefetchTiles &= persistent;
  allocateTileRings();
  if (prefetchTiles)
    prefetchTileCopies();
  if (tilesOnce)
    produceTileCopiesOnce();
  buildProducer();
  if (rotate)
    buildRotatedConsumer();
  else
    buildConsumer();
  finish();
}

/// Ring allocation: the slotted buffers (with the swizzle fixed now, since
/// the copies depend on it) and the barriers stay at the top of the kernel
/// body.
void Specializer::allocateRings() {
  top.setInsertionPointToStart(&kernel.getBody().front());
  for (Value buf : buffers)
    slotted.insert({buf, ringOf(buf, stages)});
  auto barrierType = barriersOf(stages);
  full = AllocBarrierOp::create(top, loc, barrierType,
                                top.getDenseI64ArrayAttr({1}));
  // Every consumer warp of the cluster releases every block's slot: a
  // multicast refills the slot in all of them.
  empty = AllocBarrierOp::create(
      top, loc, barrierType, top.getDenseI64ArrayAttr({consumerWarps * blocks}));
  // The second gemm's copies on a ring of their own (see `splitRing`).
  fullV = full;
  emptyV = empty;
  if (splitRing) {
    fullV = AllocBarrierOp::create(top, loc, barrierType,
                                   top.getDenseI64ArrayAttr({1}));
    emptyV = AllocBarrierOp::create(
        top, loc, barrierType, top.getDenseI64ArrayAttr({consumerWarps * blocks}));
  }
  remote = blocks > 1 ? top.getUnitAttr() : UnitAttr();
}

/// The `tile.warp_specialize` op and its two regions: everything but
/// allocations and annotations moves into the consumer (`moved`).
void Specializer::createRegions() {
  Block &kbody = kernel.getBody().front();
  Operation *firstMoved = nullptr;
  for (Operation &op : kbody.without_terminator())
    if (!staysAtTop(&op)) {
      firstMoved = &op;
      break;
    }
  // Allocations (and their annotations) after the first moved op stay in
  // the kernel body, which must define them before the specialized region
  // that uses them (`T.fill(g, 0)` between two `T.alloc_*` once left a
  // fragment defined after its use): they move up, in order.
  SmallVector<Operation *> lateAllocs;
  for (Operation *op = firstMoved->getNextNode();
       op && op != kbody.getTerminator(); op = op->getNextNode())
    if (staysAtTop(op))
      lateAllocs.push_back(op);
  for (Operation *op : lateAllocs)
    op->moveBefore(firstMoved);
  OpBuilder b(firstMoved);
  DenseI64ArrayAttr clusterAttr;
  if (clusterDim >= 0) {
    SmallVector<int64_t> dims(3, 1);
    // A persistent grid is one row of clusters.
    dims[persistent ? 0 : clusterDim] = clusterSize;
    clusterAttr = b.getDenseI64ArrayAttr(dims);
  }
  auto ws = WarpSpecializeOp::create(b, loc, b.getI64IntegerAttr(128),
                                     clusterAttr);
  producer = new Block();
  consumer = new Block();
  ws.getProducer().push_back(producer);
  ws.getConsumer().push_back(consumer);
  OpBuilder pb = OpBuilder::atBlockEnd(producer);
  YieldOp::create(pb, loc);
  OpBuilder cb = OpBuilder::atBlockEnd(consumer);
  YieldOp::create(cb, loc);
  for (Operation *op = ws->getNextNode(); op && op != kbody.getTerminator();
       op = op->getNextNode())
    if (!staysAtTop(op))
      moved.push_back(op);
  for (Operation *op : moved)
    op->moveBefore(consumer->getTerminator());
}

/// Persistent: both regions loop over the block's tiles; the consumer's
/// statements move into its loop and read the tile's block indices.
void Specializer::buildTileLoops() {
  Block &kbody = kernel.getBody().front();
  OpBuilder pb(producer->getTerminator());
  pTiles = buildTileLoop(pb, loc);
  for (auto [d, v] : llvm::enumerate(pTiles.coords))
    pmap.map(kbody.getArgument(d), v);
  OpBuilder cb = OpBuilder::atBlockBegin(consumer);
  cTiles = buildTileLoop(cb, loc);
  for (Operation *op : moved)
    op->moveBefore(cTiles.forOp.getBody()->getTerminator());
  for (auto [d, v] : llvm::enumerate(cTiles.coords)) {
    // The producer recomputes offsets from the consumer's statements.
    pmap.map(v, pTiles.coords[d]);
    kbody.getArgument(d).replaceUsesWithIf(v, [&](OpOperand &use) {
      return llvm::any_of(moved, [&](Operation *m) {
        return m->isAncestor(use.getOwner());
      });
    });
  }
}

/// The tile copies' buffers on rings of `tileSlots` tile slots (see
/// `prefetchTiles`), with their own barriers.
void Specializer::allocateTileRings() {
  if (prefetchTiles)
    for (CopyOp copy : tileCopies)
      tileSlotted.insert({copy.getDst(), ringOf(copy.getDst(), tileSlots)});
}

/// Tile copies: the producer issues tile j's into slot j mod S (S =
/// tileSlots) once the consumers released that slot (after tile j - S),
/// before the tile's loop copies; the consumers wait for them where the
/// copies were, use the slot for the tile and release it at its end, or
/// right after the loop when nothing later uses it (`releaseAfterLoop`),
/// after a proxy fence: they may have written it, and TMA writes it next.
void Specializer::prefetchTileCopies() {
  auto tileBarrierType = barriersOf(tileSlots);
  Value tileFull = AllocBarrierOp::create(top, loc, tileBarrierType,
                                          top.getDenseI64ArrayAttr({1}));
  Value tileEmpty = AllocBarrierOp::create(
      top, loc, tileBarrierType, top.getDenseI64ArrayAttr({consumerWarps}));
  {
    OpBuilder tb(pTiles.forOp.getBody()->getTerminator());
    auto [slot, parity] = ringPosition(tb, loc, pTiles.iteration, tileSlots);
    Value flipped = arith::XOrIOp::create(
        tb, loc, parity, arith::ConstantIndexOp::create(tb, loc, 1));
    BarrierWaitOp::create(tb, loc, tileEmpty, slot, flipped);
    BarrierArriveOp::create(tb, loc, tileFull, slot,
                            tb.getI64IntegerAttr(tileBytes), UnitAttr());
    for (CopyOp p : tileCopies)
      produceCopy(tb, p, tileFull, slot, IntegerAttr());
  }
  Block *tileBody = cTiles.forOp.getBody();
  OpBuilder tb(moved.front());
  auto [slot, parity] = ringPosition(tb, loc, cTiles.iteration, tileSlots);
  // One barrier for all of them: one wait, where the first copy was.
  OpBuilder wb(tileCopies.front());
  BarrierWaitOp::create(wb, loc, tileFull, slot, parity);
  for (CopyOp p : tileCopies) {
    Value view = slotView(tb, p.getDst(), slot);
    Value old = p.getDst();
    p.erase();
    old.replaceUsesWithIf(view, [&](OpOperand &use) {
      return cTiles.forOp->isAncestor(use.getOwner());
    });
  }
  // After the loop: the consumer's loop (and its last wait for gemms
  // in flight) is built in front of `loop`.
  OpBuilder eb = releaseAfterLoop
                     ? OpBuilder(loop->getBlock(),
                                 std::next(loop->getIterator()))
                     : OpBuilder(tileBody->getTerminator());
  FenceProxyAsyncOp::create(eb, loc);
  BarrierArriveOp::create(eb, loc, tileEmpty, slot, IntegerAttr(), UnitAttr());
}

/// Not persistent (see `tilesOnce` in `run`): the producer issues the tile
/// copies once, before its loop; the consumers wait where the first was.
void Specializer::produceTileCopiesOnce() {
  Value tileFull = AllocBarrierOp::create(top, loc, barriersOf(1),
                                          top.getDenseI64ArrayAttr({1}));
  OpBuilder tb(producer->getTerminator());
  Value zero = arith::ConstantIndexOp::create(tb, loc, 0);
  BarrierArriveOp::create(tb, loc, tileFull, zero,
                          tb.getI64IntegerAttr(tileBytes), UnitAttr());
  for (CopyOp p : tileCopies)
    produceCopy(tb, p, tileFull, zero, IntegerAttr(), p.getDst());
  // One wait for all of them, where the first copy was.
  OpBuilder wb(tileCopies.front());
  Value c0 = arith::ConstantIndexOp::create(wb, loc, 0);
  BarrierWaitOp::create(wb, loc, tileFull, c0, c0);
  for (CopyOp p : tileCopies)
    p.erase();
}

/// The producer region: the loop's copies alone, each iteration waiting for
/// its slot to be free and arming its full barrier.
void Specializer::buildProducer() {
  OpBuilder pb(persistent ? pTiles.forOp.getBody()->getTerminator()
                          : producer->getTerminator());
  Value lower = cloneForProducer(pb, loop.getLower(), pmap);
  Value upper = cloneForProducer(pb, loop.getUpper(), pmap);
  Value step = cloneForProducer(pb, loop.getStep(), pmap);
  Value base;
  if (persistent) {
    base = pTiles.base;
    endTile(pTiles, tripCount(pb, loc, lower, upper, step));
  }
  auto forOp = scf::ForOp::create(pb, loc, lower, upper, step);
  OpBuilder fb = OpBuilder::atBlockTerminator(forOp.getBody());
  pmap.map(loop.getInductionVar(), forOp.getInductionVar());
  auto [slot, parity] =
      slotAndParity(fb, forOp.getInductionVar(), lower, step, base);
  Value flipped = arith::XOrIOp::create(
      fb, loc, parity, arith::ConstantIndexOp::create(fb, loc, 1));
  // One ring: every copy; split: the first gemm's copies, then the
  // second's on their own barriers.
  for (bool ofSecond : {false, true}) {
    if (ofSecond && !splitRing)
      break;
    Value f = ofSecond ? fullV : full, e = ofSecond ? emptyV : empty;
    int64_t bytes = !splitRing ? txBytes
                    : ofSecond ? secondBytes
                               : txBytes - secondBytes;
    BarrierWaitOp::create(fb, loc, e, slot, flipped);
    BarrierArriveOp::create(fb, loc, f, slot, fb.getI64IntegerAttr(bytes),
                            UnitAttr());
    for (CopyOp p : producers) {
      if (splitRing && secondCopies.contains(p) != ofSecond)
        continue;
      produceCopy(fb, p, f, slot,
                  multicast.contains(p) ? fb.getI64IntegerAttr(blocks)
                                        : IntegerAttr());
    }
  }
}

/// The consumer region, rotated (see `rotate`): when the loop runs at all,
/// the first iteration but its second gemm; then per iteration k > 0: wait
/// for slot k, the early statements, S_k (async), O += P V of iteration
/// k - 1 on slot k - 1 (async), wait for S_k, the middle statements, wait
/// for O += P V, free slot k - 1, the late statements; then the last
/// O += P V.
void Specializer::buildRotatedConsumer() {
  OpBuilder lb(loop);
  Value lower = loop.getLower(), upper = loop.getUpper(),
        step = loop.getStep();
  Value trips = tripCount(lb, loc, lower, upper, step), base;
  if (persistent) {
    base = cTiles.base;
    endTile(cTiles, trips);
  }
  auto runs = scf::IfOp::create(
      lb, loc,
      arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::ult, lower, upper),
      false);
  OpBuilder gb = OpBuilder::atBlockTerminator(runs.thenBlock());
  {
    auto [slot, parity] = slotAndParity(gb, lower, lower, step, base);
    BarrierWaitOp::create(gb, loc, full, slot, parity);
    IRMapping m = iterationMap(gb, lower, slot);
    cloneAll(gb, early, m);
    gb.clone(*first, m);
    if (splitRing && freeFirstEarly)
      BarrierArriveOp::create(gb, loc, empty, slot, IntegerAttr(), remote);
    cloneAll(gb, middle, m);
    cloneAll(gb, late, m);
    if (splitRing && !freeFirstEarly)
      BarrierArriveOp::create(gb, loc, empty, slot, IntegerAttr(), remote);
  }
  auto forOp = scf::ForOp::create(
      gb, loc, arith::AddIOp::create(gb, loc, lower, step), upper, step);
  buildRotatedIteration(forOp, base);
  {
    Value lastIv = arith::AddIOp::create(
        gb, loc, lower,
        arith::MulIOp::create(
            gb, loc,
            arith::SubIOp::create(gb, loc, trips,
                                  arith::ConstantIndexOp::create(gb, loc, 1)),
            step));
    auto [slot, parity] = slotAndParity(gb, lastIv, lower, step, base);
    if (splitRing)
      BarrierWaitOp::create(gb, loc, fullV, slot, parity);
    IRMapping m = iterationMap(gb, lastIv, slot);
    gb.clone(*second, m);
    BarrierArriveOp::create(gb, loc, emptyV, slot, IntegerAttr(), remote);
  }
  loop.erase();
}

/// Iteration k > 0 of the rotated consumer loop `forOp` (see
/// `buildRotatedConsumer`).
void Specializer::buildRotatedIteration(scf::ForOp forOp, Value base) {
  Value lower = loop.getLower(), step = loop.getStep();
  OpBuilder fb = OpBuilder::atBlockTerminator(forOp.getBody());
  Value iv = forOp.getInductionVar();
  Value prevIv = arith::SubIOp::create(fb, loc, iv, step);
  auto [slot, parity] = slotAndParity(fb, iv, lower, step, base);
  auto [prevSlot, prevParity] = slotAndParity(fb, prevIv, lower, step, base);
  BarrierWaitOp::create(fb, loc, full, slot, parity);
  IRMapping m = iterationMap(fb, iv, slot);
  IRMapping prev = iterationMap(fb, prevIv, prevSlot);
  cloneAll(fb, early, m);
  auto firstClone = cast<GemmOp>(fb.clone(*first, m));
  firstClone.setAsync(true);
  if (splitRing)
    BarrierWaitOp::create(fb, loc, fullV, prevSlot, prevParity);
  auto secondClone = cast<GemmOp>(fb.clone(*second, prev));
  secondClone.setAsync(true);
  if (rotatePingpong) {
    // One turn for the pair: the other warpgroups' softmax runs while
    // this one's S_k and O += P V are on the tensor cores.
    firstClone->setAttr("pingpong_begin", fb.getUnitAttr());
    secondClone->setAttr("pingpong_end", fb.getUnitAttr());
  }
  GemmWaitOp::create(fb, loc, fb.getI64IntegerAttr(1));
  if (splitRing && freeFirstEarly)
    BarrierArriveOp::create(fb, loc, empty, slot, IntegerAttr(), remote);
  cloneAll(fb, middle, m);
  auto pvWait = GemmWaitOp::create(fb, loc, fb.getI64IntegerAttr(0));
  if (schedBarrier)
    pvWait->setAttr("tile.sched_barrier", fb.getUnitAttr());
  BarrierArriveOp::create(fb, loc, emptyV, prevSlot, IntegerAttr(), remote);
  cloneAll(fb, late, m);
  if (splitRing && !freeFirstEarly)
    BarrierArriveOp::create(fb, loc, empty, slot, IntegerAttr(), remote);
}

/// The consumer region: the loop without the copies, between the barriers.
void Specializer::buildConsumer() {
  OpBuilder lb(loop);
  Value trips, base;
  if (persistent) {
    trips = tripCount(lb, loc, loop.getLower(), loop.getUpper(), loop.getStep());
    base = cTiles.base;
    endTile(cTiles, trips);
  }
  auto forOp = scf::ForOp::create(lb, loc, loop.getLower(), loop.getUpper(),
                                  loop.getStep());
  OpBuilder fb = OpBuilder::atBlockTerminator(forOp.getBody());
  IRMapping cmap;
  cmap.map(loop.getInductionVar(), forOp.getInductionVar());
  auto [slot, parity] = slotAndParity(fb, forOp.getInductionVar(),
                                      loop.getLower(), loop.getStep(), base);
  BarrierWaitOp::create(fb, loc, full, slot, parity);
  for (auto &[old, ring] : slotted)
    cmap.map(old, slotView(fb, old, slot));
  for (Operation &op : body->without_terminator()) {
    if (auto copy = dyn_cast<CopyOp>(&op);
        copy && llvm::is_contained(producers, copy))
      continue;
    Operation *clone = fb.clone(op, cmap);
    if (overlap) {
      if (auto gemm = dyn_cast<GemmOp>(clone))
        gemm.setAsync(true);
    }
    if (pingpong && isa<GemmOp>(clone))
      clone->setAttr("pingpong", fb.getUnitAttr());
  }
  if (overlap)
    releaseOverlapped(forOp, slot, trips, base);
  else
    BarrierArriveOp::create(fb, loc, empty, slot, IntegerAttr(),
                            blocks > 1 ? fb.getUnitAttr() : UnitAttr());
  loop.erase();
}

/// The consumer loop `forOp` with its gemms in flight across iterations
/// (`overlap`): iteration i frees slot i - 1 once that iteration's gemms are
/// done; after the loop, the last wait (and, persistent, the last slot).
void Specializer::releaseOverlapped(scf::ForOp forOp, Value slot, Value trips,
                                    Value base) {
  OpBuilder fb = OpBuilder::atBlockTerminator(forOp.getBody());
  // Keep this iteration's gemms in flight; once the previous
  // iteration's are done, its slot is free.
  GemmWaitOp::create(fb, loc, fb.getI64IntegerAttr(1));
  Value notFirst =
      arith::CmpIOp::create(fb, loc, arith::CmpIPredicate::ugt,
                            forOp.getInductionVar(), loop.getLower());
  auto ifOp = scf::IfOp::create(fb, loc, notFirst, false);
  OpBuilder ib = OpBuilder::atBlockTerminator(ifOp.thenBlock());
  Value s = arith::ConstantIndexOp::create(ib, loc, stages);
  Value prev = arith::RemUIOp::create(
      ib, loc,
      arith::SubIOp::create(ib, loc, arith::AddIOp::create(ib, loc, slot, s),
                            arith::ConstantIndexOp::create(ib, loc, 1)),
      s);
  BarrierArriveOp::create(ib, loc, empty, prev, IntegerAttr(),
                          blocks > 1 ? ib.getUnitAttr() : UnitAttr());
  OpBuilder after(forOp->getBlock(), std::next(forOp->getIterator()));
  GemmWaitOp::create(after, loc, after.getI64IntegerAttr(0));
  if (!persistent)
    return;
  // The tile's last slot is free once its gemms are done: the
  // producer refills it for a later tile.
  Value any = arith::CmpIOp::create(
      after, loc, arith::CmpIPredicate::ugt, trips,
      arith::ConstantIndexOp::create(after, loc, 0));
  auto lastIf = scf::IfOp::create(after, loc, any, false);
  OpBuilder lb = OpBuilder::atBlockTerminator(lastIf.thenBlock());
  Value last = arith::SubIOp::create(
      lb, loc, arith::AddIOp::create(lb, loc, base, trips),
      arith::ConstantIndexOp::create(lb, loc, 1));
  Value lastSlot = arith::RemUIOp::create(
      lb, loc, last, arith::ConstantIndexOp::create(lb, loc, stages));
  BarrierArriveOp::create(lb, loc, empty, lastSlot, IntegerAttr(),
                          blocks > 1 ? lb.getUnitAttr() : UnitAttr());
}

/// The epilogue: the old buffers go; a persistent kernel launches one row of
/// clusters (the tile loops did the block order).
void Specializer::finish() {
  for (Value buf : buffers)
    buf.getDefiningOp()->erase();
  for (auto &[buf, ring] : tileSlotted)
    buf.getDefiningOp()->erase();
  if (!persistent)
    return;
  OpBuilder gb(kernel);
  kernel->setOperand(0, arith::ConstantIndexOp::create(
                            gb, loc, numClusters * blocks));
  kernel->setAttr("tile.persistent",
                  gb.getDictionaryAttr(
                      {gb.getNamedAttr("blocks", gb.getI64IntegerAttr(blocks)),
                       gb.getNamedAttr("tiles", gb.getI64IntegerAttr(
                                                    clusterTiles * blocks))}));
  for (unsigned d = 1; d < kernel.getGrid().size(); ++d)
    kernel->setOperand(d, arith::ConstantIndexOp::create(gb, loc, 1));
  SmallVector<UseSwizzleOp> swizzles;
  kernel.walk([&](UseSwizzleOp op) { swizzles.push_back(op); });
  for (UseSwizzleOp op : swizzles)
    op.erase();
}

struct TileWarpSpecializePass
    : public tile::impl::TileWarpSpecializeBase<TileWarpSpecializePass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<std::pair<KernelOp, PipelinedOp>> todo;
    getOperation().walk([&](KernelOp kernel) {
      // A kernel that gives its threads roles itself keeps its schedule.
      if (kernel.hasRoles()) {
        markExplicitRoles(kernel);
        return;
      }
      SmallVector<PipelinedOp> loops;
      kernel.walk([&](PipelinedOp loop) { loops.push_back(loop); });
      bool specialized = false;
      kernel.walk([&](WarpSpecializeOp) { specialized = true; });
      if (loops.size() == 1 && !specialized)
        todo.push_back({kernel, loops.front()});
    });
    for (auto [kernel, loop] : todo) {
      Specializer s(kernel, loop);
      // A kernel whose clusters the program chose (T.Kernel(...,
      // cluster_dims=...)) keeps them: no clusters of the pass's own.
      s.clusterSize = kernel->hasAttr("tile.cluster") ? 1 : clusterSize;
      s.persistentSms = persistentSms;
      s.allowPingpong = pingpong;
      s.allowRotate = rotate;
      s.schedBarrier = rotateSchedBarrier;
      s.producerTileCopies = producerTileCopies;
      s.earlyTileRelease = earlyTileRelease;
      if (succeeded(s.analyze()))
        s.run();
    }
  }
};

} // namespace
