//===- TilePCH.h - The precompiled upstream headers of our libraries -------===//
//
// The MLIR and LLVM headers most of our sources include. Each library
// compiles them once into a precompiled header (lib/CMakeLists.txt) instead
// of once per source file: a lowering file spent about 20 of its 25 seconds
// of compile time parsing these. Only upstream headers belong here; our own
// (and generated) headers change with the sources and stay per file.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_PCH_H
#define TILE_PCH_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#endif // TILE_PCH_H
