"""TileLang's public surface (compat/surface.json, written by
scripts/tilelang_surface.py from the pinned TileLang checkout) against the
tree as it is now: every name and module path is implemented, refused with
a reason (compat/refusals.py) or pending with the work that adds it
(compat/pending.py). Needs no TileLang checkout.

The check runs in a subprocess (it installs the `tilelang` names)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tilelang_mlir.compat import pending, refusals
from tilelang_mlir.compat.surface import STATUSES, fraction, load, markdown


@pytest.fixture(scope="module")
def result():
    proc = subprocess.run([sys.executable, "-m", "tilelang_mlir.compat.surface", "--json"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_surface_file_holds_names_only():
    data = load()
    assert data["tilelang_commit"] and data["releases"]
    name = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
    for surface, entry in data["surfaces"].items():
        assert entry["kind"] in ("module", "class") and entry["names"], surface
        for n in entry["names"]:
            assert name.match(n), (surface, n)
    path = re.compile(r"^tilelang(\.[A-Za-z_][A-Za-z0-9_]*)*$")
    for p, releases in data["modules"].items():
        assert path.match(p) and releases, p


def _gaps(result):
    """(missing, pending) rows of `result`: names that are neither
    implemented nor refused."""
    missing, waiting = [], {}
    for s, rows in result["surfaces"].items():
        for n, (st, d) in rows.items():
            if st == "missing":
                missing.append(f"{s}.{n}: {d}")
            elif st == "pending":
                waiting.setdefault(d, []).append(f"{s}.{n}")
    for p, (st, d) in result["modules"].items():
        if st == "missing":
            missing.append(f"module {p}: {d}")
        elif st == "pending":
            waiting.setdefault(d, []).append(f"module {p}")
    return missing, waiting


def test_every_name_is_in_a_registry(result):
    """A name that is not implemented is refused (compat/refusals.py) or
    listed as pending (compat/pending.py), and a registry lists no name
    that is in fact implemented."""
    missing, _ = _gaps(result)
    assert not missing, "\n".join(missing)


# The pending names left, each with the work that adds it (compat/pending.py
# says what it needs). Issue 43's acceptance is none, which is where the list
# stands (T.copy_cluster was the last): no name joins it
# (test_every_name_is_in_a_registry fails on a listed name that is served).
PENDING_AT_MOST: set = set()


def test_pending_names_only_shrink(result):
    """Every name of TileLang's surface is implemented or refused with a
    reason, except the pending names recorded above: a name that becomes
    pending (a surface name not served, a refusal withdrawn) fails here."""
    missing, waiting = _gaps(result)
    pending_now = {n for names in waiting.values() for n in names}
    grown = sorted(pending_now - PENDING_AT_MOST)
    lines = missing + [f"newly pending: {n}" for n in grown]
    assert not lines, "neither implemented nor refused:\n" + "\n".join(lines)


def test_in_scope_names_are_at_least_95_percent_implemented(result):
    """Issue 43: >= 95% of the in-scope names (all but the refused ones)
    are implemented."""
    done, scope = fraction(result)
    assert done / scope >= 0.95, f"{done} of {scope} in-scope names implemented"


def test_the_gap_check_sees_an_unlisted_name():
    """The check itself: a surface name that is not served, refused or
    pending comes out missing, and a pending one pending."""
    from tilelang_mlir.compat.surface import _status

    assert _status("tilelang.language", "no_such_name_here", False)[0] == "missing"
    assert _status("tilelang.language", "ptx_ldmatrix", False)[0] == "refused"
    some = next(iter(pending.pending_names("tilelang.language")), None)
    if some is not None:
        assert _status("tilelang.language", some, False)[0] == "pending"
        assert _status("tilelang.language", some, True)[0] == "missing"
    assert _status("tilelang.language", "launch_thread", True)[0] == "implemented"
    assert _status("tilelang.language", "ptx_ldmatrix", True)[0] == "missing"


def test_the_implemented_fraction_is_reported(result, capsys):
    done, scope = fraction(result)
    assert 0 < done <= scope
    host = {s: rows for s, rows in result["surfaces"].items() if s != "tilelang.language"}
    h_done, h_scope = fraction({"surfaces": host})
    with capsys.disabled():
        print(f"\nTileLang surface: {done} of {scope} in-scope names implemented "
              f"({100.0 * done / scope:.1f}%); host API (all but tilelang.language): "
              f"{h_done} of {h_scope} ({100.0 * h_done / h_scope:.1f}%)")
    # The host API is this work's own: nothing of it waits on another helper.
    assert h_done / h_scope >= 0.95


def test_statuses_and_reasons_are_well_formed(result):
    for surface, rows in result["surfaces"].items():
        for n, (status, detail) in rows.items():
            assert status in STATUSES, (surface, n, status)
            if status == "refused":
                assert len(detail) > 20, (surface, n, detail)
            if status == "pending":
                assert detail in pending.SCOPES, (surface, n, detail)
    for p, (status, detail) in result["modules"].items():
        assert status in STATUSES and (status != "refused" or detail), p


def test_the_registries_list_only_names_of_the_surface():
    data = load()
    for surface, table in refusals.REFUSED.items():
        listed = set(data["surfaces"][surface]["names"])
        stray = sorted(set(table) - listed)
        assert not stray, f"compat/refusals.py refuses {surface} names TileLang lacks: {stray}"


def test_refused_names_raise_their_reason(tmp_path):
    code = r"""
import tilelang_mlir.compat as compat
compat.install(force=True)
import tilelang, tilelang.language as T
from tilelang_mlir.compat import refusals
checks = [(T, "tilelang.language", "ptx_ldmatrix"), (T, "tilelang.language", "tcgen05_gemm"),
          (tilelang, "tilelang", "lower"), (__import__("tilelang.utils").utils, "tilelang.utils",
          "is_shared")]
for owner, surface, name in checks:
    try:
        getattr(owner, name)
        raise SystemExit(f"{surface}.{name} did not raise")
    except AttributeError as e:
        assert refusals.reason(surface, name) in str(e), (name, str(e))
# a name refused at its call (refusals.AT_CALL) raises at the program's line
from tilelang_mlir.base.errors import TileLangError
for surface, names in refusals.AT_CALL.items():
    assert surface == "tilelang.language", surface
    for name in names:
        @tilelang.jit(target="cpu")
        def prog():
            @T.prim_func
            def main(A: T.Tensor((8,), "float32")):
                with T.Kernel(1, threads=8):
                    getattr(T, name)("threadIdx.x", 8)
            return main
        try:
            prog()
            raise SystemExit(f"T.{name} compiled")
        except TileLangError as e:
            assert f"T.{name}" in str(e), (name, str(e))
# a module path of a release that is refused imports (a library imports its
# modules eagerly) and says why at the use of a name of it
import tilelang.engine.lower
from tilelang.engine.lower import lower
try:
    lower(None)
    raise SystemExit("tilelang.engine.lower.lower ran")
except ImportError as e:
    assert "TVM lowering engine" in str(e) and "(out of scope: TVM's IR" in str(e), e
# a module path no release has fails at the import
try:
    import tilelang.engine_of_no_release
    raise SystemExit("tilelang.engine_of_no_release imported")
except ImportError as e:
    assert "no compatible module" in str(e), e
print("REFUSALS OK")
"""
    script = tmp_path / "refusals_check.py"  # tile programs are read from their file
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert proc.returncode == 0 and "REFUSALS OK" in proc.stdout, proc.stdout + proc.stderr


def test_the_report_renders_every_surface(result):
    text = markdown(result)
    for surface in result["surfaces"]:
        assert f"`{surface}`" in text
    assert "in-scope names implemented" in text
