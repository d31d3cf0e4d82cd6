//===- Chips.h - the chips the compiler targets -----------------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// One description of each chip, shared with Python: the rows are those of
// python/tilelang_mlir/base/chips.py (the field meanings are written
// there), printed at build time by cmake/gen_chip_table.py as the X-macro
// Chips.inc. A pass that needs a fact about a chip (its shared memory, its
// warp size, its instruction families) looks the chip up here by name
// instead of parsing the name; a chip missing from the table is refused
// with the list of the known ones.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UTILS_CHIPS_H
#define TILE_UTILS_CHIPS_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir {
namespace tile {

enum class ChipVendor { NVIDIA, AMD };

/// One row of the chip table (the fields of chips.Chip, in its order).
struct ChipInfo {
  /// "sm_90a", "gfx942".
  StringRef name;
  ChipVendor vendor;
  /// The compute capability (90 for sm_90a); the gfx number read as
  /// hexadecimal (0x942).
  int64_t arch;
  /// Threads of a warp (wave).
  int64_t warpSize;
  /// The most shared memory (LDS) one block may use, in bytes.
  int64_t maxSharedBytes;
  /// The PTX ISA version the CUDA pipeline asks for, times ten; 0 on AMD.
  int64_t ptxVersion;
  /// Multiprocessors of the reference part; 0 where parts differ.
  int64_t sms;
  /// A GPU of this compute capability compiles for this chip.
  bool deviceDefault;
  /// The instruction families the compiler uses on the chip.
  bool mmaSync;
  bool wgmma;
  bool tma;
  bool setmaxnreg;
  bool mfma;
};

/// Every chip of the table, in table order.
ArrayRef<ChipInfo> getChips();

/// The chip called `name`, or null when the table lacks it.
const ChipInfo *lookupChip(StringRef name);

/// The names of `vendor`'s chips in table order, for error messages:
/// "gfx90a, gfx942 and gfx950".
std::string knownChips(ChipVendor vendor);

} // namespace tile
} // namespace mlir

#endif // TILE_UTILS_CHIPS_H
