"""`@tl.autotune` on the CPU: configs that do not compile or compute the wrong
thing are skipped with their reason, the winner is correct, compilation runs
in worker processes, the winner is cached on disk (found again in this
process and in a new one), `cache=False` tunes again, and a CUDA target
without a GPU compiles every config, then stops (the AOT flow)."""

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.bounds import assert_float32_matmul
from tilelang_mlir.kernels import programs
from tilelang_mlir.kernels.programs import elementwise_add
from tilelang_mlir.kernels.programs import matmul as gemm_program

HERE = os.path.dirname(os.path.abspath(__file__))

GOOD_SMALL = dict(block_M=32, block_N=32, block_K=32, threads=128)
TOO_MANY_THREADS = dict(block_M=64, block_N=64, block_K=32, threads=2048)  # rejected: > 1024
WRONG_MATH = dict(block_M=64, block_N=64, block_K=32, threads=128, trans_B=True)  # A @ B^T
GOOD_LARGE = dict(block_M=64, block_N=64, block_K=64, threads=128)
CONFIGS = [GOOD_SMALL, TOO_MANY_THREADS, WRONG_MATH, GOOD_LARGE]


def reference(A, B):
    return A.float() @ B.float()


# The tuner's check: float32 sums of the same 128 exact float16 products, in any two orders,
# differ by at most 128 eps sum|a b| < 4e-3 (sum|a b| < 260 for randn: mean 81, 127 the
# largest of 650,000 seen).
@tl.autotune(configs=CONFIGS, warmup=1, rep=3, ref_prog=reference, rtol=0, atol=4e-3,
             max_workers=2)
@tl.jit(out_idx=[2], target="cpu")
def matmul(M, N, K, block_M=32, block_N=32, block_K=32, threads=128, trans_B=False):
    """C = A @ B in float32 from float16 (A @ B^T where trans_B: wrong on purpose)."""
    return gemm_program(M, N, K, block_M, block_N, block_K, trans_B=trans_B, threads=threads,
                        out_dtype="float32")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_MLIR_CACHE_DIR", str(tmp_path))
    from tilelang_mlir import autotuner

    monkeypatch.setattr(autotuner.cache, "_MEMORY", {})  # the in-process cache, per test
    return tmp_path


def _check_product(kernel, n=128):
    a = torch.randn(n, n).to(torch.float16)
    b = torch.randn(n, n).to(torch.float16)
    assert_float32_matmul(kernel(a, b), a, b)  # float32 sums of exact float16 products


def test_tunes_skips_and_caches(cache, caplog, monkeypatch):
    caplog.set_level(logging.INFO, logger="tilelang_mlir.autotuner")
    kernel = matmul(128, 128, 128)
    result = kernel.autotune_result
    assert not result.cache_hit
    assert result.best_config in (GOOD_SMALL, GOOD_LARGE)
    assert [t["config"] for t in result.timings] == [GOOD_SMALL, GOOD_LARGE]
    assert result.best_latency == min(t["latency"] for t in result.timings) > 0
    # TileLang's fields of a tuned kernel (`best = tuned.compile(...); best.config`).
    assert kernel.config == result.best_config and kernel.latency == result.best_latency
    # One skipped config per failing stage, with its reason.
    assert [(s["config"], s["stage"]) for s in result.skipped] == [
        (TOO_MANY_THREADS, "compile"), (WRONG_MATH, "check")]
    assert "at most 1024 threads, got 2048" in result.skipped[0]["reason"]
    assert "differs from the reference" in result.skipped[1]["reason"]
    assert "at most 1024 threads" in caplog.text and "wrong result" in caplog.text
    # Compiled in worker processes, not here.
    assert result.worker_pids and os.getpid() not in result.worker_pids
    _check_product(kernel)
    # The winner is on disk, with every timing and reason.
    assert result.cache_path == str(cache / "autotune" / f"{result.key}.json")
    with open(result.cache_path) as f:
        entry = json.load(f)
    assert entry["best_config"] == result.best_config and len(entry["skipped"]) == 2

    again = matmul(128, 128, 128)
    hit = again.autotune_result
    assert hit.cache_hit and hit.worker_pids == []
    assert hit.best_config == result.best_config and hit.skipped == result.skipped
    assert again.config == result.best_config
    assert "cache hit" in caplog.text
    _check_product(again)

    # A new process finds it too: it loads the winner alone, from the kernel
    # cache, with no compiler (as the GPU machine does).
    script = ("import json, test_autotune as t\n"
              "k = t.matmul(128, 128, 128)\n"
              "t._check_product(k)\n"
              "r = k.autotune_result\n"
              "print(json.dumps([r.cache_hit, r.best_config, r.worker_pids]))\n")
    path = [HERE, os.path.dirname(HERE), os.environ.get("PYTHONPATH", "")]  # (and support)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path),
               TILELANG_MLIR_OFFLINE="1", TILELANG_MLIR_AUTOTUNE_QUIET="1")
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=HERE, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == [True, result.best_config, []]

    # Another shape is another key.
    other = matmul(64, 64, 64).autotune_result
    assert not other.cache_hit and other.key != result.key

    # Tuning again without the compiler (as on the GPU machine): the kernels
    # come from the kernel cache, and the config that did not compile still
    # says why.
    monkeypatch.setenv("TILELANG_MLIR_OFFLINE", "1")
    retuned = tl.autotune(configs=CONFIGS, warmup=0, rep=1, ref_prog=reference, cache=False,
                          out_idx=[2], target="cpu")(matmul.factory)(128, 128, 128)
    skipped = retuned.autotune_result.skipped
    assert skipped[0]["reason"] == result.skipped[0]["reason"] + " (when compiled)"


def test_cache_false_tunes_every_call(cache):
    tuner = tl.autotune(configs=[GOOD_SMALL, GOOD_LARGE], warmup=0, rep=1, ref_prog=reference,
                        cache=False, max_workers=2, out_idx=[2], target="cpu")(matmul.factory)
    for call in range(2):
        result = tuner(64, 64, 64).autotune_result
        assert not result.cache_hit and result.cache_path is None and len(result.timings) == 2
        if call == 0:
            assert len(result.worker_pids) >= 1 and os.getpid() not in result.worker_pids
        else:  # the kernels are in the kernel cache now: loaded here, no worker needed
            assert result.worker_pids == []
    assert not (cache / "autotune").exists()


def add_factory(M, N, block_M=32, block_N=32):
    return elementwise_add(M, N, block_M, block_N)


def test_plain_factory_callable_configs_no_reference(cache, monkeypatch, caplog, capsys):
    """Without tl.jit (out_idx and target given to autotune), configs from a
    callable, no reference (timed unchecked), compiled here (max_workers=1);
    without tqdm, progress goes to the log."""
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if tqdm were not installed
    caplog.set_level(logging.INFO, logger="tilelang_mlir.autotuner")
    seen = []

    def configs(M, N):
        seen.append((M, N))
        return [dict(block_M=16, block_N=64), dict(block_M=32, block_N=32),
                dict(block_M=32, block_N=32)]  # a duplicate is tried once

    tuned = tl.autotune(configs=configs, warmup=0, rep=2, out_idx=[2], target="cpu",
                        max_workers=1)(add_factory)
    kernel = tuned(64, 96)
    result = kernel.autotune_result
    assert seen == [(64, 96)] and result.worker_pids == [] and result.skipped == []
    assert [t["config"] for t in result.timings] == [dict(block_M=16, block_N=64),
                                                     dict(block_M=32, block_N=32)]
    a, b = torch.randn(64, 96), torch.randn(64, 96)
    torch.testing.assert_close(kernel(a, b), a + b)
    assert "bench [2/2]" in caplog.text and "%|" not in capsys.readouterr().err
    # An argument the caller gives is fixed in every config.
    fixed = tuned(64, 96, block_N=32).autotune_result
    assert [t["config"] for t in fixed.timings] == [dict(block_M=16, block_N=32),
                                                    dict(block_M=32, block_N=32)]


def test_progress_bar(cache, monkeypatch, capsys):
    pytest.importorskip("tqdm")
    tuned = tl.autotune(configs=[dict(block_M=32, block_N=32)], warmup=0, rep=1, out_idx=[2],
                        target="cpu", cache=False)(add_factory)
    tuned(32, 32)
    err = capsys.readouterr().err
    assert "autotune add_factory: bench" in err and "best" in err and "block_M=32" in err
    monkeypatch.setenv("TILELANG_MLIR_AUTOTUNE_QUIET", "1")
    tuned(32, 32)
    assert capsys.readouterr().err == ""


def test_every_config_failing_is_an_error(cache):
    tuned = tl.autotune(configs=[TOO_MANY_THREADS, dict(GOOD_SMALL, threads=0)], out_idx=[2],
                        target="cpu", max_workers=2)(gemm_program)
    with pytest.raises(tl.AutotuneError) as info:
        tuned(64, 64, 64)
    text = str(info.value)
    assert "at most 1024 threads, got 2048" in text and "threads must be positive, got 0" in text
    assert [s["stage"] for s in info.value.skipped] == ["compile", "compile"]


def test_usage_errors(cache):
    with pytest.raises(TypeError, match="configs are required"):
        tl.autotune(matmul)
    with pytest.raises(ValueError, match="rep must be a positive int"):
        tl.autotune(configs=CONFIGS, rep=0)
    with pytest.raises(TypeError, match="not a prim_func"):
        tl.autotune(configs=CONFIGS)(gemm_program(64, 64, 64, 32, 32, 32))
    with pytest.raises(ValueError, match="contradicts"):
        tl.autotune(configs=CONFIGS, target="cuda:sm_90a")(tl.jit(target="cpu")(add_factory))
    with pytest.raises(TypeError, match="'block_X' is not an argument"):
        tl.autotune(configs=[dict(block_X=1)], target="cpu")(add_factory)(32, 32)


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU this tunes (GPU checks)")
def test_cuda_without_gpu_compiles_then_stops(cache, monkeypatch):
    """Compile-only: every config is compiled into the kernel cache (the one
    with too much shared memory is skipped), then the missing GPU is said."""
    from tilelang_mlir.runtime.cuda import NoCUDADevice

    monkeypatch.setenv("TILELANG_MLIR_AUTOTUNE_QUIET", "1")
    too_big = dict(block_M=128, block_N=256, block_K=128, num_stages=3, threads=256)  # 288 KB
    fits = dict(block_M=64, block_N=64, block_K=32, num_stages=2, threads=128)
    tuned = tl.autotune(configs=[too_big, fits], ref_prog=reference, out_idx=[2],
                        target="cuda:sm_90a", max_workers=2)(gemm_program)
    with pytest.raises(NoCUDADevice, match="1 of 2 configs compiled"):
        tuned(256, 256, 256)
    kernels = [p for p in os.listdir(cache) if p.endswith(".json")]
    assert len(kernels) == 1  # the one that fits, ready for the GPU machine


def crashing_factory(M, N, block_M=32, block_N=32, crash=False):
    program = elementwise_add(M, N, block_M, block_N)
    if crash:
        program.name = "crash_me"  # the compile worker dies on it (crash_in_worker)
    return program


def crash_in_worker(task):
    """The compile worker's entry point, ending the worker on one program
    as a compiler crash would."""
    from tilelang_mlir import autotuner

    if task.name == "crash_me":
        os._exit(3)
    return autotuner.pool._compile_emitted(task)


def test_a_crashing_compile_skips_only_its_config(cache, monkeypatch):
    from tilelang_mlir import autotuner

    monkeypatch.setenv("TILELANG_MLIR_AUTOTUNE_QUIET", "1")
    monkeypatch.setattr(autotuner.pool, "_compile_emitted", crash_in_worker)
    configs = [dict(block_M=16), dict(block_M=32, crash=True), dict(block_M=64)]
    tuned = tl.autotune(configs=configs, warmup=0, rep=1, out_idx=[2], target="cpu",
                        max_workers=2)(crashing_factory)
    result = tuned(64, 64).autotune_result
    assert [t["config"] for t in result.timings] == [configs[0], configs[2]]
    assert [(s["config"], s["stage"]) for s in result.skipped] == [(configs[1], "compile")]
    assert "died" in result.skipped[0]["reason"]


@pytest.mark.gpu
def test_autotune_on_the_gpu():
    """On the GPU (kernels from the AOT cache on the GPU machine): a config
    with too much shared memory and a wrong one are skipped, the winner is
    correct; times are device times of CUDA-graph replays."""
    too_big = dict(block_M=128, block_N=256, block_K=128, num_stages=3, threads=256)  # 288 KB
    wrong = dict(block_M=64, block_N=64, block_K=32, num_stages=2, threads=128, trans_B=True)
    good = [dict(block_M=64, block_N=64, block_K=32, num_stages=2, threads=128),
            dict(block_M=128, block_N=128, block_K=32, num_stages=3, threads=128)]
    tuned = tl.autotune(configs=[good[0], too_big, wrong, good[1]], warmup=2, rep=10,
                        ref_prog=reference, cache=False, out_idx=[2], target="cuda")(gemm_program)
    kernel = tuned(512, 512, 512, out_dtype="float32")
    result = kernel.autotune_result
    assert result.best_config in good and result.device_name
    assert [t["config"] for t in result.timings] == good
    assert [(s["config"], s["stage"]) for s in result.skipped] == [(too_big, "compile"),
                                                                   (wrong, "check")]
    a = torch.randn(512, 512, device="cuda").to(torch.float16)
    b = torch.randn(512, 512, device="cuda").to(torch.float16)
    torch.testing.assert_close(kernel(a, b), reference(a, b), rtol=1e-2, atol=1e-2)


def _resigned(entry):
    from tilelang_mlir.runtime.cache import digest

    entry = {k: v for k, v in entry.items() if k != "sha256"}
    return dict(entry, sha256=digest(entry))


WINNER_DAMAGE = [
    (lambda e: [1, 2, 3], "is a JSON list, not an autotune record"),
    (lambda e: {"version": 2}, "does not have the fields of an autotune record"),
    (lambda e: json.dumps(e)[:40], "is not JSON: truncated or overwritten"),
    (lambda e: dict(e, version=1), "has version 1; this tilelang_mlir reads version 2"),
    (lambda e: dict(e, key="0" * 32), "holds the winner of key '" + "0" * 32),
    (lambda e: dict(e, best_latency=1e-9), "does not match its sha256"),
    (lambda e: _resigned(dict(e, best="0")), "has malformed field(s) best"),
    (lambda e: _resigned(dict(e, timings=[{"index": 0}])), "has malformed field(s) timings"),
    (lambda e: _resigned(dict(e, best=7)), "names config 7 of 2"),
    (lambda e: _resigned(dict(e, best_config={"block_M": 1})), "records configs other than"),
]


@pytest.mark.parametrize("change, message", WINNER_DAMAGE)
def test_a_damaged_winner_is_discarded_and_tuned_again(cache, monkeypatch, change, message):
    """A winner file that is not the record of its key is deleted with a
    warning naming it, and tuning runs again (and rewrites it)."""
    from tilelang_mlir import autotuner

    monkeypatch.setenv("TILELANG_MLIR_AUTOTUNE_QUIET", "1")
    configs = [dict(block_M=16, block_N=64), dict(block_M=32, block_N=32)]
    tuned = tl.autotune(configs=configs, warmup=0, rep=1, out_idx=[2], target="cpu",
                        max_workers=1, ref_prog=lambda a, b: a + b)(add_factory)
    first = tuned(64, 64).autotune_result
    path = first.cache_path
    with open(path) as f:
        damaged = change(json.load(f))
    with open(path, "w") as f:
        f.write(damaged if isinstance(damaged, str) else json.dumps(damaged))
    monkeypatch.setattr(autotuner.cache, "_MEMORY", {})  # as a new process
    with pytest.warns(tl.KernelCacheWarning) as record:
        kernel = tuned(64, 64)
    text = str(record[0].message)
    assert text.startswith(f"autotune cache entry {path} ") and message in text, text
    assert "tuning again" in text
    assert not kernel.autotune_result.cache_hit and kernel.autotune_result.cache_path == path
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    torch.testing.assert_close(kernel(a, b), a + b)
    monkeypatch.setattr(autotuner.cache, "_MEMORY", {})
    assert tuned(64, 64).autotune_result.cache_hit  # the rewritten entry is good


@pytest.mark.filterwarnings("error:.*use of fork\\(\\) may lead to deadlocks:DeprecationWarning")
def test_workers_are_not_forked_and_closures_compile(cache, monkeypatch, rng):
    """Compile workers start from a fresh interpreter (forkserver or spawn):
    this process, multi-threaded, never calls fork() (Python 3.12 warns
    that it may deadlock, and a forked worker did hang on a lock), and a
    factory that is a closure still compiles in them, since the workers get
    the emitted tile IR, not the factory."""
    import threading

    from tilelang_mlir import autotuner

    def no_fork():
        raise AssertionError("the autotuner forked this process")

    monkeypatch.setattr(os, "fork", no_fork)
    monkeypatch.setenv("TILELANG_MLIR_AUTOTUNE_QUIET", "1")
    assert autotuner.pool._worker_context().get_start_method() in ("forkserver", "spawn")
    scale = float(rng.integers(2, 9))

    def scaled_add(M, N, block_M=32, block_N=32):  # a closure over `scale`
        @T.prim_func
        def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"),
                 C: T.Tensor((M, N), "float32")):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                for i, j in T.Parallel(block_M, block_N):
                    C[by * block_M + i, bx * block_N + j] = (
                        A[by * block_M + i, bx * block_N + j] * scale
                        + B[by * block_M + i, bx * block_N + j])

        return main

    stop = threading.Event()
    busy = threading.Thread(target=stop.wait)  # another thread while the workers start
    busy.start()
    try:
        def configs(M, N):
            return [dict(block_M=16, block_N=32), dict(block_M=32, block_N=16)]

        tuned = tl.autotune(configs=configs, warmup=0, rep=1, out_idx=[2], target="cpu",
                            max_workers=2, ref_prog=lambda a, b: a * scale + b)(scaled_add)
        kernel = tuned(64, 64)
    finally:
        stop.set()
        busy.join()
    result = kernel.autotune_result
    assert len(result.timings) == 2 and result.skipped == []
    assert result.worker_pids and os.getpid() not in result.worker_pids
    a = torch.from_numpy(rng.standard_normal((64, 64)).astype(np.float32))
    b = torch.from_numpy(rng.standard_normal((64, 64)).astype(np.float32))
    torch.testing.assert_close(kernel(a, b), a * scale + b)



def test_emitted_programs_keep_the_users_lines(cache):
    """What a worker compiles is tile IR text with the source locations: an
    error in a pass still names the user's line, and the tile stage is the
    one tl.compile shows."""
    from tilelang_mlir import autotuner
    from tilelang_mlir.compiler import compile as compile_mod
    from tilelang_mlir.frontend.errors import TileLangError

    too_big = dict(block_M=128, block_N=256, block_K=128, num_stages=3, threads=256)  # 288 KB
    task = autotuner.pool._emit_for_worker(gemm_program, (256, 256, 256), too_big, [2],
                                      "cuda:sm_90a", None)["task"]
    with pytest.raises(TileLangError, match="more than the 227 KB") as info:
        compile_mod.build_artifact(task, task.plan)
    assert str(info.value).startswith(programs.__file__ + ":17:9: error: pass "
                                      "'convert-tile-to-nvvm' failed")
    fits = dict(block_M=64, block_N=64, block_K=32, threads=128)
    task = autotuner.pool._emit_for_worker(gemm_program, (64, 64, 64), fits, [2], "cpu",
                                           None)["task"]
    result = autotuner.pool._compile_emitted(task)
    kernel = tl.compile(gemm_program(64, 64, 64, **fits), out_idx=[2], target="cpu")
    assert result["artifact"].stages["tile"] == kernel.mlir("tile")


def test_per_config_pass_configs(cache):
    """TileLang's configs may carry their own "pass_configs", merged over the
    decorator's: a config whose pass configs are unknown is skipped for
    that reason; the others compile with theirs."""
    configs = [dict(block_M=32, pass_configs={"tl.disable_lop3": True}),
               dict(block_M=64, pass_configs={"tl.no_such_config": 1}),
               dict(block_M=16)]
    tuner = tl.autotune(configs=configs, warmup=0, rep=1, ref_prog=lambda a, b: a + b,
                        cache=False, max_workers=1, out_idx=[2], target="cpu",
                        pass_configs={"tl.narrow_index": False})(add_factory)
    kernel = tuner(64, 64)
    result = kernel.autotune_result
    assert len(result.timings) == 2
    assert [s["config"]["block_M"] for s in result.skipped] == [64]
    assert "tl.no_such_config" in result.skipped[0]["reason"]
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    torch.testing.assert_close(kernel(a, b), a + b)
    with pytest.raises(TypeError, match="'pass_configs' must be a dict"):
        tl.autotune(configs=[dict(block_M=32, pass_configs=[1])], ref_prog=lambda a, b: a + b,
                    cache=False, max_workers=1, out_idx=[2], target="cpu")(add_factory)(64, 64)


def test_every_tuned_argument_given_compiles_without_tuning(cache):
    """TileLang's meaning: a call that fixes every tuned argument compiles that
    configuration and runs no tuning (no reference, no random inputs)."""
    tuner = tl.autotune(configs=[dict(block_M=32, block_N=32), dict(block_M=16, block_N=16)],
                        ref_prog=lambda a, b: a - b, cache=False, max_workers=1, out_idx=[2],
                        target="cpu")(add_factory)  # a wrong reference: never consulted
    kernel = tuner(64, 64, block_M=16, block_N=16)
    assert getattr(kernel, "autotune_result", None) is None
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    torch.testing.assert_close(kernel(a, b), a + b)
