"""The CI slice of the fuzzers: fixed seeds, a couple of minutes each.

`make test` runs these (the `pytest` target collects test/python and
test/fuzz). A failure prints every failure signature with its reproducer:
the tile-opt input and command, or the generated tile program (a standalone
file: run it with .venv/bin/python). The long runs are in README.md.
"""

from __future__ import annotations

import json
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
