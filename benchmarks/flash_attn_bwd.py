"""FlashAttention backward on Hopper: ours next to the backward of torch's
scaled_dot_product_attention with each backend that runs.

Cases: B=8, H=32, S=4096, D in {64, 128}, causal and not, float16,
(batch, heads, seq, dim) tensors; with --kv-heads, grouped-query
attention (K and V with fewer heads; torch's SDPA through enable_gqa).

Contenders: ours (kernels/attention/flash_attn_bwd.py: preprocess, main
kernel, postprocess; every config of its CONFIGS tried and the fastest
kept), and torch.autograd.grad through F.scaled_dot_product_attention with
each backend (CUDNN_ATTENTION, FLASH_ATTENTION, EFFICIENT_ATTENTION), its
forward run once outside the timing. All take the same random Q, K, V, dO;
ours takes O and the LSE of a float32 forward. Every contender is first
checked against float32 autograd (one batch element at a time): relative
Frobenius error of dQ, dK and dV each below 1e-2; a wrong result is
reported, not timed. Then each is timed: median device time of 20 calls
after warm-up, L2 flushed before each (no CUDA graph: a call takes
milliseconds); ours (the fastest config) and the contenders again in
`--rounds` rounds, each once a round in turn, the table showing each one's
median round. TFLOP/s count 2.5x the forward's 4 B H S^2 D (two gemms
forward, five backward), halved for causal.

    python benchmarks/flash_attn_bwd.py [--dims 128,64] [--causal both|yes|no] [--no-autotune]
                                        [--seq 4096] [--batch 8] [--heads 32] [--kv-heads 32,8]
                                        [--rounds 5]

Without a GPU it compiles every kernel the run would use into the kernel
cache and exits: `scripts/gpu_check.sh prepare-attn-bwd` here,
`scripts/gpu_check.sh run-attn-bwd` on the GPU machine.
"""

import os
import sys
import time

import torch
import torch.nn.functional as F

from tilelang_mlir.kernels.attention import flash_attn_bwd as ours

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402 (benchmarks/common.py)
from common import SDPBackend, sdpa_kernel  # noqa: E402 (None in an older torch)


WARMUP, REP = 3, 20
TOL = 1e-2
SDPA_BACKENDS = ["CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION"]


class Case(common.AttentionCase):
    @property
    def flop(self):  # 2.5x the forward's
        return 2.5 * super().flop

    def compile(self, config, target):
        return ours.FlashAttnBwd(self.batch, self.heads, self.seq, self.dim, self.causal,
                                 groups=self.groups, dtype=self.dtype, target=target, **config)


def cases(args):
    return common.attention_cases(args, Case)


def check_grads(refs):
    """check(grads) -> the largest relative error of dQ, dK, dV; raises
    AssertionError with it when it is not below TOL."""
    def check(grads):
        err = max(((g.float() - r).norm() / r.norm()).item() for g, r in zip(grads, refs))
        if not err < TOL:  # (NaN fails too)
            raise AssertionError(err)
        return err
    return check


def measure(fn, check):
    """common.measure over plain calls (a backward takes milliseconds, and
    autograd does not go into a CUDA graph)."""
    return common.measure(fn, check, WARMUP, REP, graph=False)


def sdpa_backward(backend, q, k, v, do, causal):
    """fn() -> (dq, dk, dv) of the backend's backward; its forward runs here
    once (or raises when the backend does not take the case)."""
    leaves = [x.detach().requires_grad_() for x in (q, k, v)]
    gqa = {"enable_gqa": True} if k.shape[1] != q.shape[1] else {}
    with sdpa_kernel([getattr(SDPBackend, backend)]):
        out = F.scaled_dot_product_attention(*leaves, is_causal=causal, **gqa)

    def fn():
        return torch.autograd.grad(out, leaves, do, retain_graph=True)
    return fn


def run_case(case, kernels, generator, rounds=1):
    dt = getattr(torch, case.dtype)
    shape = (case.batch, case.heads, case.seq, case.dim)
    q, k, v, do = (torch.randn(s, device="cuda", generator=generator).to(dt)
                   for s in (shape, case.kv_shape, case.kv_shape, shape))
    o, lse = ours.forward(q, k, v, case.causal)
    refs = ours.reference(q, k, v, do, case.causal)
    check = check_grads(refs)
    row = common.fastest({"case": case}, kernels, lambda bwd: bwd(q, k, v, o, do, lse), check,
                         case.flop, ours.describe, timer=measure, keep_fn=True)
    fns = {}
    for backend in SDPA_BACKENDS:
        if sdpa_kernel is None:
            row[backend] = ("n/a", None, "torch.nn.attention is missing")
            continue
        try:
            fn = sdpa_backward(backend, q, k, v, do, case.causal)
        except Exception as e:  # noqa: BLE001
            row[backend] = ("failed", None, common.reason(e))
            continue
        row[backend] = measure(fn, check)
        fns[backend] = fn
    common.retime(row, fns, rounds, lambda fn: common.device_ms(fn, WARMUP, REP, graph=False))
    del fns
    errs = ", ".join(f"{key.split('_')[0].lower()} {row[key][2]:.1e}"
                     for key in ["ours"] + SDPA_BACKENDS if isinstance(row[key][2], float))
    print(f"  errors (largest of dQ, dK, dV): {errs}")
    del q, k, v, do, o, lse, refs
    torch.cuda.empty_cache()
    return row


def print_table(rows):
    print()
    print("| dtype | H / KV | D | causal | ours | cuDNN | FA2 (torch) | mem-efficient "
          "| ours / best torch | our config |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    notes = []
    for row in rows:
        case = row["case"]
        cells = [common.tflops(row[key], case.flop) for key in ["ours"] + SDPA_BACKENDS]
        ratio = common.speedup(row["ours"], *(row[b] for b in SDPA_BACKENDS))
        print(f"| {case.dtype} | {case.heads} / {case.kv_heads} | {case.dim} "
              f"| {'yes' if case.causal else 'no'} "
              f"| {' | '.join(cells)} | {ratio} | {common.config_cell(row)} |")
        notes += common.failure_notes(row, SDPA_BACKENDS)
    common.print_notes(notes, "(TFLOP/s counted as 2.5x the forward's FLOPs; ratio = ours / "
                       "fastest torch backend)")


def main(argv=None):
    parser = common.attention_arguments(common.arguments(
        __doc__, "ours with the library's default tiles only (HOPPER_BLOCKS on Hopper)"))
    args = parser.parse_args(argv)

    gpu, target = common.init_cuda()
    todo = cases(args)

    # 1. Compile (here, or load from the kernel cache where there is no compiler).
    t0 = time.perf_counter()
    watch = common.CompilerWatch()
    hopper = not gpu or torch.cuda.get_device_capability()[0] == 9
    tasks = [(case, config) for case in todo
             for config in ([ours.default_blocks(case.dim, case.causal, hopper)]
                            if args.no_autotune else ours.CONFIGS)]
    results = [common.try_compile(lambda: case.compile(config, target), lambda bwd: bwd.main)
               for case, config in tasks]
    compiled, failures, _ = common.collect_compiles(tasks, results, ours.describe,
                                                    seconds=time.perf_counter() - t0)
    watch.check()
    if not gpu:
        common.finish_without_gpu(failures)
        return

    # 2. Measure.
    generator = common.start_measuring(timing=f"median of {REP} calls after {WARMUP} "
                                              "warm-up, L2 flushed before each")
    print_table(common.run_cases(todo, lambda case: run_case(case, compiled[case.label],
                                                             generator, args.rounds)))


if __name__ == "__main__":
    common.run(main)
