"""TileLang names not implemented yet, each with the work that will add it.

A name of `compat/surface.json` is implemented, refused (`compat/refusals.py`)
or listed here. This list only shrinks: test/python/compat/test_compat_surface.py
fails on a listed name that is in fact implemented (remove it here), and on
a surface name that is none of the three. The scopes are those of issue
43's split (the helpers b2-syntax, b3-gpuops and b4-ops; the integrator owns
TileLang's safe-memory semantics); "unassigned" names no helper's scope
covers.
"""

from __future__ import annotations

from typing import Dict, Optional

SCOPES = {
    "b2-syntax": "issue 43, b2-syntax: syntax forms, annotations, dtypes, eager-style jit, "
                 "program structure (buffers, views, loops, let/Var, expressions)",
    "b3-gpuops": "issue 43, b3-gpuops: warp shuffles/votes/reductions, lane and warp ids, "
                 "atomics, ldg/stg, PDL, grid sync, clusters, pointers, named barriers",
    "b4-ops": "issue 43, b4-ops: reducers, reductions, scans, RNG, fast and IEEE math, math "
              "intrinsics, casts, copy/gemm options, transpose/im2col, annotate_* hints",
    "integrator": "issue 43, the integrator: TileLang's safe-memory-access semantics",
    "unassigned": "issue 43: in no helper's scope yet",
}

# surface -> scope -> names
PENDING: Dict[str, Dict[str, str]] = {}


def _index() -> Dict[str, Dict[str, str]]:
    out: Dict[str, Dict[str, str]] = {}
    for surface, scopes in PENDING.items():
        table = out.setdefault(surface, {})
        for scope, names in scopes.items():
            if scope not in SCOPES:
                raise AssertionError(f"pending: unknown scope {scope!r}")
            for n in names.split():
                if n in table:
                    raise AssertionError(f"pending: {surface} {n} listed twice")
                table[n] = scope
    return out


_INDEX = _index()


def pending_scope(surface: str, name: str) -> Optional[str]:
    """The scope that will implement `name` of `surface`, or None."""
    return _INDEX.get(surface, {}).get(name)


def pending_names(surface: str) -> Dict[str, str]:
    """name -> scope of the pending names of `surface`."""
    return dict(_INDEX.get(surface, {}))
