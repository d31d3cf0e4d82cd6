"""Entries of the disk kernel cache: what `tl.compile` writes, and the checks
an entry must pass before a kernel is built from it.

An entry is one JSON file, `<cache>/<key>.json`:

    {"format": "tilelang_mlir.kernel-cache", "version": 2,
     "key": "<the file's key>", "target": "cuda:sm_90a", "compiler": "<compiler id>",
     "artifacts_sha256": "<digest of stages, source and extra>",
     "sha256": "<digest of the six fields above>",
     "stages": {"tile": "<IR>", ...}, "source": "<PTX or LLVM IR>",
     "extra": {"entry", "block", "grid", "shared_bytes", "tensormaps", "cubin" (base64), ...}}

An entry says what it is (key, target, compiler build) and carries the
digest of that claim and of its artifacts, so that a file that is not what
its name says cannot become a kernel: another kernel's entry copied under
the key, a file of another compiler build, a truncated or edited one, valid
JSON that is no cache record at all. `decode` checks, in order, the JSON
shape, the format and version, the claim against what the caller looks for,
both digests, then the artifacts' schema for the target (types, launch
data, base64). A file that fails is the caller's to discard: `discard`
deletes it (unless another process replaced it meanwhile) and warns.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import warnings
from typing import Any, Dict, Optional, Sequence, Tuple

from ..base.artifact import CompiledArtifact
from ..base.signature import int_scalars_of, symbols_of

FORMAT = "tilelang_mlir.kernel-cache"
VERSION = 2

# How an entry stores a CompiledArtifact's code: (IR of every stage, final
# code, launch data); CompiledArtifact.cache_parts / from_cache_parts.
Parts = Tuple[Dict[str, str], str, dict]

_HEADER = ("format", "version", "key", "target", "compiler", "artifacts_sha256")
_FIELDS = _HEADER + ("sha256", "stages", "source", "extra")
# The launch data of an entry, per target kind.
_LAUNCH = ("entry", "block", "grid", "shared_bytes", "tensormaps", "cubin")
_EXTRA_KEYS = {"cpu": (), "cuda": _LAUNCH + ("ptxas",), "rocm": _LAUNCH}


class KernelCacheWarning(UserWarning):
    """A disk cache entry failed its checks and was discarded."""


class BadEntry(ValueError):
    """An entry that is not the kernel it should be; the message says why,
    `stat` is the file's as it was read (for `discard`)."""

    def __init__(self, reason: str, stat: Optional[os.stat_result] = None):
        super().__init__(reason)
        self.stat = stat


def digest(value: Any) -> str:
    """The sha256 of a JSON value (its canonical text: sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def encode(key: str, target: str, compiler: str, artifact: CompiledArtifact) -> dict:
    """The entry of `artifact` for `key` (its code: the signature is the
    key's)."""
    stages, source, extra = artifact.cache_parts()
    extra = dict(extra)
    if "cubin" in extra:
        extra["cubin"] = base64.b64encode(bytes(extra["cubin"])).decode()
    entry = {"format": FORMAT, "version": VERSION, "key": key, "target": target,
             "compiler": compiler,
             "artifacts_sha256": digest({"stages": stages, "source": source, "extra": extra})}
    entry["sha256"] = digest({k: entry[k] for k in _HEADER})
    entry.update(stages=stages, source=source, extra=extra)
    return entry


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def decode(entry: Any, key: str, target: str, compiler: str, params: Sequence,
           name: str = "kernel") -> Parts:
    """The parts of `entry`, read from JSON, if it is the entry of `key` for
    `target` built by `compiler`; raises BadEntry saying what is wrong.
    `params` (the kernel's parameters) check the launch data's references."""
    if not isinstance(entry, dict):
        raise BadEntry(f"is a JSON {type(entry).__name__}, not a cache record")
    if entry.get("format") != FORMAT:
        raise BadEntry(f"is not a kernel cache record (format {_short(entry.get('format'))})")
    version = entry.get("version")
    if not _is_int(version) or version != VERSION:
        raise BadEntry(f"has version {_short(version)}; this tilelang_mlir reads version "
                       f"{VERSION}")
    missing = [k for k in _FIELDS if k not in entry]
    if missing:
        raise BadEntry(f"lacks the field(s) {', '.join(missing)}")
    unknown = sorted(set(entry) - set(_FIELDS))
    if unknown:
        raise BadEntry(f"has unknown field(s) {', '.join(unknown)}")
    for field, want in (("key", key), ("target", target), ("compiler", compiler)):
        if entry[field] != want:
            raise BadEntry(f"holds the kernel of {field} {_short(entry[field])}, not "
                           f"{_short(want)}")
    if entry["sha256"] != digest({k: entry[k] for k in _HEADER}):
        raise BadEntry("does not match its sha256 (the header was changed)")
    stages, source, extra = entry["stages"], entry["source"], entry["extra"]
    if entry["artifacts_sha256"] != digest({"stages": stages, "source": source,
                                             "extra": extra}):
        raise BadEntry("does not match its artifacts_sha256 (the kernel's code or launch "
                       "data were changed)")
    return _check_parts(stages, source, extra, target, params, name)


def _check_parts(stages: Any, source: Any, extra: Any, target: str, params: Sequence,
                 name: str) -> Parts:
    """The artifacts' schema for the target's kind; the cubin decoded."""
    from .cuda import check_grid, check_tensormaps

    if (not isinstance(stages, dict) or not stages
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in stages.items())):
        raise BadEntry("'stages' must be an object of IR texts by stage name")
    if not isinstance(source, str):
        raise BadEntry(f"'source' must be a string, got {type(source).__name__}")
    kind = target.split(":", 1)[0]
    if kind not in _EXTRA_KEYS:
        raise BadEntry(f"has target {target!r}, which no backend builds")
    if kind == "cpu" and "llvm" not in stages:
        raise BadEntry("lacks the 'llvm' stage a CPU kernel is built from")
    if not isinstance(extra, dict) or set(extra) != set(_EXTRA_KEYS[kind]):
        got = sorted(extra) if isinstance(extra, dict) else type(extra).__name__
        raise BadEntry(f"'extra' must hold exactly {list(_EXTRA_KEYS[kind])} for a {kind} "
                       f"kernel, got {got}")
    if kind == "cpu":
        return dict(stages), source, {}
    extra = dict(extra)
    if not isinstance(extra["entry"], str) or not extra["entry"]:
        raise BadEntry("'extra.entry' must be a kernel name")
    block = extra["block"]
    if (not isinstance(block, list) or not 1 <= len(block) <= 3
            or not all(_is_int(b) and b >= 1 for b in block)):
        raise BadEntry(f"'extra.block' must be 1 to 3 positive ints, got {_short(block)}")
    if not _is_int(extra["shared_bytes"]) or extra["shared_bytes"] < 0:
        raise BadEntry("'extra.shared_bytes' must be a non-negative int")
    if kind == "cuda" and not isinstance(extra["ptxas"], str):
        raise BadEntry("'extra.ptxas' must be a string")
    try:
        check_grid(extra["grid"], symbols_of(params), int_scalars_of(params))
        extra["tensormaps"] = check_tensormaps(extra["tensormaps"], params, name)
    except ValueError as e:
        raise BadEntry(f"has malformed launch data: {e}") from None
    cubin = extra["cubin"]
    try:
        if not isinstance(cubin, str):
            raise TypeError
        extra["cubin"] = base64.b64decode(cubin.encode("ascii"), validate=True)
    except (TypeError, UnicodeEncodeError, binascii.Error):
        raise BadEntry("'extra.cubin' is not base64") from None
    if not extra["cubin"]:
        raise BadEntry("'extra.cubin' is empty")
    return dict(stages), source, extra


def read_json(path: str) -> Tuple[Any, Optional[os.stat_result]]:
    """(the JSON value in `path`, the file's stat); (None, None) when there
    is no file. Raises BadEntry for a file that cannot be read or parsed."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
    except FileNotFoundError:
        return None, None
    except OSError as e:
        raise BadEntry(f"cannot be read ({e.strerror or e})") from None
    try:
        return json.loads(data.decode("utf-8")), st
    except (UnicodeDecodeError, ValueError) as e:
        raise BadEntry(f"is not JSON: truncated or overwritten ({e})", st) from None


def read(path: str, key: str, target: str, compiler: str, params: Sequence,
         name: str = "kernel") -> Optional[Parts]:
    """The parts of the entry at `path`; None when there is none. Raises
    BadEntry for one that cannot be used."""
    entry, st = read_json(path)
    if st is None:
        return None
    try:
        return decode(entry, key, target, compiler, params, name)
    except BadEntry as e:
        raise BadEntry(str(e), st) from None


def write(path: str, entry: dict) -> None:
    """Writes `entry` atomically (a reader sees the old file or the new one)."""
    directory = os.path.dirname(path)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(entry, f, ensure_ascii=False)
    os.replace(tmp, path)


def discard(path: str, reason: str, stat: Optional[os.stat_result], what: str, then: str,
            stacklevel: int = 2) -> None:
    """Deletes the bad file at `path` and warns, naming it and `reason`.
    A file another process replaced after it was read (another inode or
    mtime) is left alone: that one is new. `then` says what happens next;
    `stacklevel` is warnings.warn's, counted from the caller."""
    removed = False
    if stat is not None:
        try:
            now = os.stat(path)
            if (now.st_ino, now.st_mtime_ns, now.st_size) == (stat.st_ino, stat.st_mtime_ns,
                                                              stat.st_size):
                os.remove(path)
                removed = True
        except OSError:
            pass
    done = "deleted it" if removed else "ignored it"
    warnings.warn(f"{what} {path} {reason}; {done}, {then}", KernelCacheWarning,
                  stacklevel=stacklevel + 1)
