"""The documentation's generated reference and the pass-config registry.

- Every public name of the T namespace has a docstring of its own (a dtype:
  a row of the dtype table) and appears in the generated language page.
- Every pass config has one record (type, default, targets, meaning) that
  tl.compile validates against and the pass-config page renders; every
  `"tl.*"` key the compiler reads is a record (or one of TileLang's keys).
- benchmarks/records.json agrees with BENCHMARKS.md (scripts/perf_plots.py).

The scripts run as a user would run them (subprocess), from the checkout.
"""

import inspect
import os
import re
import subprocess
import sys
import types

import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.dtypes import DType
from tilelang_mlir.compiler.compile import TILELANG_PASS_CONFIGS
from tilelang_mlir.compiler.pass_config import PASS_CONFIGS, PassConfig, check_pass_configs

from support import ROOT  # noqa: E402 (the repository root)
SCRIPTS = os.path.join(ROOT, "scripts")
PACKAGE = os.path.dirname(os.path.abspath(tl.__file__))

needs_checkout = pytest.mark.skipif(
    not os.path.isfile(os.path.join(SCRIPTS, "gen_reference.py")),
    reason="the scripts of a checkout (this is an installed package without them)")


def public_names():
    return [n for n in dir(T) if not n.startswith("_")
            and not isinstance(getattr(T, n), types.ModuleType)]


def test_every_public_T_name_has_a_docstring_of_its_own():
    missing = []
    for name in public_names():
        obj = getattr(T, name)
        if isinstance(obj, DType):
            continue  # documented by the dtype table
        doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
        if not (isinstance(doc, str) and doc.strip()):
            missing.append(name)
    assert not missing, f"T.* names without a docstring: {missing}"


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    subprocess.run([sys.executable, os.path.join(SCRIPTS, "gen_reference.py"), str(out)],
                   check=True, capture_output=True, text=True)
    return {p: (out / p).read_text() for p in os.listdir(out)}


@needs_checkout
def test_the_language_page_lists_every_public_name(pages):
    page = pages["language.md"]
    entries = set(re.findall(r"\{py:\w+\} T\.(\w+)", page))
    table = set(re.findall(r"^\| `T\.(\w+)` \|", page, re.M))
    missing = [n for n in public_names() if n not in entries | table]
    assert not missing, f"missing from the language reference: {missing}"
    assert "(no docstring)" not in page
    # a builtin's signature does not show the builder it is handed
    assert "{py:function} T.copy(src, dst" in page


@needs_checkout
def test_the_host_page_documents_the_host_api(pages):
    page = pages["host.md"]
    for name in ("tl.compile", "tl.jit", "tl.autotune", "tl.load", "tl.Kernel",
                 "tl.Kernel.save", "Profiler.do_bench", "tl.library.custom_op"):
        assert re.search(r"\{py:\w+\} " + re.escape(name) + r"\b", page), name
    assert "(no docstring)" not in page


@needs_checkout
def test_the_pass_config_page_renders_every_record(pages):
    page = pages["pass_configs.md"]
    for name, record in PASS_CONFIGS.items():
        assert f"## `{name}`" in page
        assert record.meaning in page
    for name in TILELANG_PASS_CONFIGS:
        assert f"| `{name}` |" in page


@needs_checkout
def test_the_ods_pages_come_from_docs_generated(pages):
    assert pages["dialect.md"].startswith("# 'tile' Dialect")
    for pass_name in ("-tile-pipeline", "-convert-tile-to-nvvm", "-tile-fuse-lop3",
                      "-tile-merge-barriers"):
        assert f"### `{pass_name}`" in pages["passes.md"]
    assert "[TOC]" not in pages["dialect.md"]


def test_every_key_the_compiler_reads_is_a_record():
    read = set()
    for folder in ("compiler", "kernels"):
        for dirpath, _, files in os.walk(os.path.join(PACKAGE, folder)):
            for f in files:
                if f.endswith(".py"):
                    with open(os.path.join(dirpath, f)) as fh:
                        read |= set(re.findall(r"[\"'](tl\.[a-z0-9_]+)[\"']", fh.read()))
    unknown = read - set(PASS_CONFIGS) - set(TILELANG_PASS_CONFIGS)
    assert read and not unknown, f"pass configs read but not in the registry: {unknown}"


def test_records_are_well_formed():
    for name, r in PASS_CONFIGS.items():
        assert isinstance(r, PassConfig) and r.name == name and name.startswith("tl.")
        assert r.type in ("bool", "int", "path") and r.meaning and r.targets
        if r.default is not None:
            r.check(r.default)  # a default the record itself refuses is a bug


@pytest.mark.parametrize("configs, message", [
    ({"tl.no_such_knob": True}, "unknown pass config 'tl.no_such_knob'; known: tl.cluster_size"),
    ({"tl.cluster_size": 9}, "'tl.cluster_size' must be an int from 1 to 8, got 9"),
    ({"tl.cluster_size": True}, "'tl.cluster_size' must be an int from 1 to 8"),
    ({"tl.producer_registers": 100}, "must be a multiple of 8 from 24 to 256, got 100"),
    ({"tl.exp2_emulation": 1}, "must be 0 (off) or an int from 2 to 64, got 1"),
    ({"tl.persistent_sms": -1}, "'tl.persistent_sms' must be an int >= 0"),
    ({"tl.narrow_index": "yes"}, "'tl.narrow_index' must be True or False, got 'yes'"),
    ({"tl.trace_dir": 3}, "'tl.trace_dir' must be a folder path, got 3"),
])
def test_bad_pass_configs_name_the_key_and_what_is_accepted(configs, message):
    with pytest.raises(ValueError) as e:
        check_pass_configs(configs)
    assert message in str(e.value)


def test_tl_compile_validates_against_the_registry():
    @T.prim_func
    def add_one(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                B[i] = A[i] + 1.0

    with pytest.raises(ValueError, match="'tl.cluster_size' must be an int from 1 to 8"):
        tl.compile(add_one, out_idx=[1], target="cpu", pass_configs={"tl.cluster_size": 0})
    with pytest.raises(ValueError, match="unknown pass config 'tl.clustr_size'; known: "):
        tl.compile(add_one, out_idx=[1], target="cpu", pass_configs={"tl.clustr_size": 2})
    # accepted values: defaults of every record, and TileLang's keys
    ok = {name: r.default for name, r in PASS_CONFIGS.items()
          if r.default is not None and r.type != "path"}
    ok["tl.disable_tma_lower"] = True
    kernel = tl.compile(add_one, out_idx=[1], target="cpu", pass_configs=ok)
    import numpy as np

    a = np.random.default_rng(0).standard_normal(128).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a + 1.0)


@needs_checkout
def test_benchmark_records_agree_with_benchmarks_md(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(SCRIPTS, "perf_plots.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@needs_checkout
def test_a_record_that_differs_from_the_log_is_caught(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("perf_plots",
                                                  os.path.join(SCRIPTS, "perf_plots.py"))
    perf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(perf)
    cards = perf.load_records()
    record = dict(cards["H200"][0])
    record["cases"] = [list(record["cases"][0])]
    record["cases"][0][1] = 123456  # a number the section does not hold
    problems = perf.check({"H200": [record]})
    assert any("123456 is not in its section" in p for p in problems)
    record["section"] = "no such heading"
    assert any("no section" in p for p in perf.check({"H200": [record]}))
