//===- StringConstants.h - NUL-terminated strings in LLVM IR ----*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// printf formats and assertion messages become internal llvm.mlir.global
// constants of the module that prints (the host module on the CPU, the
// gpu.module on GPUs), one per distinct string.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UTILS_STRINGCONSTANTS_H
#define TILE_UTILS_STRINGCONSTANTS_H

#include "mlir/IR/Builders.h"

namespace mlir {
namespace tile {

/// The address (!llvm.ptr) of a NUL-terminated constant holding `value`
/// among the globals of `module` (a symbol table: builtin.module or
/// gpu.module), named `<prefix>N`; made at the start of its body if no
/// global of that name holds it yet.
Value getOrCreateStringConstant(OpBuilder &b, Location loc, Operation *module,
                                StringRef prefix, StringRef value);

} // namespace tile
} // namespace mlir

#endif // TILE_UTILS_STRINGCONSTANTS_H
