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

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <string>
#include <vector>

namespace nb = nanobind;

//===----------------------------------------------------------------------===//
// Runtime support for JIT-compiled CPU kernels
//===----------------------------------------------------------------------===//

// The bfloat16/float16 truncations LLVM calls on x86 and device asserts, in
// the C source that saved CPU kernels link too (one copy of the routines;
// see the comments there). Its C headers are included above, outside the
// extern "C" block.
extern "C" {
#include "tilelang_mlir/runtime/cpu_runtime.c"
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
        symbols["__truncsfbf2"] = reinterpret_cast<uintptr_t>(&__truncsfbf2);
        symbols["__truncdfbf2"] = reinterpret_cast<uintptr_t>(&__truncdfbf2);
        symbols["__truncdfhf2"] = reinterpret_cast<uintptr_t>(&__truncdfhf2);
        symbols["__tile_assert_fail"] =
            reinterpret_cast<uintptr_t>(&__tile_assert_fail);
        symbols["__tile_time_ns"] =
            reinterpret_cast<uintptr_t>(&__tile_time_ns);
        return symbols;
      },
      "Addresses of the runtime routines JIT-compiled CPU kernels may call.");

  m.def(
      "run_guarded",
      [](uintptr_t fn, uintptr_t args) -> nb::object {
        tile_failure f;
        int stopped;
        {
          nb::gil_scoped_release release;
          stopped = tile_run_guarded(reinterpret_cast<void (*)(void *)>(fn),
                                     reinterpret_cast<void *>(args), &f);
        }
        if (!stopped)
          return nb::none();
        return nb::make_tuple(nb::str(f.message), nb::str(f.file), f.line,
                              nb::str(f.function),
                              nb::make_tuple(f.block[0], f.block[1],
                                             f.block[2]));
      },
      nb::arg("fn"), nb::arg("args"),
      "Calls the JIT-compiled CPU kernel entry `fn` (a void(void *) address) "
      "on the packed arguments at `args`; returns None, or (message, file, "
      "line, function, block) of the device assert that stopped it.");

  m.def(
      "run_guarded_address",
      []() { return reinterpret_cast<uintptr_t>(&tile_run_guarded); },
      "The address of tile_run_guarded (int (void (*)(void *), void *, "
      "tile_failure *)): what the native launcher calls JIT-compiled CPU "
      "kernels with device asserts through.");

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
