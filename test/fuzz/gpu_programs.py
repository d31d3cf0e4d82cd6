"""Random tile programs for the GPU paths, and how a program runs on a GPU.

The families of `random_programs.py` are sized for the CPU: small tiles, odd
thread counts. These are kernels the way GPU programs are written, so that
every NVIDIA path runs: `T.Pipelined` copies into shared memory (1-4 stages,
a trip count of 1, K not a multiple of the block), `T.gemm` at every warp
policy with float16/bfloat16 (and float32, int8, float8) and transposes,
reductions over either dim into an accumulator that carries across the loop
(`clear=False`), copies that sm_90a turns into TMA copies and warp
specialization (whole warpgroups, 16-byte aligned boxes; the ragged shapes
here make some of them fall back to cp.async), persistent walks
(`tl.persistent_sms` at compile time; at run time the kernel is given fewer
multiprocessors than it has tiles), split-K with `T.atomic_add` (a fragment,
a T.Parallel of points, a shared tile by TMA), elementwise epilogues,
ragged M/N/K, and FlashAttention's forward (two gemms and an online softmax
in one loop: pingpong and rotated consumers).

Each program is the same standalone file as `random_programs.py` writes (a
NumPy reference in float64, a tolerance per dtype) with `GPU_HELPERS` added:
the configurations it is compiled for (`CONFIGS`: sm_90a with warp
specialization and TMA, sm_90a without them, sm_80), how it runs on a GPU
(every output passed in, poisoned, so that an element the kernel does not
write shows) and the comparison against the NumPy reference and the CPU
target's result. `gpu_campaign.py` drives them; a failing program's file
reproduces on its own:

    python prog.py                 # the CPU against NumPy, and each GPU compile
    python prog.py --run ws        # compiles for CONFIGS["ws"] and runs it on the GPU
"""

from __future__ import annotations

import random
from typing import List, Optional, Sequence

import random_programs as rp
from random_programs import EPS, Gen, Program, _values

# The configurations every program is compiled for (name -> target, pass
# configs). Our knobs (compiler/compile.py KNOWN_PASS_CONFIGS):
# tl.disable_warp_specialized turns off the TMA producer warpgroup and its
# TMA copies (cp.async groups instead); tl.disable_tma_store the TMA store
# of the accumulator (which only warp-specialized kernels use). TileLang's
# tl.disable_tma_lower sets both. A program's WS_EXTRA (persistent walks,
# cluster size, TMA store off) is added to the warp-specialized config.
CONFIGS = {
    "ws": ("cuda:sm_90a", {}),
    "nows": ("cuda:sm_90a", {"tl.disable_warp_specialized": True, "tl.disable_tma_store": True}),
    "sm80": ("cuda:sm_80", {}),
    # The reference backend as a "device": runs the campaign's whole run
    # path (artifacts, a runner process, time limits) without a GPU. For the
    # campaign's own tests.
    "host": ("cpu", {}),
}
DEFAULT_CONFIGS = ["ws", "nows", "sm80"]

# Shared memory a generated program may use: under sm_80's 163 KB with room
# for the compiler's scratch and barriers.
SHARED_LIMIT = 144 * 1024
# Accumulator elements a thread may hold (f32 registers).
ACC_PER_THREAD = 128

GPU_HELPERS = r'''
# ---- running on a GPU (gpu_programs.py; the same in every generated program) ----
import re
CONFIGS = __CONFIGS__


def config(name):
    """(target, pass configs) of a configuration; WS_EXTRA goes to the
    warp-specialized one."""
    target, pcs = CONFIGS[name]
    pcs = dict(pcs)
    if name == "ws":
        pcs.update(WS_EXTRA)
    return target, pcs


def gpu_compile(name):
    """Every parameter is passed in (out_idx=None): the outputs are made
    here, poisoned."""
    target, pcs = config(name)
    return tl.compile(main, out_idx=None, target=target, pass_configs=pcs)


def _torch():
    import torch
    return torch


def to_device(a, device):
    """A NumPy array (ml_dtypes too) as a contiguous torch tensor on device."""
    torch = _torch()
    a = np.ascontiguousarray(a)
    name = str(a.dtype)
    views = {"bfloat16": (np.int16, torch.bfloat16), "float8_e4m3fn": (np.uint8, torch.float8_e4m3fn),
             "float8_e5m2": (np.uint8, torch.float8_e5m2)}
    if name in views:
        raw, tdt = views[name]
        return torch.from_numpy(a.view(raw).copy()).to(device).view(tdt)
    return torch.from_numpy(a.copy()).to(device)


def to_numpy(t, like):
    """A torch tensor back as a NumPy array of like's dtype."""
    torch = _torch()
    t = t.detach().cpu().contiguous()
    name = str(like.dtype)
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        raw = torch.int16 if name == "bfloat16" else torch.uint8
        return t.view(raw).numpy().view(like.dtype)
    return t.numpy()


def poison(want):
    """A start value of an output that differs from the expected one in
    every element: NaN for floats, the expected value with its lowest bit
    flipped for integers and bools."""
    if want.dtype.kind == "f" or str(want.dtype) in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return np.full(want.shape, np.nan, dtype=want.dtype)
    if want.dtype == np.bool_:
        return ~want
    return want ^ np.ones((), dtype=want.dtype)


_CASE = []  # (inputs, expected outputs), made once


def device_run(kernel, device, sms=None):
    """Runs kernel on fresh inputs (INPUT_SEED) on device ("cuda" or "cpu":
    torch tensors) and returns (outputs, expected): the outputs in the order
    of reference()'s results."""
    torch = _torch()
    if not _CASE:  # the same for every config (a runner reuses them)
        inputs = make_inputs(np.random.default_rng(INPUT_SEED))
        _CASE.extend([inputs, reference(*[x.copy() for x in inputs])])
    inputs, wants = _CASE
    nparams = len(inputs) + len(OUT_IDX or [])
    args, it = [], iter(inputs)
    outs = list(OUT_IDX) if OUT_IDX else list(INPLACE)
    for i in range(nparams):
        if OUT_IDX and i in OUT_IDX:
            args.append(to_device(poison(np.asarray(wants[OUT_IDX.index(i)])), device))
        else:
            args.append(to_device(next(it), device))
    if sms and device == "cuda":
        # Fewer multiprocessors than tiles: a persistent kernel's blocks walk
        # several tiles each (the runtime launches one block per SM it knows of).
        exe = getattr(kernel, "_executable", None)
        if hasattr(exe, "_sms"):
            exe._sms[torch.cuda.current_device()] = int(sms)
    kernel(*args)
    if device == "cuda":
        torch.cuda.synchronize()
    got = [to_numpy(args[i], np.asarray(w)) for i, w in zip(outs, wants)]
    return got, wants


def check_device(got, wants, cpu_outs):
    """The verdict of a device run: PASS, or MISMATCH against the NumPy
    reference (at GPU_RTOL/GPU_ATOL) or against the CPU target's result
    (twice that: both sides are within it of the reference)."""
    for k, (g, w) in enumerate(zip(got, wants)):
        ok, detail = compare(g, np.asarray(w), GPU_RTOL, GPU_ATOL)
        if not ok:
            agree = ""
            if cpu_outs is not None and k < len(cpu_outs):
                same, _ = compare(g, cpu_outs[k], 2 * GPU_RTOL, 2 * GPU_ATOL)
                agree = " (the CPU target's result agrees with it)" if same else \
                    " (and differs from the CPU target's result)"
            return {"verdict": "MISMATCH", "signature": "vs numpy: " + MISMATCH_KEY,
                    "detail": f"output {k} against NumPy: {detail}{agree}"}
        if cpu_outs is not None and k < len(cpu_outs):
            ok, detail = compare(g, cpu_outs[k], 2 * GPU_RTOL, 2 * GPU_ATOL)
            if not ok:
                return {"verdict": "MISMATCH", "signature": "vs cpu: " + MISMATCH_KEY,
                        "detail": f"output {k} against the CPU target: {detail}"}
    return {"verdict": "PASS", "signature": "", "detail": ""}


def save_arrays(path, arrays):
    """arrays (ml_dtypes too) into an .npz: raw bytes and dtype names."""
    arrays = [np.ascontiguousarray(a) for a in arrays]
    np.savez(path, dtypes=np.array([str(a.dtype) for a in arrays]),
             **{f"a{k}": a.view(f"u{a.dtype.itemsize}") for k, a in enumerate(arrays)})


def load_arrays(path):
    with np.load(path) as z:
        return [z[f"a{k}"].view(getattr(ml_dtypes, str(name), None) or np.dtype(str(name)))
                for k, name in enumerate(z["dtypes"])]


# What a compiled kernel uses, read off its PTX and launch (the campaign
# counts them: which paths its kernels exercised).
PATHS = {"tma_load": r"cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global",
         "tma_store": r"cp\.async\.bulk\.tensor\.\dd\.global\.shared",
         "tma_reduce": r"cp\.reduce\.async\.bulk",
         "multicast": r"\.multicast::cluster", "cp_async": r"cp\.async\.c[ag]\.",
         "mbarrier": r"mbarrier\.try_wait", "setmaxnreg": r"setmaxnreg",
         "wgmma": r"wgmma\.mma_async", "mma_sync": r"\bmma\.sync", "atomics": r"\b(red|atom)\.global"}


def paths_of(kernel):
    ptx = kernel.get_source() if kernel.device == "cuda" else ""
    used = [k for k, pat in PATHS.items() if ptx and re.search(pat, ptx)]
    if kernel.grid and "sms" in json.dumps(kernel.grid):
        used.append("persistent")
    return used


def compile_all(configs, art_dir, stage=lambda s: None, cpu=True):
    """The campaign's first half for this program: the CPU against NumPy
    (its outputs saved for the device runs; cpu=False: done before), then
    each GPU configuration compiled and saved as an artifact in
    art_dir/<config>."""
    result = None
    if cpu:
        result = _run_cpu(stage)
        if CPU_OUTS:
            save_arrays(os.path.join(art_dir, "cpu.npz"), CPU_OUTS)
        stage("cpu-result " + json.dumps(result))
    for name in configs:
        stage("compile " + name)
        if name in SKIP_CONFIGS:
            r = {"verdict": "SKIPPED", "config": name, "detail": SKIP_CONFIGS[name]}
        else:
            try:
                kernel = gpu_compile(name)
                kernel.save(os.path.join(art_dir, name))
                r = {"verdict": "OK", "config": name, "paths": paths_of(kernel)}
            except Exception as e:
                verdict, sig = classify_exception(e)
                r = {"verdict": verdict, "config": name, "signature": sig,
                     "detail": str(e)[:3000], "traceback": traceback.format_exc()[-3000:]}
        stage("compile-result " + json.dumps(r))
    return result


def run_artifact(art_dir, name, stage=lambda s: None):
    """The campaign's second half: the saved kernel of one configuration on
    the device (tl.load: no compiler), against NumPy and the CPU result."""
    target, _ = config(name)
    kernel = tl.load(os.path.join(art_dir, name), sync=True)
    cpu_path = os.path.join(art_dir, "cpu.npz")
    cpu_outs = load_arrays(cpu_path) if os.path.exists(cpu_path) else None
    device = "cpu" if target == "cpu" else "cuda"
    stage("launch")
    got, wants = device_run(kernel, device, RUN_SMS)
    return check_device(got, wants, cpu_outs)


def run_here(name):
    """`prog.py --run NAME`: the CPU result, then compile and run NAME."""
    cpu = _run_cpu(lambda s: None)
    print("cpu:", cpu["verdict"], cpu.get("detail", ""))
    target, _ = config(name)
    kernel = gpu_compile(name)
    got, wants = device_run(kernel, "cpu" if target == "cpu" else "cuda", RUN_SMS)
    return check_device(got, wants, list(CPU_OUTS) or None)
'''

GPU_MAIN = r'''
if __name__ == "__main__":
    if "--run" in sys.argv:
        res = run_here(sys.argv[sys.argv.index("--run") + 1])
        print(json.dumps(res, indent=1))
        sys.exit(0 if res["verdict"] == "PASS" else 1)
    import tempfile
    verdicts = []

    def show(s):
        if "result " in s:
            print(s)
            verdicts.append(json.loads(s.split(" ", 1)[1])["verdict"])
    with tempfile.TemporaryDirectory() as d:
        compile_all([c for c in CONFIGS if CONFIGS[c][0] != "cpu"], d, show)
    sys.exit(0 if all(v in ("OK", "SKIPPED") for v in verdicts) else 1)
'''


def source(prog: Program, seed: int, index: int, input_seed: int) -> str:
    """The standalone file of a GPU campaign program: random_programs'
    file with the GPU helpers and constants, and a main that runs them."""
    feats = prog.features
    consts = (f"WS_EXTRA = {feats.get('ws_extra', {})!r}\n"
              f"RUN_SMS = {feats.get('run_sms')!r}\n"
              f"GPU_RTOL = {feats.get('gpu_rtol', prog.rtol)!r}\n"
              f"GPU_ATOL = {feats.get('gpu_atol', prog.atol)!r}\n"
              f"SKIP_CONFIGS = {feats.get('skip', {})!r}\n")
    src = prog.source(seed, index, input_seed)
    src = src.replace("random_programs.py --seed", "gpu_campaign.py --seed", 1)
    src = src.replace("\nOUT_IDX = ", "\n" + consts + "OUT_IDX = ", 1)
    helpers = GPU_HELPERS.replace("__CONFIGS__", repr(CONFIGS))
    assert rp.MAIN_BLOCK in src
    return src.replace(rp.MAIN_BLOCK, helpers + GPU_MAIN)


class GpuGen(Gen):
    """Families sized for GPUs (see the module's docstring)."""

    def __init__(self, rng: random.Random):
        super().__init__(rng, out_of_range=False, gpu=False)

    # -- shared choices ------------------------------------------------------

    def blocks_extent(self, tile: int, blocks=(1, 1, 2, 3, 4, 6), ragged_p=0.5) -> int:
        n = self.rng.choice(blocks)
        if tile > 1 and self.rng.random() < ragged_p:
            return max(1, n * tile - self.rng.randrange(1, tile))
        return n * tile

    def k_extent(self, bK: int) -> int:
        """K for blocks of bK: trip counts 1 (often: the single-iteration
        pipeline) to 8, a third of them not a multiple of bK; some not a
        multiple of 8 (no 16-byte rows: no TMA)."""
        rng = self.rng
        trips = rng.choice([1, 1, 2, 2, 3, 4, 5, 8])
        if rng.random() < 0.35:
            return max(1, trips * bK - rng.randrange(1, bK))
        return trips * bK

    def ws_extra(self, tiles: int, grid_dims: int = 2) -> dict:
        """Pass configs for the warp-specialized compile: sometimes a
        persistent walk (fewer persistent blocks than tiles), clusters off,
        the TMA store off."""
        rng = self.rng
        extra = {}
        if rng.random() < 0.25:
            extra["tl.cluster_size"] = 1
        if grid_dims <= 2 and tiles > 1 and rng.random() < 0.45:
            extra["tl.persistent_sms"] = rng.choice([1, 2, 2, 3, 4]) if tiles > 4 else 1
        if rng.random() < 0.2:
            extra["tl.disable_tma_store"] = True
        return extra

    def persistent(self, prog: Program, tiles: int) -> Program:
        """Runs with fewer multiprocessors than the grid has tiles (the
        runtime's block count of a persistent kernel), so that each block
        walks several tiles, the last ones ragged."""
        if "tl.persistent_sms" in prog.features.get("ws_extra", {}):
            prog.features["run_sms"] = self.rng.choice([1, 2, 3, 5])
        return prog

    # -- gemm ----------------------------------------------------------------

    GEMM_TYPES = [("float16", "float32")] * 5 + [("bfloat16", "float32")] * 4 + [
        ("float16", "float16"), ("float32", "float32"), ("int8", "int32"),
        ("float8_e4m3", "float32")]

    def gpu_gemm(self) -> Program:
        """C = epilogue(op(A) @ op(B) [+ C0]) with a pipelined K loop."""
        rng = self.rng
        ab, acc = rng.choice(self.GEMM_TYPES)
        esz = {"float32": 4, "int8": 1, "float8_e4m3": 1}.get(ab, 2)
        narrow = ab in ("int8", "float8_e4m3")
        out = acc if narrow else rng.choice([acc, acc, ab])
        ta, tb = rng.random() < 0.35, rng.random() < 0.35
        if narrow:  # 8-bit operands K-major, as 8-bit GEMMs are written (the
            # tensor cores' only layout: others run on the SIMT gemm, which
            # refuses big tiles with a clear error)
            ta, tb = False, True
        threads = rng.choice([128, 128, 128, 256, 256, 64])
        bM = rng.choice([64, 64, 128, 128, 32, 16] + ([256] if threads == 256 else []))
        bN = rng.choice([16, 32, 64, 64, 128, 128, 256])
        bK = rng.choice({4: [16, 32], 2: [32, 64, 64, 128], 1: [64, 128]}[esz])
        if ab == "float8_e4m3":
            # float8 runs on wgmma alone (no mma.sync path: elsewhere the
            # SIMT gemm, which refuses tiles this size): whole warpgroups.
            threads = rng.choice([128, 256])
            bM = rng.choice([64, 128]) * threads // 128
        while bM * bN > ACC_PER_THREAD * threads:
            bN //= 2
        stages = rng.choice([1, 2, 2, 3, 3, 4])
        policy = rng.choice([None, "Square", "FullRow", "FullCol"])
        a_frag = not ta and rng.random() < 0.15
        epi = rng.choice(["direct", "direct", "shared"] + ([] if ab == "int8" else ["ew", "ew"]))
        init = "clear" if rng.random() < 0.8 or out != acc or ab == "int8" else "c0"
        osz = {"float32": 4, "int32": 4}.get(out, 2)

        def smem(st):
            return st * (bM * bK + bK * bN) * esz + (bM * bN * osz if epi == "shared" else 0)
        while stages > 1 and smem(stages) > SHARED_LIMIT:
            stages -= 1
        while smem(stages) > SHARED_LIMIT:
            bK //= 2
        M, N, K = self.blocks_extent(bM), self.blocks_extent(bN), self.k_extent(bK)
        # A batch dimension (grid z; 3-D TMA boxes) on a fifth of them.
        batch = rng.choice([2, 3]) if rng.random() < 0.2 else 0
        while M * N * K * max(1, batch) > 1 << 25:  # the CPU run stays under a second
            M = max(1, M // 2)
        gx, gy = -(-N // bN), -(-M // bM)
        swizzle = rng.random() < 0.2
        lead, at0 = ((batch,), "bz, ") if batch else ((), "")
        A_shape = lead + ((K, M) if ta else (M, K))
        B_shape = lead + ((N, K) if tb else (K, N))
        C_shape = lead + (M, N)
        c_at = f"{at0}by * {bM}, bx * {bN}"
        A_tile = (bK, bM) if ta else (bM, bK)
        B_tile = (bN, bK) if tb else (bK, bN)
        a_at = at0 + (f"k * {bK}, by * {bM}" if ta else f"by * {bM}, k * {bK}")
        b_at = at0 + (f"bx * {bN}, k * {bK}" if tb else f"k * {bK}, bx * {bN}")
        extra = (", transpose_A=True" if ta else "") + (", transpose_B=True" if tb else "")
        if policy:
            extra += f", policy=T.GemmWarpPolicy.{policy}"
        params = [f"A: T.Tensor({A_shape!r}, {ab!r})", f"B: T.Tensor({B_shape!r}, {ab!r})"]
        names = ["A", "B"]
        if init == "c0":
            params.append(f"C0: T.Tensor({C_shape!r}, {acc!r})")
            names.append("C0")
        alpha = rng.choice([0.5, 2.0, -1.0, 1.0])
        act = rng.choice(["relu", "none", "abs"])
        if epi == "ew":
            params.append(f"Bias: T.Tensor(({N},), 'float32')")
            names.append("Bias")
        params.append(f"C: T.Tensor({C_shape!r}, {out!r})")
        body = [f"As = T.alloc_shared({A_tile!r}, {ab!r})",
                f"Bs = T.alloc_shared({B_tile!r}, {ab!r})",
                f"Cl = T.alloc_fragment(({bM}, {bN}), {acc!r})"]
        if a_frag:
            body.append(f"Af = T.alloc_fragment({A_tile!r}, {ab!r})")
        if epi == "shared":
            body.append(f"Cs = T.alloc_shared(({bM}, {bN}), {out!r})")
        if epi == "ew":
            body += [f"bias = T.alloc_fragment(({bN},), 'float32')",
                     f"Co = T.alloc_fragment(({bM}, {bN}), {out!r})"]
        if swizzle:
            body.append(f"T.use_swizzle(panel_size={rng.choice([2, 4, 8])}, "
                        f"order={rng.choice(['row', 'col'])!r})")
        body.append("T.clear(Cl)" if init == "clear" else f"T.copy(C0[{c_at}], Cl)")
        if epi == "ew":
            body.append(f"T.copy(Bias[bx * {bN}], bias)")
        body += [f"for k in T.Pipelined(T.ceildiv({K}, {bK}), num_stages={stages}):",
                 f"    T.copy(A[{a_at}], As)",
                 f"    T.copy(B[{b_at}], Bs)"]
        if a_frag:
            body += ["    T.copy(As, Af)", f"    T.gemm(Af, Bs, Cl{extra})"]
        else:
            body.append(f"    T.gemm(As, Bs, Cl{extra})")
        if epi == "direct":
            body.append(f"T.copy(Cl, C[{c_at}])")
        elif epi == "shared":
            body += ["T.copy(Cl, Cs)", f"T.copy(Cs, C[{c_at}])"]
        else:
            v = f"Cl[i, j] * {alpha} + bias[j]"
            v = {"relu": f"T.max({v}, 0.0)", "abs": f"T.abs({v})", "none": v}[act]
            body += [f"for i, j in T.Parallel({bM}, {bN}):",
                     f"    Co[i, j] = {v}",
                     f"T.copy(Co, C[{c_at}])"]
        kernel = "\n".join(["@T.prim_func", f"def main({', '.join(params)}):",
                            f"    with T.Kernel({gx}, {gy}{f', {batch}' if batch else ''}, "
                            f"threads={threads}) "
                            f"as (bx, by{', bz' if batch else ''}):"]
                           + ["        " + b for b in body])
        lim = {"int8": (-8, 8), "float8_e4m3": (-2.0, 2.0)}.get(ab, (-1.0, 1.0))
        vals = [_values(ab, A_shape, lo=lim[0], hi=lim[1]), _values(ab, B_shape, lo=lim[0], hi=lim[1])]
        if init == "c0":
            vals.append(_values(acc, C_shape, lo=-2.0, hi=2.0))
        if epi == "ew":
            vals.append(_values("float32", (N,), lo=-1.0, hi=1.0))
        wide = "np.int64" if ab == "int8" else "np.float64"
        def tr(x, t):
            return f"np.swapaxes({x}.astype({wide}), -1, -2)" if t else f"{x}.astype({wide})"
        ref = [f"R = {tr('A', ta)} @ {tr('B', tb)}"]
        if init == "c0":
            ref.append("R = R + C0.astype(np.float64)")
        if epi == "ew":
            # The kernel computes the epilogue in acc's type (float32 here).
            ref.append(f"R = R.astype(NP[{acc!r}]).astype(np.float64) * {alpha} + Bias.astype(np.float64)")
            ref.append({"relu": "R = np.maximum(R, 0.0)", "abs": "R = np.abs(R)", "none": ""}[act])
        ref.append(f"return [R.astype(NP[{out!r}])]")
        gpu_atol = None
        if ab == "int8":
            rtol = atol = 0.0
        else:
            mag = {"float8_e4m3": 4.0}.get(ab, 1.0) * (2.0 if epi == "ew" else 1.0)
            e_acc = rp.gemm_eps(ab, acc)  # TF32 for float32 operands
            atol = 2 * e_acc * K * mag + 2 * EPS[out] * (K if out == acc else 1) * mag + \
                (4 * EPS[acc] * 2 if init == "c0" else 0)
            rtol = 2 * EPS[out]
            if ab == "float8_e4m3":  # K-major (tb): wgmma's ~14-bit accumulation
                gpu_atol = atol + 2 * (rp.gemm_eps(ab, acc, gpu=True) - e_acc) * K * mag
        tiles = gx * gy * max(1, batch)
        desc = (f"gemm {ab}->{acc} (C {out}) {f'batch {batch} ' if batch else ''}"
                f"M,N,K={M},{N},{K} blocks {bM}x{bN}x{bK} ta={ta} "
                f"tb={tb} stages={stages} threads={threads} policy={policy} "
                f"A{' via a fragment' if a_frag else ''} init={init} epilogue={epi}"
                f"{'/' + act if epi == 'ew' else ''} swizzle={swizzle}")
        prog = Program("gpu_gemm", desc, kernel, f"return [{', '.join(vals)}]",
                       "\n".join(r for r in ref if r),
                       [len(names)], names, rtol, atol,
                       f"gpu_gemm {ab}->{out} ta={ta} tb={tb} epi={epi}", None,
                       {"ws_extra": self.ws_extra(tiles, 3 if batch else 2), "tiles": tiles,
                        "skip": ({"sm80": "float8 gemm needs sm_89 or newer"}
                                 if ab == "float8_e4m3" else {}),
                        **({"gpu_atol": gpu_atol} if gpu_atol else {})})
        return self.persistent(prog, tiles)

    # -- split-K -------------------------------------------------------------

    def gpu_splitk(self) -> Program:
        """C += A @ B over a grid of (N, M, K-split) blocks, each adding its
        partial product into C with atomics."""
        rng = self.rng
        ab = rng.choice(["float16", "bfloat16"])
        threads = rng.choice([128, 128, 256])
        bM, bN, bK = rng.choice([64, 128]), rng.choice([32, 64, 128]), rng.choice([32, 64])
        while bM * bN > ACC_PER_THREAD * threads:
            bN //= 2
        splits = rng.choice([2, 3, 4])
        trips = rng.choice([1, 1, 2, 3])
        ks = trips * bK
        K = splits * ks - (rng.randrange(0, ks) if rng.random() < 0.5 else 0)
        stages = rng.choice([1, 2, 3, 4])
        while stages > 1 and stages * (bM + bN) * bK * 2 > SHARED_LIMIT:
            stages -= 1
        M, N = self.blocks_extent(bM, (1, 1, 2, 3)), self.blocks_extent(bN, (1, 2, 3))
        mode = rng.choice(["tile", "tile", "points", "tma"])
        if mode == "tma":
            # TMA addresses C only with row strides of a multiple of 16
            # bytes: the compiler refuses use_tma=True on a C of static
            # shape whose rows are not (a clear error at that line; the
            # seed-44 campaign's launches refused 28 such kernels).
            N += -N % 4
        body = [f"As = T.alloc_shared(({bM}, {bK}), {ab!r})",
                f"Bs = T.alloc_shared(({bK}, {bN}), {ab!r})",
                f"Cl = T.alloc_fragment(({bM}, {bN}), 'float32')"]
        if mode == "tma":
            body.append(f"Cs = T.alloc_shared(({bM}, {bN}), 'float32')")
        body += ["T.clear(Cl)",
                 f"for k in T.Pipelined({trips}, num_stages={stages}):",
                 f"    T.copy(A[by * {bM}, bz * {ks} + k * {bK}], As)",
                 f"    T.copy(B[bz * {ks} + k * {bK}, bx * {bN}], Bs)",
                 f"    T.gemm(As, Bs, Cl)"]
        if mode == "tile":
            body.append(f"T.atomic_add(C[by * {bM}, bx * {bN}], Cl)")
        elif mode == "tma":
            body += ["T.copy(Cl, Cs)", f"T.atomic_add(C[by * {bM}, bx * {bN}], Cs, use_tma=True)"]
        else:
            body += [f"for i, j in T.Parallel({bM}, {bN}):",
                     f"    if by * {bM} + i < {M} and bx * {bN} + j < {N}:",
                     f"        T.atomic_add(C[by * {bM} + i, bx * {bN} + j], Cl[i, j])"]
        kernel = "\n".join(["@T.prim_func",
                            f"def main(A: T.Tensor(({M}, {K}), {ab!r}), B: T.Tensor(({K}, {N}), {ab!r}), "
                            f"C: T.Tensor(({M}, {N}), 'float32')):",
                            f"    with T.Kernel({-(-N // bN)}, {-(-M // bM)}, {splits}, "
                            f"threads={threads}) as (bx, by, bz):"]
                           + ["        " + b for b in body])
        inputs = (f"return [{_values(ab, (M, K), lo=-1.0, hi=1.0)}, "
                  f"{_values(ab, (K, N), lo=-1.0, hi=1.0)}, {_values('float32', (M, N), lo=-2.0, hi=2.0)}]")
        ref = ("return [(C.astype(np.float64) + A.astype(np.float64) @ B.astype(np.float64))"
               ".astype(np.float32)]")
        atol = 2 * EPS["float32"] * (K + 4 * splits) * 2
        desc = (f"split-K {ab} M,N,K={M},{N},{K} blocks {bM}x{bN}x{bK} splits={splits} "
                f"({trips} steps each) stages={stages} threads={threads} atomics={mode}")
        return Program("gpu_splitk", desc, kernel, inputs, ref, None, ["A", "B", "C"],
                       2 * EPS["float32"], atol, f"gpu_splitk {mode}", None,
                       {"ws_extra": self.ws_extra(0, 3)}, inplace=[2])

    # -- reductions across a pipelined loop ------------------------------------

    def gpu_reduce(self) -> Program:
        """Row (dim=1) or column (dim=0) reductions of a matrix walked in
        tiles by a pipelined loop, into an accumulator that starts from an
        input and carries across the loop (clear=False), or cleared per tile
        and combined by hand (clear=True)."""
        rng = self.rng
        kind = rng.choice(["sum", "max", "min", "abssum", "absmax"])
        dtype = rng.choice(["float32", "float16", "bfloat16", "float16"])
        dim = rng.choice([0, 1])
        threads = rng.choice([128, 128, 256, 64])
        esz = 4 if dtype == "float32" else 2
        keep = rng.choice([1, 2, 4, 8, 16, 32, 64, 128])  # the kept dim of a tile
        walk = rng.choice([8, 16, 32, 64, 128, 256])      # the reduced dim of a tile
        while keep * walk > 64 * threads:
            walk //= 2
        stages = rng.choice([1, 2, 3, 4])
        while stages > 1 and stages * keep * walk * esz > SHARED_LIMIT:
            stages -= 1
        rows = self.blocks_extent(keep, (1, 2, 3))
        red = self.k_extent(walk)
        trips = -(-red // walk)
        clear = rng.random() < 0.7
        # The tile goes to a fragment of its own type or of float32 (CUDA
        # targets reduce fragments only: a shared source is a clear error).
        via = rng.choice(["float32", dtype])
        if dim == 1:
            xshape, tile, at = (rows, red), (keep, walk), f"bx * {keep}, k * {walk}"
        else:
            xshape, tile, at = (red, rows), (walk, keep), f"k * {walk}, bx * {keep}"
        body = [f"xs = T.alloc_shared({tile!r}, {dtype!r})",
                f"r = T.alloc_fragment(({keep},), 'float32')"]
        body.append(f"xf = T.alloc_fragment({tile!r}, {via!r})")
        if clear:
            body.append(f"t = T.alloc_fragment(({keep},), 'float32')")
        body += [f"T.copy(Init[bx * {keep}], r)",
                 f"for k in T.Pipelined({trips}, num_stages={stages}):",
                 f"    T.copy(X[{at}], xs)",
                 "    T.copy(xs, xf)"]
        if clear:
            comb = {"sum": "r[i] + t[i]", "abssum": "r[i] + t[i]", "max": "T.max(r[i], t[i])",
                    "absmax": "T.max(r[i], t[i])", "min": "T.min(r[i], t[i])"}[kind]
            body += [f"    T.reduce_{kind}(xf, t, dim={dim})",
                     f"    for i in T.Parallel({keep}):",
                     f"        r[i] = {comb}"]
        else:
            body.append(f"    T.reduce_{kind}(xf, r, dim={dim}, clear=False)")
        body.append(f"T.copy(r, Out[bx * {keep}])")
        kernel = "\n".join(["@T.prim_func",
                            f"def main(X: T.Tensor({xshape!r}, {dtype!r}), "
                            f"Init: T.Tensor(({rows},), 'float32'), Out: T.Tensor(({rows},), 'float32')):",
                            f"    with T.Kernel({-(-rows // keep)}, threads={threads}) as bx:"]
                           + ["        " + b for b in body])
        inputs = f"return [{_values(dtype, xshape)}, {_values('float32', (rows,))}]"
        # Reads past the end are zero and take part (the pad to whole tiles).
        pad = [(0, 0), (0, trips * walk - red)] if dim == 1 else [(0, trips * walk - red), (0, 0)]
        op = {"sum": "P.sum(axis={d})", "max": "P.max(axis={d})", "min": "P.min(axis={d})",
              "abssum": "np.abs(P).sum(axis={d})", "absmax": "np.abs(P).max(axis={d})"}[kind]
        comb = {"sum": "R + I", "abssum": "R + I", "max": "np.maximum(R, I)",
                "absmax": "np.maximum(R, I)", "min": "np.minimum(R, I)"}[kind]
        ref = "\n".join([f"P = np.pad(X.astype(np.float64), {pad!r})",
                         f"R = {op.format(d=dim)}", "I = Init.astype(np.float64)",
                         f"return [({comb}).astype(np.float32)]"])
        sums = kind in ("sum", "abssum")
        atol = 16 * EPS["float32"] * 4 * (trips * walk + 4) if sums else 0.0
        rtol = 2 * EPS["float32"] if sums else 0.0
        desc = (f"reduce_{kind} dim={dim} of {dtype} {xshape} in {tile} tiles ({trips} steps, "
                f"{stages} stages) from a {via} fragment, clear={clear}, threads={threads}")
        return Program("gpu_reduce", desc, kernel, inputs, ref, [2], ["X", "Init"], rtol, atol,
                       f"gpu_reduce {kind} dim{dim} clear={clear} via {via}", None,
                       {"ws_extra": self.ws_extra(0, 1)})

    # -- streaming: pipelined copies with elementwise work ----------------------

    def gpu_stream(self) -> Program:
        """Walks rows of X (and Y) in tiles through a pipelined loop into
        shared memory: either accumulates f(x, y) into a fragment (written
        once), or writes g(x, y) back tile by tile (a copy from shared or a
        fragment to global in the loop)."""
        rng = self.rng
        dtype = rng.choice(["float32", "float16", "bfloat16"])
        esz = 4 if dtype == "float32" else 2
        threads = rng.choice([128, 128, 256, 64, 384])
        bm = rng.choice([8, 16, 32, 64, 128])
        bk = rng.choice([16, 32, 64, 128])
        while bm * bk > 64 * threads:
            bk //= 2
        two = rng.random() < 0.6
        stages = rng.choice([1, 2, 3, 4])
        while stages > 1 and stages * bm * bk * esz * (2 if two else 1) > SHARED_LIMIT:
            stages -= 1
        M = self.blocks_extent(bm, (1, 2, 3, 5))
        K = self.k_extent(bk)
        trips = -(-K // bk)
        mode = rng.choice(["accumulate", "accumulate", "write"])
        f_t, f_n = rng.choice([("{x} * {y}", "X * Y"), ("{x} + 2.0 * {y}", "X + 2.0 * Y"),
                               ("T.max({x}, {y})", "np.maximum(X, Y)"), ("{x} * {x} - {y}", "X * X - Y")])
        if not two:
            f_t, f_n = rng.choice([("{x} * 2.0", "X * 2.0"), ("{x} * {x}", "X * X"),
                                   ("T.abs({x}) - 1.0", "np.abs(X) - 1.0")])
        expr = f_t.format(x="T.cast(xs[i, j], 'float32')", y="T.cast(ys[i, j], 'float32')")
        params = [f"{n}: T.Tensor(({M}, {K}), {dtype!r})" for n in (["X", "Y"] if two else ["X"])]
        names = ["X", "Y"] if two else ["X"]
        body = [f"xs = T.alloc_shared(({bm}, {bk}), {dtype!r})"]
        if two:
            body.append(f"ys = T.alloc_shared(({bm}, {bk}), {dtype!r})")
        loads = [f"    T.copy(X[bx * {bm}, k * {bk}], xs)"] + \
                ([f"    T.copy(Y[bx * {bm}, k * {bk}], ys)"] if two else [])
        if mode == "accumulate":
            params.append(f"Out: T.Tensor(({M}, {bk}), 'float32')")
            body += [f"acc = T.alloc_fragment(({bm}, {bk}), 'float32')", "T.clear(acc)",
                     f"for k in T.Pipelined({trips}, num_stages={stages}):"] + loads + [
                     f"    for i, j in T.Parallel({bm}, {bk}):",
                     f"        acc[i, j] += {expr}",
                     f"T.copy(acc, Out[bx * {bm}, 0])"]
            vx = f"np.pad(X.astype(np.float64), [(0, 0), (0, {trips * bk - K})])"
            vy = f"np.pad(Y.astype(np.float64), [(0, 0), (0, {trips * bk - K})])"
            ref = [f"X = {vx}"] + ([f"Y = {vy}"] if two else []) + [
                   f"F = {f_n}",
                   f"return [F.reshape({M}, {trips}, {bk}).sum(axis=1).astype(np.float32)]"]
            atol = 8 * EPS["float32"] * 8 * (trips + 2)
        else:
            params.append(f"Out: T.Tensor(({M}, {K}), {dtype!r})")
            staged = rng.random() < 0.5
            body += [f"o = T.alloc_{'shared' if staged else 'fragment'}(({bm}, {bk}), {dtype!r})",
                     f"for k in T.Pipelined({trips}, num_stages={stages}):"] + loads + [
                     f"    for i, j in T.Parallel({bm}, {bk}):",
                     f"        o[i, j] = {expr}",
                     f"    T.copy(o, Out[bx * {bm}, k * {bk}])"]
            ref = ["X = X.astype(np.float64)"] + (["Y = Y.astype(np.float64)"] if two else []) + [
                   f"return [({f_n}).astype(NP[{dtype!r}])]"]
            atol = 2 * EPS[dtype] * 8
        kernel = "\n".join(["@T.prim_func", f"def main({', '.join(params)}):",
                            f"    with T.Kernel({-(-M // bm)}, threads={threads}) as bx:"]
                           + ["        " + b for b in body])
        inputs = "return [" + ", ".join(_values(dtype, (M, K), lo=-2.0, hi=2.0) for _ in names) + "]"
        desc = (f"stream {mode} {f_t.format(x='x', y='y')} over {dtype} ({M}, {K}) in "
                f"{bm}x{bk} tiles, {trips} steps, "
                f"{stages} stages, threads={threads}")
        return Program("gpu_stream", desc, kernel, inputs, "\n".join(ref), [len(names)], names,
                       2 * EPS["float32"] if mode == "accumulate" else 2 * EPS[dtype], atol,
                       f"gpu_stream {mode} {len(names)} inputs", None,
                       {"ws_extra": self.ws_extra(0, 1)})

    # -- attention: two gemms and an online softmax in one loop ---------------

    def gpu_attention(self) -> Program:
        """O = softmax(Q K^T / sqrt(D)) V by an online softmax over key tiles
        (FlashAttention's forward): two gemms in the pipelined loop (the
        second with P from registers), reductions, exp2, a rescale. With two
        consumer warpgroups the warp-specialized compile may take turns at
        the gemms (pingpong) or rotate the loop (its extras). Keys past N
        are masked to -inf, or left as zero scores (the reference pads the
        same way)."""
        rng = self.rng
        dt = rng.choice(["float16", "float16", "bfloat16"])
        D = rng.choice([32, 64, 64, 128])
        threads = rng.choice([128, 128, 256])
        bM = rng.choice([64, 128]) if threads == 128 else 128
        bN = rng.choice([32, 64, 64, 128])
        while bM * (bN + D) > 160 * threads:
            bN //= 2
        stages = rng.choice([1, 2, 2, 3])

        def smem(st):
            return (bM * D + st * 2 * bN * D) * 2
        while stages > 1 and smem(stages) > SHARED_LIMIT:
            stages -= 1
        while smem(stages) > SHARED_LIMIT:
            bN //= 2
        M = self.blocks_extent(bM, (1, 2, 3))
        N = self.k_extent(bN)
        mask = N % bN != 0 and rng.random() < 0.7
        scale = 1.0 / D ** 0.5
        c = scale * 1.4426950408889634  # log2(e): exp(x) = exp2(x log2 e)
        policy = rng.choice(["FullRow", "FullRow", "Square"])
        lines = ["@T.prim_func",
                 f"def main(Q: T.Tensor(({M}, {D}), {dt!r}), K: T.Tensor(({N}, {D}), {dt!r}), "
                 f"V: T.Tensor(({N}, {D}), {dt!r}), O: T.Tensor(({M}, {D}), {dt!r})):",
                 f"    with T.Kernel({-(-M // bM)}, threads={threads}) as bx:"]
        body = [f"Qs = T.alloc_shared(({bM}, {D}), {dt!r})",
                f"Ks = T.alloc_shared(({bN}, {D}), {dt!r})",
                f"Vs = T.alloc_shared(({bN}, {D}), {dt!r})",
                f"S = T.alloc_fragment(({bM}, {bN}), 'float32')",
                f"P = T.alloc_fragment(({bM}, {bN}), {dt!r})",
                f"Acc = T.alloc_fragment(({bM}, {D}), 'float32')"]
        for v in ("m", "m_prev", "l", "rowsum", "rescale"):
            body.append(f"{v} = T.alloc_fragment(({bM},), 'float32')")
        body += [f"T.copy(Q[bx * {bM}, 0], Qs)", "T.fill(Acc, 0.0)", "T.fill(l, 0.0)",
                 "T.fill(m, -T.infinity('float32'))",
                 f"for k in T.Pipelined(T.ceildiv({N}, {bN}), num_stages={stages}):",
                 f"    T.copy(K[k * {bN}, 0], Ks)",
                 "    T.clear(S)",
                 f"    T.gemm(Qs, Ks, S, transpose_B=True, policy=T.GemmWarpPolicy.{policy})"]
        if mask:
            body += [f"    for i, j in T.Parallel({bM}, {bN}):",
                     f"        S[i, j] = T.if_then_else(k * {bN} + j < {N}, S[i, j], "
                     f"-T.infinity('float32'))"]
        body += ["    T.copy(m, m_prev)",
                 "    T.reduce_max(S, m, dim=1, clear=False)",
                 f"    for i, j in T.Parallel({bM}, {bN}):",
                 f"        S[i, j] = T.exp2((S[i, j] - m[i]) * {c!r})",
                 f"    for i in T.Parallel({bM}):",
                 f"        rescale[i] = T.exp2((m_prev[i] - m[i]) * {c!r})",
                 f"    for i, j in T.Parallel({bM}, {D}):",
                 "        Acc[i, j] *= rescale[i]",
                 "    T.reduce_sum(S, rowsum, dim=1)",
                 f"    for i in T.Parallel({bM}):",
                 "        l[i] = l[i] * rescale[i] + rowsum[i]",
                 "    T.copy(S, P)",
                 f"    T.copy(V[k * {bN}, 0], Vs)",
                 f"    T.gemm(P, Vs, Acc, policy=T.GemmWarpPolicy.{policy})",
                 f"for i, j in T.Parallel({bM}, {D}):",
                 "    Acc[i, j] /= l[i]",
                 f"T.copy(Acc, O[bx * {bM}, 0])"]
        kernel = "\n".join(lines + ["        " + b for b in body])
        inputs = "return [" + ", ".join(_values(dt, s, lo=-1.0, hi=1.0)
                                        for s in ((M, D), (N, D), (N, D))) + "]"
        pad = -(-N // bN) * bN - N
        ref = [f"Kp = np.pad(K.astype(np.float64), [(0, {pad}), (0, 0)])",
               f"Vp = np.pad(V.astype(np.float64), [(0, {pad}), (0, 0)])",
               f"S = Q.astype(np.float64) @ Kp.T * {scale!r}"]
        if mask:
            ref.append(f"S[:, {N}:] = -np.inf")
        ref += ["P = np.exp(S - S.max(axis=1, keepdims=True))",
                f"return [((P / P.sum(axis=1, keepdims=True)) @ Vp).astype(NP[{dt!r}])]"]
        # P is rounded to dt before P V; the output once more.
        rtol, atol = 4 * EPS[dt], 8 * EPS[dt]
        extra = self.ws_extra(0, 1)
        if rng.random() < 0.4:
            extra["tl.enable_pingpong"] = True
        if rng.random() < 0.3:
            extra["tl.enable_rotate"] = True
        desc = (f"attention {dt} M,N,D={M},{N},{D} blocks {bM}x{bN} stages={stages} "
                f"threads={threads} policy={policy} mask={mask}")
        return Program("gpu_attention", desc, kernel, inputs, "\n".join(ref), [3], ["Q", "K", "V"],
                       rtol, atol, f"gpu_attention {dt} mask={mask}", None, {"ws_extra": extra})

    # -- the CPU families, on the GPU ---------------------------------------------

    def expr(self, dtype, leaves, depth, leaf_bound=4.0):
        """Gen.expr with sin/cos arguments kept in [-3, 3]: the GPU's
        sin.approx is only accurate near zero."""
        t, n, b = super().expr(dtype, leaves, depth, leaf_bound)
        for f in ("sin", "cos"):
            if t.startswith(f"T.{f}(") and n.startswith(f"np.{f}("):
                t = f"T.{f}(T.tanh({t[len(f) + 3:-1]}) * 3.0)"
                n = f"np.{f}(np.tanh({n[len(f) + 4:-1]}) * 3.0)"
        return t, n, b

    def cpu_family(self, name: str) -> Program:
        """A program of random_programs' family `name`, with a GPU
        tolerance: float math on the GPU uses the special-function
        approximations (ex2/lg2/sin/rsqrt/sqrt.approx, 2^-21 to 2^-23 each),
        where the CPU tolerance allows 4 float32 epsilons (2^-21) a step:
        eight times that (errors scale with the expression's bound as the
        CPU tolerance does), and at least 2^-18 a step."""
        prog = getattr(self, name)()
        prog.family = name
        src = prog.kernel
        approx = any(f"T.{f}(" in src for f in ("exp", "log", "sqrt", "tanh", "sigmoid", "rsqrt",
                                                 "sin", "cos"))
        if approx:
            depth = src.count("(") + 2
            prog.features["gpu_rtol"] = max(8 * prog.rtol, 2.0 ** -18 * depth)
            prog.features["gpu_atol"] = max(8 * prog.atol, 2.0 ** -18 * depth * 16)
            if "'float64'" in src:
                prog.features["skip"] = {c: "float64 math functions are not supported on CUDA "
                                            "targets" for c in ("ws", "nows", "sm80")}
        if name in ("convert", "gemm", "copy", "elementwise") and "float8" in src:
            prog.features.setdefault("skip", {})["sm80"] = "float8 needs sm_89 or newer"
        return prog


# Families and weights: the GPU families, and random_programs' families run
# on the GPU too (cpu_family).
GPU_FAMILIES = {"gpu_gemm": 5, "gpu_splitk": 2, "gpu_reduce": 2.5, "gpu_stream": 2,
                "gpu_attention": 1.5}
CPU_FAMILIES = {"elementwise": 1, "reduce": 0.8, "copy": 0.6, "point_copy": 0.3, "convert": 0.6,
                "gemm": 0.8, "pipelined": 0.5, "softmax": 0.4, "gemm_epilogue": 0.5, "cumsum": 0.2}
FAMILIES = {**GPU_FAMILIES, **CPU_FAMILIES}


def generate(seed: int, index: int, families: Optional[Sequence[str]] = None) -> Program:
    """Program `index` of `seed` (depends on nothing else)."""
    rng = random.Random(f"gpu:{seed}:{index}")
    names = list(families or FAMILIES)
    fam = rng.choices(names, weights=[FAMILIES[n] for n in names])[0]
    g = GpuGen(rng)
    return getattr(g, fam)() if fam in GPU_FAMILIES else g.cpu_family(fam)


def known_families() -> List[str]:
    return list(FAMILIES)
