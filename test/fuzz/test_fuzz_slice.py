"""The CI slice of the fuzzers: fixed seeds, a couple of minutes each.

`make test` runs these (the `pytest` target collects test/python and
test/fuzz). A failure prints every failure signature with its reproducer:
the tile-opt input and command, or the generated tile program (a standalone
file: run it with .venv/bin/python). The long runs are in README.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import random_programs  # noqa: E402
import tile_opt_fuzz  # noqa: E402

pytestmark = pytest.mark.fuzz

# Seeds and sizes of the slice: about 1-2 minutes each on the 2-core
# development machine. Change the seed only together with a note in
# README.md: a fixed seed keeps the slice a regression test.
TILE_OPT_SEED, TILE_OPT_COUNT = 17, 200
# The pipelines the slice also runs with canonicalize,cse after every pass
# (the long runs take all of tile_opt_fuzz.CLEANUP_VARIANTS): the
# warp-specialized Hopper chain and the RUN lines of the seed's file.
TILE_OPT_CLEANUP = "sm90a,run"
PROGRAMS_SEED, PROGRAMS_COUNT = 17, 400
# Each slice runs as CHUNKS tests of consecutive cases (case i depends only
# on the seed and i, so the chunks add up to the same slice), which pytest's
# workers (make test: -n JOBS) share out.
CHUNKS = 4


def _chunks(count):
    size = -(-count // CHUNKS)
    return [(start, min(size, count - start)) for start in range(0, count, size)]


def _show(path: Path, limit: int = 4000) -> str:
    try:
        return path.read_text()[:limit]
    except OSError:
        return f"({path} is missing)"


def _tile_opt_report(out: Path) -> str:
    summary = json.loads((out / "summary.json").read_text())
    lines = [tile_opt_fuzz.summary_line(summary, 0)]
    for sig, e in summary["signatures"].items():
        d = Path(e["dir"])
        lines += ["", f"== {e['class']} x{e['count']}: {sig}",
                  f"   pipelines: {', '.join(e['pipelines'])}",
                  f"   from: {e['first']['seed_case']}, mutations: {e['first']['mutations']}",
                  f"   reproducer: {d}/input.mlir and {d}/cmd.sh", "--- cmd.sh",
                  _show(d / "cmd.sh"), "--- input.mlir", _show(d / "input.mlir"),
                  "--- stderr (head)", _show(d / "stderr.txt", 1500)]
    return "\n".join(lines)


@pytest.mark.parametrize("start,count", _chunks(TILE_OPT_COUNT))
def test_tile_opt_mutants_never_crash_or_hang(tmp_path, start, count):
    """Mutated lit inputs through every pipeline: each run ends with exit 0
    or a diagnostic (exit 1, `error:`), within 20 s and 4 GB."""
    out = tmp_path / "tile-opt-fuzz"
    rc = tile_opt_fuzz.main(["--seed", str(TILE_OPT_SEED), "--start", str(start),
                             "--count", str(count), "--timeout", "20", "--out", str(out),
                             "--cleanup", TILE_OPT_CLEANUP, "--no-minimize"])
    assert rc == 0, _tile_opt_report(out)


def _programs_report(out: Path) -> str:
    summary = json.loads((out / "summary.json").read_text())
    counts = " ".join(f"{k}={v}" for k, v in sorted(summary["counts"].items()))
    lines = [f"{summary['programs']} programs: {counts}"]
    if "smoke_failure" in summary:
        lines.append("the smoke program fails, so the compiler is broken: "
                     + json.dumps(summary["smoke_failure"], indent=1)[:4000])
    for sig, e in summary["signatures"].items():
        d = Path(e["dir"])
        lines += ["", f"== {sig} (x{e['count']})", f"   {e['first_desc']}",
                  f"   {e['detail'][:800]}", f"   reproducer: {d}/prog.py"]
        if e.get("failing_pass_input"):
            lines.append(f"   input IR of the failing pass: {e['failing_pass_input']}")
        src = _show(d / "prog.py", 20000)
        kernel = src[src.find("@T.prim_func"):src.find("# ---- the fuzzer's helpers")]
        lines += ["--- program", kernel.strip()[:3000]]
    return "\n".join(lines)


@pytest.mark.parametrize("start,count", _chunks(PROGRAMS_COUNT))
def test_random_programs_match_numpy(tmp_path, start, count):
    """Random tile programs on the CPU against NumPy, each also compiled for
    one GPU target: no mismatch, no crash, no hang, no internal error."""
    out = tmp_path / "random-programs"
    rc = random_programs.main(["--seed", str(PROGRAMS_SEED), "--start", str(start),
                               "--count", str(count), "--out", str(out), "--timeout", "120"])
    assert rc == 0, _programs_report(out)


# ---------------------------------------------------------------------------
# The GPU campaign (gpu_campaign.py): a compile-only slice, and its run path
# on the reference backend (no GPU here).
# ---------------------------------------------------------------------------

import gpu_campaign  # noqa: E402
import gpu_programs  # noqa: E402

GPU_SEED, GPU_COUNT = 17, 30


def _gpu_report(out: Path) -> str:
    summary = json.loads((out / "summary.json").read_text())
    lines = [(out / "table.md").read_text() if (out / "table.md").exists() else "(no table)"]
    for sig, e in summary["signatures"].items():
        src = _show(Path(e["dir"]) / "prog.py", 20000)
        kernel = src[src.find("@T.prim_func"):src.find("OUT_IDX")]
        lines += ["", f"== {sig} (x{e['count']})", f"   {e['first_desc']}",
                  f"   {e['detail'][:800]}", f"   reproducer: {e['dir']}/prog.py",
                  "--- program", kernel.strip()[:3000]]
    lines += summary.get("errors", [])
    return "\n".join(lines)


def test_gpu_programs_compile_for_sm80_and_sm90a(tmp_path):
    """A fixed slice of the GPU campaign, compile only: each program matches
    NumPy on the CPU and compiles (PTX and ptxas) for sm_90a with and
    without warp specialization and for sm_80: no compile error, crash or
    hang."""
    out = tmp_path / "gpu"
    rc = gpu_campaign.main(["--seed", str(GPU_SEED), "--count", str(GPU_COUNT), "--dry",
                            "--jobs", "2", "--out", str(out)])
    summary = json.loads((out / "summary.json").read_text())
    assert rc == 0, _gpu_report(out)
    assert summary["kernels"] >= 3 * GPU_COUNT - 6, _gpu_report(out)  # a few skips at most


def _harness_program(kind: str) -> "random_programs.Program":
    """Programs whose run must end in a given verdict: `hang` never ends,
    `abort` kills its process, `unwritten` leaves half of an integer output
    unwritten where NumPy expects zeros (the run's poisoned outputs must
    show it), `ok` passes."""
    P = random_programs.Program
    head = "@T.prim_func\ndef main(X: T.Tensor((64,), 'int32'), Out: T.Tensor((64,), 'int32')):\n" \
           "    with T.Kernel(1, threads=64) as bx:\n"
    inputs = "return [rng.integers(1, 100, (64,)).astype(np.int32)]"
    if kind == "hang":
        kernel = ("@T.prim_func\ndef main(X: T.Tensor((4,), 'float32'), Out: T.Tensor((4,), 'float32')):\n"
                  "    with T.Kernel(1, threads=1) as bx:\n"
                  "        Out[0] = 0.0\n"
                  "        for i in T.serial(1 << 40):\n"
                  "            Out[0] = Out[0] * 0.5 + X[i % 4]\n")
        return P("harness", "never ends", kernel, "return [np.ones(4, np.float32)]",
                 "return [np.zeros(4, np.float32)]", [1], ["X"], 0.0, 0.0, "hang")
    if kind == "unwritten":
        kernel = head + "        for i in T.Parallel(32):\n            Out[i] = X[i]\n"
        return P("harness", "half unwritten", kernel, inputs,
                 "R = X.copy()\nR[32:] = 0\nreturn [R]", [1], ["X"], 0.0, 0.0, "unwritten")
    kernel = head + "        for i in T.Parallel(64):\n            Out[i] = X[i] + 1\n"
    if kind == "abort":
        inputs = "import os\nos.abort()"
    return P("harness", kind, kernel, inputs, "return [X + 1]", [1], ["X"], 0.0, 0.0, kind)


def test_gpu_campaign_records_hangs_crashes_and_unwritten_outputs(tmp_path):
    """The run path of the campaign on the reference backend (config
    `host`): saved artifacts run in the runner process under a time limit.
    A kernel that never ends is a HANG and one whose process dies a CRASH,
    both in the CPU reference step and on the device, and the programs after
    them still run; an output element the kernel does not write is a
    MISMATCH (outputs start poisoned)."""
    kinds = ["ok", "hang", "abort", "unwritten", "ok"]
    out = tmp_path / "gpu"
    rc = gpu_campaign.main(["--count", str(len(kinds)), "--configs", "host", "--jobs", "2",
                            "--out", str(out), "--run-timeout", "8", "--compile-timeout", "8"],
                           make_program=lambda i: _harness_program(kinds[i]))
    got = {}
    for line in (out / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        got[(r["index"], r["config"])] = r["verdict"]
    # (The CPU target leaves integer outputs as np.empty gives them: its
    # verdict on the unwritten half depends on that memory.)
    assert got.pop((3, "cpu-vs-numpy")) in ("PASS", "MISMATCH")
    want = {(0, "cpu-vs-numpy"): "PASS", (0, "host"): "PASS",
            (1, "cpu-vs-numpy"): "HANG", (1, "host"): "HANG",
            (2, "cpu-vs-numpy"): "CRASH", (2, "host"): "CRASH",
            (3, "host"): "MISMATCH",
            (4, "cpu-vs-numpy"): "PASS", (4, "host"): "PASS"}
    assert got == want, _gpu_report(out)
    assert rc == 1
    summary = json.loads((out / "summary.json").read_text())
    assert not summary.get("errors"), summary["errors"]
    # Each finding keeps a standalone reproducer; passing programs leave nothing.
    dirs = {e["verdict"] for e in summary["signatures"].values()}
    assert dirs == {"HANG", "CRASH", "MISMATCH"}
    assert sorted(p.name for p in (out / "programs").iterdir()) == ["p1.py", "p2.py", "p3.py"]
    assert not list((out / "art").iterdir())


def test_gpu_programs_run_on_the_host_config(tmp_path):
    """Generated programs through the whole run path on the reference
    backend (artifacts, the runner, outputs passed in poisoned, NumPy and
    CPU comparison): every family's outputs and reference agree in shape and
    dtype with the kernel's parameters."""
    out = tmp_path / "gpu"
    rc = gpu_campaign.main(["--seed", str(GPU_SEED), "--count", "8", "--configs", "host",
                            "--jobs", "2", "--out", str(out)])
    summary = json.loads((out / "summary.json").read_text())
    assert rc == 0 and summary["counts"]["host"] == {"PASS": 8}, _gpu_report(out)


def test_gpu_program_file_reruns_one_config(tmp_path):
    """A campaign program's file runs on its own: `--run host` compiles it
    for that config and checks it against NumPy and the CPU target."""
    prog = gpu_programs.generate(GPU_SEED, 3, ["gpu_gemm"])
    path = tmp_path / "prog.py"
    path.write_text(gpu_programs.source(prog, GPU_SEED, 3, 7))
    p = subprocess.run([sys.executable, str(path), "--run", "host"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0 and '"verdict": "PASS"' in p.stdout, p.stdout + p.stderr


def test_gpu_program_helpers_keep_every_dtype(tmp_path):
    """The CPU outputs a runner compares with survive their file bit for bit
    (bfloat16 and float8 too), and an output's poison differs from the
    expected value in every element."""
    import runpy

    import numpy as np

    prog = gpu_programs.generate(GPU_SEED, 0)
    path = tmp_path / "prog.py"
    path.write_text(gpu_programs.source(prog, GPU_SEED, 0, 7))
    mod = runpy.run_path(str(path), run_name="__fuzz__")
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(-300, 300, (3, 5)).astype(mod["NP"][d]) for d in
              ("float16", "bfloat16", "float32", "float64", "float8_e4m3", "float8_e5m2")]
    arrays += [rng.integers(-100, 100, (4,)).astype(mod["NP"][d]) for d in
               ("int8", "int16", "int32", "int64", "uint8")] + [rng.random((6,)) < 0.5]
    mod["save_arrays"](str(tmp_path / "a.npz"), arrays)
    back = mod["load_arrays"](str(tmp_path / "a.npz"))
    assert [a.dtype for a in back] == [a.dtype for a in arrays]
    for a, b in zip(arrays, back):
        assert a.tobytes() == b.tobytes()
        p = mod["poison"](a)
        assert p.dtype == a.dtype and p.shape == a.shape
        assert not (p.astype(np.float64) == a.astype(np.float64)).any()
