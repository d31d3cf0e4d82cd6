"""Random numbers: TileLang's T.rng_init / T.rng_rand / T.rng_rand_float
(cuRAND's device API, Philox4x32-10; see frontend/random.py for the
sequence, which every target reproduces)."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def rng_init(b, seed, seq=None, off=0, generator="curandStatePhilox4_32_10_t"):
    """T.rng_init(seed, seq=None, off=0, generator=...): cuRAND's
    curand_init(seed, subsequence, offset, &state) for the executing thread;
    `seq` defaults to the thread's index in the grid (tx + bx * threads).
    Later T.rng_rand / T.rng_rand_float draw from this state. The stream is
    Philox4x32-10's, bit for bit cuRAND's; the XORWOW and MRG32k3a
    generator names draw from the same stream (their distributions, not
    their exact sequences)."""
    b.rng_init(seed, seq, off, generator)


@builtin
def rng_rand(b):
    """T.rng_rand(): the next 32-bit unsigned random integer (curand)."""
    return b.rng_rand()


@builtin
def rng_rand_float(b, bit: int = 32, dist: str = "uniform"):
    """T.rng_rand_float(bit=32, dist="uniform"): a random float32 / float64
    (bit 32 / 64), uniform in (0, 1] or standard normal (Box-Muller, the
    second value kept for the next call), as cuRAND's curand_uniform /
    curand_normal (and their _double forms)."""
    return b.rng_rand_float(bit, dist)


__all__ = ["rng_init", "rng_rand", "rng_rand_float"]
