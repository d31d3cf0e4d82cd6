//===- TileDialect.cpp - tile dialect and attributes ----------------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/IR/TileDialect.h"
#include "dialects/Tile/IR/TileOps.h"

#include "mlir/IR/AffineExprVisitor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tile;

#include "dialects/Tile/IR/TileDialect.cpp.inc"
#include "dialects/Tile/IR/TileEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Tile/IR/TileAttrs.cpp.inc"

void TileDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Tile/IR/TileOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Tile/IR/TileAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Scope helpers
//===----------------------------------------------------------------------===//

FailureOr<std::optional<MemoryScope>> mlir::tile::getMemoryScope(MemRefType type) {
  Attribute space = type.getMemorySpace();
  if (!space)
    return std::optional<MemoryScope>();
  if (auto scope = dyn_cast<MemoryScopeAttr>(space))
    return std::optional<MemoryScope>(scope.getValue());
  return failure();
}

bool mlir::tile::isInScope(Type type, MemoryScope scope) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref)
    return false;
  auto s = dyn_cast_or_null<MemoryScopeAttr>(memref.getMemorySpace());
  return s && s.getValue() == scope;
}

bool mlir::tile::isStoredFloat8(Type type) {
  Type e = getElementTypeOrSelf(type);
  if (auto m = dyn_cast<MemRefType>(type))
    e = m.getElementType();
  return isa<Float8E4M3FNType, Float8E5M2Type, Float8E8M0FNUType>(e);
}

bool mlir::tile::isGlobal(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && !memref.getMemorySpace();
}

StringRef mlir::tile::getScopeName(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref)
    return "scalar";
  if (!memref.getMemorySpace())
    return "global";
  if (auto s = dyn_cast<MemoryScopeAttr>(memref.getMemorySpace()))
    return stringifyMemoryScope(s.getValue());
  return "unknown";
}

//===----------------------------------------------------------------------===//
// SwizzleAttr
//===----------------------------------------------------------------------===//

LogicalResult SwizzleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  unsigned bytes, unsigned pad) {
  if (bytes != 0 && bytes != 32 && bytes != 64 && bytes != 128)
    return emitError() << "swizzle span must be 0, 32, 64 or 128 bytes, got "
                       << bytes;
  if (bytes != 0 && pad != 0)
    return emitError() << "a swizzled buffer cannot also be padded (swizzle "
                       << bytes << " bytes, pad " << pad << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// FragmentLayoutAttr
//===----------------------------------------------------------------------===//

LogicalResult
FragmentLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           AffineMapAttr mapAttr, int64_t threads,
                           int64_t replicate) {
  AffineMap map = mapAttr.getValue();
  if (map.getNumResults() != 2)
    return emitError() << "layout map must have 2 results (thread, register), "
                          "got "
                       << map.getNumResults();
  if (map.getNumDims() == 0)
    return emitError() << "layout map must have at least one dimension";
  if (threads <= 0)
    return emitError() << "layout threads must be positive, got " << threads;
  if (replicate <= 0)
    return emitError() << "layout replicate must be positive, got "
                       << replicate;
  unsigned expectedSymbols = replicate > 1 ? 1 : 0;
  if (map.getNumSymbols() != expectedSymbols)
    return emitError() << "layout map must have " << expectedSymbols
                       << " symbol(s) (the replica index) with replicate = "
                       << replicate << ", got " << map.getNumSymbols();
  return success();
}

static std::string formatIndex(ArrayRef<int64_t> index) {
  std::string result;
  llvm::raw_string_ostream os(result);
  llvm::interleaveComma(index, os);
  return result;
}

/// Evaluates an affine expression on constant dims and symbols.
static std::optional<int64_t> evaluate(AffineExpr expr, ArrayRef<int64_t> dims,
                                       ArrayRef<int64_t> symbols) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return c.getValue();
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return dims[d.getPosition()];
  if (auto s = dyn_cast<AffineSymbolExpr>(expr))
    return symbols[s.getPosition()];
  auto bin = cast<AffineBinaryOpExpr>(expr);
  std::optional<int64_t> lhs = evaluate(bin.getLHS(), dims, symbols);
  std::optional<int64_t> rhs = evaluate(bin.getRHS(), dims, symbols);
  if (!lhs || !rhs)
    return std::nullopt;
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return *lhs + *rhs;
  case AffineExprKind::Mul:
    return *lhs * *rhs;
  case AffineExprKind::Mod:
    if (*rhs <= 0)
      return std::nullopt;
    return llvm::mod(*lhs, *rhs);
  case AffineExprKind::FloorDiv:
    if (*rhs == 0)
      return std::nullopt;
    return llvm::divideFloorSigned(*lhs, *rhs);
  case AffineExprKind::CeilDiv:
    if (*rhs == 0)
      return std::nullopt;
    return llvm::divideCeilSigned(*lhs, *rhs);
  default:
    return std::nullopt;
  }
}

std::optional<std::pair<int64_t, int64_t>>
FragmentLayoutAttr::apply(ArrayRef<int64_t> index, int64_t replica) const {
  AffineMap map = getMap().getValue();
  SmallVector<int64_t, 1> symbols;
  if (map.getNumSymbols())
    symbols.push_back(replica);
  std::optional<int64_t> thread = evaluate(map.getResult(0), index, symbols);
  std::optional<int64_t> reg = evaluate(map.getResult(1), index, symbols);
  if (!thread || !reg)
    return std::nullopt;
  return std::make_pair(*thread, *reg);
}

LogicalResult FragmentLayoutAttr::verifyForShape(
    ArrayRef<int64_t> shape,
    function_ref<InFlightDiagnostic()> emitError) const {
  AffineMap map = getMap().getValue();
  if (map.getNumDims() != shape.size())
    return emitError() << "layout has " << map.getNumDims()
                       << " dimension(s) but the fragment has rank "
                       << shape.size();
  int64_t numElements = 1;
  for (int64_t d : shape)
    numElements *= d;
  // Checking every element is cheap for the tile sizes that exist in
  // practice; skip absurdly large fragments rather than spend time here.
  constexpr int64_t kMaxCheckedElements = 1 << 20;
  if (numElements > kMaxCheckedElements)
    return success();
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t linear = 0; linear < numElements; ++linear) {
    int64_t rem = linear;
    for (int64_t d = shape.size() - 1; d >= 0; --d) {
      index[d] = rem % shape[d];
      rem /= shape[d];
    }
    for (int64_t r = 0; r < getReplicate(); ++r) {
      std::optional<std::pair<int64_t, int64_t>> res = apply(index, r);
      if (!res)
        return emitError() << "layout divides by zero at element ("
                           << formatIndex(index) << ")";
      if (res->first < 0 || res->first >= getThreads())
        return emitError() << "layout maps element (" << formatIndex(index)
                           << ") to thread " << res->first
                           << ", outside [0, " << getThreads() << ")";
      if (res->second < 0)
        return emitError() << "layout maps element (" << formatIndex(index)
                           << ") to negative register " << res->second;
    }
  }
  return success();
}
