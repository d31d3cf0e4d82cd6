"""benchmarks/common.py, the helpers every benchmark shares: checking a
contender's result before it is timed, table cells, the prepare sidecar and
parallel compiles (what runs without a GPU)."""

import os
import sys

import pytest
import torch

from support import ROOT  # noqa: E402 (the repository root)
# As the benchmarks import it (`import common` from benchmarks/): compile
# workers, started from a fork server with this sys.path, import it by name.
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import common  # noqa: E402


def test_a_wrong_or_failing_contender_is_reported_not_timed(monkeypatch):
    timed = []
    monkeypatch.setattr(common, "device_ms", lambda fn, warmup, rep, graph: timed.append(fn) or 1.5)
    ref = torch.randn(64, 32, dtype=torch.float64).float()
    noise = torch.randn(64, 32)
    check = common.within(ref, 1e-2)
    ok = common.measure(lambda: ref + 1e-4 * noise, check)
    assert ok[0] == "ok" and ok[1] == 1.5 and 0 < ok[2] < 1e-3 and len(timed) == 1
    status, ms, err = common.measure(lambda: ref + 0.5 * noise, check)
    assert status == "wrong" and ms is None and err > 1e-2 and len(timed) == 1

    def broken():
        raise RuntimeError("CUDA error: an illegal memory access\nmore detail")
    assert common.measure(broken, check) == ("failed", None, "CUDA error: an illegal memory access")
    assert len(timed) == 1


def test_retime_takes_every_correct_contender_in_turns_and_keeps_the_median(monkeypatch):
    # The fastest config's fn comes from `fastest`; a failed contender is
    # not timed again; each round times every contender once, in turn.
    monkeypatch.setattr(common, "device_ms", lambda fn, warmup, rep, graph: fn())
    calls = []
    # per contender: the value of each call (measure calls once to check,
    # once to time)
    clock = {"slow": iter([0, 3.0]), "fast": iter([0, 1.0, 2.0, 4.0]), "other": iter([1.5, 0.5])}
    kernels = [({"c": 1}, "slow"), ({"c": 2}, "fast")]
    row = common.fastest({}, kernels, lambda k: calls.append(k) or next(clock[k]),
                         lambda out: 0.0, 1e9, str, keep_fn=True)
    assert row["ours"] == ("ok", 1.0, 0.0) and row["config"] == "{'c': 2}"
    row["other"] = ("ok", 9.0, 0.0)
    row["broken"] = ("failed", None, "boom")
    ours_before = len(calls)
    fns = {"other": lambda: calls.append("other") or next(clock["other"]),
           "broken": lambda: pytest.fail("a failed contender is timed again")}
    common.retime(row, fns, 3, lambda fn: fn())
    # rounds 2 and 3: ours 2.0, other 1.5; ours 4.0, other 0.5
    assert calls[ours_before:] == ["fast", "other", "fast", "other"]
    assert row["ours"] == ("ok", 2.0, 0.0) and row["other"] == ("ok", 1.5, 0.0)
    assert row["broken"] == ("failed", None, "boom") and "ours_fn" not in row


def test_table_cells():
    assert common.tflops(("ok", 2.0, 1e-3), 4e12) == "2000"
    assert common.tflops(("wrong", None, 0.25), 4e12) == "wrong (2.5e-01)"
    assert common.tflops(("n/a", None, "triton is not installed"), 1) == "n/a"
    assert common.tflops(("failed", None, "boom"), 1) == "failed"


def test_sidecar_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    assert common.read_sidecar("bench.json") == {}
    common.write_sidecar("bench.json", {"case a 128x128": "does not fit"})
    got = common.read_sidecar("bench.json")
    assert got["failures"] == {"case a 128x128": "does not fit"} and "prepared" in got
    monkeypatch.delenv("TILELANG_MLIR_CACHE_DIR")
    assert common.read_sidecar("bench.json") == {}


class _Case:
    def __init__(self, label):
        self.label = label


def _compile_one(task):
    n = task[1]
    return (None, "too big" if n == 2 else None, 16 if n == 3 else 0)


def test_compiles_run_in_parallel_and_are_collected(capsys):
    tasks = [(_Case("a"), 1), (_Case("a"), 2), (_Case("b"), 3)]
    compile_one = _compile_one
    for jobs in (1, 2):
        results = common.compile_parallel(compile_one, tasks, jobs)
        assert results == [(None, None, 0), (None, "too big", 0), (None, None, 16)]
    compiled, failures, first = common.collect_compiles(
        tasks, results, lambda c: f"c{c}", known={}, seconds=3.2)
    assert [c for c, _ in compiled["a"]] == [1] and [c for c, _ in compiled["b"]] == [3]
    assert failures == {"a c2": "too big"} and first == {"a": "too big"}
    out = capsys.readouterr().out
    assert "compiled 2 kernels for 2 cases in 3 s; 1 configs did not compile" in out
    assert "b c3 (16 B)" in out


def test_a_kernel_missing_from_the_cache_says_why_the_prepare_failed():
    tasks = [(_Case("a"), 1)]
    results = [(None, "kernel 'k' is not in the kernel cache", 0)]
    _, failures, _ = common.collect_compiles(tasks, results, str,
                                             known={"a 1": "ptxas: out of registers"})
    assert failures == {"a 1": "ptxas: out of registers (at prepare)"}


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU target")
def test_without_a_gpu_kernels_are_compiled_for_hopper(monkeypatch):
    monkeypatch.delenv("TILELANG_MLIR_CUDA_ARCH", raising=False)
    assert common.init_cuda() == (False, "cuda:sm_90a")
    monkeypatch.setenv("TILELANG_MLIR_CUDA_ARCH", "sm_80")
    assert common.init_cuda() == (False, "cuda")


def test_try_compile_reports_and_skips_a_failing_config():
    def broken():
        raise RuntimeError("kernel.py:12:5: error: needs 233472 bytes of shared memory\nmore")
    assert common.try_compile(broken) == (None, "needs 233472 bytes of shared memory", 0)

    class Kernel:
        ptxas_info = ("ptxas info    : Used 168 registers, used 1 barriers, 40 bytes spill "
                      "stores, 24 bytes spill loads")

    class Wrapper:
        main = Kernel()
    wrapper = Wrapper()
    kernel, why, spilled = common.try_compile(lambda: wrapper, lambda w: w.main)
    assert kernel is wrapper and why is None and spilled == 64
