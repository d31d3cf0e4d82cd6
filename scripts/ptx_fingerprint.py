"""Fingerprints of the code CI compiles: every program of every example
(`programs()`), for sm_80, sm_90a and the AMD chips, so that a change meant
to leave the generated code alone (a refactor) can prove it did.

    .venv/bin/python scripts/ptx_fingerprint.py save  DIR   # before the change
    .venv/bin/python scripts/ptx_fingerprint.py check DIR   # after: a table

`save` writes DIR/<program>.<target>.txt (the PTX, or the AMDGPU assembly)
and DIR/fingerprints.json (a digest and the register/spill report of each).
`check` compiles again and prints, per program and target, whether the code
is identical; where it is not, the register and spill reports before and
after (ptxas for CUDA, the assembly's own for AMD). A program that does not
compile for a target (too much shared memory on an AMD chip, no sparse
tensor cores) has its first error line as its code; an error that differs
only in its source location (the file and line of the tile program, which
a move of the program changes) counts as the same ("same error"). It exits
with 1 when any output differs or fails to compile where it compiled. `--only SUBSTR` restricts the
programs by name, `--targets cuda:sm_90a,...` the targets (all five take
about an hour on two cores; one target per process runs them in parallel,
each into its own DIR). No GPU is needed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ("cuda:sm_80", "cuda:sm_90a", "rocm:gfx90a", "rocm:gfx942", "rocm:gfx950")


# The examples as the tests list and load them (scripts/example_programs.py).
from example_programs import EXAMPLES, load  # noqa: E402


def _report(kernel, target: str) -> dict:
    if target.startswith("cuda"):
        from tilelang_mlir.compiler.cuda import resource_report

        return resource_report(kernel.ptxas_info or "")
    from tilelang_mlir.compiler.rocm import resource_report

    return resource_report(kernel.get_source())


def fingerprints(only: str = "", targets=TARGETS):
    """(key, code or error text, report) of every program and target."""
    import tilelang_mlir as tl

    for path in EXAMPLES:
        for name, program, out_idx in load(path).programs():
            if only and only not in name:
                continue
            for target in targets:
                key = f"{name}.{target.replace(':', '_')}"
                try:
                    kernel = tl.compile(program, out_idx=out_idx, target=target,
                                        pass_configs={"tl.disable_cache": True})
                    yield key, kernel.get_source(), _report(kernel, target)
                except Exception as e:  # noqa: BLE001 (a program that does not compile is data)
                    yield key, "ERROR " + str(e).splitlines()[0], {}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# "ERROR /path/file.py:50:9: error: ..." -> "ERROR error: ..."
_LOCATION = re.compile(r"^ERROR \S+:\d+:\d+: ")


def _same_error(folder: str, key: str, code: str) -> bool:
    """Whether `code` and the saved code of `key` are the same compile error
    but for its source location."""
    path = os.path.join(folder, key + ".txt")
    if not code.startswith("ERROR ") or not os.path.exists(path):
        return False
    with open(path) as f:
        old = f.read()
    return _LOCATION.sub("ERROR ", old) == _LOCATION.sub("ERROR ", code)


def save(folder: str, only: str, targets=TARGETS) -> int:
    os.makedirs(folder, exist_ok=True)
    table = {}
    for key, code, report in fingerprints(only, targets):
        with open(os.path.join(folder, key + ".txt"), "w") as f:
            f.write(code)
        table[key] = {"sha256": _digest(code), "report": report}
        print(f"{key:60} {table[key]['sha256']}", flush=True)
    with open(os.path.join(folder, "fingerprints.json"), "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
    print(f"saved {len(table)} fingerprints in {folder}")
    return 0


def _regs(report: dict) -> str:
    """ptxas: registers and spill bytes; AMD: VGPRs/AGPRs/SGPRs and scratch."""
    if not report:
        return "-"
    if "vgprs" in report:
        return (f"{report['vgprs']} v / {report['agprs']} a / {report['sgprs']} s regs, "
                f"{report['scratch_bytes']} B scratch")
    return (f"{report.get('registers', '?')} regs, "
            f"{report.get('spill_stores', 0)}/{report.get('spill_loads', 0)} B spill")


def check(folder: str, only: str, targets=TARGETS) -> int:
    with open(os.path.join(folder, "fingerprints.json")) as f:
        before = json.load(f)
    rows, differ = [], 0
    seen = set()
    for key, code, report in fingerprints(only, targets):
        seen.add(key)
        old = before.get(key)
        if old is None:
            rows.append((key, "new", "-", _regs(report)))
            differ += 1
        elif old["sha256"] == _digest(code):
            rows.append((key, "identical", "", ""))
        elif _same_error(folder, key, code):
            rows.append((key, "same error", "", ""))
        else:
            rows.append((key, "DIFFERS", _regs(old["report"]), _regs(report)))
            differ += 1
    suffixes = tuple("." + t.replace(":", "_") for t in targets)
    for key in sorted(set(before) - seen):
        # (a baseline of more targets than this check: only these count)
        if (not only or only in key) and key.endswith(suffixes):
            rows.append((key, "missing", _regs(before[key]["report"]), "-"))
            differ += 1
    print(f"| program.target | code | before | after |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    same = sum(1 for r in rows if r[1] == "identical")
    errors = sum(1 for r in rows if r[1] == "same error")
    print(f"\n{same} of {len(rows)} identical, {errors} the same compile error "
          f"(but for its location); {differ} differ")
    return 1 if differ else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("save", "check"))
    parser.add_argument("folder")
    parser.add_argument("--only", default="", help="programs whose name contains this")
    parser.add_argument("--targets", default=",".join(TARGETS),
                        help="comma-separated targets (default: all five)")
    args = parser.parse_args(argv)
    targets = tuple(t for t in args.targets.split(",") if t)
    unknown = set(targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}; choose from {', '.join(TARGETS)}")
    run = save if args.mode == "save" else check
    return run(args.folder, args.only, targets)


if __name__ == "__main__":
    sys.exit(main())
