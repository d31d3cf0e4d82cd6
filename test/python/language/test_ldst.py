"""TileLang's explicit loads and stores of 32 to 256 bits (T.ldg32 ...
T.ldg256, T.stg*, T.lds*, T.sts*) and T.reinterpret of vector values: the
bits of consecutive elements as uint32 words (lane 0 the lowest address),
predicated global accesses (zeros / no store when the predicate is false).
CPU results vs NumPy on random inputs; code generation for every GPU; the
GPU run is marked gpu."""

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.errors import TileLangError

N = 64


def program():
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), H: T.Tensor((N,), "float16"),
             Y: T.Tensor((N,), "float32"), Z: T.Tensor((N,), "float16"),
             W: T.Tensor((N,), "float32"), S: T.Tensor((N,), "float32"),
             U: T.Tensor((N // 2,), "uint32")):
        with T.Kernel(N // 8, threads=32) as pid:
            base = pid * 8
            Y[base:base + 8] = T.reinterpret(T.ldg256(X[base:base + 8]), T.float32x8)
            v = T.ldg64(H[base:base + 4], pred=pid < 4)
            T.stg64(Z[base:base + 4], v)
            T.stg64(Z[base + 4:base + 8], T.ldg64(H[base + 4:base + 8]))
            T.stg32(W[base], T.ldg32(X[base + 1]), pred=pid % 2 == 0)
            sm = T.alloc_shared((8,), "float32")
            T.sts128(sm[0:4], T.lds128(X[base:base + 4]))
            T.stg128(S[base:base + 4], T.lds128(sm[0:4]))
            T.sts64(sm[4:6], T.ldg64(X[base + 4:base + 6]))
            T.sts32(sm[6], T.lds32(X[base + 6]))
            sm[7] = T.reinterpret(T.lds32(X[base + 7]), T.float32)
            T.stg256(S[base:base + 8], T.ldg256(sm[0:8]))
            # Two float16 values as one word, and a word split back.
            U[pid * 4] = T.ldg32(H[base:base + 2])
            pair = T.reinterpret(T.ldg32(H[base + 2:base + 4]), T.float16x2)
            Z[base + 2:base + 4] = pair

    return main


def reference(x, h):
    y = x.copy()
    z = np.zeros(N, np.float16)
    for p in range(N // 8):
        b = p * 8
        if p < 4:
            z[b:b + 4] = h[b:b + 4]
        z[b + 4:b + 8] = h[b + 4:b + 8]
        z[b + 2:b + 4] = h[b + 2:b + 4]
    w = np.zeros(N, np.float32)
    w[0::16] = x[1::16]
    u = np.zeros(N // 2, np.uint32)
    u[0::4] = h.view(np.uint32)[0::4]
    return y, z, w, x.copy(), u


def test_loads_and_stores_on_the_cpu(rng):
    x = rng.standard_normal(N).astype(np.float32)
    h = rng.standard_normal(N).astype(np.float16)
    outs = [np.zeros(N, np.float32), np.zeros(N, np.float16), np.zeros(N, np.float32),
            np.zeros(N, np.float32), np.zeros(N // 2, np.uint32)]
    tl.compile(program(), target="cpu")(x, h, *outs)
    for got, want in zip(outs, reference(x, h)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"])
def test_loads_and_stores_compile(target):
    assert tl.compile(program(), target=target).get_kernel_source()


def test_reinterpret_of_vectors_and_errors():
    def kernel(body_id):
        @T.prim_func
        def main(X: T.Tensor((8,), "float32"), H: T.Tensor((8,), "float16"),
                 Y: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                if body_id == 0:
                    Y[0] = T.reinterpret(T.ldg64(X[0:2]), T.float32)
                elif body_id == 1:
                    Y[0] = T.reinterpret(T.ldg32(X[0:2]), T.float32)
                elif body_id == 2:
                    T.stg64(Y[0:2], T.ldg32(X[0]))
                else:
                    Y[0] = T.reinterpret(T.ldg32(H[0, 1]), T.float32)

        return main

    for i, message in enumerate(("asks for 1", "has 2", "stores 64 bits",
                                 "rank 1 with 2 indices")):
        with pytest.raises((TileLangError, TypeError), match=message):
            tl.compile(kernel(i), target="cpu")


@pytest.mark.gpu
def test_loads_and_stores_on_gpu(rng):
    x = rng.standard_normal(N).astype(np.float32)
    h = rng.standard_normal(N).astype(np.float16)
    outs = [torch.zeros(N, device="cuda"), torch.zeros(N, dtype=torch.float16, device="cuda"),
            torch.zeros(N, device="cuda"), torch.zeros(N, device="cuda"),
            torch.zeros(N // 2, dtype=torch.uint32, device="cuda")]
    tl.compile(program(), target="cuda")(torch.as_tensor(x).cuda(), torch.as_tensor(h).cuda(),
                                         *outs)
    for got, want in zip(outs, reference(x, h)):
        np.testing.assert_array_equal(got.cpu().numpy(), want)
