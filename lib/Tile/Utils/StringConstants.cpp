//===- StringConstants.cpp - NUL-terminated strings in LLVM IR ------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/Utils/StringConstants.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

Value mlir::tile::getOrCreateStringConstant(OpBuilder &b, Location loc,
                                            Operation *module, StringRef prefix,
                                            StringRef value) {
  std::string terminated = value.str();
  terminated.push_back('\0');
  std::string name;
  for (unsigned i = 0;; ++i) {
    name = (prefix + Twine(i)).str();
    auto global = dyn_cast_or_null<LLVM::GlobalOp>(
        SymbolTable::lookupSymbolIn(module, name));
    if (!global)
      break;
    auto existing = dyn_cast_or_null<StringAttr>(global.getValueOrNull());
    if (existing && existing.getValue() == terminated)
      return LLVM::AddressOfOp::create(b, loc, global);
  }
  LLVM::GlobalOp global;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&module->getRegion(0).front());
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), terminated.size());
    global = LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                                    LLVM::Linkage::Internal, name,
                                    b.getStringAttr(terminated));
  }
  return LLVM::AddressOfOp::create(b, loc, global);
}
