//===- CheckNVVMChip.cpp - refuse NVVM ops the target chip lacks ----------===//
//
// Part of tilelang-mlir.
//
// See the description of tile-check-nvvm-chip in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/NVVM/Transforms/Passes.h"
#include "dialects/Tile/Utils/Chips.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMRequiresSMTraits.h"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILECHECKNVVMCHIP
#include "dialects/NVVM/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;

namespace {

/// The operations without an NVVMRequiresSM trait that need a newer chip
/// than the oldest of the chip table (sm_75), by name prefix (PTX ISA,
/// each instruction's target ISA notes); the first matching row counts.
struct Row {
  StringLiteral prefix;
  int arch;
  bool accelerated = false; // the arch-specific target (sm_90a)
};
constexpr Row kUntraited[] = {
    {"nvvm.mbarrier.try_wait", 90},
    {"nvvm.mbarrier.arrive.expect_tx", 90},
    {"nvvm.mbarrier.arrive_drop.expect_tx", 90},
    {"nvvm.mbarrier.expect_tx", 90},
    {"nvvm.mbarrier.complete_tx", 90},
    {"nvvm.fence.mbarrier.init", 90},
    {"nvvm.fence.proxy.acquire", 90},
    {"nvvm.fence.proxy.release", 90},
    {"nvvm.cluster.arrive", 90},
    {"nvvm.cp.async.bulk.", 90},
    // cp.async (non-bulk), its groups and its mbarrier arrive: Ampere.
    {"nvvm.cp.async.", 80},
    {"nvvm.redux.sync", 80},
    {"nvvm.mbarrier.", 80},
    {"nvvm.elect.sync", 90},
    {"nvvm.stmatrix", 90},
    {"nvvm.griddepcontrol", 90},
    // Thread block clusters: distributed shared memory addresses and the
    // cluster special registers (clusterid, cluster.ctaid, cluster.nctarank,
    // nclusterid).
    {"nvvm.mapa", 90},
    {"nvvm.read.ptx.sreg.cluster", 90},
    {"nvvm.read.ptx.sreg.ncluster", 90},
    {"nvvm.setmaxregister", 90, true},
    {"nvvm.convert.f32x2.to.f8x2", 89},
};

static bool isFloat8(std::optional<NVVM::MMATypes> t) {
  return t && (*t == NVVM::MMATypes::e4m3 || *t == NVVM::MMATypes::e5m2);
}

using Need = NVVM::NVVMCheckSMVersion;

/// What `op` needs, if more than sm_75. (Operations with MLIR's
/// NVVMRequiresSM trait are checked by the verifier of the gpu.module.)
static std::optional<Need> needOf(Operation *op) {
  if (auto fence = dyn_cast<NVVM::FenceProxyOp>(op))
    return fence.getKind() == NVVM::ProxyKind::alias ? std::nullopt
                                                      : std::optional(Need(false, 90));
  if (auto mma = dyn_cast<NVVM::MmaOp>(op)) {
    if (isFloat8(mma.getMultiplicandAPtxType()) ||
        isFloat8(mma.getMultiplicandBPtxType()))
      return Need(false, 89);
    // Turing's mma.sync: f16 m16n8k8 and the m8n8 shapes; the m16n8k16 f16,
    // bf16, tf32 and m16n8kN integer forms are Ampere's.
    NVVM::MMAShapeAttr shape = mma.getShape();
    if (shape.getM() == 16 &&
        !(shape.getK() == 8 &&
          mma.getMultiplicandAPtxType() == NVVM::MMATypes::f16))
      return Need(false, 80);
  }
  if (isa<NVVM::MmaSpOp>(op))
    return Need(false, 80);
  StringRef name = op->getName().getStringRef();
  for (const Row &row : kUntraited)
    if (name.starts_with(row.prefix))
      return Need(row.accelerated, row.arch);
  return std::nullopt;
}

/// "sm_90 or newer", "sm_90a", "sm_100a or sm_101a".
static std::string describe(const Need &need) {
  if (!need.archAccelerated)
    return "sm_" + std::to_string(need.smVersionList.front()) + " or newer";
  std::string text;
  for (int v : need.smVersionList)
    text += (text.empty() ? "sm_" : " or sm_") + std::to_string(v) + "a";
  return text;
}

struct TileCheckNVVMChip
    : public tile::impl::TileCheckNVVMChipBase<TileCheckNVVMChip> {
  void runOnOperation() override {
    gpu::GPUModuleOp module = getOperation();
    NVVM::NVVMTargetAttr target;
    if (ArrayAttr targets = module.getTargetsAttr())
      for (Attribute t : targets)
        if ((target = dyn_cast<NVVM::NVVMTargetAttr>(t)))
          break;
    if (!target)
      return; // not an NVIDIA module
    StringRef chip = target.getChip();
    // LLVM's NVPTX backend aborts on a chip it does not know too; the chip
    // table's are the ones it takes (convert-tile-to-nvvm makes only those).
    const tile::ChipInfo *info = tile::lookupChip(chip);
    if (!info || info->vendor != tile::ChipVendor::NVIDIA) {
      module.emitError("the NVVM target's chip must be one of ")
          << tile::knownChips(tile::ChipVendor::NVIDIA) << ", got " << chip;
      return signalPassFailure();
    }
    auto have = NVVM::NVVMCheckSMVersion::getTargetSMVersionFromStr(chip);
    WalkResult result = module.walk([&](Operation *op) -> WalkResult {
      std::optional<Need> need = needOf(op);
      if (!need || need->isCompatibleWith(have))
        return WalkResult::advance();
      // (At the op's location, the user's line, without the op prefix of
      // an upstream op's verifier: this is a property of the chip.)
      emitError(op->getLoc())
          << op->getName() << " needs " << describe(*need) << ", but the kernel is compiled for " << chip
          << ": the tile operation at this location has no lowering for "
          << chip;
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
