//===- NVVMTargetInfo.cpp - NVIDIA targets of the GPU lowering ------------===//
//
// Part of tilelang-mlir.
//
// What the target-neutral lowering asks of an NVIDIA GPU; the op families
// it hands over are in MmaSync.cpp, Wgmma.cpp and TmaBarriersRoles.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToNVVM/NVVMTargetInfo.h"
#include "NVVMKernelLowering.h"
#include "dialects/Tile/Utils/RoundingUtils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::tile;

//===----------------------------------------------------------------------===//
// Facts
//===----------------------------------------------------------------------===//

/// `red.global.add.v2.f32` needs sm_90 and PTX 8.1. The chip table gives
/// the compute capability; the PTX version is the one of the target's
/// features, which is what LLVM emits (the pass may be asked for less than
/// the table's `ptxVersion`).
bool NVVMTargetInfo::hasPairedF32AtomicAdd() const {
  if (chip.arch < 90)
    return false;
  int ptx = 0;
  StringRef features = target.getFeatures();
  size_t at = features.find("+ptx");
  if (at == StringRef::npos ||
      features.drop_front(at + 4)
          .take_while(llvm::isDigit)
          .getAsInteger(10, ptx) ||
      ptx < 81)
    return false;
  return true;
}

/// The PTX approximate instructions (ex2, lg2, rsqrt, sin, cos: relative
/// error about 2^-22). ex2 flushes subnormals (results below 2^-126 become
/// 0): without .ftz, ptxas wraps every MUFU.EX2 in a range test and two
/// multiplies, three extra instructions per element of an attention
/// softmax.
StringRef NVVMTargetInfo::getMathIntrinsic(MathIntrinsic fn) const {
  switch (fn) {
  case MathIntrinsic::exp2:
    return "llvm.nvvm.ex2.approx.ftz.f32";
  case MathIntrinsic::log2:
    return "llvm.nvvm.lg2.approx.f";
  case MathIntrinsic::rsqrt:
    return "llvm.nvvm.rsqrt.approx.f";
  case MathIntrinsic::sin:
    return "llvm.nvvm.sin.approx.f";
  case MathIntrinsic::cos:
    return "llvm.nvvm.cos.approx.f";
  case MathIntrinsic::rcp:
    return "llvm.nvvm.rcp.approx.ftz.f";
  case MathIntrinsic::floor:
  case MathIntrinsic::ceil:
    return "";
  }
  llvm_unreachable("math intrinsic");
}

/// CUDA's expf as nvcc compiles it without fast math (the sequence its PTX
/// shows): n = floor(252 sat(x log2(e) / 252 + 1/2)) from a round-down fma
/// into the low bits of 1.5 2^23 + 1 (saturation gives 0 and infinity past
/// the range), f = x log2(e) - (n - 126) with log2(e) in two parts, and
/// 2^f (ex2.approx.ftz) scaled by 2^(n - 126), whose exponent field is the
/// fma result's low bits shifted into place. torch's exp and TileLang's
/// T.exp are this code: their float32 results agree bit for bit.
Value NVVMTargetInfo::emitLibraryExpf(OpBuilder &b, Location loc,
                                      Value x) const {
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto bits = [&](uint32_t u) -> Value {
    return arith::ConstantOp::create(
        b, loc, f32, b.getF32FloatAttr(llvm::bit_cast<float>(u)));
  };
  auto intrinsic = [&](StringRef name, ValueRange args) -> Value {
    return LLVM::CallIntrinsicOp::create(b, loc, f32, b.getStringAttr(name),
                                         args)
        .getResult(0);
  };
  Value t = math::FmaOp::create(b, loc, x, bits(0x3BBB989D), bits(0x3F000000));
  Value s = intrinsic("llvm.nvvm.saturate.f", t);
  Value j = intrinsic("llvm.nvvm.fma.rm.f",
                      ValueRange{s, bits(0x437C0000), bits(0x4B400001)});
  Value k = arith::AddFOp::create(b, loc, j, bits(0xCB40007F));
  Value f = math::FmaOp::create(b, loc, x, bits(0x3FB8AA3B),
                                arith::NegFOp::create(b, loc, k));
  f = math::FmaOp::create(b, loc, x, bits(0x32A57060), f);
  Value scale = arith::BitcastOp::create(
      b, loc, f32,
      arith::ShLIOp::create(
          b, loc, arith::BitcastOp::create(b, loc, i32, j),
          arith::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(23))));
  Value e = intrinsic(getMathIntrinsic(MathIntrinsic::exp2), f);
  return arith::MulFOp::create(b, loc, e, scale);
}

/// f32 and f64 with PTX's rounded instructions (`add.rz.f32`, `sqrt.rp.f64`,
/// ...: CUDA's __fadd_rz and kin); sub is add of the negation (exact), rsqrt
/// and 16-bit types take the shared path.
Value NVVMTargetInfo::emitRoundedArith(OpBuilder &b, Location loc,
                                       IEEEKind kind, RoundingMode mode,
                                       ValueRange operands) const {
  Type t = operands[0].getType();
  if (!(t.isF32() || t.isF64()) || kind == IEEEKind::rsqrt)
    return GPUTargetInfo::emitRoundedArith(b, loc, kind, mode, operands);
  SmallVector<Value> args(operands.begin(), operands.end());
  StringRef op;
  switch (kind) {
  case IEEEKind::sub:
    args[1] = arith::NegFOp::create(b, loc, args[1]);
    [[fallthrough]];
  case IEEEKind::add:
    op = "add";
    break;
  case IEEEKind::mul:
    op = "mul";
    break;
  case IEEEKind::fma:
    op = "fma";
    break;
  case IEEEKind::div:
    op = "div";
    break;
  case IEEEKind::rcp:
    op = "rcp";
    break;
  case IEEEKind::sqrt:
    op = "sqrt";
    break;
  case IEEEKind::rsqrt:
    llvm_unreachable("shared path");
  }
  StringRef rm[] = {"rn", "rz", "rp", "rm"}; // RoundingMode order: rn rz ru rd
  std::string name = ("llvm.nvvm." + op + "." + rm[(int)mode] + "." +
                      (t.isF32() ? "f" : "d"))
                         .str();
  return LLVM::CallIntrinsicOp::create(b, loc, t, b.getStringAttr(name), args)
      .getResult(0);
}

//===----------------------------------------------------------------------===//
// Emitters
//===----------------------------------------------------------------------===//

Value NVVMTargetInfo::emitGridDim(OpBuilder &b, Location loc, int d,
                                  int64_t blockSize) const {
  gpu::Dimension dims[] = {gpu::Dimension::x, gpu::Dimension::y,
                           gpu::Dimension::z};
  return gpu::GridDimOp::create(b, loc, dims[d]);
}

void NVVMTargetInfo::emitBarrier(OpBuilder &b, Location loc, int64_t id,
                                 int64_t threads) const {
  emitNamedBarrier(b, loc, id, threads);
}

/// `bar.sync 0, threads`: barrier 0 with its count given, which
/// tile-merge-barriers does not take for one it may drop.
void NVVMTargetInfo::emitDivergentBlockBarrier(OpBuilder &b, Location loc,
                                               int64_t threads) const {
  auto i32 = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  };
  NVVM::BarrierOp::create(b, loc, Type(), i32(0), i32(threads),
                          NVVM::BarrierReductionAttr(), Value());
}

void NVVMTargetInfo::emitAsyncCopy(OpBuilder &b, Location loc, Value dst,
                                   Value dstIdx, Value src, ValueRange srcIdx,
                                   int64_t width, Value count,
                                   bool bypassL1) const {
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  nvgpu::DeviceAsyncCopyOp::create(b, loc, tokenType, dst, ValueRange{dstIdx},
                                   src, srcIdx, b.getIndexAttr(width), count,
                                   bypassL1 ? b.getUnitAttr() : UnitAttr());
}

void NVVMTargetInfo::emitAsyncCommit(OpBuilder &b, Location loc) const {
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
}

void NVVMTargetInfo::emitAsyncWait(OpBuilder &b, Location loc,
                                   int64_t pending) const {
  NVVM::CpAsyncWaitGroupOp::create(b, loc, pending);
}

void NVVMTargetInfo::emitAsyncProxyFence(OpBuilder &b, Location loc) const {
  emitSharedProxyFence(b, loc);
}

/// A copy of the thread index through an asm statement with side effects:
/// LLVM hoists every thread-dependent shared-memory address of a loop body
/// (a swizzled fragment store has one per 16-byte chunk) out of the loop as
/// a loop invariant, and ptxas keeps them all live across the loop (the
/// FlashAttention backward held ~40 such registers and spilled). Derived
/// from this copy, they are recomputed in the loop (one integer op each)
/// where they are used.
Value NVVMTargetInfo::loopThreadIndex(OpBuilder &b, Location loc,
                                      Value tid) const {
  if (!loopTid)
    return tid;
  Type i32 = b.getI32Type();
  Value narrow = arith::IndexCastUIOp::create(b, loc, i32, tid);
  Value copy =
      LLVM::InlineAsmOp::create(
          b, loc, i32, ValueRange{narrow}, "mov.b32 $0, $1;", "=r,r",
          /*has_side_effects=*/true, /*is_align_stack=*/false,
          LLVM::tailcallkind::TailCallKind::None,
          LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
          ArrayAttr())
          .getRes();
  return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), copy);
}

void NVVMTargetInfo::emitPairedAtomicAdd(OpBuilder &b, Location loc, Value ptr,
                                         Value lo, Value hi) const {
  LLVM::InlineAsmOp::create(
      b, loc, TypeRange{}, ValueRange{ptr, lo, hi},
      "red.global.add.v2.f32 [$0], {$1, $2};", "l,f,f",
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
}

void NVVMTargetInfo::finalizeKernel(gpu::GPUFuncOp func) const {
  // A 16-bit float fma (T.hfma2's pairs) is one instruction; left to the
  // math lowering it would become a float32 libdevice call.
  func.walk([&](math::FmaOp op) {
    Type element = getElementTypeOrSelf(op.getType());
    if (!element.isF16() && !element.isBF16())
      return;
    OpBuilder b(op);
    op.replaceAllUsesWith(
        LLVM::FMAOp::create(b, op.getLoc(), op.getA(), op.getB(), op.getC())
            .getResult());
    op.erase();
  });
  // Float multiplies and adds may contract into fma, as CUDA compiles by
  // default (-fmad=true): the softmax's x * scale - m * scale is one FFMA
  // instead of a rounded multiply and a subtract.
  func.walk([&](arith::ArithFastMathInterface op) {
    if (!isa<arith::AddFOp, arith::SubFOp, arith::MulFOp>(op) ||
        op->hasAttr(kExactAttrName)) // tile.ieee's parts (RoundingUtils.h)
      return;
    op->setAttr(op.getFastMathAttrName(),
                arith::FastMathFlagsAttr::get(
                    op->getContext(), op.getFastMathFlagsAttr().getValue() |
                                          arith::FastMathFlags::contract));
  });
}

//===----------------------------------------------------------------------===//
// Op families
//===----------------------------------------------------------------------===//

std::unique_ptr<KernelLowering>
NVVMTargetInfo::createLowering(KernelOp kernel, func::FuncOp func) const {
  return std::make_unique<NVVMKernelLowering>(kernel, func, *this,
                                              producerRegs);
}

/// The operations that need Hopper are refused on other chips with the op's
/// own diagnostic (the explicit layer can ask for them on any target). TMA
/// and transaction counts exist from sm_90, but the compiler uses them on
/// the chips the table gives `tma` (sm_90a), so that is what they need.
static LogicalResult checkHopperOps(KernelOp kernel, const ChipInfo &chip) {
  auto refuse = [&](Operation *op, StringRef what, StringRef needs) {
    op->emitOpError() << what << ", which needs " << needs
                      << "; the kernel is compiled for " << chip.name;
    return WalkResult::interrupt();
  };
  WalkResult result = kernel.walk([&](Operation *op) -> WalkResult {
    if (auto copy = dyn_cast<CopyOp>(op); copy && copy.getBarrier() && !chip.tma)
      return refuse(op, "is a TMA copy (T.tma_copy)", "sm_90a");
    if (auto arrive = dyn_cast<BarrierArriveOp>(op);
        arrive && arrive.getExpectTx() && !chip.tma)
      return refuse(op, "announces transaction bytes", "sm_90a");
    if (isa<PdlTriggerOp, PdlWaitOp>(op) && chip.arch < 90)
      return refuse(op,
                    "is programmatic dependent launch (T.pdl_trigger / "
                    "T.pdl_sync; TileLang refuses it there too)",
                    "sm_90 or newer");
    if (isa<SetMaxNRegOp>(op) && !chip.setmaxnreg)
      return refuse(op, "changes the register budget (setmaxnreg)", "sm_90a");
    if (isa<GemmOp, GemmSpOp>(op) && op->hasAttr("wgmma") && !chip.wgmma)
      return refuse(op, "is a wgmma gemm", "sm_90a");
    if (isa<WarpSpecializeOp>(op) && !chip.tma)
      return refuse(op, "is warp-specialized through TMA", "sm_90a");
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult NVVMTargetInfo::prepareKernel(KernelLowering &kl) const {
  if (failed(checkHopperOps(kl.kernel, chip)))
    return failure();
  if (tmaStore)
    nvvmLowering(kl).chooseTmaStores();
  return nvvmLowering(kl).collectTensorMaps();
}

void NVVMTargetInfo::annotateKernel(KernelLowering &kl, OpBuilder &b) const {
  int64_t minBlocks = 0;
  if (kl.producerThreads || kl.setsRegisters) // a cap at entry, for setmaxnreg
    minBlocks = 1;
  // T.annotate_min_blocks_per_sm: __launch_bounds__'s second argument.
  if (auto n = kl.kernel->getAttrOfType<IntegerAttr>("tile.min_blocks_per_sm"))
    minBlocks = std::max<int64_t>(minBlocks, n.getInt());
  if (minBlocks)
    kl.gpuFunc->setAttr("nvvm.minctasm", b.getI32IntegerAttr(minBlocks));
  if (!kl.clusterDims.empty()) {
    SmallVector<int32_t> dims(kl.clusterDims.begin(), kl.clusterDims.end());
    kl.gpuFunc->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                        b.getDenseI32ArrayAttr(dims));
  }
}

void NVVMTargetInfo::emitKernelPrologue(KernelLowering &kl,
                                        OpBuilder &b) const {
  if (!kl.barrierInits.empty())
    nvvmLowering(kl).initBarriers(b);
}

/// The role's first thread issued the bulk groups: it waits until they have
/// read shared memory, then the role's threads synchronize.
void NVVMTargetInfo::emitBulkReadWait(KernelLowering &kl, OpBuilder &b,
                                      bool withBarrier) const {
  nvvmLowering(kl).waitBulkReads(b, withBarrier);
}

/// No block of a cluster may leave while another can still write to its
/// shared memory or barriers.
void NVVMTargetInfo::emitKernelEpilogue(KernelLowering &kl,
                                        OpBuilder &b) const {
  // Shared memory must outlive the reduce-adds still reading it: every
  // thread waits for its own bulk groups (none but the issuers have any).
  if (!kl.bulkReadSources.empty())
    NVVM::CpAsyncBulkWaitGroupOp::create(b, kl.loc, b.getI32IntegerAttr(0),
                                         b.getUnitAttr());
  if (!kl.clusterDims.empty())
    nvvmLowering(kl).clusterSync(b);
}

void NVVMTargetInfo::registerLowerings(LoweringTable &table) const {
  registerTmaBarrierRoleLowerings(table);
  registerWgmmaLowerings(table);
}

std::optional<LogicalResult>
NVVMTargetInfo::lowerBulkAtomicAdd(KernelLowering &kl, AtomicAddOp op,
                                   OpBuilder &b, IRMapping &map) const {
  if (!kl.copyTensorMap.contains(op))
    return std::nullopt;
  return nvvmLowering(kl).lowerTmaReduce(op, b, map);
}

LogicalResult NVVMTargetInfo::lowerGemm(KernelLowering &kl, GemmOp op,
                                        OpBuilder &b, const Buffer &a,
                                        const Buffer &bb, const Buffer &c,
                                        ArrayRef<int64_t> aRegs) const {
  if (op->hasAttr("mfma"))
    return op.emitOpError("an MFMA gemm needs an AMD target");
  if (op->hasAttr("wgmma"))
    return nvvmLowering(kl).gemmWgmma(op, b, a, bb, c, aRegs);
  return nvvmLowering(kl).gemmMma(op, b, a, bb, c, aRegs);
}

LogicalResult NVVMTargetInfo::lowerGemmSp(KernelLowering &kl, GemmSpOp op,
                                          OpBuilder &b, const Buffer &a,
                                          const Buffer &e, const Buffer &bb,
                                          const Buffer &c) const {
  if (op->hasAttr("wgmma"))
    return nvvmLowering(kl).gemmSpWgmma(op, b, a, e, bb, c);
  if (op->hasAttr("warp_partition"))
    return nvvmLowering(kl).gemmSpMma(op, b, a, e, bb, c);
  return op.emitOpError("was not assigned to the sparse tensor cores by "
                        "layout inference");
}

/// The wgmma groups, the cp.async groups (committing the copies not yet in
/// one), the bulk groups of TMA stores (issued by the role's leader) up to
/// their reads of shared memory; then a proxy fence, so that later
/// async-proxy accesses (TMA, wgmma) come after this thread's generic ones.
void NVVMTargetInfo::emitAsyncDrain(KernelLowering &kl, OpBuilder &b) const {
  Location loc = kl.loc;
  if (kl.usesAsyncProxy)
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  emitAsyncCommit(b, loc);
  emitAsyncWait(b, loc, 0);
  if (!kl.tmaStores.empty() || !kl.bulkReadSources.empty())
    nvvmLowering(kl).leaderWaitsBulkReads(b);
  if (kl.usesAsyncProxy || !kl.tensorMaps.empty())
    emitAsyncProxyFence(b, loc);
}

/// Inline PTX: the NVPTX backend leaves the scope of LLVM's atomic
/// read-modify-writes at the GPU (`atom.global.add`), and a flag another
/// GPU waits on needs .sys.
static Value asmOp(OpBuilder &b, Location loc, TypeRange results,
                   ValueRange operands, StringRef text, StringRef constraints) {
  auto op = LLVM::InlineAsmOp::create(
      b, loc, results, operands, text, constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
  return results.empty() ? Value() : op.getResult(0);
}

void NVVMTargetInfo::emitSignal(OpBuilder &b, Location loc, Value ptr,
                                Value value, SignalMode mode) const {
  bool wide = value.getType().getIntOrFloatBitWidth() == 64;
  std::string text = "fence.acq_rel.sys;\n\t";
  text += mode == SignalMode::add
              ? (wide ? "red.release.sys.global.add.u64 [$0], $1;"
                      : "red.release.sys.global.add.u32 [$0], $1;")
              : (wide ? "st.release.sys.global.b64 [$0], $1;"
                      : "st.release.sys.global.b32 [$0], $1;");
  asmOp(b, loc, {}, {ptr, value}, text, wide ? "l,l,~{memory}" : "l,r,~{memory}");
}

Value NVVMTargetInfo::emitAcquireLoad(OpBuilder &b, Location loc, Value ptr,
                                      Type type) const {
  bool wide = type.getIntOrFloatBitWidth() == 64;
  return asmOp(b, loc, {type}, {ptr},
               wide ? "ld.acquire.sys.global.b64 $0, [$1];"
                    : "ld.acquire.sys.global.b32 $0, [$1];",
               wide ? "=l,l,~{memory}" : "=r,l,~{memory}");
}

/// Data another agent wrote before the flag (a peer GPU, the copy engine)
/// may next be read by TMA, the async proxy: order this thread's acquire
/// before it (sm_90).
void NVVMTargetInfo::emitAfterAcquire(OpBuilder &b, Location loc) const {
  if (chip.arch >= 90)
    asmOp(b, loc, {}, {}, "fence.proxy.async.global;", "~{memory}");
}

/// %globaltimer: nanoseconds.
Value NVVMTargetInfo::emitTimeNs(OpBuilder &b, Location loc) const {
  return NVVM::GlobalTimerOp::create(b, loc, b.getI64Type());
}

/// CUDA's `__assertfail(message, file, line, function, charSize)` (a ptxas
/// system call: the driver prints "file:line: function: block: [..],
/// thread: [..] Assertion `message` failed." and the launch fails with an
/// assertion error).
void NVVMTargetInfo::emitAssertFailure(KernelLowering &kl, Location at,
                                       StringRef msg, OpBuilder &b,
                                       Value failed) const {
  Location loc = kl.loc;
  MLIRContext *ctx = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto fail = kl.gpuModule.lookupSymbol<LLVM::LLVMFuncOp>("__assertfail");
  if (!fail) {
    OpBuilder mb = OpBuilder::atBlockBegin(kl.gpuModule.getBody());
    auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                            {ptr, ptr, i32, ptr, i64});
    fail = LLVM::LLVMFuncOp::create(mb, loc, "__assertfail", type);
    // The kernel does not go on after it: a path from the call back into
    // the kernel would make ptxas serialize every wgmma of the kernel (its
    // pipeline may not cross a call, C7510).
    fail.setPassthroughAttr(b.getArrayAttr({b.getStringAttr("noreturn")}));
  }
  auto [file, line] = sourcePositionOf(at);
  guarded(b, loc, failed, [&](OpBuilder &gb) {
    SmallVector<Value> args = {
        kl.gpuModuleString(gb, "__tile_assert_msg_", msg),
        kl.gpuModuleString(gb, "__tile_assert_file_", file),
        arith::ConstantIntOp::create(gb, loc, i32, line),
        kl.gpuModuleString(gb, "__tile_assert_func_", kl.func.getName()),
        arith::ConstantIntOp::create(gb, loc, i64, 1)};
    LLVM::CallOp::create(gb, loc, fail, args);
    LLVM::Trap::create(gb, loc);
  });
}
