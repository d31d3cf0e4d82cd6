"""T.import_source and T.call_extern of the program's own CUDA C++ device
functions (TileLang's dequantize examples decode packed weights this way):
NVRTC compiles the source (with TileLang's half_t, bfloat16_t, uint,
__pack_half2) into PTX that is linked into the kernel's; buffers pass
pointers to a thread's local copy (T.access_ptr, whole buffers or an
element), scalars by value, a result comes back as a scalar of the call's
dtype; template functions are instantiated at the argument types.

GPU runs (marked `gpu`) against NumPy; sm_80 and sm_90a compiles (ptxas
checks the linked PTX); CUDA device builtins (__nanosleep, __popc) called
without a source; the CPU and ROCm targets, a source NVRTC rejects and a
function no source defines are clear errors."""

import re

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.errors import CompilationError, TileLangError
from tilelang_mlir.compiler import extern
from support.devices import get, put

SRC = r"""
template <typename T1, typename T2>
__device__ void scale_add(T1 *x, T2 *y, const int n, float s) {
  #pragma unroll
  for (int i = 0; i < n; ++i) y[i] = (T2)((float)x[i] * s + 1.0f);
}
__device__ int twice(int v) { return 2 * v; }
__device__ void bump(float *p) { asm volatile("add.f32 %0, %0, 0f3F800000;" : "+f"(*p)); }
__device__ uint pack(half_t a, half_t b) { return __pack_half2(a, b); }
__device__ void pack_pairs(half_t *h, uint *out) { out[0] = pack(h[0], h[1]); }
"""

N, TH = 1024, 128


def _program(src=SRC):
    @T.prim_func
    def main(X: T.Tensor((N,), "float16"), Y: T.Tensor((N,), "float32"),
             Z: T.Tensor((N,), "int32"), P: T.Tensor((N // 4,), "uint32")):
        with T.Kernel(N // (TH * 4), threads=TH) as bx:
            T.import_source(src)
            xl = T.alloc_local((4,), "float16")
            yl = T.alloc_local((4,), "float32")
            pl = T.alloc_local((1,), "uint32")
            tx = T.get_thread_binding()
            base = bx * TH * 4 + tx * 4
            for v in T.vectorized(4):
                xl[v] = X[base + v]
            T.call_extern("handle", "scale_add", T.access_ptr(xl, "r"),
                          T.access_ptr(yl, "w"), 4, 0.5)
            T.call_extern("bump", T.access_ptr(yl[2], "rw"), dtype="handle")
            T.call_extern("handle", "pack_pairs", T.access_ptr(xl, "r", offset=2),
                          T.access_ptr(pl, "w"))
            for v in T.serial(4):
                Y[base + v] = yl[v]
                Z[base + v] = T.call_extern("int32", "twice", base + v)
            P[bx * TH + tx] = pl[0]

    return main


@pytest.mark.gpu
def test_import_source_on_gpu(rng):
    x = rng.standard_normal(N).astype(np.float16)
    kernel = tl.compile(_program(), out_idx=[1, 2, 3], target="cuda")
    y, z, p = (get(v) for v in kernel(put(x, "cuda")))
    want = x.astype(np.float32) * 0.5 + 1.0
    want[2::4] += 1.0
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(z, 2 * np.arange(N))
    bits = x.view(np.uint16).astype(np.uint32)
    np.testing.assert_array_equal(p, bits[2::4] | (bits[3::4] << 16))


WIDE_SRC = r"""
__device__ void widen(signed char *q, half_t *h) {
  uint w = *reinterpret_cast<uint *>(q);
  uint4 out;
  out.x = w & 0xFFu; out.y = (w >> 8) & 0xFFu;
  out.z = (w >> 16) & 0xFFu; out.w = w >> 24;
  *reinterpret_cast<uint4 *>(h) = out;
}
"""


def _wide_program():
    """A callee that reads an int8[4] buffer as one uint32 and writes a
    half[8] one as a uint4 (TileLang's lop3 decoders do): a thread's local
    buffers are 16-byte aligned, as CUDA C++ places such arrays. Odd-sized
    buffers allocated before them would otherwise leave them misaligned."""

    @T.prim_func
    def main(Q: T.Tensor((N, 4), "int8"), H: T.Tensor((N, 8), "uint16")):
        with T.Kernel(N // TH, threads=TH) as bx:
            T.import_source(WIDE_SRC)
            pad = T.alloc_local((3,), "int8")
            ql = T.alloc_local((4,), "int8")
            pad2 = T.alloc_local((1,), "float16")
            hl = T.alloc_local((8,), "float16")
            i = bx * TH + T.get_thread_binding()
            for v in T.serial(3):
                pad[v] = Q[i, v]
            pad2[0] = T.cast(pad[0], "float16")
            for v in T.vectorized(4):
                ql[v] = Q[i, v]
            T.call_extern("handle", "widen", T.access_ptr(ql, "r"),
                          T.access_ptr(hl, "w"))
            for v in T.serial(8):
                H[i, v] = T.reinterpret(hl[v], "uint16") + T.cast(
                    pad2[0] * T.float16(0), "uint16")

    return main


@pytest.mark.gpu
def test_extern_wide_access_to_local_buffers_on_gpu(rng):
    q = rng.integers(-128, 128, (N, 4), dtype=np.int8)
    kernel = tl.compile(_wide_program(), out_idx=[1], target="cuda")
    h = get(kernel(put(q, "cuda")))
    w = q.view(np.uint32).reshape(N)
    want = np.zeros((N, 8), np.uint16)
    for k in range(4):  # uint4 halves: low 16 bits of each 32-bit lane
        want[:, 2 * k] = (w >> (8 * k)) & 0xFF
    np.testing.assert_array_equal(h, want)


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a"])
def test_import_source_compiles(chip):
    kernel = tl.compile(_program(), out_idx=[1, 2, 3], target=chip)
    ptx = kernel.get_kernel_source()
    assert "// T.import_source (NVRTC)" in ptx
    # The wrappers are defined once, and no longer declared external.
    assert ".visible .func __tl_extern_0" in ptx
    assert ".extern .func __tl_extern_0" not in ptx
    wide = tl.compile(_wide_program(), out_idx=[1], target=chip).get_kernel_source()
    assert re.search(r"\.local \.align 16 \.b8\s+__local_depot0\[", wide), wide


def test_import_source_elsewhere_is_an_error():
    with pytest.raises(CompilationError, match=r"`scale_add` of the program's CUDA C\+\+ "
                                               r"source .*ROCm targets"):
        tl.compile(_program(), out_idx=[1, 2, 3], target="rocm:gfx942")

    @T.prim_func
    def cpu(X: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            T.import_source(SRC)
            xl = T.alloc_local((1,), "float32")
            xl[0] = X[0]
            T.call_extern("handle", "bump", T.access_ptr(xl, "rw"))
            X[0] = xl[0]

    with pytest.raises(CompilationError, match="`bump` of the program's CUDA C\\+\\+ source "
                                               ".*CPU backend"):
        tl.compile(cpu, target="cpu")


def test_nvrtc_errors_and_missing_source():
    with pytest.raises(CompilationError, match="does not compile for sm_90a"):
        tl.compile(_program(SRC + "\n__device__ void broken( {}\n"), out_idx=[1, 2, 3],
                   target="cuda:sm_90a")

    @T.prim_func
    def unsourced(X: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            xl = T.alloc_local((1,), "float32")
            T.call_extern("handle", "decode", T.access_ptr(xl, "rw"))

    with pytest.raises(CompilationError, match=r"(?s)not a CUDA device builtin needs the "
                                               r"T.import_source of its definition.*decode"):
        tl.compile(unsourced, target="cuda:sm_90a")


def _builtins():
    """CUDA device builtins called without a source (TileLang's
    `T.call_extern("void", "__nanosleep", 100)`): thread 0 sleeps, then
    stores; after T.sync_warp thread 1 reads its store."""

    @T.prim_func
    def main(A: T.Tensor((1,), "int32"), B: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            if tx == 0:
                T.call_extern("void", "__nanosleep", 100)
                A[0] = -1
            T.sync_warp()
            if tx == 1:
                B[0] = A[0]
                B[1] = T.call_extern("int32", "__popc", 0xF0F0)

    return main


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a"])
def test_cuda_builtins_without_a_source_compile(chip):
    ptx = tl.compile(_builtins(), target=chip).get_kernel_source()
    assert "nanosleep.u32" in ptx and "popc.b32" in ptx


@pytest.mark.gpu
def test_cuda_builtins_without_a_source_on_gpu():
    kernel = tl.compile(_builtins(), target="cuda")
    a, b = put(np.zeros(1, np.int32), "cuda"), put(np.zeros(2, np.int32), "cuda")
    kernel(a, b)
    np.testing.assert_array_equal(get(b), [-1, 8])


def _rz_halves():
    """A CUDA builtin of element values inside T.Parallel (each thread calls
    it for its elements; deepseek-ai/TileKernels' float -> e5m6 cast)."""

    @T.prim_func
    def main(X: T.Tensor((256,), "float32"), Y: T.Tensor((256,), "float16")):
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                Y[bx * 128 + i] = T.call_extern("float16", "__float2half_rz", X[bx * 128 + i])

    return main


def _toward_zero_f16(x):
    h = x.astype(np.float16)
    over = np.abs(h.astype(np.float64)) > np.abs(x.astype(np.float64))
    h[over] = np.nextafter(h[over], np.float16(0))
    return h


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a"])
def test_extern_calls_of_element_values_in_parallel_compile(chip):
    ptx = tl.compile(_rz_halves(), out_idx=[1], target=chip).get_kernel_source()
    assert "cvt.rz.f16.f32" in ptx


@pytest.mark.gpu
def test_extern_calls_of_element_values_in_parallel_on_gpu(rng):
    kernel = tl.compile(_rz_halves(), out_idx=[1], target="cuda")
    x = (rng.standard_normal(256) * 100).astype(np.float32)
    np.testing.assert_array_equal(get(kernel(put(x, "cuda"))), _toward_zero_f16(x))


def test_link_replaces_the_declarations():
    kernel = (".version 8.7\n.target sm_90a\n.address_size 64\n\n"
              ".extern .func __tl_extern_0\n(\n\t.param .b64 p0\n)\n;\n"
              ".extern .func  (.param .b32 func_retval0) vprintf\n(\n\t.param .b64 a,"
              "\n\t.param .b64 b\n)\n;\n.visible .entry k() { ret; }\n")
    nvrtc = (".version 9.0\n.target sm_90a\n.address_size 64\n"
             ".extern .func  (.param .b32 func_retval0) vprintf\n(\n\t.param .b64 a,"
             "\n\t.param .b64 b\n)\n;\n"
             ".visible .func __tl_extern_0(\n\t.param .b64 p0\n)\n{ ret; }\n")
    out = extern.link(kernel, nvrtc)
    assert out.count(".version") == 1 and out.count("vprintf") == 1
    assert ".extern .func __tl_extern_0" not in out
    assert out.index(".visible .func __tl_extern_0") < out.index(".visible .entry k")
