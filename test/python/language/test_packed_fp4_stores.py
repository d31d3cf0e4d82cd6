"""Packed float4_e2m1fn elements (two a byte) written from T.Parallel loops
and seen through T.Fragment layouts and T.reshape, as deepseek-ai/TileKernels'
FP4 casts write them: each thread must own whole bytes (a store of one
element is a read-modify-write of its byte), which the layout inference
checks; fragment layouts are given per element and hold per byte. Numerics
on the CPU target (and the GPU), refusals compiled for sm_90a."""

import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.errors import TileLangError

# The 16 codes of float4_e2m1fn: sign bit 3, magnitude codes 0..7.
_MAGNITUDES = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=torch.float32)


def _values(codes):
    return torch.where(codes >= 8, -_MAGNITUDES[codes % 8], _MAGNITUDES[codes % 8])


def _bytes(codes):
    """The packed bytes of a (..., 2n) code tensor: element 2b in the low
    nibble of byte b."""
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).to(torch.uint8)


def _device(target):
    return "cuda" if target.startswith("cuda") else "cpu"


def _vector_layout(K, threads, vec):
    """TileKernels' per-token cast layout: thread t holds runs of `vec`
    consecutive elements of the row-major tile."""
    def layout(i, j):
        p = i * K + j
        return p // vec % threads, p // (vec * threads) * vec + p % vec
    return layout


def _shared_store(M, K, threads, vec):
    @T.prim_func
    def main(x: T.Tensor((M, K), "float32"), out: T.Tensor((M, K), "float4_e2m1fn")):
        with T.Kernel(1, threads=threads):
            xf = T.alloc_fragment((M, K), "float32")
            s = T.alloc_shared((M, K), "float4_e2m1fn")
            T.annotate_layout({xf: T.Fragment((M, K), forward_fn=_vector_layout(K, threads,
                                                                                 vec))})
            T.copy(x, xf)
            for i, j in T.Parallel(M, K):
                s[i, j] = xf[i, j] * 2.0
            T.copy(s, out)

    return main


@pytest.mark.parametrize("vec", [2, 8])
def test_parallel_stores_into_packed_shared_follow_the_fragment(vec, target):
    M, K, threads = 4, 256, 128
    codes = torch.randint(0, 16, (M, K))
    x = (_values(codes) / 2).to(_device(target))
    out = torch.zeros(M, K // 2, dtype=torch.uint8, device=_device(target))
    tl.compile(_shared_store(M, K, threads, vec), target=target)(
        x, out.view(torch.float4_e2m1fn_x2))
    torch.testing.assert_close(out.cpu(), _bytes(codes), rtol=0, atol=0)


def test_parallel_stores_splitting_a_byte_over_threads_are_refused():
    # vec=1: elements 0 and 1 of a row (one byte) on threads 0 and 1
    with pytest.raises(TileLangError, match=r"halves of one byte, on threads 0 and 1: they race"):
        tl.compile(_shared_store(4, 256, 128, 1), target="cuda:sm_90a")


@pytest.mark.parametrize("form", ["two variables", "row of the nibble"])
def test_parallel_store_index_without_a_byte_stepping_variable_is_refused(form):
    @T.prim_func
    def main(out: T.Tensor((4, 64), "float4_e2m1fn")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((4, 64), "float4_e2m1fn")
            for i, j in T.Parallel(4, 32):
                if form == "two variables":
                    s[i, j + i] = 1.0  # two variables step the nibble
                else:
                    s[j % 4, j] = 1.0  # the nibble's neighbour is in another row
            T.copy(s, out)

    with pytest.raises(TileLangError, match="halves of one byte race"):
        tl.compile(main, target="cuda:sm_90a")


def _fragment_amax(M, K, threads, vec, group):
    """TileKernels' per-token cast of an FP4 input: the packed fragment in
    the vector layout, its groups' absolute maxima through T.reshape, and
    the elements scaled into a packed shared tile."""
    @T.prim_func
    def main(x: T.Tensor((M, K), "float4_e2m1fn"), amax: T.Tensor((M, K // group), "float32"),
             out: T.Tensor((M, K), "float4_e2m1fn")):
        with T.Kernel(1, threads=threads):
            xf = T.alloc_fragment((M, K), "float4_e2m1fn")
            af = T.alloc_fragment((M, K // group), "float32")
            s = T.alloc_shared((M, K), "float4_e2m1fn")
            T.annotate_layout({xf: T.Fragment((M, K), forward_fn=_vector_layout(K, threads,
                                                                                 vec))})
            T.copy(x, xf)
            T.reduce_absmax(T.reshape(xf, [M, K // group, group]), af, dim=-1)
            T.copy(af, amax)
            for i, j in T.Parallel(M, K):
                s[i, j] = xf[i, j] * (6.0 / af[i, j // group])
            T.copy(s, out)

    return main


def test_packed_fragment_layout_reshape_and_reduce(target):
    M, K, threads, vec, group = 4, 256, 64, 8, 32
    codes = torch.randint(0, 16, (M, K))
    codes[:, ::group] = 7  # every group has a 6.0: the scale is 1
    codes[1, 32:64] = torch.randint(0, 6, (32,))
    codes[1, 32] = 5  # this group's maximum is 3.0: doubled
    dev = _device(target)
    x = _bytes(codes).to(dev).view(torch.float4_e2m1fn_x2)
    amax = torch.zeros(M, K // group, device=dev)
    out = torch.zeros(M, K // 2, dtype=torch.uint8, device=dev)
    tl.compile(_fragment_amax(M, K, threads, vec, group), target=target)(
        x, amax, out.view(torch.float4_e2m1fn_x2))
    vals = _values(codes)
    want_amax = vals.abs().reshape(M, K // group, group).amax(-1)
    torch.testing.assert_close(amax.cpu(), want_amax, rtol=0, atol=0)
    scaled = vals * (6.0 / want_amax).repeat_interleave(group, dim=1)
    assert set(scaled.abs().unique().tolist()) <= set(_MAGNITUDES.tolist())
    magnitude = (scaled.abs().unsqueeze(-1) == _MAGNITUDES).int().argmax(-1)
    want = magnitude + 8 * torch.signbit(scaled).long()  # -0 keeps its sign
    torch.testing.assert_close(out.cpu(), _bytes(want), rtol=0, atol=0)


def test_packed_fragment_layout_splitting_a_byte_is_refused():
    M, K = 4, 64

    @T.prim_func
    def main(x: T.Tensor((M, K), "float4_e2m1fn"), out: T.Tensor((M, K), "float4_e2m1fn")):
        with T.Kernel(1, threads=64):
            xf = T.alloc_fragment((M, K), "float4_e2m1fn")
            T.annotate_layout({xf: T.Fragment((M, K), forward_fn=lambda i, j: (j, i))})
            T.copy(x, xf)
            T.copy(xf, out)

    with pytest.raises(TileLangError, match=r"element \(0, 1\) is on thread 1, register 0"):
        tl.compile(main, target="cuda:sm_90a")


def test_reshape_of_packed_buffer_reaches_its_elements(target):
    @T.prim_func
    def main(x: T.Tensor((4, 64), "float4_e2m1fn"), out: T.Tensor((4, 64), "float4_e2m1fn")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((4, 64), "float4_e2m1fn")
            t = T.alloc_shared((4, 64), "float4_e2m1fn")
            T.copy(x, s)
            v = T.reshape(s, [8, 16, 2])
            w = T.reshape(t, [4, 32, 2])
            for a, b in T.Parallel(4, 32):  # each iteration writes a whole byte
                w[a, b, 0] = v[2 * a + b // 16, b % 16, 0]
                w[a, b, 1] = v[2 * a + b // 16, b % 16, 1] * -1.0
            T.copy(t, out)

    codes = torch.randint(0, 16, (4, 64))
    dev = _device(target)
    out = torch.zeros(4, 32, dtype=torch.uint8, device=dev)
    tl.compile(main, target=target)(_bytes(codes).to(dev).view(torch.float4_e2m1fn_x2),
                                    out.view(torch.float4_e2m1fn_x2))
    want = codes.clone()
    want[:, 1::2] ^= 8  # negated: the sign bit flips (zero becomes -0)
    torch.testing.assert_close(out.cpu(), _bytes(want), rtol=0, atol=0)


def test_reshape_of_packed_buffer_splitting_bytes_is_refused():
    @T.prim_func
    def main(out: T.Tensor((4, 64), "float4_e2m1fn")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((4, 64), "float4_e2m1fn")
            T.reshape(s, [256, 1])
            T.copy(s, out)

    with pytest.raises(TileLangError, match="the last dimension must be a multiple of 2"):
        tl.compile(main, target="cpu")


def test_float_limits_fold_exactly_in_constant_arithmetic(target):
    # TileKernels' FP4 clamp: T.max_value(T.float4_e2m1fn) * 2**-126 is
    # 6 * 2**-126 next to a float32 (TVM folds FloatImm arithmetic), not the
    # product rounded to float4 (zero).
    n = 128

    @T.prim_func
    def main(x: T.Tensor((n,), "float32"), out: T.Tensor((n,), "float32"),
             lim: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n):
            for i in T.Parallel(n):
                clamp = T.max_value("float4_e2m1fn") * (2 ** -126)
                out[i] = T.max(x[i], clamp) * (2.0 ** 126)
                lim[i] = T.max_value("float8_e4m3") / 2 + T.min_value("float16") + x[i]

    x = torch.rand(n)
    x[: n // 2] = 0
    dev = _device(target)
    out, lim = torch.zeros(n, device=dev), torch.zeros(n, device=dev)
    tl.compile(main, target=target)(x.to(dev), out, lim)
    want = torch.maximum(x * 2.0 ** 126, torch.tensor(6.0))
    torch.testing.assert_close(out.cpu(), want)
    torch.testing.assert_close(lim.cpu(), 224 - 65504 + x)


def test_reductions_and_scans_of_packed_elements_use_their_values(target):
    # (the packed bytes were reduced as integers before: a silent wrong result)
    M, K = 8, 64

    @T.prim_func
    def main(x: T.Tensor((M, K), "float4_e2m1fn"), mx: T.Tensor((M,), "float32"),
             sm: T.Tensor((M,), "float32"), cs: T.Tensor((M, K), "float32")):
        with T.Kernel(1, threads=64):
            s = T.alloc_shared((M, K), "float4_e2m1fn")
            f = T.alloc_fragment((M, K), "float4_e2m1fn")
            a = T.alloc_fragment((M,), "float32")
            b = T.alloc_fragment((M,), "float32")
            c = T.alloc_fragment((M, K), "float32")
            T.copy(x, s)
            T.copy(s, f)
            T.reduce_max(s, a, dim=1)
            T.reduce_sum(f, b, dim=1)
            T.copy(f, c)
            T.cumsum(c, dim=1)
            T.copy(a, mx)
            T.copy(b, sm)
            T.copy(c, cs)

    codes = torch.randint(0, 16, (M, K))
    dev = _device(target)
    mx, sm = torch.zeros(M, device=dev), torch.zeros(M, device=dev)
    cs = torch.zeros(M, K, device=dev)
    tl.compile(main, target=target)(_bytes(codes).to(dev).view(torch.float4_e2m1fn_x2),
                                    mx, sm, cs)
    vals = _values(codes)
    torch.testing.assert_close(mx.cpu(), vals.amax(1))
    torch.testing.assert_close(sm.cpu(), vals.sum(1))
    torch.testing.assert_close(cs.cpu(), vals.cumsum(1))


def test_reductions_of_packed_int4_use_their_values(target):
    M, K = 8, 64

    @T.prim_func
    def main(x: T.Tensor((M, K), "int4"), sm: T.Tensor((M,), "int32"),
             mx: T.Tensor((M,), "int32")):
        with T.Kernel(1, threads=64):
            f = T.alloc_fragment((M, K), "int4")
            a = T.alloc_fragment((M,), "int32")
            b = T.alloc_fragment((M,), "int32")
            T.copy(x, f)
            T.reduce_sum(f, a, dim=1)
            T.reduce_max(f, b, dim=1)
            T.copy(a, sm)
            T.copy(b, mx)

    codes = torch.randint(0, 16, (M, K))
    vals = torch.where(codes >= 8, codes - 16, codes)  # two's complement nibbles
    dev = _device(target)
    sm = torch.zeros(M, dtype=torch.int32, device=dev)
    mx = torch.zeros(M, dtype=torch.int32, device=dev)
    tl.compile(main, target=target)(_bytes(codes).view(torch.int8).to(dev), sm, mx)
    assert torch.equal(sm.cpu(), vals.sum(1).int())
    assert torch.equal(mx.cpu(), vals.amax(1).int())


def _loop_layout_fill(vec, M=4, K=64, threads=32):
    """A fill of a packed tile from a T.Parallel whose iterations a
    loop_layout places: runs of `vec` consecutive elements per thread."""
    @T.prim_func
    def main(x: T.Tensor((M, K), "float32"), out: T.Tensor((M, K), "float4_e2m1fn")):
        with T.Kernel(1, threads=threads):
            s = T.alloc_shared((M, K), "float4_e2m1fn")
            for i, j in T.Parallel(M, K, loop_layout=T.Fragment(
                    (M, K), forward_fn=_vector_layout(K, threads, vec))):
                s[i, j] = x[i, j]
            T.copy(s, out)

    return main


def test_loop_layout_places_the_iterations(target):
    # TileLang's T.Parallel(..., loop_layout=T.Fragment(...)): with runs of 2
    # each byte is one thread's; with runs of 1 the same loop is refused
    # (the layout is the program's, not replaced by the compiler's own).
    M, K = 4, 64
    codes = torch.randint(0, 16, (M, K))
    dev = _device(target)
    out = torch.zeros(M, K // 2, dtype=torch.uint8, device=dev)
    tl.compile(_loop_layout_fill(2), target=target)(_values(codes).to(dev),
                                                    out.view(torch.float4_e2m1fn_x2))
    torch.testing.assert_close(out.cpu(), _bytes(codes), rtol=0, atol=0)
    with pytest.raises(TileLangError, match="on threads 0 and 1: they race"):
        tl.compile(_loop_layout_fill(1), target="cuda:sm_90a")


def test_loop_layout_must_match_the_loop():
    @T.prim_func
    def main(x: T.Tensor((4, 64), "float32")):
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(4, 64, loop_layout=T.Fragment(
                    (4, 32), forward_fn=lambda i, j: (j, i))):
                x[i, j] = 1.0

    with pytest.raises(TileLangError, match=r"a T.Fragment of shape \[4, 32\] for a loop over "
                                            r"\[4, 64\]"):
        tl.compile(main, target="cpu")
