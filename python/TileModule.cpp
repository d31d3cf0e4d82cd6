//===- TileModule.cpp - the _tile Python extension ------------------------===//
//
// Part of tilelang-mlir.
//
// Registers the tile dialect (and everything our pipelines need) into the
// contexts of the embedded MLIR Python bindings; see
// tilelang_mlir/_mlir_libs/_site_initialize_0.py.
//
//===----------------------------------------------------------------------===//

#include "dialects/CAPI/Tile.h"

#include "mlir/Bindings/Python/Nanobind.h"
#include "mlir/Bindings/Python/NanobindAdaptors.h"
#include "nanobind/stl/string.h"
#include "nanobind/stl/vector.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace nb = nanobind;

//===----------------------------------------------------------------------===//
// Runtime support for JIT-compiled CPU kernels
//===----------------------------------------------------------------------===//

// LLVM lowers float -> bfloat truncation (and bfloat values moved through
// phis and selects, which it promotes to float) to the compiler-rt/libgcc
// routines below on x86 without AVX512-BF16; the libgcc of older toolchains
// lacks them. bfloat is returned in XMM0 like _Float16, hence the type.

static uint16_t floatToBFloatBits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t lsb = (bits >> 16) & 1u; // round to nearest, ties to even
  bits += 0x7fffu + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

static _Float16 bitsAsHalfRegister(uint16_t bits) {
  _Float16 out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

extern "C" _Float16 tileTruncSFBF2(float x) {
  return bitsAsHalfRegister(floatToBFloatBits(x));
}

extern "C" _Float16 tileTruncDFBF2(double x) {
  return bitsAsHalfRegister(floatToBFloatBits(static_cast<float>(x)));
}

NB_MODULE(_tile, m) {
  m.doc() = "tilelang-mlir native module: dialect and pass registration";

  m.def(
      "register_dialects",
      [](MlirDialectRegistry registry) { tileRegisterAllDialects(registry); },
      nb::arg("registry"),
      "Registers the tile dialect and every dialect, extension and "
      "translation its pipelines use.");

  m.def(
      "translate_to_llvmir",
      [](MlirOperation module) {
        std::string text;
        auto append = [](MlirStringRef part, void *data) {
          static_cast<std::string *>(data)->append(part.data, part.length);
        };
        if (!tileTranslateToLLVMIR(module, append, &text))
          throw nb::value_error("translation to LLVM IR failed (see the "
                                "diagnostics emitted on the module)");
        return text;
      },
      nb::arg("module"),
      "Translates an LLVM-dialect module to LLVM IR text.");

  m.def(
      "runtime_symbols",
      []() {
        nb::dict symbols;
        symbols["__truncsfbf2"] = reinterpret_cast<uintptr_t>(&tileTruncSFBF2);
        symbols["__truncdfbf2"] = reinterpret_cast<uintptr_t>(&tileTruncDFBF2);
        return symbols;
      },
      "Addresses of the runtime routines JIT-compiled CPU kernels may call.");

  m.def(
      "opt_main",
      [](std::vector<std::string> args) {
        std::vector<char *> argv;
        for (std::string &a : args)
          argv.push_back(a.data());
        argv.push_back(nullptr);
        return tileOptMain(static_cast<int>(args.size()), argv.data());
      },
      nb::arg("argv"),
      "Runs the tile-opt driver on `argv` (argv[0] is the program name); "
      "returns its exit code.");

  m.def(
      "register_passes", []() { tileRegisterAllPasses(); },
      "Registers the tile passes and the upstream passes our pipelines use.");
}
