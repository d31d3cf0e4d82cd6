"""Where tilelang-mlir stands on every name of TileLang's public surface.

`surface.json` (next to this file, written by scripts/tilelang_surface.py
from a pinned TileLang checkout: names only) lists the public names of
`tilelang.language`, the host modules, `PassConfigKey`, the JIT kernel and
JIT function objects, the profiler, the autotuner and the env settings, and
every module path of the releases 0.1.6 to 0.1.15. `check()` gives each
name one status, read from the tree as it is now:

- implemented: the name exists through the compat route (a refused name
  never does: its access raises the refusal);
- no-op: a PassConfigKey member that is accepted and changes nothing here,
  for the reason the pass-config table gives;
- refused: listed in compat/refusals.py with the reason (for PassConfigKey
  members: a true value is refused, as the pass-config table says); its
  access raises the refusal, or its call does for the names of
  refusals.AT_CALL;
- pending: listed in compat/pending.py with the work that will add it;
- missing: none of these (test_compat_surface.py fails on it).

    python -m tilelang_mlir.compat.surface [--json]

runs the check in this process (it installs the compat route) and prints
the summary, or the whole result as JSON.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from typing import Callable, Dict, List, Tuple

from . import pending, refusals

HERE = os.path.dirname(os.path.abspath(__file__))
SURFACE_JSON = os.path.join(HERE, "surface.json")

STATUSES = ("implemented", "no-op", "refused", "pending", "missing")


def load() -> dict:
    with open(SURFACE_JSON) as f:
        return json.load(f)


def _has(obj, name: str) -> bool:
    try:
        getattr(obj, name)
    except Exception:  # a refusal raises; so does a name that is not there
        return False
    return True


def _tiny_kernel():
    """A compiled CPU kernel, its profiler and a @tilelang.jit object, for
    the members of the kernel and JIT function objects."""
    import tilelang
    import tilelang.language as T

    @tilelang.jit(out_idx=[-1], target="cpu")
    def scale(n: int = 8):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=n):
                for i in T.Parallel(n):
                    B[i] = A[i] * 2.0

        return main

    kernel = scale(8)
    return scale, kernel


def _objects() -> Dict[str, object]:
    import tilelang

    jit_obj, kernel = _tiny_kernel()
    from tilelang.autotuner import AutoTuner
    from tilelang.env import env

    return {
        "tilelang.JITKernel": kernel,
        "tilelang.jit()": jit_obj,
        "tilelang.Profiler": kernel.get_profiler(),
        "tilelang.autotuner.AutoTuner": AutoTuner.from_kernel(jit_obj, configs=[{"n": 8}]),
        "tilelang.env.env": env,
        "tilelang.PassConfigKey": tilelang.PassConfigKey,
    }


def _pass_config_status(key_enum, name: str) -> Tuple[str, str]:
    """A PassConfigKey member: this compiler's key, mapped or converted to
    ours (implemented), accepted without effect (no-op) or refused for a
    true value (refused), as compiler/pass_config.py's table says."""
    from ..compiler.pass_config import PASS_CONFIGS, TILELANG_PASS_CONFIGS

    value = getattr(key_enum, name).value
    if value in PASS_CONFIGS:
        return "implemented", f"{value}: this compiler's key"
    entry = TILELANG_PASS_CONFIGS[value]
    if entry.action in ("maps", "convert"):
        return "implemented", f"{value}: {entry.words()}"
    if entry.action == "refuse":
        return "refused", f"{value}: {entry.words()}"
    return "no-op", f"{value}: {entry.reason}"


def _status(surface: str, name: str, present: bool) -> Tuple[str, str]:
    why = refusals.reason(surface, name)
    scope = pending.pending_scope(surface, name)
    if present:
        if why is not None and name in refusals.AT_CALL.get(surface, ()):
            return "refused", why
        if why is not None:
            return "missing", f"implemented but also refused in compat/refusals.py: {why}"
        if scope is not None:
            return "missing", (f"implemented but still listed as pending ({scope}) in "
                               "compat/pending.py: remove it there")
        return "implemented", ""
    if why is not None:
        return "refused", why
    if scope is not None:
        return "pending", scope
    return "missing", "neither implemented, refused (compat/refusals.py) nor pending"


def _module_status(path: str) -> Tuple[str, str]:
    try:
        spec = importlib.util.find_spec(path)
    except ImportError as e:
        scope = pending.pending_scope("modules", path)
        if scope is not None:
            return "pending", scope
        why = refusals.module_reason(path)
        if why is None:
            return "missing", f"not served and no refusal prefix covers it ({e})"
        return "refused", why
    except Exception as e:  # a served parent that fails to import
        return "missing", f"{type(e).__name__}: {e}"
    if spec is None:
        why = refusals.module_reason(path)
        return ("refused", why) if why else ("missing", "not served")
    # An out-of-scope module imports, and its names refuse at their use
    # (compat/refused_module.py): refused, not implemented.
    from .refused_module import RefusedModule

    try:
        module = importlib.import_module(path)
    except Exception as e:
        return "missing", f"{type(e).__name__}: {e}"
    if isinstance(module, RefusedModule):
        return "refused", module._tl_why
    return "implemented", ""


def check(data: dict = None) -> dict:
    """The status of every name and module path of `data` (surface.json).
    Installs the compat route in this process."""
    from . import install

    data = data or load()
    install(force=True)
    objects = _objects()
    result: Dict[str, Dict[str, List[str]]] = {}
    for surface, entry in data["surfaces"].items():
        rows = result.setdefault(surface, {})
        if entry["kind"] == "module":
            owner = importlib.import_module(surface)
        else:
            owner = objects[surface]
        for name in entry["names"]:
            present = _has(owner, name)
            if surface == "tilelang.PassConfigKey" and present and \
                    refusals.reason(surface, name) is None:
                rows[name] = list(_pass_config_status(owner, name))
            else:
                rows[name] = list(_status(surface, name, present))
    for surface, names in pending.PENDING.items():
        if surface == "modules":
            continue
        listed = set(data["surfaces"].get(surface, {}).get("names", ()))
        for name in pending.pending_names(surface):
            if name not in listed:
                result.setdefault(surface, {})[name] = [
                    "missing", "listed in compat/pending.py but not a name of the surface"]
    modules = {path: list(_module_status(path)) for path in data["modules"]}
    for path in pending.pending_names("modules"):
        if path not in data["modules"]:
            modules[path] = ["missing", "listed in compat/pending.py but not a module path"]
        elif modules[path][0] == "implemented":
            modules[path] = ["missing", "served but still listed as pending in "
                                        "compat/pending.py: remove it there"]
    return {"tilelang_commit": data["tilelang_commit"], "tvm": data.get("tvm", ""),
            "releases": data["releases"], "surfaces": result, "modules": modules}


def counts(rows: Dict[str, List[str]]) -> Dict[str, int]:
    out = {s: 0 for s in STATUSES}
    for status, _ in rows.values():
        out[status] += 1
    return out


def fraction(result: dict) -> Tuple[int, int]:
    """(implemented, in scope) over all surfaces: in scope is every name
    that is not refused; implemented counts the no-op pass configs."""
    done = scope = 0
    for rows in result["surfaces"].values():
        c = counts(rows)
        done += c["implemented"] + c["no-op"]
        scope += len(rows) - c["refused"]
    return done, scope


def summary_lines(result: dict) -> List[str]:
    lines = []
    for surface, rows in result["surfaces"].items():
        c = counts(rows)
        lines.append(f"{surface:32} " + " ".join(f"{s} {c[s]:4}" for s in STATUSES))
    mc = counts(result["modules"])
    lines.append(f"{'module paths':32} " + " ".join(f"{s} {mc[s]:4}" for s in STATUSES))
    done, scope = fraction(result)
    lines.append(f"implemented {done} of {scope} in-scope names ({100.0 * done / scope:.1f}%)")
    return lines


def _grouped(rows: Dict[str, List[str]], status: str) -> Dict[str, List[str]]:
    groups: Dict[str, List[str]] = {}
    for name, (s, detail) in sorted(rows.items()):
        if s == status:
            groups.setdefault(detail, []).append(name)
    return groups


def markdown(result: dict) -> str:
    """The report of `check()` as markdown (docs/compat.md's surface section)."""
    done, scope = fraction(result)
    out = [f"TileLang at {result['tilelang_commit']} (TIR script names from the "
           f"{result['tvm']}); module paths of {', '.join(result['releases'])}.",
           "",
           f"**{done} of {scope} in-scope names implemented "
           f"({100.0 * done / max(scope, 1):.1f}%)**; refused names are out of scope.",
           "",
           "| surface | implemented | no-op | refused | pending | missing |",
           "|---|---|---|---|---|---|"]
    for surface, rows in result["surfaces"].items():
        c = counts(rows)
        out.append(f"| `{surface}` | " + " | ".join(str(c[s]) for s in STATUSES) + " |")
    mc = counts(result["modules"])
    out.append("| module paths | " + " | ".join(str(mc[s]) for s in STATUSES) + " |")
    out += ["", "Refused, by reason:", ""]
    reasons: Dict[str, List[str]] = {}
    for surface, rows in result["surfaces"].items():
        for why, names in _grouped(rows, "refused").items():
            label = "T." if surface == "tilelang.language" else f"{surface}."
            reasons.setdefault(why, []).extend(label + n for n in names)
    for why, names in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        out.append(f"- {why}: " + ", ".join(f"`{n}`" for n in names))
    pending_rows = [f"- {scope} ({len(names)}): " + ", ".join(f"`{n}`" for n in names)
                    for rows in result["surfaces"].values()
                    for scope, names in _grouped(rows, "pending").items()]
    if pending_rows:
        out += ["", "Pending (compat/pending.py), by the work that adds them:", ""]
        out += pending_rows
    else:
        out += ["", "Pending (compat/pending.py): none."]
    noops = []
    for surface, rows in result["surfaces"].items():
        noops += [f"`{n}` ({d})" for n, (s, d) in sorted(rows.items()) if s == "no-op"]
    if noops:
        out += ["", "Accepted pass configs that change nothing here: " + "; ".join(noops)]
    missing = [f"{surface}.{n}" for surface, rows in result["surfaces"].items()
               for n, (s, _) in rows.items() if s == "missing"]
    missing += [p for p, (s, _) in result["modules"].items() if s == "missing"]
    out += ["", "Missing: " + (", ".join(f"`{m}`" for m in missing) if missing else "none.")]
    return "\n".join(out)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    result = check()
    if "--json" in argv:
        json.dump(result, sys.stdout)
    else:
        print("\n".join(summary_lines(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
