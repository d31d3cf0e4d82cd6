"""The package's layers import one way, and the runtime stands alone.

Layers, bottom to top (a module may import its own layer and those below;
`LAYERS` maps each module to one):

    base      dtypes, signatures, the chip table, targets, grid expressions,
              the compiled-artifact record, errors (no MLIR)
    runtime   running compiled kernels (no MLIR, no frontend, no compiler)
    tools     developer tools over IR text
    language  the T.* operations and the values of tile programs
    frontend  tile programs to tile IR
    T         `tilelang_mlir.language` itself, the namespace: it also offers
              the frontend's T.prim_func and T.macro
    compiler  pass pipelines, one backend per target kind
    autotuner `tl.autotune`: the tuner, its cache, its compile workers
    kernels   the kernel library (no test helper: not `tilelang_mlir.testing`,
              not a file of test/python)
    torch     the PyTorch integration: ops, library, models, distributed,
              sparse
    top       the package's namespace, `testing` (helpers for examples and
              tests), and the torch modules under their public names
              (`tilelang_mlir.ops` is `tilelang_mlir.torch.ops`)
    compat    the `tilelang` module names of TileLang programs (over everything)

`import tilelang_mlir as tl` imports the namespace, whose names load lazily:
each `tl.X` a module uses counts as an import of the module X comes from
(`tilelang_mlir._LAZY`), so the kernel library may call `tl.autotune` but
not `tl.distributed`.

The second half checks what the layering is for: a kernel compiled and
saved beforehand loads and runs in a process where the MLIR bindings, the
frontend and the compiler cannot be imported.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T

# The source tree where there is one (the build's copy may hold stale links
# of moved files), else the installed package (a wheel test).
_SOURCE = os.path.join(os.path.dirname(__file__), "..", "..", "python", "tilelang_mlir")
PACKAGE = (os.path.abspath(_SOURCE) if os.path.isdir(_SOURCE)
           else os.path.dirname(os.path.abspath(tl.__file__)))

RANKS = {"base": 0, "runtime": 1, "tools": 1, "language": 2, "frontend": 3, "T": 4,
         "compiler": 5, "autotuner": 6, "kernels": 7, "torch": 8, "top": 9, "compat": 10}
# Layers that must import no MLIR binding.
NO_MLIR = ("base", "runtime")
# The generated MLIR bindings: not ours to layer.
MLIR = ("_mlir_libs", "dialects", "ir", "passmanager", "execution_engine", "rewrite",
        "_mlir")


def layer_of(module: str) -> str:
    """The layer of a module of the package ("tilelang_mlir.x.y")."""
    parts = module.split(".")[1:]
    if not parts:
        return "top"
    if parts == ["language"]:
        return "T"
    if parts[0] in RANKS:
        return parts[0]
    return "top"


def _modules():
    for root, dirs, files in os.walk(PACKAGE):
        rel = os.path.relpath(root, PACKAGE)
        top = rel.split(os.sep)[0]
        if top in MLIR:
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if not f.endswith(".py") or not os.path.isfile(os.path.join(root, f)):
                continue
            parts = ["tilelang_mlir"] + ([] if rel == "." else rel.split(os.sep))
            if f != "__init__.py":
                parts.append(f[:-3])
            yield ".".join(parts), os.path.join(root, f), f == "__init__.py"


def _imports(module: str, path: str, is_package: bool):
    """Every module of the package that `path` imports, at any depth of its
    code (imports inside functions count: they run too), with the line."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    package = module.split(".") if is_package else module.split(".")[:-1]
    namespaces = set()  # names bound to the package itself (`import tilelang_mlir as tl`)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "tilelang_mlir":
                    namespaces.add(alias.asname or alias.name)
                elif alias.name.split(".")[0] in ("tilelang_mlir", "mlir"):
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] not in ("tilelang_mlir", "mlir"):
                continue
            if target == "tilelang_mlir":
                # `from .. import x`: a module, or a name of the namespace
                for alias in node.names:
                    yield _namespace_name(alias.name), node.lineno
            elif node.module is None:
                for alias in node.names:  # `from . import x`: x is a module
                    yield f"{target}.{alias.name}", node.lineno
            else:
                for alias in node.names:  # `from ..language import state`: a module
                    sub = f"{target}.{alias.name}"
                    yield (sub if _is_module(sub) else target), node.lineno
    for node in ast.walk(tree):  # `tl.X`
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in namespaces):
            yield _namespace_name(node.attr), node.lineno


def _namespace_name(name: str) -> str:
    """The module that `tilelang_mlir.<name>` comes from: a module of the
    package, or the one a lazy name of the namespace loads."""
    if name in tl._LAZY:
        return f"tilelang_mlir.{tl._LAZY[name][0]}"
    if name in MLIR or _is_module(f"tilelang_mlir.{name}"):
        return f"tilelang_mlir.{name}"
    return "tilelang_mlir"


def _is_module(name: str) -> bool:
    """Whether `name` ("tilelang_mlir.x.y") is a module or package of ours."""
    path = os.path.join(PACKAGE, *name.split(".")[1:])
    return os.path.isfile(path + ".py") or os.path.isdir(path)


def _is_mlir(target: str) -> bool:
    parts = target.split(".")
    return parts[0] == "mlir" or (len(parts) > 1 and parts[1] in MLIR)


def against_layers(module: str, path: str, is_package: bool):
    """(module, line, imported, why) of each import of one module against
    the layers."""
    bad = []
    mine = layer_of(module)
    for target, line in _imports(module, path, is_package):
        if _is_mlir(target):
            if mine in NO_MLIR:
                bad.append((module, line, target, f"the {mine} layer needs no MLIR"))
            continue
        theirs = layer_of(target)
        if theirs != mine and RANKS[theirs] >= RANKS[mine]:
            bad.append((module, line, target, f"{mine} imports {theirs}"))
    return bad


def upward_imports():
    """(module, line, imported, why) of every import against the layers."""
    return [b for module, path, is_package in _modules()
            for b in against_layers(module, path, is_package)]


def test_layers_import_one_way():
    bad = upward_imports()
    assert not bad, "imports against the layers:\n" + "\n".join(
        f"  {m}:{line} imports {t} ({why})" for m, line, t, why in bad)


def test_the_layer_check_sees_an_upward_import(tmp_path):
    """The check itself: an import inside a function, relative, upward."""
    source = "def f():\n    from ..compiler.compile import compile\n"
    path = tmp_path / "m.py"
    path.write_text(source)
    found = list(_imports("tilelang_mlir.runtime.m", str(path), False))
    assert found == [("tilelang_mlir.compiler.compile", 2)]
    assert layer_of(found[0][0]) == "compiler" and layer_of("tilelang_mlir.runtime.m") == \
        "runtime"
    assert layer_of("tilelang_mlir.language") == "T"
    assert layer_of("tilelang_mlir.language.math") == "language"


def test_the_new_layers_rank_autotuner_kernels_torch_then_the_package():
    assert [layer_of(m) for m in ("tilelang_mlir.compiler.compile", "tilelang_mlir.autotuner",
                                  "tilelang_mlir.autotuner.pool", "tilelang_mlir.kernels.gemm",
                                  "tilelang_mlir.torch.ops", "tilelang_mlir.ops",
                                  "tilelang_mlir.testing", "tilelang_mlir",
                                  "tilelang_mlir.compat.autotuner")] == [
        "compiler", "autotuner", "autotuner", "kernels", "torch", "top", "top", "top", "compat"]
    order = ["compiler", "autotuner", "kernels", "torch", "top", "compat"]
    assert [RANKS[layer] for layer in order] == sorted(RANKS[layer] for layer in order)
    assert len({RANKS[layer] for layer in order}) == len(order)


# (module, source, the imports against the layers it makes: (line, imported))
UPWARD = [
    # the kernel library and the test helpers
    ("tilelang_mlir.kernels.k", "from tilelang_mlir.testing import to_numpy\n",
     [(1, "tilelang_mlir.testing")]),
    ("tilelang_mlir.kernels.k", "def f():\n    from ..testing import to_numpy\n",
     [(2, "tilelang_mlir.testing")]),
    # `tl.X`: the layer of the module the lazy name loads
    ("tilelang_mlir.kernels.k", "import tilelang_mlir as tl\nx = tl.autotune\n"
                                "y = tl.distributed.empty\n",
     [(3, "tilelang_mlir.torch.distributed")]),
    ("tilelang_mlir.kernels.attention.k", "from ... import library\n",
     [(1, "tilelang_mlir.torch.library")]),
    ("tilelang_mlir.autotuner.k", "from ..kernels import gemm\nfrom ..compiler import compile\n",
     [(1, "tilelang_mlir.kernels.gemm")]),
    ("tilelang_mlir.autotuner.k", "import tilelang_mlir\nk = tilelang_mlir.ops.gemm\n",
     [(2, "tilelang_mlir.ops")]),
    # the torch layer reaches its own modules directly, not by their public names
    ("tilelang_mlir.torch.k", "from . import ops\nfrom .. import models\n",
     [(2, "tilelang_mlir.models")]),
    ("tilelang_mlir.compiler.k", "from ..autotuner import cached_config\n",
     [(1, "tilelang_mlir.autotuner")]),
    ("tilelang_mlir.torch.k", "from .. import autotuner, kernels, testing\n",
     [(1, "tilelang_mlir.testing")]),
]


@pytest.mark.parametrize("module, source, expected", UPWARD)
def test_the_layer_check_sees_upward_imports_of_the_new_layers(module, source, expected,
                                                               tmp_path):
    path = tmp_path / "k.py"
    path.write_text(source)
    found = [(line, target) for _, line, target, _ in against_layers(module, str(path), False)]
    assert found == expected


def test_the_package_imports_no_test_file():
    """No module of the package (the kernel library above all) imports a
    module of test/python (the `support` package, its modules, a test file)
    by its name: those are not installed."""
    here = os.path.dirname(os.path.abspath(__file__))
    helpers = {"support"}
    for _, _, files in os.walk(here):
        helpers |= {f[:-3] for f in files if f.endswith(".py") and f != "__init__.py"}
    assert {"support", "devices", "conftest", "test_layers", "test_ops"} <= helpers
    found = []
    for module, path, _ in _modules():
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            found += [(module, node.lineno, n) for n in names
                      if n and n.split(".")[0] in helpers]
    assert not found, found


MOVED = ["ops", "library", "models", "distributed", "sparse"]


@pytest.mark.parametrize("name", MOVED)
def test_a_moved_module_keeps_its_public_name(name):
    """`tilelang_mlir.ops` (...) is the torch layer's module itself, so that
    monkeypatching either name patches what the code calls; the old-name
    file holds nothing else."""
    import importlib

    old = importlib.import_module(f"tilelang_mlir.{name}")
    assert old is importlib.import_module(f"tilelang_mlir.torch.{name}")
    assert getattr(tl, name) is old
    if name in ("library", "distributed"):
        assert tl._LAZY[name] == (f"torch.{name}", None)
    with open(os.path.join(PACKAGE, f"{name}.py")) as f:
        tree = ast.parse(f.read())
    assert not [n for n in tree.body
                if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))]


def test_the_autotuner_package_keeps_its_names():
    from tilelang_mlir import autotuner
    from tilelang_mlir.autotuner import (AutotuneError, AutotuneResult, AutoTuner, autotune,
                                         cached_config)

    assert autotune is tl.autotune and tl.AutotuneError is AutotuneError
    assert {"autotune", "AutoTuner", "AutotuneResult", "AutotuneError"} == set(autotuner.__all__)
    assert cached_config.__module__ == AutoTuner.__module__ == "tilelang_mlir.autotuner.tuner"
    assert AutotuneResult.__module__ == "tilelang_mlir.autotuner.tuner"


def chip_name_comparisons(source: str, path: str):
    """(line, name) of every comparison or membership test in `source`
    against a chip's name (outside docstrings): a fact parsed from the name
    where the chip table should be read."""
    from tilelang_mlir.base import chips

    tree = ast.parse(source, path)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))
                  and n.body and isinstance(n.body[0], ast.Expr)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = []
            for c in [node.left] + node.comparators:
                # `chip in ("sm_80", "sm_90a")`: each name of the collection
                operands += c.elts if isinstance(c, (ast.Tuple, ast.List, ast.Set)) else [c]
            for c in operands:
                if (isinstance(c, ast.Constant) and isinstance(c.value, str)
                        and id(c) not in docstrings and chips.find(c.value)):
                    found.append((node.lineno, c.value))
    return found


def test_every_python_place_reads_the_chip_table():
    """No module but the table spells a chip's facts: the chip names appear
    only in base/chips.py (and in docstrings and messages)."""
    found, scanned = [], 0
    for module, path, _ in _modules():
        if module == "tilelang_mlir.base.chips":
            continue
        scanned += 1
        with open(path) as f:
            found += [(path, line, name) for line, name in chip_name_comparisons(f.read(), path)]
    assert scanned > 50, f"scanned only {scanned} modules"
    assert not found, "chip names compared outside the chip table (read base/chips.py):\n" + \
        "\n".join(f"  {path}:{line} {name!r}" for path, line, name in found)


def test_the_chip_check_sees_a_comparison_with_a_chip_name():
    source = ('"""Docstrings may name sm_90a."""\n'
              'def f(chip):\n'
              '    """sm_80 too."""\n'
              '    return chip == "sm_90a" or chip in ("gfx942",)\n')
    assert sorted(chip_name_comparisons(source, "m.py")) == [(4, "gfx942"), (4, "sm_90a")]


def test_chip_table_is_plain_data():
    from tilelang_mlir.base import chips

    assert len({c.name for c in chips.CHIPS}) == len(chips.CHIPS)
    for c in chips.CHIPS:
        assert c.vendor in ("nvidia", "amd")
        assert c.warp_size == (32 if c.vendor == "nvidia" else 64)
        assert (c.ptx_version > 0) == (c.vendor == "nvidia")
        assert not (c.wgmma and c.mfma)
    assert chips.nvidia_chip_for_capability(9, 0) == "sm_90a"
    assert chips.nvidia_chip_for_capability(8, 6) == "sm_86"
    assert chips.nvidia_chip_for_capability(10, 0) == "sm_100"  # not in the table: refused
    from tilelang_mlir.base.target import parse_target

    assert parse_target("cuda:sm_90a").chip.wgmma and not parse_target("cuda:sm_90").chip.wgmma
    assert parse_target("rocm").warp_size == 64 and parse_target("cpu").warp_size == 1


def test_the_chip_table_prints_as_an_x_macro(tmp_path):
    """The build runs the script with an output path (the C++ table,
    dialects/Tile/Utils/Chips.inc); without one it prints the same text."""
    script = os.path.join(os.path.dirname(__file__), "..", "..", "cmake", "gen_chip_table.py")
    out = subprocess.run([sys.executable, script], capture_output=True, text=True, check=True)
    from tilelang_mlir.base import chips

    rows = [line for line in out.stdout.splitlines() if line.startswith("TILE_CHIP(")]
    assert len(rows) == len(chips.CHIPS)
    assert 'TILE_CHIP("sm_90a", NVIDIA, 90, 32, 232448, 81, 132, 1, 1, 1, 1, 1, 0)' in rows
    inc = tmp_path / "Chips.inc"
    subprocess.run([sys.executable, script, str(inc)], check=True)
    assert inc.read_text() == out.stdout


# ---------------------------------------------------------------------------
# A saved kernel runs without MLIR, the frontend and the compiler
# ---------------------------------------------------------------------------

# Run in a fresh interpreter: every module of the MLIR bindings, the frontend
# and the compiler is blocked (a None entry in sys.modules makes its import
# fail), then the kernel is loaded and called.
CHILD = textwrap.dedent("""
    import json, sys
    BLOCKED = ("mlir", "tilelang_mlir._mlir_libs", "tilelang_mlir.ir", "tilelang_mlir.dialects",
               "tilelang_mlir.passmanager", "tilelang_mlir.execution_engine",
               "tilelang_mlir.frontend", "tilelang_mlir.compiler", "tilelang_mlir.language")
    for name in BLOCKED:
        sys.modules[name] = None
    import numpy as np
    import tilelang_mlir as tl

    folder, inputs, output = sys.argv[1:4]
    kernel = tl.load(folder)
    data = np.load(inputs)
    result = kernel(data["a"], data["b"])
    np.save(output, result)
    loaded = sorted(m for m in sys.modules if m.startswith(("tilelang_mlir", "mlir"))
                    and sys.modules[m] is not None)
    print(json.dumps(loaded))
""")


def _saxpy(n: int, block: int):
    @T.prim_func
    def saxpy(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"),
              C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    C[bx * block + i] = T.float32(2) * A[bx * block + i] + T.exp(B[bx * block + i])

    return saxpy


def test_a_saved_cpu_kernel_runs_without_mlir_the_frontend_or_the_compiler(tmp_path):
    n = int(np.random.randint(100, 2000))
    kernel = tl.compile(_saxpy(n, 128), out_idx=[2], target="cpu")
    kernel.save(tmp_path / "saxpy")
    manifest = json.loads((tmp_path / "saxpy" / "manifest.json").read_text())
    assert manifest["target"] == "cpu" and manifest["format_version"] == 3
    a = np.random.randn(n).astype(np.float32)
    b = np.random.randn(n).astype(np.float32)
    np.savez(tmp_path / "inputs.npz", a=a, b=b)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "saxpy"),
                           str(tmp_path / "inputs.npz"), str(tmp_path / "out.npy")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not [m for m in loaded if m.startswith(("tilelang_mlir.frontend",
                                                   "tilelang_mlir.compiler",
                                                   "tilelang_mlir.language",
                                                   "tilelang_mlir._mlir_libs", "mlir"))]
    assert "tilelang_mlir.runtime.cpu" in loaded
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), 2 * a + np.exp(b), rtol=1e-5,
                               atol=1e-6)
    # And in this process, the loaded kernel matches the compiled one.
    np.testing.assert_allclose(tl.load(tmp_path / "saxpy")(a, b), kernel(a, b), rtol=0, atol=0)


def test_a_saved_cpu_kernel_raises_its_device_assert(tmp_path):
    n = 64

    @T.prim_func
    def positive(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n) as bx:
            for i in T.Parallel(n):
                T.device_assert(A[i] > 0.0, "A must be positive")
                B[i] = T.sqrt(A[i])

    kernel = tl.compile(positive, out_idx=[1], target="cpu")
    kernel.save(tmp_path / "positive")
    loaded = tl.load(tmp_path / "positive")
    a = np.random.rand(n).astype(np.float32) + 0.5
    np.testing.assert_allclose(loaded(a), np.sqrt(a), rtol=1e-6)
    a[int(np.random.randint(n))] = -1.0
    with pytest.raises(tl.DeviceAssertionError, match="A must be positive"):
        loaded(a)


def test_a_changed_cpu_library_is_refused(tmp_path):
    kernel = tl.compile(_saxpy(256, 128), out_idx=[2], target="cpu")
    kernel.save(tmp_path / "k")
    lib = tmp_path / "k" / "saxpy.so"
    data = bytearray(lib.read_bytes())
    data[-1] ^= 1
    lib.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="does not match the manifest's library_sha256"):
        tl.load(tmp_path / "k")


@pytest.mark.parametrize("other", ["shapes", "out_idx"])
def test_another_kernels_library_is_refused_without_digests(other, tmp_path):
    """A library swapped for another kernel's of the same entry name, with
    the digests removed (which loads unchecked): the library's recorded
    signature names the mismatch (called with arguments of the wrong
    shapes, it corrupted the heap)."""
    n = int(np.random.randint(2, 16)) * 64
    kernel = tl.compile(_saxpy(n, 128), out_idx=[2], target="cpu")
    kernel.save(tmp_path / "k")
    stranger = tl.compile(_saxpy(n + 64, 128) if other == "shapes" else _saxpy(n, 128),
                          out_idx=[2] if other == "shapes" else [1], target="cpu")
    stranger.save(tmp_path / "s")
    folder = tmp_path / "k"
    manifest = json.loads((folder / "manifest.json").read_text())
    for field in ("manifest_sha256", "library_sha256"):
        manifest.pop(field)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    own = (folder / manifest["library"]).read_bytes()
    (folder / manifest["library"]).write_bytes((tmp_path / "s" / "saxpy.so").read_bytes())
    with pytest.raises(ValueError, match=r"saxpy.so is the library of another kernel: it "
                                         r"records saxpy\(A: float32\["):
        tl.load(folder)
    # Its own library, unchecked, loads and runs.
    (folder / manifest["library"]).write_bytes(own)
    a, b = (np.random.randn(n).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(tl.load(folder)(a, b), 2 * a + np.exp(b), rtol=1e-5, atol=1e-6)


def test_a_kernel_saved_again_over_its_folder_loads_the_new_code(tmp_path):
    """The library is loaded from a private copy: dlopen of the same path
    returned the library loaded first (the old kernel's code)."""
    sizes = np.random.choice(np.arange(2, 16) * 64, 2, replace=False)
    for n in sizes:
        tl.compile(_saxpy(int(n), 128), out_idx=[2], target="cpu").save(tmp_path / "k")
        a, b = (np.random.randn(n).astype(np.float32) for _ in range(2))
        np.testing.assert_allclose(tl.load(tmp_path / "k")(a, b), 2 * a + np.exp(b), rtol=1e-5,
                                   atol=1e-6)
