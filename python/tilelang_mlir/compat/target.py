"""Targets as TileLang programs give them, over this package's targets.

TileLang takes a target as a string ("cuda", "cuda -arch=sm_90a", "llvm",
"c", "hip", "auto"), a dict ({"kind": "cuda", "arch": "sm_90"},
{"kind": "hip", "mcpu": "gfx942"}) or a `tvm.target.Target`. `Target` here
is that object (served as `tvm.target.Target` and `tilelang.tvm.target.Target`)
and `to_ours` turns any of them into this package's target string
("cuda:sm_90a", "cpu", "rocm:gfx942"). TileLang compiles Hopper ("sm_90",
compute capability 9.x) with its architecture-specific features (wgmma,
TMA: `nvcc -arch=sm_90a`), so its sm_90 is our sm_90a; "llvm" and "c" are
our CPU target. `with Target(...):` makes a target current: a compile with
target "auto" (or None) uses it, as TileLang's `determine_target` does.

Also served as `tilelang.backend.target` (0.1.10 on) and
`tilelang.utils.target` (before): `determine_target`, the detector and
normalizer registries, and the availability and capability queries.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Tuple, Union

from ..base import chips
from ..base.target import Target as OurTarget, parse_target
from ._context import ContextStack
from . import testing as _testing

_KINDS = {"cuda": "cuda", "nvptx": "cuda", "llvm": "cpu", "c": "cpu", "cpu": "cpu",
          "hip": "rocm", "rocm": "rocm"}
_OTHER_HW = ("metal", "webgpu", "vulkan", "opencl", "ascend", "npu")


class _Kind:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other) -> bool:
        return self.name == getattr(other, "name", other)

    def __hash__(self) -> int:
        return hash(self.name)


_CURRENT = ContextStack()


class Target:
    """`tvm.target.Target` as TileLang programs use it: `Target("cuda")`,
    `Target("cuda -arch=sm_90a")`, `Target({"kind": "cuda", "arch": "sm_90"})`,
    `Target("cuda", host="llvm")`; `.kind.name`, `.arch`, `.attrs`, `.host`,
    `.keys`, `str(t)`, `with t:` (the current target) and
    `Target.current(allow_none=True)`."""

    def __init__(self, target, host=None):
        if isinstance(target, Target):
            attrs, kind = dict(target.attrs), target.kind.name
            host = host if host is not None else target.host
        elif isinstance(target, OurTarget):
            kind = {"cpu": "llvm", "cuda": "cuda", "rocm": "hip"}[target.kind]
            attrs = {}
            if target.kind == "cuda":
                attrs["arch"] = target.arch
            elif target.kind == "rocm":
                attrs["mcpu"] = target.arch
        elif isinstance(target, Mapping):
            attrs = dict(target)
            if "kind" not in attrs:
                raise ValueError(f"target dict {target!r} has no 'kind'")
            kind = str(attrs.pop("kind"))
            if "host" in attrs:
                host = host if host is not None else attrs.pop("host")
        elif isinstance(target, str):
            kind, attrs = _parse_text(target)
        else:
            raise TypeError(f"a target is a string, a dict or a Target, got "
                            f"{type(target).__name__}")
        kind = kind.strip().lower()
        if kind in _OTHER_HW:
            from .refusals import refusal

            raise ValueError(refusal(f"target kind {kind!r}", "hardware this compiler does not "
                                                              "target: use cuda, hip/rocm or "
                                                              "llvm/c"))
        if kind not in _KINDS:
            raise ValueError(f"unknown target kind {kind!r}; TileLang's kinds served here: "
                             f"{', '.join(sorted(_KINDS))}")
        self.kind = _Kind(kind)
        self.attrs: Dict[str, object] = attrs
        self.host = None if host is None else (host if isinstance(host, Target) else
                                               Target(host))
        self._ours: Optional[OurTarget] = None
        if attrs.get("arch") is not None or attrs.get("mcpu") is not None or \
                _KINDS[kind] == "cpu":
            self._ours = _ours_of(kind, attrs)  # checked now: a bad arch fails here

    @property
    def ours(self) -> OurTarget:
        """This package's target ("cuda" without an arch is this machine's GPU,
        resolved when first needed, as TVM does when it compiles)."""
        if self._ours is None:
            self._ours = _ours_of(self.kind.name, self.attrs)
        return self._ours

    # -- TVM's accessors ----------------------------------------------------------------
    @property
    def arch(self) -> str:
        return str(self.attrs.get("arch") or "")

    @property
    def mcpu(self) -> str:
        return str(self.attrs.get("mcpu", ""))

    @property
    def keys(self) -> Tuple[str, ...]:
        kind = self.ours.kind
        return {"cuda": ("cuda", "gpu"), "rocm": ("rocm", "gpu"), "cpu": ("cpu",)}[kind]

    @property
    def thread_warp_size(self) -> int:
        return self.ours.warp_size

    def get_target_device_type(self) -> int:
        """DLPack's device type: kDLCPU 1, kDLCUDA 2, kDLROCM 10."""
        return {"cpu": 1, "cuda": 2, "rocm": 10}[self.ours.kind]

    def export(self) -> dict:
        out = {"kind": self.kind.name, **self.attrs}
        if self.host is not None:
            out["host"] = self.host.export()
        return out

    def with_host(self, host) -> "Target":
        return Target(self, host=host)

    def __str__(self) -> str:
        parts = [self.kind.name] + [f"-{k}={v}" for k, v in self.attrs.items()]
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __eq__(self, other) -> bool:
        if isinstance(other, Target):
            return str(self) == str(other) and self.host == other.host
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))

    # -- the current target -------------------------------------------------------------
    def __enter__(self) -> "Target":
        _CURRENT.push(self)
        return self

    def __exit__(self, *exc) -> None:
        _CURRENT.pop()

    @staticmethod
    def current(allow_none: bool = True) -> Optional["Target"]:
        top = _CURRENT.top()
        if top is not None:
            return top
        if not allow_none:
            raise ValueError("no target is current: use `with Target(...):`")
        return None

    @staticmethod
    def list_kinds() -> List[str]:
        return sorted(_KINDS)


def _parse_text(text: str) -> Tuple[str, Dict[str, object]]:
    """"cuda -arch=sm_90a -max_num_threads=1024" -> ("cuda", {...})."""
    words = shlex.split(text.strip())
    if not words:
        raise ValueError("empty target string")
    kind, attrs = words[0], {}
    if ":" in kind:  # this package's own spelling ("cuda:sm_90a", "rocm:gfx942")
        kind, arch = kind.split(":", 1)
        attrs["mcpu" if kind in ("rocm", "hip") else "arch"] = arch
    for w in words[1:]:
        m = re.fullmatch(r"--?([A-Za-z_][\w-]*)(?:=(.*))?", w)
        if not m:
            raise ValueError(f"target option {w!r} of {text!r} is not of the form -key=value")
        attrs[m.group(1).replace("-", "_")] = m.group(2) if m.group(2) is not None else True
    return kind, attrs


def _cuda_arch(arch: str) -> str:
    """TileLang's CUDA arch name -> ours: compute capability 9.x compiles
    with the architecture-specific features (sm_90 -> sm_90a)."""
    m = re.fullmatch(r"sm_(\d+)(a|f)?", arch)
    if not m:
        raise ValueError(f"CUDA arch {arch!r} is not of the form sm_XX")
    if int(m.group(1)) >= 100:
        from .refusals import refusal

        raise ValueError(refusal(f"CUDA arch {arch}", "Blackwell and newer: hardware this "
                                 "compiler does not target; it compiles for "
                                 f"{', '.join(chips.names('nvidia'))}"))
    if int(m.group(1)) // 10 == 9:
        return "sm_90a"
    return f"sm_{m.group(1)}"


def _ours_of(kind: str, attrs: Mapping[str, object]) -> OurTarget:
    ours = _KINDS[kind]
    if ours == "cpu":
        return OurTarget("cpu")
    if ours == "cuda":
        arch = attrs.get("arch")
        if arch is None:
            return parse_target("cuda")
        return parse_target(f"cuda:{_cuda_arch(str(arch))}")
    mcpu = attrs.get("mcpu") or attrs.get("arch")
    return parse_target(f"rocm:{mcpu}" if mcpu else "rocm")


TargetLike = Union[str, Mapping[str, object], Target, OurTarget, None]


def to_ours(target: TargetLike) -> OurTarget:
    """This package's target for a TileLang target: "auto" or None is the
    current `with Target(...)` target, else this machine's GPU (the CPU
    without one)."""
    if target is None or (isinstance(target, str) and target.strip() == "auto"):
        current = Target.current(allow_none=True)
        if current is not None:
            return current.ours
        return parse_target("auto")
    if isinstance(target, OurTarget):
        return target
    return Target(target).ours


# ---------------------------------------------------------------------------
# tilelang.backend.target / tilelang.utils.target
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetDetectorSpec:
    name: str
    detect: Callable[[], object]


@dataclass(frozen=True)
class TargetNormalizerSpec:
    name: str
    normalize: Callable[[object], object]


_DETECTORS: Dict[str, TargetDetectorSpec] = {}
_NORMALIZERS: Dict[str, TargetNormalizerSpec] = {}


def register_target_detector(name: str, detect: Callable[[], object], *,
                             override: bool = False) -> TargetDetectorSpec:
    """Adds a detector that `determine_target("auto")` tries (in order of
    registration) before this machine's GPU."""
    if name in _DETECTORS and not override:
        raise ValueError(f"Target detector {name!r} is already registered")
    spec = _DETECTORS[name] = TargetDetectorSpec(name, detect)
    return spec


def register_target_normalizer(name: str, normalize: Callable[[object], object], *,
                               override: bool = False) -> TargetNormalizerSpec:
    """Adds a normalizer that `determine_target` applies to a given target
    (the first one that returns something other than None wins)."""
    if name in _NORMALIZERS and not override:
        raise ValueError(f"Target normalizer {name!r} is already registered")
    spec = _NORMALIZERS[name] = TargetNormalizerSpec(name, normalize)
    return spec


def list_target_detectors() -> Tuple[str, ...]:
    return ("cuda", "hip", "cpu") + tuple(n for n in _DETECTORS if n not in ("cuda", "hip", "cpu"))


def _normalized(target):
    for spec in _NORMALIZERS.values():
        out = spec.normalize(target)
        if out is not None:
            return out
    return target


def auto_detect_target():
    """The target of this machine as TileLang names it: the registered
    detectors first, then "cuda" with its arch where an NVIDIA GPU is
    visible, "hip" with its mcpu on an AMD GPU, else "llvm"."""
    errors = []
    for spec in _DETECTORS.values():
        try:
            found = spec.detect()
        except Exception as e:  # a detector that fails is skipped, as TileLang does
            errors.append(f"{spec.name}: {e}")
            continue
        if found is not None:
            return found
    ours = parse_target("auto")
    if ours.kind == "cuda":
        return f"cuda -arch={ours.arch}"
    if ours.kind == "rocm":
        return f"hip -mcpu={ours.arch}"
    return "llvm"


def determine_target(target: TargetLike = "auto", return_object: bool = False):
    """TileLang's target resolution: "auto" is the current target, else the
    registered detectors, else this machine's (see `auto_detect_target`); a
    given target is normalized and checked. Returns it as given (a string or
    dict), or as a `Target` with `return_object=True`."""
    if target == "auto" or target is None:
        current = Target.current(allow_none=True)
        found = current if current is not None else auto_detect_target()
    else:
        found = _normalized(target)
        try:
            Target(found)
        except (TypeError, ValueError) as e:
            raise AssertionError(f"Target {target!r} is not supported: {e}") from None
    if return_object and not isinstance(found, Target):
        return Target(found)
    return found


def describe_supported_targets() -> Dict[str, str]:
    return {
        "auto": "this machine's GPU (NVIDIA or AMD), else the CPU",
        "cuda": "an NVIDIA GPU, sm_75 to sm_90a (sm_90 compiles as sm_90a, as TileLang does)",
        "hip": "an AMD CDNA GPU (gfx90a, gfx942, gfx950)",
        "llvm": "the CPU (this compiler's reference backend)",
        "c": "the CPU (as llvm)",
    }


def check_cuda_availability() -> bool:
    return _testing._cuda()


def check_hip_availability() -> bool:
    return bool(_testing._rocm_arch())


def check_metal_availability() -> bool:
    """Always False: Metal is hardware this compiler does not target."""
    return False


def _t(target) -> OurTarget:
    return to_ours(target)


def target_is_cuda(target) -> bool:
    return _t(target).kind == "cuda"


def target_is_hip(target) -> bool:
    return _t(target).kind == "rocm"


def target_is_metal(target) -> bool:
    return False


def target_is_cdna(target) -> bool:
    return _t(target).kind == "rocm"


def _sm(target) -> int:
    t = _t(target)
    return t.sm or 0


def target_is_volta(target) -> bool:
    return 70 <= _sm(target) < 75


def target_is_turing(target) -> bool:
    return 75 <= _sm(target) < 80


def target_is_ampere(target) -> bool:
    return 80 <= _sm(target) < 90


def target_is_hopper(target) -> bool:
    return 90 <= _sm(target) < 100


def target_is_sm120(target) -> bool:
    return False


def target_has_async_copy(target) -> bool:
    return _sm(target) >= 80


def target_has_ldmatrix(target) -> bool:
    return _sm(target) >= 75


def target_has_stmatrix(target) -> bool:
    return _sm(target) >= 90


def target_has_bulk_copy(target) -> bool:
    return _sm(target) >= 90


def target_get_warp_size(target) -> int:
    return _t(target).warp_size


def determine_fp8_type(fp8_format: str = "e4m3"):
    from .language_fp8 import determine_fp8_type as pick

    return pick(fp8_format)


def determine_torch_fp8_type(fp8_format: str = "e4m3"):
    from .language_fp8 import determine_torch_fp8_type as pick

    return pick(fp8_format)


TargetConfig = Dict[str, object]

__all__ = ["Target", "TargetLike", "TargetConfig", "to_ours", "determine_target",
           "auto_detect_target", "register_target_detector", "register_target_normalizer",
           "list_target_detectors", "describe_supported_targets", "check_cuda_availability",
           "check_hip_availability", "check_metal_availability", "target_is_cuda",
           "target_is_hip", "target_is_metal", "target_is_cdna", "target_is_volta",
           "target_is_turing", "target_is_ampere", "target_is_hopper", "target_is_sm120",
           "target_has_async_copy", "target_has_ldmatrix", "target_has_stmatrix",
           "target_has_bulk_copy", "target_get_warp_size", "determine_fp8_type",
           "determine_torch_fp8_type"]
