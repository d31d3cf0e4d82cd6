"""TileLang's host API as the compat route serves it (compat/jit.py,
target.py, tvm_*.py, env.py, layout.py, intrinsics.py, autotuner.py, the
runtime Kernel's and Profiler's TileLang members), on target="cpu" with
random inputs, and sm_90a compiles where the GPU code is what is checked.

Most tests call the compat modules directly (no `tilelang` name is
registered); those that need `import tilelang` run in a subprocess."""

import logging
import inspect
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.bounds import assert_float32_matmul
from tilelang_mlir.base.errors import TileLangError
from tilelang_mlir.compat import env as compat_env
from tilelang_mlir.compat import intrinsics, layout
from tilelang_mlir.compat import jit as cjit
from tilelang_mlir.compat import target as ctarget
from tilelang_mlir.compat import testing as ctesting
from tilelang_mlir.compat import tvm_tir, tvm_transform, utils
from tilelang_mlir.compat.transform import PassConfigKey
from tilelang_mlir.runtime.profiler import TensorSupplyType


def _scale_program(n, factor=2.0, block=32, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    B[bx * block + i] = A[bx * block + i] * factor
    return main


def _gemm_program(M, N, K, bm=64, bn=64, bk=32, swizzle=None):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            As = T.alloc_shared((bm, bk), "float16")
            Bs = T.alloc_shared((bk, bn), "float16")
            if swizzle is not None:
                T.annotate_layout({As: swizzle(As), Bs: swizzle(Bs)})
            Cl = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], As)
                T.copy(B[k * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * bm, bx * bn])
    return main


def run_compat(code: str, tmp_path, name="prog.py", env=None):
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    full = dict(os.environ, TILELANG_MLIR_CACHE_DIR=str(tmp_path / "cache"),
                TILELANG_PRINT_ON_COMPILATION="0", **(env or {}))
    return subprocess.run([sys.executable, "-m", "tilelang_mlir.compat", str(path)],
                          capture_output=True, text=True, env=full, cwd=str(tmp_path))


# ---------------------------------------------------------------------------
# targets
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("given, ours", [
    ("cuda -arch=sm_90a", "cuda:sm_90a"), ("cuda -arch=sm_90", "cuda:sm_90a"),
    ({"kind": "cuda", "arch": "sm_90"}, "cuda:sm_90a"), ({"kind": "cuda", "arch": "sm_80"},
                                                          "cuda:sm_80"),
    ("cuda -arch=sm_86", "cuda:sm_86"), ("llvm", "cpu"), ("c", "cpu"),
    ({"kind": "llvm", "mcpu": "native"}, "cpu"), ({"kind": "hip", "mcpu": "gfx942"},
                                                  "rocm:gfx942"),
    ("hip -mcpu=gfx90a", "rocm:gfx90a"), ("cuda:sm_80", "cuda:sm_80")])
def test_tilelang_targets_become_ours(given, ours):
    assert str(ctarget.to_ours(given)) == ours
    t = ctarget.Target(given)
    assert str(t.ours) == ours and str(ctarget.to_ours(t)) == ours
    assert t.kind.name in ("cuda", "llvm", "c", "hip") and ctarget.Target(str(t)).ours == t.ours


@pytest.mark.parametrize("bad, what", [
    ("metal", "hardware this compiler does not target"),
    ({"kind": "cuda", "arch": "sm_100a"}, "Blackwell"), ("vulkan", "not target"),
    ({"arch": "sm_90"}, "no 'kind'"), ("cuda -arch=sm_70", "sm_75 or newer"),
    ("cuda arch", "-key=value"), (3, "a string, a dict or a Target")])
def test_bad_targets_are_named(bad, what):
    with pytest.raises((ValueError, TypeError), match=what):
        ctarget.Target(bad).ours


def test_current_target_and_determine_target():
    assert ctarget.Target.current() is None
    with ctarget.Target("llvm") as t:
        assert ctarget.Target.current() is t
        assert str(ctarget.to_ours("auto")) == "cpu" and ctarget.determine_target() is t
        k = cjit.compile(_scale_program(64), out_idx=[1])  # "auto": the current target
        assert k.device == "cpu"
    assert ctarget.Target.current() is None
    assert ctarget.determine_target({"kind": "cuda", "arch": "sm_80"}, return_object=True).ours \
        == ctarget.Target("cuda -arch=sm_80").ours
    with pytest.raises(AssertionError, match="not supported"):
        ctarget.determine_target("metal")
    spec = ctarget.register_target_detector("test-llvm", lambda: "llvm", override=True)
    try:
        assert spec.name in ctarget.list_target_detectors() and \
            ctarget.auto_detect_target() == "llvm"
        with pytest.raises(ValueError, match="already registered"):
            ctarget.register_target_detector("test-llvm", lambda: "llvm")
    finally:
        ctarget._DETECTORS.pop("test-llvm")
    assert ctarget.target_is_hopper("cuda -arch=sm_90") and not ctarget.target_is_ampere("c")
    assert ctarget.target_get_warp_size({"kind": "hip", "mcpu": "gfx942"}) == 64
    assert ctarget.target_has_bulk_copy("cuda -arch=sm_90a") and \
        not ctarget.target_has_bulk_copy("cuda -arch=sm_86")


# ---------------------------------------------------------------------------
# tvm names
# ---------------------------------------------------------------------------


def test_tvm_immediates_and_isinstance_checks():
    c = tvm_tir.const(3)
    assert c == 3 and c.dtype == "int32" and c.value == 3 and isinstance(c, tvm_tir.IntImm)
    assert tvm_tir.const(2 ** 40).dtype == "int64"
    f = tvm_tir.const(0.5, "float16")
    assert f == 0.5 and f.dtype == "float16" and isinstance(f, tvm_tir.FloatImm)
    assert isinstance(f, tvm_tir.PrimExpr) and not isinstance(1.0, tvm_tir.FloatImm)
    assert not isinstance(3, tvm_tir.IntImm)  # a Python int is not a TVM immediate
    v = tvm_tir.Var("m", "int32")
    assert isinstance(v, tvm_tir.Var) and isinstance(v, tvm_tir.PrimExpr) and v.name == "m"
    assert isinstance(T.dynamic("n"), tvm_tir.Var)
    x = tvm_tir.Var("x", "float32")  # a variable of host expressions
    assert isinstance(x, tvm_tir.Var) and isinstance(x, tvm_tir.PrimExpr) and x.dtype == "float32"
    with pytest.raises(TypeError, match="FloatImm"):
        tvm_tir.IntImm("float32", 1)
    with pytest.raises(AttributeError, match="not supported by tilelang-mlir: tvm.tir.decl_buf"):
        tvm_tir.decl_buffer
    # TVM's TIR operations are the T namespace's
    assert tvm_tir.reinterpret is T.reinterpret and tvm_tir.if_then_else is T.if_then_else
    assert tvm_tir.floordiv is T.floordiv


def test_tvm_const_and_checks_inside_a_program(monkeypatch, tmp_path):
    # a fresh disk cache: the helper below runs only when the program is traced
    monkeypatch.setenv("TILELANG_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    seen = []

    def checked(buf, value):
        # a plain-Python helper, run while the program is traced
        seen.append((isinstance(value, tvm_tir.PrimExpr), isinstance(buf, tvm_tir.PrimExpr)))
        return value

    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16) as bx:
            for i in T.Parallel(16):
                c = tvm_tir.const(0.25, "float32")
                B[i] = checked(A, A[i]) + c

    k = tl.compile(main, target="cpu")
    a, b = np.random.randn(16).astype(np.float32), np.zeros(16, np.float32)
    k(a, b)
    np.testing.assert_allclose(b, a + 0.25, rtol=1e-6)
    assert seen and set(seen) == {(True, False)}


def test_pass_context_config_applies_to_compiles(tmp_path):
    assert tvm_transform.PassContext.current().config == {}
    trace = tmp_path / "trace"
    with tvm_transform.PassContext(config={PassConfigKey.TL_ENABLE_DUMP_IR: True,
                                           PassConfigKey.TL_DUMP_IR_DIR: str(trace)}):
        assert tvm_transform.PassContext.current().config["tl.enable_dump_ir"] is True
        k = cjit.compile(_scale_program(48, 3.0), out_idx=[1], target="cpu")
    assert k.pass_configs["tl.enable_dump_ir"] is True
    assert sorted(os.listdir(trace))[0].startswith("00-tile")
    a = torch.randn(48)
    torch.testing.assert_close(k(a), a * 3.0)
    with pytest.raises(NotImplementedError, match="instruments"):
        tvm_transform.PassContext(instruments=[object()])


# ---------------------------------------------------------------------------
# pass configs
# ---------------------------------------------------------------------------


def test_every_pass_config_key_is_accepted_or_refused_by_the_table():
    from tilelang_mlir.compiler.pass_config import TILELANG_PASS_CONFIGS, normalize

    for key in PassConfigKey:
        assert key.meaning
        if key.value in ("tl.trace_dir", "tl.layout_plot_dir", "tl.dump_ir_path"):
            continue
        entry = TILELANG_PASS_CONFIGS.get(key.value)
        if entry is None:
            continue  # ours, checked by the records
        value = {"tl.config_index_bitwidth": 64, "tl.Simplify": {}, "tl.device_compile_flags": [],
                 "tl.layout_cost_model": "io-aware", "tirx.add_lower_pass": [],
                 "cuda.kernels_output_dir": ""}.get(key.value, True)
        if entry.action == "convert" and key.value in (
                "transitively_prove_inequalities", "convert_boolean_to_and_of_ors",
                "apply_constraints_to_boolean_branches", "propagate_knowns_to_prove_conditional",
                "propagate_knowns_to_simplify_expressions", "enable_simplify_let_inline"):
            with pytest.raises(ValueError, match="inside the dict of pass config 'tl.Simplify'"):
                normalize({key: True})
            assert normalize({PassConfigKey.TL_SIMPLIFY: {key: True}}) == {}
        elif entry.action == "refuse":
            with pytest.raises(NotImplementedError, match=key.value):
                normalize({key: True})
            assert normalize({key: False}) == {}
        else:
            normalize({key: value})
    assert normalize({PassConfigKey.TL_CONFIG_INDEX_BITWIDTH: 32}) == {"tl.narrow_index": True}
    with pytest.raises(ValueError, match="32 or 64"):
        normalize({PassConfigKey.TL_CONFIG_INDEX_BITWIDTH: 16})
    for key in (PassConfigKey.TL_DISABLE_DATA_RACE_CHECK, PassConfigKey.TIR_NOALIAS):
        with pytest.raises(NotImplementedError, match="false value"):
            normalize({key: False})
    for key in (PassConfigKey.TL_ENABLE_ASYNC_COPY, PassConfigKey.TIR_USE_ASYNC_COPY):
        assert normalize({key: False}) == {"tl.pipeline_sync_copies": True}
        assert normalize({key: True}) == {}
    with pytest.raises(ValueError, match="no option 'bogus'"):
        normalize({PassConfigKey.TL_SIMPLIFY: {"bogus": 1}})
    with pytest.raises(TileLangError, match="compile flag '-G'"):
        normalize({PassConfigKey.TL_DEVICE_COMPILE_FLAGS: ["-G"]})
    assert normalize({PassConfigKey.TL_DISABLE_SAFE_MEMORY_ACCESS: True}) == {
        "tl.disable_safe_memory_legalize": True}


def test_disable_wgmma_compiles_mma_sync_on_sm90a(tmp_path):
    prog = _gemm_program(128, 128, 64)
    out = tmp_path / "kernels"
    k = cjit.compile(prog, target="cuda -arch=sm_90a", pass_configs={
        PassConfigKey.TL_DISABLE_WGMMA: True, PassConfigKey.CUDA_KERNELS_OUTPUT_DIR: str(out)})
    src = k.get_kernel_source()
    assert "mma.sync" in src and "wgmma" not in src
    assert (out / "main.ptx").read_text() == src
    assert "wgmma" in cjit.compile(prog, target={"kind": "cuda", "arch": "sm_90"}) \
        .get_kernel_source()
    assert k.n_regs > 0 and k.n_max_threads == 128 and k.n_spills is not None


def test_print_tile_ir(capsys):
    cjit.compile(_scale_program(16, 5.0), out_idx=[1], target="cpu",
                 pass_configs={PassConfigKey.TL_AST_PRINT_ENABLE: True})
    assert "tile.kernel" in capsys.readouterr().out


# ---------------------------------------------------------------------------
# compile / jit
# ---------------------------------------------------------------------------


def test_compile_arguments():
    a = torch.randn(100)
    for backend in cjit.EXECUTION_BACKENDS:
        k = cjit.compile(_scale_program(100), out_idx=-1, target="c", execution_backend=backend,
                         target_host="llvm")
        torch.testing.assert_close(k(a), a * 2.0)
        assert k.execution_backend == backend and k.target_host == "llvm"
    with pytest.raises(ValueError, match="execution_backend 'bogus'"):
        cjit.compile(_scale_program(100), target="cpu", execution_backend="bogus")
    with pytest.raises(ValueError, match="target_host"):
        cjit.compile(_scale_program(100), target="cpu", target_host="cuda -arch=sm_80")


def test_jit_object_members_and_lazy_cache(tmp_path, caplog):
    calls = []

    @cjit.jit(out_idx=[-1], target="cpu", verbose=True, debug_root_path=str(tmp_path / "dbg"))
    def scale(n, factor=2.0, opts=None):
        calls.append(n)
        return _scale_program(n, factor)

    assert scale.mode == "auto" and scale.out_idx == [-1] and scale.verbose is True
    assert "def scale" in scale.func_source and list(scale.signature.parameters) == \
        ["n", "factor", "opts"]
    # As TileLang's JITImpl, no function wrapper: pytest leaves a jitted
    # `test_*` kernel uncollected (it would take its parameters for fixtures).
    from _pytest.compat import get_real_func

    assert scale.__name__ == "scale" and not inspect.isfunction(get_real_func(scale))
    with caplog.at_level(logging.INFO, logger="tilelang.jit.diagnostics"):
        k = scale(64)
    assert scale.mode == "lazy" and scale.is_lazy_mode()
    assert any("phase start" in r.message for r in caplog.records)
    assert sorted(os.listdir(tmp_path / "dbg")) == ["tilelang_jit_kernel_scale.ll",
                                                    "tilelang_jit_program_scale.mlir"]
    # every spelling of the same call is one kernel, elaborated once
    assert scale(64) is k and scale(n=64) is k and scale(64, 2.0) is k and calls == [64]
    key, runtime = scale.func.parse_args(64)
    assert key == ((64, 2.0, None), None) and runtime == {}
    assert scale.func.parse_args(64, opts=[1, {"a": 2}])[0] == ((64, 2.0, (1, (("a", 2),))),
                                                                 None)
    with pytest.raises(TypeError, match="missing a required argument"):
        scale.func.parse_args(factor=3.0)
    with pytest.raises(TypeError, match="unhashable"):
        scale(64, opts=[1])
    a = torch.randn(64)
    torch.testing.assert_close(k(a), a * 2.0)
    k3 = scale(64, 3.0)
    torch.testing.assert_close(k3(a), a * 3.0)
    assert "define" in scale.get_kernel_source(64, 3.0)
    assert scale(64, __return_compile_arguments=True)["out_idx"] == [-1]
    kernels = scale.par_compile([(32,), {"n": 48, "factor": 4.0}])
    b = torch.randn(48)
    torch.testing.assert_close(kernels[1](b), b * 4.0)
    assert kernels[0].params[0].shape == (32,)
    with pytest.raises(ValueError, match="Invalid config type"):
        scale.par_compile([32])
    assert cjit.par_compile([_scale_program(8), "not a program"], target="cpu",
                            ignore_error=True)[1] is None


def test_jit_rejects_bad_arguments_early():
    with pytest.raises(ValueError, match="execution_backend"):
        cjit.jit(lambda n: None, execution_backend="tvm")
    with pytest.raises(TileLangError, match="compile flag"):
        cjit.jit(lambda n: None, compile_flags=["--maxrregcount=64"])


# ---------------------------------------------------------------------------
# the kernel and its profiler
# ---------------------------------------------------------------------------


def test_kernel_sources_export_and_tuner_result(tmp_path, capsys):
    k = cjit.compile(_scale_program(96, 1.5), out_idx=[1], target="cpu")
    assert k.get_kernel_source(kernel_only=False) == k.kernel_source and "define" in \
        k.kernel_source
    host = k.get_host_source()
    assert "A: float32[96]" in host and "B: float32[96] (output)" in host and \
        host == k.host_source
    k.show_source("both")
    out = capsys.readouterr().out
    assert "Kernel Source" in out and "Host Source" in out
    k.export_sources(kernel_path=str(tmp_path / "k" / "main.ll"),
                     host_path=str(tmp_path / "h.txt"))
    assert (tmp_path / "k" / "main.ll").read_text() == k.kernel_source
    with pytest.raises(ValueError, match="At least one"):
        k.export_sources()
    with pytest.raises(TileLangError, match="PTX exists only for CUDA"):
        k.export_ptx(str(tmp_path / "x.ptx"))
    k.export_library(str(tmp_path / "lib"))
    loaded = tl.load(str(tmp_path / "lib"))
    a = torch.randn(96)
    torch.testing.assert_close(loaded(a), a * 1.5)
    with pytest.raises(ValueError, match="not available"):
        k.get_tuner_result()
    assert k.update_tuner_result(0.5, {"block": 32}, 0.7) is k
    assert k.get_tuner_result() == {"latency": 0.5, "config": {"block": 32},
                                    "ref_latency": 0.7}
    assert k.n_regs is None and k.resource_usage == {}


def test_null_tensor_argument():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), Bias: T.Tensor((64,), "float32"),
             C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                C[i] = A[i] + 1.0

    k = tl.compile(main, out_idx=[2], target="cpu")
    a = torch.randn(64)
    torch.testing.assert_close(k(a, None), a + 1.0)
    assert k.unused_params == {1}
    with pytest.raises(TypeError, match="'A' of kernel 'main' must be a tensor, got None"):
        k(None, a)


@pytest.mark.parametrize("rows", ["n", "expression"])
def test_null_strided_tensor_argument(rows):
    # deepseek-ai/TileKernels passes None for an optional scale tensor that
    # a StridedTensor annotation declares with a symbolic stride: its
    # metadata is read with the arguments, the tensor itself never. Its
    # rows may be an expression of a size symbol (parentheses in the IR's
    # signature: the scale rows of per_token_cast_kernel).
    n, st = T.dynamic("n"), T.dynamic("st")
    sf_rows = n if rows == "n" else (n + 31) // 32 * 32

    def program(with_sf):
        @T.prim_func
        def main(x: T.Tensor((n, 64), "float32"),
                 sf: T.StridedTensor((sf_rows, 4), (st, 1), "float32"),
                 y: T.Tensor((n, 64), "float32")):
            with T.Kernel(T.ceildiv(n, 32), threads=128) as bx:
                for i, j in T.Parallel(32, 64):
                    scale = sf[bx * 32 + i, j // 16] if with_sf else 2.0
                    y[bx * 32 + i, j] = x[bx * 32 + i, j] * scale

        return main

    x = torch.randn(64, 64)
    y = torch.zeros(64, 64)
    k = tl.compile(program(False), target="cpu")
    assert k.unused_params == {1}
    k(x, None, y)
    torch.testing.assert_close(y, 2 * x)
    used = tl.compile(program(True), target="cpu")
    assert used.unused_params == frozenset()
    with pytest.raises(TypeError, match="'sf' of kernel 'main' must be a tensor, got None"):
        used(x, None, y)


def test_null_tensor_that_declares_a_size_first():
    # TileKernels' reduce_fused: the optional weights come first and share
    # the token count with a later tensor; the kernel reads that count from
    # the first (the grid), so the null tensor takes its sizes from the
    # other arguments.
    n = T.dynamic("n")

    def program(with_weights):
        @T.prim_func
        def main(w: T.Tensor((n, 4), "float32"), x: T.Tensor((n, 4), "float32"),
                 y: T.Tensor((n, 4), "float32")):
            with T.Kernel(T.ceildiv(n, 32), threads=128) as bx:
                for i, j in T.Parallel(32, 4):
                    scale = w[bx * 32 + i, j] if with_weights else 3.0
                    y[bx * 32 + i, j] = x[bx * 32 + i, j] * scale

        return main

    k = tl.compile(program(False), target="cpu")
    assert k.unused_params == {0}
    x = torch.randn(100, 4)
    y = torch.zeros(100, 4)
    k(None, x, y)
    torch.testing.assert_close(y, 3 * x)
    assert tl.compile(program(True), target="cpu").unused_params == frozenset()


def test_profiler_members_and_dynamic_constraints():
    m = T.dynamic("m")

    @T.prim_func
    def main(A: T.Tensor((m,), "float32"), B: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < m:
                    B[bx * 32 + i] = A[bx * 32 + i] * 3.0

    k = tl.compile(main, out_idx=[1], target="cpu")
    prof = k.get_profiler(TensorSupplyType.Randn)
    (x,) = prof.random_inputs(dynamic_symbolic_constraints={"m": 77})
    assert x.shape == (77,)
    assert prof.do_bench(dynamic_symbolic_constraints={"m": 100}, n_warmup=1, n_repeat=2) > 0
    with pytest.raises(ValueError, match="'m' not found in constraints.*\\['n'\\]"):
        prof.do_bench(dynamic_symbolic_constraints={"n": 4})
    with pytest.raises(ValueError, match="symbolic"):
        prof.run_once()
    with pytest.raises(ValueError, match="positive int"):
        prof.random_inputs(dynamic_symbolic_constraints={"m": 0})
    fixed_kernel = tl.compile(_scale_program(64, 3.0), out_idx=[1], target="cpu")
    fixed = fixed_kernel.get_profiler()
    assert fixed.do_bench(func=fixed_kernel, n_warmup=1, n_repeat=2) > 0
    assert fixed.result_idx == [1] and len(fixed.params) == 2
    assert fixed.run_once().shape == (64,)
    fixed.assert_consistent(repeat=2)
    seen = []
    fixed.manual_assert_close(lambda A: A * 3.0,
                              manual_check_prog=lambda got, ref: seen.append(
                                  torch.allclose(got[0], ref[0])))
    assert seen == [True]
    with pytest.raises(ValueError, match="manual_check_prog"):
        fixed.manual_assert_close(lambda A: A)
    x = fixed.supply(fixed.params[0])
    assert x.shape == (64,)


# ---------------------------------------------------------------------------
# utils, env, testing
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(TensorSupplyType))
def test_get_tensor_supply(kind):
    from tilelang_mlir.base.signature import Param
    from tilelang_mlir.base import dtypes as dt

    supply = utils.get_tensor_supply(kind)
    x = supply(Param("A", "tensor", dt.float16, (32, 8)))
    assert x.shape == (32, 8) and x.dtype == torch.float16
    if kind == TensorSupplyType.Zero:
        assert not x.any()
    if kind == TensorSupplyType.Integer:
        assert set(x.unique().tolist()) <= {-2.0, -1.0, 0.0, 1.0, 2.0}
    with pytest.raises(ValueError, match="static shape"):
        supply(Param("A", "tensor", dt.float16, ("m",)))


def test_utils_helpers():
    assert utils.build_date("0.1.7.post3+cuda.d20260127.gita17230e4") == 20260127
    assert utils.build_date("0.1.7") is None
    f8 = torch.tensor([-0.0, 1.0, 0.0]).to(torch.float8_e4m3fn)
    assert utils.is_float8_dtype(f8.dtype) and not utils.is_float8_dtype(torch.float16)
    utils.fp8_remove_negative_zeros_(f8)
    assert f8.view(torch.uint8).tolist()[0] == 0

    @utils.deprecated("old", "new", "0.2")
    def old(x):
        return x + 1

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert old(1) == 2
    assert "old is deprecated, use new instead and will be removed in 0.2" in str(w[0].message)
    assert utils.get_available_cpu_count() >= 1


def test_env_settings(monkeypatch, tmp_path):
    env = compat_env.env
    monkeypatch.setenv("TILELANG_COMPILE_TIMEOUT_SECONDS", "2.5")
    assert env.get_compile_timeout_seconds() == 2.5
    monkeypatch.setenv("TILELANG_COMPILE_TIMEOUT_SECONDS", "0")
    assert env.get_compile_timeout_seconds() is None
    monkeypatch.setenv("TILELANG_COMPILE_TIMEOUT_SECONDS", "-1")
    with pytest.raises(ValueError, match="non-negative"):
        env.get_compile_timeout_seconds()
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", '{"kind": "cuda", "arch": "sm_80"}')
    assert env.get_default_target() == {"kind": "cuda", "arch": "sm_80"}
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "llvm")
    k = cjit.compile(_scale_program(8), out_idx=[1])  # target None: the environment's
    assert k.device == "cpu"
    monkeypatch.setenv("TILELANG_VERBOSE", "yes")
    assert env.get_default_verbose()
    monkeypatch.setenv("TL_LOWER_TRACE", "1")
    monkeypatch.setenv("TL_LOWER_TRACE_DIR", str(tmp_path / "trace"))
    assert env.get_lower_trace_mode() == "html"
    assert compat_env.compile_settings()["tl.trace_dir"] == str(tmp_path / "trace")
    cjit.compile(_scale_program(24), out_idx=[1], target="cpu")
    assert sorted(os.listdir(tmp_path / "trace"))[0].startswith("00-tile")
    monkeypatch.setenv("TL_LOWER_TRACE", "0")
    monkeypatch.delenv("TILELANG_MLIR_CACHE_DIR", raising=False)
    monkeypatch.delenv("TILELANG_CACHE_DIR", raising=False)
    try:
        env.TILELANG_CACHE_DIR = str(tmp_path / "cache")
        assert os.environ["TILELANG_MLIR_CACHE_DIR"] == str(tmp_path / "cache")
        from tilelang_mlir.compiler import compile as _compile

        assert _compile.cache_dir() == str(tmp_path / "cache")
        assert env.TILELANG_TMP_DIR == os.path.join(str(tmp_path / "cache"), "tmp")
    finally:
        compat_env.Environment.TILELANG_CACHE_DIR = None  # the descriptor's forced value
    env.disable_cache()
    try:
        assert not env.is_cache_enabled()
    finally:
        env.enable_cache()


def test_ptxas_timeout_setting(monkeypatch):
    from tilelang_mlir.base.errors import CompilationError
    from tilelang_mlir.compiler import cuda

    monkeypatch.setenv("TILELANG_COMPILE_TIMEOUT_SECONDS", "12")
    assert cuda.ptxas_timeout() == 12.0
    monkeypatch.setenv("TILELANG_MLIR_PTXAS_TIMEOUT", "bad")
    with pytest.raises(CompilationError, match="TILELANG_MLIR_PTXAS_TIMEOUT='bad'"):
        cuda.ptxas_timeout()


_LATENCIES = iter([0.0, 2.5, 2.5])


def regression_fast():
    ctesting.process_func(lambda: next(_LATENCIES), "fast")


def regression_other():
    ctesting.process_func(lambda: 1.0, "other")


def test_regression_and_process_func(monkeypatch, capsys):
    monkeypatch.setenv("TL_PERF_REGRESSION_ONLY", "fast")
    ctesting.regression(verbose=False)
    assert capsys.readouterr().out.strip().splitlines() == ["fast: 2.5"]  # the 0.0 is retried
    monkeypatch.setenv("TL_PERF_REGRESSION_ONLY", "")
    monkeypatch.setenv("TL_PERF_REGRESSION_FORMAT", "json")
    ctesting.regression(verbose=False)
    out = capsys.readouterr().out
    assert out.startswith("__TILELANG_PERF_RESULTS_JSON__=") and '"name":"other"' in out


# ---------------------------------------------------------------------------
# layouts and intrinsics helpers
# ---------------------------------------------------------------------------


def test_mma_fragment_maps_cover_the_tiles():
    # Every (lane, register) of a warp maps to a distinct element of the tile.
    seen = {intrinsics.mma_store_index_map(t, r) for t in range(32) for r in range(8)}
    assert seen == {(i, j) for i in range(16) for j in range(16)}
    for transposed in (False, True):
        got = {intrinsics.get_ldmatrix_offset("A", t, r, 16, "float16", transposed)
               for t in range(32) for r in range(8)}
        assert got == {(i, j) for i in range(16) for j in range(16)}
    a8 = {intrinsics.get_ldmatrix_offset("A", t, r, 32, "int8") for t in range(32)
          for r in range(16)}
    assert a8 == {(i, j) for i in range(16) for j in range(32)}
    b32 = {intrinsics.get_ldmatrix_offset("B", t, r, 8, "float32", True) for t in range(32)
           for r in range(4)}
    assert b32 == {(i, j) for i in range(16) for j in range(8)}
    with pytest.raises(ValueError, match="A non-transposed"):
        intrinsics.get_ldmatrix_offset("A", 0, 0, 8, "float32", True)
    assert intrinsics.get_mma_micro_size("int8") == (16, 16, 32)
    assert intrinsics.get_mma_micro_size("float16") == (16, 16, 16)


@pytest.mark.parametrize("row_elems, span", [(64, 128), (32, 64), (16, 32)])
def test_swizzle_layout_is_a_permutation_within_rows(row_elems, span):
    rows = 16
    for r in range(rows):
        cols = set()
        for c in range(row_elems):
            tile, row, col = intrinsics.get_swizzle_layout(r, c, row_elems, "float16")
            assert row == r and tile == 0
            cols.add(col)
        assert cols == set(range(row_elems))
    # chunks of 16 bytes move together: the XOR acts on chunk indices, and the
    # first chunk of some row of every group of 8 moves
    moved = [intrinsics.get_swizzle_layout(r, 0, row_elems, "float16")[2] for r in range(8)]
    assert all(c % 8 == 0 for c in moved) and any(moved)
    assert len(set(moved)) == span // 16


def test_layout_constructors_compile_and_run():
    a = torch.randn(128, 64, dtype=torch.float16)
    b = torch.randn(64, 128, dtype=torch.float16)
    for make in (intrinsics.make_mma_swizzle_layout, layout.make_swizzled_layout,
                 layout.make_wgmma_swizzled_layout, layout.make_half_bank_swizzled_layout,
                 layout.make_linear_layout, layout.make_full_bank_swizzled_layout):
        prog = _gemm_program(128, 128, 64, swizzle=make)
        c = torch.empty(128, 128)
        tl.compile(prog, target="cpu")(a, b, c)
        assert_float32_matmul(c, a, b)  # float32 sums of exact float16 products
        assert ".target sm_90a" in tl.compile(prog, target="cuda:sm_90a").get_source()
    assert layout.SwizzleMode.SWIZZLE_64B.swizzle_byte_size() == 64
    assert layout.SwizzleMode.from_ordinal(3).wgmma_layout_type() == 1
    assert layout.SwizzleMode.NONE.swizzle_atom_size() == 1


def test_fragment_constructors():
    f = layout.make_gemm_fragment_8x8()
    assert f.shape == [8, 8] and "d1 floordiv 2" in f.map.replace("(", "").replace(")", "")
    ft = layout.make_gemm_fragment_8x8_transposed()
    assert "d0 floordiv 2" in ft.map.replace("(", "").replace(")", "")
    rep = layout.make_fully_replicated_layout_fragment([4, 2], 64)
    assert rep.replicate == 64 and "s0" in rep.map

    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=64):
            frag = T.alloc_fragment((4,), "float32")
            T.annotate_layout({frag: layout.make_fully_replicated_layout_fragment(frag, 64)})
            T.copy(A, frag)
            for j in T.Parallel(4):
                B[j] = frag[j] * 2.0

    a = torch.randn(4)
    b = torch.empty(4)
    tl.compile(main, target="cpu")(a, b)
    torch.testing.assert_close(b, a * 2.0)
    assert ".target sm_80" in tl.compile(main, target="cuda:sm_80").get_source()


# ---------------------------------------------------------------------------
# through `import tilelang`
# ---------------------------------------------------------------------------


def test_module_paths_of_every_release(tmp_path):
    proc = run_compat("""
    import torch
    import tilelang
    from tilelang.utils.target import determine_target as old
    from tilelang.backend.target import determine_target as new
    assert old is new and old("llvm") == "llvm"
    from tilelang.jit.kernel import JITKernel
    from tilelang.jit.diagnostics import jit_phase
    from tilelang.autotuner.param import CompileArgs, ProfileArgs, AutotuneResult
    from tilelang.autotuner import param
    assert param.CompileArgs is CompileArgs
    from tilelang.intrinsics import make_mma_swizzle_layout, get_swizzle_layout
    from tilelang.cuda.intrinsics import make_mma_swizzle_layout as m2
    from tilelang.cuda.intrinsics.layout.utils import mma_store_index_map
    assert m2 is make_mma_swizzle_layout
    from tilelang.layout.swizzle import make_full_bank_swizzled_layout
    from tilelang.layout import SwizzleMode, Layout, Fragment
    from tilelang.cuda import language as CT
    from tilelang.language.common import copy as c1
    import tilelang.language as T
    assert CT.copy is T.copy and c1 is T.copy
    assert T.make_mma_swizzle_layout is make_mma_swizzle_layout
    assert isinstance(T.dynamic("q"), T.PrimExpr)
    from tilelang import tvm
    import tvm as real_name
    assert real_name is tvm and tvm.tirx is tvm.tir
    from tvm.target import Target
    assert Target("cuda -arch=sm_90").ours.arch == "sm_90a"
    import tvm.testing
    assert tvm.testing.requires_package is tilelang.testing.requires_package
    from tilelang.env import env
    assert env.is_cache_enabled() and tilelang.env.is_cache_enabled()
    from tilelang.utils.tensor import get_tensor_supply
    from tilelang.profiler import get_tensor_supply as g2
    assert g2 is get_tensor_supply
    from tilelang.carver import MatmulTemplate, TileDevice, CUDA
    assert issubclass(CUDA, TileDevice)
    import importlib
    for gone in ("tilelang.engine.lower", "tilelang.jit.adapter.cython", "tvm.relax",
                 "tilelang.metal", "tilelang.transform.simplify"):
        mod = importlib.import_module(gone)  # out of scope: refused at a name's use
        try:
            mod.anything()
            raise SystemExit(gone + ".anything ran")
        except ImportError as e:
            assert "not supported by tilelang-mlir: " + gone + ".anything" in str(e), (gone, e)
    print("PATHS OK")
    """, tmp_path)
    assert proc.returncode == 0 and "PATHS OK" in proc.stdout, proc.stdout + proc.stderr


def test_autotune_do_not_specialize(tmp_path):
    proc = run_compat("""
    import torch, tilelang, tilelang.language as T

    @tilelang.autotune(configs=[{"block": 32}, {"block": 64}], do_not_specialize=["n"],
                       warmup=1, rep=2)
    @tilelang.jit(out_idx=[-1], target="cpu")
    def add1(n, scale=1.0, block=32):
        @T.prim_func
        def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
            with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
                for i in T.Parallel(block):
                    if bx * block + i < n:
                        B[bx * block + i] = A[bx * block + i] * scale + 1.0
        return main

    if __name__ == "__main__":
        k1 = add1(256)
        k2 = add1(n=500)  # n is not specialized: the first call's config, no new tuning
        assert len(add1._tuner_cache) == 1, add1._tuner_cache
        k3 = add1(256, 2.0)  # scale is: a new entry
        assert len(add1._tuner_cache) == 2
        for k, n, s in ((k1, 256, 1.0), (k2, 500, 1.0), (k3, 256, 2.0)):
            x = torch.randn(n)
            torch.testing.assert_close(k(x), x * s + 1.0)
        try:
            tilelang.autotune(configs=[{"block": 32}], do_not_specialize=["nope"])(
                tilelang.jit(out_idx=[-1], target="cpu")(add1.factory))
            raise SystemExit("no error")
        except ValueError as e:
            assert "'nope'" in str(e)
        print("DNS OK")
    """, tmp_path)
    assert proc.returncode == 0 and "DNS OK" in proc.stdout, proc.stdout + proc.stderr


_SCALAR_TUNE = """
import os, sys, torch, tilelang, tilelang.language as T
from tilelang.autotuner import set_autotune_inputs

@tilelang.autotune(configs=[{"block": 32}, {"block": 64}], warmup=1, rep=2)
@tilelang.jit(target="cpu")
def add_s(n: int = 256, block: int = 32):
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), s: T.float32):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                A[bx * block + i] += s
    return main

if __name__ == "__main__":
    if sys.argv[1] == "inputs":
        a, s = torch.randn(256), float(torch.rand(()))
        with set_autotune_inputs(a, s):
            k = add_s()
        b = torch.randn(256)
        want = b + s
        k(b, s)
        torch.testing.assert_close(b, want)
        print("SCALAR OK")
        sys.exit(0)
    try:  # a fresh process: the captured run left no tuning result
        add_s()
        raise SystemExit("tuned a scalar input without set_autotune_inputs")
    except ValueError as e:
        assert "set_autotune_inputs" in str(e), e
    print("SCALAR OK")
"""


def test_autotune_with_captured_inputs_keeps_no_cache_entry(tmp_path):
    """As TileLang: a tuning run on inputs of set_autotune_inputs (or with
    ref_prog / supply_prog / manual_check_prog) neither reads nor writes
    the tuning cache, so a later call without inputs (another process, same
    cache) still needs them."""
    path = tmp_path / "tune_scalar.py"
    path.write_text(_SCALAR_TUNE)
    env = dict(os.environ, TILELANG_MLIR_CACHE_DIR=str(tmp_path / "cache"))
    for mode in ("inputs", "plain"):
        proc = subprocess.run([sys.executable, "-m", "tilelang_mlir.compat", str(path), mode],
                              capture_output=True, text=True, env=env, cwd=str(tmp_path))
        assert proc.returncode == 0 and "SCALAR OK" in proc.stdout, proc.stdout + proc.stderr
    assert not os.path.isdir(tmp_path / "cache" / "autotune") or \
        not [f for f in os.listdir(tmp_path / "cache" / "autotune") if f.endswith(".json")]


def test_legacy_autotuner_jit(tmp_path):
    """TileLang 0.1.0 to 0.1.4's tuning API (tile-ai's own benchmark
    scripts use it): `@autotune(configs, keys=...)` above
    `@tilelang.autotuner.jit(out_idx, supply_type, ref_prog, ...)`; the call
    tunes, checks each config against ref_prog and returns a result that
    unpacks as (latency, config, ref_latency). A jit function alone returns
    a JITContext with the compiled kernel."""
    proc = run_compat("""
        import torch
        import tilelang
        import tilelang.language as T
        from tilelang.autotuner import autotune, jit

        def ref(A):
            return A * 3.0

        def scaled(n, block, factor):
            @T.prim_func
            def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
                with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
                    for i in T.Parallel(block):
                        B[bx * block + i] = A[bx * block + i] * factor
            return main

        @autotune(configs=[{"block": 32}, {"block": 64}], keys=["block"], warmup=1, rep=2)
        @jit(out_idx=[1], supply_type=tilelang.TensorSupplyType.Normal, ref_prog=ref,
             target="cpu")
        def scale(n, block=None):
            return scaled(n, block, 3.0)

        @jit(out_idx=[1], target="cpu")
        def wrong(n=64, block=32):  # (2x: fails ref's check)
            return scaled(n, block, 2.0)

        if __name__ == "__main__":  # (the compile workers import this file)
            result = scale(256)
            best_latency, best_config, ref_latency = result
            assert best_config in ({"block": 32}, {"block": 64}), best_config
            assert best_latency == result.latency > 0 and ref_latency == result.ref_latency > 0
            a = torch.randn(256)
            torch.testing.assert_close(result.kernel(a), a * 3.0)

            ctx = wrong()
            assert ctx.out_idx == [1] and ctx.target == "cpu" and not ctx.skip_check
            a = torch.randn(64)
            torch.testing.assert_close(ctx.kernel(a), a * 2.0)
            assert len(ctx.profiler._get_inputs()) == 1
            assert len(ctx.profiler._get_inputs(with_output=True)) == 2
            try:  # every config fails the reference check: no result
                autotune(configs=[{"block": 32}], warmup=1, rep=2)(
                    jit(out_idx=[1], ref_prog=ref, target="cpu")(wrong.__wrapped__))()
                raise SystemExit("a config that fails its check was kept")
            except Exception as e:
                assert "passed the check" in str(e) and "block=32" in str(e), e
            print("LEGACY OK")
    """, tmp_path)
    assert proc.returncode == 0 and "LEGACY OK" in proc.stdout, proc.stdout + proc.stderr


def test_plot_layout_of_layout_objects(tmp_path, capsys):
    from tilelang_mlir.compat import tools

    transpose = T.Layout([4, 8], lambda i, j: (j, i))
    paths = tools.plot_layout(transpose, save_directory=str(tmp_path), name="t",
                              formats=["png", "svg"], verbose=True)
    assert [os.path.basename(p) for p in paths] == ["t.png", "t.svg"]
    assert all(os.path.getsize(p) > 1000 for p in paths)
    out = capsys.readouterr().out
    assert "(1, 2) -> 2,1" in out and "(3, 7) -> 7,3" in out
    frag = layout.make_gemm_fragment_8x8()
    threads, regs = tools._fragment_values(frag)
    assert threads[8 * 3 + 5] == 5 // 2 + 4 * 3 and regs[8 * 3 + 5] == 5 % 2
    assert tools.plot_layout(frag, save_directory=str(tmp_path), name="f", formats="all")
    with pytest.raises(ValueError, match="'jpg' is not one of"):
        tools.plot_layout(transpose, save_directory=str(tmp_path), formats="jpg")
    with pytest.raises(TypeError, match="a T.Layout, a T.Fragment"):
        tools.plot_layout(object())


def test_cpu_emulation_of_cuda_generators_and_memory_queries():
    code = """
from tilelang_mlir.compat import emulate
emulate.cpu()
import torch
g = torch.Generator(device="cuda")
g.manual_seed(7)
a = torch.randn(4, generator=g)
g2 = torch.Generator(device="cuda:0"); g2.manual_seed(7)
assert torch.equal(a, torch.randn(4, generator=g2)) and a.device.type == "cpu"
assert isinstance(g, torch.Generator) and (torch.Generator | None) is not None
free, total = torch.cuda.mem_get_info()
assert 0 < free <= total
with torch.cuda.device(0):
    pass
print("EMU OK")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and "EMU OK" in proc.stdout, proc.stdout + proc.stderr


# ---------------------------------------------------------------------------
# refusals name their rule
# ---------------------------------------------------------------------------


def test_refused_members_and_internals_name_their_rule(tmp_path):
    """TileLang's refused kernel, profiler and tuner members, and the
    internals of a partly served module, raise AttributeError with the
    reason and '(out of scope: <rule>)'; other missing names do not claim a
    rule."""
    proc = run_compat("""
        import numpy as np
        import tilelang
        import tilelang.language as T
        from tilelang.autotuner import AutoTuner
        from tilelang.contrib import nvcc  # reached as an attribute first

        @tilelang.jit(out_idx=[-1], target="cpu")
        def scale(n: int = 16):
            @T.prim_func
            def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
                with T.Kernel(1, threads=n):
                    for i in T.Parallel(n):
                        B[i] = A[i] * 3.0
            return main

        k = scale(16)
        a = np.random.randn(16).astype(np.float32)
        np.testing.assert_allclose(np.asarray(k(a)), a * 3.0, rtol=1e-6)
        checks = [(k, "adapter"), (k.get_profiler(), "with_default_adapter"),
                  (AutoTuner.from_kernel(scale, configs=[{"n": 16}]), "jit_compile"),
                  (nvcc, "compile_cuda"), (nvcc, "env")]
        for obj, name in checks:
            try:
                getattr(obj, name)
                raise SystemExit(f"{name} did not raise")
            except AttributeError as e:
                assert "(out of scope: " in str(e) and name in str(e), (name, str(e))
        for obj, name in ((k, "no_such_member"), (T, "shfl_sync_not_a_name")):
            try:
                getattr(obj, name)
                raise SystemExit(f"{name} did not raise")
            except AttributeError as e:
                assert "out of scope" not in str(e), str(e)
        assert nvcc.get_target_compute_version("cuda:sm_90a") == "9.0"
        # internals of TileLang's frontend modules are refused with the
        # module's rule; a T name (pending or unknown) claims none
        imports = {"from tilelang.language.eager.ast import mutate": True,
                   "from tilelang.language.tir.exports import BACKEND_ONLY_TIR_EXPORTS": True,
                   "from tilelang.language import ptx_ldmatrix": True,
                   "from tilelang.language import not_a_t_name": False,
                   "from tilelang.language.tir.exports import not_a_t_name": True}
        for stmt, ruled in imports.items():
            try:
                exec(stmt)
                raise SystemExit(f"{stmt} imported")
            except ImportError as e:
                assert ("(out of scope: " in str(e)) == ruled, (stmt, str(e))
        # a refused T name used in a program: its reason and rule, at its line
        @tilelang.jit(target="cpu")
        def uses_refused(n: int = 16):
            @T.prim_func
            def main(A: T.Tensor((n,), "float32")):
                with T.Kernel(1, threads=n):
                    T.ptx_ldmatrix(A)
            return main

        from tilelang_mlir.base.errors import TileLangError
        try:
            uses_refused()
            raise SystemExit("T.ptx_ldmatrix compiled")
        except TileLangError as e:
            assert "T.ptx_ldmatrix" in str(e) and "(out of scope: " in str(e), str(e)
            assert "prog.py" in str(e), str(e)
        print("RULES OK")
    """, tmp_path)
    assert proc.returncode == 0 and "RULES OK" in proc.stdout, proc.stdout + proc.stderr


def test_every_refusal_reason_has_one_of_the_rules():
    from tilelang_mlir.compat import refusals

    rules = {refusals.RULE_TVM, refusals.RULE_HARDWARE, refusals.RULE_INTERNALS}
    reasons = [w for table in refusals.REFUSED.values() for w in table.values()]
    reasons += list(refusals.MODULE_PREFIXES.values())
    for why in reasons:
        assert refusals.rule(why) in rules, why
    text = refusals.message("tilelang.utils", "is_shared")
    assert text.endswith(f"(out of scope: {refusals.RULE_TVM})"), text
    assert refusals.rule(refusals.BLACKWELL) == refusals.RULE_HARDWARE
    assert refusals.rule(refusals.ADAPTER) == refusals.RULE_INTERNALS
    # a pending or unknown name claims no rule
    assert "out of scope" not in refusals.message("tilelang.language", "shfl_sync")
    assert "out of scope" not in refusals.message("tilelang.language", "not_a_name")


def test_get_tir_of_an_eager_function_before_any_call(tmp_path):
    """`jit_fn.get_tir(T.Tensor(shape), ...)` elaborates an eager-style
    function from annotations alone, also as its first use (the JIT
    object learns the style then); the program compiles and copies."""
    proc = run_compat("""
        import numpy as np, tilelang, tilelang.language as T

        @tilelang.jit(target="cpu")
        def copy1(A, B):
            N, M = T.const("N, M")
            A: T.Tensor[[N, M], T.float32]
            B: T.Tensor[[N, M], T.float32]
            with T.Kernel(T.ceildiv(N, 16), threads=16) as bx:
                for i, j in T.Parallel(16, M):
                    B[bx * 16 + i, j] = A[bx * 16 + i, j] * 2.0

        prog = copy1.get_tir(T.Tensor((48, 8)), T.Tensor((48, 8)))
        k = tilelang.compile(prog, target="cpu")
        a = np.random.randn(48, 8).astype(np.float32)
        b = np.zeros_like(a)
        k(a, b)
        np.testing.assert_allclose(b, a * 2.0, rtol=1e-6)
        try:
            tilelang.jit(target="cpu")(lambda n: None)._eager()
            raise SystemExit("no error")
        except TypeError as e:
            assert "not an eager-style function" in str(e), e
        print("GET_TIR OK")
    """, tmp_path)
    assert proc.returncode == 0 and "GET_TIR OK" in proc.stdout, proc.stdout + proc.stderr


def test_cdiv_of_an_eager_programs_sizes(tmp_path):
    """tilelang.cdiv of a T.const before the call binds it is the expression
    (a + b - 1) // b, as TileLang computes it (DeepSeek's NSA backward sizes
    its block mask so); of integers, an integer."""
    proc = run_compat("""
    import torch, tilelang, tilelang.language as T

    assert tilelang.cdiv(10, 4) == 3 and tilelang.cdiv(8, 4) == 2

    @tilelang.jit(target="cpu")
    def masked(X, Mask, block=64):
        n = T.const("n")
        X: T.Tensor((n,), T.float32)
        Mask: T.Tensor((tilelang.cdiv(n, block),), T.int32)
        Y = T.empty((n,), T.float32)
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                Y[i] = X[i] * Mask[i // block]
        return Y

    x = torch.randn(200)
    mask = torch.tensor([1, 0, 1, 1], dtype=torch.int32)
    y = masked(x, mask)
    assert torch.equal(y, x * mask.repeat_interleave(64)[:200])
    try:
        masked(x, torch.ones(3, dtype=torch.int32))
        raise SystemExit("a mask of 3 blocks for 200 elements was accepted")
    except (ValueError, TypeError) as e:
        assert "Mask" in str(e), e
    print("CDIV OK")
    """, tmp_path)
    assert proc.returncode == 0 and "CDIV OK" in proc.stdout, proc.stdout + proc.stderr
