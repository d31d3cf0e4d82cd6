"""The disk kernel cache trusts only entries that are what their name says
(issue 17): a file that is no cache record, of another version, another
kernel's entry under the key, edited, truncated, or with a cubin that is not
base64 is deleted with a KernelCacheWarning naming it, and the kernel is
compiled again (and computes the right thing on random inputs); without a
compiler (offline) it is an error naming the file."""

import json
import os
import shutil
from collections import OrderedDict

import numpy as np
import pytest

from tilelang_mlir.kernels import programs as kernels
import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.frontend.errors import TileLangError
from tilelang_mlir.runtime import cache as entries


def elementwise_sub(M, N, block_M, block_N, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                row = by * block_M + i
                col = bx * block_N + j
                if row < M and col < N:
                    C[row, col] = A[row, col] - B[row, col]

    return main


@pytest.fixture
def cache(tmp_path, monkeypatch):
    from tilelang_mlir.compiler import compile as compile_mod

    monkeypatch.setenv("TILELANG_MLIR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TILELANG_MLIR_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TILELANG_MLIR_OFFLINE", raising=False)
    monkeypatch.setattr(compile_mod, "_MEMORY_CACHE", OrderedDict())  # as a fresh process
    return tmp_path


def _entries(folder):
    return {f for f in os.listdir(folder) if f.endswith(".json")}


def _compile_into(cache, program, target="cpu"):
    """Compiles `program`; returns the kernel and the path of its entry."""
    from tilelang_mlir.compiler import compile as compile_mod

    before = _entries(cache)
    kernel = tl.compile(program, out_idx=[2], target=target)
    (new,) = _entries(cache) - before
    compile_mod._MEMORY_CACHE.clear()
    return kernel, str(cache / new)


def _resign(entry):
    """The entry with both digests recomputed: what a writer with a bug
    would produce, so that the checks behind the digests are reached."""
    entry = dict(entry)
    entry["artifacts_sha256"] = entries.digest({k: entry[k] for k in ("stages", "source",
                                                                       "extra")})
    entry["sha256"] = entries.digest({k: entry[k] for k in entries._HEADER})
    return entry


def _read_entry(path):
    with open(path) as f:
        return json.load(f)


def _edit(path, change):
    entry = change(_read_entry(path))
    if not isinstance(entry, (str, bytes)):
        entry = json.dumps(entry)
    with open(path, "wb") as f:
        f.write(entry if isinstance(entry, bytes) else entry.encode())


def _inputs(rng, m, n):
    return (rng.standard_normal((m, n)).astype(np.float32),
            rng.standard_normal((m, n)).astype(np.float32))


def _compile_after_damage(monkeypatch, program):
    """Compiles `program` again after its entry was damaged: the kernel, the
    texts of the KernelCacheWarnings, and how many times the pass pipeline
    ran."""
    from tilelang_mlir.compiler import compile as compile_mod

    calls = []
    real = compile_mod._lower
    monkeypatch.setattr(compile_mod, "_lower", lambda *a: calls.append(1) or real(*a))
    with pytest.warns(tl.KernelCacheWarning) as record:
        kernel = tl.compile(program, out_idx=[2], target="cpu")
    monkeypatch.setattr(compile_mod, "_lower", real)
    return kernel, [str(w.message) for w in record], len(calls)


DAMAGE = [
    # The reproducer's records: valid JSON, no cache record.
    (lambda e: {"stages": 5, "source": None, "extra": []}, "is not a kernel cache record"),
    (lambda e: [1, 2, 3], "is a JSON list, not a cache record"),
    (lambda e: "null", "is a JSON NoneType"),
    (lambda e: dict(e, version=1), "has version 1; this tilelang_mlir reads version 2"),
    (lambda e: dict(e, version="2"), "has version '2'"),
    (lambda e: {k: v for k, v in e.items() if k != "sha256"}, "lacks the field(s) sha256"),
    (lambda e: dict(e, note="hi"), "has unknown field(s) note"),
    (lambda e: dict(e, target="cuda:sm_90a"), "holds the kernel of target 'cuda:sm_90a'"),
    (lambda e: dict(e, compiler="0" * 16), "holds the kernel of compiler '0000000000000000'"),
    # The code changed under the digests.
    (lambda e: dict(e, source=e["source"] + " "), "does not match its artifacts_sha256"),
    (lambda e: dict(e, stages=dict(e["stages"], llvm="")), "does not match its artifacts_sha256"),
    # Digests right, contents not (a writer's bug): the schema is checked.
    (lambda e: _resign(dict(e, stages={"llvm": 5})), "'stages' must be an object of IR texts"),
    (lambda e: _resign(dict(e, stages={"tile": "x"})), "lacks the 'llvm' stage"),
    (lambda e: _resign(dict(e, source=None)), "'source' must be a string, got NoneType"),
    (lambda e: _resign(dict(e, extra={"cubin": "AA=="})), "'extra' must hold exactly []"),
    # Not JSON at all.
    (lambda e: json.dumps(e)[:200], "is not JSON: truncated or overwritten"),
    (lambda e: "", "is not JSON"),
    (lambda e: b"\xff\xfe garbage", "is not JSON"),
]


@pytest.mark.parametrize("change, message", DAMAGE)
def test_a_damaged_entry_is_deleted_and_compiled_again(cache, monkeypatch, rng, change,
                                                       message):
    m, n = 16 * int(rng.integers(1, 4)), 16 * int(rng.integers(1, 4))
    program = kernels.elementwise_add(m, n, 16, 16)
    _, path = _compile_into(cache, program)
    _edit(path, change)
    kernel, warnings, lowered = _compile_after_damage(monkeypatch, program)
    # The warning names the file and the reason, and the kernel is compiled
    # again (once) into a valid entry that computes A + B.
    assert warnings[0].startswith(f"kernel cache entry {path} ") and message in warnings[0], warnings
    assert "compiling the kernel again" in warnings[0]
    assert lowered == 1
    a, b = _inputs(rng, m, n)
    np.testing.assert_array_equal(kernel(a, b), a + b)
    entry = _read_entry(path)
    assert entry["format"] == entries.FORMAT and entry["version"] == entries.VERSION


def test_another_kernels_entry_under_the_key_is_not_run(cache, monkeypatch, rng):
    """The entry of A - B copied over the file of A + B: the key inside it
    says whose it is, so A + B is compiled again instead of running A - B."""
    add, sub = kernels.elementwise_add(32, 32, 16, 16), elementwise_sub(32, 32, 16, 16)
    _, add_path = _compile_into(cache, add)
    sub_kernel, sub_path = _compile_into(cache, sub)
    shutil.copyfile(sub_path, add_path)
    sub_key = os.path.basename(sub_path)[:-5]
    kernel, warnings, lowered = _compile_after_damage(monkeypatch, add)
    assert warnings[0].startswith(f"kernel cache entry {add_path} ") and \
        f"holds the kernel of key '{sub_key}', not" in warnings[0], warnings
    assert lowered == 1
    a, b = _inputs(rng, 32, 32)
    np.testing.assert_array_equal(kernel(a, b), a + b)
    np.testing.assert_array_equal(sub_kernel(a, b), a - b)
    assert _read_entry(add_path)["format"] == entries.FORMAT


def test_cuda_entries_check_the_cubin_and_launch_data(cache, monkeypatch):
    """Compile-only CUDA kernels (ptxas, no GPU): a cubin that is not base64
    or launch data that does not fit the kernel is discarded, and the kernel
    compiled again is the same."""
    from tilelang_mlir.compiler import compile as compile_mod

    program = kernels.elementwise_add(32, 48, 16, 16)
    kernel, path = _compile_into(cache, program, "cuda:sm_80")
    cubin = kernel.cubin
    for change, message in [
            (lambda e: dict(e, extra=dict(e["extra"], cubin="not base64!")),
             "does not match its artifacts_sha256"),
            (lambda e: _resign(dict(e, extra=dict(e["extra"], cubin="not base64!"))),
             "'extra.cubin' is not base64"),
            (lambda e: _resign(dict(e, extra=dict(e["extra"], cubin=""))),
             "'extra.cubin' is empty"),
            (lambda e: _resign(dict(e, extra=dict(e["extra"], block=[128, 0, 1]))),
             "'extra.block' must be 1 to 3 positive ints"),
            (lambda e: _resign(dict(e, extra=dict(e["extra"], grid=[{"sym": "K"}]))),
             "malformed launch data: grid expression"),
            (lambda e: _resign(dict(e, extra=dict(e["extra"], tensormaps=[{"param": 7}]))),
             "malformed launch data: kernel 'main': tensor map 0"),
            (lambda e: _resign(dict(e, extra={k: v for k, v in e["extra"].items()
                                              if k != "ptxas"})), "'extra' must hold exactly"),
    ]:
        _edit(path, change)
        with pytest.warns(tl.KernelCacheWarning, match=message):
            again = tl.compile(program, out_idx=[2], target="cuda:sm_80")
        assert again.cubin == cubin and again.block == kernel.block
        compile_mod._MEMORY_CACHE.clear()
    # Undamaged, it is loaded as it is, without a warning.
    import warnings

    monkeypatch.setattr(compile_mod, "_lower", lambda *a: pytest.fail("compiled again"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tl.compile(program, out_idx=[2], target="cuda:sm_80").cubin == cubin


def test_offline_a_damaged_entry_is_an_error(cache, monkeypatch, rng):
    """Without the compiler nothing can replace a bad entry: the error names
    the file and what is wrong, and the file is left for the user."""
    program = kernels.elementwise_add(32, 32, 16, 16)
    kernel, path = _compile_into(cache, program)
    monkeypatch.setenv("TILELANG_MLIR_OFFLINE", "1")
    a, b = _inputs(rng, 32, 32)
    np.testing.assert_array_equal(tl.compile(program, out_idx=[2], target="cpu")(a, b), a + b)
    from tilelang_mlir.compiler import compile as compile_mod

    compile_mod._MEMORY_CACHE.clear()
    _edit(path, lambda e: [1, 2, 3])
    with pytest.raises(TileLangError, match="no compiler is available here") as info:
        tl.compile(program, out_idx=[2], target="cpu")
    assert f"the kernel cache entry {path} of kernel 'main' for cpu is a JSON list" in str(
        info.value)
    assert os.path.exists(path)


def test_a_file_replaced_while_checked_is_not_deleted(tmp_path):
    """discard deletes only the file it read: one another process wrote
    since (an atomic replace) is the new entry."""
    path = str(tmp_path / "k.json")
    with open(path, "w") as f:
        f.write("[]")
    with pytest.raises(entries.BadEntry) as info:
        entries.read(path, "k", "cpu", "c", ())
    entries.write(path, {"new": True})
    with pytest.warns(tl.KernelCacheWarning, match="ignored it"):
        entries.discard(path, str(info.value), info.value.stat, "kernel cache entry", "then")
    assert os.path.exists(path)
    with pytest.warns(tl.KernelCacheWarning, match="is a JSON list, not a cache record; deleted"):
        entries.discard(path, str(info.value), os.stat(path), "kernel cache entry", "then")
    assert not os.path.exists(path)


_ASSERTING = '''import tilelang_mlir.language as T


@T.prim_func
def main(X: T.Tensor((4,), "float32")):
    with T.Kernel(1, threads=32) as bx:
        T.device_assert(X[0] > 0.0, "X[0] must be positive")
'''


def test_a_program_moved_down_its_file_is_another_kernel(cache, tmp_path):
    """A device assertion reports the user's line from inside the binary:
    the same program text two lines further down its file (an edit above
    it) must be compiled again, not served the first one's entry with its
    stale line."""
    import importlib.util

    lines = []
    for n, pad in enumerate(("", "\n\n")):
        path = tmp_path / f"program{n}" / "kernel.py"  # (same file name, other folder)
        path.parent.mkdir()
        path.write_text(pad + _ASSERTING)
        spec = importlib.util.spec_from_file_location(f"moved_program_{n}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        kernel = tl.compile(module.main, target="cpu")
        with pytest.raises(tl.DeviceAssertionError) as info:
            kernel(np.full(4, -1.0, np.float32))
        lines.append(info.value.location.line)
    assert lines[1] == lines[0] + 2
    assert len(_entries(cache)) == 2


_SCALED = '''
import tilelang_mlir.language as T

SCALE = {scale}
ROWS = ({rows}, 8)


@T.macro
def scaled(A, B, i):
    B[i] = A[i] * SCALE


@T.prim_func
def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=8):
        for i in T.Parallel(ROWS[1]):
            scaled(A, B, i)
'''


def test_module_level_values_a_program_reads_are_part_of_its_key(cache, tmp_path):
    """`SCALE = float(sys.argv[1])` at the top of a script: the program (and
    a macro it calls) read module-level values, which the cache key must
    hold (the same file run with another value was served the first
    value's kernel)."""
    import importlib.util

    a = np.arange(8, dtype=np.float32)
    for n, scale in enumerate((2.0, 3.0, 2.0)):
        path = tmp_path / f"run{n}" / "script.py"  # the same text but for SCALE
        path.parent.mkdir()
        path.write_text(_SCALED.format(scale=scale, rows=8))
        spec = importlib.util.spec_from_file_location(f"scaled_script_{n}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        b = np.zeros(8, np.float32)
        tl.compile(module.main, target="cpu")(a, b)
        np.testing.assert_array_equal(b, a * scale)
    assert len(_entries(cache)) == 2  # the third run is the first one's entry


def test_captured_functions_key_by_source_not_bytecode():
    """A kernel cache prepared under one Python serves another (the GPU
    machine's Python 3.12 ran the MLA decode kernels prepared under 3.11 and
    found none: a captured function was keyed by its bytecode, which every
    Python version compiles differently). The key is the function's source
    text: bytecode changes leave it, and two lambdas of one line differ."""
    from tilelang_mlir.frontend.function import _code_digest

    def helper(x, k=2):
        return x * k + 1

    code = helper.__code__
    # The same length of other bytecode (every instruction a NOP, 3.11+).
    import dis

    nops = bytes([dis.opmap["NOP"], 0]) * (len(code.co_code) // 2)
    assert _code_digest(code.replace(co_code=nops)) == _code_digest(code)
    f, g = (lambda x: x + 1), (lambda x: x - 1)
    assert _code_digest(f.__code__) != _code_digest(g.__code__)

    def other(x, k=2):
        return x * k - 1

    assert _code_digest(other.__code__) != _code_digest(code)
