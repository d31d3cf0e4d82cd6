"""Flash decoding on the GPU: ours next to torch scaled_dot_product_attention
(each backend that runs) and a Triton split-KV decode kernel written here.

Cases: one query token per sequence, batch B in {1, 16, 64}, 32 query
heads, 8 or 32 KV heads (grouped-query and multi-head attention), every
sequence `cache` tokens long (4096 to 32768), head dim 128, float16, a
contiguous (batch, kv_heads, cache, dim) KV cache.

Contenders: ours (kernels/attention/flash_decode.py: split kernel and
combine; each config of CONFIGS with split counts around the one-wave
default, the fastest kept), torch SDPA with the query as a length-1
sequence, one column per backend (FLASH_ATTENTION, CUDNN_ATTENTION,
EFFICIENT_ATTENTION, MATH; GQA through enable_gqa where torch has it, else
K/V repeated per query head outside the timing), and a Triton split-KV
kernel (one program per KV head of one sequence and one split, the group's
query heads as the rows of tl.dot, online softmax, a second kernel
combining the splits), autotuned over a few block/warp/stage configs and
run at the same split counts as ours, the fastest kept. Every
contender is checked first on the same random inputs against a float32
reference (relative Frobenius error below 1e-2), then timed: median of
CUDA-graph replays, L2 flushed before each; ours (the fastest config) and
the contenders (Triton at its fastest split count) again in `--rounds`
rounds, each once a round in turn, the table showing each one's median
round. Decoding is memory-bound: the
table gives GB/s of KV cache read (2 B KV_heads N D bytes) as a fraction
of the copy bandwidth measured in the same run (1 GiB device-to-device copy,
read + write), and the time.

    python benchmarks/flash_decode.py [--batch 1,16,64] [--kv-heads 8,32]
                                      [--cache 4096,16384,32768] [--no-autotune] [--rounds 5]

Without a GPU it compiles every kernel a run would use into the kernel cache
and exits: `scripts/gpu_check.sh prepare-decode` here, `scripts/
gpu_check.sh run-decode` on the GPU machine.
"""

import math
import os
import sys

import torch
import torch.nn.functional as F

import tilelang_mlir as tl  # noqa: F401 (the compiler, where there is one)
from tilelang_mlir.kernels.attention import flash_decode as ours

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402 (benchmarks/common.py)
# (Triton is on the GPU machine only: None elsewhere; SDPBackend needs a recent torch)
from common import SDPBackend, measure, sdpa_kernel, tlang, triton, within  # noqa: E402


HEADS, DIM = 32, 128
TOL = 1e-2
SDPA_BACKENDS = ["FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION", "MATH"]
# Ours: KV tile and stages (block_H is the library's default: 16 rows).
# 128-token tiles fill one block's shared memory (one block an SM); smaller
# tiles and fewer stages leave room for two or three.
# "cp.async": the KV tiles loaded by all the block's threads with cp.async
# (tl.disable_tma_lower, tl.disable_warp_specialized) instead of TMA from a
# producer warpgroup.
# (Dropped after runs on the H200, never the fastest: 128-token tiles in 3
# stages, 64-token tiles in 3 stages by TMA, 128-token tiles and 64-token
# tiles in 2 or 4 stages with cp.async, 256 threads with cp.async, and a
# split kernel with explicit roles where four consumer warps each take a
# quarter of every tile with a softmax of their own (commit bd06c7d):
# 6-10% slower than the compiler's warp specialization at batch 16-64.)
# 32-token tiles in 3 stages with cp.async (48 KB of KV, four blocks an SM)
# joined when the softmax's barriers were merged (tile-merge-barriers):
# the fastest at B1 H32/32 N16384 and at three splits of B16 H32/8.
# (64-token tiles in 2 stages with cp.async, three blocks an SM, were
# 4-12% slower than 3 stages in every case: BENCHMARKS.md 2026-12-03, late.)
# With tl.pipeline_reuse_slots (`reuse`: num_stages - 1 K/V buffers, each
# tile's copies into the buffer its step just read, as Triton's kernel
# does): 128-token tiles in 3 stages (141 KB, one block an SM) were the
# fastest of ours at B16 H32/8 N4096, 64-token tiles in 3 stages (73 KB,
# three blocks an SM) at B64 H32/32 N4096 (BENCHMARKS.md 2026-12-03, last).
# 128-token tiles in 2 stages with reuse (one K and one V buffer, 72 KB,
# three blocks an SM; Triton's fastest kernel at B64 H32/32 has the same
# shape) took 1-1.5% off the best of the rest at B64 H32/32 N16384 and
# N32768 (BENCHMARKS.md 2026-12-03, final). 64-token tiles in 3 stages with
# reuse on two warps (64 threads: the softmax's row reductions and P's
# staging shared by two warps instead of four) and on one warp (32
# threads) took 1-2% off the best of ours at B64 H32/32, level with
# Triton's (BENCHMARKS.md 2026-12-04).
CONFIGS = [dict(block_N=128, num_stages=2), dict(block_N=64, num_stages=4),
           dict(block_N=64, num_stages=2),
           dict(block_N=64, num_stages=3, cp_async=True),
           dict(block_N=32, num_stages=4, cp_async=True),
           dict(block_N=32, num_stages=3, cp_async=True),
           dict(block_N=128, num_stages=3, cp_async=True, reuse=True),
           dict(block_N=64, num_stages=3, cp_async=True, reuse=True),
           dict(block_N=128, num_stages=2, cp_async=True, reuse=True),
           dict(block_N=64, num_stages=3, cp_async=True, reuse=True, threads=64),
           dict(block_N=64, num_stages=3, cp_async=True, reuse=True, threads=32)]


def describe(config, splits):
    c = config
    return (f"N{c['block_N']} s{c['num_stages']}" +
            (" cp.async" if c.get("cp_async") else "") + (" reuse" if c.get("reuse") else "")
            + (f" t{c['threads']}" if "threads" in c else "") + f" splits={splits}")


class Case:
    def __init__(self, batch, kv_heads, cache, dtype="float16"):
        self.batch, self.kv_heads, self.cache, self.dtype = batch, kv_heads, cache, dtype

    @property
    def label(self):
        return f"B{self.batch} H{HEADS}/{self.kv_heads} N{self.cache} D{DIM} {self.dtype}"

    @property
    def bytes(self):
        """K and V of every sequence read once."""
        return 2 * self.batch * self.kv_heads * self.cache * DIM * 2

    def split_counts(self, autotune=True):
        """The default, and half, twice and three times it (at most 64, at
        most one 64-token tile a split); ours and Triton try the same.
        (Blocks of 32-token tiles hold four to a multiprocessor, so three
        one-wave splits can fill them.)"""
        s = ours.default_splits(self.batch, self.kv_heads, self.cache)
        if not autotune:
            return [s]
        tiles = math.ceil(self.cache / 64)
        return sorted({max(1, s // 2), s, min(tiles, 2 * s, 64), min(tiles, 3 * s, 64)})

    def ours(self, config, splits, target):
        config = dict(config)
        passes = None
        if config.pop("cp_async", False):
            passes = ours.CP_ASYNC_REUSE if config.pop("reuse", False) else ours.CP_ASYNC
        return ours.FlashDecode(self.batch, HEADS, self.kv_heads, DIM, max_seq=self.cache,
                                num_splits=splits, target=target, dtype=self.dtype,
                                pass_configs=passes, **config)


# ---------------------------------------------------------------------------
# Triton: split-KV decode (one program per KV head of one sequence and one
# split; the group's query heads padded to BLOCK_H rows of tl.dot; exp2
# online softmax), then a combine over the splits.
# ---------------------------------------------------------------------------

if triton is not None:
    def _triton_configs():
        shapes = [(64, 4, 2), (64, 4, 3), (128, 4, 2), (128, 8, 3), (32, 4, 4)]
        return [triton.Config({"BLOCK_N": n}, num_warps=w, num_stages=s) for n, w, s in shapes]

    @triton.autotune(configs=_triton_configs(), key=["N", "SPLITS", "GROUPS"])
    @triton.jit
    def _decode_split(Q, K, V, LENS, OPART, LSEPART, qk_scale, N, SPLITS,
                      KVH: tlang.constexpr, GROUPS: tlang.constexpr, D: tlang.constexpr,
                      BLOCK_H: tlang.constexpr, BLOCK_N: tlang.constexpr):
        b = tlang.program_id(0)
        g = tlang.program_id(1)
        split = tlang.program_id(2)
        n = tlang.load(LENS + b)
        tiles = tlang.cdiv(n, BLOCK_N)
        per = tlang.cdiv(tiles, SPLITS)
        lo = split * per
        hi = tlang.minimum(lo + per, tiles)
        rows = tlang.arange(0, BLOCK_H)
        real = rows < GROUPS
        heads = g * GROUPS + rows
        d = tlang.arange(0, D)
        q = tlang.load(Q + (b * KVH * GROUPS + heads[:, None]) * D + d[None, :],
                       mask=real[:, None], other=0.0)
        m_i = tlang.full([BLOCK_H], float("-inf"), dtype=tlang.float32)
        l_i = tlang.zeros([BLOCK_H], dtype=tlang.float32)
        acc = tlang.zeros([BLOCK_H, D], dtype=tlang.float32)
        offs_n = tlang.arange(0, BLOCK_N)
        base = (b * KVH + g).to(tlang.int64) * N * D
        for t in range(lo, hi):
            tok = t * BLOCK_N + offs_n
            inside = tok < n
            k = tlang.load(K + base + tok[:, None] * D + d[None, :], mask=inside[:, None],
                           other=0.0)
            v = tlang.load(V + base + tok[:, None] * D + d[None, :], mask=inside[:, None],
                           other=0.0)
            s = tlang.dot(q, tlang.trans(k))
            s = tlang.where(inside[None, :], s * qk_scale, float("-inf"))
            m_new = tlang.maximum(m_i, tlang.max(s, 1))
            p = tlang.math.exp2(s - m_new[:, None])
            alpha = tlang.math.exp2(m_i - m_new)
            l_i = l_i * alpha + tlang.sum(p, 1)
            acc = acc * alpha[:, None] + tlang.dot(p.to(v.dtype), v)
            m_i = m_new
        empty = l_i == 0
        o = acc / tlang.where(empty, 1.0, l_i)[:, None]
        lse = tlang.where(empty, float("-inf"), m_i + tlang.math.log2(tlang.where(empty, 1.0, l_i)))
        out = (b * SPLITS + split) * KVH * GROUPS + heads
        tlang.store(OPART + out[:, None] * D + d[None, :], o, mask=real[:, None])
        tlang.store(LSEPART + out, lse, mask=real)

    def triton_decode(q, k, v, lens, splits):
        B, H, D = q.shape
        KVH, N = k.shape[1], k.shape[2]
        groups = H // KVH
        o_part = torch.empty(B, splits, H, D, device=q.device, dtype=torch.float32)
        lse_part = torch.empty(B, splits, H, device=q.device, dtype=torch.float32)
        scale = math.log2(math.e) / math.sqrt(D)
        _decode_split[(B, KVH, splits)](q, k, v, lens, o_part, lse_part, scale, N, splits,
                                        KVH=KVH, GROUPS=groups, D=D,
                                        BLOCK_H=max(16, triton.next_power_of_2(groups)))
        o = torch.empty_like(q)
        common.triton_splitkv_combine[(B, H)](o_part, lse_part, o, splits, H=H, D=D,
                                              NS=max(2, triton.next_power_of_2(splits)))
        return o

    def triton_best():
        return "N" + common.triton_config(_decode_split, "BLOCK_N")


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------


def sdpa(backend, q, k, v):
    """q (B, H, D) as a length-1 sequence; GQA by enable_gqa or repeated K/V."""
    B, H, D = q.shape
    q4 = q.view(B, H, 1, D)
    groups = H // k.shape[1]
    gqa = {}
    if groups > 1:
        try:
            F.scaled_dot_product_attention(q4[:1, :, :, :8], k[:1, :, :1, :8], v[:1, :, :1, :8],
                                           enable_gqa=True)
            gqa = dict(enable_gqa=True)
        except TypeError:  # torch without enable_gqa: repeat (outside the timing)
            k, v = (x.repeat_interleave(groups, dim=1) for x in (k, v))

    def fn():
        with sdpa_kernel([getattr(SDPBackend, backend)]):
            return F.scaled_dot_product_attention(q4, k, v, **gqa).view(B, H, D)
    return fn


def ms_gbs(result, case, copy_gbs):
    def text(ms):
        gbs = case.bytes / ms / 1e6
        return f"{ms * 1e3:.1f} us {gbs:.0f} ({100 * gbs / copy_gbs:.0f}%)"
    return common.cell(result, text)


def run_case(case, kernels, generator, autotune=True, rounds=1):
    B, G, N = case.batch, case.kv_heads, case.cache
    dt = getattr(torch, case.dtype)
    q = torch.randn(B, HEADS, DIM, device="cuda", generator=generator).to(dt)
    k = torch.randn(B, G, N, DIM, device="cuda", generator=generator).to(dt)
    v = torch.randn(B, G, N, DIM, device="cuda", generator=generator).to(dt)
    lens = torch.full((B,), N, dtype=torch.int32, device="cuda")
    o_ref = ours.reference(q, k, v, lens)
    check = within(o_ref, TOL)
    row = {"case": case}
    results = []
    for (config, splits), kernel in kernels:
        result = measure(lambda kernel=kernel: kernel(q, k, v, lens), check)
        status, ms, detail = result
        text = (f"{ms * 1e3:8.1f} us {case.bytes / ms / 1e6:6.0f} GB/s (error {detail:.1e})"
                if status == "ok" else f"{status}: {detail}")
        print(f"   ours {describe(config, splits):24} {text}")
        results.append((describe(config, splits), result, kernel))
    ok = [r for r in results if r[1][0] == "ok"]
    fns = {}
    if ok:
        row["config"], row["ours"], best_kernel = min(ok, key=lambda r: r[1][1])
        row["ours_fn"] = lambda: best_kernel(q, k, v, lens)
    else:
        row["ours"] = results[0][1] if results else ("failed", None, "not compiled")
        row["config"] = ""
    for backend in SDPA_BACKENDS:
        if sdpa_kernel is None:
            row[backend] = ("n/a", None, "torch.nn.attention is missing")
            continue
        try:
            fn = sdpa(backend, q, k, v)
        except Exception as e:  # noqa: BLE001
            row[backend] = ("failed", None, common.reason(e))
            continue
        row[backend] = measure(fn, check)
        fns[backend] = fn
    if triton is None:
        row["triton"] = ("n/a", None, "triton is not installed")
    else:
        best = None
        for splits in case.split_counts(autotune):
            result = measure(lambda splits=splits: triton_decode(q, k, v, lens, splits), check)
            if result[0] == "ok":
                print(f"   triton splits={splits:<3} {result[1] * 1e3:8.1f} us")
            if best is None or (result[0] == "ok" and
                                (best[0][0] != "ok" or result[1] < best[0][1])):
                best = (result, f"{triton_best()} splits={splits}", splits)
        row["triton"] = best[0]
        row["triton_config"] = best[1] if best[0][0] == "ok" else ""
        fns["triton"] = lambda splits=best[2]: triton_decode(q, k, v, lens, splits)
    common.retime(row, fns, rounds, common.device_ms)
    del q, k, v, lens, o_ref, fns
    torch.cuda.empty_cache()
    return row


def print_table(rows, copy_gbs):
    print()
    print(f"copy bandwidth (1 GiB device-to-device, read + write): {copy_gbs:.0f} GB/s")
    print("cells: time, GB/s of KV cache read (fraction of the copy bandwidth)")
    print()
    names = [b.split("_")[0].lower() for b in SDPA_BACKENDS]
    print("| case | ours | " + " | ".join(f"SDPA {n}" for n in names) +
          " | Triton split-KV | ours / best other | our config | Triton config |")
    print("|---" * (6 + len(names)) + "|")
    for row in rows:
        case, ours = row["case"], row["ours"]
        ratio = common.speedup(ours, *(row[k] for k in SDPA_BACKENDS + ["triton"]))
        cells = " | ".join(ms_gbs(row[b], case, copy_gbs) for b in SDPA_BACKENDS)
        print(f"| {case.label} | {ms_gbs(ours, case, copy_gbs)} | {cells} | "
              f"{ms_gbs(row['triton'], case, copy_gbs)} | {ratio} | {row['config']} | "
              f"{row.get('triton_config', '')} |")
        for key in SDPA_BACKENDS + ["triton"]:
            if row[key][0] == "failed":
                print(f"  {case.label}: {key} failed: {row[key][2]}")


def main(argv=None):
    parser = common.arguments(__doc__,
                              "ours: the first config and the default split count only")
    parser.add_argument("--batch", default="1,16,64")
    parser.add_argument("--kv-heads", default="8,32")
    parser.add_argument("--cache", default="4096,16384,32768")
    args = common.rounds_argument(parser).parse_args(argv)
    gpu, target = common.init_cuda()
    todo = [Case(int(b), int(g), int(n)) for b in args.batch.split(",")
            for g in args.kv_heads.split(",") for n in args.cache.split(",")]
    configs = CONFIGS[:1] if args.no_autotune else CONFIGS

    def choices(case):
        for config in configs:
            for splits in case.split_counts(not args.no_autotune):
                yield ((config, splits), describe(config, splits),
                       lambda: case.ours(config, splits, target))

    watch = common.CompilerWatch()
    compiled = common.compile_wrappers(todo, choices)
    watch.check()
    if not gpu:
        print("no GPU here: compiled only (AOT prepare)")
        return

    generator = common.start_measuring()
    copy_gbs = common.copy_bandwidth()
    rows = common.run_cases(todo, lambda case: run_case(case, compiled[case.label], generator,
                                                           not args.no_autotune, args.rounds))
    print_table(rows, copy_gbs)


if __name__ == "__main__":
    common.run(main)
