"""Kernel objects: argument checking, caches, jit, stages, lower trace."""

import os

import numpy as np
import pytest
import torch

from tilelang_mlir.kernels import programs as kernels
import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.frontend.errors import CompilationError


@pytest.fixture(scope="module")
def add_kernel():
    return tl.compile(kernels.elementwise_add(32, 48, 16, 16), out_idx=[2], target="cpu")


def test_wrong_dtype_names_the_argument(add_kernel):
    a = np.zeros((32, 48), np.float32)
    with pytest.raises(TypeError, match="argument 'B' of kernel 'main' must have dtype float32, got float64"):
        add_kernel(a, np.zeros((32, 48), np.float64))


def test_wrong_shape_and_rank(add_kernel):
    a = np.zeros((32, 48), np.float32)
    with pytest.raises(ValueError, match=r"argument 'A' of kernel 'main' must have shape \(32, 48\), got \(48, 32\)"):
        add_kernel(np.zeros((48, 32), np.float32), a)
    with pytest.raises(ValueError, match="argument 'B' of kernel 'main' must have rank 2"):
        add_kernel(a, np.zeros((32, 48, 1), np.float32))


def test_non_contiguous_is_rejected(add_kernel):
    a = np.zeros((32, 48), np.float32)
    t = np.zeros((48, 32), np.float32).T
    with pytest.raises(ValueError, match="argument 'B' of kernel 'main' must be contiguous"):
        add_kernel(a, t)
    with pytest.raises(ValueError, match="must be contiguous"):
        add_kernel(a, torch.zeros(48, 32).t())


def test_argument_count_and_kind(add_kernel):
    a = np.zeros((32, 48), np.float32)
    with pytest.raises(TypeError, match=r"kernel 'main' takes 2 argument\(s\) \(A, B\), got 1"):
        add_kernel(a)
    with pytest.raises(TypeError, match=r"takes 2 argument\(s\) \(A, B\), got 3"):
        add_kernel(a, a, a)
    with pytest.raises(TypeError, match="argument 'A' of kernel 'main' must be a NumPy array or a torch tensor, got list"):
        add_kernel([[0.0] * 48] * 32, a)


def test_scalar_argument_checks():
    @T.prim_func
    def main(X: T.Tensor((4,), "int32"), n: T.int32):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(4):
                X[i] = n

    kernel = tl.compile(main, target="cpu")
    x = np.zeros(4, np.int32)
    with pytest.raises(TypeError, match="argument 'n' of kernel 'main' must be an integer, got float"):
        kernel(x, 1.5)
    with pytest.raises(ValueError, match="does not fit in int32"):
        kernel(x, 2 ** 40)
    kernel(x, 7)
    np.testing.assert_array_equal(x, [7] * 4)


def test_out_idx_validation():
    program = kernels.elementwise_add(8, 8, 8, 8)
    with pytest.raises(ValueError, match="out_idx 3 is out of range for 3 arguments"):
        tl.compile(program, out_idx=[3], target="cpu")
    kernel = tl.compile(program, out_idx=-1, target="cpu")
    a = np.ones((8, 8), np.float32)
    np.testing.assert_array_equal(kernel(a, a), 2 * a)


def test_unknown_pass_config():
    with pytest.raises(ValueError, match="unknown pass config 'tl.no_such_pass_config'"):
        tl.compile(kernels.elementwise_add(8, 8, 8, 8), target="cpu",
                   pass_configs={"tl.no_such_pass_config": True})


def test_unknown_target():
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        tl.compile(kernels.elementwise_add(8, 8, 8, 8), target="tpu")


def test_rocm_targets_are_the_cdna_chips():
    from tilelang_mlir.compiler.target import ROCM_ARCHS, parse_target

    assert ROCM_ARCHS == ("gfx90a", "gfx942", "gfx950")
    assert [str(parse_target(f"rocm:{a}")) for a in ROCM_ARCHS] == [f"rocm:{a}" for a in
                                                                     ROCM_ARCHS]
    assert str(parse_target("rocm")) == "rocm:gfx942" == str(parse_target("hip:gfx942"))
    # RDNA (wave32, no MFMA) and unknown chips would abort inside LLVM.
    for bad in ("rocm:gfx1100", "rocm:gfx9999", "rocm:gfx908"):
        with pytest.raises(ValueError, match="CDNA chips gfx90a, gfx942, gfx950"):
            parse_target(bad)


def test_cuda_targets_are_the_known_chips(monkeypatch):
    """An unknown or malformed CUDA chip is one ValueError listing the chips
    the backend compiles for, before any pass runs (LLVM's NVPTX backend
    aborts the process on sm_999 and on Blackwell with PTX 8.1)."""
    from tilelang_mlir.compiler.target import CUDA_ARCHS, parse_target

    assert CUDA_ARCHS == ("sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a")
    for arch in CUDA_ARCHS:
        assert str(parse_target(f"cuda:{arch}")) == f"cuda:{arch}"
        assert str(parse_target(f" CUDA:{arch.upper()} ")) == f"cuda:{arch}"
    listed = "sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a"
    for bad in ("cuda:sm_999", "cuda:sm_100", "cuda:sm_120", "cuda:sm_80a", "cuda:sm_91"):
        with pytest.raises(ValueError, match=f"is an unknown chip; the CUDA backend compiles "
                                             f"for {listed}"):
            tl.compile(kernels.elementwise_add(8, 8, 8, 8), target=bad)
    for bad in ("cuda:sm90", "cuda:90a", "cuda:sm_90a:x", "cuda: sm_90a", "cuda:gfx942"):
        with pytest.raises(ValueError, match=f"is not a chip name .*compiles for {listed}"):
            parse_target(bad)
    with pytest.raises(ValueError, match=f"names no chip.*{listed}"):
        parse_target("cuda:")
    with pytest.raises(ValueError, match=f"sm_75 or newer is needed .*{listed}"):
        parse_target("cuda:sm_70")
    with pytest.raises(ValueError, match="'rocm:sm_90a' is malformed.*gfx90a, gfx942, gfx950"):
        parse_target("rocm:sm_90a")
    with pytest.raises(ValueError, match=f"unknown target 'cud:sm_90a'.*{listed}"):
        parse_target("cud:sm_90a")
    # The chip of "auto"/"cuda" without a GPU comes from the environment.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("TILELANG_MLIR_CUDA_ARCH", "sm_999")
    for target in ("auto", "cuda"):
        with pytest.raises(ValueError, match="TILELANG_MLIR_CUDA_ARCH.*unknown chip"):
            parse_target(target)
    monkeypatch.setenv("TILELANG_MLIR_CUDA_ARCH", "sm_89")
    assert str(parse_target("auto")) == "cuda:sm_89"


def test_memory_cache_returns_the_same_kernel():
    k1 = tl.compile(kernels.elementwise_add(8, 16, 8, 8), out_idx=[2], target="cpu")
    k2 = tl.compile(kernels.elementwise_add(8, 16, 8, 8), out_idx=[2], target="cpu")
    assert k1 is k2
    k3 = tl.compile(kernels.elementwise_add(8, 24, 8, 8), out_idx=[2], target="cpu")
    assert k3 is not k1


def test_disk_cache_round_trip(tmp_path, monkeypatch, rng):
    from tilelang_mlir.compiler import compile as compile_mod

    monkeypatch.setenv("TILELANG_MLIR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TILELANG_MLIR_DISABLE_CACHE", raising=False)
    program = kernels.softmax(8, 16, 8)
    k1 = tl.compile(program, out_idx=[1], target="cpu")
    files = [f for f in os.listdir(tmp_path) if f.endswith(".json")]
    assert len(files) == 1
    # A fresh process would start with an empty memory cache.
    compile_mod._MEMORY_CACHE.clear()
    calls = []
    monkeypatch.setattr(compile_mod, "_lower", lambda *a: calls.append(a))
    k2 = tl.compile(program, out_idx=[1], target="cpu")
    assert calls == [] and k2 is not k1
    x = rng.standard_normal((8, 16)).astype(np.float32)
    np.testing.assert_array_equal(k1(x), k2(x))


def test_stages_and_source():
    kernel = tl.compile(kernels.elementwise_add(8, 8, 8, 8), out_idx=[2], target="cpu")
    assert kernel.stages == ["tile", "tile-opt", "loops", "llvm"]
    assert "tile.kernel" in kernel.mlir("tile")
    assert "tile." not in kernel.mlir("loops") and "scf.for" in kernel.mlir("loops")
    assert "llvm.func @main" in kernel.mlir("llvm")
    assert "define void @main" in kernel.get_source()
    with pytest.raises(KeyError, match="unknown stage 'ptx'"):
        kernel.mlir("ptx")


def test_lower_trace_writes_every_pass(tmp_path):
    kernel = tl.compile(kernels.elementwise_add(8, 8, 8, 8), out_idx=[2], target="cpu",
                        pass_configs={"tl.trace_dir": str(tmp_path)})
    files = sorted(os.listdir(tmp_path))
    assert files[0] == "00-tile.mlir"
    assert any("convert-tile-to-scf" in f for f in files)
    assert files[-1].endswith("canonicalize.mlir") and len(files) > 8
    with open(tmp_path / files[0]) as f:
        assert "tile.kernel" in f.read()
    a = np.ones((8, 8), np.float32)
    np.testing.assert_array_equal(kernel(a, a), 2 * a)


def test_lower_trace_holds_only_the_last_compile(tmp_path):
    """A second compile into the same trace folder replaces the numbered
    dumps of the first (a shorter pipeline leaves no stale steps behind);
    other files stay."""
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "99-stale-pass.mlir").write_text("from an older compile")
    tl.compile(kernels.elementwise_add(8, 8, 8, 8), out_idx=[2], target="cpu",
               pass_configs={"tl.trace_dir": str(tmp_path)})
    first = sorted(os.listdir(tmp_path))
    assert "99-stale-pass.mlir" not in first and "notes.txt" in first
    tl.compile(kernels.elementwise_add(8, 8, 8, 8), out_idx=[2], target="cuda:sm_80",
               pass_configs={"tl.trace_dir": str(tmp_path)})
    second = sorted(os.listdir(tmp_path))
    assert "notes.txt" in second
    dumps = [f for f in second if f.endswith(".mlir")]
    assert any("convert-tile-to-nvvm" in f for f in dumps)
    assert not any("convert-tile-to-scf" in f for f in dumps), dumps
    steps = [int(f.split("-")[0]) for f in dumps]
    assert steps == list(range(len(dumps)))


def test_compiler_id_ignores_broken_symlinks(monkeypatch, tmp_path):
    """An editor's lock file (a dangling symlink such as `.#compile.py`) or a
    file that vanishes next to the compiler's sources must not break
    compiles; the id still tracks the real sources. Where the compiler's
    folder cannot be written (a read-only install), its listing shows the
    same names instead: entries that cannot be stat'ed either way. An
    OSError of `_compiler_id` itself (the regression) fails the test."""
    from tilelang_mlir.compiler import compile as compile_mod

    here = os.path.dirname(compile_mod.__file__)
    before = compile_mod._compiler_id()
    names = [".#compile.py", "zz_gone.py"]
    links = [os.path.join(here, name) for name in names]
    try:
        try:
            for link in links:
                os.symlink(str(tmp_path / "missing"), link)
        except OSError:
            listdir = os.listdir

            def with_broken_entries(path):
                found = listdir(path)
                return found + names if os.path.samefile(path, here) else found

            monkeypatch.setattr(os, "listdir", with_broken_entries)
        assert compile_mod._compiler_id() == before
    finally:
        for link in links:
            if os.path.islink(link):
                os.remove(link)


def test_padded_shared_buffers_are_refused_on_gpus():
    @T.prim_func
    def main(X: T.Tensor((32, 32), "float32"), Y: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((32, 32), "float32")
            T.annotate_layout({s: T.make_padded_layout(s, 4)})
            T.copy(X, s)
            T.copy(s, Y)

    # The CPU places buffers itself: padding means nothing there.
    x = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    np.testing.assert_array_equal(tl.compile(main, out_idx=[1], target="cpu")(x), x)
    for target in ("cuda:sm_80", "rocm:gfx942"):
        if target.startswith("rocm"):
            pytest.importorskip("llvmlite.binding")
        with pytest.raises(CompilationError, match=r"asks for 4 elements of padding per row "
                                                   r"\(#tile.swizzle<0, pad = 4>\), which GPU "
                                                   r"targets do not implement"):
            tl.compile(main, out_idx=[1], target=target, pass_configs={"tl.disable_cache": True})


def test_failing_pass_is_named_with_its_input(monkeypatch):
    from tilelang_mlir.compiler import cpu as cpu_backend

    # Lowering scf to cf before the tile ops are gone splits the single-block
    # body of tile.parallel: the IR no longer verifies after that pass.
    monkeypatch.setattr(cpu_backend, "cpu_stages", lambda pass_configs=None: [
        cpu_backend.Stage("broken", ["canonicalize", "convert-scf-to-cf"])])
    with pytest.raises(CompilationError) as info:
        tl.compile(kernels.elementwise_add(8, 8, 8, 4), out_idx=[2], target="cpu",
                   pass_configs={"tl.disable_cache": True})
    message = str(info.value)
    assert "pass 'convert-scf-to-cf' failed" in message
    path = message.split("is in ")[-1].split()[0]
    with open(path) as f:
        assert "tile.kernel" in f.read()


def test_jit_factory_and_prim_func(rng):
    @tl.jit(out_idx=[1], target="cpu")
    def scale(n, factor):
        @T.prim_func
        def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                for i in T.Parallel(n):
                    Y[i] = X[i] * factor

        return main

    k = scale(16, 2.0)
    assert k is scale(16, 2.0)
    x = rng.standard_normal(16).astype(np.float32)
    np.testing.assert_allclose(k(x), 2 * x)
    np.testing.assert_allclose(scale(16, 3.0)(x), 3 * x, rtol=1e-6)

    @tl.jit(out_idx=[1], target="cpu")
    @T.prim_func
    def negate(X: T.Tensor((16,), "float32"), Y: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(16):
                Y[i] = -X[i]

    np.testing.assert_array_equal(negate(x), -x)


def test_cpu_kernel_rejects_cuda_or_meta_tensors():
    kernel = tl.compile(kernels.elementwise_add(8, 8, 8, 8), out_idx=[2], target="cpu")
    meta = torch.empty(8, 8, device="meta")
    with pytest.raises(ValueError, match="is on meta, but the kernel was compiled for the CPU"):
        kernel(meta, meta)
