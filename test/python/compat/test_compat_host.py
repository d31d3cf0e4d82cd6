"""The TileLang compatibility route (tilelang_mlir.compat): the `tilelang`
module names and TileLang's host API, on target="cpu".

Every test that registers the `tilelang` names runs in a subprocess, so
that no other test sees a `tilelang` module."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T


def run_python(code: str, tmp_path, *args, name="prog.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    env = dict(os.environ, TILELANG_MLIR_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "tilelang_mlir.compat", str(path), *args],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path))
    return proc


# A classic-style TileLang program: a @tilelang.jit factory with an inner
# @T.prim_func, tilelang.compile with TileLang's pass configs, the profiler.
CLASSIC = """
import sys
import torch
import tilelang
import tilelang.language as T
from tilelang.profiler import do_bench
from varlen_utils import scale_of


@tilelang.jit(out_idx=[-1], target="cpu",
              pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})
def scaled_add(n, block=64, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(tilelang.cdiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    C[bx * block + i] = A[bx * block + i] * scale_of() + B[bx * block + i]
    return main


def main(n):
    tilelang.testing.set_random_seed(0)
    kernel = scaled_add(n)
    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Integer)
    profiler.assert_allclose(lambda A, B: A * scale_of() + B, rtol=1e-5, atol=1e-5)
    a, b = torch.randn(n), torch.randn(n)
    torch.testing.assert_close(kernel(a, b), a * scale_of() + b)
    k2 = tilelang.compile(scaled_add.get_tir(n), out_idx=[2],
                          target="cpu", pass_configs={
                              tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True,
                              tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True})
    torch.testing.assert_close(k2(a, b), a * scale_of() + b)
    assert "define" in kernel.get_kernel_source()
    ms = profiler.do_bench(warmup=2, rep=3)
    ms_ref = profiler.do_bench(lambda A, B: A * 2 + B, n_warmup=1, n_repeat=2)
    ms_fn = do_bench(lambda: kernel(a, b), _n_warmup=1, _n_repeat=3, backend="cupti")
    assert ms > 0 and ms_ref > 0 and ms_fn > 0
    print("PASS", sys.argv[1:], __name__)


if __name__ == "__main__":
    main(int(sys.argv[1]))
"""


def test_a_classic_tilelang_program_runs_through_python_m(tmp_path):
    (tmp_path / "varlen_utils.py").write_text("def scale_of():\n    return 2.0\n")
    n = int(np.random.randint(100, 600))
    proc = run_python(CLASSIC, tmp_path, str(n), "extra")
    assert proc.returncode == 0, proc.stderr
    assert f"PASS ['{n}', 'extra'] __main__" in proc.stdout
    assert "CUPTI is not used" in proc.stderr


HOST_API = """
import sys, importlib
import numpy as np
import torch
import tilelang_mlir
import tilelang_mlir.compat as compat
compat.install()
compat.install()  # idempotent
import tilelang
import tilelang.language as T
assert T.Parallel is tilelang_mlir.language.Parallel and T.copy is tilelang_mlir.language.copy
import tilelang.language.copy  # a submodule does not hide T.copy
assert callable(T.copy) and T.copy is tilelang_mlir.language.copy
assert tilelang.__version__ == tilelang_mlir.__version__
assert tilelang.JITKernel is tilelang_mlir.Kernel
import tilelang.jit
assert callable(tilelang.jit)  # still the decorator after `import tilelang.jit`
from tilelang.jit import compile, JITKernel
assert tilelang.cdiv(7, 2) == 4 and tilelang.cdiv(8, 2) == 4
assert [tilelang.next_power_of_2(x) for x in (0, 1, 2, 3, 5, 64, 65)] == [1, 1, 2, 4, 8, 64, 128]
assert tilelang.math.cdiv(-7, 2) == -3
from tilelang import DataType
assert DataType("float16").bits == 16 and DataType("int8x4").lanes == 4
assert str(DataType("bfloat16")) == "bfloat16" and DataType("float32") == "float32"
from tilelang.transform import PassConfigKey
assert PassConfigKey is tilelang.PassConfigKey
assert PassConfigKey.TL_DISABLE_WARP_SPECIALIZED.value == "tl.disable_warp_specialized"
for key in PassConfigKey:
    assert key.meaning
from tilelang.language.dtypes import _TORCH_DTYPE_TO_STR
assert _TORCH_DTYPE_TO_STR[torch.float16] == "float16"
from tilelang.language.fp8 import determine_fp8_type
assert str(determine_fp8_type()) == "float8_e4m3fn" and str(determine_fp8_type("e5m2")) == "float8_e5m2"
from tilelang.tileop.base import GemmWarpPolicy
assert GemmWarpPolicy is T.GemmWarpPolicy
from tilelang.layout import make_swizzled_layout
assert callable(make_swizzled_layout) and callable(T.make_swizzled_layout)
from tilelang.utils.tensor import torch_assert_close
x = torch.randn(1000)
y = x.clone(); y[:3] += 1
torch_assert_close(x, y, max_mismatched_ratio=0.01)
try:
    torch_assert_close(x, y, max_mismatched_ratio=0.001)
    raise SystemExit("torch_assert_close let 3 of 1000 through")
except AssertionError as e:
    assert "3 of 1000" in str(e)
import tilelang.testing
for name in ("requires_cuda", "requires_cuda_compute_version", "requires_cuda_compute_version_ge",
             "requires_cuda_compute_version_eq", "requires_cuda_compute_version_lt",
             "requires_package", "requires_rocm", "requires_gfx950", "set_random_seed", "main",
             "torch_assert_close", "assert_allclose"):
    assert callable(getattr(tilelang.testing, name)), name
tilelang.testing.set_random_seed(3); a = torch.rand(4)
tilelang.testing.set_random_seed(3); assert torch.equal(a, torch.rand(4))
tilelang.set_log_level("DEBUG")
import logging
assert logging.getLogger("tilelang_mlir").level == logging.DEBUG
# cache controls
assert tilelang.is_cache_enabled()
tilelang.disable_cache(); assert not tilelang.cache.is_cache_enabled()
tilelang.enable_cache(); assert tilelang.env.is_cache_enabled()
# carver.arch needs a GPU: a clear error here
from tilelang.carver.arch import CUDA, driver
if not torch.cuda.is_available():
    for f in (lambda: CUDA("cuda"), driver.get_num_sms):
        try:
            f(); raise SystemExit("no error without a GPU")
        except RuntimeError as e:
            assert "no GPU is visible" in str(e)
# tilelang.carver.template.MatmulTemplate: our recommender, on an H200-like arch
from tilelang.carver.template import MatmulTemplate
from tilelang.carver.roller.rasterization import NoRasterization, Rasterization2DRow
class _Arch:
    smem_cap, compute_max_core = 227 * 1024, 132
tmpl = MatmulTemplate(M=4096, N=4096, K=4096, in_dtype=T.float16, out_dtype=T.float16,
                      accum_dtype=T.float32).with_arch(_Arch())
hints = tmpl.recommend_hints(topk=5)
assert 1 <= len(hints) <= 5 and hints == sorted(hints, key=lambda h: -h.score)
for h in hints:
    bm, bn = h.block
    assert bm % h.warp[0] == 0 and bn % h.warp[1] == 0 and h.threads in (128, 256)
    assert (bm * h.rstep[0] + h.rstep[0] * bn) * 2 * h.pipeline_stage <= 227 * 1024
    assert isinstance(h.rasterization_plan, (NoRasterization, Rasterization2DRow))
assert tmpl.equivalent_function() is not None
small = MatmulTemplate(M=64, N=64, K=64).with_arch(_Arch()).recommend_hints(topk=50)
assert all(isinstance(h.rasterization_plan, NoRasterization) for h in small)
try:
    MatmulTemplate(M=0, N=1, K=1).with_arch(_Arch()).recommend_hints()
    raise SystemExit("no error")
except ValueError as e:
    assert "MatmulTemplate.M" in str(e)
# the 2:4 sparse metadata facts
from tilelang.cuda.intrinsics.sparse_layout import GROUP_CONFIG, get_e_factor, get_e_replicate_factor
assert get_e_factor(T.float16, T.int16) == 16 and get_e_factor(T.int8, T.int32) == 32
assert get_e_factor(T.float32, T.int16) == 8 and GROUP_CONFIG[T.float16] == (2, 4)
assert get_e_replicate_factor(T.float16) == 2 and get_e_replicate_factor(T.int8) == 1
try:
    get_e_factor(T.float64, T.int16); raise SystemExit("no error")
except ValueError as e:
    assert "float64" in str(e)
# tilelang.contrib.nvcc: the compute-capability queries
from tilelang.contrib import nvcc
assert nvcc.get_target_compute_version("cuda:sm_90a") == "9.0"
assert nvcc.get_target_compute_version("cuda:sm_80") == "8.0"
assert nvcc.parse_compute_version("9.0") == (9, 0)
assert nvcc.have_tensorcore("8.6")
for bad in (lambda: nvcc.parse_compute_version("nine"),
            lambda: nvcc.get_target_compute_version("cpu")):
    try:
        bad(); raise SystemExit("no error")
    except ValueError:
        pass
# out of scope
for stmt, what in (("from tilelang.language import ptx_ldmatrix", "T.ptx_ldmatrix"),
                   ("from tilelang.carver.template import ConvTemplate", "ConvTemplate")):
    try:
        exec(stmt); raise SystemExit(stmt + " imported")
    except ImportError as e:
        assert "not supported by tilelang-mlir: " + what in str(e), e
# Refused modules of a release import; a name of theirs refuses at its use.
import importlib
for module, name in (("tilelang.engine", "lower"),
                     ("tilelang.cuda.intrinsics.macro", "make_mma_macro"),
                     ("tilelang.contrib.hipcc", "compile_hip")):
    fn = getattr(importlib.import_module(module), name)
    try:
        fn(); raise SystemExit(f"{module}.{name} ran")
    except ImportError as e:
        assert f"not supported by tilelang-mlir: {module}.{name}" in str(e), e
try:
    tilelang.no_such_name
    raise SystemExit("no error")
except AttributeError as e:
    assert "not supported by tilelang-mlir" in str(e)
from tilelang.autotuner import *
assert callable(autotune) and AutoTuner and set_autotune_inputs
# TileLang's profiler defaults under the route, ours again after it
from tilelang_mlir.runtime.profiler import Profiler, TensorSupplyType
assert Profiler.bench_units == "ms" and Profiler.default_mismatch_ratio == 0.01
assert Profiler.default_supply_type == TensorSupplyType.Auto
compat.uninstall()
assert "tilelang" not in sys.modules
assert Profiler.bench_units == "calls" and Profiler.default_mismatch_ratio == 0.0
assert Profiler.default_supply_type is None
print("HOST API OK")
"""


def test_every_host_api_name(tmp_path):
    path = tmp_path / "host.py"
    path.write_text(HOST_API)
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "HOST API OK" in proc.stdout


def test_a_real_tilelang_is_not_shadowed(tmp_path):
    fake = tmp_path / "site" / "tilelang"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("REAL = True\n")
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import tilelang_mlir.compat as c\n"
            "try:\n    c.install()\nexcept ImportError as e:\n    print('REFUSED', e)\n"
            "c.install(force=True)\nimport tilelang\nprint('OURS', hasattr(tilelang, 'PassConfigKey'))\n"
            % str(tmp_path / "site"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "REFUSED a real TileLang is installed" in proc.stdout and "OURS True" in proc.stdout


def _add_one(n):
    @T.prim_func
    def add_one(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n) as bx:
            for i in T.Parallel(n):
                B[i] = A[i] + 1.0

    return add_one


def test_tilelang_pass_config_keys_in_compile():
    from tilelang_mlir.compat.transform import PassConfigKey

    n = 64
    a = np.random.randn(n).astype(np.float32)
    for key in (PassConfigKey.TL_ENABLE_FAST_MATH, PassConfigKey.TL_DISABLE_TMA_LOWER,
                PassConfigKey.TL_DISABLE_THREAD_STORAGE_SYNC, "tl.enable_fast_math"):
        k = tl.compile(_add_one(n), out_idx=[1], target="cpu", pass_configs={key: True})
        np.testing.assert_allclose(k(a), a + 1.0, rtol=1e-6)
    from tilelang_mlir.compiler.compile import normalize_pass_configs

    assert normalize_pass_configs({PassConfigKey.TL_DISABLE_TMA_LOWER: True}) == {
        "tl.disable_warp_specialized": True, "tl.disable_tma_store": True}
    for key, value in ((PassConfigKey.TL_DISABLE_FAST_MATH, True),
                       (PassConfigKey.TL_ENABLE_FAST_MATH, False)):
        assert normalize_pass_configs({key: value}) == {"tl.precise_math": True}
    assert normalize_pass_configs({PassConfigKey.TL_DISABLE_FAST_MATH: False}) == {}
    k = tl.compile(_add_one(n), out_idx=[1], target="cpu",
                   pass_configs={PassConfigKey.TL_DISABLE_FAST_MATH: True})
    np.testing.assert_allclose(k(a), a + 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match="unknown pass config 'tl.no_such_key'"):
        tl.compile(_add_one(n), out_idx=[1], target="cpu", pass_configs={"tl.no_such_key": 1})


@pytest.mark.parametrize("kind", ["Integer", "Uniform", "Normal", "Randn", "Zero", "One", "Auto"])
def test_tensor_supply_types(kind):
    from tilelang_mlir.runtime.profiler import TensorSupplyType

    n = 256
    k = tl.compile(_add_one(n), out_idx=[1], target="cpu")
    (x,) = k.get_profiler(tensor_supply_type=TensorSupplyType[kind]).random_inputs()
    x = x.numpy()
    if kind == "Integer":
        assert set(np.unique(x)) <= {-2, -1, 0, 1, 2}
    elif kind in ("Uniform", "Auto"):
        assert x.min() >= -1 and x.max() <= 1 and len(np.unique(x)) > 100
    elif kind == "Zero":
        assert not x.any()
    elif kind == "One":
        assert (x == 1).all()
    else:
        assert len(np.unique(x)) > 100
    with pytest.raises(TypeError, match="TensorSupplyType"):
        k.get_profiler(tensor_supply_type="Integer")


def test_profiler_tilelang_keywords():
    n = 128
    k = tl.compile(_add_one(n), out_idx=[1], target="cpu")
    prof = k.get_profiler()
    a = np.random.randn(n).astype(np.float32)
    prof.assert_allclose(lambda A: A + 1.0, input_tensors=[a])
    # one wrong element of 128 (element 5 off by 1, whatever the input)
    # passes with a 1% ratio, fails without
    wrong = lambda A: A + 1.0 + np.where(np.arange(n) == 5, 1.0, 0.0).astype(np.float32)  # noqa
    prof.assert_allclose(wrong, input_tensors=[a], max_mismatched_ratio=0.01, atol=1e-5)
    with pytest.raises(AssertionError, match="differs from the reference in 1 of 128"):
        prof.assert_allclose(wrong, input_tensors=[a], atol=1e-5)
    seen = []
    assert prof.do_bench(lambda A: seen.append(A.shape), input_tensors=[a], n_warmup=1,
                         n_repeat=2) >= 0
    assert seen and seen[0] == (n,)
    assert len(prof.do_bench(n_repeat=4, quantiles=[0.2, 0.8])) == 2
    assert prof.do_bench(rep=3, return_mode="max") >= prof.do_bench(rep=3, return_mode="min") * 0
    with pytest.raises(ValueError, match="backend"):
        prof.do_bench(backend="nsight")


def test_autotune_with_tilelang_arguments(tmp_path):
    code = """
    import torch, tilelang, tilelang.language as T
    from tilelang.autotuner import *

    def configs():
        return [dict(block=b) for b in (32, 64)]

    @autotune(configs=configs(), warmup=1, rep=2, supply_type=tilelang.TensorSupplyType.Integer,
              ref_prog=lambda A: A * 3)
    @tilelang.jit(out_idx=[-1], target="cpu")
    def triple(n, block=32):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
                for i in T.Parallel(block):
                    if bx * block + i < n:
                        B[bx * block + i] = A[bx * block + i] * 3.0
        return main

    if __name__ == "__main__":
        k = triple(200)
        assert k.autotune_result.config["block"] in (32, 64)
        x = torch.randn(200)
        torch.testing.assert_close(k(x), x * 3)
        with set_autotune_inputs(torch.ones(300)):
            r = (AutoTuner.from_kernel(kernel=lambda block: triple.factory(300, block),
                                       configs=configs())
                 .set_compile_args(out_idx=[-1], target="cpu")
                 .set_profile_args(ref_prog=lambda A: A * 3, skip_check=False)
                 .run(warmup=1, rep=2))
        assert r.latency > 0 and r.config["block"] in (32, 64)
        torch.testing.assert_close(r.kernel(x[:100].repeat(3)), x[:100].repeat(3) * 3)
        print("TUNED")
    """
    proc = run_python(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "TUNED" in proc.stdout


def test_cache_controls_and_clear(tmp_path, monkeypatch):
    from tilelang_mlir.compiler import compile as c
    from tilelang_mlir.compat import cache

    monkeypatch.setenv("TILELANG_MLIR_CACHE_DIR", str(tmp_path))
    k1 = tl.compile(_add_one(32), out_idx=[1], target="cpu")
    assert tl.compile(_add_one(32), out_idx=[1], target="cpu") is k1
    assert any(p.suffix == ".json" for p in tmp_path.iterdir())
    cache.disable_cache()
    try:
        assert not cache.is_cache_enabled()
        assert tl.compile(_add_one(32), out_idx=[1], target="cpu") is not k1
    finally:
        cache.enable_cache()
    cache.clear_cache()
    assert not any(p.suffix == ".json" for p in tmp_path.iterdir())
    assert c.cache_enabled()


def test_python_m_usage_and_missing_file(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tilelang_mlir.compat"], capture_output=True,
                          text=True)
    assert proc.returncode == 2 and "usage" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "tilelang_mlir.compat", str(tmp_path / "x.py")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "no such file" in proc.stderr


def test_tilelang_profiler_defaults(monkeypatch):
    """Under the route: do_bench's warmup/rep are millisecond budgets (more
    calls for a longer budget) and assert_allclose tolerates 1% mismatched
    elements by default (an explicit 0.0 still refuses one)."""
    import numpy as np

    import tilelang_mlir as tl
    import tilelang_mlir.language as T
    from tilelang_mlir.runtime import profiler as prof

    @T.prim_func
    def add_one(A: T.Tensor((1000,), "float32"), B: T.Tensor((1000,), "float32")):
        with T.Kernel(1, threads=128):
            for i in T.serial(1000):
                B[i] = A[i] + 1.0

    kernel = tl.compile(add_one, out_idx=[1], target="cpu")
    monkeypatch.setattr(prof.Profiler, "bench_units", "ms")
    monkeypatch.setattr(prof.Profiler, "default_mismatch_ratio", 0.01)
    calls = []
    real = prof.Profiler._bench_cpu
    monkeypatch.setattr(prof.Profiler, "_bench_cpu",
                        staticmethod(lambda fn, w, r: calls.append((w, r)) or real(fn, w, r)))
    p = kernel.get_profiler()
    x = np.random.default_rng(1).random(1000, dtype=np.float32)
    assert p.func is kernel
    np.testing.assert_array_equal(p(x), x + 1.0)  # TileLang's profiler.func / profiler(...)
    p.do_bench(warmup=1, rep=5)
    p.do_bench(warmup=1, rep=50)
    assert calls[0] == (1, 5) and calls[2] == (1, 5)  # the probes
    assert calls[3][1] > calls[1][1] >= 1            # a 10x budget: more calls
    assert p.do_bench(warmup=1, rep=5, n_repeat=3) > 0 and calls[-1][1] == 3

    def off_by_few(a):  # 5 of 1000 elements wrong: 0.5%
        out = a + 1.0
        out[:5] += 10.0
        return out

    a = np.random.default_rng(0).random(1000, dtype=np.float32)
    p.assert_allclose(off_by_few, a)
    import pytest
    with pytest.raises(AssertionError, match="differs"):
        p.assert_allclose(off_by_few, a, max_mismatched_ratio=0.0)


def test_jit_compile_flags_only_those_that_steer_cxx():
    """TileLang's nvcc flags: the ones that only steer C++ compilation are
    accepted (tilelang-mlir emits PTX itself), any other is refused."""
    from tilelang_mlir.base.errors import TileLangError

    flags = ["-O3", "-Wno-deprecated-declarations", "-U__CUDA_NO_HALF_OPERATORS__",
             "--expt-relaxed-constexpr", "--use_fast_math", "-DNDEBUG",
             "--ptxas-options=-v,--register-usage-level=10",
             "-include", "tl_templates/cuda/gemm.h"]  # TileOPs' gated DeltaNet
    assert callable(tl.jit(out_idx=[1], compile_flags=flags))
    with pytest.raises(TileLangError, match="compile flag '-include'"):
        tl.jit(out_idx=[1], compile_flags=["-O3", "-include"])  # no header
    with pytest.raises(TileLangError, match="compile flag '-G'"):
        tl.jit(out_idx=[1], compile_flags=["-O3", "-G"])
    with pytest.raises(TileLangError, match="compile flag '--maxrregcount=64'"):
        tl.compile(None, compile_flags=["--maxrregcount=64"])
