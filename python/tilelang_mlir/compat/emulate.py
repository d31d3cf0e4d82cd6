"""Running TileLang programs written for a CUDA GPU on a machine without one.

Two modes, for developers of this package and for users who want to try a
program before they have a GPU:

- `cpu()`: CUDA tensors become CPU tensors, `torch.cuda` answers as an H100
  would, and every kernel whose target is "auto" or "cuda[:chip]" is compiled
  for the CPU target and runs there. A program's own checks then run to the
  end. Kernels that need a GPU (thread roles, mbarriers, warp-level
  primitives...) fail with the CPU backend's clear error.
- `dry()`: kernels compile for `cuda:sm_90a` (the whole NVVM pipeline and
  ptxas where present) and the first kernel launch raises `DryStop`.

    python -m tilelang_mlir.compat --cpu prog.py      # or --dry

Both patch torch and this package in the current process only; they are
not meant to be undone.
"""

from __future__ import annotations

import time
from typing import Optional

__all__ = ["cpu", "dry", "DryStop", "mode"]

_MODE: Optional[str] = None


class DryStop(BaseException):
    """Raised at the first kernel launch of a dry run (a BaseException, so
    that a program's `except Exception` does not swallow it)."""


def mode() -> Optional[str]:
    """"cpu", "dry" or None: which emulation this process runs under."""
    return _MODE


class _Props:
    """The properties torch reports for an H100 SXM."""

    name = "NVIDIA H100 80GB HBM3"
    multi_processor_count = 132
    total_memory = 85520809984
    major, minor = 9, 0
    shared_memory_per_block_optin = 232448
    shared_memory_per_multiprocessor = 233472
    regs_per_multiprocessor = 65536
    max_threads_per_multi_processor = 2048
    L2_cache_size = 52428800
    warp_size = 32
    gcnArchName = ""
    uuid = "emulated"


class _Event:
    """torch.cuda.Event on the host clock (the CPU runs synchronously)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self.t: Optional[float] = None

    def record(self, stream=None) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: "_Event") -> float:
        return (end.t - self.t) * 1e3


class _Stream:
    """torch.cuda.Stream on the host: work runs in order, at once."""

    cuda_stream = 0
    device = None

    def __init__(self, *a, **k):
        pass

    def synchronize(self) -> None:
        pass

    def wait_stream(self, other) -> None:
        pass

    def wait_event(self, event) -> None:
        pass

    def record_event(self, event=None):
        event = event or _Event()
        event.record()
        return event

    def query(self) -> bool:
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _NullDevice:
    """`with torch.cuda.device(i):` on the one emulated device."""

    def __init__(self, device=None):
        self.device = device

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _host(device):
    """The device a tensor factory gets: CUDA devices become the CPU."""
    if device is None:
        return None
    if isinstance(device, int):
        return "cpu"
    text = str(device)
    return "cpu" if text.startswith("cuda") else device


def _patch_torch() -> None:
    import functools

    import torch

    def wrap_factory(fn):
        @functools.wraps(fn)
        def inner(*a, **k):
            if "device" in k:
                k["device"] = _host(k["device"])
            return fn(*a, **k)
        return inner

    for name in ("randn", "rand", "randint", "zeros", "ones", "empty", "full", "arange",
                 "tensor", "randn_like", "rand_like", "randint_like", "zeros_like", "ones_like",
                 "empty_like", "full_like", "randperm", "linspace", "logspace", "as_tensor",
                 "eye", "normal", "empty_strided", "from_numpy", "tril_indices",
                 "triu_indices", "bernoulli", "multinomial"):
        if hasattr(torch, name):
            setattr(torch, name, wrap_factory(getattr(torch, name)))
    # Tensor methods that take a device.
    for name in ("new_empty", "new_zeros", "new_ones", "new_full", "new_tensor"):
        setattr(torch.Tensor, name, wrap_factory(getattr(torch.Tensor, name)))

    torch.Tensor.cuda = lambda self, *a, **k: self
    # Every tensor stands for one on the emulated GPU (libraries check
    # x.is_cuda before they launch).
    torch.Tensor.is_cuda = property(lambda self: True)
    orig_to = torch.Tensor.to
    orig_device = torch.device

    def to(self, *a, **k):
        a = tuple(_host(x) if isinstance(x, (str, orig_device, int)) and not isinstance(x, bool)
                  else x for x in a)
        if "device" in k:
            k["device"] = _host(k["device"])
        return orig_to(self, *a, **k)

    torch.Tensor.to = to

    class _DeviceMeta(type):
        def __instancecheck__(cls, obj):
            return isinstance(obj, orig_device)

        def __call__(cls, *a, **k):
            if a and isinstance(a[0], str) and a[0].startswith("cuda"):
                return orig_device("cpu")
            if a and isinstance(a[0], int):
                return orig_device("cpu")
            return orig_device(*a, **k)

    class device(metaclass=_DeviceMeta):  # noqa: N801 - torch's name
        pass

    torch.device = device

    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.is_initialized = lambda: True
    cuda.init = lambda: None
    cuda.synchronize = lambda *a, **k: None
    cuda.get_device_capability = lambda *a, **k: (_Props.major, _Props.minor)
    cuda.get_device_properties = lambda *a, **k: _Props()
    cuda.get_device_name = lambda *a, **k: _Props.name
    cuda.device_count = lambda: 1
    cuda.current_device = lambda: 0
    cuda.set_device = lambda *a, **k: None
    cuda.manual_seed = lambda *a, **k: None
    cuda.manual_seed_all = lambda *a, **k: None
    cuda.empty_cache = lambda: None
    cuda.Event = _Event
    cuda.Stream = _Stream
    cuda.current_stream = lambda *a, **k: _Stream()
    cuda.default_stream = lambda *a, **k: _Stream()
    cuda.stream = lambda s=None: (s or _Stream())
    cuda.memory_allocated = lambda *a, **k: 0
    cuda.max_memory_allocated = lambda *a, **k: 0
    cuda.reset_peak_memory_stats = lambda *a, **k: None
    cuda.mem_get_info = lambda *a, **k: (_Props.total_memory, _Props.total_memory)
    cuda.set_per_process_memory_fraction = lambda *a, **k: None
    cuda.memory_reserved = lambda *a, **k: 0
    cuda.max_memory_reserved = lambda *a, **k: 0
    cuda.device = _NullDevice
    # what torch.compile's tracing asks of the current device
    if not hasattr(torch._C, "_cuda_getDevice"):
        torch._C._cuda_getDevice = lambda: 0
    cuda.get_rng_state = lambda *a, **k: torch.get_rng_state()
    cuda.set_rng_state = lambda state, *a, **k: torch.set_rng_state(state)
    torch.version.hip = None
    base = torch.Generator

    class Generator(base):  # a CUDA generator is the CPU's
        def __new__(cls, device="cpu"):
            return base.__new__(cls, device=_host(device) or "cpu")

        def __init__(self, device="cpu"):
            pass

    torch.Generator = Generator


def _patch_testing() -> None:
    """tilelang.testing's hardware gates answer as on an sm_90 GPU."""
    from . import testing

    testing._cuda = lambda: True


def cpu() -> None:
    """CUDA tensors and kernels run on the CPU (see the module's docstring)."""
    global _MODE
    if _MODE == "cpu":
        return
    if _MODE is not None:
        raise RuntimeError(f"tilelang_mlir.compat.emulate: already in {_MODE!r} mode")
    _patch_torch()
    _patch_testing()
    from ..base import target as targets

    parse = targets.parse_target

    def parse_on_cpu(target):
        if isinstance(target, targets.Target):
            return targets.Target("cpu") if target.kind == "cuda" else target
        text = target.strip().lower() if isinstance(target, str) else target
        if target is None or text == "auto" or (isinstance(text, str) and text.startswith("cuda")):
            return targets.Target("cpu")
        return parse(target)

    targets.parse_target = parse_on_cpu
    _rebind(parse, parse_on_cpu)
    _MODE = "cpu"


def dry() -> None:
    """Kernels compile for sm_90a and the first launch raises DryStop."""
    global _MODE
    if _MODE == "dry":
        return
    if _MODE is not None:
        raise RuntimeError(f"tilelang_mlir.compat.emulate: already in {_MODE!r} mode")
    import os

    os.environ.setdefault("TILELANG_MLIR_CUDA_ARCH", "sm_90a")
    _patch_torch()
    _patch_testing()
    from ..runtime import args as argmod
    from ..runtime.kernel import Kernel

    def stop(self, *a, **k):
        raise DryStop(self.name)

    Kernel.__call__ = stop
    bind = argmod.bind

    def stop_bind(name, params, out_idx, args, device, *rest, **kw):
        if device == "cuda":
            raise DryStop(name)
        return bind(name, params, out_idx, args, device, *rest, **kw)

    argmod.bind = stop_bind
    _MODE = "dry"


def _rebind(old, new) -> None:
    """Points every loaded module of this package that imported `old` by
    name at `new`."""
    import sys

    for name, module in list(sys.modules.items()):
        if not name.startswith("tilelang_mlir") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if value is old:
                setattr(module, attr, new)
