"""`tilelang.carver.arch.driver`: facts of the current GPU from the driver
(through torch). Each raises RuntimeError where no GPU is visible."""

from __future__ import annotations


def _props(device_id: int = 0):
    try:
        import torch
    except ImportError:
        raise RuntimeError("GPU facts need torch with CUDA or ROCm") from None
    if not torch.cuda.is_available():
        raise RuntimeError("no GPU is visible: tilelang.carver.arch needs a CUDA or ROCm device")
    return torch.cuda.get_device_properties(device_id)


def _scaled(value: int, format: str) -> int:
    scale = {"bytes": 1, "kb": 1024, "mb": 1024 * 1024}
    if format not in scale:
        raise ValueError(f"format must be bytes, kb or mb, got {format!r}")
    return value // scale[format]


def get_cuda_device_properties(device_id: int = 0):
    return _props(device_id)


def get_device_name(device_id: int = 0) -> str:
    return _props(device_id).name


def get_num_sms(device_id: int = 0) -> int:
    """The number of streaming multiprocessors (compute units on AMD)."""
    return int(_props(device_id).multi_processor_count)


def get_shared_memory_per_block(device_id: int = 0, format: str = "bytes") -> int:
    p = _props(device_id)
    return _scaled(int(getattr(p, "shared_memory_per_block", 48 * 1024)), format)


def get_max_dynamic_shared_size_bytes(device_id: int = 0, format: str = "bytes") -> int:
    """Shared memory one block may opt into."""
    p = _props(device_id)
    value = getattr(p, "shared_memory_per_block_optin", None) or \
        getattr(p, "shared_memory_per_block", 48 * 1024)
    return _scaled(int(value), format)


def get_registers_per_block(device_id: int = 0) -> int:
    return int(getattr(_props(device_id), "regs_per_multiprocessor", 65536))


def get_l2_cache_size(device_id: int = 0) -> int:
    return int(getattr(_props(device_id), "L2_cache_size", 0))


__all__ = ["get_cuda_device_properties", "get_device_name", "get_num_sms",
           "get_shared_memory_per_block", "get_max_dynamic_shared_size_bytes",
           "get_registers_per_block", "get_l2_cache_size"]
