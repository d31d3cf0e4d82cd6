"""FlashAttention forward on Hopper: ours next to torch's
scaled_dot_product_attention backends and a Triton FlashAttention-2 kernel.

Cases: B=8, H=32, S=4096, D in {64, 128}, causal and not, float16,
(batch, heads, seq, dim) tensors; with --kv-heads, grouped-query
attention (K and V with fewer heads; torch's SDPA through enable_gqa).

Contenders: ours (kernels/attention/flash_attn.py: its Hopper schedule,
PASS_CONFIGS, on its first config, then every config of its CONFIGS and
variants under other pass configs; the fastest kept; with --no-autotune
the library's default for the card, flash_attn.default_config),
torch.nn.functional.
scaled_dot_product_attention with each backend that runs (CUDNN_ATTENTION,
FLASH_ATTENTION, EFFICIENT_ATTENTION), and a Triton FlashAttention-2-style
kernel written here (online softmax in exp2, causal blocks split into the
unmasked part and the diagonal), autotuned over a few block/warp/stage
configs. Every contender is first checked on fresh random inputs against a
float32 reference computed one batch at a time (relative Frobenius error of
O below 1e-2; ours also returns the log-sum-exp, checked below 1e-3); a
wrong result is reported, not timed. Then each is timed: median device time
of CUDA-graph replays after warm-up, L2 flushed before each; ours (the
fastest config) and the contenders again in `--rounds` rounds, each once a
round in turn, the table showing each one's median round. TFLOP/s count
4 B H S^2 D, halved for causal. Prints one table with the ratio of ours to
cuDNN.

    python benchmarks/flash_attn.py [--dims 64,128] [--causal both|yes|no] [--no-autotune]
                                    [--seq 4096] [--batch 8] [--heads 32] [--kv-heads 32,8]
                                    [--rounds 5]

Without a GPU it compiles every kernel the run would use (every config of
every case) into the kernel cache and exits: `scripts/gpu_check.sh
prepare-attn` here, `scripts/gpu_check.sh run-attn` on the GPU machine.
"""

import math
import os
import sys
import time

import torch
import torch.nn.functional as F

import tilelang_mlir as tl
from tilelang_mlir.kernels.attention import flash_attn as ours

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402 (benchmarks/common.py)
# (Triton is on the GPU machine only: None elsewhere; SDPBackend needs a recent torch)
from common import SDPBackend, sdpa_kernel, tlang, triton  # noqa: E402

# The library's Hopper schedule first (its PASS_CONFIGS on its first
# config), then its configs under the compiler's defaults and variants
# under pass configs that are off by default, to show what each does:
# warpgroup turns at the gemms (tl.enable_pingpong; with the rotation, one
# turn spans an iteration's two gemms), the rotated consumer loop, S = Q K^T
# of the next tile in flight with O += P V during the softmax
# (tl.enable_rotate), and the rotated loop with a zero nanosleep before its
# wait for O += P V, so that ptxas keeps the softmax before that wait
# (tl.rotate_sched_barrier). The rotated loop holds one K and one V slot of
# the ring (they have barriers of their own), so 2 stages suffice and wider
# KV tiles fit.
VARIANTS = {"pingpong": "tl.enable_pingpong", "rotate": "tl.enable_rotate",
            "sched": "tl.rotate_sched_barrier", "narrow": "tl.narrow_index",
            "looptid": "tl.enable_loop_thread_index"}
# Variants that set a pass config to a value: name -> (key, value) (clusters
# of 1 or 4 instead of 2 and 32-bit index arithmetic moved the Hopper
# schedule by no more than run-to-run noise, BENCHMARKS.md; prod40: the TMA
# producer at 40 registers instead of the default 24).
VALUED = {"nocluster": ("tl.cluster_size", 1), "cluster4": ("tl.cluster_size", 4),
          "prod40": ("tl.producer_registers", 40),
          # Every 8th exp2 of the softmax on the FMA pipe (tile-emulate-exp2).
          "ex8": ("tl.exp2_emulation", 8),
          # One block a tile as launched, not a persistent walk of the tiles.
          "nopersist": ("tl.persistent_sms", 0)}
assert ours.PASS_CONFIGS == {VARIANTS["rotate"]: True, VARIANTS["pingpong"]: True}
_W160 = dict(block_M=128, block_N=160, num_stages=2, threads=256)
_W176 = dict(block_M=128, block_N=176, num_stages=2, threads=256)
CONFIGS = [dict(ours.CONFIGS[0], rotate=True, pingpong=True)] + ours.CONFIGS + [
    dict(ours.CONFIGS[0], pingpong=True),
    dict(ours.CONFIGS[0], rotate=True),
    dict(ours.CONFIGS[0], rotate=True, sched=True),
    dict(ours.CONFIGS[2], rotate=True, sched=True),
    dict(_W160, rotate=True, sched=True),
    dict(ours.CONFIGS[0], rotate=True, pingpong=True, sched=True),
    dict(ours.CONFIGS[2], rotate=True, pingpong=True, sched=True),
    dict(_W160, rotate=True, pingpong=True, sched=True),
    dict(_W176, rotate=True, pingpong=True),
    # Wider KV tiles and three consumer warpgroups for D=64, where the
    # softmax's share of a step is twice D=128's (K/V tiles are half the
    # bytes, the O accumulator half the registers).
    dict(block_M=128, block_N=192, num_stages=2, threads=256, rotate=True, pingpong=True),
    dict(block_M=128, block_N=256, num_stages=2, threads=256, rotate=True, pingpong=True),
    dict(block_M=192, block_N=128, num_stages=2, threads=384, rotate=True),
    dict(block_M=192, block_N=128, num_stages=2, threads=384, pingpong=True),
    dict(block_M=192, block_N=128, num_stages=2, threads=384, rotate=True, pingpong=True),
    # O stored from the registers (no barriers across the warpgroups in the
    # epilogue; stage_o=False) on the library schedule and D=64's best.
    dict(ours.CONFIGS[0], rotate=True, pingpong=True, stage_o=False),
    dict(block_M=192, block_N=128, num_stages=2, threads=384, rotate=True, pingpong=True,
         stage_o=False),
    # The loop's thread-dependent addresses recomputed in the loop (not
    # hoisted by LLVM) on the library's schedule and D=64's best.
    dict(ours.CONFIGS[0], rotate=True, pingpong=True, looptid=True),
    dict(block_M=192, block_N=128, num_stages=2, threads=384, looptid=True),
    # The producer's register budget: the library schedule and D=64's best.
    dict(ours.CONFIGS[0], rotate=True, pingpong=True, prod40=True),
    dict(block_M=192, block_N=128, num_stages=2, threads=384, pingpong=True, prod40=True),
    # Every 8th exp2 on the FMA pipe (tile-emulate-exp2; every 2nd, 3rd and
    # 4th, on this and on 192x128 t384, were slower still: BENCHMARKS.md
    # 2026-12-03).
    dict(ours.CONFIGS[0], rotate=True, pingpong=True, ex8=True),
    # Not persistent: the library schedule and D=64's best.
    dict(ours.CONFIGS[0], rotate=True, pingpong=True, nopersist=True),
    dict(block_M=192, block_N=128, num_stages=2, threads=384, rotate=True, nopersist=True),
    # Causal blocks in launch order instead of the longest first.
    dict(ours.CONFIGS[0], heavy_first=False),
    dict(ours.CONFIGS[0], rotate=True, pingpong=True, heavy_first=False),
]


def describe(config):
    text = ours.describe(config)
    return " ".join([text] + [v for v in (*VARIANTS, *VALUED) if config.get(v, False)])


def library_defaults(case, card):
    """The library's default for a case as benchmark configs: the card's
    (`card`, a device name), or without one (a prepare on a machine with no
    GPU) every card's and the generic one, so that a pack serves any card."""
    cards = [card] if card else [None] + list(ours.CARD_DEFAULTS)
    out = []
    for c in cards:
        config, passes = ours.default_config(case.dim, case.causal, c)
        flags = {v: True for v, key in VARIANTS.items() if passes.get(key)}
        assert all(key in VARIANTS.values() for key in passes), passes
        config = dict(config, **flags)
        if config not in out:
            out.append(config)
    return out


def pass_configs(config):
    out = {key: True for v, key in VARIANTS.items() if config.get(v, False)}
    out.update(VALUED[v] for v in VALUED if config.get(v, False))
    return out

WARMUP, REP = 10, 50
DEVICE = "cuda"
TOL, LSE_TOL = 1e-2, 1e-3
SIDECAR = "flash_attn_benchmark.json"  # in the kernel cache: commit and compile failures
SDPA_BACKENDS = ["CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION"]


class Case(common.AttentionCase):
    def program(self, config):
        tile = {k: v for k, v in config.items() if k not in VARIANTS and k not in VALUED}
        return ours.flash_attn(self.batch, self.heads, self.seq, self.dim, self.causal,
                               groups=self.groups, dtype=self.dtype, **tile)


def cases(args):
    return common.attention_cases(args, Case)


# ---------------------------------------------------------------------------
# Triton: FlashAttention-2 forward (one program per BLOCK_M query rows of one
# (batch, head); K/V tiles streamed; running max and sum in exp2 units).
# ---------------------------------------------------------------------------

if triton is not None:
    @triton.jit
    def _fa_tile_loop(acc, l_i, m_i, q, k_base, v_base, offs_m, offs_n, offs_d, lo, hi,
                      qk_scale, HEAD_DIM: tlang.constexpr, BLOCK_N: tlang.constexpr,
                      MASKED: tlang.constexpr):
        for start_n in range(lo, hi, BLOCK_N):
            start_n = tlang.multiple_of(start_n, BLOCK_N)
            cols = start_n + offs_n
            k = tlang.load(k_base + cols[None, :] * HEAD_DIM + offs_d[:, None])
            s = tlang.dot(q, k) * qk_scale
            if MASKED:
                s = tlang.where(offs_m[:, None] >= cols[None, :], s, float("-inf"))
            m_new = tlang.maximum(m_i, tlang.max(s, 1))
            p = tlang.math.exp2(s - m_new[:, None])
            alpha = tlang.math.exp2(m_i - m_new)
            l_i = l_i * alpha + tlang.sum(p, 1)
            acc = acc * alpha[:, None]
            v = tlang.load(v_base + cols[:, None] * HEAD_DIM + offs_d[None, :])
            acc = tlang.dot(p.to(v.dtype), v, acc)
            m_i = m_new
        return acc, l_i, m_i

    def _triton_configs():
        shapes = [(128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2), (128, 128, 8, 3),
                  (64, 64, 4, 4), (128, 32, 4, 4)]
        return [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s)
                for m, n, w, s in shapes]

    @triton.autotune(configs=_triton_configs(), key=["SEQ", "HEAD_DIM", "CAUSAL"])
    @triton.jit
    def _fa_fwd(Q, K, V, O, qk_scale, SEQ, GROUPS, HEAD_DIM: tlang.constexpr,
                CAUSAL: tlang.constexpr, BLOCK_M: tlang.constexpr, BLOCK_N: tlang.constexpr):
        start_m = tlang.program_id(0)
        head = tlang.program_id(1).to(tlang.int64)  # batch * heads + head
        base = head * SEQ * HEAD_DIM
        kv_base = (head // GROUPS) * SEQ * HEAD_DIM  # its K/V head (GQA)
        offs_m = start_m * BLOCK_M + tlang.arange(0, BLOCK_M)
        offs_n = tlang.arange(0, BLOCK_N)
        offs_d = tlang.arange(0, HEAD_DIM)
        q = tlang.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
        m_i = tlang.full([BLOCK_M], float("-inf"), dtype=tlang.float32)
        l_i = tlang.zeros([BLOCK_M], dtype=tlang.float32)
        acc = tlang.zeros([BLOCK_M, HEAD_DIM], dtype=tlang.float32)
        if CAUSAL:
            # Tiles left of the diagonal block need no mask; BLOCK_N divides BLOCK_M.
            diag = start_m * BLOCK_M
            acc, l_i, m_i = _fa_tile_loop(acc, l_i, m_i, q, K + kv_base, V + kv_base, offs_m,
                                          offs_n, offs_d, 0, diag, qk_scale, HEAD_DIM, BLOCK_N,
                                          False)
            acc, l_i, m_i = _fa_tile_loop(acc, l_i, m_i, q, K + kv_base, V + kv_base, offs_m,
                                          offs_n, offs_d, diag, diag + BLOCK_M, qk_scale,
                                          HEAD_DIM, BLOCK_N, True)
        else:
            acc, l_i, m_i = _fa_tile_loop(acc, l_i, m_i, q, K + kv_base, V + kv_base, offs_m,
                                          offs_n, offs_d, 0, SEQ, qk_scale, HEAD_DIM, BLOCK_N,
                                          False)
        acc = acc / l_i[:, None]
        tlang.store(O + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
                    acc.to(O.dtype.element_ty))

    def triton_attention(q, k, v, causal):
        """q contiguous (B, H, S, D), k and v (B, H / groups, S, D); S a
        multiple of 128."""
        B, H, S, D = q.shape
        groups = H // k.shape[1]
        o = torch.empty_like(q)
        qk_scale = math.log2(math.e) / math.sqrt(D)

        def grid(meta):
            return (triton.cdiv(S, meta["BLOCK_M"]), B * H)

        _fa_fwd[grid](q, k, v, o, qk_scale, S, groups, HEAD_DIM=D, CAUSAL=causal)
        return o

    def triton_best():
        return common.triton_config(_fa_fwd, "BLOCK_M", "BLOCK_N")


# ---------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------


def reference(q, k, v, causal):
    """(O, LSE) in float32, one batch element at a time (the scores of all
    of them would take 17 GB); K/V heads repeated for GQA."""
    o = torch.empty(q.shape, device=q.device, dtype=torch.float32)
    lse = torch.empty(q.shape[:3], device=q.device, dtype=torch.float32)
    S = q.shape[2]
    groups = q.shape[1] // k.shape[1]
    mask = torch.ones(S, S, device=q.device, dtype=torch.bool).triu(1) if causal else None
    for b in range(q.shape[0]):
        kb = k[b].float().repeat_interleave(groups, dim=0)
        s = q[b].float() @ kb.transpose(-1, -2) / math.sqrt(q.shape[-1])
        del kb
        if causal:
            s.masked_fill_(mask, float("-inf"))
        lse[b] = torch.logsumexp(s, dim=-1)
        o[b] = torch.softmax(s, dim=-1) @ v[b].float().repeat_interleave(groups, dim=0)
        del s
    return o, lse


def measure(fn, check):
    return common.measure(fn, check, WARMUP, REP)


def check_o(o_ref):
    return common.within(o_ref, TOL)


def check_ours(o_ref, lse_ref):
    def check(result):
        o, lse = result
        err, lse_err = common.rel_error(o, o_ref), common.rel_error(lse, lse_ref)
        if not (err < TOL and lse_err < LSE_TOL):
            raise AssertionError(max(err, lse_err))
        return err
    return check


def sdpa(backend, q, k, v, causal):
    """SDPA on one backend; K/V with fewer heads than Q through its
    enable_gqa (a backend without it fails the check)."""
    gqa = {"enable_gqa": True} if k.shape[1] != q.shape[1] else {}

    def fn():
        with sdpa_kernel([getattr(SDPBackend, backend)]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, **gqa)
    return fn


def run_case(case, kernels, not_compiled, generator, rounds=1):
    """Checks and times every contender on one set of fresh random inputs;
    ours: every compiled config, the fastest kept. Returns the table row."""
    dt = getattr(torch, case.dtype)
    shape = (case.batch, case.heads, case.seq, case.dim)
    q, k, v = (torch.randn(s, device=DEVICE, generator=generator).to(dt)
               for s in (shape, case.kv_shape, case.kv_shape))
    o_ref, lse_ref = reference(q, k, v, case.causal)
    row = common.fastest({"case": case}, kernels, lambda kernel: kernel(q, k, v),
                         check_ours(o_ref, lse_ref), case.flop, describe,
                         not_compiled=f"not compiled: {not_compiled}", timer=measure,
                         keep_fn=True)
    fns = {}
    for backend in SDPA_BACKENDS:
        if sdpa_kernel is None:
            row[backend] = ("n/a", None, "torch.nn.attention is missing")
            continue
        fns[backend] = sdpa(backend, q, k, v, case.causal)
        row[backend] = measure(fns[backend], check_o(o_ref))
    if triton is None:
        row["triton"] = ("n/a", None, "triton is not installed")
    else:
        fns["triton"] = lambda: triton_attention(q, k, v, case.causal)
        row["triton"] = measure(fns["triton"], check_o(o_ref))
        row["triton_config"] = triton_best() if row["triton"][0] == "ok" else ""
    common.retime(row, fns, rounds, lambda fn: common.device_ms(fn, WARMUP, REP))
    errs = ", ".join(f"{name} {row[key][2]:.1e}" for name, key in
                     [("ours", "ours")] + [(b.split("_")[0].lower(), b) for b in SDPA_BACKENDS] +
                     [("triton", "triton")] if isinstance(row[key][2], float))
    print(f"  errors: {errs}")
    del q, k, v, o_ref, lse_ref
    torch.cuda.empty_cache()
    return row


def print_table(rows):
    print()
    print("| dtype | H / KV | D | causal | ours | cuDNN | FA2 (torch) | mem-efficient | Triton "
          "| ours / cuDNN | our config | Triton config |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    notes = []
    for row in rows:
        case = row["case"]
        ratio = common.speedup(row["ours"], row["CUDNN_ATTENTION"])
        cells = [common.tflops(row[key], case.flop) for key in
                 ("ours", "CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "triton")]
        print(f"| {case.dtype} | {case.heads} / {case.kv_heads} | {case.dim} "
              f"| {'yes' if case.causal else 'no'} "
              f"| {' | '.join(cells)} | {ratio} | {common.config_cell(row)} "
              f"| {row.get('triton_config', '')} |")
        notes += common.failure_notes(row, SDPA_BACKENDS + ["triton"])
    common.print_notes(notes, "(TFLOP/s; ratio = ours / cuDNN in TFLOP/s)")


# ---------------------------------------------------------------------------
# Compiling (here, or from the kernel cache on a machine without the compiler)
# ---------------------------------------------------------------------------

def _compile_task(task):
    """Compiles one (case, config, target); returns (kernel or None, reason
    it failed, spilled bytes)."""
    case, config, target = task
    return common.try_compile(lambda: tl.compile(case.program(config), out_idx=[3, 4],
                                                 target=target,
                                                 pass_configs=pass_configs(config)))


def _compile_task_in_worker(task):
    """_compile_task without the kernel (it stays in the worker)."""
    return (None, *_compile_task(task)[1:])


def main(argv=None):
    parser = common.attention_arguments(common.arguments(
        __doc__, "ours with the library's default for the card only (without a GPU: "
        "every card's)", jobs=True))
    args = parser.parse_args(argv)

    gpu, target = common.init_cuda()
    todo = cases(args)
    card = torch.cuda.get_device_name() if gpu else None
    prepared = common.read_sidecar(SIDECAR)

    # 1. Compile every kernel the run uses (from the cache where there is no
    #    compiler; here, in parallel processes).
    t0 = time.perf_counter()
    watch = common.CompilerWatch()
    tasks = [(case, config, target) for case in todo
             for config in (library_defaults(case, card) if args.no_autotune else CONFIGS)]
    jobs = common.compile_jobs(gpu, args.jobs)
    results = common.compile_parallel(_compile_task if jobs == 1 else _compile_task_in_worker,
                                      tasks, jobs)
    compiled, failures, first_failure = common.collect_compiles(
        tasks, results, describe, prepared.get("failures"), time.perf_counter() - t0)
    watch.check()
    if not gpu:
        common.finish_without_gpu(failures, SIDECAR)
        return

    # 2. Measure.
    generator = common.start_measuring(prepared, f"median of {REP} CUDA-graph replays after "
                                       f"{WARMUP} warm-up, L2 flushed before each")
    print_table(common.run_cases(todo, lambda case: run_case(
        case, compiled[case.label], first_failure.get(case.label), generator, args.rounds)))


if __name__ == "__main__":
    common.run(main)
