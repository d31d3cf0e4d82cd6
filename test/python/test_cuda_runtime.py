"""The CUDA runtime: grid expressions, argument packing, ahead-of-time
artifacts, the profiler, and (on a GPU) launching hand-written PTX kernels.

The GPU tests depend on no compiler: their kernels are PTX text below,
assembled with ptxas at test time and wrapped in a Kernel through
Kernel.save / tl.load, as a compiled kernel would be.
"""

import ctypes
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import tilelang_mlir as tl
from tilelang_mlir.language import dtypes as dt  # before the frontend (import cycle)
from tilelang_mlir.compiler.target import Target
from tilelang_mlir.frontend.prim_func import Param
from tilelang_mlir.runtime import artifact, cuda
from tilelang_mlir.runtime.args import BoundTensor
from tilelang_mlir.runtime.cuda import CUDAExecutable, evaluate_grid, make_kernel
from tilelang_mlir.runtime.kernel import Kernel


def tensor(name, shape, dtype="float32"):
    return Param(name, "tensor", dt.as_dtype(dtype), tuple(shape))


def scalar(name, dtype):
    return Param(name, "scalar", dt.as_dtype(dtype))


def const(v):
    return {"const": v}


def sym(name):
    return {"sym": name}


def op(name, a, b):
    return {"op": name, "args": [a, b]}


FAKE_CUBIN = b"\x7fELF fake cubin for tests"


# ---------------------------------------------------------------------------
# Grid expressions
# ---------------------------------------------------------------------------


def test_grid_constants_are_padded_to_three():
    assert evaluate_grid([const(5)], {}, {}) == (5, 1, 1)
    assert evaluate_grid([const(5), const(2)], {}, {}) == (5, 2, 1)
    assert evaluate_grid([const(5), const(2), const(3)], {}, {}) == (5, 2, 3)


def test_grid_symbols_scalars_and_ops():
    syms, scalars = {"M": 1000, "N": 7}, {"n": 3}
    assert evaluate_grid([op("ceildiv", sym("M"), const(128)), {"scalar": "n"}],
                         syms, scalars) == (8, 3, 1)
    cases = {"add": 1007, "sub": 993, "mul": 7000, "floordiv": 142, "ceildiv": 143,
             "mod": 6, "max": 1000, "min": 7}
    for name, want in cases.items():
        assert evaluate_grid([op(name, sym("M"), sym("N"))], syms, scalars) == (want, 1, 1), name
    nested = op("mul", op("ceildiv", sym("M"), const(256)), op("max", sym("N"), const(2)))
    assert evaluate_grid([nested], syms, scalars) == (28, 1, 1)


def test_grid_division_follows_python():
    # floordiv and mod of negative intermediates are Python's // and %.
    s = {"a": -7}
    assert evaluate_grid([op("add", op("floordiv", sym("a"), const(2)), const(10))], s, {}) == (6, 1, 1)
    assert evaluate_grid([op("mod", sym("a"), const(3))], s, {}) == (2, 1, 1)
    assert evaluate_grid([op("add", op("ceildiv", sym("a"), const(2)), const(10))], s, {}) == (7, 1, 1)
    assert evaluate_grid([op("ceildiv", const(7), const(2))], {}, {}) == (4, 1, 1)
    assert evaluate_grid([op("ceildiv", const(8), const(2))], {}, {}) == (4, 1, 1)


def test_grid_zero_and_negative_extents():
    assert evaluate_grid([op("ceildiv", sym("M"), const(64)), const(4)], {"M": 0}, {}) == (0, 4, 1)
    with pytest.raises(ValueError, match=r"grid extent y = sub\(M, 10\) evaluates to -6, which is negative"):
        evaluate_grid([const(1), op("sub", sym("M"), const(10))], {"M": 4}, {})


def test_grid_errors_are_clear():
    with pytest.raises(ValueError, match="divides by zero"):
        evaluate_grid([op("floordiv", const(4), sym("K"))], {"K": 0}, {})
    with pytest.raises(ValueError, match="symbolic size 'M', which is not bound"):
        evaluate_grid([sym("M")], {}, {})
    with pytest.raises(ValueError, match="scalar argument 'n', which is not bound"):
        evaluate_grid([{"scalar": "n"}], {}, {})
    with pytest.raises(ValueError, match="uses the scalar argument 'x', which is not an integer"):
        evaluate_grid([{"scalar": "x"}], {}, {"x": 1.5})
    with pytest.raises(ValueError, match="unknown op 'pow'"):
        evaluate_grid([op("pow", const(2), const(3))], {}, {})
    with pytest.raises(ValueError, match="takes a list of 2 args"):
        evaluate_grid([{"op": "add", "args": [const(1)]}], {}, {})
    with pytest.raises(ValueError, match="must be the only key and an integer"):
        evaluate_grid([{"const": True}], {}, {})
    with pytest.raises(ValueError, match="must be the only key and an integer"):
        evaluate_grid([{"const": 2.0}], {}, {})
    with pytest.raises(ValueError, match="has none of the keys"):
        evaluate_grid([{"value": 2}], {}, {})
    with pytest.raises(ValueError, match="must be a JSON object"):
        evaluate_grid([4], {}, {})
    with pytest.raises(ValueError, match="list of 1 to 3 extents"):
        evaluate_grid([], {}, {})
    with pytest.raises(ValueError, match="list of 1 to 3 extents"):
        evaluate_grid([const(1)] * 4, {}, {})


# ---------------------------------------------------------------------------
# The executable without a GPU
# ---------------------------------------------------------------------------


def test_executable_checks_its_configuration():
    params = [tensor("X", ("n",)), scalar("k", "int32"), scalar("s", "float32")]
    with pytest.raises(ValueError, match="symbolic size 'm', which no tensor parameter has"):
        CUDAExecutable(FAKE_CUBIN, "f", (128, 1, 1), 0, [sym("m")], params)
    with pytest.raises(ValueError, match="refers to 's', which is not an integer scalar parameter"):
        CUDAExecutable(FAKE_CUBIN, "f", (128, 1, 1), 0, [{"scalar": "s"}], params)
    with pytest.raises(ValueError, match="block must be 1 to 3 positive ints"):
        CUDAExecutable(FAKE_CUBIN, "f", (0, 1, 1), 0, [const(1)], params)
    with pytest.raises(ValueError, match="shared_bytes must be a non-negative int"):
        CUDAExecutable(FAKE_CUBIN, "f", (128,), -1, [const(1)], params)
    with pytest.raises(TypeError, match="cubin must be non-empty bytes"):
        CUDAExecutable("text", "f", (128,), 0, [const(1)], params)
    for bad in ("float16", "bfloat16"):
        with pytest.raises(TypeError, match=f"scalar parameter 'h' has type {bad}, which CUDA "
                                            "kernels cannot take by value"):
            CUDAExecutable(FAKE_CUBIN, "f", (1,), 0, [const(1)], [scalar("h", bad)])
    exe = CUDAExecutable(FAKE_CUBIN, "f", [64], 0, [op("ceildiv", sym("n"), const(64)),
                                                    {"scalar": "k"}], params)
    assert exe.block == (64, 1, 1)
    values = [BoundTensor(None, 0, (1000,), (1,)), 3, 1.0]
    assert exe.launch_grid(params, values) == (16, 3, 1)
    with pytest.raises(ValueError, match=r"grid extent x = n = 2147483648 exceeds the CUDA limit"):
        CUDAExecutable(FAKE_CUBIN, "f", [1], 0, [sym("n")], params).launch_grid(
            params, [BoundTensor(None, 0, (2 ** 31,), (1,)), 1, 1.0])


def test_pack_arguments_follows_the_descriptor_abi():
    params = [tensor("A", ("M", "N")), scalar("i8", "int8"), scalar("i16", "int16"),
              scalar("i32", "int32"), scalar("i64", "int64"), scalar("u8", "uint8"),
              scalar("flag", "bool"), scalar("f", "float32"), scalar("d", "float64"),
              tensor("x", (5,), "int32")]
    big = 0xFFFF_8000_0000_1230  # a pointer with the top bit set stays unsigned
    values = [BoundTensor(None, 0x7F00_0000_1000, (3, 4), (4, 1)), -5, -300, -70000,
              -(2 ** 40), 250, True, 1.5, math.pi, BoundTensor(None, big, (5,), (1,))]
    array, keep = cuda.pack_arguments(params, values)
    assert len(array) == 7 + 8 + 5

    def read(i, ctype):
        return ctype.from_address(array[i]).value

    assert [read(i, ctypes.c_uint64) for i in range(7)] == [
        0x7F00_0000_1000, 0x7F00_0000_1000, 0, 3, 4, 4, 1]
    assert read(7, ctypes.c_int8) == -5
    assert read(8, ctypes.c_int16) == -300
    assert read(9, ctypes.c_int32) == -70000
    assert read(10, ctypes.c_int64) == -(2 ** 40)
    assert read(11, ctypes.c_uint8) == 250
    assert read(12, ctypes.c_uint8) == 1 and ctypes.sizeof(cuda.SCALAR_CTYPES["bool"]) == 1
    assert read(13, ctypes.c_float) == 1.5
    assert read(14, ctypes.c_double) == math.pi
    assert [read(i, ctypes.c_uint64) for i in range(15, 20)] == [big, big, 0, 5, 1]
    del keep


def test_driver_errors_name_the_call_and_the_result():
    driver = pytest.importorskip("cuda.bindings.driver")
    err = driver.CUresult.CUDA_ERROR_INVALID_VALUE
    with pytest.raises(RuntimeError, match=r"^cuLaunchKernel failed with CUDA_ERROR_INVALID_VALUE"
                                           r".*: kernel 'k'"):
        cuda.check_result((err,), "cuLaunchKernel", "kernel 'k'")
    ok = driver.CUresult.CUDA_SUCCESS
    assert cuda.check_result((ok,), "cuInit") is None
    assert cuda.check_result((ok, 7), "cuDeviceGet") == 7


def _scalar_grid_kernel(tmp_path, sync=None):
    params = [scalar("n", "int32")]
    k = make_kernel("count", params, [], "cuda:sm_90a", cubin=FAKE_CUBIN, entry="count",
                    block=[32], grid=[{"scalar": "n"}], shared_bytes=0, ptx="// ptx")
    k.save(tmp_path / "count")
    return tl.load(tmp_path / "count", sync=sync)


def test_empty_grid_launches_nothing(tmp_path, monkeypatch):
    kernel = _scalar_grid_kernel(tmp_path)

    def no_driver():
        raise AssertionError("an empty grid must not touch the driver")

    monkeypatch.setattr(cuda, "_driver", no_driver)
    assert kernel(0) is None
    with pytest.raises(ValueError, match="grid extent x = n evaluates to -2, which is negative"):
        kernel(-2)


def test_launch_without_gpu_is_a_clear_error(tmp_path):
    pytest.importorskip("cuda.bindings.driver")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    kernel = _scalar_grid_kernel(tmp_path)
    with pytest.raises(RuntimeError, match="kernel 'count' needs a CUDA GPU, but torch sees none"):
        kernel(4)


def test_cuda_kernel_rejects_host_arrays(tmp_path):
    k = make_kernel("axpb", [tensor("x", ("n",)), tensor("y", ("n",))], [1], "cuda:sm_90a",
                    cubin=FAKE_CUBIN, entry="axpb", block=[128],
                    grid=[op("ceildiv", sym("n"), const(128))], shared_bytes=0)
    import torch

    with pytest.raises(ValueError, match="argument 'x' of kernel 'axpb' is a NumPy array, but "
                                         "the kernel runs on the GPU"):
        k(np.zeros(4, np.float32))
    if torch.cuda.is_available():
        with pytest.raises(ValueError, match="argument 'x' of kernel 'axpb' is on cpu, but the "
                                             r"kernel runs on the GPU; move it with .cuda\(\)"):
            k(torch.zeros(4))
    else:
        # Without a GPU the missing device is the error to report.
        from tilelang_mlir.runtime.cuda import NoCUDADevice

        with pytest.raises(NoCUDADevice, match="kernel 'axpb' runs on a CUDA GPU, but this "
                                               "machine has none"):
            k(torch.zeros(4))


def test_import_needs_neither_cuda_python_nor_mlir(tmp_path):
    kernel = _scalar_grid_kernel(tmp_path)
    assert kernel.device == "cuda"
    code = textwrap.dedent(f"""
        import importlib.abc, sys

        BLOCKED = ("cuda", "tilelang_mlir.ir", "tilelang_mlir._mlir_libs",
                   "tilelang_mlir.dialects", "tilelang_mlir.passmanager")

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                    raise ImportError("blocked for the test: " + name)
                return None

        sys.meta_path.insert(0, Block())
        import tilelang_mlir as tl
        from tilelang_mlir.runtime import artifact, cuda, profiler

        k = tl.load({str(tmp_path / "count")!r})
        assert k(0) is None  # an empty grid needs no driver
        try:
            k(3)
        except ImportError as e:
            assert "pip install cuda-bindings" in str(e), e
            print("OK")
        else:
            raise AssertionError("expected an ImportError")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "OK"


# ---------------------------------------------------------------------------
# Artifacts
# ---------------------------------------------------------------------------


def _fake_kernel(**overrides):
    spec = dict(name="gemm", params=[tensor("A", ("M", 64), "float16"),
                                     tensor("B", (64, "N"), "float16"),
                                     tensor("C", ("M", "N"), "float16"), scalar("alpha", "float32")],
                out_idx=[2], target="cuda:sm_90a", cubin=FAKE_CUBIN, entry="gemm_kernel",
                block=[128, 1, 1], grid=[op("ceildiv", sym("N"), const(128)),
                                         op("ceildiv", sym("M"), const(128))],
                shared_bytes=96 * 1024, ptx=".version 8.0\n// gemm\n")
    spec.update(overrides)
    name, params, out_idx, target = (spec.pop(k) for k in ("name", "params", "out_idx", "target"))
    return make_kernel(name, params, out_idx, target, **spec)


def test_artifact_round_trip(tmp_path):
    k = _fake_kernel()
    k.save(tmp_path / "gemm")
    files = sorted(os.listdir(tmp_path / "gemm"))
    assert files == ["gemm.cubin", "gemm.ptx", "manifest.json"]
    with open(tmp_path / "gemm" / "manifest.json") as f:
        m = json.load(f)
    assert m["format_version"] == artifact.FORMAT_VERSION
    assert m["name"] == "gemm" and m["entry"] == "gemm_kernel" and m["target"] == "cuda:sm_90a"
    assert m["params"][0] == {"name": "A", "kind": "tensor", "dtype": "float16", "shape": ["M", 64]}
    assert m["params"][3] == {"name": "alpha", "kind": "scalar", "dtype": "float32", "shape": []}
    assert m["out_idx"] == [2] and m["block"] == [128, 1, 1] and m["shared_bytes"] == 98304
    assert m["cubin"] == "gemm.cubin" and m["ptx"] == "gemm.ptx"

    for where in (tmp_path / "gemm", str(tmp_path / "gemm" / "manifest.json")):
        loaded = tl.load(where)
        assert isinstance(loaded, Kernel) and loaded.device == "cuda"
        assert loaded.name == "gemm" and loaded.entry == "gemm_kernel"
        assert loaded.params == k.params and loaded.out_idx == [2]
        assert loaded.target == Target("cuda", "sm_90a")
        assert loaded.block == (128, 1, 1) and loaded.grid == k.grid
        assert loaded.shared_bytes == 98304 and loaded.cubin == FAKE_CUBIN
        assert loaded.ptx == k.ptx and loaded.get_source() == k.ptx
        assert "gemm(A: float16['M', 64]" in repr(loaded)
        with pytest.raises(KeyError, match="keeps no IR"):
            loaded.mlir("tile")
    # Saving again over the same folder replaces it.
    _fake_kernel(shared_bytes=0).save(tmp_path / "gemm")
    assert tl.load(tmp_path / "gemm").shared_bytes == 0


def test_artifact_without_ptx(tmp_path):
    _fake_kernel(ptx=None).save(tmp_path / "k")
    assert sorted(os.listdir(tmp_path / "k")) == ["gemm.cubin", "manifest.json"]
    loaded = tl.load(tmp_path / "k")
    assert loaded.ptx is None and loaded.get_source() == ""


def test_only_cuda_kernels_can_be_saved(tmp_path):
    cpu_kernel = Kernel("main", [], [], Target("cpu"), {"tile": ""}, "", None, "cpu")
    assert cpu_kernel.cubin is None and cpu_kernel.grid is None
    with pytest.raises(NotImplementedError, match="only CUDA kernels can be saved as "
                                                  "artifacts; kernel 'main' targets cpu"):
        cpu_kernel.save(tmp_path / "main")
    assert not os.path.exists(tmp_path / "main")


def _edit_manifest(folder, edit):
    path = os.path.join(folder, "manifest.json")
    with open(path) as f:
        m = json.load(f)
    edit(m)
    with open(path, "w") as f:
        json.dump(m, f)
    return path


@pytest.mark.parametrize("edit, message", [
    (lambda m: m.pop("entry"), "missing field\\(s\\) entry"),
    (lambda m: [m.pop("grid"), m.pop("block")], "missing field\\(s\\) block, grid"),
    (lambda m: m.update(format_version=99), "unknown format version 99"),
    (lambda m: m.update(format="something.else"), "not a tilelang_mlir kernel manifest"),
    (lambda m: m.update(target="cpu"), "target 'cpu' is not a CUDA target"),
    (lambda m: m.update(target="cuda:sm_70"), "sm_80 or newer is needed"),
    (lambda m: m.update(name=""), "'name' must be a non-empty string"),
    (lambda m: m.update(grid=[{"sym": "K"}]), "symbolic size 'K', which no tensor parameter has"),
    (lambda m: m.update(grid=[{"op": "pow", "args": [{"const": 1}, {"const": 2}]}]), "unknown op 'pow'"),
    (lambda m: m.update(grid=[]), "list of 1 to 3 extents"),
    (lambda m: m.update(out_idx=[3]), "'out_idx' must list distinct indices of tensor parameters"),
    (lambda m: m.update(out_idx=[2, 2]), "'out_idx' must list distinct indices"),
    (lambda m: m.update(block=[128, 0]), "'block' must be 1 to 3 positive ints"),
    (lambda m: m.update(shared_bytes=-4), "'shared_bytes' must be a non-negative int"),
    (lambda m: m.update(params=[{"name": "A"}]), "parameter 0 .* is malformed"),
    (lambda m: m["params"][0].update(dtype="float128"), "parameter 0 .* is malformed: unknown dtype"),
    (lambda m: m["params"][0].update(kind="buffer"), "kind must be 'tensor' or 'scalar'"),
    (lambda m: m.update(cubin="../gemm.cubin"), "'cubin' must be a file name in the artifact's folder"),
    (lambda m: m.update(cubin="other.cubin"), "'cubin' names 'other.cubin', which is missing"),
    (lambda m: m.update(ptx="gone.ptx"), "'ptx' names 'gone.ptx', which is missing"),
    (lambda m: m.update(cubin_sha256="0" * 64), "does not match the manifest's cubin_sha256"),
])
def test_manifest_validation(tmp_path, edit, message):
    folder = str(tmp_path / "gemm")
    _fake_kernel().save(folder)
    path = _edit_manifest(folder, edit)
    with pytest.raises(ValueError, match=message) as info:
        tl.load(folder)
    assert str(info.value).startswith(path)


def test_manifest_that_is_not_json_or_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="no kernel artifact at .*not a folder"):
        tl.load(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="manifest.json is missing"):
        tl.load(tmp_path / "empty")
    _fake_kernel().save(tmp_path / "gemm")
    with open(tmp_path / "gemm" / "manifest.json", "w") as f:
        f.write("{not json")
    with pytest.raises(ValueError, match="manifest.json is not valid JSON"):
        tl.load(tmp_path / "gemm")


def test_manifest_with_unsupported_scalar_type(tmp_path):
    folder = str(tmp_path / "gemm")
    _fake_kernel().save(folder)
    path = _edit_manifest(folder, lambda m: m["params"][3].update(dtype="bfloat16"))
    with pytest.raises(TypeError, match="scalar parameter 'alpha' has type bfloat16") as info:
        tl.load(folder)
    assert str(info.value).startswith(path)


# ---------------------------------------------------------------------------
# The profiler on the CPU
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cpu_add():
    import kernels

    return tl.compile(kernels.elementwise_add(32, 48, 16, 16), out_idx=[2], target="cpu")


def test_cpu_do_bench(cpu_add, rng):
    profiler = cpu_add.get_profiler()
    a = rng.standard_normal((32, 48)).astype(np.float32)
    assert profiler.do_bench(a, a, warmup=1, rep=5) > 0
    times = profiler.do_bench(a, a, warmup=0, rep=4, return_mode="all")
    assert len(times) == 4 and all(t > 0 for t in times)
    assert profiler.do_bench(rep=3, return_mode="min") > 0  # random inputs
    assert profiler.do_bench(rep=3, return_mode="mean") > 0
    calls = []
    assert profiler.do_bench(lambda: calls.append(1), warmup=2, rep=3) >= 0
    assert len(calls) == 1 + 2 + 3
    with pytest.raises(ValueError, match="return_mode must be one of median, mean, min, all"):
        profiler.do_bench(a, a, return_mode="max")
    with pytest.raises(ValueError, match="rep must be a positive int"):
        profiler.do_bench(a, a, rep=0)
    with pytest.raises(TypeError, match=r"takes 2 argument\(s\)"):
        profiler.do_bench(a)


def test_cpu_assert_allclose(cpu_add, rng):
    profiler = cpu_add.get_profiler()
    profiler.assert_allclose(lambda a, b: a + b)  # random torch inputs
    a = rng.standard_normal((32, 48)).astype(np.float32)
    b = rng.standard_normal((32, 48)).astype(np.float32)
    profiler.assert_allclose(lambda x, y: x + y, a, b, rtol=0, atol=0)
    with pytest.raises(AssertionError, match=r"output 'C' differs from the reference in 1536 of "
                                             r"1536 elements .*max abs error 1 at index"):
        profiler.assert_allclose(lambda x, y: x + y + 1, a, b, atol=1e-3, rtol=0)
    with pytest.raises(AssertionError, match=r"output 'C' has shape \(32, 48\), the reference "
                                             r"\(48, 32\)"):
        profiler.assert_allclose(lambda x, y: (x + y).T, a, b)
    with pytest.raises(AssertionError, match=r"has 1 output\(s\) \(C\), the reference returned 2"):
        profiler.assert_allclose(lambda x, y: (x, y), a, b)


def test_random_inputs_need_static_shapes():
    import torch

    k = Kernel("k", [tensor("X", ("n",)), tensor("I", (3, 2), "int8"), tensor("Y", (4,))],
               [2], Target("cpu"), {}, "", None, "cpu")
    with pytest.raises(ValueError, match="argument 'X' of kernel 'k': its size 'n' is "
                                         "symbolic; pass the inputs explicitly"):
        k.get_profiler().random_inputs()
    k = Kernel("k", [tensor("I", (3, 2), "int8"), tensor("F", (5,), "bfloat16"),
                     tensor("B", (2,), "bool"), tensor("Y", (4,))],
               [3], Target("cpu"), {}, "", None, "cpu")
    i, f, b = k.get_profiler().random_inputs()
    assert i.dtype == torch.int8 and i.shape == (3, 2) and f.dtype == torch.bfloat16
    assert b.dtype == torch.bool
    k = Kernel("k", [scalar("n", "int32")], [], Target("cpu"), {}, "", None, "cpu")
    with pytest.raises(ValueError, match="scalar argument 'n'"):
        k.get_profiler().random_inputs()


# ---------------------------------------------------------------------------
# Hand-written PTX kernels
# ---------------------------------------------------------------------------

AXPB_PTX = r"""
.version 8.0
.target sm_90a
.address_size 64

// y[i] = a * x[i] + b over 1-D float32 tensors; NaN where the descriptors
// break the ABI (allocated != aligned, a non-zero offset, unequal sizes).
.visible .entry axpb(
    .param .u64 x_allocated, .param .u64 x_aligned, .param .u64 x_offset,
    .param .u64 x_size0, .param .u64 x_stride0,
    .param .u64 y_allocated, .param .u64 y_aligned, .param .u64 y_offset,
    .param .u64 y_size0, .param .u64 y_stride0,
    .param .f32 a, .param .f32 b)
{
    .reg .pred %p<6>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<20>;
    .reg .f32 %f<6>;

    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mul.wide.u32 %rd1, %r1, %r2;
    cvt.u64.u32 %rd2, %r3;
    add.s64 %rd1, %rd1, %rd2;
    ld.param.u64 %rd3, [x_size0];
    setp.ge.s64 %p1, %rd1, %rd3;
    @%p1 bra DONE;

    ld.param.u64 %rd4, [x_allocated];
    ld.param.u64 %rd5, [x_aligned];
    ld.param.u64 %rd6, [x_offset];
    ld.param.u64 %rd7, [x_stride0];
    ld.param.u64 %rd8, [y_allocated];
    ld.param.u64 %rd9, [y_aligned];
    ld.param.u64 %rd10, [y_offset];
    ld.param.u64 %rd11, [y_stride0];
    ld.param.u64 %rd12, [y_size0];
    ld.param.f32 %f1, [a];
    ld.param.f32 %f2, [b];

    mad.lo.s64 %rd13, %rd1, %rd7, %rd6;
    shl.b64 %rd13, %rd13, 2;
    cvta.to.global.u64 %rd14, %rd5;
    add.s64 %rd14, %rd14, %rd13;
    ld.global.f32 %f3, [%rd14];
    fma.rn.f32 %f4, %f1, %f3, %f2;

    setp.ne.u64 %p2, %rd4, %rd5;
    setp.ne.u64 %p3, %rd8, %rd9;
    or.pred %p2, %p2, %p3;
    setp.ne.u64 %p4, %rd10, 0;
    or.pred %p2, %p2, %p4;
    setp.ne.u64 %p5, %rd12, %rd3;
    or.pred %p2, %p2, %p5;
    selp.f32 %f5, 0f7FC00000, %f4, %p2;

    mad.lo.s64 %rd15, %rd1, %rd11, %rd10;
    shl.b64 %rd15, %rd15, 2;
    cvta.to.global.u64 %rd16, %rd9;
    add.s64 %rd16, %rd16, %rd15;
    st.global.f32 [%rd16], %f5;
DONE:
    ret;
}
"""

TRANSPOSE_PTX = r"""
.version 8.0
.target sm_90a
.address_size 64

// B[j, i] = A[i, j] with A (M, N) and B (N, M), addressed through the
// descriptors' offsets and strides; one thread per element of A.
.visible .entry transpose(
    .param .u64 a_allocated, .param .u64 a_aligned, .param .u64 a_offset,
    .param .u64 a_size0, .param .u64 a_size1, .param .u64 a_stride0, .param .u64 a_stride1,
    .param .u64 b_allocated, .param .u64 b_aligned, .param .u64 b_offset,
    .param .u64 b_size0, .param .u64 b_size1, .param .u64 b_stride0, .param .u64 b_stride1)
{
    .reg .pred %p<4>;
    .reg .b32 %r<7>;
    .reg .b64 %rd<20>;
    .reg .f32 %f<2>;

    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mul.wide.u32 %rd1, %r1, %r2;
    cvt.u64.u32 %rd2, %r3;
    add.s64 %rd1, %rd1, %rd2;          // j
    mov.u32 %r4, %ctaid.y;
    mov.u32 %r5, %ntid.y;
    mov.u32 %r6, %tid.y;
    mul.wide.u32 %rd3, %r4, %r5;
    cvt.u64.u32 %rd4, %r6;
    add.s64 %rd3, %rd3, %rd4;          // i

    ld.param.u64 %rd5, [a_size0];
    ld.param.u64 %rd6, [a_size1];
    setp.ge.s64 %p1, %rd3, %rd5;
    setp.ge.s64 %p2, %rd1, %rd6;
    or.pred %p1, %p1, %p2;
    @%p1 bra DONE;

    ld.param.u64 %rd7, [a_aligned];
    ld.param.u64 %rd8, [a_offset];
    ld.param.u64 %rd9, [a_stride0];
    ld.param.u64 %rd10, [a_stride1];
    mad.lo.s64 %rd11, %rd3, %rd9, %rd8;
    mad.lo.s64 %rd11, %rd1, %rd10, %rd11;
    shl.b64 %rd11, %rd11, 2;
    cvta.to.global.u64 %rd12, %rd7;
    add.s64 %rd12, %rd12, %rd11;
    ld.global.f32 %f1, [%rd12];

    ld.param.u64 %rd13, [b_aligned];
    ld.param.u64 %rd14, [b_offset];
    ld.param.u64 %rd15, [b_stride0];
    ld.param.u64 %rd16, [b_stride1];
    mad.lo.s64 %rd17, %rd1, %rd15, %rd14;
    mad.lo.s64 %rd17, %rd3, %rd16, %rd17;
    shl.b64 %rd17, %rd17, 2;
    cvta.to.global.u64 %rd18, %rd13;
    add.s64 %rd18, %rd18, %rd17;
    st.global.f32 [%rd18], %f1;
DONE:
    ret;
}
"""

SCALARS_PTX = r"""
.version 8.0
.target sm_90a
.address_size 64

// out[0..7] = every scalar argument, converted to float64.
.visible .entry scalars(
    .param .u64 out_allocated, .param .u64 out_aligned, .param .u64 out_offset,
    .param .u64 out_size0, .param .u64 out_stride0,
    .param .s8 p_i8, .param .s16 p_i16, .param .s32 p_i32, .param .s64 p_i64,
    .param .u8 p_u8, .param .u8 p_bool, .param .f32 p_f32, .param .f64 p_f64)
{
    .reg .b16 %h<4>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .reg .f32 %f<2>;
    .reg .f64 %d<10>;

    ld.param.u64 %rd1, [out_aligned];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.s8 %h1, [p_i8];
    cvt.rn.f64.s16 %d1, %h1;
    st.global.f64 [%rd1], %d1;
    ld.param.s16 %h2, [p_i16];
    cvt.rn.f64.s16 %d2, %h2;
    st.global.f64 [%rd1+8], %d2;
    ld.param.s32 %r1, [p_i32];
    cvt.rn.f64.s32 %d3, %r1;
    st.global.f64 [%rd1+16], %d3;
    ld.param.s64 %rd2, [p_i64];
    cvt.rn.f64.s64 %d4, %rd2;
    st.global.f64 [%rd1+24], %d4;
    ld.param.u8 %h3, [p_u8];
    cvt.rn.f64.u16 %d5, %h3;
    st.global.f64 [%rd1+32], %d5;
    ld.param.u8 %r2, [p_bool];
    cvt.rn.f64.u32 %d6, %r2;
    st.global.f64 [%rd1+40], %d6;
    ld.param.f32 %f1, [p_f32];
    cvt.f64.f32 %d7, %f1;
    st.global.f64 [%rd1+48], %d7;
    ld.param.f64 %d8, [p_f64];
    st.global.f64 [%rd1+56], %d8;
    ret;
}
"""

SMEM_PTX = r"""
.version 8.0
.target sm_90a
.address_size 64

.extern .shared .align 16 .b8 smem[];

// out[t] = 255 - t, exchanged through dynamic shared memory at byte 64512,
// beyond the default 48 KiB limit.
.visible .entry smem_reverse(
    .param .u64 out_allocated, .param .u64 out_aligned, .param .u64 out_offset,
    .param .u64 out_size0, .param .u64 out_stride0)
{
    .reg .b32 %r<10>;
    .reg .b64 %rd<4>;

    mov.u32 %r1, %tid.x;
    mov.u32 %r2, smem;
    shl.b32 %r3, %r1, 2;
    add.s32 %r4, %r2, %r3;
    st.shared.u32 [%r4+64512], %r1;
    bar.sync 0;
    mov.u32 %r5, 255;
    sub.s32 %r6, %r5, %r1;
    shl.b32 %r7, %r6, 2;
    add.s32 %r8, %r2, %r7;
    ld.shared.u32 %r9, [%r8+64512];
    ld.param.u64 %rd1, [out_aligned];
    cvta.to.global.u64 %rd1, %rd1;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r9;
    ret;
}
"""

TRAP_PTX = r"""
.version 8.0
.target sm_90a
.address_size 64

.visible .entry boom()
{
    trap;
    ret;
}
"""

SMEM_BYTES = 64 * 1024


def _ptxas() -> str:
    path = shutil.which("ptxas") or next(
        (p for p in ("/usr/local/cuda/bin/ptxas", "/usr/local/bin/ptxas") if os.path.exists(p)),
        None)
    if path is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH: cannot assemble the test kernels")
    return path


def assemble(ptx: str, folder) -> bytes:
    """The cubin of `ptx` for sm_90a, assembled with ptxas."""
    folder = str(folder)
    os.makedirs(folder, exist_ok=True)
    src, out = os.path.join(folder, "kernel.ptx"), os.path.join(folder, "kernel.cubin")
    with open(src, "w") as f:
        f.write(ptx)
    result = subprocess.run([_ptxas(), "-arch=sm_90a", src, "-o", out], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, f"ptxas failed:\n{result.stderr}"
    with open(out, "rb") as f:
        return f.read()


def ptx_kernel(tmp_path, ptx, entry, params, out_idx, block, grid, shared_bytes=0, sync=None):
    """Assembles `ptx` and returns it as a Kernel that went through
    Kernel.save and tl.load."""
    cubin = assemble(ptx, tmp_path / f"{entry}-build")
    k = make_kernel(entry, params, out_idx, "cuda:sm_90a", cubin=cubin, entry=entry,
                    block=block, grid=grid, shared_bytes=shared_bytes, ptx=ptx)
    k.save(tmp_path / entry)
    return tl.load(tmp_path / entry, sync=sync)


def axpb_kernel(tmp_path, **kw):
    return ptx_kernel(tmp_path, AXPB_PTX, "axpb",
                      [tensor("x", ("n",)), tensor("y", ("n",)), scalar("a", "float32"),
                       scalar("b", "float32")], [1], [128],
                      [op("ceildiv", sym("n"), const(128))], **kw)


def transpose_kernel(tmp_path, M="M", N="N"):
    block = 16
    if isinstance(M, int):
        grid = [const(-(-N // block)), const(-(-M // block))]
    else:
        grid = [op("ceildiv", sym(N), const(block)), op("ceildiv", sym(M), const(block))]
    return ptx_kernel(tmp_path, TRANSPOSE_PTX, "transpose",
                      [tensor("A", (M, N)), tensor("B", (N, M))], [1], [block, block, 1], grid)


def scalars_kernel(tmp_path):
    return ptx_kernel(tmp_path, SCALARS_PTX, "scalars",
                      [tensor("out", (8,), "float64"), scalar("i8", "int8"),
                       scalar("i16", "int16"), scalar("i32", "int32"), scalar("i64", "int64"),
                       scalar("u8", "uint8"), scalar("flag", "bool"), scalar("f", "float32"),
                       scalar("d", "float64")], [0], [1], [const(1)])


def smem_kernel(tmp_path, shared_bytes=SMEM_BYTES):
    return ptx_kernel(tmp_path, SMEM_PTX, "smem_reverse", [tensor("out", (256,), "int32")], [0],
                      [256], [const(1)], shared_bytes=shared_bytes)


def test_test_kernels_assemble(tmp_path):
    """The PTX of the GPU tests assembles for sm_90a, and the cubins make
    artifacts (runs wherever ptxas is, GPU or not)."""
    for ptx, entry in ((AXPB_PTX, "axpb"), (TRANSPOSE_PTX, "transpose"),
                       (SCALARS_PTX, "scalars"), (SMEM_PTX, "smem_reverse"), (TRAP_PTX, "boom")):
        cubin = assemble(ptx, tmp_path / entry)
        assert cubin[:4] == b"\x7fELF" and entry.encode() in cubin
    k = transpose_kernel(tmp_path)
    assert k.entry == "transpose" and k.cubin[:4] == b"\x7fELF"
    assert k.get_source() == TRANSPOSE_PTX


def _require_sm90():
    import torch

    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip(f"the PTX test kernels are built for sm_90a; this GPU is "
                    f"{torch.cuda.get_device_name()}")


@pytest.fixture
def gpu(tmp_path):
    pytest.importorskip("cuda.bindings.driver")
    _ptxas()
    _require_sm90()
    import torch

    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    return torch


@pytest.mark.gpu
def test_axpb_1d(gpu, tmp_path):
    torch = gpu
    k = axpb_kernel(tmp_path)
    for n in (1, 127, 128, 1000, 4097):
        x = torch.randn(n, device="cuda")
        a, b = float(torch.randn(())), float(torch.randn(()))
        y = k(x, a, b)
        torch.testing.assert_close(y, a * x + b, rtol=1e-6, atol=1e-6)
    # A zero-size tensor gives an empty grid: nothing is launched.
    assert k(torch.empty(0, device="cuda"), 1.0, 2.0).shape == (0,)
    assert len(k._executable._functions) == 1  # the module is loaded once


@pytest.mark.gpu
def test_transpose_2d_with_a_symbolic_grid(gpu, tmp_path):
    torch = gpu
    k = transpose_kernel(tmp_path)
    assert k.grid[0] == op("ceildiv", sym("N"), const(16))
    for M, N in ((1, 1), (16, 16), (100, 70), (33, 257)):
        A = torch.randn(M, N, device="cuda")
        B = k(A)
        assert B.shape == (N, M)
        torch.testing.assert_close(B, A.T.contiguous(), rtol=0, atol=0)


@pytest.mark.gpu
def test_every_scalar_type(gpu, tmp_path):
    k = scalars_kernel(tmp_path)
    values = [-100, -30000, -2_000_000_000, -(2 ** 40) + 3, 200, True, 1.5, math.pi]
    out = k(*values)
    assert out.cpu().tolist() == [float(v) for v in values]


@pytest.mark.gpu
def test_dynamic_shared_memory_above_48k(gpu, tmp_path):
    torch = gpu
    k = smem_kernel(tmp_path)
    expected = torch.arange(255, -1, -1, dtype=torch.int32, device="cuda")
    for _ in range(2):
        torch.testing.assert_close(k(), expected)
    too_big = smem_kernel(tmp_path / "big", shared_bytes=1 << 20)
    with pytest.raises(RuntimeError, match="cuFuncSetAttribute failed with CUDA_ERROR_.*"
                                           "asks for 1048576 bytes of dynamic shared memory"):
        too_big()


@pytest.mark.gpu
def test_launch_on_the_current_stream(gpu, tmp_path):
    torch = gpu
    k = axpb_kernel(tmp_path)
    x = torch.randn(1 << 20, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        y = k(x, 2.0, 1.0)
    stream.synchronize()
    torch.testing.assert_close(y, 2 * x + 1)


@pytest.mark.gpu
def test_launch_from_a_thread_without_a_context(gpu, tmp_path):
    torch = gpu
    k = axpb_kernel(tmp_path)
    x = torch.randn(300, device="cuda")
    result = {}

    def run():
        from cuda.bindings import driver

        try:
            # A new thread starts without a current context; make sure of it.
            cuda.check_result(driver.cuCtxSetCurrent(driver.CUcontext(0)), "cuCtxSetCurrent")
            result["y"] = k(x, 3.0, -1.0)
            torch.cuda.synchronize()
        except BaseException as e:  # noqa: BLE001 (reported below)
            result["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert "error" not in result, result.get("error")
    torch.testing.assert_close(result["y"], 3 * x - 1)


@pytest.mark.gpu
def test_tensors_on_another_device_are_rejected(gpu, tmp_path):
    torch = gpu
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    k = axpb_kernel(tmp_path)
    x = torch.randn(8, device="cuda:1")
    with pytest.raises(ValueError, match="argument 'x' of kernel 'axpb' is on cuda:1, but the "
                                         "current CUDA device is cuda:0"):
        k(x, 1.0, 0.0)
    with torch.cuda.device(1):
        torch.testing.assert_close(k(x, 2.0, 0.0), 2 * x)


@pytest.mark.gpu
def test_sync_reports_kernel_errors(gpu, tmp_path):
    cubin = assemble(TRAP_PTX, tmp_path / "boom-build")
    make_kernel("boom", [], [], "cuda:sm_90a", cubin=cubin, entry="boom", block=[1],
                grid=[const(1)], shared_bytes=0, ptx=TRAP_PTX).save(tmp_path / "boom")
    # A trapped kernel breaks its context: run it in a process of its own.
    code = textwrap.dedent(f"""
        import tilelang_mlir as tl
        k = tl.load({str(tmp_path / "boom")!r})
        try:
            k()
        except RuntimeError as e:
            print(e)
        else:
            print("no error")
    """)
    env = dict(os.environ, TILELANG_MLIR_SYNC="1")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=120)
    assert "cuStreamSynchronize failed with CUDA_ERROR_" in result.stdout, (
        result.stdout + result.stderr)
    assert "kernel 'boom' failed" in result.stdout


@pytest.mark.gpu
def test_do_bench(gpu, tmp_path):
    torch = gpu
    k = axpb_kernel(tmp_path)
    profiler = k.get_profiler()
    x = torch.randn(1 << 22, device="cuda")
    median = profiler.do_bench(x, 2.0, 1.0)
    assert isinstance(median, float) and median > 0
    times = profiler.do_bench(x, 2.0, 1.0, warmup=2, rep=10, flush_l2=False, return_mode="all")
    assert len(times) == 10 and min(times) > 0
    assert profiler.do_bench(lambda: k(x, 2.0, 1.0), rep=5, return_mode="mean") > 0
    assert k.time(x, 2.0, 1.0, repeat=3) > 0


@pytest.mark.gpu
def test_assert_allclose(gpu, tmp_path):
    torch = gpu
    k = transpose_kernel(tmp_path, 100, 70)
    profiler = k.get_profiler()
    profiler.assert_allclose(lambda A: A.T, rtol=0, atol=0)  # random inputs
    with pytest.raises(AssertionError, match=r"output 'B' differs from the reference .*max abs "
                                             r"error 0\.5"):
        profiler.assert_allclose(lambda A: A.T + 0.5)
    axpb = axpb_kernel(tmp_path / "axpb")
    x = torch.randn(1000, device="cuda")
    axpb.get_profiler().assert_allclose(lambda x, a, b: a * x + b, x, 2.0, 0.5)
