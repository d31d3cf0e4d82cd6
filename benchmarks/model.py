"""A transformers Llama on our kernels (issue 22): prefill, decoding with a
paged KV cache and a training step, next to PyTorch eager and torch.compile.

The model: LlamaForCausalLM from a config with random weights (default 8
layers, hidden 4096, 32 heads, 8 KV heads, intermediate 14336, vocab
32000), float16 on the GPU. Three contenders run the same weights:

- ours: `tilelang_mlir.models.use_tilelang` (attention on ops.flash_attn
  for prefill and ops.flash_decode over a PagedCache for decoding, RMSNorm
  on ops.rms_norm, the gated MLP on ops.silu_mul; the projections stay
  torch's cuBLAS matmuls); on a GPU the decode step is replayed from a
  CUDA graph (`models.CUDAGraphDecoder`);
- eager: the same model with attn_implementation "sdpa" (PyTorch picks the
  SDPA backend), transformers' DynamicCache for decoding;
- compile: the eager model under torch.compile (Inductor, default mode)
  for prefill and the training step; decoding with a StaticCache and the
  decode step compiled with mode="reduce-overhead" (CUDA graphs).

Measured, for a batch of `--batch` prompts of `--seq` tokens:

- prefill: one forward over the prompts that fills a fresh cache (logits
  of the last position only, as generation does);
- decode: after an untimed prefill, `--decode-steps` greedy steps of one
  token per sequence (argmax fed back on the device); the time per step;
- train: model(ids, labels=ids).loss.backward() (forward + backward, no
  optimizer step), gradients freed before each.

Correctness first, against eager: full prefill logits (relative Frobenius
error below 1e-2), the greedy tokens of the decode (identical, or the first
step where they diverge: with random weights and 32000 logits, near-ties
make some divergence after many steps expected and not an error), and the
training step's gradients of layer 0's q/k/v/up projections and input
RMSNorm and the last layer's down projection (each below 3e-2). A contender
that fails the check is reported and not timed.

Timing: wall-clock of each call between device synchronizations (so the
host's cost of issuing the kernels is in: it is the latency a caller sees),
median of `--rep` calls after a warm-up call (the compiles happen there).

    python benchmarks/model.py [--layers 8] [--hidden 4096] [--heads 32] [--kv-heads 8]
                               [--intermediate 14336] [--vocab 32000] [--batch 8] [--seq 2048]
                               [--decode-steps 128] [--page-size 128] [--rep 5] [--no-compile]
    python benchmarks/model.py --device cpu --tiny      # a smoke run on the CPU target

`--tiny` is a 2-layer model (hidden 128, 4 heads of 32, 2 KV heads,
vocabulary 256) on 2 x 32 tokens, 8 decode steps, pages of 16: it runs
every path end to end (the CPU's times mean nothing).
"""

import copy
import os
import platform
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402 (benchmarks/common.py)

PREFILL_TOL, GRAD_TOL = 1e-2, 3e-2
GRADS = ("model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
         "model.layers.0.self_attn.v_proj.weight", "model.layers.0.mlp.up_proj.weight",
         "model.layers.0.input_layernorm.weight")
TINY = dict(layers=2, hidden=128, heads=4, kv_heads=2, intermediate=256, vocab=256, batch=2,
            seq=32, decode_steps=8, page_size=16, rep=2)
CONTENDERS = ("ours", "eager", "compile")


def arguments(argv=None):
    parser = common.arguments(__doc__)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--intermediate", type=int, default=14336)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=2048, help="prompt tokens per sequence")
    parser.add_argument("--decode-steps", type=int, default=128)
    parser.add_argument("--page-size", type=int, default=128, help="PagedCache page (tokens)")
    parser.add_argument("--rep", type=int, default=5, help="timed calls (median)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--tiny", action="store_true", help="the smoke sizes (see above)")
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    args = parser.parse_args(argv)
    if args.tiny:
        for key, value in TINY.items():
            setattr(args, key, value)
    return args


# ---------------------------------------------------------------------------
# The model and the contenders
# ---------------------------------------------------------------------------


def build_model(args):
    import transformers

    cfg = transformers.LlamaConfig(
        vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
        num_hidden_layers=args.layers, num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads, max_position_embeddings=args.seq + args.decode_steps)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))  # new weights every run
    with torch.device(args.device):
        model = transformers.LlamaForCausalLM(cfg)
    return model.to(torch.float16).eval()


class Contender:
    """A model and how it runs: forward(ids, cache, last) for the prefill
    (logits of the last position only when `last`), step(tokens, cache) for
    one decode step, new_cache(), train(ids) for one forward + backward.
    `prefill_model` fills the cache before a decode (untimed)."""

    def __init__(self, name, model, new_cache, forward=None, step=None, train_model=None,
                 prefill_model=None):
        self.name, self.model, self.new_cache = name, model, new_cache
        self._forward = model if forward is None else forward
        self._step = step
        self._train = model if train_model is None else train_model
        self._prefill = self._forward if prefill_model is None else prefill_model

    def forward(self, ids, cache, last=True, model=None):
        model = self._forward if model is None else model
        return model(ids, past_key_values=cache, use_cache=cache is not None,
                     logits_to_keep=1 if last else 0).logits

    def prefill(self, ids, cache):
        return self.forward(ids, cache, model=self._prefill)

    def step(self, tokens, cache):
        if self._step is not None:
            return self._step(tokens, cache)
        return self.model(tokens, past_key_values=cache, use_cache=True).logits

    def train(self, ids):
        self.model.zero_grad(set_to_none=True)
        loss = self._train(ids, labels=ids, use_cache=False).loss
        loss.backward()
        return loss


def contenders(eager_model, args):
    import transformers
    from tilelang_mlir.models import CUDAGraphDecoder, PagedCache, use_tilelang

    max_len = args.seq + args.decode_steps
    ours = use_tilelang(copy.deepcopy(eager_model))
    # One PagedCache, reset before each use: on a GPU its decode steps are
    # replays of one CUDA graph (CUDAGraphDecoder), as the compile
    # contender's are.
    paged = PagedCache(ours.config, args.batch, max_len, page_size=args.page_size)

    def paged_cache():
        paged.reset()
        return paged

    graphed = CUDAGraphDecoder(ours, paged) if args.device == "cuda" else None
    out = {
        "ours": Contender("ours", ours, paged_cache,
                          step=None if graphed is None else lambda tokens, cache: graphed(tokens)),
        "eager": Contender("eager", eager_model,
                           lambda: transformers.DynamicCache(config=eager_model.config)),
    }
    if not args.no_compile:
        cfg = eager_model.config
        # One StaticCache, reset before each use and allocated outside any
        # compiled region (so its tensors are marked as static addresses,
        # which the CUDA graphs of the decode step need).
        static = transformers.StaticCache(config=cfg, max_cache_len=max_len)
        static.early_initialization(args.batch, cfg.num_key_value_heads,
                                    getattr(cfg, "head_dim", None)
                                    or cfg.hidden_size // cfg.num_attention_heads,
                                    torch.float16, torch.device(args.device))

        def static_cache():
            static.reset()
            return static

        def step(tokens, cache):
            return eager_model(tokens, past_key_values=cache, use_cache=True).logits

        compiled = torch.compile(eager_model)
        mode = "reduce-overhead" if args.device == "cuda" else "default"
        out["compile"] = Contender("compile", eager_model, static_cache, forward=compiled,
                                   step=torch.compile(step, mode=mode), train_model=compiled,
                                   prefill_model=eager_model)
    return out


# ---------------------------------------------------------------------------
# Running, checking, timing
# ---------------------------------------------------------------------------


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def wall_ms(fn, device, rep):
    """Median wall-clock milliseconds of fn() between synchronizations,
    after one untimed call."""
    fn()
    times = []
    for _ in range(rep):
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def decode(c, ids, steps, device):
    """Greedy decoding: an untimed prefill into a fresh cache (the compile
    contender's is eager: transformers does not compile a prefill into a
    StaticCache), then `steps`
    steps of one token per sequence. Returns (tokens (batch, steps + 1),
    milliseconds per step)."""
    with torch.no_grad():
        cache = c.new_cache()
        token = c.prefill(ids, cache)[:, -1].argmax(-1, keepdim=True)
        tokens = [token]
        sync(device)
        t0 = time.perf_counter()
        for _ in range(steps):
            token = c.step(token, cache)[:, -1].argmax(-1, keepdim=True)
            tokens.append(token)
        sync(device)
        ms = (time.perf_counter() - t0) * 1e3 / steps
    return torch.cat(tokens, 1), ms


def divergence(tokens, ref):
    """'identical', or the first step (and sequence) where they differ."""
    diff = (tokens != ref).any(0).nonzero()
    if diff.numel() == 0:
        return "identical"
    step = int(diff[0])
    seq = int((tokens[:, step] != ref[:, step]).nonzero()[0])
    return f"first divergence at token {step} of {ref.shape[1]} (sequence {seq})"


def grads(model):
    params = dict(model.named_parameters())
    last = f"model.layers.{len(model.model.layers) - 1}.mlp.down_proj.weight"
    return {n: params[n].grad.detach().clone() for n in GRADS + (last,)}


def run_contender(c, ref, ids, args):
    """Checks c against eager's results `ref` (None for eager itself: it
    makes them), then times it. Returns {measure: result triple}."""
    row, dev = {}, args.device
    # Prefill.
    try:
        with torch.no_grad():
            logits = c.forward(ids, c.new_cache(), last=False)
        if ref is None:
            ref = {"logits": logits}
            err = "reference"
        else:
            err = common.rel_error(logits, ref["logits"].float())
        del logits
        if not (isinstance(err, str) or err < PREFILL_TOL):
            row["prefill"] = ("wrong", None, err)
        else:
            with torch.no_grad():
                ms = wall_ms(lambda: c.forward(ids, c.new_cache()), dev, args.rep)
            row["prefill"] = ("ok", ms, err)
    except Exception as e:  # noqa: BLE001 (reported; the run goes on)
        row["prefill"] = ("failed", None, common.reason(e))
    print(f"  {c.name:8} prefill: {describe(row['prefill'])}")
    # Decode.
    try:
        tokens, _ = decode(c, ids, args.decode_steps, dev)
        same = "reference" if "tokens" not in ref else divergence(tokens, ref["tokens"])
        ref.setdefault("tokens", tokens)
        ms = statistics.median(decode(c, ids, args.decode_steps, dev)[1] for _ in range(args.rep))
        row["decode"] = ("ok", ms, same)
    except Exception as e:  # noqa: BLE001
        row["decode"] = ("failed", None, common.reason(e))
    print(f"  {c.name:8} decode : {describe(row['decode'])}")
    # Training step.
    try:
        c.train(ids)
        got = grads(c.model)
        if "grads" not in ref:
            ref["grads"], worst = got, ("reference", "")
        else:
            worst = max((common.rel_error(got[n], ref["grads"][n].float()), n) for n in got)
        del got
        if not (isinstance(worst[0], str) or worst[0] < GRAD_TOL):
            row["train"] = ("wrong", None, worst[0])
            print(f"    worst gradient: {worst[1]}")
        else:
            row["train"] = ("ok", wall_ms(lambda: c.train(ids), dev, args.rep), worst[0])
    except Exception as e:  # noqa: BLE001
        row["train"] = ("failed", None, common.reason(e))
    finally:
        c.model.zero_grad(set_to_none=True)
    print(f"  {c.name:8} train  : {describe(row['train'])}")
    return row, ref


def describe(result):
    status, ms, detail = result
    if status == "ok":
        what = detail if isinstance(detail, str) else f"error {detail:.1e}"
        return f"{ms:9.3f} ms ({what})"
    if status == "wrong":
        return f"wrong (error {detail:.1e})"
    return f"{status}: {detail}"


def print_table(rows, args):
    tokens = args.batch * args.seq
    measures = [("prefill", f"prefill {args.batch}x{args.seq} (ms)"),
                ("decode", f"decode, per step of {args.batch} tokens (ms)"),
                ("train", f"train step fwd+bwd {args.batch}x{args.seq} (ms)")]
    names = [n for n in CONTENDERS if n in rows]
    heads = {"ours": "ours", "eager": "eager (SDPA)", "compile": "torch.compile"}
    print()
    print("| | " + " | ".join(heads[n] for n in names) + " | eager / ours"
          + (" | compile / ours |" if "compile" in rows else " |"))
    print("|---" * (len(names) + 2 + ("compile" in rows)) + "|")
    notes = []
    for key, label in measures:
        cells = [common.cell(rows[n][key], lambda ms: f"{ms:.3f}") for n in names]
        ratios = [common.speedup(rows["ours"][key], rows["eager"][key])]
        if "compile" in rows:
            ratios.append(common.speedup(rows["ours"][key], rows["compile"][key]))
        print(f"| {label} | " + " | ".join(cells + ratios) + " |")
        notes += [f"{n} {key} failed: {rows[n][key][2]}" for n in names
                  if rows[n][key][0] == "failed"]
    decode_notes = [f"{n}: {rows[n]['decode'][2]}" for n in names
                    if n != "eager" and rows[n]["decode"][0] == "ok"]
    footer = (f"(ratio > 1: ours faster; {tokens} prompt tokens, {args.decode_steps} decode "
              f"steps; greedy tokens against eager: {'; '.join(decode_notes) or 'n/a'})")
    common.print_notes(notes, footer)


def header(args):
    import transformers

    if args.device == "cuda":
        common.print_environment(timing=f"wall-clock between synchronizations, median of "
                                        f"{args.rep} after a warm-up call")
    else:
        print(f"date    : {time.strftime('%Y-%m-%d %H:%M')}")
        print(f"commit  : {common.git_commit() or 'unknown'}")
        print(f"device  : cpu ({platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores): the CPU target, times are not a benchmark")
        print(f"torch   : {torch.__version__}")
    print(f"transformers: {transformers.__version__}")
    print(f"model   : Llama {args.layers} layers, hidden {args.hidden}, {args.heads} heads, "
          f"{args.kv_heads} KV heads, intermediate {args.intermediate}, vocab {args.vocab}, "
          f"float16; batch {args.batch} x {args.seq} tokens, {args.decode_steps} decode steps, "
          f"pages of {args.page_size}")


def main(argv=None):
    args = arguments(argv)
    if args.device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("no GPU here: run with --device cpu --tiny for a smoke run")
        common.strict_math()
    header(args)
    eager = build_model(args)
    gen = torch.Generator(device=args.device).manual_seed(int.from_bytes(os.urandom(4), "little"))
    ids = torch.randint(0, args.vocab, (args.batch, args.seq), device=args.device, generator=gen)
    runs = contenders(eager, args)
    rows, ref = {}, None
    for name in ("eager", "ours", "compile"):  # eager first: the reference
        if name in runs:
            rows[name], ref = run_contender(runs[name], ref, ids, args)
    print_table(rows, args)


if __name__ == "__main__":
    common.run(main)
