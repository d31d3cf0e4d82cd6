"""Developer tools (tl.tools): the affine-map evaluator, fragment layouts and
shared placements read off compiled kernels, their tables and pictures, the
tl.layout_plot_dir pass config, the lower trace report. Kernels compile for
cuda:sm_80 / cuda:sm_90a, which needs no GPU."""

import html.parser
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tilelang_mlir.kernels import programs as kernels
import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.frontend.errors import TileLangError
from tilelang_mlir.tools import layout as L
from tilelang_mlir.tools.affine import AffineMapError, parse_affine_map

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def full_col(M=64, N=512, K=64, threads=256):
    """An MLA-style split: 8 warps side by side along N."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            A_shared = T.alloc_shared((M, K), "float16")
            B_shared = T.alloc_shared((K, N), "float16")
            C_local = T.alloc_fragment((M, N), "float32")
            T.copy(A[0, 0], A_shared)
            T.copy(B[0, 0], B_shared)
            T.gemm(A_shared, B_shared, C_local, policy=T.GemmWarpPolicy.FullCol,
                   clear_accum=True)
            T.copy(C_local, C[0, 0])

    return main


@pytest.fixture(scope="module")
def compiled():
    """Real kernels after layout inference: accumulators (mma.sync, wgmma,
    FullCol over two warpgroups), blocked and replicated fragments, shared
    buffers with every swizzle the compiler picks."""
    progs = {
        "mma": (kernels.matmul(256, 256, 256, 128, 128, 32), "cuda:sm_80"),
        "mma_trans": (kernels.matmul(256, 256, 256, 64, 64, 32, trans_A=True, trans_B=True),
                      "cuda:sm_80"),
        "wgmma": (kernels.matmul(256, 256, 256, 128, 128, 32), "cuda:sm_90a"),
        "full_col": (full_col(), "cuda:sm_90a"),
        "full_col_mma": (full_col(), "cuda:sm_80"),
        "layer_norm": (kernels.layer_norm(256, 64, 16), "cuda:sm_80"),
        "global_sum": (kernels.global_sum(1024, 256), "cuda:sm_80"),
    }
    return {name: tl.compile(p, target=t) for name, (p, t) in progs.items()}


# ---------------------------------------------------------------------------
# The affine-map evaluator
# ---------------------------------------------------------------------------


def _random_expr(rng, names, depth):
    """(MLIR text, Python text) of a random expression of the printed subset."""
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.6:
            n = names[rng.integers(len(names))]
            return n, n
        c = int(rng.integers(0, 40))
        return str(c), str(c)
    op = ["+", "-", "*", "floordiv", "ceildiv", "mod"][rng.integers(6)]
    lhs = _random_expr(rng, names, depth - 1)
    if op in ("floordiv", "ceildiv", "mod", "*"):
        c = int(rng.integers(1, 17))
        rhs = (str(c), str(c))
    else:
        rhs = _random_expr(rng, names, depth - 1)
    py = {"floordiv": "({a}) // ({b})", "ceildiv": "-((-({a})) // ({b}))", "mod": "({a}) % ({b})",
          "+": "({a}) + ({b})", "-": "({a}) - ({b})", "*": "({a}) * ({b})"}[op]
    return f"({lhs[0]}) {op} ({rhs[0]})", py.format(a=lhs[1], b=rhs[1])


def test_affine_maps_evaluate_like_python(rng):
    for _ in range(200):
        ndims, nsyms = int(rng.integers(1, 4)), int(rng.integers(0, 2))
        dims = [f"d{i}" for i in range(ndims)]
        syms = [f"s{i}" for i in range(nsyms)]
        results = [_random_expr(rng, dims + syms, 4) for _ in range(int(rng.integers(1, 3)))]
        sym_text = f"[{', '.join(syms)}]" if syms else ""
        text = (f"affine_map<({', '.join(dims)}){sym_text} -> "
                f"({', '.join(r[0] for r in results)})>")
        m = parse_affine_map(text)
        for _ in range(5):
            dv = [int(x) for x in rng.integers(-50, 200, ndims)]
            sv = [int(x) for x in rng.integers(0, 16, nsyms)]
            env = dict(zip(dims + syms, dv + sv))
            assert m(dv, sv) == tuple(eval(r[1], {}, env) for r in results), text
        # NumPy arrays evaluate element-wise to the same values.
        arrays = [rng.integers(-50, 200, 7) for _ in dims]
        got = m(arrays, [3] * nsyms)
        for i in range(7):
            want = m([int(a[i]) for a in arrays], [3] * nsyms)
            assert tuple(int(np.broadcast_to(g, (7,))[i]) for g in got) == want


def test_affine_precedence_and_signs():
    m = parse_affine_map("(d0) -> (d0 + 5 * 2 mod 3, d0 - 3 - 2, 7 floordiv 2 * 2, -d0 + 1, "
                         "d0 floordiv 4, d0 mod 4, d0 ceildiv 4)")
    assert m((-5,)) == (-5 + 1, -10, 6, 6, -2, 3, -1)
    named = parse_affine_map("(i, j)[r] -> ((i mod 8) * 4 + r, i floordiv 8 + j)")
    assert named((11, 2), (3,)) == (15, 3)


@pytest.mark.parametrize("text, message", [
    ("(d0) -> (d1)", "'d1' is not a declared dimension"),
    ("(d0) -> (d0 mod 0)", "divisor must be positive"),
    ("(d0) -> (d0 +)", "unexpected ')'"),
    ("(d0, d0) -> (d0)", "declared twice"),
    ("affine_map<(d0) -> (d0)", "no closing '>'"),
    ("(d0) -> (d0) extra", "after the results"),
    ("(d0) -> (d0 ^ 2)", "unexpected character"),
])
def test_affine_map_errors(text, message):
    with pytest.raises(AffineMapError, match=re.escape(message)):
        parse_affine_map(text)


def test_affine_map_checks_its_arguments():
    m = parse_affine_map("(d0, d1)[s0] -> (d0 + s0)")
    with pytest.raises(ValueError, match="takes 2 dimension"):
        m((1,), (0,))


# ---------------------------------------------------------------------------
# Fragment layouts of real kernels
# ---------------------------------------------------------------------------


def _fragments(kernel):
    return [a for a in L.allocations(kernel) if a.scope == "fragment"]


@pytest.mark.parametrize("name", ["mma", "mma_trans", "wgmma", "full_col", "full_col_mma",
                                  "layer_norm", "global_sum"])
def test_fragment_layouts_place_every_element_once(compiled, name):
    frags = _fragments(compiled[name])
    assert frags
    for frag in frags:
        lay = frag.layout
        threads, regs = lay.table(frag.shape)
        assert threads.shape == (lay.replicate,) + frag.shape
        assert threads.min() >= 0 and threads.max() < lay.threads and regs.min() >= 0
        # No register of a thread holds two elements (or two replicas).
        pairs = threads.reshape(-1) * (int(regs.max()) + 1) + regs.reshape(-1)
        assert len(np.unique(pairs)) == pairs.size, frag.describe()
        # The replicas of an element live in distinct threads.
        if lay.replicate > 1:
            per_elem = threads.reshape(lay.replicate, -1)
            assert all(len(set(per_elem[:, e])) == lay.replicate
                       for e in range(per_elem.shape[1]))
        else:
            # Without replication the elements fill threads x registers exactly.
            nregs = int(regs.max()) + 1
            assert lay.threads * nregs == int(np.prod(frag.shape)), frag.describe()
        # forward() agrees with the table.
        idx = tuple(int(s) - 1 for s in frag.shape)
        assert lay.forward(idx, lay.replicate - 1) == (
            threads[(lay.replicate - 1,) + idx], regs[(lay.replicate - 1,) + idx])


@pytest.mark.parametrize("name", ["mma", "mma_trans", "wgmma", "full_col", "full_col_mma"])
def test_accumulators_follow_the_mma_quad_pattern(compiled, name):
    """PTX: in an m16n8 accumulator tile, lane 4 * (row mod 8) + (col mod 8) / 2
    holds element (row, col), in a register whose low bit is col mod 2 (wgmma
    repeats the pattern per 8 columns)."""
    (acc,) = _fragments(compiled[name])
    threads, regs = acc.layout.table(acc.shape)
    i, j = np.indices(acc.shape)
    np.testing.assert_array_equal(threads[0] % 32, (i % 8) * 4 + (j % 8) // 2)
    np.testing.assert_array_equal(regs[0] % 2, j % 2)


def test_wgmma_warps_own_16_row_slices(compiled):
    (acc,) = _fragments(compiled["wgmma"])
    threads, _ = acc.layout.table(acc.shape)
    i, _ = np.indices(acc.shape)
    np.testing.assert_array_equal((threads[0] // 32) % 4, (i // 16) % 4)


@pytest.mark.parametrize("name, warps_along_n", [("full_col", 4), ("full_col_mma", 1)])
def test_full_col_splits_along_n(compiled, name, warps_along_n):
    """FullCol over 256 threads: the first warpgroup holds columns 0-255,
    the second 256-511 (wgmma); with mma.sync each warp holds 64 columns."""
    (acc,) = _fragments(compiled[name])
    assert acc.layout.threads == 256 and acc.shape == (64, 512)
    threads, _ = acc.layout.table(acc.shape)
    _, j = np.indices(acc.shape)
    np.testing.assert_array_equal(threads[0] // 128, j // 256)
    if warps_along_n == 1:
        np.testing.assert_array_equal(threads[0] // 32, j // 64)


# ---------------------------------------------------------------------------
# Shared placement
# ---------------------------------------------------------------------------


def test_shared_offsets_are_a_bijection(rng):
    for _ in range(300):
        eb = int(rng.choice([1, 2, 4, 8]))
        swizzle = int(rng.choice([0, 32, 64, 128]))
        rank = int(rng.integers(1, 4))
        unit = max(1, (swizzle or 16) // eb)  # the compiler swizzles rows of whole spans
        shape = [int(rng.integers(1, 4)) for _ in range(rank - 2)]
        if rank >= 2:
            shape.append(int(rng.integers(1, 40)))
        shape.append(unit * int(rng.integers(1, 9)))
        if rank >= 2 and swizzle:
            # Whole 2^b-line periods (defaultSwizzle: the size divides the span).
            shape[-2] = int(np.lcm(shape[-2], 8))
        elif rank == 1 and swizzle:
            shape[-1] = int(np.lcm(shape[-1], 8 * 128 // eb))
        off = L.shared_offsets(shape, eb, swizzle)
        assert off.shape == tuple(shape)
        np.testing.assert_array_equal(np.sort(off.reshape(-1)), np.arange(off.size),
                                      err_msg=f"{shape} {eb} B swizzle {swizzle}")


@pytest.mark.parametrize("swizzle, bits", [(32, 1), (64, 2), (128, 3)])
def test_swizzle_is_the_tma_definition(swizzle, bits):
    """Rows of `swizzle` bytes: the 16-byte chunk c of 128-byte line l lands in
    chunk c ^ (l mod 2^b)."""
    rows, cols = 64, swizzle // 2  # f16
    off = L.shared_offsets((rows, cols), 2, swizzle)
    r, c = np.indices((rows, cols))
    byte = r * swizzle + c * 2
    line, chunk = byte // 128, (byte // 16) % 8
    want = (line * 128 + (chunk ^ (line % (1 << bits))) * 16 + byte % 16) // 2
    np.testing.assert_array_equal(off, want)


def test_wide_rows_are_cut_into_panels():
    off = L.shared_offsets((32, 128), 2, 128)  # f16 rows of 256 bytes: panels of 64 columns
    assert L.panel_elements((32, 128), 2, 128) == 64
    assert off[:, :64].max() < 32 * 64 <= off[:, 64:].min()
    np.testing.assert_array_equal(off[:, 64:], off[:, :64] + 32 * 64)
    # Without a swizzle nothing moves.
    np.testing.assert_array_equal(L.shared_offsets((4, 6, 10), 4, 0).reshape(-1),
                                  np.arange(240))


def test_shared_buffers_of_kernels(compiled):
    seen = set()
    for kernel in compiled.values():
        for a in L.allocations(kernel):
            if a.scope != "shared":
                continue
            seen.add(a.swizzle)
            off = L.shared_offsets(a.shape, a.element_bytes, a.swizzle)
            np.testing.assert_array_equal(np.sort(off.reshape(-1)), np.arange(off.size))
    assert {64, 128} <= seen


# ---------------------------------------------------------------------------
# Naming buffers, text tables
# ---------------------------------------------------------------------------


def test_allocations_and_buffer_names(compiled):
    kernel = compiled["wgmma"]
    allocs = L.allocations(kernel)
    assert [a.scope for a in allocs] == ["shared", "shared", "fragment"]
    assert [a.index for a in allocs] == [0, 1, 2]
    acc = allocs[2]
    assert acc.shape == (128, 128) and acc.dtype == "f32" and acc.layout.threads == 128
    assert L.find_allocation(kernel, acc.name) is not None
    assert L.find_allocation(kernel, acc.name.lstrip("%")).index == 2
    assert L.find_allocation(kernel, -1).index == 2
    with pytest.raises(ValueError) as info:
        L.find_allocation(kernel, 3)
    text = str(info.value)
    assert "no shared or fragment buffer 3" in text
    assert "[2] %" in text and "fragment 128x128xf32" in text and "shared 2x128x32xf16" in text
    with pytest.raises(ValueError, match="no shared or fragment buffer 'C_local'"):
        L.find_allocation(kernel, "C_local")
    with pytest.raises(TypeError, match="index or its SSA name"):
        L.find_allocation(kernel, 1.5)


def test_layouts_need_a_cuda_kernel():
    kernel = tl.compile(kernels.elementwise_add(32, 32, 16, 16), out_idx=[2], target="cpu")
    with pytest.raises(ValueError, match="has no \"layout\" stage.*cuda:sm_80"):
        tl.tools.layout_text(kernel, 0)
    with pytest.raises(TypeError, match="compiled kernel"):
        tl.tools.allocations(42)


def test_layout_text_of_a_fragment(compiled, rng):
    kernel = compiled["mma"]
    (acc,) = _fragments(kernel)
    r0 = int(rng.integers(0, 100))
    c0 = int(rng.integers(0, 100))
    nr, nc = int(rng.integers(1, 20)), int(rng.integers(1, 20))
    text = tl.tools.layout_text(kernel, acc.index, region=((r0, r0 + nr), slice(c0, c0 + nc)))
    lines = text.splitlines()
    assert len(lines) == 2 + nr
    assert lines[0].startswith(f"{acc.name} fragment 128x128xf32: 128 threads")
    assert lines[1].split("|")[1].split() == [str(c) for c in range(c0, c0 + nc)]
    for k, line in enumerate(lines[2:]):
        label, cells = line.split("|")
        assert int(label) == r0 + k
        cells = cells.split()
        assert len(cells) == nc
        for c, cell in enumerate(cells):
            assert tuple(map(int, cell.split(":"))) == acc.layout.forward((r0 + k, c0 + c))


def test_layout_text_of_replicated_and_shared_buffers(compiled):
    kernel = compiled["layer_norm"]
    frag = next(a for a in _fragments(kernel) if a.layout.replicate > 1 and a.shape == (64,))
    lines = tl.tools.layout_text(kernel, frag.index).splitlines()
    assert f"replicate {frag.layout.replicate}" in lines[0]
    assert len(lines) == 3 and len(lines[2].split("|")[1].split()) == 64  # one row of 64
    last = tl.tools.layout_text(kernel, frag.index, replica=frag.layout.replicate - 1)
    cells = last.splitlines()[2].split("|")[1].split()
    assert cells[5] == "%d:%d" % frag.layout.forward((5,), frag.layout.replicate - 1)
    with pytest.raises(ValueError, match="replica 99 is out of range"):
        tl.tools.layout_text(kernel, frag.index, replica=99)

    kernel = compiled["wgmma"]
    a = L.allocations(kernel)[1]  # 2x32x128xf16, 128-byte swizzle, two panels
    assert a.shape == (2, 32, 128) and a.swizzle == 128
    for show in ("offset", "chunk", "bank"):
        lines = tl.tools.layout_text(kernel, 1, region=(1, (0, 4)), show=show).splitlines()
        assert len(lines) == 2 + 4
        assert all(len(line.split("|")[1].split()) == 128 for line in lines[2:])
    offsets = L.shared_offsets(a.shape, 2, 128)
    row = tl.tools.layout_text(kernel, 1, region=(1, 3)).splitlines()[2]
    assert row.split("|")[0].strip() == "1,3"
    assert [int(x) for x in row.split("|")[1].split()] == list(offsets[1, 3])
    with pytest.raises(ValueError, match="show='lanes'"):
        tl.tools.layout_text(kernel, 1, show="lanes")


@pytest.mark.parametrize("name", ["mma_trans", "layer_norm", "wgmma"])
def test_tile_print_layouts_matches_layout_text(compiled, name, tmp_path):
    """tile-opt's tile-print-layouts prints, for the IR after layout
    inference, the tables tl.tools.layout_text gives for every buffer."""
    kernel = compiled[name]
    src = tmp_path / "layout.mlir"
    src.write_text(kernel.mlir("layout"))
    run = subprocess.run([sys.executable, "-m", "tilelang_mlir.tools.tile_opt", str(src),
                          "--pass-pipeline=builtin.module(func.func(tile-print-layouts))",
                          "-o", os.devnull], capture_output=True, text=True, check=True)
    lines = run.stdout.splitlines()
    assert lines[0] == "// tile-print-layouts: @main"
    tables = []
    for line in lines[1:]:
        if line.startswith("%"):
            tables.append([])
        tables[-1].append(line)
    allocs = L.allocations(kernel)
    assert len(tables) == len(allocs) > 1
    for alloc, table in zip(allocs, tables):
        assert "\n".join(table) == tl.tools.layout_text(kernel, alloc.index), alloc.describe()


# ---------------------------------------------------------------------------
# Pictures
# ---------------------------------------------------------------------------


def _mesh(fig):
    from matplotlib.collections import QuadMesh

    (ax,) = [a for a in fig.axes if a.collections and isinstance(a.collections[0], QuadMesh)]
    mesh = ax.collections[0]
    return ax, mesh


def test_plot_layout_draws_a_cell_per_element(compiled, tmp_path):
    from matplotlib.figure import Figure

    kernel = compiled["full_col"]
    (acc,) = _fragments(kernel)
    path = tmp_path / "acc.png"
    fig = tl.tools.plot_layout(kernel, acc.index, str(path))
    assert isinstance(fig, Figure)
    ax, mesh = _mesh(fig)
    assert mesh.get_array().shape[:2] == (64, 512)
    assert not ax.texts  # too big for labels
    assert "64x512xf32" in ax.get_title() and "256 threads" in ax.get_title()
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    # A legend names the 8 warps and their warpgroups.
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts[0] == "warp 0: T0-T31 (warpgroup 0)" and len(texts) == 8


def test_plot_layout_labels_small_tiles(compiled, rng):
    kernel = compiled["mma_trans"]
    (acc,) = _fragments(kernel)
    r0, c0 = int(rng.integers(0, 48)), int(rng.integers(0, 48))
    fig = tl.tools.plot_layout(kernel, acc.index, region=((r0, r0 + 16), (c0, c0 + 16)),
                               color_by="warp")
    ax, mesh = _mesh(fig)
    assert mesh.get_array().shape[:2] == (16, 16)
    assert len(ax.texts) == 256
    for t in ax.texts:
        x, y = t.get_position()
        th, reg = acc.layout.forward((r0 + int(y), c0 + int(x)))
        assert t.get_text() == f"T{th}:R{reg}"


@pytest.mark.parametrize("color_by", ["chunk", "bank"])
def test_plot_layout_of_a_shared_buffer(compiled, color_by):
    kernel = compiled["mma"]
    shared = [a for a in L.allocations(kernel) if a.scope == "shared"]
    for a in shared:
        fig = tl.tools.plot_layout(kernel, a.index, color_by=color_by, labels=False)
        ax, mesh = _mesh(fig)
        rows = int(np.prod(a.shape[:-1]))
        assert mesh.get_array().shape[:2] == (rows, a.shape[-1])
        assert f"swizzle {a.swizzle} B" in ax.get_title()
    # Labels are the chunk (or bank) of each element.
    fig = tl.tools.plot_layout(kernel, shared[0].index, region=(0, (0, 8)), color_by=color_by)
    ax, _ = _mesh(fig)
    values = L._shared_values(shared[0], color_by)
    for t in ax.texts:
        x, y = t.get_position()
        assert int(t.get_text()) == values[0, int(y), int(x)]


def test_plot_layout_errors(compiled, monkeypatch):
    kernel = compiled["mma"]
    with pytest.raises(ValueError, match="color_by='bank': a fragment is colored by"):
        tl.tools.plot_layout(kernel, 2, color_by="bank")
    with pytest.raises(ValueError, match="selects nothing"):
        tl.tools.plot_layout(kernel, 2, region=((200, 300),))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        tl.tools.plot_layout(kernel, 2)


def test_layout_plot_dir_pass_config(tmp_path):
    program = kernels.matmul(128, 128, 128, 64, 64, 32)
    plain = tl.compile(program, target="cuda:sm_80")  # cached
    d = tmp_path / "plots"
    kernel = tl.compile(program, target="cuda:sm_80", pass_configs={"tl.layout_plot_dir": str(d)})
    allocs = L.allocations(kernel)
    files = sorted(os.listdir(d))
    assert files == sorted(f"{a.index:02d}-{a.scope}-{a.name[1:]}.png" for a in allocs)
    assert len(files) == 3
    for f in files:
        with open(d / f, "rb") as fh:
            assert fh.read(4) == b"\x89PNG"
    # The kernel is the one compiled without pictures.
    assert kernel.get_source() == plain.get_source()
    assert kernel.mlir("layout") == plain.mlir("layout")
    with pytest.raises(TileLangError, match="needs a CUDA target"):
        tl.compile(program, target="cpu", pass_configs={"tl.layout_plot_dir": str(d)})


def test_tools_are_lazy():
    code = ("import sys, tilelang_mlir as tl; tl.tools.trace_report; tl.tools.layout_text; "
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported'; "
            "assert tl.tools.plot_layout.__module__ == 'tilelang_mlir.tools.layout'")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------
# The lower trace report
# ---------------------------------------------------------------------------


class _Sections(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.summaries, self.stack, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag == "meta":  # a void element
            return
        self.stack.append(tag)
        if tag == "summary":
            self.text = []

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (self.stack, tag)
        self.stack.pop()
        if tag == "summary":
            self.summaries.append("".join(self.text))

    def handle_data(self, data):
        self.text.append(data)


def test_trace_report_of_a_compile(tmp_path):
    trace = tmp_path / "trace"
    tl.compile(kernels.matmul(128, 128, 128, 64, 64, 32), target="cuda:sm_80",
               pass_configs={"tl.trace_dir": str(trace)})
    files = sorted(os.listdir(trace), key=lambda f: int(f.split("-")[0]))
    texts = [open(trace / f).read() for f in files]
    changed = [f[:-5].replace("-", " ", 1) for f, a, b in zip(files[1:], texts, texts[1:]) if a != b]
    same = [f[:-5].replace("-", " ", 1) for f, a, b in zip(files[1:], texts, texts[1:]) if a == b]
    assert changed and same  # convert-tile-to-nvvm changes, e.g. cse after cse does not
    html_path = tmp_path / "trace.html"
    report = tl.tools.trace_report(str(trace), html_path=str(html_path))
    headers = [line[4:].split(":")[0] for line in report.splitlines() if line.startswith("=== ")]
    assert headers == changed
    assert report.splitlines()[-1] == "unchanged: " + ", ".join(same)
    assert f"{len(files)} steps, {len(changed)} passes changed the IR, {len(same)} did not" \
        in report.splitlines()[0]
    page = html_path.read_text()
    parser = _Sections()
    parser.feed(page)
    assert not parser.stack
    assert [s.split(":")[0] for s in parser.summaries] == ["00 tile"] + changed
    for name in same:
        assert name in page


def test_trace_report_counts_and_order(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    base = [f"line {i}" for i in range(20)]
    steps = {0: ("tile", base), 1: ("a", base[:5] + ["new"] + base[5:]),
             2: ("b", base[:5] + ["new"] + base[5:]), 9: ("c", base[2:]),
             100: ("late-pass", base[2:] + ["-- comment", "x"])}
    for n, (name, lines) in steps.items():
        (d / f"{n:02d}-{name}.mlir").write_text("\n".join(lines) + "\n")
    (d / "notes.txt").write_text("not a step")
    lines = tl.tools.trace_report(str(d)).splitlines()
    heads = [line for line in lines if line.startswith("=== ")]
    assert heads == ["=== 01 a: 20 -> 21 lines (+1 -0)",
                     "=== 09 c: 21 -> 18 lines (+0 -3)",
                     "=== 100 late-pass: 18 -> 20 lines (+2 -0)"]
    assert lines[-1] == "unchanged: 02 b"
    assert "+-- comment" in lines  # a line starting with "--" is an addition
    assert not any("more diff lines" in line for line in lines)
    short = tl.tools.trace_report(str(d), max_lines=1).splitlines()
    i = short.index("+++ 01-a.mlir")
    assert short[i + 1].startswith("@@") and short[i + 2] == "... (7 more diff lines)"
    assert "+new" not in short and "+-- comment" not in short


def test_trace_report_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no lower trace folder"):
        tl.tools.trace_report(str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="holds no lower trace"):
        tl.tools.trace_report(str(tmp_path))
    (tmp_path / "00-tile.mlir").write_text("a\n")
    (tmp_path / "0-tile.mlir").write_text("b\n")
    with pytest.raises(ValueError, match="mixes traces"):
        tl.tools.trace_report(str(tmp_path))


def test_trace_command_line(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    (d / "00-tile.mlir").write_text("module {\n}\n")
    (d / "01-canonicalize.mlir").write_text("module {\n  func.func @f()\n}\n")
    out = tmp_path / "out.html"
    run = subprocess.run([sys.executable, "-m", "tilelang_mlir.tools.trace", str(d), "--html",
                          str(out), "--color", "never"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "=== 01 canonicalize: 2 -> 3 lines (+1 -0)" in run.stdout
    assert "+  func.func @f()" in run.stdout and out.exists()
    run = subprocess.run([sys.executable, "-m", "tilelang_mlir.tools.trace",
                          str(tmp_path / "nope")], capture_output=True, text=True)
    assert run.returncode == 1 and "no lower trace folder" in run.stderr
