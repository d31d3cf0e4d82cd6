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
import subprocess
import sys
import textwrap
import threading
import types
from collections import OrderedDict

import numpy as np
import pytest

import tilelang_mlir as tl
from tilelang_mlir.base import dtypes as dt
from tilelang_mlir.base.artifact import CompiledArtifact
from tilelang_mlir.base.signature import Param
from tilelang_mlir.base.target import Target
from tilelang_mlir.compiler.cuda import find_ptxas
from tilelang_mlir.runtime import artifact, cuda
from tilelang_mlir.runtime.args import BoundTensor
from tilelang_mlir.runtime.cuda import CUDAExecutable, evaluate_grid
from tilelang_mlir.runtime.loader import make_kernel
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


def test_grid_multiprocessor_count():
    # {'sms': k}: the device's multiprocessors rounded down to a multiple of
    # k, at least k (a persistent kernel's grid, clusters of k blocks).
    persistent = [op("min", const(512), {"sms": 2})]
    assert evaluate_grid(persistent, {}, {}, sms=132) == (132, 1, 1)
    assert evaluate_grid(persistent, {}, {}, sms=115) == (114, 1, 1)
    assert evaluate_grid(persistent, {}, {}, sms=1) == (2, 1, 1)
    assert evaluate_grid([op("min", const(100), {"sms": 1})], {}, {}, sms=132) == (100, 1, 1)
    with pytest.raises(ValueError, match="multiprocessor count, which is not known here"):
        evaluate_grid(persistent, {}, {})
    with pytest.raises(ValueError, match="'sms' must be the only key and a positive integer"):
        evaluate_grid([{"sms": 0}], {}, {}, sms=132)


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
    assert m["format_version"] == 1  # no tensor maps: the version older runtimes read
    assert artifact.FORMAT_VERSION in artifact.READ_VERSIONS
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


def test_only_kernels_with_code_to_save_can_be_saved(tmp_path):
    cpu_kernel = Kernel(CompiledArtifact("main", [], [], Target("cpu"), {"tile": ""}), None)
    assert cpu_kernel.cubin is None and cpu_kernel.grid is None
    with pytest.raises(NotImplementedError, match="kernel 'main' cannot be saved: its "
                                                  "executable makes no shared library"):
        cpu_kernel.save(tmp_path / "main")
    rocm_kernel = Kernel(CompiledArtifact("main", [], [], "rocm:gfx942"), None)
    with pytest.raises(NotImplementedError, match="only CUDA and CPU kernels can be saved "
                                                  "as artifacts; kernel 'main' targets rocm"):
        rocm_kernel.save(tmp_path / "main")
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
    (lambda m: m.update(target="rocm:gfx942"),
     "target 'rocm:gfx942' is neither a CUDA target nor 'cpu'"),
    # A CPU manifest has a shared library instead of the launch data.
    (lambda m: m.update(target="cpu"), r"missing field\(s\) library"),
    (lambda m: m.update(target="cuda:sm_70"), "sm_75 or newer is needed"),
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


def test_manifest_digests(tmp_path):
    """A well-formed edit of a saved manifest (a launch value, the PTX) is
    refused by the digests; manifests of before the digests load."""
    folder = str(tmp_path / "gemm")
    _fake_kernel().save(folder)
    path = _edit_manifest(folder, lambda m: m.update(shared_bytes=1024))
    with pytest.raises(ValueError, match="does not match its manifest_sha256") as info:
        tl.load(folder)
    assert str(info.value).startswith(path)
    _edit_manifest(folder, lambda m: m.pop("manifest_sha256"))
    assert tl.load(folder).shared_bytes == 1024
    _fake_kernel().save(folder)
    with open(os.path.join(folder, "gemm.ptx"), "a") as f:
        f.write("// edited\n")
    with pytest.raises(ValueError, match="gemm.ptx does not match the manifest's ptx_sha256"):
        tl.load(folder)


def test_manifest_with_unsupported_scalar_type(tmp_path):
    folder = str(tmp_path / "gemm")
    _fake_kernel().save(folder)
    path = _edit_manifest(folder, lambda m: m["params"][3].update(dtype="bfloat16"))
    with pytest.raises(TypeError, match="scalar parameter 'alpha' has type bfloat16") as info:
        tl.load(folder)
    assert str(info.value).startswith(path)


# ---------------------------------------------------------------------------
# TMA tensor maps without a GPU
# ---------------------------------------------------------------------------


def tmap(param, box, swizzle=0):
    return {"param": param, "box": list(box), "swizzle": swizzle}


ALIGNED = 0x7F00_0000_1000  # a 16-byte aligned device address


def test_tensormap_encoding_reverses_dims_strides_and_box():
    p = tensor("A", ("M", "K"), "float16")
    enc = cuda.tensormap_encoding("gemm", p, BoundTensor(None, ALIGNED, (100, 72), (72, 1)),
                                  (64, 32), 64)
    assert enc.data_type == "CU_TENSOR_MAP_DATA_TYPE_FLOAT16" and enc.rank == 2
    assert enc.address == ALIGNED
    assert enc.global_dim == (72, 100)  # innermost first
    assert enc.global_strides == (144,)  # bytes, without the innermost dimension
    assert enc.box_dim == (32, 64) and enc.element_strides == (1, 1)
    assert enc.swizzle == "CU_TENSOR_MAP_SWIZZLE_64B"
    assert enc.interleave == "CU_TENSOR_MAP_INTERLEAVE_NONE"
    assert enc.l2_promotion == "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"
    assert enc.oob_fill == "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"
    # Rank 3 float32: strides of dimensions 1 and 0, innermost first.
    p3 = tensor("X", (4, 6, 8), "float32")
    enc = cuda.tensormap_encoding("k", p3, BoundTensor(None, ALIGNED, (4, 6, 8), (48, 8, 1)),
                                  (2, 3, 8), 32)
    assert enc.global_dim == (8, 6, 4) and enc.global_strides == (32, 192)
    assert enc.box_dim == (8, 3, 2) and enc.swizzle == "CU_TENSOR_MAP_SWIZZLE_32B"
    assert enc.data_type == "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"
    # Rank 1: no strides at all.
    enc = cuda.tensormap_encoding("k", tensor("v", ("n",), "bfloat16"),
                                  BoundTensor(None, ALIGNED, (1000,), (1,)), (64,), 128)
    assert enc.global_dim == (1000,) and enc.global_strides == () and enc.box_dim == (64,)
    assert enc.data_type == "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"
    assert enc.swizzle == "CU_TENSOR_MAP_SWIZZLE_128B"


def test_tensormap_encoding_ignores_strides_of_size_one_dimensions():
    # A single row of 7 float16 has a 14-byte row stride, which TMA would
    # refuse; the row is never stepped over, so it does not matter.
    p = tensor("A", ("M", "K"), "float16")
    enc = cuda.tensormap_encoding("k", p, BoundTensor(None, ALIGNED, (1, 7), (7, 1)), (8, 8), 0)
    assert enc.global_dim == (7, 1) and enc.global_strides == (16,)
    # torch calls (4, 1) with strides (1, 5) contiguous: the innermost
    # dimension has one element, but rows are 2 bytes apart.
    with pytest.raises(ValueError, match="dimension 0 has a stride of 1 elements = 2 bytes"):
        cuda.tensormap_encoding("k", p, BoundTensor(None, ALIGNED, (4, 1), (1, 5)), (8, 8), 0)
    enc = cuda.tensormap_encoding("k", tensor("X", (2, 1, 8), "float32"),
                                  BoundTensor(None, ALIGNED, (2, 1, 8), (8, 99, 1)), (1, 1, 8), 0)
    assert enc.global_strides == (32, 32)


@pytest.mark.parametrize("dtype, data_type", [
    ("float16", "FLOAT16"), ("bfloat16", "BFLOAT16"), ("float32", "FLOAT32"),
    ("float64", "FLOAT64"), ("int8", "UINT8"), ("uint8", "UINT8"), ("bool", "UINT8"),
    ("float8_e4m3", "UINT8"), ("float8_e5m2", "UINT8"), ("int16", "UINT16"),
    ("int32", "INT32"), ("int64", "INT64"),
])
def test_tensormap_data_types(dtype, data_type):
    size = cuda.element_bytes(dt.as_dtype(dtype))
    cols = 64 // size  # 64-byte rows
    enc = cuda.tensormap_encoding("k", tensor("A", (8, cols), dtype),
                                  BoundTensor(None, ALIGNED, (8, cols), (cols, 1)), (8, cols), 64)
    assert enc.data_type == "CU_TENSOR_MAP_DATA_TYPE_" + data_type
    assert enc.global_strides == (64,)
    driver = pytest.importorskip("cuda.bindings.driver")
    for name in set(cuda.TENSORMAP_DATA_TYPES.values()):
        getattr(driver.CUtensorMapDataType, name)  # every name is an enumerator
    assert getattr(driver.CUtensorMapSwizzle, enc.swizzle) is not None


def test_encode_tensormap_passes_the_driver_its_types(monkeypatch):
    """cuda-python takes the dimension lists as cuuint64_t/cuuint32_t only
    and the modes as its enums: a spy in place of cuTensorMapEncodeTiled
    sees exactly those, with the encoding's values (innermost first), and a
    failing CUresult becomes a RuntimeError naming the call. Then the real
    call gets past its argument conversion (to the driver, or to a missing
    libcuda here)."""
    drv = pytest.importorskip("cuda.bindings.driver")
    enc = cuda.tensormap_encoding("k", tensor("A", (64, 32), "float16"),
                                  BoundTensor(None, ALIGNED, (64, 32), (32, 1)), (16, 32), 128)
    calls = []

    class Spy:
        def __getattr__(self, name):
            return getattr(drv, name)

        def cuTensorMapEncodeTiled(self, *args):
            calls.append(args)
            return (drv.CUresult.CUDA_ERROR_NOT_INITIALIZED, None)

    monkeypatch.setattr(cuda, "_driver", lambda: Spy())
    with pytest.raises(RuntimeError, match="cuTensorMapEncodeTiled failed with "
                                           "CUDA_ERROR_NOT_INITIALIZED"):
        cuda.encode_tensormap(enc)
    (args,) = calls
    dtype, rank, address, dims, strides, box, elem, interleave, swizzle, l2, oob = args
    assert dtype == drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16
    assert rank == 2 and address == ALIGNED
    assert [type(x) for x in dims + strides] == [drv.cuuint64_t] * 3
    assert [type(x) for x in box + elem] == [drv.cuuint32_t] * 4
    assert [int(x) for x in dims] == [32, 64] and [int(x) for x in strides] == [64]
    assert [int(x) for x in box] == [32, 16] and [int(x) for x in elem] == [1, 1]
    assert interleave == drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE
    assert swizzle == drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
    assert l2 == drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B
    assert oob == drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    monkeypatch.undo()
    try:
        cuda.encode_tensormap(enc)
    except TypeError as e:
        pytest.fail(f"cuTensorMapEncodeTiled refused the arguments: {e}")
    except RuntimeError:
        pass  # no libcuda, no context, or an address the driver refuses


@pytest.mark.parametrize("shape, strides, address, message", [
    ((64, 100), (100, 1), ALIGNED, r"dimension 0 has a stride of 100 elements = 200 bytes; TMA "
     r"needs every stride to be a positive multiple of 16 bytes below 2\^40 \(rows of a "
     r"float16 tensor need a length that is a multiple of 8 elements; this one has 100\)"),
    ((64, 64), (64, 1), ALIGNED + 2, r"its address 0x7f0000001002 is not 16-byte aligned"),
    ((64, 64), (1, 64), ALIGNED, r"its innermost dimension has stride 64; TMA needs it "
     r"contiguous \(stride 1\)"),
    ((64, 64), (2 ** 39, 1), ALIGNED, r"dimension 0 has a stride of 549755813888 elements"),
    ((0, 64), (64, 1), ALIGNED, r"dimension 0 has size 0; TMA needs sizes of 1 to 2\^32"),
    ((2 ** 32 + 1, 8), (8, 1), ALIGNED, r"dimension 0 has size 4294967297"),
    ((64,), (1,), ALIGNED, r"the tensor has rank 1, but the tensor map's box \[64, 64\] has 2"),
])
def test_tensormap_encoding_checks_tma_rules(shape, strides, address, message):
    p = tensor("A", ("M", "K"), "float16")
    with pytest.raises(ValueError, match=r"^argument 'A' of kernel 'gemm' cannot be copied with "
                                         r"TMA: " + message):
        cuda.tensormap_encoding("gemm", p, BoundTensor(None, address, shape, strides), (64, 64), 0)


TMA_PARAMS = [tensor("A", ("M", "K"), "float16"), tensor("B", (64, 64), "float16"),
              scalar("n", "int32"), tensor("V", (256,), "float32")]


@pytest.mark.parametrize("maps, message", [
    ([tmap(4, (64, 64))], r"'param' must be the index of a parameter \(0 to 3\), got 4"),
    ([tmap(-1, (64, 64))], r"'param' must be the index of a parameter"),
    ([tmap(True, (64, 64))], r"'param' must be the index of a parameter"),
    ([tmap(2, (64,))], r"tensor map 0 of argument 'n': 'n' is a scalar"),
    ([tmap(0, (64,))], r"the box \[64\] has 1 extent\(s\), but 'A' has rank 2"),
    ([tmap(0, (64, 0))], r"every box extent must be 1 to 256 elements, got \[64, 0\]"),
    ([tmap(0, (512, 64))], r"every box extent must be 1 to 256 elements, got \[512, 64\]"),
    ([tmap(0, (64, 64), 16)], r"'swizzle' must be one of 0, 32, 64, 128 \(bytes\), got 16"),
    ([tmap(0, (64, 64), 64)], r"innermost extent spans 128 bytes, more than the 64-byte swizzle"),
    ([tmap(3, (64,), 32)], r"argument 'V': the box's innermost extent spans 256 bytes, more "
                           r"than the 32-byte swizzle span"),
    ([tmap(0, (64, 4))], r"innermost extent spans 4 x 2 = 8 bytes; TMA needs a multiple of 16"),
    ([tmap(0, (64, "64"))], r"'box' must be a list of ints"),
    ([{"param": 0, "box": [64, 64]}], r"exactly the keys 'param', 'box' and 'swizzle'"),
    ([{"param": 0, "box": [64, 64], "swizzle": 0, "mode": "tile"}], r"exactly the keys"),
    ("maps", r"tensormaps must be a list"),
])
def test_tensormaps_are_checked(maps, message):
    with pytest.raises(ValueError, match=r"^kernel 'gemm': .*" + message):
        CUDAExecutable(FAKE_CUBIN, "f", [128], 0, [const(1)], TMA_PARAMS, name="gemm",
                       tensormaps=maps)


def test_tensormaps_are_kept_normalized():
    maps = [tmap(1, (64, 64), 128), tmap(0, (128, 32), 64), tmap(3, (8,), 32)]
    exe = CUDAExecutable(FAKE_CUBIN, "f", [128], 0, [const(1)], TMA_PARAMS,
                         tensormaps=[dict(m, box=tuple(m["box"])) for m in maps])
    assert exe.tensormaps == maps
    assert "tensormaps=3" in repr(exe)
    assert CUDAExecutable(FAKE_CUBIN, "f", [1], 0, [const(1)], TMA_PARAMS).tensormaps == []
    k = _fake_kernel(params=TMA_PARAMS, out_idx=[1], grid=[const(1)], tensormaps=maps)
    assert k.tensormaps == maps


def test_pack_arguments_puts_tensor_maps_first():
    params = [tensor("A", (2, 3)), scalar("n", "int32")]
    values = [BoundTensor(None, ALIGNED, (2, 3), (3, 1)), 7]
    maps = [cuda.TensorMap(bytes(range(128))), cuda.TensorMap(bytes(range(128, 256)))]
    for m in maps:
        assert m.address % 64 == 0
    array, keep = cuda.pack_arguments(params, values, maps)
    assert len(array) == 2 + 7 + 1
    assert ctypes.string_at(array[0], 128) == bytes(range(128))
    assert ctypes.string_at(array[1], 128) == bytes(range(128, 256))
    assert [ctypes.c_uint64.from_address(array[i]).value for i in range(2, 9)] == [
        ALIGNED, ALIGNED, 0, 2, 3, 3, 1]
    assert ctypes.c_int32.from_address(array[9]).value == 7
    assert maps[0] in keep[-1]
    with pytest.raises(ValueError, match="a tensor map has 128 bytes, got 3"):
        cuda.TensorMap(b"abc")


def _fake_launch(monkeypatch, exe, maps, words):
    """Replaces the driver under `exe.__call__`: a launch records what its
    kernelParams point at (the bytes of `maps` tensor maps, then `words`
    64-bit words) instead of running."""
    launches = []

    def launch(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        slots = (ctypes.c_void_p * (maps + words)).from_address(params)
        launches.append({"grid": (gx, gy, gz),
                         "maps": [ctypes.string_at(a, 128) for a in slots[:maps]],
                         "words": [ctypes.c_uint64.from_address(a).value for a in slots[maps:]]})
        return 0

    monkeypatch.setattr(cuda, "current_context", lambda what: (1, 0))
    monkeypatch.setattr(cuda, "_current_stream", lambda device: 0)
    monkeypatch.setattr(cuda, "_libcuda_launch", lambda: launch)
    monkeypatch.setattr(exe, "_function", lambda ctx, device: None)
    exe._handles[1] = 0
    return launches


def test_launch_encodes_tensor_maps_once(monkeypatch):
    params = [tensor("A", ("M", "K"), "float16"), tensor("B", ("M", "K"), "float16")]
    exe = CUDAExecutable(FAKE_CUBIN, "copy", [128], 0, [const(2)], params, name="copy",
                         tensormaps=[tmap(1, (64, 64), 128), tmap(0, (32, 64))])
    encoded = []

    def fake_encode(enc, what=""):
        encoded.append(enc)
        return cuda.TensorMap(bytes([len(encoded)]) * 128)

    monkeypatch.setattr(cuda, "encode_tensormap", fake_encode)
    monkeypatch.setattr(cuda, "_TENSORMAP_CACHE", {})
    launches = _fake_launch(monkeypatch, exe, 2, 14)
    a = BoundTensor(None, ALIGNED, (100, 64), (64, 1))
    b = BoundTensor(None, ALIGNED + 0x10000, (100, 64), (64, 1))
    exe(params, [a, b])
    assert [e.address for e in encoded] == [b.data_ptr, a.data_ptr]  # in the list's order
    assert encoded[0].box_dim == (64, 64) and encoded[1].box_dim == (64, 32)
    assert encoded[0].swizzle == "CU_TENSOR_MAP_SWIZZLE_128B"
    assert launches[0]["maps"] == [bytes([1]) * 128, bytes([2]) * 128]  # B's map, then A's
    assert launches[0]["words"] == [a.data_ptr, a.data_ptr, 0, 100, 64, 64, 1,
                                    b.data_ptr, b.data_ptr, 0, 100, 64, 64, 1]
    # The same tensors again: nothing is encoded.
    exe(params, [a, b])
    assert len(encoded) == 2 and len(launches) == 2
    assert launches[1]["maps"] == launches[0]["maps"]
    # Another tensor (a new address, or another shape) gets its own map.
    exe(params, [BoundTensor(None, ALIGNED + 0x20000, (100, 64), (64, 1)), b])
    exe(params, [BoundTensor(None, ALIGNED, (50, 64), (64, 1)), b])
    assert len(encoded) == 4 and encoded[3].global_dim == (64, 50)
    # The cache is bounded.
    for i in range(cuda.TENSORMAP_CACHE_SIZE + 3):
        exe(params, [BoundTensor(None, ALIGNED + 0x100000 * (i + 1), (100, 64), (64, 1)), b])
    assert len(cuda._TENSORMAP_CACHE) <= cuda.TENSORMAP_CACHE_SIZE
    # A tensor TMA cannot copy is refused before the launch.
    with pytest.raises(ValueError, match="argument 'B' of kernel 'copy' cannot be copied with "
                                         "TMA: its address 0x7f0000011008 is not 16-byte"):
        exe(params, [a, BoundTensor(None, ALIGNED + 0x10008, (100, 64), (64, 1))])
    # An empty tensor under a grid that is not empty: TMA cannot describe it.
    with pytest.raises(ValueError, match="argument 'A' of kernel 'copy' cannot be copied with "
                                         "TMA: dimension 0 has size 0"):
        exe(params, [BoundTensor(None, ALIGNED, (0, 64), (64, 1)), b])


def test_launch_without_tensor_maps_encodes_nothing(monkeypatch):
    params = [tensor("A", (4,), "float32")]
    exe = CUDAExecutable(FAKE_CUBIN, "f", [128], 0, [const(1)], params)

    def no_encode(*a):
        raise AssertionError("no tensor map to encode")

    monkeypatch.setattr(cuda, "encode_tensormap", no_encode)
    launches = _fake_launch(monkeypatch, exe, 0, 5)
    exe(params, [BoundTensor(None, ALIGNED, (4,), (1,))])
    assert launches[0]["words"] == [ALIGNED, ALIGNED, 0, 4, 1]


class _ExDriver:
    """What CUDAExecutable._launch_ex uses of cuda.bindings.driver: records
    each cuLaunchKernelEx's configuration and answers `code`."""

    class _Enum:
        def __getattr__(self, name):
            return name

    class _Value:
        def __init__(self):
            self.cooperative = 0
            self.programmaticStreamSerializationAllowed = 0
            self.accessPolicyWindow = types.SimpleNamespace()

    class CUlaunchAttribute:
        def __init__(self):
            self.id = None
            self.value = _ExDriver._Value()

    class CUresult(int):
        @property
        def name(self):
            return f"CUDA_ERROR_{int(self)}"

    CUlaunchAttributeID = CUdevice_attribute = CUaccessProperty = _Enum()
    CUlaunchConfig = types.SimpleNamespace

    def __init__(self, code=0, resident=64):
        self.code, self.resident, self.launches = code, resident, []

    def CUstream(self, s):
        return ("stream", s)

    def cuLaunchKernelEx(self, config, fn, params, extra):
        self.launches.append((config, fn, params, extra))
        return (self.CUresult(self.code),)

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, fn, threads, smem):
        return (self.CUresult(0), self.resident)

    def cuDeviceGetAttribute(self, attr, device):
        return (self.CUresult(0), 1 if attr.endswith("PROCESSOR_COUNT") else 1 << 20)

    def cuGetErrorString(self, err):
        return (self.CUresult(0), b"a fake failure")


@pytest.mark.parametrize("features", [{"cooperative": True}, {"pdl": True},
                                      {"l2_hit_ratio": [(0, 0.5)]}])
def test_launch_with_attributes_goes_through_cuLaunchKernelEx(monkeypatch, features):
    """A kernel launched with attributes (T.sync_grid, T.pdl_sync,
    T.annotate_l2_hit_ratio) takes cuLaunchKernelEx, on a stub driver: its
    result is checked as the plain launch's is (an unset result once broke
    every such launch on the GPU)."""
    params = [tensor("A", (4,), "float32")]
    exe = CUDAExecutable(FAKE_CUBIN, "f", [128], 0, [const(4)], params, name="f",
                         features=features)
    assert exe._extended
    plain = _fake_launch(monkeypatch, exe, 0, 5)
    driver = _ExDriver()
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    exe(params, [BoundTensor(None, ALIGNED, (4,), (1,))])
    assert plain == [] and len(driver.launches) == 1
    config = driver.launches[0][0]
    assert (config.gridDimX, config.gridDimY, config.gridDimZ) == (4, 1, 1)
    assert config.numAttrs == len(config.attrs) == 1
    ids = {"cooperative": "CU_LAUNCH_ATTRIBUTE_COOPERATIVE",
           "pdl": "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION",
           "l2_hit_ratio": "CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW"}
    assert config.attrs[0].id == ids[next(iter(features))]
    # A failed launch raises, naming the call.
    driver.code = 700
    with pytest.raises(RuntimeError, match="cuLaunchKernelEx failed with CUDA_ERROR_700 "
                                           r"\(a fake failure\): kernel 'f' with grid \(4, 1, 1\)"):
        exe(params, [BoundTensor(None, ALIGNED, (4,), (1,))])
    # A cooperative grid larger than the resident blocks is refused first.
    if "cooperative" in features:
        driver.code, driver.resident = 0, 2
        with pytest.raises(ValueError, match="all its blocks must be resident at once"):
            exe(params, [BoundTensor(None, ALIGNED, (4,), (1,))])
        assert len(driver.launches) == 2


def test_artifact_round_trip_with_tensor_maps(tmp_path):
    maps = [tmap(1, (64, 64), 128), tmap(0, (128, 64), 128)]
    k = _fake_kernel(tensormaps=maps)
    k.save(tmp_path / "gemm")
    with open(tmp_path / "gemm" / "manifest.json") as f:
        m = json.load(f)
    assert m["format_version"] == 2 and m["tensormaps"] == maps
    loaded = tl.load(tmp_path / "gemm")
    assert loaded.tensormaps == maps and loaded._executable.tensormaps == maps
    # Without tensor maps the artifact stays version 1 (older runtimes read it).
    _fake_kernel().save(tmp_path / "plain")
    with open(tmp_path / "plain" / "manifest.json") as f:
        m = json.load(f)
    assert m["format_version"] == 1 and m["tensormaps"] == []
    assert tl.load(tmp_path / "plain").tensormaps == []
    # A version-1 manifest of before tensor maps has no such field (nor the
    # digests).
    _edit_manifest(str(tmp_path / "plain"), lambda m: [m.pop("tensormaps"),
                                                       m.pop("manifest_sha256")])
    assert tl.load(tmp_path / "plain").tensormaps == []


@pytest.mark.parametrize("edit, message", [
    (lambda m: m.update(tensormaps={"param": 0}), "tensormaps must be a list"),
    (lambda m: m.update(tensormaps=[{"param": 0, "box": [64, 64]}]),
     "tensor map 0 .* must be an object with exactly the keys"),
    (lambda m: m.update(tensormaps=[tmap(9, (64, 64))]), "'param' must be the index of a "
                                                         r"parameter \(0 to 3\), got 9"),
    (lambda m: m.update(tensormaps=[tmap(3, (64, 64))]), "'alpha' is a scalar"),
    (lambda m: m.update(tensormaps=[tmap(0, (64, 64, 1))]), r"has 3 extent\(s\), but 'A' has "
                                                            "rank 2"),
    (lambda m: m.update(tensormaps=[tmap(0, (64, 300))]), "every box extent must be 1 to 256"),
    (lambda m: m.update(tensormaps=[tmap(0, (64, 64), 256)]), "'swizzle' must be one of"),
    (lambda m: m.update(tensormaps=[tmap(0, (64, 64), 32)]), "more than the 32-byte swizzle"),
])
def test_manifest_tensormaps_validation(tmp_path, edit, message):
    folder = str(tmp_path / "gemm")
    _fake_kernel(tensormaps=[tmap(0, (64, 64), 128)]).save(folder)
    path = _edit_manifest(folder, edit)
    with pytest.raises(ValueError, match=message) as info:
        tl.load(folder)
    assert str(info.value).startswith(path + ": 'tensormaps': kernel 'gemm': ")


LAUNCH_MLIR = """
module attributes {gpu.container_module} {
  func.func @main(%arg0: memref<?x64xf16>, %arg1: memref<64x64xf16>, %arg2: i32) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c0 = arith.constant 0 : index
    %c0_i32 = arith.constant 0 : i32
    %m = memref.dim %arg0, %c0 : memref<?x64xf16>
    %zero = llvm.mlir.zero : !llvm.ptr
    gpu.launch_func @main_kernel::@main_kernel blocks in (%m, %c1, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c0_i32 args(%zero : !llvm.ptr, %zero : !llvm.ptr, %arg0 : memref<?x64xf16>, %arg1 : memref<64x64xf16>, %arg2 : i32) ATTRS
    return
  }
  gpu.module @main_kernel {
    gpu.func @main_kernel(%t0: !llvm.ptr, %t1: !llvm.ptr, %arg0: memref<?x64xf16>, %arg1: memref<64x64xf16>, %arg2: i32) kernel {
      gpu.return
    }
  }
}
"""

LAUNCH_PARAMS = [tensor("A", ("M", 64), "float16"), tensor("B", (64, 64), "float16"),
                 scalar("n", "int32")]


def _launch_of(attrs):
    from tilelang_mlir import ir
    from tilelang_mlir.compiler import cuda as compiler_cuda
    from tilelang_mlir.compiler.context import make_context

    with make_context():
        module = ir.Module.parse(LAUNCH_MLIR.replace("ATTRS", attrs))
        return compiler_cuda.extract_launch(module, LAUNCH_PARAMS)


def test_extract_launch_reads_tensor_maps():
    launch = _launch_of('{tile.tensormaps = [{param = 1 : i64, box = array<i64: 64, 64>, '
                        'swizzle = 128 : i64}, {box = array<i64: 32, 64>, param = 0 : i64, '
                        'swizzle = 0 : i64}]}')
    assert launch["tensormaps"] == [tmap(1, (64, 64), 128), tmap(0, (32, 64), 0)]
    assert launch["grid"] == [sym("M"), const(1), const(1)]
    assert launch["block"] == [128, 1, 1] and launch["shared_bytes"] == 0
    # Without the attribute: no tensor maps.
    assert _launch_of("")["tensormaps"] == []
    # A box written as an array of integers reads the same.
    launch = _launch_of("{tile.tensormaps = [{param = 0 : i64, box = [64 : i64, 64 : i32], "
                        "swizzle = 128 : i32}]}")
    assert launch["tensormaps"] == [tmap(0, (64, 64), 128)]


def test_extract_launch_reads_persistent_kernels():
    launch = _launch_of("{tile.persistent = {blocks = 2 : i64, tiles = 512 : i64}}")
    assert launch["grid"] == [op("min", const(512), {"sms": 2}), const(1), const(1)]
    from tilelang_mlir.frontend.errors import CompilationError

    with pytest.raises(CompilationError, match="tile.persistent must be a dictionary with the "
                                               "keys blocks and tiles"):
        _launch_of("{tile.persistent = 2 : i64}")


def test_persistent_gemm_grid_comes_from_the_device():
    """A GEMM with more tiles than multiprocessors is persistent on sm_90a:
    its grid is the device's multiprocessor count (a multiple of the cluster
    size), capped by the tiles, not the 132 it was compiled with."""
    from tilelang_mlir.kernels import programs as kernels

    n = 2048  # 16 x 16 tiles of 128 x 128, clusters of 2
    k = tl.compile(kernels.matmul(n, n, n, 128, 128, 64, num_stages=3), out_idx=[2],
                   target="cuda:sm_90a")
    assert k.grid[0] == op("min", const(256), {"sms": 2})
    assert "%nctaid.x" in k.ptx  # the tile loop steps by the launched grid


@pytest.mark.parametrize("attrs, message", [
    ("{tile.tensormaps = {param = 0 : i64}}", "tile.tensormaps must be an array of dictionaries"),
    ("{tile.tensormaps = [{param = 0 : i64, box = array<i64: 64, 64>}]}",
     r"tile.tensormaps\[0\] must be a dictionary with exactly the keys param, box and swizzle"),
    ('{tile.tensormaps = [{param = 0 : i64, box = "64x64", swizzle = 0 : i64}]}',
     r"tile.tensormaps\[0\].box must be an array of integers"),
    ("{tile.tensormaps = [{param = 0.0 : f32, box = array<i64: 64, 64>, swizzle = 0 : i64}]}",
     r"tile.tensormaps\[0\].param must be an integer attribute"),
    ("{tile.tensormaps = [{param = 2 : i64, box = array<i64: 64, 64>, swizzle = 0 : i64}]}",
     r"inconsistent with the parameters: kernel 'main_kernel': tensor map 0 of argument 'n': "
     r"'n' is a scalar"),
    ("{tile.tensormaps = [{param = 0 : i64, box = array<i64: 64, 64>, swizzle = 64 : i64}]}",
     r"more than the 64-byte swizzle span"),
])
def test_extract_launch_checks_tensor_maps(attrs, message):
    from tilelang_mlir.frontend.errors import CompilationError

    with pytest.raises(CompilationError, match=message):
        _launch_of(attrs)


def test_tensor_maps_survive_the_disk_cache_and_offline_mode(tmp_path, monkeypatch):
    """The compiler's launch description, tensor maps included, is what a
    kernel loaded from the disk cache (also offline, without the compiler)
    launches with."""
    # (A program that copies with TMA: the kernel's PTX takes the maps, which
    # the executable checks; maps added to a kernel without them are refused.)
    from support.explicit_ops import PROGRAMS
    from tilelang_mlir.compiler import compile as compile_mod

    monkeypatch.setattr(compile_mod, "_MEMORY_CACHE", OrderedDict())
    monkeypatch.setenv("TILELANG_MLIR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TILELANG_MLIR_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TILELANG_MLIR_OFFLINE", raising=False)
    program = PROGRAMS["tma_copy"][0]()
    k1 = tl.compile(program, out_idx=[-1], target="cuda:sm_90a")
    maps = [tmap(0, (64, 64), 128)]
    assert k1.tensormaps == maps and k1._executable.tensormaps == maps
    compile_mod._MEMORY_CACHE.clear()
    monkeypatch.setattr(compile_mod, "_lower", lambda *a: pytest.fail("compiled again"))
    k2 = tl.compile(program, out_idx=[-1], target="cuda:sm_90a")
    assert k2 is not k1 and k2.tensormaps == maps and k2._executable.tensormaps == maps
    compile_mod._MEMORY_CACHE.clear()
    monkeypatch.setenv("TILELANG_MLIR_OFFLINE", "1")
    k3 = tl.compile(program, out_idx=[-1], target="cuda:sm_90a")
    assert k3._executable.tensormaps == maps and k3.cubin == k1.cubin
    k3.save(tmp_path / "artifact")
    assert tl.load(tmp_path / "artifact").tensormaps == maps


# ---------------------------------------------------------------------------
# The profiler on the CPU
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cpu_add():
    from tilelang_mlir.kernels import programs as kernels

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
    with pytest.raises(ValueError, match="return_mode must be one of median, mean, min, max, all"):
        profiler.do_bench(a, a, return_mode="p99")
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

    k = Kernel(CompiledArtifact("k", [tensor("X", ("n",)), tensor("I", (3, 2), "int8"),
                                      tensor("Y", (4,))], [2], Target("cpu")), None)
    with pytest.raises(ValueError, match="argument 'X' of kernel 'k': its size 'n' is "
                                         "symbolic; pass the inputs explicitly"):
        k.get_profiler().random_inputs()
    k = Kernel(CompiledArtifact("k", [tensor("I", (3, 2), "int8"), tensor("F", (5,), "bfloat16"),
                                      tensor("B", (2,), "bool"), tensor("Y", (4,))],
                                [3], Target("cpu")), None)
    i, f, b = k.get_profiler().random_inputs()
    assert i.dtype == torch.int8 and i.shape == (3, 2) and f.dtype == torch.bfloat16
    assert b.dtype == torch.bool
    k = Kernel(CompiledArtifact("k", [scalar("n", "int32")], [], Target("cpu")), None)
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

# Its box's innermost start coordinate (col) must be a multiple of 16 bytes:
# an unaligned one traps with an illegal instruction (seen on the H200).
TMA_LOAD_PTX = r"""
.version 8.0
.target sm_90a
.address_size 64

.shared .align 1024 .b8 tma_tile[8192];
.shared .align 8 .b64 tma_bar;

// out = the 8192 bytes of the tensor map's box at (row, col) of src, as the
// bulk tensor copy leaves them in shared memory (swizzled if the map is).
// Thread 0 initializes an mbarrier (one arrival), arms it with the byte
// count and issues the copy; every thread waits for phase 0 to complete,
// then the 128 threads copy the tile out, 4 bytes at a time.
.visible .entry tma_load(
    .param .align 64 .b8 tmap[128],
    .param .u64 src_allocated, .param .u64 src_aligned, .param .u64 src_offset,
    .param .u64 src_size0, .param .u64 src_size1, .param .u64 src_stride0, .param .u64 src_stride1,
    .param .u64 out_allocated, .param .u64 out_aligned, .param .u64 out_offset,
    .param .u64 out_size0, .param .u64 out_size1, .param .u64 out_stride0, .param .u64 out_stride1,
    .param .s32 row, .param .s32 col)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;

    mov.u32 %r1, %tid.x;
    mov.u32 %r2, tma_tile;
    mov.u32 %r3, tma_bar;
    setp.eq.u32 %p1, %r1, 0;
    @!%p1 bra INITIALIZED;
    mov.u32 %r4, 1;
    mbarrier.init.shared::cta.b64 [%r3], %r4;
    fence.mbarrier_init.release.cluster;
    fence.proxy.async.shared::cta;
INITIALIZED:
    bar.sync 0;
    @!%p1 bra WAIT;
    mov.b64 %rd1, tmap;
    cvta.param.u64 %rd2, %rd1;
    ld.param.s32 %r5, [row];
    ld.param.s32 %r6, [col];
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r3], 8192;
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd2, {%r6, %r5}], [%r3];
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;
    @!%p2 bra WAIT;

    ld.param.u64 %rd4, [out_aligned];
    cvta.to.global.u64 %rd4, %rd4;
    mov.u32 %r7, %r1;
COPY:
    shl.b32 %r8, %r7, 2;
    add.s32 %r9, %r2, %r8;
    ld.shared.u32 %r10, [%r9];
    mul.wide.u32 %rd5, %r7, 4;
    add.s64 %rd6, %rd4, %rd5;
    st.global.u32 [%rd6], %r10;
    add.u32 %r7, %r7, 128;
    setp.lt.u32 %p3, %r7, 2048;
    @%p3 bra COPY;
    ret;
}
"""

SMEM_BYTES = 64 * 1024


def assemble(ptx: str, folder) -> bytes:
    """The cubin of `ptx` for sm_90a, assembled with ptxas."""
    folder = str(folder)
    os.makedirs(folder, exist_ok=True)
    src, out = os.path.join(folder, "kernel.ptx"), os.path.join(folder, "kernel.cubin")
    with open(src, "w") as f:
        f.write(ptx)
    result = subprocess.run([find_ptxas(), "-arch=sm_90a", src, "-o", out], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, f"ptxas failed:\n{result.stderr}"
    with open(out, "rb") as f:
        return f.read()


def ptx_kernel(tmp_path, ptx, entry, params, out_idx, block, grid, shared_bytes=0, sync=None,
               tensormaps=()):
    """Assembles `ptx` and returns it as a Kernel that went through
    Kernel.save and tl.load."""
    cubin = assemble(ptx, tmp_path / f"{entry}-build")
    k = make_kernel(entry, params, out_idx, "cuda:sm_90a", cubin=cubin, entry=entry,
                    block=block, grid=grid, shared_bytes=shared_bytes, ptx=ptx,
                    tensormaps=tensormaps)
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


# The box of each TMA test: 8192 bytes (what the kernel expects), rows of
# `cols * element bytes` no wider than the swizzle; `src_cols` makes rows of
# the source a multiple of 16 bytes that is not a multiple of the box.
TMA_CASES = [
    # dtype, box (rows, cols), swizzle, source columns
    ("float16", (64, 64), 0, 136),
    ("float16", (64, 64), 128, 136),
    ("bfloat16", (128, 32), 64, 72),
    ("float32", (256, 8), 32, 20),
    ("int8", (64, 128), 128, 208),
]


def tma_kernel(tmp_path, dtype, box, swizzle):
    """The TMA_LOAD_PTX kernel with a map of `src` (M x N) of `box` and
    `swizzle`; called as k(src, row, col), it returns the box's bytes as
    they land in shared memory, shaped like the box."""
    return ptx_kernel(tmp_path, TMA_LOAD_PTX, "tma_load",
                      [tensor("src", ("M", "N"), dtype), tensor("out", box, dtype),
                       scalar("row", "int32"), scalar("col", "int32")], [1], [128], [const(1)],
                      tensormaps=[{"param": 0, "box": list(box), "swizzle": swizzle}])


def unswizzle(tile, swizzle):
    """The box in row-major order from its bytes in shared memory under a
    TMA swizzle of `swizzle` bytes (the tile starting at a 1024-byte
    boundary): byte offset o holds what belongs at o ^ (((o >> 7) & (s/16 - 1))
    << 4), i.e. the 16-byte chunk c of a 128-byte line l sits at chunk
    c ^ (l mod s/16); for 128B, chunk c of row r at c ^ (r % 8)."""
    import torch

    if swizzle == 0:
        return tile
    raw = tile.contiguous().view(torch.uint8).reshape(-1)
    o = torch.arange(raw.numel(), device=raw.device)
    src = o ^ (((o >> 7) & (swizzle // 16 - 1)) << 4)
    return raw[src].view(tile.dtype).reshape(tile.shape)


def box_of(src, row, col, rows, cols):
    """src[row:row + rows, col:col + cols], zero where that leaves src
    (negative coordinates too): what TMA loads."""
    import torch

    out = torch.zeros(rows, cols, dtype=src.dtype, device=src.device)
    r0, c0 = max(row, 0), max(col, 0)
    r1, c1 = min(row + rows, src.shape[0]), min(col + cols, src.shape[1])
    if r0 < r1 and c0 < c1:
        out[r0 - row:r1 - row, c0 - col:c1 - col] = src[r0:r1, c0:c1]
    return out


def test_unswizzle_inverts_the_128b_swizzle():
    import torch

    logical = torch.arange(64 * 64, dtype=torch.int16).reshape(64, 64)  # 128-byte rows
    chunks = logical.view(torch.uint8).reshape(64, 8, 16)
    rows = torch.arange(64)[:, None]
    stored = torch.empty_like(chunks)
    stored[rows, torch.arange(8)[None, :] ^ (rows % 8)] = chunks  # chunk c of row r at c ^ (r % 8)
    assert torch.equal(unswizzle(stored.reshape(64, 128).view(torch.int16), 128), logical)


def test_test_kernels_assemble(tmp_path):
    """The PTX of the GPU tests assembles for sm_90a, and the cubins make
    artifacts (runs wherever ptxas is, GPU or not)."""
    for ptx, entry in ((AXPB_PTX, "axpb"), (TRANSPOSE_PTX, "transpose"),
                       (SCALARS_PTX, "scalars"), (SMEM_PTX, "smem_reverse"), (TRAP_PTX, "boom"),
                       (TMA_LOAD_PTX, "tma_load")):
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
    _require_sm90()
    import torch

    from tilelang_mlir.testing import random_seed

    torch.manual_seed(random_seed())
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


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, box, swizzle, cols", TMA_CASES)
def test_tma_load_through_a_tensor_map(gpu, tmp_path, monkeypatch, dtype, box, swizzle, cols):
    """A hand-written TMA kernel loads the tensor map's box, in bounds and
    past the tensor's edges (zero fill), swizzled as the map says."""
    torch = gpu
    k = tma_kernel(tmp_path, dtype, box, swizzle)
    assert k.tensormaps == [{"param": 0, "box": list(box), "swizzle": swizzle}]
    encoded = []
    real = cuda.encode_tensormap
    monkeypatch.setattr(cuda, "encode_tensormap",
                        lambda enc, what="": encoded.append(enc) or real(enc, what))
    monkeypatch.setattr(cuda, "_TENSORMAP_CACHE", {})
    torch_dtype = getattr(torch, dtype)
    M = 300
    if dtype == "int8":
        src = torch.randint(-128, 128, (M, cols), dtype=torch_dtype, device="cuda")
    else:
        src = torch.randn(M, cols, device="cuda").to(torch_dtype)
    rows, width = box
    # The innermost coordinate must be a multiple of 16 bytes (an unaligned
    # one traps with an illegal instruction on the H200); rows may be any.
    a = 16 // cuda.element_bytes(dt.as_dtype(dtype))
    fit, edge = (cols - width) // a * a, (cols - 1) // a * a
    for row, col in ((0, 0), (17, a), (M - rows, fit), (M - 5, edge), (250, 0), (-3, -a),
                     (M + 10, 0), (0, cols + a)):
        tile = unswizzle(k(src, row, col), swizzle)
        expected = box_of(src, row, col, rows, width)
        assert torch.equal(tile.view(torch.uint8), expected.view(torch.uint8)), (row, col)
    # One encoding for every launch on the same tensor; a new tensor gets its own.
    assert len(encoded) == 1 and encoded[0].global_dim == (cols, M)
    other = src[:200].clone() + 1
    torch.testing.assert_close(unswizzle(k(other, 190, 0), swizzle),
                               box_of(other, 190, 0, rows, width), rtol=0, atol=0)
    assert len(encoded) == 2


@pytest.mark.gpu
def test_tma_rules_are_checked_at_launch(gpu, tmp_path):
    torch = gpu
    k = tma_kernel(tmp_path, "float16", (64, 64), 128)
    with pytest.raises(ValueError, match="argument 'src' of kernel 'tma_load' cannot be copied "
                                         "with TMA: dimension 0 has a stride of 100 elements = "
                                         "200 bytes.*multiple of 8 elements"):
        k(torch.zeros(64, 100, dtype=torch.float16, device="cuda"), 0, 0)
    flat = torch.zeros(64 * 64 + 1, dtype=torch.float16, device="cuda")
    with pytest.raises(ValueError, match="its address 0x[0-9a-f]+ is not 16-byte aligned"):
        k(flat[1:].view(64, 64), 0, 0)
    src = torch.randn(64, 64, device="cuda").to(torch.float16)
    torch.testing.assert_close(unswizzle(k(src, 0, 0), 128), src, rtol=0, atol=0)


@pytest.mark.gpu
def test_tma_kernel_in_a_cuda_graph(gpu, tmp_path):
    """The tensor map bytes are copied at capture: a replay loads the box."""
    torch = gpu
    k = tma_kernel(tmp_path, "float16", (64, 64), 0)
    src = torch.randn(128, 64, device="cuda").to(torch.float16)
    out = k(src, 0, 0)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(side):
        with torch.cuda.graph(graph):
            out = k(src, 64, 0)
    torch.cuda.current_stream().wait_stream(side)
    src.copy_(torch.randn(128, 64, device="cuda").to(torch.float16))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, src[64:], rtol=0, atol=0)


# ---------------------------------------------------------------------------
# The kernel's parameter list against the launch's (a TMA kernel made
# without its tensor maps: the driver read 128 bytes from an 8-byte slot and
# the Python process died; the code of another kernel)
# ---------------------------------------------------------------------------

TMA_LOAD_PARAMS = [tensor("src", ("M", "N"), "float16"), tensor("out", (64, 64), "float16"),
                   scalar("row", "int32"), scalar("col", "int32")]
TMA_LOAD_MAPS = [{"param": 0, "box": [64, 64], "swizzle": 128}]


def test_ptx_param_sizes_reads_the_entry_signature():
    assert cuda.ptx_param_sizes(TMA_LOAD_PTX, "tma_load") == [128] + [8] * 14 + [4, 4]
    assert cuda.ptx_param_sizes(SCALARS_PTX, "scalars") == [8] * 5 + [1, 2, 4, 8, 1, 1, 4, 8]
    assert cuda.ptx_param_sizes(AXPB_PTX, "axpb") == [8] * 10 + [4, 4]
    assert cuda.ptx_param_sizes(AXPB_PTX, "axp") is None  # no such entry
    two = (".visible .entry first(\n .param .u64 a\n)\n{ ret; }\n"
           ".visible .entry second()\n{ ret; }\n.entry third\n{ ret; }\n")
    assert cuda.ptx_param_sizes(two, "first") == [8]
    assert cuda.ptx_param_sizes(two, "second") == []
    assert cuda.ptx_param_sizes(two, "third") == []
    assert cuda.ptx_param_sizes(".entry k(.param .weird x)", "k") is None  # unchecked


@pytest.mark.parametrize("ptx, entry, params", [
    (AXPB_PTX, "axpb", [tensor("x", ("n",)), tensor("y", ("n",)), scalar("a", "float32"),
                        scalar("b", "float32")]),
    (TRANSPOSE_PTX, "transpose", [tensor("A", ("M", "N")), tensor("B", ("N", "M"))]),
    (SCALARS_PTX, "scalars", [tensor("out", (8,), "float64"), scalar("i8", "int8"),
                              scalar("i16", "int16"), scalar("i32", "int32"),
                              scalar("i64", "int64"), scalar("u8", "uint8"),
                              scalar("flag", "bool"), scalar("f", "float32"),
                              scalar("d", "float64")]),
    (TMA_LOAD_PTX, "tma_load", TMA_LOAD_PARAMS),
])
def test_the_gpu_tests_kernels_pass_the_parameter_check(ptx, entry, params):
    """What the GPU tests launch is what their PTX takes (no false alarm)."""
    maps = TMA_LOAD_MAPS if entry == "tma_load" else []
    make_kernel(entry, params, [], "cuda:sm_90a", cubin=FAKE_CUBIN, entry=entry, block=[128],
                grid=[const(1)], shared_bytes=0, ptx=ptx, tensormaps=maps)


def test_a_tma_kernel_without_its_tensor_maps_is_refused_before_any_launch():
    with pytest.raises(ValueError, match=r"kernel 'tma_load' \(entry 'tma_load', parameters "
                       r"from its PTX\) expects 17 parameters, but the call packs 16; "
                       r"parameter 0 is 128 bytes \(a TMA descriptor\), the call packs 8 "
                       r"there \(the allocated pointer of tensor argument 'src'\); the kernel "
                       r"takes 1 TMA descriptor\(s\) but the launch has 0"):
        make_kernel("tma_load", TMA_LOAD_PARAMS, [1], "cuda:sm_90a", cubin=FAKE_CUBIN,
                    entry="tma_load", block=[128], grid=[const(1)], shared_bytes=0,
                    ptx=TMA_LOAD_PTX)
    # The PTX given as the code (what the driver loads too), as test_chip_ops does.
    with pytest.raises(ValueError, match="parameter 0 is 128 bytes"):
        make_kernel("tma_load", TMA_LOAD_PARAMS, [1], "cuda:sm_90a",
                    cubin=TMA_LOAD_PTX.encode() + b"\0", entry="tma_load", block=[128],
                    grid=[const(1)], shared_bytes=0)


def test_a_compiled_tma_kernel_rebuilt_from_its_launch_data():
    """test_chip_ops rebuilds the compiled kernel with make_kernel: with its
    tensor maps it passes, without them it is refused (it ended the Python
    process on the H100)."""
    from support.explicit_ops import PROGRAMS

    k = tl.compile(PROGRAMS["tma_copy"][0](), out_idx=[-1], target="cuda:sm_90a",
                   pass_configs={"tl.disable_cache": True})
    assert k.tensormaps and cuda.ptx_param_sizes(k.ptx, k.entry)[0] == 128
    launch = dict(entry=k.entry, block=k.block, grid=k.grid, shared_bytes=k.shared_bytes)
    code = k.ptx.encode() + b"\0"
    with pytest.raises(ValueError, match=r"kernel 'main' .* parameter 0 is 128 bytes \(a TMA "
                       r"descriptor\)"):
        make_kernel(k.name, k.params, k.out_idx, k.target, cubin=code, **launch)
    make_kernel(k.name, k.params, k.out_idx, k.target, cubin=code, tensormaps=k.tensormaps,
                features=k.launch_features, **launch)


def test_another_kernels_code_is_refused():
    """Issue 44's class for CUDA: an artifact whose code is another
    kernel's (here axpb's PTX under transpose's signature)."""
    with pytest.raises(ValueError, match=r"kernel 'transpose' \(entry 'axpb', parameters from "
                       r"its PTX\) expects 12 parameters, but the call packs 14; parameter 10 "
                       r"is 4 bytes, the call packs 8 there \(the size 0 of tensor argument "
                       r"'B'\) \(its code is not the code of this signature"):
        make_kernel("transpose", [tensor("A", ("M", "N")), tensor("B", ("N", "M"))], [1],
                    "cuda:sm_90a", cubin=FAKE_CUBIN, entry="axpb", block=[128],
                    grid=[const(1)], shared_bytes=0, ptx=AXPB_PTX)


class FakeDriver:
    """The driver calls `CUDAExecutable._function` makes, answering a
    kernel of parameters `sizes` (None: a driver without cuFuncGetParamInfo)."""

    class CUresult:
        CUDA_ERROR_INVALID_VALUE = 1

    class CUfunction_attribute:
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

    def __init__(self, sizes):
        self.sizes = sizes
        self.unloaded = []
        if sizes is None:
            self.cuFuncGetParamInfo = None

    def cuModuleLoadData(self, image):
        return (0, "module")

    def cuModuleGetFunction(self, module, name):
        return (0, 0xF00D)

    def cuModuleUnload(self, module):
        self.unloaded.append(module)
        return (0,)

    def cuFuncGetParamInfo(self, fn, i):
        if i >= len(self.sizes):
            return (self.CUresult.CUDA_ERROR_INVALID_VALUE, 0, 0)
        return (0, sum(self.sizes[:i]), self.sizes[i])


@pytest.mark.parametrize("sizes, tensormaps, message", [
    ([128] + [8] * 14 + [4, 4], TMA_LOAD_MAPS, None),
    (None, [], None),  # a driver before CUDA 12.4: unchecked
    ([128] + [8] * 14 + [4, 4], [], r"kernel 'tma_load' \(entry 'tma_load', parameters from "
     r"the driver's cuFuncGetParamInfo\) expects 17 parameters, but the call packs 16; "
     r"parameter 0 is 128 bytes \(a TMA descriptor\)"),
    ([8] * 14 + [4], [], r"expects 15 parameters, but the call packs 16; it has no parameter "
     r"15 for scalar argument 'col' \(int32\)"),
    ([8] * 14 + [4, 8], [], r"parameter 15 is 8 bytes, the call packs 4 there \(scalar "
     r"argument 'col' \(int32\)\)"),
])
def test_the_driver_s_parameter_list_is_checked_at_the_first_load(monkeypatch, sizes,
                                                                  tensormaps, message):
    """An ELF cubin carries no PTX to read: the driver's list of the loaded
    function is checked before anything is launched, on the Python path
    and (through `_function`, which hands it its functions) the native one."""
    driver = FakeDriver(sizes)
    monkeypatch.setattr(cuda, "_DRIVER", driver)
    exe = CUDAExecutable(FAKE_CUBIN, "tma_load", [128], 0, [const(1)], TMA_LOAD_PARAMS,
                         tensormaps=tensormaps)
    if message is None:
        assert exe._function(0xC0DE, 0) == 0xF00D
        assert exe._handles and driver.unloaded == []
        return
    with pytest.raises(ValueError, match=message):
        exe._function(0xC0DE, 0)
    assert driver.unloaded == ["module"] and not exe._handles and not exe._functions


def test_the_native_path_gets_no_function_whose_parameters_differ(monkeypatch):
    """The fast path launches only the functions `_native_prepare` hands it
    (each loaded, and checked, by `_function`): a kernel that fails the
    check hands it none, and its calls take the Python path, which raises."""
    monkeypatch.setattr(cuda, "_DRIVER", FakeDriver([128] + [8] * 14 + [4, 4]))
    monkeypatch.setattr(cuda, "current_context", lambda name="": (0xC0DE, 0))
    k = make_kernel("tma_load", TMA_LOAD_PARAMS, [1], "cuda:sm_90a", cubin=FAKE_CUBIN,
                    entry="tma_load", block=[128], grid=[const(1)], shared_bytes=0)
    added = []
    monkeypatch.setattr(k, "_native_state", lambda: "native", raising=False)
    monkeypatch.setattr(k, "_native_has_context", lambda handle: False, raising=False)
    monkeypatch.setattr(k, "_native_add_context", lambda *a: added.append(a) or True,
                        raising=False)
    assert k._native_prepare() is False and added == []
    with pytest.raises(ValueError, match="parameter 0 is 128 bytes"):
        k._executable._function(0xC0DE, 0)


@pytest.mark.gpu
def test_a_kernel_with_another_parameter_list_raises_instead_of_crashing(gpu, tmp_path):
    """On the GPU, from the driver's list (the cubin alone, no PTX to read):
    the TMA kernel without its tensor map, and axpb's code under another
    signature, raise a ValueError at the first call; the process lives on
    and a right kernel still runs."""
    torch = gpu
    cubin = assemble(TMA_LOAD_PTX, tmp_path / "tma")
    k = make_kernel("tma_load", TMA_LOAD_PARAMS, [1], "cuda:sm_90a", cubin=cubin,
                    entry="tma_load", block=[128], grid=[const(1)], shared_bytes=0)
    src = torch.zeros(64, 64, dtype=torch.float16, device="cuda")
    for _ in range(2):  # the second call too (no fast path took it over)
        with pytest.raises(ValueError, match=r"parameters from the driver's "
                           r"cuFuncGetParamInfo\) expects 17 parameters, but the call packs 16; "
                           r"parameter 0 is 128 bytes \(a TMA descriptor\)"):
            k(src, 0, 0)
    other = make_kernel("axpb", [tensor("A", ("M", "N")), tensor("B", ("N", "M"))], [1],
                        "cuda:sm_90a", cubin=assemble(AXPB_PTX, tmp_path / "axpb"),
                        entry="axpb", block=[128], grid=[const(1)], shared_bytes=0)
    with pytest.raises(ValueError, match="expects 12 parameters, but the call packs 14"):
        other(torch.zeros(4, 4, device="cuda"))
    x = torch.randn(1000, device="cuda")
    torch.testing.assert_close(axpb_kernel(tmp_path)(x, 2.0, 1.0), 2 * x + 1, rtol=1e-6,
                               atol=1e-6)
