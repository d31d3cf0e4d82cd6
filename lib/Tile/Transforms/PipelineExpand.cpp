//===- PipelineExpand.cpp - expand scheduled pipelined loops --------------===//
//
// Part of tilelang-mlir.
//
// Phase 2 of software pipelining. Statement s of iteration j runs at step
// j + stage(s); the loop runs steps [0, n + max_stage): the first max_stage
// steps (prologue) and the last max_stage (epilogue) are unrolled with
// guards, the steps in between form an scf.for where every statement runs.
// Every step: wait for the copy group its consumers need, barrier, consumers
// (stage > 0), producers (stage 0, asynchronous copies into slot
// `iteration mod slots` of multi-buffered shared memory), commit; with
// copies-first, the producers and the commit before the consumers. With
// reuse-slots there is one slot fewer, and each producer follows the last
// consumer of its buffer behind a barrier: it overwrites the slot that
// consumer read. With group-per-copy every copy commits a group of its own
// and the wait moves down to the first consumer of each buffer.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Transforms/Passes.h"
#include "dialects/Tile/Transforms/PipelineUtils.h"
#include "dialects/Tile/Utils/BufferUtils.h"
#include "dialects/Tile/Utils/ControlFlowUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"

#define DEBUG_TYPE "tile-pipeline-expand"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILEPIPELINEEXPAND
#include "dialects/Tile/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

namespace {

class LoopExpander {
public:
  /// A cp.async group boundary and a wait for all but `pending` groups;
  /// nothing with synchronous copies (options.asyncCopies false).
  void commitGroup(OpBuilder &b, Location loc) {
    if (options.asyncCopies)
      AsyncCommitOp::create(b, loc);
  }
  void waitGroups(OpBuilder &b, Location loc, int64_t pending) {
    if (options.asyncCopies)
      AsyncWaitOp::create(b, loc, b.getI64IntegerAttr(pending));
  }

  LoopExpander(PipelinedOp loop, PipelineExpandOptions options)
      : loop(loop), options(options), loc(loop.getLoc()),
        body(&loop.getBody().front()), iv(body->getArgument(0)) {}

  LogicalResult run();

private:
  enum class StepKind { Prologue, Steady, Epilogue };
  /// A statement running at a step, for iteration `j`, under `guard` (null:
  /// unconditionally).
  struct Instance {
    size_t statement;
    Value j;
    Value guard;
  };

  Value index(OpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  LogicalResult prepare();
  LogicalResult checkSingleBufferedDistances();
  void emitStep(OpBuilder &b, StepKind kind, Value t, int64_t k);
  void emitInstance(OpBuilder &b, size_t statement, Value j);
  void emitInstances(OpBuilder &b, ArrayRef<Instance> instances);
  void emitReusing(OpBuilder &b, ArrayRef<Instance> consumers,
                   ArrayRef<Instance> producerInstances);
  void emitUngrouped(OpBuilder &b, ArrayRef<Instance> consumers,
                     ArrayRef<Instance> producerInstances);
  void emitGrouped(OpBuilder &b, StepKind kind, ArrayRef<Instance> consumers,
                   ArrayRef<Instance> producerInstances);
  bool runsAt(StepKind kind, int64_t k, size_t statement);
  SmallVector<size_t> placeProducers(ArrayRef<size_t> consumers);
  void computeGroupPositions();
  bool uses(size_t statement, Value buffer);
  std::optional<size_t> lastReader(size_t producer,
                                   ArrayRef<size_t> consumers);
  static SmallVector<size_t> statementsOf(ArrayRef<Instance> instances);
  Value mapValue(OpBuilder &b, Value v, IRMapping &map);

  PipelinedOp loop;
  PipelineExpandOptions options;
  Location loc;
  Block *body;
  Value iv;
  SmallVector<Operation *> statements;
  SmallVector<int64_t> stage;
  SmallVector<size_t> sequence; // statements in execution order
  DenseSet<Operation *> producers;
  // group-per-copy: the producer statements in program order, and the
  // latest position a producer's group takes among its step's commits.
  SmallVector<size_t> producerStatements;
  SmallVector<int64_t> groupPosition;
  llvm::MapVector<Value, Value> multiBuffered; // old alloc -> slotted alloc
  int64_t maxStage = 0, slots = 1, pending = 0;
  Value lower, step, tripCount;
  std::optional<int64_t> constTripCount;
};

LogicalResult LoopExpander::prepare() {
  std::optional<ArrayRef<int64_t>> stageAttr = loop.getStage();
  std::optional<ArrayRef<int64_t>> orderAttr = loop.getOrder();
  if (!stageAttr || !orderAttr)
    return loop.emitOpError("has no schedule: run tile-pipeline-schedule "
                            "first");
  statements = loop.getStatements();
  stage.assign(stageAttr->begin(), stageAttr->end());
  for (size_t i = 0; i < statements.size(); ++i)
    sequence.push_back(i);
  llvm::sort(sequence, [&](size_t a, size_t b) {
    return (*orderAttr)[a] < (*orderAttr)[b];
  });
  maxStage = stage.empty() ? 0 : *llvm::max_element(stage);
  if (options.reuseSlots && options.copiesFirst)
    return loop.emitOpError("reuse-slots and copies-first exclude each "
                            "other: a copy into the slot its step reads "
                            "must follow the readers");
  // With reuse-slots iteration t + maxStage takes iteration t's slot.
  slots = options.reuseSlots && maxStage > 0 ? maxStage : maxStage + 1;
  int64_t minConsumerStage = maxStage;
  for (auto [i, s] : llvm::enumerate(statements)) {
    if (stage[i] == 0 && maxStage > 0 && isPipelineProducer(loop, s))
      producers.insert(s);
    else if (stage[i] > 0)
      minConsumerStage = std::min(minConsumerStage, stage[i]);
    if (s->getNumResults() && !isMemoryEffectFree(s) &&
        !llvm::all_of(s->getResults(),
                      [](Value v) { return v.use_empty(); }) &&
        !isa<memref::LoadOp>(s))
      return s->emitError("a statement of a pipelined loop whose results "
                          "are used must be a load");
  }
  // Consumers of stage s need the copies issued s steps ago: groups
  // committed since then may still be pending.
  pending = std::max<int64_t>(minConsumerStage - 1, 0);
  for (size_t i : sequence)
    if (producers.contains(statements[i]))
      producerStatements.push_back(i);
  // Multi-buffer the destinations of producers.
  OpBuilder b(loop.getContext());
  for (Operation *p : producers) {
    Value dst = cast<CopyOp>(p).getDst();
    if (multiBuffered.count(dst))
      continue;
    auto alloc = dst.getDefiningOp<AllocSharedOp>();
    MemRefType type = alloc.getType();
    SmallVector<int64_t> shape = {slots};
    llvm::append_range(shape, type.getShape());
    auto slotted = MemRefType::get(shape, type.getElementType(),
                                   MemRefLayoutAttrInterface(),
                                   type.getMemorySpace());
    b.setInsertionPointAfter(alloc);
    auto newAlloc = AllocSharedOp::create(b, alloc.getLoc(), slotted, nullptr);
    if (alloc.getSwizzleAttr())
      newAlloc.setSwizzleAttr(alloc.getSwizzleAttr());
    multiBuffered.insert(std::make_pair(dst, newAlloc.getResult()));
  }
  // Only producers may write multi-buffered memory.
  for (auto [i, s] : llvm::enumerate(statements)) {
    if (producers.contains(s))
      continue;
    for (auto &[old, slotted] : multiBuffered) {
      bool writes = false;
      s->walk([&](Operation *inner) {
        if (auto store = dyn_cast<memref::StoreOp>(inner))
          writes |= store.getMemRef() == old;
        if (auto copy = dyn_cast<CopyOp>(inner))
          writes |= copy.getDst() == old;
      });
      if (writes)
        return s->emitError("writes shared buffer ")
               << old << ", which the pipeliner multi-buffers for the copy "
               << "that fills it; only that copy may write it";
    }
  }
  return checkSingleBufferedDistances();
}

/// The kernel's buffers (shared, fragment, local) that `s` reads and
/// writes, by their allocation (through views).
static void bufferAccesses(Operation *s, SetVector<Value> &reads,
                           SetVector<Value> &writes) {
  auto isKernelBuffer = [](Value root) {
    Operation *def = root.getDefiningOp();
    return def && isa<AllocSharedOp, AllocFragmentOp, AllocLocalOp, AllocVarOp>(def);
  };
  s->walk([&](Operation *op) {
    for (Value v : op->getOperands()) {
      if (!isa<MemRefType>(v.getType()))
        continue;
      Value root = viewSource(v);
      if (!isKernelBuffer(root))
        continue;
      auto effects = dyn_cast<MemoryEffectOpInterface>(op);
      if (!effects) {
        reads.insert(root);
        writes.insert(root);
        continue;
      }
      SmallVector<MemoryEffects::EffectInstance> list;
      effects.getEffects(list);
      for (const MemoryEffects::EffectInstance &e : list) {
        if (e.getValue() && e.getValue() != v)
          continue;
        if (isa<MemoryEffects::Read>(e.getEffect()))
          reads.insert(root);
        if (isa<MemoryEffects::Write>(e.getEffect()))
          writes.insert(root);
      }
    }
  });
}

/// A buffer that is not multi-buffered holds one iteration's values: a
/// statement that reads it two or more stages after the statement that
/// wrote it would read a later iteration's values (a fragment computed in
/// stage 0 and stored in stage 2).
LogicalResult LoopExpander::checkSingleBufferedDistances() {
  SmallVector<SetVector<Value>> reads(statements.size()),
      writes(statements.size());
  for (auto [i, s] : llvm::enumerate(statements))
    bufferAccesses(s, reads[i], writes[i]);
  for (size_t w = 0; w < statements.size(); ++w)
    for (Value buf : writes[w]) {
      if (multiBuffered.count(buf))
        continue;
      for (size_t r = 0; r < statements.size(); ++r)
        if (reads[r].contains(buf) && stage[r] - stage[w] >= 2)
          return statements[r]->emitError()
                 << "runs in pipeline stage " << stage[r]
                 << " and reads a buffer that statement " << w
                 << " writes in stage " << stage[w]
                 << ": only the shared-memory destinations of the loop's "
                    "copies are multi-buffered, so this buffer holds a "
                    "later iteration's values by then; put the two at most "
                    "one stage apart";
    }
  return success();
}

/// Returns the value of `v` for the instance being cloned: mapped values,
/// clones of the pure ops (and loads) of the body that compute it, or `v`
/// itself when it is defined outside the loop.
Value LoopExpander::mapValue(OpBuilder &b, Value v, IRMapping &map) {
  if (Value mapped = map.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != body)
    return v;
  for (Value operand : def->getOperands())
    mapValue(b, operand, map);
  SetVector<Value> above;
  getUsedValuesDefinedAbove(def->getRegions(), above);
  for (Value operand : above)
    mapValue(b, operand, map);
  b.clone(*def, map);
  return map.lookup(v);
}

void LoopExpander::emitInstance(OpBuilder &b, size_t which, Value j) {
  Operation *s = statements[which];
  IRMapping map;
  Value value = arith::AddIOp::create(
      b, loc, lower, arith::MulIOp::create(b, loc, j, step));
  map.map(iv, value);
  Value slot;
  if (!multiBuffered.empty())
    slot = arith::RemUIOp::create(b, loc, j, index(b, slots));
  if (producers.contains(s)) {
    auto copy = cast<CopyOp>(s);
    SmallVector<Value> srcOffsets, dstOffsets = {slot};
    for (Value o : copy.getSrcOffsets())
      srcOffsets.push_back(mapValue(b, o, map));
    for (Value o : copy.getDstOffsets())
      dstOffsets.push_back(mapValue(b, o, map));
    SmallVector<int64_t> dstSizes = {1};
    llvm::append_range(dstSizes, copy.getDstSizes());
    Value src = mapValue(b, copy.getSrc(), map);
    bool async = options.asyncCopies && !copy.convertsElements();
    auto expanded = CopyOp::create(
        b, copy.getLoc(), src, srcOffsets, multiBuffered.lookup(copy.getDst()),
        dstOffsets, copy.getSrcSizesAttr(), b.getDenseI64ArrayAttr(dstSizes),
        async);
    expanded.setSrcElementAttr(copy.getSrcElementAttr());
    expanded.setDstElementAttr(copy.getDstElementAttr());
    // Its commit groups, waits and barriers are the pipeliner's own: the
    // barrier insertion leaves it to them (kPipelineOrderedAttr).
    if (async)
      expanded->setAttr(kPipelineOrderedAttr, b.getUnitAttr());
    return;
  }
  // Consumers see the slot of their iteration as a 2-D (...) view.
  SetVector<Value> used;
  for (Value v : s->getOperands())
    used.insert(v);
  getUsedValuesDefinedAbove(s->getRegions(), used);
  for (Value v : used) {
    Value slotted = multiBuffered.lookup(v);
    if (!slotted)
      continue;
    map.map(v, ringSlotView(b, loc, slotted, slot,
                            cast<MemRefType>(v.getType())));
  }
  for (Value v : used)
    mapValue(b, v, map);
  b.clone(*s, map);
}

/// Each instance under its guard.
void LoopExpander::emitInstances(OpBuilder &b, ArrayRef<Instance> instances) {
  for (const Instance &inst : instances)
    guarded(b, loc, inst.guard,
            [&](OpBuilder &gb) { emitInstance(gb, inst.statement, inst.j); });
}

/// Whether statement `statement` (or an op nested in it) takes a view of
/// shared buffer `buffer` as an operand.
bool LoopExpander::uses(size_t statement, Value buffer) {
  WalkResult r = statements[statement]->walk([&](Operation *op) {
    for (Value v : op->getOperands())
      if (sharedRoot(v) == buffer)
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return r.wasInterrupted();
}

/// The index in `consumers` of the last consumer that reads producer
/// `producer`'s buffer, or none when no consumer reads it.
std::optional<size_t> LoopExpander::lastReader(size_t producer,
                                               ArrayRef<size_t> consumers) {
  Value dst = cast<CopyOp>(statements[producer]).getDst();
  std::optional<size_t> last;
  for (auto [i, c] : llvm::enumerate(consumers))
    if (uses(c, dst))
      last = i;
  return last;
}

/// The statements of `instances`, in order.
SmallVector<size_t>
LoopExpander::statementsOf(ArrayRef<Instance> instances) {
  SmallVector<size_t> out;
  for (const Instance &inst : instances)
    out.push_back(inst.statement);
  return out;
}

/// The consumers in order, each producer right after the last of them that
/// reads its buffer, behind a barrier (one for the producers placed
/// together): the producer writes the slot a consumer of this step read.
/// A producer whose buffer no consumer of the step reads goes last without
/// one: its slot was read at an earlier step, before this step's barrier.
void LoopExpander::emitReusing(OpBuilder &b, ArrayRef<Instance> consumers,
                               ArrayRef<Instance> producerInstances) {
  SmallVector<size_t> consumerStatements = statementsOf(consumers);
  SmallVector<SmallVector<Instance>> after(consumers.size() + 1);
  for (const Instance &p : producerInstances)
    after[lastReader(p.statement, consumerStatements)
              .value_or(consumers.size())]
        .push_back(p);
  for (auto [i, c] : llvm::enumerate(consumers)) {
    emitInstances(b, c);
    if (after[i].empty())
      continue;
    BarrierOp::create(b, loc);
    emitInstances(b, after[i]);
  }
  emitInstances(b, after.back());
}

/// Whether `statement` runs at prologue or epilogue step `k` (every
/// statement runs at a steady step).
bool LoopExpander::runsAt(StepKind kind, int64_t k, size_t statement) {
  int64_t s = stage[statement];
  switch (kind) {
  case StepKind::Prologue: // step k, iteration k - s
    return k - s >= 0 && !(constTripCount && k - s >= *constTripCount);
  case StepKind::Steady:
    return true;
  case StepKind::Epilogue:
    // step n + k runs the statements with stage > k, for iteration
    // n + k - stage, unless the prologue already covered that step.
    return s > k && !(constTripCount && *constTripCount + k < maxStage);
  }
  llvm_unreachable("step kind");
}

/// For each producer (producerStatements' order), the index of the consumer
/// it goes before (consumers.size(): after all of them): after them by
/// default, before them with copies-first, right after its last reader
/// with reuse-slots (as emitReusing places it).
SmallVector<size_t> LoopExpander::placeProducers(ArrayRef<size_t> consumers) {
  SmallVector<size_t> at;
  for (size_t p : producerStatements) {
    size_t where = options.copiesFirst ? 0 : consumers.size();
    if (options.reuseSlots)
      if (std::optional<size_t> last = lastReader(p, consumers))
        where = *last + 1;
    at.push_back(where);
  }
  return at;
}

/// group-per-copy: a step commits one group per producer, in the order they
/// are placed; the order may differ between prologue and steady steps (a
/// prologue step has fewer consumers), so a consumer's wait counts each
/// group at the latest position it takes at any step.
void LoopExpander::computeGroupPositions() {
  groupPosition.assign(producerStatements.size(), 0);
  auto visit = [&](StepKind kind, int64_t k) {
    SmallVector<size_t> consumers;
    for (size_t i : sequence)
      if (!producers.contains(statements[i]) && stage[i] > 0 &&
          runsAt(kind, k, i))
        consumers.push_back(i);
    SmallVector<size_t> at = placeProducers(consumers);
    SmallVector<size_t> order(at.size());
    for (size_t q = 0; q < order.size(); ++q)
      order[q] = q;
    llvm::stable_sort(order, [&](size_t x, size_t y) { return at[x] < at[y]; });
    for (auto [position, q] : llvm::enumerate(order))
      groupPosition[q] = std::max<int64_t>(groupPosition[q], position);
  };
  for (int64_t k = 0; k < maxStage; ++k)
    visit(StepKind::Prologue, k);
  visit(StepKind::Steady, 0);
}

void LoopExpander::emitStep(OpBuilder &b, StepKind kind, Value t, int64_t k) {
  SmallVector<Instance> consumers, producerInstances, sameStage;
  for (size_t i : sequence) {
    if (!runsAt(kind, k, i))
      continue;
    int64_t s = stage[i];
    Value j, guard;
    switch (kind) {
    case StepKind::Prologue: {
      int64_t jc = k - s; // step k, iteration k - s
      j = index(b, jc);
      if (!constTripCount)
        guard = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, j,
                                      tripCount);
      break;
    }
    case StepKind::Steady:
      j = arith::SubIOp::create(b, loc, t, index(b, s));
      break;
    case StepKind::Epilogue: {
      j = arith::SubIOp::create(b, loc, t, index(b, s));
      if (!constTripCount)
        guard = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::sge, t, index(b, maxStage));
      break;
    }
    }
    Instance inst{i, j, guard};
    if (producers.contains(statements[i]))
      producerInstances.push_back(inst);
    else if (s == 0 && !producers.empty())
      sameStage.push_back(inst);
    else
      consumers.push_back(inst);
  }
  if (options.groupPerCopy && !producers.empty()) {
    emitGrouped(b, kind, consumers, producerInstances);
  } else {
    emitUngrouped(b, consumers, producerInstances);
  }
  // Stage-0 statements that are not copies run after the copies of their own
  // iteration: when they read multi-buffered memory, those copies must land.
  if (sameStage.empty())
    return;
  bool readsCopies = llvm::any_of(sameStage, [&](const Instance &inst) {
    SetVector<Value> used;
    for (Value v : statements[inst.statement]->getOperands())
      used.insert(v);
    getUsedValuesDefinedAbove(statements[inst.statement]->getRegions(), used);
    return llvm::any_of(used, [&](Value v) { return multiBuffered.count(v); });
  });
  if (readsCopies) {
    waitGroups(b, loc, 0);
    BarrierOp::create(b, loc);
  }
  emitInstances(b, sameStage);
}

/// One commit group a step: the wait for the consumers' copies and a
/// barrier at its top.
void LoopExpander::emitUngrouped(OpBuilder &b, ArrayRef<Instance> consumers,
                                 ArrayRef<Instance> producerInstances) {
  // Consumers need the copies they read to have landed (for this thread:
  // the wait; for all threads: the barrier, which also keeps the producers
  // below from overwriting a slot another thread still reads). A step with
  // no consumer (early in the prologue) needs neither: its producers fill
  // slots nothing has read yet.
  if (!producers.empty() && !consumers.empty()) {
    waitGroups(b, loc, pending);
    BarrierOp::create(b, loc);
  }
  // With maxStage + 1 slots the producers write slots last read by the
  // previous step's consumers (ordered by the barrier above, or, early in
  // the prologue, never read), not by this step's: they go after the
  // consumers, or with copies-first before them, which keeps one more copy
  // group in flight while the consumers compute. With reuse-slots they
  // write the slots this step's consumers read, so each follows its
  // buffer's last reader (emitReusing).
  if (options.reuseSlots) {
    emitReusing(b, consumers, producerInstances);
  } else {
    if (!options.copiesFirst)
      emitInstances(b, consumers);
    emitInstances(b, producerInstances);
  }
  if (!producers.empty())
    commitGroup(b, loc);
  if (options.copiesFirst)
    emitInstances(b, consumers);
}

/// One commit group per producer. Groups are counted from the first one of
/// this step (earlier steps' groups are negative: every step commits one
/// per producer, padding with empty groups where producers do not run). A
/// consumer of stage d reads iteration t - d's copies, committed d steps
/// ago; before the first consumer of each buffer the step waits until only
/// the groups committed after the latest of them may be pending, then a
/// barrier makes every thread's copies visible. A producer overwrites a slot
/// an earlier consumer read: a barrier since that consumer (reuse-slots,
/// the slot read in this step) or since the step began (the slot read at an
/// earlier step) orders them.
void LoopExpander::emitGrouped(OpBuilder &b, StepKind kind,
                               ArrayRef<Instance> consumers,
                               ArrayRef<Instance> producerInstances) {
  int64_t groups = producerStatements.size();
  SmallVector<size_t> at = placeProducers(statementsOf(consumers));
  // Groups below `landed` have landed and are visible to every thread.
  int64_t committed = 0, landed = std::numeric_limits<int64_t>::min();
  bool barrierInStep = false, barrierSinceConsumer = false;
  auto barrier = [&] {
    BarrierOp::create(b, loc);
    barrierInStep = barrierSinceConsumer = true;
  };
  for (size_t i = 0; i <= consumers.size(); ++i) {
    for (auto [q, p] : llvm::enumerate(producerStatements)) {
      if (at[q] != i)
        continue;
      const Instance *inst = llvm::find_if(producerInstances, [&](auto &x) {
        return x.statement == p;
      });
      if (inst == producerInstances.end())
        continue;
      // Before a steady step the slot was read (prologue slots were not).
      if (kind == StepKind::Steady) {
        bool readHere = options.reuseSlots && i > 0;
        if (readHere ? !barrierSinceConsumer : !barrierInStep)
          barrier();
      }
      emitInstances(b, *inst);
      commitGroup(b, loc);
      ++committed;
    }
    if (i == consumers.size())
      break;
    const Instance &c = consumers[i];
    std::optional<int64_t> latest;
    for (auto [q, p] : llvm::enumerate(producerStatements))
      if (uses(c.statement, cast<CopyOp>(statements[p]).getDst())) {
        int64_t group = -stage[c.statement] * groups + groupPosition[q];
        latest = std::max(latest.value_or(group), group);
      }
    if (latest && *latest >= landed) {
      int64_t waitPending = std::max<int64_t>(committed - 1 - *latest, 0);
      waitGroups(b, loc, waitPending);
      barrier();
      landed = committed - waitPending;
    }
    emitInstances(b, c);
    barrierSinceConsumer = false;
  }
  for (; committed < groups; ++committed)
    commitGroup(b, loc);
}

LogicalResult LoopExpander::run() {
  if (failed(prepare()))
    return failure();
  OpBuilder b(loop);
  lower = loop.getLower();
  step = loop.getStep();
  // Trip count, clamped at zero.
  Value diff = arith::SubIOp::create(b, loc, loop.getUpper(), lower);
  Value count = arith::CeilDivSIOp::create(b, loc, diff, step);
  tripCount = arith::MaxSIOp::create(b, loc, count, index(b, 0));
  APInt lo, hi, st;
  if (matchPattern(lower, m_ConstantInt(&lo)) &&
      matchPattern(loop.getUpper(), m_ConstantInt(&hi)) &&
      matchPattern(step, m_ConstantInt(&st)) && st.getSExtValue() > 0) {
    int64_t d = hi.getSExtValue() - lo.getSExtValue();
    constTripCount = std::max<int64_t>(0, (d + st.getSExtValue() - 1) /
                                              st.getSExtValue());
  }

  if (options.groupPerCopy)
    computeGroupPositions();
  for (int64_t k = 0; k < maxStage; ++k)
    emitStep(b, StepKind::Prologue, Value(), k);
  auto steady = scf::ForOp::create(b, loc, index(b, maxStage), tripCount,
                                   index(b, 1));
  {
    OpBuilder inner = OpBuilder::atBlockTerminator(steady.getBody());
    emitStep(inner, StepKind::Steady, steady.getInductionVar(), 0);
  }
  for (int64_t k = 0; k < maxStage; ++k) {
    Value t = arith::AddIOp::create(b, loc, tripCount, index(b, k));
    emitStep(b, StepKind::Epilogue, t, k);
  }
  if (!producers.empty())
    waitGroups(b, loc, 0);

  loop.erase();
  for (auto &[old, slotted] : multiBuffered)
    if (old.use_empty())
      old.getDefiningOp()->erase();
  return success();
}

struct TilePipelineExpandPass
    : public tile::impl::TilePipelineExpandBase<TilePipelineExpandPass> {
  using TilePipelineExpandBase::TilePipelineExpandBase;
  void runOnOperation() override {
    SmallVector<PipelinedOp> loops;
    getOperation().walk([&](PipelinedOp loop) { loops.push_back(loop); });
    for (PipelinedOp loop : loops)
      if (failed(expandPipelinedLoop(loop, {copiesFirst, reuseSlots, groupPerCopy, asyncCopies})))
        return signalPassFailure();
  }
};

} // namespace

LogicalResult
mlir::tile::expandPipelinedLoop(PipelinedOp loop,
                                PipelineExpandOptions options) {
  return LoopExpander(loop, options).run();
}

Value mlir::tile::ringSlotView(OpBuilder &b, Location loc, Value ring,
                               Value slot, MemRefType type) {
  auto ringType = cast<MemRefType>(ring.getType());
  SmallVector<OpFoldResult> offsets = {slot}, sizes = {b.getIndexAttr(1)},
                            strides = {b.getIndexAttr(1)};
  for (int64_t d : type.getShape()) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(d));
    strides.push_back(b.getIndexAttr(1));
  }
  auto viewType = memref::SubViewOp::inferRankReducedResultType(
      type.getShape(), ringType, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, cast<MemRefType>(viewType), ring,
                                   offsets, sizes, strides);
}
