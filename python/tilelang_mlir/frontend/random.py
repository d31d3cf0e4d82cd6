"""TileLang's random numbers (T.rng_init, T.rng_rand, T.rng_rand_float):
cuRAND's Philox4x32-10 generator, computed in the program's own IR so that
every target (the CPU included) gives the same sequence as cuRAND's
`curand_init(seed, subsequence, offset, &state)` and `curand(&state)`.

The state is each thread's (TileLang declares a curandState per function;
`T.rng_rand` draws from the latest `T.rng_init`): a 128-bit counter, a
64-bit key (the seed), the position in the current block of four outputs,
and the four outputs. `curand_init` puts the subsequence in the counter's
high 64 bits and offset / 4 in its low 64 bits, and starts at position
offset % 4; each `curand` returns the output at the position and, after
the fourth, steps the counter and runs the 10 rounds again. The floats:

- uniform float32: x * 2**-32 + 2**-33 (in (0, 1]);
- uniform float64: two draws x, y: (x ^ (y << 21)) * 2**-53 + 2**-54;
- normal float32: Box-Muller on two draws, the second value kept for the
  next call (cuRAND's boxmuller_extra): sqrt(-2 log u) * (sin v, cos v),
  u = x * 2**-32 + 2**-33, v = y * 2**-32 * 2pi + 2**-32 * pi;
- normal float64: the same on four draws at 53 bits (v as a multiple of pi).

cuRAND's XORWOW and MRG32k3a states are accepted by name and draw from the
same Philox stream: the distributions are theirs, the exact sequence is
Philox's.
"""

from __future__ import annotations

import math

from ..base import dtypes as dt
from ..language.values import Scalar, binary, ir_type, to_scalar

GENERATORS = ("curandStateMRG32k3a_t", "curandStatePhilox4_32_10_t", "curandStateXORWOW_t")

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85

# The state's words in its int32 local buffer.
_CTR, _KEY, _POS, _OUT, _FLAG, _FLAG_D = 0, 4, 6, 7, 11, 12
_WORDS = 13


def _arith():
    from ..dialects import arith

    return arith


def _u32(v) -> Scalar:
    return to_scalar(v, dt.uint32)


class RandomBuilder:
    """The random-number part of the Builder."""

    def rng_init(self, seed, seq=None, off=0, generator="curandStatePhilox4_32_10_t"):
        self.require_kernel("T.rng_init")
        if generator not in GENERATORS:
            raise self.error(f"T.rng_init: generator must be one of {GENERATORS}, got "
                             f"{generator!r}")
        if seq is None:  # TileLang's default: the thread's index in the grid
            seq = binary("+", self.thread_binding(0),
                         binary("*", self.block_indices[0], self.kernel_threads))
        seed64, seq64, off64 = (to_scalar(v, dt.uint64) for v in (seed, seq, off))
        words = self.alloc((_WORDS,), dt.int32, "local", self.unique_name("rng_state"))
        normal = self.alloc((), dt.float32, "var", self.unique_name("rng_normal"))
        normal_d = self.alloc((), dt.float64, "var", self.unique_name("rng_normal_d"))
        self.rng = (words, normal, normal_d)
        quarter = binary(">>", off64, 2)
        ctr = [self._lo(quarter), self._hi(quarter), self._lo(seq64), self._hi(seq64)]
        key = [self._lo(seed64), self._hi(seed64)]
        for k, v in enumerate(ctr + key):
            self._put(_CTR + k, v)
        self._put(_POS, self._lo(binary("&", off64, 3)))
        self._put(_FLAG, 0)
        self._put(_FLAG_D, 0)
        for k, v in enumerate(self._philox(ctr, key)):
            self._put(_OUT + k, v)

    # -- the state's words ----------------------------------------------------
    def _state(self, what: str):
        if getattr(self, "rng", None) is None:
            raise self.error(f"{what} before T.rng_init: initialize the generator first")
        return self.rng

    def _get(self, k: int) -> Scalar:
        words = self.rng[0]
        return to_scalar(words[k].load(), dt.uint32)

    def _put(self, k: int, v) -> None:
        self.rng[0][k].store(to_scalar(_u32(v), dt.int32))

    @staticmethod
    def _lo(v) -> Scalar:
        return _u32(v)

    @staticmethod
    def _hi(v) -> Scalar:
        return _u32(binary(">>", to_scalar(v, dt.uint64), 32))

    # -- Philox4x32-10 ----------------------------------------------------------
    def _philox(self, ctr, key):
        """The four outputs of Philox4x32-10 on counter `ctr` and key `key`
        (uint32 Scalars), as in Random123 and cuRAND."""
        c = [_u32(v) for v in ctr]
        k0, k1 = _u32(key[0]), _u32(key[1])
        for r in range(10):
            # (typed constants: a Python int past int32's range is int64)
            p0 = binary("*", to_scalar(c[0], dt.uint64), to_scalar(_M0, dt.uint64))
            p1 = binary("*", to_scalar(c[2], dt.uint64), to_scalar(_M1, dt.uint64))
            c = [binary("^", binary("^", self._hi(p1), c[1]), k0), self._lo(p1),
                 binary("^", binary("^", self._hi(p0), c[3]), k1), self._lo(p0)]
            if r < 9:
                k0 = binary("+", k0, _u32(_W0))
                k1 = binary("+", k1, _u32(_W1))
        return c

    # -- draws ----------------------------------------------------------------
    def rng_rand(self) -> Scalar:
        """curand(&state): the next uint32 of the stream."""
        self._state("T.rng_rand")
        from .. import ir
        from ..dialects import scf

        arith = _arith()

        def eq(x: Scalar, k: int):
            return arith.CmpIOp(arith.CmpIPredicate.eq, x.value, _u32(k).value).result

        pos = self._get(_POS)
        outs = [self._get(_OUT + k) for k in range(4)]
        ret = outs[3]
        for k in (2, 1, 0):
            ret = Scalar(arith.SelectOp(eq(pos, k), outs[k].value, ret.value).result, dt.uint32)
        nxt = binary("+", pos, 1)
        if_op = scf.IfOp(eq(nxt, 4), [], has_else=True)
        with ir.InsertionPoint(if_op.then_block):
            # The 128-bit counter steps by one (the carry through its words).
            new, carry = [], _u32(1)
            for k in range(4):
                w = self._get(_CTR + k)
                s = binary("+", w, carry)
                new.append(s)
                carry = to_scalar(Scalar(arith.CmpIOp(arith.CmpIPredicate.ult, s.value,
                                                      w.value).result, dt.boolean), dt.uint32)
            for k, v in enumerate(new):
                self._put(_CTR + k, v)
            for k, v in enumerate(self._philox(new, [self._get(_KEY), self._get(_KEY + 1)])):
                self._put(_OUT + k, v)
            self._put(_POS, 0)
            scf.YieldOp([])
        with ir.InsertionPoint(if_op.else_block):
            self._put(_POS, nxt)
            scf.YieldOp([])
        return ret

    def rng_rand_float(self, bit: int = 32, dist: str = "uniform") -> Scalar:
        self._state("T.rng_rand_float")
        if bit not in (32, 64):
            raise self.error(f"T.rng_rand_float: bit must be 32 or 64, got {bit!r}")
        if dist not in ("uniform", "normal"):
            raise self.error(f"T.rng_rand_float: dist must be 'uniform' or 'normal', got "
                             f"{dist!r}")
        if dist == "uniform":
            if bit == 32:
                return self._unit32(self.rng_rand(), 2.0 ** -32, 2.0 ** -33)
            return self._unit64(self.rng_rand(), self.rng_rand(), 2.0 ** -53, 2.0 ** -54)
        return self._normal(bit)

    @staticmethod
    def _unit32(x, scale: float, half: float) -> Scalar:
        f = to_scalar(x, dt.float32)
        return binary("+", binary("*", f, to_scalar(scale, dt.float32)),
                      to_scalar(half, dt.float32))

    @staticmethod
    def _unit64(x, y, scale: float, half: float) -> Scalar:
        z = binary("^", to_scalar(x, dt.uint64),
                   binary("<<", to_scalar(y, dt.uint64), 21))
        f = to_scalar(z, dt.float64)
        return binary("+", binary("*", f, to_scalar(scale, dt.float64)),
                      to_scalar(half, dt.float64))

    def _normal(self, bit: int) -> Scalar:
        """Box-Muller with cuRAND's cache of the second value."""
        from .. import ir
        from ..dialects import scf
        from ..language import math as tmath

        arith = _arith()
        d = dt.float32 if bit == 32 else dt.float64
        flag_word = _FLAG if bit == 32 else _FLAG_D
        extra = self.rng[1] if bit == 32 else self.rng[2]
        cached = arith.CmpIOp(arith.CmpIPredicate.ne, self._get(flag_word).value,
                              _u32(0).value).result
        if_op = scf.IfOp(cached, [ir_type(d)], has_else=True)
        with ir.InsertionPoint(if_op.then_block):
            self._put(flag_word, 0)
            scf.YieldOp([to_scalar(extra[()].load(), d).value])
        with ir.InsertionPoint(if_op.else_block):
            if bit == 32:
                u = self._unit32(self.rng_rand(), 2.0 ** -32, 2.0 ** -33)
                v = self._unit32(self.rng_rand(), 2.0 ** -32 * 2 * math.pi,
                                 2.0 ** -32 * math.pi)
                angle = v
            else:
                u = self._unit64(self.rng_rand(), self.rng_rand(), 2.0 ** -53, 2.0 ** -54)
                v = self._unit64(self.rng_rand(), self.rng_rand(), 2.0 ** -52, 2.0 ** -53)
                angle = binary("*", v, to_scalar(math.pi, d))
            s = tmath.sqrt(binary("*", to_scalar(-2.0, d), tmath.log(u)))
            extra[()].store(binary("*", tmath.cos(angle), s))
            self._put(flag_word, 1)
            scf.YieldOp([to_scalar(binary("*", tmath.sin(angle), s), d).value])
        return Scalar(if_op.results[0], d)

