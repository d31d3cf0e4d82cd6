//===- Chips.cpp - the chips the compiler targets -------------------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/Utils/Chips.h"

#include "llvm/ADT/ArrayRef.h"

using namespace mlir;
using namespace mlir::tile;

/// The rows of python/tilelang_mlir/base/chips.py, generated at build time.
static const ChipInfo chipTable[] = {
#define TILE_CHIP(NAME, VENDOR, ARCH, WARP_SIZE, MAX_SHARED_BYTES,            \
                  PTX_VERSION, SMS, DEVICE_DEFAULT, MMA_SYNC, WGMMA, TMA,      \
                  SETMAXNREG, MFMA)                                            \
  {NAME, ChipVendor::VENDOR, ARCH, WARP_SIZE, MAX_SHARED_BYTES, PTX_VERSION,   \
   SMS, DEVICE_DEFAULT != 0, MMA_SYNC != 0, WGMMA != 0, TMA != 0,              \
   SETMAXNREG != 0, MFMA != 0},
#include "dialects/Tile/Utils/Chips.inc"
};

ArrayRef<ChipInfo> mlir::tile::getChips() { return chipTable; }

const ChipInfo *mlir::tile::lookupChip(StringRef name) {
  for (const ChipInfo &chip : chipTable)
    if (chip.name == name)
      return &chip;
  return nullptr;
}

std::string mlir::tile::knownChips(ChipVendor vendor) {
  SmallVector<StringRef> names;
  for (const ChipInfo &chip : chipTable)
    if (chip.vendor == vendor)
      names.push_back(chip.name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0)
      out += i + 1 == names.size() ? " and " : ", ";
    out += names[i].str();
  }
  return out;
}
