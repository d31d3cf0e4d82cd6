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

#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

// float64 to float16 (LLVM computes a float16 fma in float64 on x86), by
// the C++ compiler's correctly rounded conversion.
extern "C" _Float16 tileTruncDFHF2(double x) { return static_cast<_Float16>(x); }

// Device asserts of CPU kernels (tile.device_assert lowered by
// convert-tile-to-scf): a failing check calls tileAssertFail, which records
// the failure and jumps back to tileRunGuarded, so that the kernel stops and
// the Python call raises. The frames skipped are JIT-compiled kernel code
// (no destructors); buffers the kernel allocated on the heap leak.

namespace {
struct AssertFailure {
  std::string message, file, function;
  int32_t line = 0;
  int64_t block[3] = {0, 0, 0};
};

struct AssertState {
  std::jmp_buf *resume = nullptr;
  AssertFailure failure;
};

thread_local AssertState assertState;

void recordFailure(const char *message, const char *file, int32_t line,
                   const char *function, int64_t bx, int64_t by, int64_t bz) {
  AssertFailure &f = assertState.failure;
  f.message = message;
  f.file = file;
  f.function = function;
  f.line = line;
  f.block[0] = bx;
  f.block[1] = by;
  f.block[2] = bz;
}

/// Runs `fn(args)`; false if a device assert stopped it.
bool tileRunGuarded(void (*fn)(void *), void *args) {
  std::jmp_buf here;
  std::jmp_buf *outer = assertState.resume;
  assertState.resume = &here;
  if (setjmp(here)) {
    assertState.resume = outer;
    return false;
  }
  fn(args);
  assertState.resume = outer;
  return true;
}
} // namespace

extern "C" void tileAssertFail(const char *message, const char *file,
                               int32_t line, const char *function, int64_t bx,
                               int64_t by, int64_t bz) {
  recordFailure(message, file, line, function, bx, by, bz);
  if (std::jmp_buf *resume = assertState.resume)
    std::longjmp(*resume, 1);
  // Not run through run_guarded: report and abort, as C's assert does.
  std::fprintf(stderr,
               "%s:%d: %s: block (%lld, %lld, %lld): device assertion failed: "
               "%s\n",
               file, line, function, static_cast<long long>(bx),
               static_cast<long long>(by), static_cast<long long>(bz),
               message);
  std::abort();
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
        symbols["__truncdfhf2"] = reinterpret_cast<uintptr_t>(&tileTruncDFHF2);
        symbols["__tile_assert_fail"] =
            reinterpret_cast<uintptr_t>(&tileAssertFail);
        return symbols;
      },
      "Addresses of the runtime routines JIT-compiled CPU kernels may call.");

  m.def(
      "run_guarded",
      [](uintptr_t fn, uintptr_t args) -> nb::object {
        bool completed;
        {
          nb::gil_scoped_release release;
          completed = tileRunGuarded(reinterpret_cast<void (*)(void *)>(fn),
                                     reinterpret_cast<void *>(args));
        }
        if (completed)
          return nb::none();
        const AssertFailure &f = assertState.failure;
        return nb::make_tuple(f.message, f.file, f.line, f.function,
                              nb::make_tuple(f.block[0], f.block[1],
                                             f.block[2]));
      },
      nb::arg("fn"), nb::arg("args"),
      "Calls the JIT-compiled CPU kernel entry `fn` (a void(void *) address) "
      "on the packed arguments at `args`; returns None, or (message, file, "
      "line, function, block) of the device assert that stopped it.");

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
