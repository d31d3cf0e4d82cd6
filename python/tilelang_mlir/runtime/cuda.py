"""Launching CUDA kernels (cubins) through the driver API of cuda-python.

Needs no MLIR: a cubin, its entry name, the launch configuration and the
signature are enough, which is what an ahead-of-time artifact holds (see
`runtime/artifact.py`). `cuda.bindings` and torch are imported only when a
kernel is first launched, so this module imports on machines without a GPU.

Kernel ABI (what the compiler emits): for each parameter of the tile program,
in order,

- a tensor of rank r is its memref descriptor expanded into 3 + 2r scalar
  parameters: allocated pointer (u64), aligned pointer (u64), offset (i64,
  always 0), r sizes (i64), r strides in elements (i64);
- a scalar is passed by value with its own C type (bool as uint8).

A kernel that copies with TMA (sm_90a) takes, before those, one 128-byte
`CUtensorMap` per tensor map of its launch (`.param .align 64 .b8 p[128]`,
`__grid_constant__`), in the order of the compiler's `tensormaps` list: each
entry names a tensor parameter, a box (extents in elements, outermost first)
and a swizzle (0, 32, 64 or 128 bytes). The runtime encodes the maps from the
bound tensors with `cuTensorMapEncodeTiled` at launch (out-of-range elements
read as zero), caching them by tensor address, shape and strides. What the
runtime cannot check is the kernel's side: a box's innermost start
coordinate must be a multiple of 16 bytes (an unaligned one traps with an
illegal instruction on the H200); the other coordinates may be anything,
negative or past the end.

Before the first launch the executable checks the parameter list the
launch packs against the kernel's own: from the PTX's `.entry` signature
when it has the PTX (at construction), and from the driver
(`cuFuncGetParamInfo`, CUDA 12.4+) when it loads the function. A kernel
that takes another list (a TMA kernel made without its tensor maps: a
128-byte `CUtensorMap` slot fed an 8-byte word; the code of another
kernel) raises a ValueError naming the kernel and the parameter; the
driver would read past the buffer of the launch.

The grid is 1 to 3 JSON expressions over the symbolic sizes and the integer
scalar arguments (see `evaluate_grid`); the launch goes to torch's current
stream and does not synchronize, unless `sync=True` or TILELANG_MLIR_SYNC=1
(then every launch is followed by a synchronization and an error check).
"""

from __future__ import annotations

import ctypes
import os
import re
import threading
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..base.grid import (GRID_OPS, check_grid, check_grid_expr, evaluate_grid,  # noqa: F401
                         expr_to_str)
from ..base.artifact import CompiledArtifact, Launch
from ..base.errors import NoCUDADevice  # noqa: F401 (imported from here by scripts and tests)
from ..base.signature import bind_dims, int_scalars_of, symbols_of


# Largest grid extents the hardware accepts (x, y, z).
_GRID_LIMITS = (2 ** 31 - 1, 65535, 65535)


# ---------------------------------------------------------------------------
# Driver helpers
# ---------------------------------------------------------------------------

_DRIVER = None


def _driver():
    """`cuda.bindings.driver`, imported on first use."""
    global _DRIVER
    if _DRIVER is None:
        try:
            from cuda.bindings import driver
        except ImportError as e:
            raise ImportError("running CUDA kernels needs cuda-python's driver bindings: "
                              "pip install cuda-bindings==13.0.3") from e
        _DRIVER = driver
    return _DRIVER


_NO_BINARY_FOR_GPU = 209  # CUDA_ERROR_NO_BINARY_FOR_GPU


def check_result(result: tuple, call: str, what: str = "") -> Any:
    """Checks the CUresult of a cuda-python driver call (the first element of
    the tuple it returns) and returns the remaining value(s).

    Raises RuntimeError naming the call and the CUresult, e.g.
    "cuLaunchKernel failed with CUDA_ERROR_INVALID_VALUE (invalid argument)".
    """
    err = result[0]
    if int(err) != 0:
        name = getattr(err, "name", None) or f"CUresult {int(err)}"
        detail = ""
        try:
            described = _driver().cuGetErrorString(err)
            if int(described[0]) == 0 and described[1]:
                detail = f" ({described[1].decode(errors='replace')})"
        except Exception:  # noqa: BLE001 (the description is a nicety)
            pass
        raise RuntimeError(f"{call} failed with {name}{detail}" + (f": {what}" if what else ""))
    if len(result) == 1:
        return None
    if len(result) == 2:
        return result[1]
    return result[1:]


_LOCK = threading.Lock()
# The context made current on this thread for a device (checked once per
# thread and device; torch keeps its primary context current).
_THREAD = threading.local()
_PRIMARY: Dict[int, Any] = {}  # device ordinal -> retained primary context
_CTX_DEVICE: Dict[int, int] = {}  # context handle -> device ordinal
_INITIALIZED = False


def current_context(name: str = "kernel") -> Tuple[Any, int]:
    """Makes sure a CUDA context of torch's current device is current on this
    thread (torch's primary context) and returns (context, device ordinal)."""
    driver = _driver()
    import torch

    global _INITIALIZED
    if not _INITIALIZED:
        if not torch.cuda.is_available():
            raise NoCUDADevice(f"{name} needs a CUDA GPU, but torch sees none (torch "
                               f"{torch.__version__}, torch.cuda.is_available() is False); "
                               "kernels compile without a GPU: save one with kernel.save(path) "
                               "and load it on a GPU machine with tl.load(path)")
        torch.cuda.init()
        check_result(driver.cuInit(0), "cuInit")
        _INITIALIZED = True
    device = torch.cuda.current_device()
    known = getattr(_THREAD, "context", None)
    if known is not None and known[1] == device:
        return known
    ctx = _current_context_of(driver, device)
    _THREAD.context = ctx
    return ctx


def _current_context_of(driver, device: int) -> Tuple[Any, int]:
    ctx = check_result(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
    handle = int(ctx) if ctx is not None else 0
    if handle:
        ctx_device = _CTX_DEVICE.get(handle)
        if ctx_device is None:
            ctx_device = int(check_result(driver.cuCtxGetDevice(), "cuCtxGetDevice"))
            _CTX_DEVICE[handle] = ctx_device
        if ctx_device == device:
            return ctx, device
    # No context, or one of another device: use the primary context of
    # torch's current device (the one torch itself uses).
    with _LOCK:
        primary = _PRIMARY.get(device)
        if primary is None:
            dev = check_result(driver.cuDeviceGet(device), "cuDeviceGet")
            primary = check_result(driver.cuDevicePrimaryCtxRetain(dev),
                                   "cuDevicePrimaryCtxRetain")
            _PRIMARY[device] = primary
            _CTX_DEVICE[int(primary)] = device
    check_result(driver.cuCtxSetCurrent(primary), "cuCtxSetCurrent")
    return primary, device


# ---------------------------------------------------------------------------
# Argument packing
# ---------------------------------------------------------------------------

SCALAR_CTYPES = {
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "bool": ctypes.c_uint8,
    "float32": ctypes.c_float, "float64": ctypes.c_double,
    "handle": ctypes.c_uint64,  # T.ptr: a device address
}

_U64 = (1 << 64) - 1


def scalar_ctype(param) -> type:
    """The C type a scalar parameter is passed with; TypeError if none."""
    ctype = SCALAR_CTYPES.get(param.dtype.name)
    if ctype is None:
        raise TypeError(f"scalar parameter {param.name!r} has type {param.dtype}, which CUDA "
                        f"kernels cannot take by value (supported: "
                        f"{', '.join(SCALAR_CTYPES)})")
    return ctype


# ---------------------------------------------------------------------------
# TMA tensor maps
# ---------------------------------------------------------------------------

TENSORMAP_BYTES = 128
TENSORMAP_ALIGN = 64
TENSORMAP_SWIZZLES = (0, 32, 64, 128)
TENSORMAP_MAX_RANK = 5
TENSORMAP_MAX_BOX = 256

# CUtensorMapDataType of a tensor's dtype. TMA copies bits: types without an
# enumerator of their own travel as the unsigned integer of their width
# (there is no INT8 or INT16 either).
TENSORMAP_DATA_TYPES = {
    "float16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
    "bfloat16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
    "float32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32",
    "tfloat32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32",  # (float32 storage: TMA moves the bits)
    "float64": "CU_TENSOR_MAP_DATA_TYPE_FLOAT64",
    "float8_e4m3": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
    "float8_e5m2": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
    "int8": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
    "uint8": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
    "bool": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
    "int16": "CU_TENSOR_MAP_DATA_TYPE_UINT16",
    "uint16": "CU_TENSOR_MAP_DATA_TYPE_UINT16",
    "int32": "CU_TENSOR_MAP_DATA_TYPE_INT32",
    "uint32": "CU_TENSOR_MAP_DATA_TYPE_UINT32",
    "int64": "CU_TENSOR_MAP_DATA_TYPE_INT64",
    "uint64": "CU_TENSOR_MAP_DATA_TYPE_UINT64",
}

_SWIZZLE_NAMES = {0: "CU_TENSOR_MAP_SWIZZLE_NONE", 32: "CU_TENSOR_MAP_SWIZZLE_32B",
                  64: "CU_TENSOR_MAP_SWIZZLE_64B", 128: "CU_TENSOR_MAP_SWIZZLE_128B"}


def element_bytes(dtype) -> int:
    """Bytes of one element in memory (bool is stored as a byte)."""
    return max(1, dtype.bits // 8)


def check_tensormaps(tensormaps: Any, params: Sequence, name: str = "kernel") -> List[dict]:
    """Checks the tensor maps of a launch against the kernel's parameters
    and returns them normalized (`{"param": int, "box": [int, ...],
    "swizzle": int}` each); raises ValueError naming the kernel and the map.

    Each map names a tensor parameter (`param`, its index), a box of one
    extent per dimension of that tensor, outermost first, each 1 to 256
    elements, and a swizzle of 0, 32, 64 or 128 bytes. TMA also needs the
    box's innermost extent to span a multiple of 16 bytes and, swizzled, no
    more than the swizzle's bytes.
    """
    if not isinstance(tensormaps, (list, tuple)):
        raise ValueError(f"kernel {name!r}: tensormaps must be a list, got {tensormaps!r}")
    out = []
    for i, m in enumerate(tensormaps):
        what = f"kernel {name!r}: tensor map {i} ({m!r})"
        if not isinstance(m, dict) or set(m) != {"param", "box", "swizzle"}:
            raise ValueError(f"{what} must be an object with exactly the keys 'param', 'box' "
                             "and 'swizzle'")
        index, box, swizzle = m["param"], m["box"], m["swizzle"]
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(params):
            raise ValueError(f"{what}: 'param' must be the index of a parameter (0 to "
                             f"{len(params) - 1}), got {index!r}")
        p = params[index]
        what = f"kernel {name!r}: tensor map {i} of argument {p.name!r}"
        if p.kind != "tensor":
            raise ValueError(f"{what}: {p.name!r} is a scalar; tensor maps describe tensors")
        rank = len(p.shape)
        if not 1 <= rank <= TENSORMAP_MAX_RANK:
            raise ValueError(f"{what}: TMA handles tensors of rank 1 to {TENSORMAP_MAX_RANK}, "
                             f"{p.name!r} has rank {rank}")
        if p.dtype.name not in TENSORMAP_DATA_TYPES:
            raise ValueError(f"{what}: TMA cannot copy {p.dtype} elements")
        if (not isinstance(box, (list, tuple))
                or any(isinstance(b, bool) or not isinstance(b, int) for b in box)):
            raise ValueError(f"{what}: 'box' must be a list of ints, got {box!r}")
        if len(box) != rank:
            raise ValueError(f"{what}: the box {list(box)} has {len(box)} extent(s), but "
                             f"{p.name!r} has rank {rank}")
        if any(not 1 <= b <= TENSORMAP_MAX_BOX for b in box):
            raise ValueError(f"{what}: every box extent must be 1 to {TENSORMAP_MAX_BOX} "
                             f"elements, got {list(box)}")
        if isinstance(swizzle, bool) or swizzle not in TENSORMAP_SWIZZLES:
            raise ValueError(f"{what}: 'swizzle' must be one of 0, 32, 64, 128 (bytes), got "
                             f"{swizzle!r}")
        inner = box[-1] * element_bytes(p.dtype)
        if inner % 16:
            raise ValueError(f"{what}: the box's innermost extent spans {box[-1]} x "
                             f"{element_bytes(p.dtype)} = {inner} bytes; TMA needs a multiple "
                             "of 16 bytes")
        if swizzle and inner > swizzle:
            raise ValueError(f"{what}: the box's innermost extent spans {inner} bytes, more "
                             f"than the {swizzle}-byte swizzle span")
        out.append({"param": index, "box": list(box), "swizzle": swizzle})
    return out


class TensorMapEncoding(NamedTuple):
    """The arguments of `cuTensorMapEncodeTiled` for one tensor map.

    Enumerators are given by name (`CUtensorMapDataType`, ...), dimensions
    innermost first, as the driver takes them.
    """

    data_type: str
    rank: int
    address: int
    global_dim: Tuple[int, ...]  # elements, innermost first
    global_strides: Tuple[int, ...]  # bytes, of dimensions 1 .. rank-1 (innermost first)
    box_dim: Tuple[int, ...]  # elements, innermost first
    element_strides: Tuple[int, ...]
    interleave: str
    swizzle: str
    l2_promotion: str
    oob_fill: str


_MAX_GLOBAL_DIM = 2 ** 32
_MAX_GLOBAL_STRIDE = 2 ** 40


def tensormap_encoding(kernel_name: str, param, tensor, box: Sequence[int],
                       swizzle: int) -> TensorMapEncoding:
    """The encoding of a tensor map of `tensor` (a BoundTensor of `param`)
    with `box` (outermost first) and `swizzle` (bytes), checked against
    TMA's rules; raises ValueError naming the kernel, the argument and the
    rule. Pure: needs neither a GPU nor cuda-python.

    The rules: the tensor's address is 16-byte aligned, its innermost
    dimension is contiguous, every other stride is a multiple of 16 bytes
    (below 2^40), and each dimension is 1 to 2^32 elements. The stride of a
    dimension of size 1 is never stepped; it is encoded as the span of the
    dimensions inside it rounded up to 16 bytes.
    """
    dtype = param.dtype
    size = element_bytes(dtype)
    shape, strides = tuple(tensor.shape), tuple(tensor.strides)
    rank = len(shape)

    def fail(rule: str):
        return ValueError(f"argument {param.name!r} of kernel {kernel_name!r} cannot be "
                          f"copied with TMA: {rule}")

    if rank != len(box):
        raise fail(f"the tensor has rank {rank}, but the tensor map's box {list(box)} has "
                   f"{len(box)} extent(s)")
    address = tensor.data_ptr
    if address % 16:
        raise fail(f"its address {address:#x} is not 16-byte aligned (TMA needs 16-byte "
                   "aligned tensors; a view starting inside a tensor can break this)")
    for d, extent in enumerate(shape):
        if not 1 <= extent <= _MAX_GLOBAL_DIM:
            raise fail(f"dimension {d} has size {extent}; TMA needs sizes of 1 to 2^32")
    if shape[-1] > 1 and strides[-1] != 1:
        raise fail(f"its innermost dimension has stride {strides[-1]}; TMA needs it "
                   "contiguous (stride 1)")
    byte_strides: List[int] = []  # of dimensions rank-2 .. 0
    span = shape[-1] * size  # bytes spanned by the dimensions inside the current one
    for d in range(rank - 2, -1, -1):
        if shape[d] == 1:
            stride = -(-span // 16) * 16
        else:
            stride = strides[d] * size
            if stride <= 0 or stride % 16 or stride >= _MAX_GLOBAL_STRIDE:
                hint = ""
                if d == rank - 2 and strides[d] == shape[-1]:
                    hint = (f" (rows of a {dtype} tensor need a length that is a multiple of "
                            f"{max(1, 16 // size)} elements; this one has {shape[-1]})")
                raise fail(f"dimension {d} has a stride of {strides[d]} elements = {stride} "
                           f"bytes; TMA needs every stride to be a positive multiple of 16 "
                           f"bytes below 2^40{hint}")
        byte_strides.append(stride)
        span = stride * shape[d]
    return TensorMapEncoding(
        data_type=TENSORMAP_DATA_TYPES[dtype.name], rank=rank, address=address,
        global_dim=shape[::-1], global_strides=tuple(byte_strides),
        box_dim=tuple(box)[::-1], element_strides=(1,) * rank,
        interleave="CU_TENSOR_MAP_INTERLEAVE_NONE", swizzle=_SWIZZLE_NAMES[swizzle],
        l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_L2_256B",
        oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")


class TensorMap:
    """128 bytes of an encoded CUtensorMap in host memory at a 64-byte
    aligned `address` (what a launch's parameter slot points at)."""

    __slots__ = ("_storage", "address")

    def __init__(self, data: Optional[bytes] = None):
        self._storage = (ctypes.c_uint8 * (TENSORMAP_BYTES + TENSORMAP_ALIGN - 1))()
        base = ctypes.addressof(self._storage)
        self.address = (base + TENSORMAP_ALIGN - 1) & ~(TENSORMAP_ALIGN - 1)
        if data is not None:
            if len(data) != TENSORMAP_BYTES:
                raise ValueError(f"a tensor map has {TENSORMAP_BYTES} bytes, got {len(data)}")
            ctypes.memmove(self.address, bytes(data), TENSORMAP_BYTES)

    def raw(self) -> bytes:
        """The 128 bytes."""
        return ctypes.string_at(self.address, TENSORMAP_BYTES)


def encode_tensormap(enc: TensorMapEncoding, what: str = "") -> TensorMap:
    """Encodes a tensor map with the driver's `cuTensorMapEncodeTiled`."""
    driver = _driver()
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t  # the lists take no plain ints
    result = driver.cuTensorMapEncodeTiled(
        getattr(driver.CUtensorMapDataType, enc.data_type), enc.rank, enc.address,
        # (A rank-1 map has no strides; the driver refuses an empty list.)
        [u64(d) for d in enc.global_dim], [u64(s) for s in enc.global_strides] or [u64(16)],
        [u32(b) for b in enc.box_dim], [u32(e) for e in enc.element_strides],
        getattr(driver.CUtensorMapInterleave, enc.interleave),
        getattr(driver.CUtensorMapSwizzle, enc.swizzle),
        getattr(driver.CUtensorMapL2promotion, enc.l2_promotion),
        getattr(driver.CUtensorMapFloatOOBfill, enc.oob_fill))
    encoded = check_result(result, "cuTensorMapEncodeTiled", what or repr(enc))
    tmap = TensorMap()
    ctypes.memmove(tmap.address, encoded.getPtr(), TENSORMAP_BYTES)
    return tmap


# Encoded maps by (address, shape, strides, box, swizzle, dtype): repeated
# launches on the same tensors encode nothing. Cleared when full.
_TENSORMAP_CACHE: Dict[tuple, TensorMap] = {}
TENSORMAP_CACHE_SIZE = 64


def pack_arguments(params: Sequence, values: Sequence,
                   tensormaps: Sequence = ()) -> Tuple[ctypes.Array, list]:
    """Builds the `kernelParams` array of a launch (one `void*` per kernel
    parameter, each pointing at the value) following the kernel ABI: first
    the encoded tensor maps (`TensorMap`s, 128 bytes each), then per
    parameter a tensor's memref descriptor flattened (allocated and aligned
    pointer, offset 0, sizes, strides, each 64 bits) or a scalar's C value
    (in the low bytes of a 64-bit word).

    Returns (array, keep): `keep` holds the storage the pointers point into;
    both must live until the launch call returns.
    """
    words: List[int] = []
    for p, v in zip(params, values):
        if p.kind == "tensor":
            words += (v.data_ptr, v.data_ptr, 0)
            words += v.shape
            words += v.strides
        else:
            words.append(int.from_bytes(bytes(scalar_ctype(p)(v)), "little"))
    n = len(words)
    storage = (ctypes.c_uint64 * max(n, 1))(*[w & _U64 for w in words])
    base = ctypes.addressof(storage)
    m = len(tensormaps)
    array = (ctypes.c_void_p * max(m + n, 1))()
    array[:m] = [t.address for t in tensormaps]
    array[m:m + n] = range(base, base + 8 * n, 8)  # every word is one parameter
    return array, [storage, tensormaps]


# ---------------------------------------------------------------------------
# The kernel's parameter list against the launch's
# ---------------------------------------------------------------------------

class PackedParam(NamedTuple):
    """One kernel parameter as a launch packs it: what it is, and its bytes."""

    what: str
    size: int


def packed_params(params: Sequence, tensormaps: Sequence[dict] = ()) -> List[PackedParam]:
    """The kernel parameters `pack_arguments` (and the native launcher) pass
    for `params` with these (checked) tensor maps, in order."""
    out = [PackedParam(f"tensor map {i} of argument {params[m['param']].name!r} (a TMA "
                       "descriptor)", TENSORMAP_BYTES) for i, m in enumerate(tensormaps)]
    for p in params:
        if p.kind == "tensor":
            rank = len(p.shape)
            parts = (["allocated pointer", "aligned pointer", "offset"]
                     + [f"size {d}" for d in range(rank)]
                     + [f"stride {d}" for d in range(rank)])
            out += [PackedParam(f"the {part} of tensor argument {p.name!r}", 8)
                    for part in parts]
        else:
            out.append(PackedParam(f"scalar argument {p.name!r} ({p.dtype})",
                                   ctypes.sizeof(scalar_ctype(p))))
    return out


# One parameter of a PTX `.entry`: `.param [.align N] .TYPE [.ptr [.SPACE] [.align N]] name[[N]]`.
_PTX_PARAM = re.compile(r"\.param\b(?P<attrs>[^,]*?)\s+(?P<name>[A-Za-z_$%][\w$]*)"
                        r"\s*(?:\[\s*(?P<count>\d+)\s*\])?\s*$")
_PTX_TYPE = re.compile(r"\.(?:b|u|s|f|bf)(8|16|32|64)\b")


def ptx_param_sizes(ptx: str, entry: str) -> Optional[List[int]]:
    """The sizes in bytes of the parameters of `.entry entry(...)` in the
    PTX text `ptx`; None where it has no such entry or a parameter this
    reading does not understand (then nothing is checked from it)."""
    m = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*(\(|\{|\.)", ptx)
    if m is None:
        return None
    if m.group(1) != "(":
        return []
    close = ptx.find(")", m.end())
    if close < 0:
        return None
    body = ptx[m.end():close].strip()
    sizes: List[int] = []
    for item in body.split(",") if body else ():
        p = _PTX_PARAM.fullmatch(item.strip())
        if p is None:
            return None
        types = _PTX_TYPE.findall(p.group("attrs"))
        if len(types) != 1:
            return None
        sizes.append(int(types[0]) // 8 * int(p.group("count") or 1))
    return sizes


_MAX_KERNEL_PARAMS = 32764  # the bytes of parameters a kernel may take bound their count


def driver_param_sizes(driver, fn) -> Optional[List[int]]:
    """The sizes in bytes of the parameters of the loaded function `fn`, from
    the driver (`cuFuncGetParamInfo`, CUDA 12.4+: CUDA_ERROR_INVALID_VALUE
    past the last); None where the driver or the bindings lack it."""
    get = getattr(driver, "cuFuncGetParamInfo", None)
    if get is None:
        return None
    invalid = int(driver.CUresult.CUDA_ERROR_INVALID_VALUE)
    sizes: List[int] = []
    try:
        for i in range(_MAX_KERNEL_PARAMS):
            result = get(fn, i)
            code = int(result[0])
            if code == invalid:
                return sizes
            if code != 0:
                return None  # (CUDA_ERROR_NOT_SUPPORTED and the like: unchecked)
            sizes.append(int(result[2]))
    except Exception:  # noqa: BLE001 (an older driver: the entry point is missing)
        return None
    return None


def _describe_size(size: int) -> str:
    return f"{size} bytes" + (" (a TMA descriptor)" if size == TENSORMAP_BYTES else "")


def check_param_sizes(name: str, entry: str, sizes: Sequence[int],
                      packed: Sequence[PackedParam], source: str) -> None:
    """Raises ValueError unless the kernel's parameters (`sizes`, in bytes,
    read from `source`) are the ones a launch packs (`packed_params`): the
    driver copies each parameter's size from the launch's slot, so a
    larger one reads past the launch's buffer."""
    sizes = list(sizes)
    if len(sizes) == len(packed) and all(s == p.size for s, p in zip(sizes, packed)):
        return
    what = f"kernel {name!r} (entry {entry!r}, parameters from {source})"
    problems = []
    if len(sizes) != len(packed):
        problems.append(f"expects {len(sizes)} parameters, but the call packs {len(packed)}")
    for i, (s, p) in enumerate(zip(sizes, packed)):
        if s != p.size:
            problems.append(f"parameter {i} is {_describe_size(s)}, the call packs "
                            f"{p.size} there ({p.what})")
            break
    else:
        i = min(len(sizes), len(packed))
        if len(sizes) > i:
            problems.append(f"parameter {i} ({_describe_size(sizes[i])}) gets nothing")
        elif len(packed) > i:
            problems.append(f"it has no parameter {i} for {packed[i].what}")
    maps = sum(1 for s in sizes if s == TENSORMAP_BYTES)
    given = sum(1 for p in packed if p.size == TENSORMAP_BYTES)
    hint = ""
    if maps != given:
        hint = (f"; the kernel takes {maps} TMA descriptor(s) but the launch has {given} "
                "tensor map(s): give the compiled kernel's `tensormaps` (kernel.tensormaps; "
                "make_kernel(..., tensormaps=...))")
    raise ValueError(f"{what} {'; '.join(problems)}{hint} (its code is not the code of this "
                     "signature: the driver would read past the launch's parameters)")


def _ptx_text(code: bytes) -> Optional[str]:
    """`code` as PTX text where it is PTX (what the driver also loads as a
    "cubin"), else None (an ELF cubin, a fat binary)."""
    if code[:4] in (b"\x7fELF", b"\x50\xed\x55\xba") or b".entry" not in code:
        return None
    return code.rstrip(b"\0").decode(errors="replace")


_LAUNCH = None


def _libcuda_launch():
    """cuLaunchKernel of libcuda through ctypes (a few microseconds cheaper
    per launch than the cuda-python wrapper); None where libcuda cannot be
    opened, and the cuda-python call is used."""
    global _LAUNCH
    if _LAUNCH is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            fn = lib.cuLaunchKernel
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
            _LAUNCH = fn
        except (OSError, AttributeError):
            _LAUNCH = False
    return _LAUNCH or None


def _current_stream(device: int) -> int:
    """The handle of torch's current stream on `device`."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device)
    return torch.cuda.current_stream(device).cuda_stream


def _sync_from_env() -> bool:
    return os.environ.get("TILELANG_MLIR_SYNC", "") not in ("", "0")


# Read once, at import (launches do not look at the environment).
_SYNC_ENV = _sync_from_env()


# ---------------------------------------------------------------------------
# The executable
# ---------------------------------------------------------------------------

_DEFAULT_SHARED_LIMIT = 48 * 1024


class CUDAExecutable:
    """A cubin, its entry point and launch configuration.

    `grid` is a list of 1 to 3 grid expressions, `block` up to 3 ints,
    `shared_bytes` the dynamic shared memory in bytes, `tensormaps` the TMA
    tensor maps the kernel takes before its parameters (see
    `check_tensormaps`). The module is loaded lazily, once per CUDA context
    (one per device), and stays loaded for the life of the executable.
    """

    def __init__(self, cubin: bytes, entry: str, block: Sequence[int], shared_bytes: int,
                 grid: Sequence[dict], params: Sequence, *, name: Optional[str] = None,
                 sync: Optional[bool] = None, tensormaps: Sequence[dict] = (),
                 features: Optional[dict] = None, ptx: Optional[str] = None):
        if not isinstance(cubin, (bytes, bytearray)) or not cubin:
            raise TypeError(f"cubin must be non-empty bytes, got {type(cubin).__name__}")
        if not isinstance(entry, str) or not entry:
            raise TypeError(f"entry must be a kernel name, got {entry!r}")
        block = list(block) if isinstance(block, (list, tuple)) else block
        if (not isinstance(block, list) or not 1 <= len(block) <= 3
                or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in block)):
            raise ValueError(f"block must be 1 to 3 positive ints, got {block!r}")
        if isinstance(shared_bytes, bool) or not isinstance(shared_bytes, int) or shared_bytes < 0:
            raise ValueError(f"shared_bytes must be a non-negative int, got {shared_bytes!r}")
        self.params = list(params)
        check_grid(grid, symbols_of(self.params), int_scalars_of(self.params))
        for p in self.params:
            if p.kind == "scalar":
                scalar_ctype(p)  # TypeError now rather than at the first launch
        self.cubin = bytes(cubin)  # kept alive for the module
        # The PTX the cubin was assembled from: what a GPU of a later chip
        # than the cubin's loads instead (see _function).
        self.ptx = ptx or None
        self.entry = entry
        self.name = name or entry
        self.block = tuple(block) + (1,) * (3 - len(block))
        self.shared_bytes = shared_bytes
        self.grid = [dict(e) for e in grid]
        self.sync = sync
        self.tensormaps = check_tensormaps(tensormaps, self.params, self.name)
        # (parameter index, box, swizzle, dtype name) of each map, for launches.
        self._maps = tuple((m["param"], tuple(m["box"]), m["swizzle"],
                            self.params[m["param"]].dtype.name) for m in self.tensormaps)
        # The parameters a launch packs, checked against the kernel's own:
        # here from its PTX, at the first load from the driver (the cubin
        # may be another kernel's code than the PTX).
        self._packed = packed_params(self.params, self.tensormaps)
        self._driver_checked = False
        source = self.ptx or _ptx_text(self.cubin)
        sizes = ptx_param_sizes(source, entry) if source else None
        if sizes is not None:
            check_param_sizes(self.name, entry, sizes, self._packed, "its PTX")
        # A grid of constants is evaluated once.
        self._static_grid = (evaluate_grid(self.grid, {}, {})
                             if all("const" in e for e in self.grid) else None)
        self._uses_sms = "'sms'" in repr(self.grid)
        self._sms: Dict[int, int] = {}  # device -> multiprocessors
        self._what = f"kernel {self.name!r}"
        self._functions: Dict[int, Any] = {}  # context handle -> CUfunction
        self._handles: Dict[int, int] = {}  # context handle -> CUfunction as an int
        self._modules: Dict[int, Any] = {}
        self._lock = threading.Lock()
        # How it is launched (base/artifact.py's Launch.features): through
        # cuLaunchKernelEx with launch attributes when any is asked for.
        features = dict(features or {})
        self.features = features
        self.cooperative = bool(features.get("cooperative"))
        self.pdl = bool(features.get("pdl"))
        self.l2_hit_ratio = tuple(features.get("l2_hit_ratio", ()))
        for index, ratio in self.l2_hit_ratio:
            if not 0 <= index < len(self.params) or self.params[index].kind != "tensor" \
                    or not 0.0 <= ratio <= 1.0:
                raise ValueError(f"kernel {self.name!r}: l2_hit_ratio ({index}, {ratio}) "
                                 "must name a tensor parameter and a ratio in [0, 1]")
        self._extended = self.cooperative or self.pdl or bool(self.l2_hit_ratio)

    def __repr__(self) -> str:
        grid = ", ".join(expr_to_str(e) for e in self.grid)
        maps = f" tensormaps={len(self.tensormaps)}" if self.tensormaps else ""
        return (f"<CUDAExecutable {self.entry} grid=({grid}) block={self.block} "
                f"shared={self.shared_bytes}{maps}>")

    def encode_tensormaps(self, params: Sequence, values: Sequence) -> List[TensorMap]:
        """The kernel's tensor maps of a launch with these argument values,
        encoded (or taken from the cache of encoded maps)."""
        return [self.encoded_map(i, params, values[m[0]]) for i, m in enumerate(self._maps)]

    def encoded_map(self, i: int, params: Sequence, v) -> TensorMap:
        """Tensor map `i` of the kernel for the bound tensor `v`, encoded (or
        taken from the cache of encoded maps)."""
        index, box, swizzle, dtype = self._maps[i]
        cache = _TENSORMAP_CACHE
        key = (v.data_ptr, tuple(v.shape), tuple(v.strides), box, swizzle, dtype)
        tmap = cache.get(key)
        if tmap is None:
            p = params[index]
            enc = tensormap_encoding(self.name, p, v, box, swizzle)
            tmap = encode_tensormap(enc, f"the tensor map of argument {p.name!r} of "
                                         f"kernel {self.name!r} ({enc})")
            if len(cache) >= TENSORMAP_CACHE_SIZE:
                cache.clear()
            cache[key] = tmap
        return tmap

    def native_launch(self):
        """What the native launcher needs of this kernel (runtime/launcher.py):
        (grid expressions, block, dynamic shared bytes, the parameter index
        of each tensor map); None when every launch must synchronize, or
        when the kernel is launched with attributes (cooperative, PDL, an L2
        access policy window: Launch.features) -- the Python path does
        those (`_launch_ex`, with the cooperative grid's residency check)."""
        if self.sync if self.sync is not None else _SYNC_ENV:
            return None
        if self._extended:
            return None
        return self.grid, self.block, self.shared_bytes, [m[0] for m in self._maps]

    def launch_failed(self, code: int, grid, call: str = "cuLaunchKernel") -> None:
        """Raises the error of a launch that returned CUresult `code`."""
        check_result((_driver().CUresult(code),), call,
                     f"kernel {self.name!r} with grid {grid}, block {self.block}, "
                     f"{self.shared_bytes} bytes of dynamic shared memory")

    def launch_grid(self, params: Sequence, values: Sequence,
                    sms: Optional[int] = None) -> Tuple[int, int, int]:
        """The grid of a launch with these argument values (on a device
        with `sms` multiprocessors)."""
        symbols: Dict[str, int] = {}
        scalars: Dict[str, Any] = {}
        for p, v in zip(params, values):
            if p.kind == "tensor":
                bind_dims(p.shape, v.shape, symbols)
                if p.strides is not None:
                    bind_dims(p.strides, v.strides, symbols)
            else:
                scalars[p.name] = v
        grid = evaluate_grid(self.grid, symbols, scalars, sms)
        for axis, (extent, limit) in enumerate(zip(grid, _GRID_LIMITS)):
            if extent > limit:
                raise ValueError(f"kernel {self.name!r}: grid extent {'xyz'[axis]} = "
                                 f"{expr_to_str(self.grid[axis])} = {extent} exceeds the "
                                 f"CUDA limit of {limit}")
        return grid

    def _function(self, ctx, device: int):
        handle = int(ctx)
        fn = self._functions.get(handle)
        if fn is not None:
            return fn
        driver = _driver()
        with self._lock:
            fn = self._functions.get(handle)
            if fn is not None:
                return fn
            result = driver.cuModuleLoadData(self.cubin)
            what = f"loading the cubin of kernel {self.name!r} on cuda:{device}"
            if int(result[0]) == _NO_BINARY_FOR_GPU and self.ptx:
                # The cubin is the code of another chip (a kernel compiled
                # for sm_80 run on an sm_90 GPU): the driver compiles its PTX
                # for this GPU, as it does the PTX of a fat binary.
                result = driver.cuModuleLoadData(self.ptx.encode() + b"\0")
                what = (f"loading kernel {self.name!r} on cuda:{device}: its cubin is for "
                        "another chip and the driver could not compile its PTX for this one")
            module = check_result(result, "cuModuleLoadData", what)
            fn = check_result(driver.cuModuleGetFunction(module, self.entry.encode()),
                              "cuModuleGetFunction",
                              f"the cubin of kernel {self.name!r} has no entry {self.entry!r}")
            if not self._driver_checked:
                sizes = driver_param_sizes(driver, fn)
                if sizes is not None:
                    try:
                        check_param_sizes(self.name, self.entry, sizes, self._packed,
                                          "the driver's cuFuncGetParamInfo")
                    except ValueError:
                        driver.cuModuleUnload(module)
                        raise
                self._driver_checked = True
            # The static shared memory of the kernel counts against the 48 KB
            # default too: opt in whenever dynamic shared memory is used.
            if self.shared_bytes > 0:
                attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                result = driver.cuFuncSetAttribute(fn, attr, self.shared_bytes)
                if int(result[0]) != 0:
                    limit = ""
                    try:
                        attrs = driver.CUdevice_attribute
                        got = driver.cuDeviceGetAttribute(
                            attrs.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device)
                        if int(got[0]) == 0:
                            limit = f"; cuda:{device} allows at most {got[1]} bytes per block"
                    except Exception:  # noqa: BLE001
                        pass
                    driver.cuModuleUnload(module)
                    check_result(result, "cuFuncSetAttribute",
                                 f"kernel {self.name!r} asks for {self.shared_bytes} bytes of "
                                 f"dynamic shared memory{limit}")
            self._modules[handle] = module
            self._handles[handle] = int(fn)
            self._functions[handle] = fn
        return fn

    def multiprocessors(self, device: int) -> int:
        """The multiprocessor count of cuda:`device` (cached)."""
        count = self._sms.get(device)
        if count is None:
            driver = _driver()
            attr = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
            count = check_result(driver.cuDeviceGetAttribute(attr, device),
                                 "cuDeviceGetAttribute",
                                 f"the multiprocessor count of cuda:{device}")
            self._sms[device] = count = int(count)
        return count

    def __call__(self, params: Sequence, values: Sequence) -> None:
        if self._uses_sms:  # a persistent kernel: one block per multiprocessor
            ctx, device = current_context(self._what)
            grid = self.launch_grid(params, values, self.multiprocessors(device))
        else:
            grid = self._static_grid or self.launch_grid(params, values)
            if 0 in grid:
                return  # an empty grid launches nothing
            ctx, device = current_context(self._what)
        fn = self._function(ctx, device)
        stream = _current_stream(device)
        maps = self.encode_tensormaps(params, values) if self._maps else ()
        array, keep = pack_arguments(params, values, maps)
        launch = _libcuda_launch()
        block = self.block
        call = "cuLaunchKernel"
        if self._extended:
            code = int(self._launch_ex(fn, grid, stream, array, params, values, device)[0])
            call = "cuLaunchKernelEx"
        elif launch is not None:
            code = launch(self._handles[int(ctx)], grid[0], grid[1], grid[2], block[0],
                          block[1], block[2], self.shared_bytes, stream,
                          ctypes.addressof(array), None)
        else:
            code = int(_driver().cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0],
                                                block[1], block[2], self.shared_bytes, stream,
                                                ctypes.addressof(array), 0)[0])
        if code != 0:
            self.launch_failed(code, grid, call)
        del keep
        if self.sync if self.sync is not None else _SYNC_ENV:
            check_result(_driver().cuStreamSynchronize(stream), "cuStreamSynchronize",
                         f"kernel {self.name!r} failed (grid {grid}, block {self.block})")


    def resident_blocks(self, fn, device: int) -> int:
        """How many blocks of this kernel cuda:`device` holds at once (its
        occupancy times the multiprocessors): the largest cooperative grid."""
        driver = _driver()
        threads = self.block[0] * self.block[1] * self.block[2]
        per_sm = check_result(driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            fn, threads, self.shared_bytes), "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            f"the occupancy of kernel {self.name!r}")
        return int(per_sm) * self.multiprocessors(device)

    def _launch_ex(self, fn, grid, stream, array, params, values, device: int):
        """cuLaunchKernelEx with the kernel's launch attributes: cooperative
        (T.sync_grid: all blocks resident, checked first), programmatic
        stream serialization (T.pdl_sync), an L2 access policy window
        (T.annotate_l2_hit_ratio; the last annotated tensor, as TileLang's
        stream attribute ends up)."""
        driver = _driver()
        attrs = []
        ids = driver.CUlaunchAttributeID
        if self.cooperative:
            blocks = grid[0] * grid[1] * grid[2]
            limit = self.resident_blocks(fn, device)
            if blocks > limit:
                raise ValueError(
                    f"kernel {self.name!r} synchronizes its whole grid (T.sync_grid), so all "
                    f"its blocks must be resident at once (a cooperative launch), but its grid "
                    f"{tuple(grid)} has {blocks} blocks and cuda:{device} holds at most {limit} "
                    f"of them ({self.block} threads, {self.shared_bytes} bytes of shared "
                    "memory each): use a smaller grid")
            a = driver.CUlaunchAttribute()
            a.id = ids.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
            a.value.cooperative = 1
            attrs.append(a)
        if self.pdl:
            a = driver.CUlaunchAttribute()
            a.id = ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            a.value.programmaticStreamSerializationAllowed = 1
            attrs.append(a)
        if self.l2_hit_ratio:
            index, ratio = self.l2_hit_ratio[-1]
            v, p = values[index], params[index]
            nbytes = p.dtype.bits // 8
            for extent in v.shape:
                nbytes *= extent
            limit = check_result(driver.cuDeviceGetAttribute(
                driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE,
                device), "cuDeviceGetAttribute", "the largest L2 access policy window")
            a = driver.CUlaunchAttribute()
            a.id = ids.CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW
            window = a.value.accessPolicyWindow
            window.base_ptr = v.data_ptr
            window.num_bytes = min(nbytes, int(limit))
            window.hitRatio = ratio
            window.hitProp = driver.CUaccessProperty.CU_ACCESS_PROPERTY_PERSISTING
            window.missProp = driver.CUaccessProperty.CU_ACCESS_PROPERTY_STREAMING
            attrs.append(a)
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = self.block
        config.sharedMemBytes = self.shared_bytes
        config.hStream = driver.CUstream(stream)
        config.attrs = attrs
        config.numAttrs = len(attrs)
        return driver.cuLaunchKernelEx(config, fn, ctypes.addressof(array), 0)


def executable_of(artifact: CompiledArtifact, sync: Optional[bool] = None) -> CUDAExecutable:
    """The executable of a CUDA `artifact` (its binary is the cubin)."""
    launch = artifact.launch
    return CUDAExecutable(artifact.binary, launch.entry, launch.block, launch.shared_bytes,
                          launch.grid, artifact.params, name=artifact.name, sync=sync,
                          tensormaps=launch.tensormaps, features=dict(launch.features),
                          ptx=artifact.source or None)
