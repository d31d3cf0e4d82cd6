"""tilelang_mlir.ops on unusual inputs (issue 44), on CPU tensors with
random values: tensors on different devices (a meta tensor among CPU ones
reached the fake implementation, which returned uninitialized memory),
zero-size inputs (torch's result, or an error naming the op and argument),
and the index tensors of the attention kernels (cu_seqlens, cache_seqlens,
block_table), checked on the host for CPU tensors and by device assertions
in the kernels (which the CPU target raises too)."""

import re
import subprocess
import sys

import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.ops as tlops
from tilelang_mlir.base.errors import DeviceAssertionError, TileLangError
from tilelang_mlir.kernels.attention import index_checks
from tilelang_mlir.kernels.attention import flash_attn_varlen as fav
from tilelang_mlir.kernels.attention import flash_decode as fd
from tilelang_mlir.kernels.attention import mla_decode as mla
from tilelang_mlir.testing import random_seed


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(random_seed())


def _calls(gen):
    """Valid arguments of every operator of tilelang_mlir.ops (its
    torch.library name -> the callable and its positional arguments),
    small, random."""
    def r(*shape, dtype=torch.float16):
        return torch.randn(*shape, generator=gen).to(dtype)

    x, w = r(4, 64), r(64)
    q4 = r(1, 2, 16, 32)
    lse4 = r(1, 2, 16, dtype=torch.float32)
    lens = [5, 11]
    cu = torch.tensor([0, 5, 16], dtype=torch.int32)
    qv = r(16, 2, 32)
    lsev = r(2, 16, dtype=torch.float32)
    dq_, dk, dv, dlens, dtable = fd.make_inputs(2, 4, 2, 64, lens, page_size=16)
    mq, mqpe, mkv, mtable, mlens = mla.make_inputs(1, 64, [70])
    wp, s = tlops.pack_w4a16(r(8, 256), 128)
    a8 = r(16, 32).to(torch.float8_e4m3fn)
    b8 = r(32, 16).to(torch.float8_e4m3fn)
    one = torch.ones(1)
    return {
        "rms_norm": (tlops.rms_norm, (x, w, 1e-6)),
        "rms_norm_bwd": (tlops.rms_norm_bwd, (x, w, r(4, 64), 1e-6)),
        "silu_mul": (tlops.silu_mul, (x, r(4, 64))),
        "silu_mul_bwd": (tlops.silu_mul_bwd, (x, r(4, 64), r(4, 64))),
        "gemm": (tlops.gemm, (r(16, 32), r(32, 16))),
        "gemm (float8)": (tlops.gemm, (a8, b8, one, one)),
        "flash_attn_fwd": (tlops.flash_attn_fwd, (q4, q4, q4, False)),
        "flash_attn_bwd": (tlops.flash_attn_bwd, (q4, q4, q4, q4, q4, lse4, False)),
        "flash_attn_varlen_fwd": (tlops.flash_attn_varlen_fwd, (qv, qv, qv, cu, 11, False)),
        "flash_attn_varlen_bwd": (tlops.flash_attn_varlen_bwd,
                                  (qv, qv, qv, qv, qv, lsev, cu, 11, False)),
        "flash_decode": (tlops.flash_decode, (dq_, dk, dv, dlens, dtable)),
        "mla_decode": (tlops.mla_decode, (mq, mqpe, mkv, mtable, mlens)),
        "w4a16_linear": (tlops.w4a16_linear, (r(3, 256), wp, s)),
    }


def _custom_ops():
    return {name for name in dir(tlops)
            if isinstance(getattr(tlops, name), torch._library.custom_ops.CustomOpDef)}


def test_the_table_covers_every_operator(gen):
    assert {name.split(" ")[0] for name in _calls(gen)} == _custom_ops()


def _meta(args, i):
    return tuple(a.to("meta") if j == i else a for j, a in enumerate(args))


def test_mixed_devices_are_refused_naming_the_op_and_argument(gen):
    """Each tensor argument of each operator on meta in turn, the others on
    the CPU: an error naming the operator and the argument, never a
    result."""
    for label, (op, args) in _calls(gen).items():
        names = list(op._opoverload._schema.arguments)
        tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        for i in tensors:
            other = names[tensors[1] if i == tensors[0] else tensors[0]].name
            with pytest.raises(TileLangError) as info:
                op(*_meta(args, i))
            message = str(info.value)
            assert f"tilelang.{op._name.removesuffix('_fwd')}: " in message, (label, message)
            # The first tensor argument's device is the reference.
            want = (f"{other} is on cpu but {names[i].name} on meta" if i == tensors[0]
                    else f"{names[i].name} is on meta but {other} on cpu")
            assert want in message, (label, message)


def test_meta_tensors_give_meta_results(gen):
    """All arguments on meta: the fake implementation's results, on meta,
    with the shapes and dtypes of the real ones."""
    for label, (op, args) in _calls(gen).items():
        if label in ("gemm (float8)",):
            continue  # (the real float8 kernel is compared on the GPU)
        meta = tuple(a.to("meta") if isinstance(a, torch.Tensor) else a for a in args)
        got = op(*meta)
        want = op(*args)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w_ in zip(got, want):
            assert g.device.type == "meta", label
            assert g.shape == w_.shape and g.dtype == w_.dtype, label


def test_cpu_and_cuda_tensors_are_refused():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device for the second tensor")
    x = torch.randn(4, 64).half()
    with pytest.raises(TileLangError, match=r"tilelang.silu_mul: up is on cuda:0 but gate on cpu"):
        tlops.silu_mul(x, x.cuda())


# --- zero-size inputs -----------------------------------------------------------------


def test_zero_size_inputs_follow_torch(gen):
    def r(*shape, dtype=torch.float16):
        return torch.randn(*shape, generator=gen).to(dtype)

    for x in (r(0, 64), r(3, 0, 64), r(4, 0)):
        w = r(x.shape[-1])
        y = tlops.rms_norm(x, w)
        assert y.shape == x.shape and y.dtype == x.dtype
        dx, dw = tlops.rms_norm_bwd(x, w, r(*x.shape), 1e-6)
        assert dx.shape == x.shape and torch.equal(dw, torch.zeros_like(w))
        assert tlops.silu_mul(x, r(*x.shape)).shape == x.shape
        assert [t.shape for t in tlops.silu_mul_bwd(x, x, x)] == [x.shape, x.shape]
    for M, N, K in ((0, 16, 32), (16, 0, 32), (16, 16, 0), (0, 0, 0)):
        a, b = r(M, K), r(K, N)
        got = tlops.gemm(a, b)
        torch.testing.assert_close(got, (a.float() @ b.float()).half())
        assert got.shape == (M, N) and got.dtype == torch.float16
        one = torch.ones(1)
        got8 = tlops.gemm(a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn), one, one)
        assert got8.shape == (M, N) and got8.dtype == torch.bfloat16 and not got8.any()
    for shape in ((0, 2, 16, 32), (1, 0, 16, 32), (1, 2, 0, 32)):
        q = r(*shape)
        o, lse = tlops.flash_attn_fwd(q, q, q, False)
        assert o.shape == q.shape and lse.shape == q.shape[:3] and lse.dtype == torch.float32
        grads = tlops.flash_attn_bwd(q, q, q, o, q, lse, False)
        assert all(g.shape == q.shape and not g.any() for g in grads)
    q = r(0, 2, 32)
    o, lse = tlops.flash_attn_varlen_fwd(q, q, q, torch.zeros(3, dtype=torch.int32), 4, False)
    assert o.shape == q.shape and lse.shape == (2, 0)
    dq_, dk, dv, lens, table = fd.make_inputs(2, 4, 2, 64, [5, 9], page_size=16)
    assert tlops.flash_decode(dq_[:0], dk, dv, lens[:0], table[:0]).shape == (0, 4, 64)
    mq, mqpe, mkv, mtable, mlens = mla.make_inputs(1, 64, [70])
    assert tlops.mla_decode(mq[:0], mqpe[:0], mkv, mtable[:0], mlens[:0]).shape == (0, 64, 512)
    wp, s = tlops.pack_w4a16(r(8, 256), 128)
    assert tlops.w4a16_linear(r(0, 256), wp, s).shape == (0, 8)
    assert tlops.w4a16_linear(r(3, 256), wp[:0], s[:0]).shape == (3, 0)


def test_zero_size_inputs_that_cannot_follow_torch_name_the_argument():
    q = torch.randn(1, 2, 16, 32).half()
    with pytest.raises(TileLangError, match=r"tilelang.flash_attn: k/v .* KV heads dividing"):
        tlops.flash_attn(q, q[:, :0], q[:, :0])  # 2 query heads, no KV head
    with pytest.raises(TileLangError, match=r"tilelang.flash_attn_varlen: cu_seqlens must be "
                                            r"int32 offsets \(batch \+ 1,\)"):
        tlops.flash_attn_varlen(q[0, :, :0], q[0, :, :0], q[0, :, :0],
                                torch.zeros(1, dtype=torch.int32), 4)


# --- index tensors ----------------------------------------------------------------------


def _offsets(gen, batch, max_len):
    lens = torch.randint(1, max_len + 1, (batch,), generator=gen)
    return torch.cat([torch.zeros(1, dtype=torch.long), lens.cumsum(0)]).to(torch.int32)


@pytest.mark.parametrize("case", ["not from 0", "decreasing", "short of the total",
                                  "past the total", "longer than max_seqlen"])
def test_bad_cu_seqlens_are_refused(case, gen):
    """CPU offsets on the host, with the index that is wrong; the check
    kernel's device assertions catch the same (what ops runs on a GPU,
    where the offsets are not read back)."""
    cu = _offsets(gen, 4, 24)
    total = int(cu[-1])
    max_seqlen = int((cu[1:] - cu[:-1]).max())
    q = torch.randn(total, 2, 32, generator=gen).half()
    b = int(torch.randint(1, 3, (), generator=gen))  # an inner offset
    if case == "not from 0":
        cu[0] = 1
        message, device = "cu_seqlens[0] is 1", "cu_seqlens[0] must be 0"
    elif case == "decreasing":
        cu[b] = cu[b + 1] + 1
        message, device = "cu_seqlens decreases", "cu_seqlens must not decrease"
    elif case == "short of the total":
        q = torch.cat([q, q[:3]])
        message = f"cu_seqlens ends at {total}, but q has {total + 3} tokens"
        device = "cu_seqlens[batch] must be the number of tokens"
    elif case == "past the total":
        q = q[:-1]
        message = f"cu_seqlens ends at {total}, but q has {total - 1} tokens"
        device = "cu_seqlens: an offset past the number of tokens"
    else:
        max_seqlen -= 1
        message = (f"a sequence of cu_seqlens has {max_seqlen + 1} tokens, more than "
                   f"max_seqlen = {max_seqlen}")
        device = "a sequence longer than max_seqlen"
    if case != "longer than max_seqlen":  # only the case's own check may fail
        max_seqlen = max(max_seqlen, int((cu[1:] - cu[:-1]).max()))
    with pytest.raises(TileLangError,
                       match=re.escape(f"tilelang.flash_attn_varlen: {message}")):
        tlops.flash_attn_varlen(q, q, q, cu, max_seqlen)
    # The same check as device assertions: the kernel ops launches first
    # where cu_seqlens is on a GPU (the attention kernel holds none).
    kernel = tl.compile(index_checks.check_offsets(4, max(max_seqlen, 1)), target="cpu")
    with pytest.raises(DeviceAssertionError, match=re.escape(device)):
        kernel(cu, q.shape[0])


def test_valid_cu_seqlens_with_empty_sequences(gen):
    """Empty sequences (repeated offsets) are valid: their rows are none."""
    cu = torch.tensor([0, 7, 7, 19], dtype=torch.int32)
    q, k, v = (torch.randn(19, 2, 32, generator=gen).half() for _ in range(3))
    o = tlops.flash_attn_varlen(q, k, v, cu, 12)
    ref, _ = fav.reference(q, k, v, cu)
    assert torch.allclose(o.double(), ref, atol=1e-2)


@pytest.mark.parametrize("case", ["negative page", "page past the cache", "length too long",
                                  "negative length"])
def test_bad_pages_and_lengths_are_refused(case, gen):
    """flash_decode and mla_decode: a page a sequence's tokens lie on
    outside the cache, or a length outside its pages, names the entry on
    the host (CPU tensors); the check kernel's device assertions catch the
    same (what ops runs on a GPU)."""
    q, k, v, lens, table = fd.make_inputs(2, 4, 2, 64, [40, 17], page_size=16)
    pages = k.shape[0]
    b = int(torch.randint(0, 2, (), generator=gen))
    used = (int(lens[b]) + 15) // 16
    i = int(torch.randint(0, used, (), generator=gen))
    if case == "negative page":
        table[b, i] = -int(torch.randint(1, 100, (), generator=gen))
        message, device = rf"block_table\[{b}, {i}\] = -\d+ is not a page", "block_table"
    elif case == "page past the cache":
        table[b, i] = pages + int(torch.randint(0, 100, (), generator=gen))
        message, device = rf"block_table\[{b}, {i}\] = \d+ is not a page", "block_table"
    elif case == "length too long":
        lens[b] = 3 * 16 + 1
        message, device = rf"cache_seqlens\[{b}\] = 49 is outside \[0, 48\]", "cache_seqlens"
    else:
        lens[b] = -1
        message, device = rf"cache_seqlens\[{b}\] = -1 is outside", "cache_seqlens"
    with pytest.raises(TileLangError, match=f"tilelang.flash_decode: {message}"):
        tlops.flash_decode(q, k, v, lens, table)
    kernel = tl.compile(index_checks.check_pages(2, table.shape[1], pages, 16), target="cpu")
    with pytest.raises(DeviceAssertionError, match=device):
        kernel(lens, table)


def test_unused_table_entries_are_not_checked(gen):
    """Entries past a sequence's last page (padding, often -1) are never
    read: the result is the reference's."""
    q, k, v, lens, table = fd.make_inputs(2, 4, 2, 64, [40, 17], page_size=16)
    table[1, 2:] = -1  # sequence 1 has 17 tokens: pages 0 and 1 only
    torch.testing.assert_close(tlops.flash_decode(q, k, v, lens, table).double(),
                               fd.reference(q, k, v, lens, table), atol=1e-2, rtol=1e-2)


def test_mla_decode_checks_its_pages(gen):
    q, q_pe, kv, table, lens = mla.make_inputs(2, 64, [70, 130])
    table[1, int(torch.randint(0, 3, (), generator=gen))] = kv.shape[0]
    with pytest.raises(TileLangError, match=r"tilelang.mla_decode: block_table\[1, \d\]"):
        tlops.mla_decode(q, q_pe, kv, table, lens)


# --- on the GPU: the device assertions ---------------------------------------------------

_GPU_CHILD = """
import torch
from tilelang_mlir import ops
from tilelang_mlir.kernels.attention import flash_decode as fd
q, k, v, lens, table = fd.make_inputs(2, 4, 2, 64, [40, 17], page_size=16, device="cuda")
table[0, 1] = {page}
ops.flash_decode(q, k, v, lens, table)
torch.cuda.synchronize()
print("no assertion")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("page", [-5, 1000000])
def test_gpu_block_table_outside_the_cache_is_a_device_assertion(page):
    """A device assertion ends the CUDA context: a process of its own."""
    proc = subprocess.run([sys.executable, "-c", _GPU_CHILD.format(page=page)],
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    if any(m in out for m in ("Torch not compiled with CUDA", "No CUDA GPUs are available",
                              "Found no NVIDIA driver")):
        pytest.skip("compiled for the GPU (AOT prepare: no GPU here)")
    assert proc.returncode != 0 and "no assertion" not in out, out[-2000:]
    assert "block_table: a page outside [0, 6)" in out or "device-side assert" in out \
        or "CUDA_ERROR_ASSERT" in out, out[-2000:]
