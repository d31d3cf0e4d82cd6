"""scripts/tilelang_conformance.py's comparison (no TileLang checkout needed):
the denominator is the tests TileLang passes, less those out of scope here
by a named rule (per test, or for a whole file that stops at a refusal);
every other test TileLang passes counts, failing or missing here."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _script():
    spec = importlib.util.spec_from_file_location(
        "tilelang_conformance", os.path.join(ROOT, "scripts", "tilelang_conformance.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(test, status, detail=""):
    return {"test": test, "file": test.split("::")[0], "status": status, "detail": detail}


def test_merge_counts_in_scope_tests_that_tilelang_passes():
    conf = _script()
    theirs = [_row("language/a.py::test_1", "PASS"), _row("language/a.py::test_2", "PASS"),
              _row("language/a.py::test_3", "FAIL"), _row("language/b.py::test_x", "PASS"),
              _row("language/c.py::test_y", "PASS"), _row("cuda/d.py::test_z", "PASS"),
              _row("cuda/e.py::*", "OUT", "Blackwell")]
    ours = [_row("language/a.py::test_1", "PASS"),
            _row("language/a.py::test_2", "OUT", "checks the text of TileLang's CUDA C++ (x)"),
            _row("language/a.py::test_3", "PASS"),
            _row("language/b.py::language.b", "OUT", "TVM's IR and pass APIs (tvm.ir)"),
            _row("cuda/d.py::test_z", "FAIL", "AssertionError")]
    got = conf.merge(ours, theirs)
    assert got["per_folder"]["language"] == {"tilelang_pass": 4, "out_here": 2, "in_scope": 2,
                                            "ours_pass": 1}
    assert got["per_folder"]["cuda"] == {"tilelang_pass": 1, "out_here": 0, "in_scope": 1,
                                        "ours_pass": 0}
    assert (got["in_scope"], got["ours_pass"]) == (3, 1)
    assert abs(got["ratio"] - 1 / 3) < 1e-12
    missing = {m["test"]: m["ours"] for m in got["not_passing_here"]}
    assert missing == {"language/c.py::test_y": "MISSING", "cuda/d.py::test_z": "FAIL"}
    assert got["out_reasons"] == {"checks the text of TileLang's CUDA C++": 1,
                                  "TVM's IR and pass APIs": 1}


def test_a_refusal_names_its_rule_and_source_text_checks_are_out():
    conf = _script()
    row = conf.classify_failure(_row("x.py::t", "FAIL", "NotImplementedError: not supported by "
                                     "tilelang-mlir: tvm.ir (why) (out of scope: TVM's IR and "
                                     "pass APIs)"))
    assert row["status"] == "OUT" and row["detail"].startswith("TVM's IR and pass APIs")
    plain = conf.classify_failure(_row("x.py::t", "FAIL", "AssertionError: values differ"))
    assert plain["status"] == "FAIL"
