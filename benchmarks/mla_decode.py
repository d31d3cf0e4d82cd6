"""DeepSeek MLA decode on Hopper: ours next to a PyTorch gather + bmm path
and a Triton split-KV kernel written here.

Cases: 128 query heads sharing one latent KV head (q_nope 512 + q_pe 64,
value dim 512), a paged cache (pages of 64 tokens, shuffled block table),
batch 64 and 128, every sequence `cache` tokens long (1024 to 16384),
float16.

Contenders: ours (kernels/attention/mla_decode.py: the split kernel and
the combine, each variant of VARIANTS with each number of splits of SPLITS
tried and the fastest kept; the "roles" variant is mla_decode_roles.py,
the program with explicit warpgroup roles; every variant's time is
printed),
torch (gather the pages of every sequence, then scores, softmax and P V
with bmm: the unfused path a user gets without a kernel), and a Triton
split-KV kernel (one program per block of heads of one sequence and one
split, online softmax over its pages, partials combined by a second Triton
kernel), autotuned over a few block/warp/stage configs. Every contender is
checked on fresh random inputs against a float32 reference (relative
Frobenius error below 1e-2); a wrong result is reported, not timed. Timing:
median device time of CUDA-graph replays after warm-up, L2 flushed before
each. TFLOP/s count 2 H N (576 + 512) per sequence of N tokens; GB/s count
the cache bytes read once (N x 576 x 2 per sequence). The H200's balance
point is about 206 FLOP per byte and this kernel does about 240 (128 heads
x 1088 x 2 / 1152 bytes), so a kernel at the hardware limits is
compute-bound: the table says which limit binds (the fraction of 989
TFLOP/s dense fp16 and of 4.8 TB/s).

    python benchmarks/mla_decode.py [--batch 64,128] [--cache 1024,4096,8192,16384]
                                    [--dtype float16,bfloat16] [--ragged] [--splits 1,2]
                                    [--no-autotune] [--variants split,replicate]

Without a GPU it compiles every kernel the run would use into the kernel
cache and exits: `scripts/gpu_check.sh prepare-mla` here, `scripts/
gpu_check.sh run-mla` on the GPU machine.
"""

import math
import os
import sys

import torch

import tilelang_mlir as tl  # noqa: F401 (the compiler, where there is one)
from tilelang_mlir.kernels.attention import mla_decode as ours
from tilelang_mlir.kernels.attention import mla_decode_roles as ours_roles

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402 (benchmarks/common.py)
from common import measure, tlang, triton  # noqa: E402 (Triton: None without it)


HEADS, PAGE = 128, 64
DV, DPE = ours.DV, ours.DPE
TOL = 1e-2
SPLITS = [1, 2, 4, 8]  # ours: the split counts tried
# ours: the variants of the split kernel tried (kernels/attention/mla_decode.py,
# `scores`): split = score columns split over the two warpgroups, row
# statistics and P through shared memory; replicate = each warpgroup the
# whole score tile, P in registers; roles = the program with explicit
# warpgroup roles (kernels/attention/mla_decode_roles.py: a TMA producer,
# one warpgroup on scores and softmax, P and alpha handed to the other).
# seesaw = the explicit program in FlashMLA's schedule (mla_decode_roles.py:
# the two consumer warpgroups take the tiles in turns).
VARIANTS = {"split": ours.HOPPER, "replicate": ours.HOPPER_REPLICATE, "roles": {},
            "seesaw": {}}
WRAPPERS = {"roles": ours_roles.MlaDecodeRoles, "seesaw": ours_roles.MlaDecodeSeesaw}
H200_TFLOPS, H200_TBS = 989.0, 4.8


class Case:
    """`batch` sequences of `cache` tokens, or with `ragged` lengths drawn
    (fixed seed) uniformly from [cache / 4, 7 cache / 4): the same mean,
    a longest sequence of up to 1.75 cache."""

    def __init__(self, batch, cache, dtype="float16", ragged=False):
        self.batch, self.cache, self.dtype, self.ragged = batch, cache, dtype, ragged
        if ragged:
            gen = torch.Generator().manual_seed(batch * 100003 + cache)
            self.lens = torch.randint(cache // 4, 7 * cache // 4, (batch,),
                                      generator=gen).tolist()
        else:
            self.lens = [cache] * batch

    @property
    def label(self):
        kind = " ragged" if self.ragged else ""
        return f"B{self.batch} N{self.cache}{kind} H{HEADS} {self.dtype}"

    @property
    def pages(self):
        return math.ceil(max(self.lens) / PAGE)

    @property
    def flop(self):
        return 2 * HEADS * sum(self.lens) * (DV + DPE + DV)

    @property
    def bytes(self):
        return sum(self.lens) * (DV + DPE) * 2

    def ours(self, variant, splits, target):
        wrapper = WRAPPERS.get(variant, ours.MlaDecode)
        return wrapper(self.batch, HEADS, self.batch * self.pages, self.pages, splits,
                       target=target, dtype=self.dtype, **VARIANTS[variant])


# ---------------------------------------------------------------------------
# PyTorch: gather the pages, then bmm (no paging inside a kernel).
# ---------------------------------------------------------------------------


def torch_mla(q, q_pe, kv, table, n):
    """Every sequence `n` long (the benchmark's cases); `n` is a Python int,
    so that the path has no host synchronization and a CUDA graph can
    capture it (an `int()` of a device tensor failed the capture)."""
    B = q.shape[0]
    cache = kv[table.long()].view(B, -1, DV + DPE)[:, :n]           # (B, N, 576)
    query = torch.cat([q, q_pe], dim=-1)                            # (B, H, 576)
    s = torch.bmm(query, cache.transpose(1, 2)) * (1 / math.sqrt(DV + DPE))
    p = torch.softmax(s.float(), dim=-1).to(q.dtype)
    return torch.bmm(p, cache[..., :DV])


# ---------------------------------------------------------------------------
# Triton: split-KV MLA decode (one program per BLOCK_H heads of one sequence
# and one split; pages through the block table; exp2 online softmax), then a
# combine over the splits.
# ---------------------------------------------------------------------------

if triton is not None:
    def _triton_configs():
        shapes = [(64, 64, 8, 2), (64, 32, 8, 3), (32, 64, 4, 2), (32, 64, 8, 3),
                  (16, 64, 4, 3)]
        return [triton.Config({"BLOCK_H": h, "BLOCK_N": n}, num_warps=w, num_stages=s)
                for h, n, w, s in shapes]

    @triton.autotune(configs=_triton_configs(), key=["MAX_PAGES", "SPLITS"])
    @triton.jit
    def _mla_split(Q, QPE, KV, TABLE, LENS, OPART, LSEPART, qk_scale, MAX_PAGES, SPLITS,
                   H: tlang.constexpr, DV: tlang.constexpr, DPE: tlang.constexpr,
                   PAGE: tlang.constexpr, BLOCK_H: tlang.constexpr, BLOCK_N: tlang.constexpr):
        b = tlang.program_id(0)
        hb = tlang.program_id(1)
        split = tlang.program_id(2)
        n = tlang.load(LENS + b)
        tiles = tlang.cdiv(n, BLOCK_N)
        per = tlang.cdiv(tiles, SPLITS)
        lo = split * per
        hi = tlang.minimum(lo + per, tiles)
        heads = hb * BLOCK_H + tlang.arange(0, BLOCK_H)
        dv = tlang.arange(0, DV)
        dpe = tlang.arange(0, DPE)
        q = tlang.load(Q + (b * H + heads[:, None]) * DV + dv[None, :])
        qpe = tlang.load(QPE + (b * H + heads[:, None]) * DPE + dpe[None, :])
        m_i = tlang.full([BLOCK_H], float("-inf"), dtype=tlang.float32)
        l_i = tlang.zeros([BLOCK_H], dtype=tlang.float32)
        acc = tlang.zeros([BLOCK_H, DV], dtype=tlang.float32)
        offs_n = tlang.arange(0, BLOCK_N)
        for t in range(lo, hi):
            tok = t * BLOCK_N + offs_n
            page = tlang.load(TABLE + b * MAX_PAGES + tok // PAGE).to(tlang.int64)
            row = (page * PAGE + tok % PAGE) * (DV + DPE)
            kv = tlang.load(KV + row[:, None] + dv[None, :])            # (BLOCK_N, DV)
            kpe = tlang.load(KV + row[:, None] + DV + dpe[None, :])      # (BLOCK_N, DPE)
            s = tlang.dot(q, tlang.trans(kv)) + tlang.dot(qpe, tlang.trans(kpe))
            s = tlang.where((tok < n)[None, :], s * qk_scale, float("-inf"))
            m_new = tlang.maximum(m_i, tlang.max(s, 1))
            p = tlang.math.exp2(s - m_new[:, None])
            alpha = tlang.math.exp2(m_i - m_new)
            l_i = l_i * alpha + tlang.sum(p, 1)
            acc = acc * alpha[:, None] + tlang.dot(p.to(kv.dtype), kv)
            m_i = m_new
        empty = l_i == 0
        o = acc / tlang.where(empty, 1.0, l_i)[:, None]
        lse = tlang.where(empty, float("-inf"), m_i + tlang.math.log2(tlang.where(empty, 1.0, l_i)))
        base = (b * SPLITS + split) * H + heads
        tlang.store(OPART + base[:, None] * DV + dv[None, :], o)
        tlang.store(LSEPART + base, lse)

    def triton_mla(q, q_pe, kv, table, lens, splits):
        B, H, _ = q.shape
        o_part = torch.empty(B, splits, H, DV, device=q.device, dtype=torch.float32)
        lse_part = torch.empty(B, splits, H, device=q.device, dtype=torch.float32)
        scale = math.log2(math.e) / math.sqrt(DV + DPE)

        def grid(meta):
            return (B, H // meta["BLOCK_H"], splits)

        _mla_split[grid](q, q_pe, kv, table, lens, o_part, lse_part, scale, table.shape[1],
                         splits, H=H, DV=DV, DPE=DPE, PAGE=PAGE)
        o = torch.empty(B, H, DV, device=q.device, dtype=q.dtype)
        common.triton_splitkv_combine[(B, H)](o_part, lse_part, o, splits, H=H, D=DV,
                                              NS=max(2, triton.next_power_of_2(splits)))
        return o

    def triton_best():
        return common.triton_config(_mla_split, "BLOCK_H", "BLOCK_N")


def triton_splits(case):
    """Enough programs for two waves of 132 multiprocessors (heads in
    blocks of 32 on average)."""
    blocks = case.batch * HEADS // 32
    return max(1, min(case.pages, math.ceil(2 * 132 / blocks)))


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------


def check(o_ref):
    return common.within(o_ref, TOL)


def run_case(case, kernels):
    q, q_pe, kv, table, seqlens = ours.make_inputs(
        case.batch, HEADS, case.lens, dtype=getattr(torch, case.dtype), device="cuda",
        seed=int.from_bytes(os.urandom(4), "little"))
    o_ref = ours.reference(q, q_pe, kv, table, seqlens)
    row = {"case": case}
    results = []
    for name, kernel in kernels:
        result = measure(lambda k=kernel: k(q, q_pe, kv, table, seqlens), check(o_ref))
        status, ms, detail = result
        text = (f"{ms:8.3f} ms {case.flop / ms / 1e9:6.0f} TFLOP/s "
                f"{case.bytes / ms / 1e6:6.0f} GB/s (error {detail:.1e})"
                if status == "ok" else f"{status}: {detail}")
        print(f"   ours {name:<22} {text}")
        results.append((name, result))
    ok = [r for r in results if r[1][0] == "ok"]
    if ok:
        name, row["ours"] = min(ok, key=lambda r: r[1][1])
        row["config"] = name
    else:
        row["ours"] = results[0][1] if results else ("failed", None, "not compiled")
        row["config"] = ""
    if case.ragged:
        row["torch"] = ("n/a", None, "the gather+bmm path needs equal lengths")
    else:
        n_tokens = case.cache
        row["torch"] = measure(lambda: torch_mla(q, q_pe, kv, table, n_tokens), check(o_ref))
    if triton is None:
        row["triton"] = ("n/a", None, "triton is not installed")
    else:
        splits = triton_splits(case)
        row["triton"] = measure(lambda: triton_mla(q, q_pe, kv, table, seqlens, splits),
                                check(o_ref))
        row["triton_config"] = (f"{triton_best()} splits={splits}"
                                if row["triton"][0] == "ok" else "")
    del q, q_pe, kv, table, seqlens, o_ref
    torch.cuda.empty_cache()
    return row


def cell(result, case):
    return common.cell(result, lambda ms: f"{case.flop / ms / 1e9:.0f} / {case.bytes / ms / 1e6:.0f}")


def print_table(rows):
    print()
    print("| case | cache | ours | torch gather+bmm | Triton split-KV | ours / Triton "
          "| ours: % of peak FLOP/s, % of HBM | our config | Triton config |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        case, ours, trit = row["case"], row["ours"], row["triton"]
        ratio = common.speedup(ours, trit)
        bound = "—"
        if ours[0] == "ok":
            f = case.flop / ours[1] / 1e9 / H200_TFLOPS
            b = case.bytes / ours[1] / 1e9 / H200_TBS
            bound = f"{100 * f:.0f}%, {100 * b:.0f}%"
        kind = f"B{case.batch} {case.dtype}" + (" ragged" if case.ragged else "")
        print(f"| {kind} | {case.cache} | {cell(ours, case)} | {cell(row['torch'], case)} "
              f"| {cell(trit, case)} | {ratio} | {bound} | {row['config']} "
              f"| {row.get('triton_config', '')} |")
    print("(TFLOP/s / GB/s of cache read; peaks: H200 989 TFLOP/s dense fp16, 4.8 TB/s)")


def main(argv=None):
    parser = common.arguments(__doc__, "ours with 4 splits only")
    parser.add_argument("--batch", default="64,128")
    parser.add_argument("--cache", default="1024,4096,8192,16384")
    parser.add_argument("--dtype", default="float16", help="float16,bfloat16")
    parser.add_argument("--splits", default=",".join(map(str, SPLITS)),
                        help="ours: the split counts tried")
    parser.add_argument("--ragged", action="store_true",
                        help="also each case with ragged lengths of the same mean")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"ours: the split-kernel variants tried ({', '.join(VARIANTS)})")
    args = parser.parse_args(argv)
    gpu, target = common.init_cuda()
    todo = [Case(int(b), int(n), dt, r) for dt in args.dtype.split(",")
            for b in args.batch.split(",") for n in args.cache.split(",")
            for r in ([False, True] if args.ragged else [False])]
    splits = [4] if args.no_autotune else [int(x) for x in args.splits.split(",")]
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")

    def choices(case):
        for v in variants:
            for s in splits:
                yield f"{v} splits={s}", f"{v} splits={s}", lambda: case.ours(v, s, target)

    watch = common.CompilerWatch()
    compiled = common.compile_wrappers(todo, choices)
    watch.check()
    if not gpu:
        print("no GPU here: compiled only (AOT prepare)")
        return

    common.start_measuring()
    print_table(common.run_cases(todo, lambda case: run_case(case, compiled[case.label])))


if __name__ == "__main__":
    common.run(main)
