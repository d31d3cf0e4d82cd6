"""Host cost of a kernel call: microseconds per call issued back to back on
tiny inputs (the device work is negligible, so the host is the bound), ours
next to the same call through other launchers, in one run.

    python benchmarks/launch_overhead.py [--target cuda|cpu] [--calls N] [--profile]

Contenders: ours (the native fast path, runtime/launcher.py), ours on the
Python path (what runs where the native module is missing:
TILELANG_MLIR_NATIVE_LAUNCH=0), torch's op where there is one, a Triton
kernel taking the same arguments (GPU; Triton allocates nothing, so its
output is allocated with torch.empty_like in the cases where ours allocates),
and TileLang's own launcher where its package is installed. Cases: 1, 3 and 8
tensor arguments, a dynamic size, a scalar argument, layer norm (4 tensors),
arguments pre-bound (checks and outputs done once), and `@tl.jit` calls that
hit its cache (an eager-style program called with tensors, a factory called
with its sizes). The first row is the floor: a kernel that does nothing,
called pre-bound, i.e. the driver's launch and the GPU's turnaround with
none of our per-call work (benchmarks/launch_simulated.py measures that
work alone, against a stub driver). Each number is the median of 5 rounds of `--calls` calls.

Without a GPU and with `--target cuda` (the default), the kernels are
compiled (into the kernel cache, for scripts/gpu_check.sh prepare-launch)
and nothing is timed. `--target cpu` times CPU kernels against torch's CPU
ops. `--profile` prints a cProfile of our layer-norm call on both paths.
"""

import argparse
import cProfile
import pstats
import statistics
import sys
import time

import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.runtime import launcher
from tilelang_mlir.runtime.cuda import NoCUDADevice

# Sizes: tiny (a GPU launch is the cost; on the CPU, the kernel body is
# kept to a few hundred element operations). `main` sets them per target.
M, N, BLOCK = 64, 64, 32  # the elementwise cases
LN_M, LN_N = 16, 128  # layer norm
SIZES = {"cuda": (64, 64, 32, 16, 128), "cpu": (8, 8, 8, 4, 16)}


# ---------------------------------------------------------------------------
# The tile programs (factories of `T`: TileLang's `tilelang.language` builds
# the same programs for its launcher)
# ---------------------------------------------------------------------------

def inc1(T, n, block=128, dtype="float32"):
    """X += 1 in place: one tensor argument."""

    @T.prim_func
    def main(X: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    X[bx * block + i] = X[bx * block + i] + 1.0

    return main


def empty1(T, n, dtype="float32"):
    """A kernel that does nothing (one block of 32 threads, one tensor
    argument): called pre-bound, the floor under every case, what the
    driver's launch and the GPU's turnaround cost without our work."""

    @T.prim_func
    def main(X: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=32) as bx:
            if bx > 0:
                X[0] = X[0] + 1.0

    return main


def add3(T, m, n, dtype="float32"):
    """C = A + B: two inputs and an output."""

    @T.prim_func
    def main(A: T.Tensor((m, n), dtype), B: T.Tensor((m, n), dtype),
             C: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(n, BLOCK), T.ceildiv(m, BLOCK), threads=128) as (bx, by):
            for i, j in T.Parallel(BLOCK, BLOCK):
                row, col = by * BLOCK + i, bx * BLOCK + j
                if row < m and col < n:
                    C[row, col] = A[row, col] + B[row, col]

    return main


def sum8(T, m, n, dtype="float32"):
    """O = A + B + ... + G: seven inputs and an output."""

    @T.prim_func
    def main(A: T.Tensor((m, n), dtype), B: T.Tensor((m, n), dtype),
             C: T.Tensor((m, n), dtype), D: T.Tensor((m, n), dtype),
             E: T.Tensor((m, n), dtype), F: T.Tensor((m, n), dtype),
             G: T.Tensor((m, n), dtype), O: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(n, BLOCK), T.ceildiv(m, BLOCK), threads=128) as (bx, by):
            for i, j in T.Parallel(BLOCK, BLOCK):
                r, c = by * BLOCK + i, bx * BLOCK + j
                if r < m and c < n:
                    O[r, c] = A[r, c] + B[r, c] + C[r, c] + D[r, c] + E[r, c] + F[r, c] + G[r, c]

    return main


def scale(T, m, n, dtype="float32"):
    """Y = alpha X: a tensor, a scalar and an output."""

    @T.prim_func
    def main(X: T.Tensor((m, n), dtype), alpha: T.float32, Y: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(n, BLOCK), T.ceildiv(m, BLOCK), threads=128) as (bx, by):
            for i, j in T.Parallel(BLOCK, BLOCK):
                r, c = by * BLOCK + i, bx * BLOCK + j
                if r < m and c < n:
                    Y[r, c] = X[r, c] * alpha

    return main


def layer_norm(T, m, n, block_m=4, eps=1e-5, dtype="float32"):
    """Y = (X - mean) / std * W + Bias, row by row: four tensors."""

    @T.prim_func
    def main(X: T.Tensor((m, n), dtype), W: T.Tensor((n,), dtype), Bias: T.Tensor((n,), dtype),
             Y: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            x = T.alloc_fragment((block_m, n), "float32")
            sq = T.alloc_fragment((block_m, n), "float32")
            mean = T.alloc_fragment((block_m,), "float32")
            var = T.alloc_fragment((block_m,), "float32")
            w = T.alloc_fragment((n,), "float32")
            b = T.alloc_fragment((n,), "float32")
            T.copy(X[bx * block_m, 0], x)
            T.copy(W, w)
            T.copy(Bias, b)
            T.reduce_sum(x, mean, dim=1)
            for i in T.Parallel(block_m):
                mean[i] = mean[i] / n
            for i, j in T.Parallel(block_m, n):
                sq[i, j] = (x[i, j] - mean[i]) * (x[i, j] - mean[i])
            T.reduce_sum(sq, var, dim=1)
            for i, j in T.Parallel(block_m, n):
                x[i, j] = (x[i, j] - mean[i]) * T.rsqrt(var[i] / n + eps) * w[j] + b[j]
            T.copy(x, Y[bx * block_m, 0])

    return main


@tl.jit
def add_eager(A, B):
    """C = A + B as an eager-style program: sizes from the tensors."""
    m, n = T.const("m, n")
    A: T.Tensor((m, n), T.float32)
    B: T.Tensor((m, n), T.float32)
    C = T.empty((m, n), T.float32)
    with T.Kernel(T.ceildiv(n, BLOCK), T.ceildiv(m, BLOCK), threads=128) as (bx, by):
        for i, j in T.Parallel(BLOCK, BLOCK):
            row, col = by * BLOCK + i, bx * BLOCK + j
            if row < m and col < n:
                C[row, col] = A[row, col] + B[row, col]
    return C


@tl.jit(out_idx=[2])
def add_factory(m, n):
    """The classic style: called with its sizes, returns the kernel."""
    return add3(T, m, n)


# ---------------------------------------------------------------------------
# Triton (GPU): kernels taking the same arguments
# ---------------------------------------------------------------------------

def triton_kernels():
    try:
        import triton
        import triton.language as tt
    except ImportError:
        return None

    @triton.jit
    def t_inc(X, n, BLOCK: tt.constexpr):
        i = tt.program_id(0) * BLOCK + tt.arange(0, BLOCK)
        tt.store(X + i, tt.load(X + i, mask=i < n) + 1.0, mask=i < n)

    @triton.jit
    def t_add(A, B, C, n, BLOCK: tt.constexpr):
        i = tt.program_id(0) * BLOCK + tt.arange(0, BLOCK)
        tt.store(C + i, tt.load(A + i, mask=i < n) + tt.load(B + i, mask=i < n), mask=i < n)

    @triton.jit
    def t_sum8(A, B, C, D, E, F, G, O, n, BLOCK: tt.constexpr):
        i = tt.program_id(0) * BLOCK + tt.arange(0, BLOCK)
        k = i < n
        s = tt.load(A + i, mask=k) + tt.load(B + i, mask=k) + tt.load(C + i, mask=k)
        s += tt.load(D + i, mask=k) + tt.load(E + i, mask=k) + tt.load(F + i, mask=k)
        tt.store(O + i, s + tt.load(G + i, mask=k), mask=k)

    @triton.jit
    def t_scale(X, alpha, Y, n, BLOCK: tt.constexpr):
        i = tt.program_id(0) * BLOCK + tt.arange(0, BLOCK)
        tt.store(Y + i, tt.load(X + i, mask=i < n) * alpha, mask=i < n)

    @triton.jit
    def t_layer_norm(X, W, B, Y, n, eps, BLOCK: tt.constexpr):
        row = tt.program_id(0)
        cols = tt.arange(0, BLOCK)
        k = cols < n
        x = tt.load(X + row * n + cols, mask=k, other=0.0)
        mean = tt.sum(x, axis=0) / n
        d = tt.where(k, x - mean, 0.0)
        rstd = 1.0 / tt.sqrt(tt.sum(d * d, axis=0) / n + eps)
        y = d * rstd * tt.load(W + cols, mask=k) + tt.load(B + cols, mask=k)
        tt.store(Y + row * n + cols, y, mask=k)

    return dict(inc=t_inc, add=t_add, sum8=t_sum8, scale=t_scale, layer_norm=t_layer_norm,
                version=triton.__version__)


# ---------------------------------------------------------------------------
# TileLang's own launcher, where its package is installed
# ---------------------------------------------------------------------------

def tilelang_kernels():
    """TileLang's kernels of the same programs, or None (not installed, or
    `tilelang` is this package's compatibility module)."""
    try:
        import tilelang
        import tilelang.language as TT
    except Exception:  # noqa: BLE001 (any failure: no TileLang column)
        return None
    if "tilelang_mlir" in getattr(tilelang, "__file__", "tilelang_mlir"):
        return None
    try:
        add = tilelang.compile(add3(TT, M, N), out_idx=[2])
        norm = tilelang.compile(layer_norm(TT, LN_M, LN_N), out_idx=[3])

        def tl_factory(m, n):
            return add3(TT, m, n)

        factory = tilelang.jit(out_idx=[2])(tl_factory)
    except Exception as e:  # noqa: BLE001
        print(f"TileLang {getattr(tilelang, '__version__', '?')} did not compile: {e}")
        return None
    return dict(add=add, layer_norm=norm, factory=factory,
                version=getattr(tilelang, "__version__", "?"))


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------

def per_call_us(fn, calls: int, cuda: bool) -> float:
    """Median over 5 rounds of the host microseconds per call of `fn`,
    issued back to back (the device synchronized around each round)."""
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for _ in range(max(10, calls // 10)):
        fn()
    sync()
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        rounds.append((time.perf_counter() - t0) / calls * 1e6)
        sync()
    return statistics.median(rounds)


def python_path(fn):
    """`fn` with every kernel call on the Python path."""

    def run():
        was = launcher.set_native(False)
        try:
            return fn()
        finally:
            launcher.set_native(was)

    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    target = args.target
    cuda = target == "cuda"
    global M, N, BLOCK, LN_M, LN_N
    M, N, BLOCK, LN_M, LN_N = SIZES[target]
    k_inc = tl.compile(inc1(T, M * N), target=target)
    k_empty = tl.compile(empty1(T, M * N), target=target)
    k_add = tl.compile(add3(T, M, N), out_idx=[2], target=target)
    k_sum8 = tl.compile(sum8(T, M, N), out_idx=[7], target=target)
    k_dyn = tl.compile(add3(T, T.dynamic("m"), N), out_idx=[2], target=target)
    k_scale = tl.compile(scale(T, M, N), out_idx=[2], target=target)
    k_norm = tl.compile(layer_norm(T, LN_M, LN_N), out_idx=[3], target=target)
    add_eager.target = target
    add_factory.target = target
    add_eager.compile(m=M, n=N)
    add_factory(M, N)
    if cuda and not torch.cuda.is_available():
        print("compiled; no GPU here (AOT prepare)")
        return
    device = "cuda" if cuda else "cpu"
    if not cuda:
        torch.set_num_threads(1)  # tiny ops: no thread pool for torch either

    def rand(*shape):
        return torch.randn(*shape, device=device)

    a, b, c = rand(M, N), rand(M, N), torch.empty(M, N, device=device)
    seven = [rand(M, N) for _ in range(7)]
    flat = rand(M * N)
    x, w, bias = rand(LN_M, LN_N), rand(LN_N), rand(LN_N)
    prebound = k_add.get_profiler()._launcher([a, b])
    floor = k_empty.get_profiler()._launcher([flat])
    was = launcher.set_native(False)
    prebound_python = k_add.get_profiler()._launcher([a, b])  # the Python path's
    launcher.set_native(was)
    assert torch.allclose(k_add(a, b), a + b) and torch.allclose(add_eager(a, b), a + b)
    ln = torch.nn.functional.layer_norm
    # (case, ours, torch, Triton, TileLang): callables or None.
    rows = [
        ("floor: empty kernel, pre-bound", floor, None, None, None),
        ("1 tensor (x += 1, in place)", lambda: k_inc(flat), lambda: flat.add_(1), None, None),
        ("3 tensors: add, checks + output", lambda: k_add(a, b), lambda: torch.add(a, b), None,
         None),
        ("3 tensors: add, pre-bound", prebound, lambda: torch.add(a, b, out=c), None, None),
        ("8 tensors: sum of 7 + output", lambda: k_sum8(*seven), None, None, None),
        (f"dynamic size: add (m x {N})", lambda: k_dyn(a, b), lambda: torch.add(a, b), None, None),
        ("scalar argument: y = alpha x", lambda: k_scale(a, 2.5), lambda: torch.mul(a, 2.5),
         None, None),
        ("layer norm (4 tensors)", lambda: k_norm(x, w, bias),
         lambda: ln(x, (LN_N,), w, bias), None, None),
        ("@tl.jit eager add, cache hit", lambda: add_eager(a, b), lambda: torch.add(a, b), None,
         None),
        ("@tl.jit factory(m, n)(a, b), hit", lambda: add_factory(M, N)(a, b),
         lambda: torch.add(a, b), None, None),
    ]
    triton = triton_kernels() if cuda else None
    if triton is not None:
        n, nn = M * N, 1024

        def tgrid(size):
            return ((size + nn - 1) // nn,)

        def t_alloc(kernel, *ins, **kw):
            out = torch.empty_like(ins[0])
            kernel[tgrid(n)](*ins, out, n, BLOCK=nn, **kw)
            return out

        tri = {
            1: lambda: triton["inc"][tgrid(n)](flat, n, BLOCK=nn),
            2: lambda: t_alloc(triton["add"], a, b),
            3: lambda: triton["add"][tgrid(n)](a, b, c, n, BLOCK=nn),
            4: lambda: t_alloc(triton["sum8"], *seven),
            5: lambda: t_alloc(triton["add"], a, b),
            6: lambda: t_alloc(triton["scale"], a, 2.5),
            8: lambda: t_alloc(triton["add"], a, b),
            9: lambda: t_alloc(triton["add"], a, b),
        }

        def t_norm():
            y = torch.empty_like(x)
            triton["layer_norm"][(LN_M,)](x, w, bias, y, LN_N, 1e-5, BLOCK=LN_N)
            return y

        tri[7] = t_norm
        torch.testing.assert_close(t_norm(), ln(x, (LN_N,), w, bias), rtol=1e-4, atol=1e-4)
        for i, fn in tri.items():
            rows[i] = rows[i][:3] + (fn, None)
    tilelang = tilelang_kernels() if cuda else None
    if tilelang is not None:
        for i, fn in ((2, lambda: tilelang["add"](a, b)),
                      (7, lambda: tilelang["layer_norm"](x, w, bias)),
                      (9, lambda: tilelang["factory"](M, N)(a, b))):
            rows[i] = rows[i][:4] + (fn,)
    card = torch.cuda.get_device_name() if cuda else "CPU"
    print(f"host us per call, {args.calls} calls x 5 rounds (median); {card}; "
          f"torch {torch.__version__}"
          + (f"; Triton {triton['version']}" if triton else "; no Triton")
          + (f"; TileLang {tilelang['version']}" if tilelang else "; no TileLang")
          + f"; native launcher: {launcher.status()}")
    header = f"{'case':36} {'ours':>7} {'ours/py':>8} {'torch':>7} {'Triton':>7} {'TileLang':>9}"
    print(header)
    print("-" * len(header))

    def fmt(fn, **kw):
        return f"{per_call_us(fn, args.calls, cuda):.2f}" if fn is not None else "-"

    for i, (name, ours, theirs, tri_fn, tl_fn) in enumerate(rows):
        ours_python = (prebound_python if ours is prebound else None if ours is floor
                       else python_path(ours))
        print(f"{name:36} {fmt(ours):>7} {fmt(ours_python):>8} {fmt(theirs):>7} "
              f"{fmt(tri_fn):>7} {fmt(tl_fn):>9}", flush=True)
    if args.profile:
        for title, fn in (("native path", lambda: k_norm(x, w, bias)),
                          ("Python path", python_path(lambda: k_norm(x, w, bias)))):
            print(f"\ncProfile of layer norm, {title}:")
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(args.calls):
                fn()
            prof.disable()
            if cuda:
                torch.cuda.synchronize()
            pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    try:
        main()
    except NoCUDADevice:
        print("compiled only: no GPU here (AOT prepare)")
