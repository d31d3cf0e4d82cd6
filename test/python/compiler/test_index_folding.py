"""tile-fold-divisible-index on random index arithmetic: the swizzled shared
addresses of fragment elements (a thread's base plus constants, through
`(l / row) % period * chunk` and XOR), sums, products, remainders and
divisions. Every function is evaluated before and after the pass for every
thread id of a block, and the results must agree. Needs no GPU."""

import random
import re
import subprocess
import sys

import numpy as np
import pytest

_LINE = re.compile(r"^\s*(%[\w#]+) = arith\.(\w+) (.+?) : index$")
_OPS = {
    "addi": np.add, "subi": np.subtract, "muli": np.multiply,
    "divui": np.floor_divide, "remui": np.remainder, "xori": np.bitwise_xor,
    "andi": np.bitwise_and, "ori": np.bitwise_or, "shli": np.left_shift,
    "shrui": np.right_shift,
}


def _evaluate(text, tids):
    """Interprets a func of index arith ops (one argument, the thread id) on
    every thread id at once, in wrapping unsigned 64-bit arithmetic."""
    env = {re.search(r"func\.func @\w+\((%\w+): index", text).group(1): tids}
    for line in text[text.index("{") + 1:].splitlines():
        line = line.strip()
        if line.startswith("return"):
            names = line[len("return"):].split(":")[0].split(",")
            return [env[n.strip()] for n in names]
        m = _LINE.match(line)
        if not m:
            assert line in ("", "}") or line.startswith("func.func"), line
            continue
        name, op, rest = m.groups()
        if op == "constant":
            env[name] = np.full_like(tids, np.uint64(int(rest) & (2**64 - 1)))
            continue
        a, b = (env[x.strip()] for x in rest.split(","))
        env[name] = _OPS[op](a, b)
    raise AssertionError("no return")


class _Builder:
    def __init__(self):
        self.lines, self.n = [], 0

    def op(self, name, a, b):
        self.n += 1
        self.lines.append(f"  %v{self.n} = arith.{name} {a}, {b} : index")
        return f"%v{self.n}"

    def const(self, value):
        self.n += 1
        self.lines.append(f"  %v{self.n} = arith.constant {value} : index")
        return f"%v{self.n}"


def _swizzle(b, linear, elem_bytes, swizzle_bytes):
    row, chunk = 128 // elem_bytes, 16 // elem_bytes
    period = {32: 2, 64: 4, 128: 8}[swizzle_bytes]
    rows = b.op("divui", linear, b.const(row))
    bits = b.op("remui", rows, b.const(period))
    return b.op("xori", linear, b.op("muli", bits, b.const(chunk)))


def _random_function(rng):
    """A thread's (row, col) from its id (lane digits, warp digits), then
    elements at (row + dr, col + dc) stored through a swizzled panel layout,
    as the GPU lowering emits them; plus a few random sums and products."""
    b = _Builder()
    threads = rng.choice([128, 256, 384])
    elem_bytes = rng.choice([2, 4])
    swizzle_bytes = rng.choice([32, 64, 128])
    span = swizzle_bytes // elem_bytes
    t = "%tid"
    lane = b.op("remui", t, b.const(rng.choice([4, 8])))
    col = b.op("muli", lane, b.const(rng.choice([1, 2, 4, 8])))
    if rng.random() < 0.5:
        col = b.op("addi", col, b.op("muli", b.op("divui", t, b.const(128)),
                                     b.const(rng.choice([32, 64, 96]))))
    row = b.op("remui", b.op("divui", t, b.const(4)), b.const(8))
    row = b.op("addi", row, b.op("muli", b.op("remui", b.op("divui", t, b.const(32)),
                                              b.const(4)), b.const(rng.choice([8, 16]))))
    rows, cols = rng.choice([64, 128]), rng.choice([span, 2 * span, 4 * span])
    outs = []
    for _ in range(rng.randint(2, 6)):
        dr = rng.choice([0, 1, 8, 16, 24, 64 % rows])
        dc = rng.choice([0, 1, 2, 8, 16, 24, span, span + 8, cols - 8])
        r = b.op("addi", row, b.const(dr)) if dr else row
        c = b.op("addi", col, b.const(dc)) if dc else col
        if cols > span:
            panel = b.op("divui", c, b.const(span))
            within = b.op("remui", c, b.const(span))
            linear = b.op("addi", b.op("addi", b.op("muli", panel, b.const(rows * span)),
                                       b.op("muli", r, b.const(span))), within)
        else:
            linear = b.op("addi", b.op("muli", r, b.const(cols)), c)
        if rng.random() < 0.3:  # a stage offset added after the swizzle
            outs.append(b.op("addi", b.const(rows * cols * rng.randint(1, 3)),
                             _swizzle(b, linear, elem_bytes, swizzle_bytes)))
        else:
            outs.append(_swizzle(b, linear, elem_bytes, swizzle_bytes))
    # Random arithmetic on the thread id: carries, overlapping constants.
    for _ in range(rng.randint(1, 4)):
        x = rng.choice(outs + [t, lane, row, col])
        k = b.const(rng.choice([1, 2, 3, 5, 8, 16, 31, 32, 64]))
        x = b.op(rng.choice(["addi", "muli", "xori", "remui", "divui", "ori", "andi"]), x, k)
        outs.append(b.op(rng.choice(["addi", "xori", "divui", "remui"]), x,
                         b.const(rng.choice([2, 4, 8, 16, 32, 3]))))
    text = ("func.func @f(%tid: index) -> (" + ", ".join(["index"] * len(outs)) + ") {\n"
            + "\n".join(b.lines) + "\n  return " + ", ".join(outs) + " : "
            + ", ".join(["index"] * len(outs)) + "\n}\n")
    return text, threads


def _bounded(text, threads):
    """The thread id as the GPU lowering knows it: gpu.thread_id's range."""
    return text.replace("func.func @f(%tid: index)", "func.func @f(%arg: index)").replace(
        "{\n", f"{{\n  %tid = gpu.thread_id x upper_bound {threads}\n", 1)


def _run(text, passes):
    run = subprocess.run([sys.executable, "-m", "tilelang_mlir.tools.tile_opt", "-", *passes],
                         input=text, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.mark.parametrize("seed", range(6))
def test_folding_keeps_values(seed):
    rng = random.Random(seed)
    functions = [_random_function(rng) for _ in range(25)]
    # One tile-opt call per pipeline for all functions of the seed.
    sources = [_bounded(text, threads) for text, threads in functions]
    module = "".join(src.replace("@f(", f"@f{i}(") for i, src in enumerate(sources))
    before = _run(module, ["-canonicalize"])
    after = _run(module, ["-tile-fold-divisible-index", "-canonicalize", "-cse"])
    assert "divui" in before
    changed = 0
    for i, (_, threads) in enumerate(functions):
        f_before = _function(before, i)
        f_after = _function(after, i)
        changed += f_before != f_after
        tids = np.arange(threads, dtype=np.uint64)
        want = _evaluate(_unbound(f_before), tids)
        got = _evaluate(_unbound(f_after), tids)
        for k, (w, g) in enumerate(zip(want, got)):
            bad = np.nonzero(w != g)[0]
            assert bad.size == 0, (seed, i, k, int(bad[0]), f_before, f_after)
    # The swizzles were rewritten, not left alone.
    assert changed >= len(functions) // 2


def _function(module, i):
    start = module.index(f"func.func @f{i}(")
    end = module.index("\n  }\n", start)
    return module[start:end + 4]


def _unbound(text):
    """The thread id as the function's argument again, for the evaluator."""
    arg = re.search(r"func\.func @\w+\((%\w+): index", text).group(1)
    text, n = re.subn(r"^\s*(%\w+) = gpu\.thread_id\s+x upper_bound \d+\s*$",
                      lambda m: f"  {m.group(1)} = arith.addi {arg}, %zero : index", text,
                      flags=re.M)
    assert n == 1, text
    return text.replace("{\n", "{\n  %zero = arith.constant 0 : index\n", 1)
