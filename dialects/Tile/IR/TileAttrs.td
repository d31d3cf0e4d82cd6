//===- TileAttrs.td - tile dialect attributes --------------*- tablegen -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_ATTRS_TD
#define TILE_ATTRS_TD

include "dialects/Tile/IR/TileDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/EnumAttr.td"

class Tile_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Tile_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Memory scopes
//===----------------------------------------------------------------------===//

def Tile_MemoryScope : I32EnumAttr<"MemoryScope", "where a tile buffer lives", [
    I32EnumAttrCase<"shared", 1>,
    I32EnumAttrCase<"fragment", 2>,
    I32EnumAttrCase<"local", 3>,
    I32EnumAttrCase<"var", 4>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}

def Tile_MemoryScopeAttr : EnumAttr<Tile_Dialect, Tile_MemoryScope, "scope"> {
  let summary = "Memory space of a tile buffer";
  let description = [{
    Used as the memory space of a memref to say where the buffer lives. A
    memref without a memory space is in global memory (kernel arguments).

    - `shared`: shared memory of the block (dynamic shared memory on GPUs),
      visible to every thread of the block;
    - `fragment`: a tile held in registers, distributed over the threads of the
      block by a layout (see `#tile.layout`) chosen by layout inference;
    - `local`: a small array private to each thread;
    - `var`: a scalar private to each thread (a rank-0 memref).

    ```mlir
    %s = tile.alloc_shared : memref<128x32xf16, #tile.scope<shared>>
    %f = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Warp policy, reduction kinds
//===----------------------------------------------------------------------===//

def Tile_Eviction : I32EnumAttr<"Eviction",
    "the L2 eviction priority of a TMA copy's data", [
    I32EnumAttrCase<"evict_normal", 0>,
    I32EnumAttrCase<"evict_first", 1>,
    I32EnumAttrCase<"evict_last", 2>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}

def Tile_EvictionAttr : EnumAttr<Tile_Dialect, Tile_Eviction, "eviction"> {
  let assemblyFormat = "`<` $value `>`";
  let summary = "L2 eviction priority of a TMA copy";
  let description = [{
    TileLang's `eviction_policy` of a TMA load (`T.copy_cluster(...,
    cluster_mask=..., eviction_policy=...)`): `evict_first` and
    `evict_last` give the load an L2 cache policy of that priority
    (`createpolicy.fractional`, then the `.L2::cache_hint` form of the
    copy); `evict_normal` is the default policy.
  }];
}

def Tile_WarpPolicy : I32EnumAttr<"WarpPolicy",
    "how a gemm splits its warps over the output tile", [
    I32EnumAttrCase<"square", 0>,
    I32EnumAttrCase<"full_row", 1>,
    I32EnumAttrCase<"full_col", 2>,
    I32EnumAttrCase<"replicate", 3>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}

def Tile_WarpPolicyAttr : EnumAttr<Tile_Dialect, Tile_WarpPolicy, "policy"> {
  let summary = "Warp partition policy of a gemm";
  let description = [{
    How the warps of a block share the M×N output tile of a `tile.gemm`:
    `square` splits both dimensions as evenly as possible, `full_row` gives
    each warp whole rows (warps stacked along M), `full_col` gives each warp
    whole columns (warps side by side along N). `replicate` (wgmma only)
    gives each warpgroup the whole tile when it fits one warpgroup (M a
    multiple of 64, N at most 256): every warpgroup computes all of it, so
    its row reductions and a later register-A gemm need no exchange between
    warpgroups, at the price of the repeated tensor-core work.

    ```mlir
    tile.gemm %a, %b, %c {policy = #tile.policy<full_col>} : ...
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Tile_ReduceKind : I32EnumAttr<"ReduceKind", "reduction operator", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"min", 2>,
    I32EnumAttrCase<"abssum", 3>,
    I32EnumAttrCase<"absmax", 4>,
    I32EnumAttrCase<"bitAnd", 5, "bitand">,
    I32EnumAttrCase<"bitOr", 6, "bitor">,
    I32EnumAttrCase<"bitXor", 7, "bitxor">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}

def Tile_ReduceKindAttr : EnumAttr<Tile_Dialect, Tile_ReduceKind, "reduce"> {
  let summary = "Reduction operator of a tile.reduce";
  let description = [{
    `sum`, `max`, `min`, `abssum` (sum of absolute values), `absmax`
    (largest absolute value), or the bitwise `bitand`, `bitor`, `bitxor`
    (integer and boolean elements only).

    ```mlir
    tile.reduce %s -> %m {kind = #tile.reduce<max>, dim = 1 : i64} : ...
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Tile_IEEEKind : I32EnumAttr<"IEEEKind",
    "the operation of a tile.ieee", [
    I32EnumAttrCase<"add", 0>,
    I32EnumAttrCase<"sub", 1>,
    I32EnumAttrCase<"mul", 2>,
    I32EnumAttrCase<"fma", 3>,
    I32EnumAttrCase<"div", 4>,
    I32EnumAttrCase<"rcp", 5>,
    I32EnumAttrCase<"sqrt", 6>,
    I32EnumAttrCase<"rsqrt", 7>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}

def Tile_IEEEKindAttr : EnumAttr<Tile_Dialect, Tile_IEEEKind, "ieee"> {
  let summary = "Operation of a tile.ieee";
  let description = [{
    `add`, `sub`, `mul`, `div` (two operands), `fma` (a * b + c, one
    rounding), `rcp` (1 / a), `sqrt`, `rsqrt` (1 / sqrt(a)).
  }];
  let assemblyFormat = "$value";
}

def Tile_RoundingMode : I32EnumAttr<"RoundingMode",
    "an IEEE 754 rounding direction", [
    I32EnumAttrCase<"rn", 0>,
    I32EnumAttrCase<"rz", 1>,
    I32EnumAttrCase<"ru", 2>,
    I32EnumAttrCase<"rd", 3>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}

def Tile_RoundingModeAttr : EnumAttr<Tile_Dialect, Tile_RoundingMode,
                                     "rounding"> {
  let summary = "Rounding direction of a tile.ieee";
  let description = [{
    `rn` to nearest (ties to even), `rz` toward zero, `ru` toward +inf,
    `rd` toward -inf.
  }];
  let assemblyFormat = "$value";
}

def Tile_SignalMode : I32EnumAttr<"SignalMode", "how a tile.signal updates a flag", [
    I32EnumAttrCase<"set", 0>,
    I32EnumAttrCase<"add", 1>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}

def Tile_SignalModeAttr : EnumAttr<Tile_Dialect, Tile_SignalMode, "signal"> {
  let summary = "Update of a tile.signal";
  let description = [{
    `set` stores the value into the flag, `add` adds it atomically.
  }];
  let assemblyFormat = "$value";
}

def Tile_WaitCompare : I32EnumAttr<"WaitCompare",
    "the condition a tile.wait waits for", [
    I32EnumAttrCase<"eq", 0>,
    I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"ge", 2>,
    I32EnumAttrCase<"gt", 3>,
    I32EnumAttrCase<"le", 4>,
    I32EnumAttrCase<"lt", 5>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}

def Tile_WaitCompareAttr : EnumAttr<Tile_Dialect, Tile_WaitCompare, "wait"> {
  let summary = "Condition of a tile.wait";
  let description = [{
    `flag <cmp> value`, signed: `eq`, `ne`, `ge`, `gt`, `le` or `lt`.
  }];
  let assemblyFormat = "$value";
}

def Tile_RasterOrder : I32EnumAttr<"RasterOrder",
    "order of the block-index remapping of use_swizzle", [
    I32EnumAttrCase<"row", 0>,
    I32EnumAttrCase<"col", 1>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}

def Tile_RasterOrderAttr : EnumAttr<Tile_Dialect, Tile_RasterOrder, "raster"> {
  let summary = "Raster order of a threadblock swizzle";
  let description = [{
    Whether `tile.use_swizzle` walks panels of the grid row by row or column
    by column.

    ```mlir
    tile.use_swizzle 8 {order = #tile.raster<col>}
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Layouts
//===----------------------------------------------------------------------===//

def Tile_SwizzleAttr : Tile_Attr<"Swizzle", "swizzle"> {
  let summary = "Shared-memory swizzle or padding of a shared buffer";
  let description = [{
    How the elements of a shared buffer are placed to avoid bank conflicts.
    `bytes` is the swizzle span in bytes: 0 (no swizzle), 32, 64 or 128 (the
    modes that TMA and wgmma understand). `pad` adds that many elements at the
    end of every row instead (only without a swizzle). Layout inference fills
    it in on `tile.alloc_shared`; a user can force it with
    `tile.annotate_layout`.

    ```mlir
    %s = tile.alloc_shared {swizzle = #tile.swizzle<128>}
        : memref<128x64xf16, #tile.scope<shared>>
    %p = tile.alloc_shared {swizzle = #tile.swizzle<0, pad = 8>}
        : memref<64x64xf32, #tile.scope<shared>>
    ```
  }];
  let parameters = (ins
    "unsigned":$bytes,
    DefaultValuedParameter<"unsigned", "0">:$pad
  );
  let assemblyFormat = "`<` $bytes (`,` `pad` `=` $pad^)? `>`";
  let genVerifyDecl = 1;
}

def Tile_FragmentLayoutAttr : Tile_Attr<"FragmentLayout", "layout"> {
  let summary = "Which thread and register hold each element of a fragment";
  let description = [{
    A function from the logical index of a fragment to (thread, register):
    `map` has one dimension per logical dimension and two results, the thread
    index in `[0, threads)` and the register index within that thread. With
    `replicate = R > 1` each element is held by R threads: the map then takes
    one symbol, the replica index in `[0, R)`. This expresses the tensor-core
    accumulator and operand layouts as well as blocked elementwise layouts.

    ```mlir
    // A 16x8 mma.sync accumulator for one warp: lane = 4 * (i mod 8) + j / 2,
    // register = 2 * (i / 8) + j mod 2.
    #acc = #tile.layout<affine_map<(i, j) -> ((i mod 8) * 4 + j floordiv 2,
                                             (i floordiv 8) * 2 + j mod 2)>,
                        threads = 32>
    // A row vector replicated over the 4 lanes that share a row.
    #row = #tile.layout<affine_map<(i)[r] -> ((i mod 8) * 4 + r, i floordiv 8)>,
                        threads = 32, replicate = 4>
    ```
  }];
  let parameters = (ins
    "::mlir::AffineMapAttr":$map,
    "int64_t":$threads,
    DefaultValuedParameter<"int64_t", "1">:$replicate
  );
  let assemblyFormat = [{
    `<` $map `,` `threads` `=` $threads (`,` `replicate` `=` $replicate^)? `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The rank of the fragments this layout applies to.
    unsigned getRank() const { return getMap().getValue().getNumDims(); }
    /// Maps a logical index (and replica) to (thread, register); std::nullopt
    /// if the map divides by zero.
    std::optional<std::pair<int64_t, int64_t>>
    apply(::llvm::ArrayRef<int64_t> index, int64_t replica = 0) const;
    /// Verifies that this layout fits a fragment of `shape`: every element is
    /// mapped to a thread in range and to a non-negative register.
    ::mlir::LogicalResult verifyForShape(
        ::llvm::ArrayRef<int64_t> shape,
        ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError) const;
  }];
}

#endif // TILE_ATTRS_TD
