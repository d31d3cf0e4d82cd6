"""A transformers Llama on our kernels (issue 22): prefill, decoding with a
paged KV cache and a training step, next to PyTorch eager and torch.compile.

The model: LlamaForCausalLM from a config with random weights (default 8
layers, hidden 4096, 32 heads, 8 KV heads, intermediate 14336, vocab
32000), float16 on the GPU. Four contenders run the same weights:

- ours: `tilelang_mlir.models.use_tilelang` (attention on ops.flash_attn
  for prefill and ops.flash_decode over a PagedCache for decoding, RMSNorm
  on ops.rms_norm, the gated MLP on ops.silu_mul; the projections stay
  torch's cuBLAS matmuls); on a GPU the decode step is replayed from a
  CUDA graph (`models.CUDAGraphDecoder`);
- eager: the same model with attn_implementation "sdpa" (PyTorch picks the
  SDPA backend), transformers' DynamicCache for decoding;
- compile: the eager model under torch.compile (Inductor, default mode)
  for prefill and the training step; decoding with a StaticCache and the
  decode step compiled with mode="reduce-overhead" (CUDA graphs);
- ours + compile: our model under torch.compile (Inductor fuses the glue
  between our operators) for prefill and the training step; its decode is
  ours (not run twice).

Measured, for a batch of `--batch` prompts of `--seq` tokens (by default
one per 16 GiB of the card, at most 8: 4 on an H100, 8 on an H200):

- prefill: one forward over the prompts that fills a fresh cache (logits
  of the last position only, as generation does);
- decode: after an untimed prefill, `--decode-steps` greedy steps of one
  token per sequence (argmax fed back on the device); the time per step;
- train: model(ids, labels=ids).loss.backward() (forward + backward, no
  optimizer step), gradients freed before each.

Correctness first. Prefill: full logits against eager's (relative
Frobenius error below 1e-2). Decode: each contender teacher-forced with
eager's greedy tokens, its logits of every step against eager's (below
1e-2), its argmax allowed to differ from eager's only at near-ties (eager's
logits of the two tokens closer than twice the row's largest difference);
then free-running, where its tokens first diverge from eager's is reported
(with random weights and 32000 logits, near-ties make an early divergence
expected). Training step: the gradients of layer 0's q/k/v/up projections
and input RMSNorm and the last layer's down projection, for a loss scaled
by 1024 (fp16 training scales it; unscaled, layer 0's gradients underflow
and even eager's are 30% off), against those of a float32 copy of the
model; each below max(3e-2, 1.5 x eager's own error). A contender that
fails a check is reported and not timed.

Timing: wall-clock of each call between device synchronizations (so the
host's cost of issuing the kernels is in: it is the latency a caller sees),
median of `--rep` calls after a warm-up call (the compiles happen there).

    python benchmarks/model.py [--layers 8] [--hidden 4096] [--heads 32] [--kv-heads 8]
                               [--intermediate 14336] [--vocab 32000] [--batch B] [--seq 2048]
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

PREFILL_TOL, GRAD_TOL, LOSS_SCALE = 1e-2, 3e-2, 1024.0
GRADS = ("model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
         "model.layers.0.self_attn.v_proj.weight", "model.layers.0.mlp.up_proj.weight",
         "model.layers.0.input_layernorm.weight")
TINY = dict(layers=2, hidden=128, heads=4, kv_heads=2, intermediate=256, vocab=256, batch=2,
            seq=32, decode_steps=8, page_size=16, rep=2)
CONTENDERS = ("ours", "ours+compile", "eager", "compile")


def arguments(argv=None):
    parser = common.arguments(__doc__)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--intermediate", type=int, default=14336)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--batch", type=int, default=None,
                        help="prompts per batch (default: sized to the card, see default_batch)")
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
    if args.batch is None:
        args.batch = default_batch(args.device)
    return args


def default_batch(device):
    """The default batch fits the card: the training step of the default
    model at batch 8 x 2048 needs more than an 80 GB H100 has (measured: out
    of memory at 8, runs at 4), so one prompt per 16 GiB of the card's
    memory, a power of two, at most 8 (4 on an H100, 8 on an H200)."""
    if device != "cuda" or not torch.cuda.is_available():
        return 8
    gib = torch.cuda.get_device_properties(0).total_memory / 2**30
    batch = 1
    while batch * 2 <= min(8, gib // 16):
        batch *= 2
    return batch


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
                 prefill_model=None, decode=True):
        self.name, self.model, self.new_cache = name, model, new_cache
        self.decode = decode
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

    def train(self, ids, scale=1.0):
        self.model.zero_grad(set_to_none=True)
        loss = self._train(ids, labels=ids, use_cache=False).loss
        (loss * scale if scale != 1.0 else loss).backward()
        return loss


def contenders(eager_model, args):
    import transformers
    from tilelang_mlir.models import CUDAGraphDecoder, PagedCache, use_tilelang

    cfg = eager_model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    max_len = args.seq + args.decode_steps
    ours = use_tilelang(copy.deepcopy(eager_model))
    # One PagedCache, allocated up front and reset before each use, the
    # prompt's pages reserved (a compiled prefill then traces no host
    # bookkeeping). On a GPU the decode steps are replays of one CUDA graph
    # (CUDAGraphDecoder), as the compile contender's are.
    paged = PagedCache(ours.config, args.batch, max_len, page_size=args.page_size)
    paged.early_initialization(cfg.num_key_value_heads, head_dim, torch.float16,
                               torch.device(args.device))

    def paged_cache():
        paged.reset()
        paged.reserve(args.seq)
        return paged

    graphed = CUDAGraphDecoder(ours, paged) if args.device == "cuda" else None
    ours_step = None if graphed is None else (lambda tokens, cache: graphed(tokens))
    out = {
        "ours": Contender("ours", ours, paged_cache, step=ours_step),
        "eager": Contender("eager", eager_model,
                           lambda: transformers.DynamicCache(config=eager_model.config)),
    }
    if not args.no_compile:
        # One StaticCache, reset before each use and allocated outside any
        # compiled region (so its tensors are marked as static addresses,
        # which the CUDA graphs of the decode step need).
        static = transformers.StaticCache(config=cfg, max_cache_len=max_len)
        static.early_initialization(args.batch, cfg.num_key_value_heads, head_dim,
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
        # Ours under torch.compile: Inductor fuses the glue between our
        # operators (rotary embedding, residual adds, casts), our kernels run
        # attention, RMSNorm and the gated activation. Its decode step is
        # ours (the same CUDA graph), so it is not run twice.
        ours_compiled = torch.compile(ours)
        out["ours+compile"] = Contender("ours+compile", ours, paged_cache,
                                        forward=ours_compiled, train_model=ours_compiled,
                                        prefill_model=ours, decode=False)
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


def decode(c, ids, steps, device, forced=None, keep_logits=False):
    """Greedy decoding: an untimed prefill into a fresh cache (the compile
    contender's is eager: transformers does not compile a prefill into a
    StaticCache), then `steps` steps of one token per sequence (the argmax
    fed back, or with `forced` (batch, >= steps) those tokens: teacher
    forcing). Returns (tokens (batch, steps + 1), milliseconds per step,
    the float32 logits of each step when `keep_logits`)."""
    with torch.no_grad():
        cache = c.new_cache()
        logits = c.prefill(ids, cache)[:, -1]
        rows = [logits.float()] if keep_logits else None
        token = logits.argmax(-1, keepdim=True)
        tokens = [token]
        sync(device)
        t0 = time.perf_counter()
        for i in range(steps):
            feed = token if forced is None else forced[:, i:i + 1]
            logits = c.step(feed, cache)[:, -1]
            if keep_logits:
                rows.append(logits.float())
            token = logits.argmax(-1, keepdim=True)
            tokens.append(token)
        sync(device)
        ms = (time.perf_counter() - t0) * 1e3 / steps
    return torch.cat(tokens, 1), ms, rows


def divergence(tokens, ref):
    """'identical', or the first step (and sequence) where they differ."""
    diff = (tokens != ref).any(0).nonzero()
    if diff.numel() == 0:
        return "identical"
    step = int(diff[0])
    seq = int((tokens[:, step] != ref[:, step]).nonzero()[0])
    return f"free-running: first divergence at token {step} of {ref.shape[1]} (sequence {seq})"


def forced_check(rows, ref_rows):
    """Teacher-forced logits (every step fed eager's token) against eager's:
    (worst relative error of a step, flips, ties). A flip is a step and
    sequence whose argmax differs from eager's; it is a tie when eager's
    own logits of the two tokens are closer than twice the largest logit
    difference of that row (the choice is within the rounding of fp16)."""
    worst, flips, ties = 0.0, 0, 0
    for out, ref in zip(rows, ref_rows):
        worst = max(worst, common.rel_error(out, ref))
        mine, theirs = out.argmax(-1), ref.argmax(-1)
        for b in (mine != theirs).nonzero().flatten().tolist():
            flips += 1
            gap = (ref[b, theirs[b]] - ref[b, mine[b]]).item()
            ties += gap <= 2 * (out[b] - ref[b]).abs().max().item()
    return worst, flips, ties


def grads(model):
    params = dict(model.named_parameters())
    last = f"model.layers.{len(model.model.layers) - 1}.mlp.down_proj.weight"
    return {n: params[n].grad.detach().clone() for n in GRADS + (last,)}


class NotRun(Exception):
    """A measure a contender does not run."""


def float32_grads(eager_model, ids):
    """The gradients GRADS of the training step's scaled loss in a float32
    copy of the model (the reference of every contender's, eager's too)."""
    model = copy.deepcopy(eager_model).float()
    model.zero_grad(set_to_none=True)
    (model(ids, labels=ids, use_cache=False).loss * LOSS_SCALE).backward()
    out = {n: g.float() for n, g in grads(model).items()}
    del model
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return out


def run_contender(c, ref, ids, args):
    """Checks c against the references in `ref` (eager, run first, adds
    its logits and tokens), then times it. Returns {measure: result
    triple}."""
    row, dev = {}, args.device
    # Prefill.
    try:
        with torch.no_grad():
            logits = c.forward(ids, c.new_cache(), last=False)
        if "logits" not in ref:
            ref["logits"] = logits
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
    # Decode: eager's free-running greedy tokens and logits are the
    # reference; a contender runs teacher-forced on eager's tokens (its
    # logits checked step by step, its argmax flips allowed only at
    # near-ties), then free-running (where it first diverges, for the record).
    try:
        if not c.decode:
            raise NotRun("the decode step is ours (the same CUDA graph)")
        if "tokens" not in ref:
            tokens, _, rows = decode(c, ids, args.decode_steps, dev, keep_logits=True)
            ref["tokens"], ref["rows"] = tokens, rows
            same, ok = "reference", True
        else:
            _, _, rows = decode(c, ids, args.decode_steps, dev, forced=ref["tokens"],
                                keep_logits=True)
            worst, flips, ties = forced_check(rows, ref["rows"])
            del rows
            tokens, _, _ = decode(c, ids, args.decode_steps, dev)
            same = (f"teacher-forced logits error {worst:.1e}, {flips} argmax flips of "
                    f"{ref['tokens'].numel()}, {ties} of them near-ties; "
                    f"{divergence(tokens, ref['tokens'])}")
            ok = worst < PREFILL_TOL and flips == ties
        if not ok:
            row["decode"] = ("failed", None, "wrong: " + same)
        else:
            ms = statistics.median(decode(c, ids, args.decode_steps, dev)[1]
                                   for _ in range(args.rep))
            row["decode"] = ("ok", ms, same)
    except NotRun as e:
        row["decode"] = ("n/a", None, str(e))
    except Exception as e:  # noqa: BLE001
        row["decode"] = ("failed", None, common.reason(e))
    print(f"  {c.name:8} decode : {describe(row['decode'])}")
    # Training step: the gradients of a loss scaled by LOSS_SCALE (as fp16
    # training scales it, so that the first layers' gradients are not lost
    # to underflow) against the float32 model's (ref["grads32"]); eager's
    # own error against them sets the bar with GRAD_TOL.
    try:
        c.train(ids, scale=LOSS_SCALE)
        got = grads(c.model)
        worst = max((common.rel_error(got[n], ref["grads32"][n]), n) for n in got)
        del got
        if c.name == "eager":
            ref["grad_bar"] = max(GRAD_TOL, 1.5 * worst[0])
        if not worst[0] < ref["grad_bar"]:
            row["train"] = ("wrong", None, worst[0])
            print(f"    worst gradient: {worst[1]} (bar {ref['grad_bar']:.1e})")
        else:
            row["train"] = ("ok", wall_ms(lambda: c.train(ids), dev, args.rep),
                            f"gradients vs float32 {worst[0]:.1e}")
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
    heads = {"ours": "ours", "ours+compile": "ours + torch.compile", "eager": "eager (SDPA)",
             "compile": "torch.compile"}
    mine = [n for n in ("ours", "ours+compile") if n in rows]
    theirs = [n for n in ("eager", "compile") if n in rows]
    ratios = [(o, t) for t in theirs for o in mine]
    print()
    print("| | " + " | ".join([heads[n] for n in names]
                             + [f"{heads[t]} / {heads[o]}" for o, t in ratios]) + " |")
    print("|---" * (len(names) + len(ratios) + 1) + "|")
    notes = []
    for key, label in measures:
        cells = [common.cell(rows[n][key], lambda ms: f"{ms:.3f}") for n in names]
        cells += [common.speedup(rows[o][key], rows[t][key]) for o, t in ratios]
        print(f"| {label} | " + " | ".join(cells) + " |")
        notes += [f"{n} {key} {rows[n][key][0]}: {rows[n][key][2]}" for n in names
                  if rows[n][key][0] in ("failed", "n/a")]
    checks = [f"{n} {key}: {rows[n][key][2]}" for n in names for key in ("decode", "train")
              if rows[n][key][0] == "ok"]
    footer = (f"(ratio > 1: ours faster; {tokens} prompt tokens, {args.decode_steps} decode "
              f"steps)")
    common.print_notes(checks + notes, footer)


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
    ref = {"grads32": float32_grads(eager, ids)}
    runs = contenders(eager, args)
    rows = {}
    for name in ("eager", "ours", "ours+compile", "compile"):  # eager first: the reference
        if name in runs:
            rows[name], ref = run_contender(runs[name], ref, ids, args)
    print_table(rows, args)


if __name__ == "__main__":
    common.run(main)
