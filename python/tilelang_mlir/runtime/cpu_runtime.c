/*===- cpu_runtime.c - runtime routines of CPU kernels ---------------------===*
 *
 * Part of tilelang-mlir.
 *
 * The routines a CPU kernel may call, in one source for both ways a kernel
 * runs: the in-process JIT (python/TileModule.cpp includes this file, and
 * `_tile.runtime_symbols` hands the addresses to MLIR's ExecutionEngine)
 * and a kernel saved as a shared library (compiler/cpu.py compiles this
 * file into the library; runtime/cpu.py calls tile_run_guarded through
 * ctypes, with `_Failure` mirroring tile_failure). Written in C so that a
 * saved kernel needs only a C compiler; it compiles as C++ too.
 *
 *===----------------------------------------------------------------------===*/

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* LLVM lowers float -> bfloat truncation (and bfloat values moved through
 * phis and selects, which it promotes to float) to the compiler-rt/libgcc
 * routines below on x86 without AVX512-BF16; the libgcc of older toolchains
 * lacks them. bfloat is returned in XMM0 like _Float16, hence the type. */

static uint16_t tile_bf16_bits(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet */
    return (uint16_t)((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u); /* round to nearest, ties to even */
  return (uint16_t)(bits >> 16);
}

static _Float16 tile_half_register(uint16_t bits) {
  _Float16 out;
  memcpy(&out, &bits, sizeof out);
  return out;
}

__attribute__((visibility("hidden"))) _Float16 __truncsfbf2(float x) {
  return tile_half_register(tile_bf16_bits(x));
}

__attribute__((visibility("hidden"))) _Float16 __truncdfbf2(double x) {
  return tile_half_register(tile_bf16_bits((float)x));
}

/* float64 to float16 (LLVM computes a float16 fma in float64 on x86),
 * correctly rounded. Not `(_Float16)x`: compilers lower that to a call of
 * __truncdfhf2, this very function. Instead double -> float rounded to odd
 * (the hardware conversion, then the neighbour on x's side where it rounded
 * to an even one), then float -> float16 (__truncsfhf2 or F16C): with the
 * 13 extra bits of float, the two roundings make one. */
__attribute__((visibility("hidden"))) _Float16 __truncdfhf2(double x) {
  float f = (float)x;
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if ((double)f != x && !(bits & 1u) && (bits & 0x7f800000u) != 0x7f800000u) {
    double ax = x < 0 ? -x : x, af = f < 0 ? -f : f;
    bits = ax > af ? bits + 1u : bits - 1u; /* one unit in the last place towards x */
    memcpy(&f, &bits, sizeof f);
  }
  return (_Float16)f;
}

/* Device asserts (tile.device_assert lowered by convert-tile-to-scf): a
 * failing check calls __tile_assert_fail, which records the failure and
 * jumps back to tile_run_guarded, so that the kernel stops and the Python
 * call raises. The frames skipped are kernel code (no destructors); buffers
 * the kernel allocated on the heap leak. */

typedef struct {
  char message[512], file[512], function[256];
  int32_t line;
  int64_t block[3];
} tile_failure;

static __thread jmp_buf *tile_resume;
static __thread tile_failure *tile_out;

static void tile_copy(char *dst, const char *src, size_t n) {
  strncpy(dst, src ? src : "", n - 1);
  dst[n - 1] = 0;
}

__attribute__((visibility("hidden"))) void __tile_assert_fail(
    const char *message, const char *file, int32_t line, const char *function, int64_t bx,
    int64_t by, int64_t bz) {
  if (tile_resume && tile_out) {
    tile_copy(tile_out->message, message, sizeof tile_out->message);
    tile_copy(tile_out->file, file, sizeof tile_out->file);
    tile_copy(tile_out->function, function, sizeof tile_out->function);
    tile_out->line = line;
    tile_out->block[0] = bx, tile_out->block[1] = by, tile_out->block[2] = bz;
    longjmp(*tile_resume, 1);
  }
  /* Not run through tile_run_guarded: report and abort, as C's assert does. */
  fprintf(stderr, "%s:%d: %s: block (%lld, %lld, %lld): device assertion failed: %s\n", file,
          line, function, (long long)bx, (long long)by, (long long)bz, message);
  abort();
}

/* The clock of T.wait's timeout (tile.wait lowered by convert-tile-to-scf):
 * monotonic nanoseconds. */
__attribute__((visibility("hidden"))) int64_t __tile_time_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Runs fn(args); 0 when it completed, 1 when a device assert stopped it
 * (the failure is then in *out). */
int tile_run_guarded(void (*fn)(void *), void *args, tile_failure *out) {
  jmp_buf here;
  jmp_buf *outer = tile_resume;
  tile_failure *outer_out = tile_out;
  tile_resume = &here;
  tile_out = out;
  if (setjmp(here)) {
    tile_resume = outer, tile_out = outer_out;
    return 1;
  }
  fn(args);
  tile_resume = outer, tile_out = outer_out;
  return 0;
}
