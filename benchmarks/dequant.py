"""Weight-only quantized GEMM and GEMV on the GPU: ours next to cuBLAS and
a Triton dequant kernel.

Cases: C = A @ dequant(W)^T (tilelang_mlir.kernels.dequant) for int4 and
int8 weights with group-128 scales, float16 activations, at (M, N, K) in
{(1, 8192, 8192), (16, 28672, 8192), (4096, 8192, 8192)}; the float16 GEMV
y = W x (tilelang_mlir.kernels.gemv) at (N, K) in {(8192, 8192),
(28672, 8192)}.

Contenders: ours (every config of the library's list for the regime, the
fastest correct one reported; M = 1 tries the GEMV kernels without tensor
cores (chunked, reading views of A and W, and per byte) and the 16-row
tensor-core tiles; configs with `word` read the weights
repacked beforehand by dq.pack_words, the same bytes; every tensor-core config also runs
with 32-bit index arithmetic, `n32`: pass config tl.narrow_index; every chunked GEMV
config also runs without tile-fuse-lop3, `no-lop3`: pass config tl.disable_lop3), torch.matmul in float16 on the weights
dequantized beforehand (cuBLAS; the dequantization is not timed, so it moves
four times the bytes of int4), and a Triton kernel written here that
dequantizes on the way into tl.dot (autotuned over a few configs). Every
contender is checked first on the same random inputs (relative Frobenius
error against a float32 reference: below 1e-2), then timed: median of
CUDA-graph replays, L2 flushed before each. Reported: TFLOP/s, GB/s of the
bytes a kernel must move (packed W + scales + A + C; cuBLAS's row counts
its float16 W) and that as a fraction of the copy bandwidth measured in the
same run (torch device-to-device copy of 1 GiB: read + write). The
memory-bound cases (M <= 16) are timed a second way, in a table of their
own: the best config, cuBLAS and Triton each over copies of the weights
larger than the L2, called round robin in one graph, no flush
(`common.rotate_ms`): the flush zeroes a buffer, and the dirty lines it
leaves in the L2 cost a 10-20 us kernel 3-5 us of write-backs. That table
also times a kernel that only reads the packed weights (`read_floor`):
what the bytes cost with no arithmetic.

    python benchmarks/dequant.py [--cases dq,gemv] [--bits 4,8] [--quick] [--gemv-sweep]

Without a GPU it compiles every kernel a run would use into the kernel cache
(TILELANG_MLIR_CACHE_DIR) and exits: `scripts/gpu_check.sh prepare-dequant`
here, `scripts/gpu_check.sh run-dequant` on the GPU machine.
"""

import os
import sys
import time

import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.compiler.cuda import resource_report
from tilelang_mlir.kernels import dequant as dq
from tilelang_mlir.kernels import gemv as gv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402 (benchmarks/common.py)

try:  # Triton is on the GPU machine only
    import triton
    import triton.language as tlang
except ImportError:
    triton = None


DQ_SHAPES = [(1, 8192, 8192), (16, 28672, 8192), (4096, 8192, 8192)]
GEMV_SHAPES = [(8192, 8192), (28672, 8192)]
GROUP = 128
TOL = 1e-2


def read_floor(N, words, block_N=8, block_W=256, threads=128):
    """The "read floor" of a memory-bound case: a kernel that only reads an
    (N, words) int32 tensor the way the GEMVs read weights (16-byte chunks,
    block_N rows a block, block_W words a step) and sums each row; timed
    cold on the weights' words, it is what those bytes cost with no
    arithmetic at all."""
    block_W = min(block_W, words)
    if words % block_W:
        raise ValueError(f"{words} words do not split into steps of {block_W}")

    @T.prim_func
    def main(W: T.Tensor((N, words), "int32"), R: T.Tensor((N,), "int32")):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bx:
            w = T.alloc_fragment((block_N, block_W), "int32")
            acc = T.alloc_fragment((block_N, block_W // 4), "int32")
            r = T.alloc_fragment((block_N,), "int32")
            T.clear(acc)
            for k in T.serial(words // block_W):
                T.copy(W[bx * block_N, k * block_W], w)
                for n, j in T.Parallel(block_N, block_W, coalesced_width=4):
                    acc[n, j // 4] += w[n, j]
            T.reduce_sum(acc, r, dim=1)
            T.copy(r, R[bx * block_N])

    return main


def floor_words(case):
    """The int32 words of a case's packed weights (N, words)."""
    return case.N, case.K * case.bits // 32


def gemv_sweep(bits, K):
    """The GEMVs' tile space (--gemv-sweep): rows, stored bytes a step,
    threads, prefetch, float32 chunks or float16 pairs; each thread 2 to 8
    (row, chunk) pairs."""
    stored = K // 2 if bits == 4 else K
    out = []
    for block_N in (4, 8, 16, 32):
        for block_K in (256, 512, 1024, 2048):
            for threads in (32, 64, 128, 256):
                pairs = block_N * block_K // 16
                if stored % block_K or pairs % threads or pairs // threads not in (2, 4, 8):
                    continue
                for prefetch in (False, True):
                    out.append(dict(block_N=block_N, block_K=block_K, threads=threads,
                                    prefetch=prefetch))
                    out.append(dict(pairs=True, block_N=block_N, block_K=block_K,
                                    threads=threads, prefetch=prefetch))
    return out


class Case:
    sweep = False  # M = 1: the GEMV sweep instead of the library's configs
    cold_all = False  # M <= 16: every correct config timed cold

    def __init__(self, kind, shape, bits=16, dtype="float16"):
        self.kind, self.shape, self.bits, self.dtype = kind, shape, bits, dtype
        if kind == "dq":
            self.M, self.N, self.K = shape
        else:
            self.M, (self.N, self.K) = 1, shape

    @property
    def label(self):
        what = f"int{self.bits} dequant" if self.kind == "dq" else "GEMV"
        return f"{what} {self.M}x{self.N}x{self.K} {self.dtype}"

    @property
    def flop(self):
        return 2 * self.M * self.N * self.K

    def bytes(self, weight_bits=None):
        bits = self.bits if weight_bits is None else weight_bits
        w = self.N * self.K * bits // 8
        scales = self.N * (self.K // GROUP) * 2 if self.kind == "dq" and bits < 16 else 0
        return w + scales + 2 * (self.M * self.K + self.M * self.N)

    def configs(self):
        if self.kind == "gemv" and Case.sweep:
            return [dict(block_N=n, block_K=k, threads=t)
                    for n in (1, 2, 4, 8) for k in (1024, 2048, 4096) for t in (64, 128, 256)
                    if n * k // t in (8, 16, 32)]
        if self.kind == "gemv":
            return [dict(block_N=4, block_K=1024, threads=128),
                    dict(block_N=2, block_K=2048, threads=256),
                    dict(block_N=8, block_K=1024, threads=128)]
        if self.M == 1 and Case.sweep:
            return gemv_sweep(self.bits, self.K)
        return dq.configs_for(self.M)

    def variants(self):
        """The configs, and for the tensor-core programs each once more with
        32-bit index arithmetic (pass config tl.narrow_index), which the
        run reports as its own row ('n32')."""
        out = []
        for config in self.configs():
            out.append(config)
            if "block_M" in config:
                out.append(dict(config, narrow_index=True))
            elif self.kind == "dq" and dq.is_chunked_gemv(config) and not Case.sweep:
                out.append(dict(config, disable_lop3=True))
        return out

    def program(self, config):
        if self.kind == "gemv":
            return gv.gemv(self.N, self.K, dtype=self.dtype, **config), [2]
        return dq.program(self.M, self.N, self.K, self.bits, GROUP, self.dtype, config), [3]


def describe(config):
    config = dict(config)
    if config.pop("narrow_index", False):
        return describe(config) + " n32"
    if config.pop("disable_lop3", False):
        return describe(config) + " no-lop3"
    return " ".join(f"{k.replace('block_', 'b').replace('num_stages', 's').replace('threads', 't')}"
                    f"{getattr(v, 'name', v)}" for k, v in config.items())


def cases(args):
    kinds = set(args.cases.split(","))
    bits = [int(b) for b in args.bits.split(",")]
    result = []
    if "dq" in kinds:
        shapes = DQ_SHAPES[:1] if args.quick else DQ_SHAPES
        if args.m:
            shapes = [s for s in DQ_SHAPES if s[0] in {int(m) for m in args.m.split(",")}]
        result += [Case("dq", s, b) for s in shapes for b in bits]
    if "gemv" in kinds:
        result += [Case("gemv", s) for s in (GEMV_SHAPES[:1] if args.quick else GEMV_SHAPES)]
    return result


# ---------------------------------------------------------------------------
# Triton: a dequantizing matmul (the packed format of the library's kernels), C = A @ W^T
# ---------------------------------------------------------------------------

if triton is not None:
    _TRITON_CONFIGS = [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_warps=w,
                                     num_stages=s)
                       for m, n, k, w, s in [(16, 32, 128, 4, 4), (16, 64, 128, 4, 4),
                                             (16, 128, 128, 4, 3), (16, 64, 256, 4, 3),
                                             (128, 128, 64, 8, 3), (128, 256, 64, 8, 3),
                                             (128, 128, 128, 8, 3)]]

    @triton.autotune(configs=_TRITON_CONFIGS, key=["M", "N", "K", "BITS"],
                     prune_configs_by={"early_config_prune": lambda configs, named, **kw: [
                         c for c in configs if (c.kwargs["BLOCK_M"] == 16) == (named["M"] <= 16)]})
    @triton.jit
    def _triton_dequant_kernel(a_ptr, q_ptr, s_ptr, c_ptr, M, N, K, BITS: tlang.constexpr,
                               GROUP_K: tlang.constexpr, BLOCK_M: tlang.constexpr,
                               BLOCK_N: tlang.constexpr, BLOCK_K: tlang.constexpr):
        # The library's format: int4 byte b of a row holds k = b (low nibble)
        # and k = b + K/2 (high nibble), so each step unpacks one tile of
        # bytes into a tile of each half of K and runs two dots.
        pid_m, pid_n = tlang.program_id(1), tlang.program_id(0)
        offs_m = pid_m * BLOCK_M + tlang.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tlang.arange(0, BLOCK_N)
        offs_k = tlang.arange(0, BLOCK_K)
        m_ok = offs_m[:, None] < M
        n_ok = offs_n[None, :] < N
        if BITS == 4:
            stored = K // 2
        else:
            stored = K
        acc = tlang.zeros((BLOCK_M, BLOCK_N), dtype=tlang.float32)
        for k0 in range(0, stored, BLOCK_K):
            kk = k0 + offs_k
            qb = tlang.load(q_ptr + offs_n[None, :] * stored + kk[:, None], mask=n_ok,
                            other=0).to(tlang.int32)
            s_lo = tlang.load(s_ptr + offs_n[None, :] * (K // GROUP_K) + (kk // GROUP_K)[:, None],
                              mask=n_ok, other=0.0)
            a_lo = tlang.load(a_ptr + offs_m[:, None] * K + kk[None, :], mask=m_ok, other=0.0)
            if BITS == 4:
                w_lo = (((qb & 15) - 8).to(tlang.float32) * s_lo.to(tlang.float32))
                acc = tlang.dot(a_lo, w_lo.to(a_ptr.dtype.element_ty), acc)
                kh = stored + kk
                s_hi = tlang.load(s_ptr + offs_n[None, :] * (K // GROUP_K)
                                  + (kh // GROUP_K)[:, None], mask=n_ok, other=0.0)
                a_hi = tlang.load(a_ptr + offs_m[:, None] * K + kh[None, :], mask=m_ok,
                                  other=0.0)
                w_hi = (((qb >> 4) - 8).to(tlang.float32) * s_hi.to(tlang.float32))
                acc = tlang.dot(a_hi, w_hi.to(a_ptr.dtype.element_ty), acc)
            else:
                w = qb.to(tlang.float32) * s_lo.to(tlang.float32)
                acc = tlang.dot(a_lo, w.to(a_ptr.dtype.element_ty), acc)
        c_ptrs = c_ptr + offs_m[:, None] * N + offs_n[None, :]
        tlang.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=m_ok & n_ok)

    def triton_dequant(A, Wq, S, bits):
        M, K = A.shape
        N = Wq.shape[0]
        C = torch.empty((M, N), device=A.device, dtype=A.dtype)

        def grid(meta):
            return (triton.cdiv(N, meta["BLOCK_N"]), triton.cdiv(M, meta["BLOCK_M"]))

        _triton_dequant_kernel[grid](A, Wq, S, C, M, N, K, BITS=bits, GROUP_K=GROUP)
        return C

    def triton_best():
        return common.triton_config(_triton_dequant_kernel, "BLOCK_M", "BLOCK_N", "BLOCK_K")


# ---------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------


def measure(fn, ref):
    """common.measure against a float32 reference, tolerance TOL."""
    return common.measure(fn, common.within(ref, TOL))


def run_case(case, kernels, generator, floor=None):
    dt = getattr(torch, case.dtype)
    M, N, K = case.M, case.N, case.K
    row = {"case": case}
    if case.kind == "dq":
        A = torch.randn(M, K, device="cuda", generator=generator).to(dt)
        W = (torch.randn(N, K, device="cuda", generator=generator) * 0.05).to(dt)
        Wq, S = dq.quantize(W, case.bits, GROUP)
        del W
        Wd = dq.dequantize(Wq, S, case.bits, GROUP)  # (N, K) float16, on the GPU
        ref = A.float() @ Wd.float().T
        args = (A, Wq, S)
        cublas = lambda: torch.matmul(A, Wd.T)  # noqa: E731
    else:
        Wd = torch.randn(N, K, device="cuda", generator=generator).to(dt)
        x = torch.randn(K, device="cuda", generator=generator).to(dt)
        ref = Wd.float() @ x.float()
        args = (Wd, x)
        cublas = lambda: torch.mv(Wd, x)  # noqa: E731
    packed = {}  # the inputs of a config (word-packed once; views for the chunked GEMV)

    def args_for(config):
        if case.kind != "dq":
            return args
        key = dq.input_key(config)
        if key not in packed:
            packed[key] = dq.inputs_for(config, A, Wq, S, case.bits)
        return packed[key]

    best = None
    correct = []
    for config, kernel in kernels:
        result = measure(lambda k=kernel, a=args_for(config): k(*a), ref)
        print(f"   ours {describe(config):34} {result[0]:6} "
              f"{'' if result[1] is None else f'{result[1] * 1e3:8.1f} us'}  err {result[2]}")
        if result[0] == "ok":
            correct.append((config, result, kernel))
        if result[0] == "ok" and (best is None or result[1] < best[1][1]):
            best = (config, result, kernel)
    row["ours"] = best[1] if best else ("failed", None, "no config ran correctly")
    row["config"] = describe(best[0]) if best else ""
    row["cublas"] = measure(cublas, ref)
    if case.kind == "dq" and triton is not None:
        row["triton"] = measure(lambda: triton_dequant(A, Wq, S, case.bits), ref)
        row["triton_config"] = triton_best() if row["triton"][0] == "ok" else ""
    else:
        row["triton"] = ("n/a", None, "")
    del args, Wd, ref, packed
    torch.cuda.empty_cache()
    if case.M <= 16:  # memory-bound: also timed cold without a flush
        row.update(cold_times(case, row, best, generator, floor,
                              correct if Case.cold_all else None))
    return row


def cold_times(case, row, best, generator, floor=None, candidates=None):
    """Per-call ms of the best config and of cuBLAS (and Triton) with
    `common.rotate_ms`: a graph of calls over copies of the weights that
    together exceed the L2 (new random weights; the check above covered the
    kernels), so every call reads cold bytes and no flush runs in the timed
    region. {'ours_cold': ms, 'cublas_cold': ms, 'triton_cold': ms}, for
    the contenders that ran correctly. With `candidates` (--cold-all: every
    correct config) each is timed cold and the fastest kept (its config in
    'cold_config')."""
    dt = getattr(torch, case.dtype)
    M, N, K = case.M, case.N, case.K
    copies = common.copies_for(case.bytes())
    out = {}
    x = torch.randn(M, K, device="cuda", generator=generator).to(dt)
    sets = []
    for _ in range(copies):
        W = (torch.randn(N, K, device="cuda", generator=generator) * 0.05).to(dt)
        if case.kind == "dq":
            Wq, S = dq.quantize(W, case.bits, GROUP)
            sets.append((Wq, S, dq.dequantize(Wq, S, case.bits, GROUP)))
        else:
            sets.append((None, None, W))
        del W
    for config, _, kernel in (candidates or ([best] if best is not None else [])):
        if case.kind == "dq":
            ins = [dq.inputs_for(config, x, Wq, S, case.bits) for Wq, S, _ in sets]
        else:
            ins = [(Wd, x[0]) for _, _, Wd in sets]
        ms = common.rotate_ms([lambda k=kernel, a=a: k(*a) for a in ins])
        del ins
        if candidates:
            print(f"   cold {describe(config):34} {ms * 1e3:8.1f} us")
        if "ours_cold" not in out or ms < out["ours_cold"]:
            out["ours_cold"] = ms
            out["cold_config"] = describe(config)
    if row["cublas"][0] == "ok":
        fns = ([lambda w=Wd: torch.matmul(x, w.T) for _, _, Wd in sets] if case.kind == "dq"
               else [lambda w=Wd: torch.mv(w, x[0]) for _, _, Wd in sets])
        out["cublas_cold"] = common.rotate_ms(fns)
    if row["triton"][0] == "ok":
        out["triton_cold"] = common.rotate_ms(
            [lambda q=Wq, s=S: triton_dequant(x, q, s, case.bits) for Wq, S, _ in sets])
    if floor is not None:  # the weights' words only, read and summed
        words = [Wq.view(torch.int32).reshape(floor_words(case)) for Wq, _, _ in sets]
        want = words[0].to(torch.int64).sum(dim=1).to(torch.int32)  # wraps like the kernel
        if torch.equal(floor(words[0]), want):
            out["floor_cold"] = common.rotate_ms([lambda w=w: floor(w) for w in words])
        else:
            print(f"  {case.label}: the read floor kernel summed wrongly")
    del sets
    torch.cuda.empty_cache()
    return out


def cell(result, case, copy_gbs, weight_bits=None):
    def text(ms):
        gbs = case.bytes(weight_bits) / ms / 1e6
        return f"{case.flop / ms / 1e9:.1f} / {gbs:.0f} ({gbs / copy_gbs:.0%})"
    return common.cell(result, text)


def cold_cell(row, key, case, copy_gbs, weight_bits=None):
    """'us / GB/s (fraction)' of a cold (rotating, unflushed) time."""
    ms = row.get(key)
    if ms is None:
        return ""
    gbs = case.bytes(weight_bits) / ms / 1e6
    return f"{ms * 1e3:.1f} / {gbs:.0f} ({gbs / copy_gbs:.0%})"


def print_table(rows, copy_gbs):
    print()
    print(f"copy bandwidth (1 GiB device-to-device, read + write): {copy_gbs:.0f} GB/s")
    print("cells: TFLOP/s / GB/s (fraction of the copy bandwidth); cuBLAS moves float16 W")
    print()
    print("| case | ours | us | cuBLAS fp16 | Triton | ours / cuBLAS | our config "
          "| Triton config |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        case, ours, cublas = row["case"], row["ours"], row["cublas"]
        ratio = common.speedup(ours, cublas)
        us = f"{ours[1] * 1e3:.1f}" if ours[0] == "ok" else ""
        config = row["config"] if ours[0] == "ok" else ours[2]
        print(f"| {case.label} | {cell(ours, case, copy_gbs)} | {us} | "
              f"{cell(cublas, case, copy_gbs, 16)} | {cell(row['triton'], case, copy_gbs)} | "
              f"{ratio} | {config} | {row.get('triton_config', '')} |")
        for key in ("cublas", "triton"):
            if row[key][0] == "failed":
                print(f"  {case.label}: {key} failed: {row[key][2]}")
    cold = [row for row in rows if "ours_cold" in row or "cublas_cold" in row]
    if cold:
        print()
        print("cold, no flush (common.rotate_ms: a graph of calls over weight copies larger "
              "than the L2): us / GB/s (fraction of the copy bandwidth)")
        print()
        print("| case | ours | cuBLAS fp16 | Triton | read floor | ours / cuBLAS | our config |")
        print("|---|---|---|---|---|---|---|")
        for row in cold:
            case = row["case"]
            ratio = (f"{row['cublas_cold'] / row['ours_cold']:.2f}x"
                     if "ours_cold" in row and "cublas_cold" in row else "—")
            print(f"| {case.label} | {cold_cell(row, 'ours_cold', case, copy_gbs)} | "
                  f"{cold_cell(row, 'cublas_cold', case, copy_gbs, 16)} | "
                  f"{cold_cell(row, 'triton_cold', case, copy_gbs)} | "
                  f"{cold_cell(row, 'floor_cold', case, copy_gbs)} | {ratio} | "
                  f"{row.get('cold_config', '')} |")
        print("(read floor: `read_floor`, the weights' words only read and summed, no "
              "arithmetic; its GB/s count the case's bytes, as ours)")


def compile_all(todo, target):
    """{case label: [(config, kernel)]}; configs that do not compile are
    reported and skipped."""
    compiled = {}
    for case in todo:
        compiled[case.label] = []
        for config in case.variants():
            try:
                config = dict(config)
                flags = {k: config.pop(k) for k in ("narrow_index", "disable_lop3")
                         if config.get(k)}
                program, out_idx = case.program(config)
                kernel = tl.compile(program, out_idx=out_idx, target=target,
                                    pass_configs={f"tl.{k}": True for k in flags} or None)
                config.update(flags)
            except Exception as e:  # noqa: BLE001
                print(f"  {case.label} {describe(config)}: did not compile: "
                      f"{common.reason(e)}")
                continue
            report = resource_report(getattr(kernel, "ptxas_info", "") or "")
            if report["spill_stores"] or report["spill_loads"]:
                print(f"  {case.label} {describe(config)} spills registers")
            compiled[case.label].append((config, kernel))
        if case.kind == "dq" and case.M <= 16:  # the read floor of the cold table
            try:
                compiled[f"{case.label} floor"] = [
                    (None, tl.compile(read_floor(*floor_words(case)), out_idx=[1],
                                      target=target))]
            except Exception as e:  # noqa: BLE001
                print(f"  {case.label} read floor: did not compile: {common.reason(e)}")
    return compiled


def main(argv=None):
    parser = common.arguments(__doc__)
    parser.add_argument("--cases", default="dq,gemv", help="dq, gemv or both")
    parser.add_argument("--bits", default="4,8", help="weight bits of the dequant cases")
    parser.add_argument("--quick", action="store_true", help="the first shape of each kind")
    parser.add_argument("--m", default="",
                        help="comma-separated M: only the dequant shapes with these M")
    parser.add_argument("--cold-all", action="store_true",
                        help="M <= 16: time every correct config cold and keep the fastest "
                             "(default: the fastest flushed one)")
    parser.add_argument("--gemv-sweep", action="store_true",
                        help="M = 1: sweep the chunked GEMV's tiles instead of the library's "
                             "list (and the float16 GEMV's)")
    args = parser.parse_args(argv)
    Case.sweep = args.gemv_sweep
    Case.cold_all = args.cold_all
    gpu, target = common.init_cuda()
    todo = cases(args)
    t0 = time.perf_counter()
    compiled = compile_all(todo, target)
    count = sum(len(v) for v in compiled.values())
    print(f"compiled {count} kernels for {len(todo)} cases in {time.perf_counter() - t0:.0f} s")
    if not gpu:
        print("no GPU here: compiled only (AOT prepare)")
        return
    generator = common.start_measuring()
    copy_gbs = common.copy_bandwidth()

    def run(case):
        floor = compiled.get(f"{case.label} floor")
        return run_case(case, compiled[case.label], generator, floor[0][1] if floor else None)
    print_table(common.run_cases(todo, run), copy_gbs)


if __name__ == "__main__":
    common.run(main)
