"""Is the mismatch of TileOPs' sparse MLA decode on the GPU (its
test_deepseek_dsa_decode smoke test: 1.0-1.6% of the elements off, whole
query rows, different rows each run) a race in the program itself? The
kernel keeps one `is_kv_valid` mask in shared memory for both of its KV
buffers: the producer warpgroup may write buffer 1's mask while the
consumers still read buffer 0's. TileLang's own example
(deepseek_v32/sparse_mla_fwd_pipelined.py) keeps one mask per stage.

Run on the GPU machine from a TileOPs checkout (52dbc086), its src not on
PYTHONPATH (the script adds it), with this package installed:

    python scripts/investigations/tileops_dsa_race.py            # as shipped
    python scripts/investigations/tileops_dsa_race.py --per-stage  # one mask per buffer

It prints, per run of the same inputs, how many elements are outside the
test's tolerance and which query rows, heads and dims they are in. With
--per-stage the module's source is rewritten in memory (a mask of shape
[2, block_i], indexed by the buffer) before it is compiled. If the
per-stage kernel is exact and the shipped one is not, the race is the
program's. Settled on the H100 (2026-12-07, docs/compat.md's TileOPs
section): as shipped 0.4-0.6% of the elements off in whole query rows,
different rows per run; per stage exact."""

import argparse
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile

import torch


def _per_stage(source: str) -> str:
    lines = source.split("\n")
    buf = None
    out = []
    for line in lines:
        if "# Buffer 0" in line:
            buf = 0
        elif "# Buffer 1" in line:
            buf = 1
        if 'is_kv_valid = T.alloc_shared([i_block], "bool"' in line:
            line = line.replace("[i_block]", "[2, i_block]")
        elif "is_kv_valid[" in line and buf is not None:
            line = line.replace("is_kv_valid[", f"is_kv_valid[{buf}, ")
        out.append(line)
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-stage", action="store_true")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--src", default="src", help="the checkout's src folder (keep it off "
                                                 "PYTHONPATH: the script puts it, or its "
                                                 "rewritten copy, on the path)")
    args = ap.parse_args()
    sys.path.insert(0, os.getcwd())
    import tilelang_mlir.compat

    tilelang_mlir.compat.install()
    src = os.path.abspath(args.src)
    if args.per_stage:
        # A copy of the package with the module rewritten, in place of the
        # checkout's (the frontend reads a kernel's source from its file).
        tmp = tempfile.mkdtemp()
        shutil.copytree(os.path.join(src, "tileops"), os.path.join(tmp, "tileops"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        path = os.path.join(tmp, "tileops", "kernels", "attention", "deepseek_dsa_decode.py")
        with open(path) as f:
            text = _per_stage(f.read())
        with open(path, "w") as f:
            f.write(text)
        src = tmp
    sys.path.insert(0, src)
    from tests.ops.attention.test_deepseek_dsa_decode import DsaDecodeTest
    from tileops.ops import DeepSeekSparseAttentionDecodeWithKVCacheFwdOp

    shape = (1, 128, 1024, 2048, 512, 64, 2048, 1, 1, 1024)
    test = DsaDecodeTest(*shape, sm_scale=None, dtype=torch.float16)
    op = DeepSeekSparseAttentionDecodeWithKVCacheFwdOp(*shape, sm_scale=None, tune=False)
    inputs = test.gen_inputs()
    ref = test.ref_program(*inputs).float()
    for run in range(args.runs):
        out = op(*inputs).float()
        bad = ((out - ref).abs() > 3e-4 + 1e-5 * ref.abs())[0]  # (q, head, dim)
        rows = bad.any(-1).any(-1).nonzero().flatten().tolist()
        print(f"run {run}: {int(bad.sum())} of {bad.numel()} outside, max "
              f"{float((out - ref).abs().max()):.4g}; query rows {len(rows)}: {rows[:24]}; "
              f"heads {int(bad.any(-1).any(0).sum())}, dims {int(bad.any(0).any(0).sum())}")


if __name__ == "__main__":
    main()
